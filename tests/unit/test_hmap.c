/* test_hmap.c — the hash map of proto/base/hmap.h against a reference:
 * random puts, lookups and deletes with good hashes, with hashes shared by
 * several keys, and with every key's first slot the same (one cluster that
 * wraps around the end); growth, reserve, clear, the bounds, deleting
 * during a walk. */
#include "tests/unit/harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/hash.h"
#include "proto/base/hmap.h"
#include "proto/ga_err.h"

enum { H_GOOD, H_SHARED, H_ONE_CLUSTER };

/* Key k's hash under a mode: well mixed; the same for 8 keys in a row (the
 * caller's key compare decides); one first slot (the last) for every key of
 * a map up to 2^16 slots, distinct high halves. */
static uint64_t hash_of(uint64_t k, int mode)
{
    switch (mode) {
    case H_SHARED:
        return ga_hash_fmix64(k / 8);
    case H_ONE_CLUSTER:
        return (k << 16 | 0xffff) << 32 | (k & 0xffffffff);
    default:
        return ga_hash_fmix64(k);
    }
}

/* The id of key keys[id] in m, or -1: a walk comparing keys. */
static long lookup(const struct ga_hmap *m, const uint64_t *keys, uint64_t k, int mode,
                   struct ga_hmap_it *it)
{
    *it = ga_hmap_find(m, hash_of(k, mode));
    uint32_t v;
    while (ga_hmap_next(it, &v))
        if (keys[v] == k)
            return v;
    return -1;
}

/* ops random operations over nkeys keys (id i is key keys[i]): put when
 * absent, delete when present, or look up; checked against present[]. */
static void random_ops(int mode, size_t nkeys, size_t ops, uint64_t seed)
{
    uint64_t *keys = malloc(nkeys * sizeof *keys);
    uint8_t *present = calloc(nkeys, 1);
    struct ga_hmap m = { 0 };
    size_t n = 0, bad = 0;
    for (size_t i = 0; i < nkeys; i++)
        keys[i] = harness_xorshift(&seed) & 0xffffffffffffULL;   /* distinct in practice */
    for (size_t i = 0; i < nkeys; i++)                            /* make sure */
        keys[i] = (keys[i] & ~(uint64_t)0xffff) | (i & 0xffff) | (uint64_t)(i >> 16) << 48;
    for (size_t op = 0; op < ops; op++) {
        uint64_t r = harness_xorshift(&seed);
        size_t id = (size_t)(r % nkeys);
        struct ga_hmap_it it;
        long got = lookup(&m, keys, keys[id], mode, &it);
        bad += (got >= 0) != present[id] || (got >= 0 && (size_t)got != id);
        switch ((r >> 32) % 3) {
        case 0:
            if (got < 0) {
                CHECK_INT(ga_hmap_put(&m, &it, hash_of(keys[id], mode), (uint32_t)id), 0);
                present[id] = 1;
                n++;
            }
            break;
        case 1:
            if (got >= 0) {
                ga_hmap_del(&m, &it);
                present[id] = 0;
                n--;
            }
            break;
        default:
            break;
        }
        bad += m.n != n || m.n * 4 > m.cap * 3;
        if (op % (ops / 8) == 0 || op == ops - 1) {   /* every key, now and then */
            for (size_t i = 0; i < nkeys; i++) {
                long g = lookup(&m, keys, keys[i], mode, &it);
                bad += (g >= 0) != present[i] || (g >= 0 && (size_t)g != i);
            }
        }
    }
    CHECK_INT(bad, 0);
    ga_hmap_free(&m);
    CHECK(m.slot == NULL && m.n == 0 && m.cap == 0);
    free(keys);
    free(present);
}

static void test_random_good(void)
{
    random_ops(H_GOOD, 20000, 300000, 1);
    random_ops(H_GOOD, 40, 20000, 2);       /* small: growth from 16, many deletes */
}

static void test_random_shared_hashes(void)
{
    random_ops(H_SHARED, 5000, 100000, 3);
}

static void test_random_one_cluster(void)
{
    random_ops(H_ONE_CLUSTER, 300, 30000, 4);
}

/* Doubling from 16 at 3/4 full; reserve allocates once for what follows;
 * clear keeps the slots. */
static void test_growth_reserve_clear(void)
{
    struct ga_hmap m = { 0 };
    struct ga_hmap_it it = ga_hmap_find(&m, ga_hash_fmix64(7));
    uint32_t v;
    CHECK(!ga_hmap_next(&it, &v));
    CHECK_INT(ga_hmap_put(&m, &it, ga_hash_fmix64(7), 7), 0);   /* an empty map's walk */
    CHECK_INT(m.cap, 16);
    for (uint32_t k = 8; k < 20; k++)
        CHECK_INT(ga_hmap_put(&m, NULL, ga_hash_fmix64(k), k), 0);
    CHECK_INT(m.n, 13);
    CHECK_INT(m.cap, 32);                    /* the 13th put passed 12 = 3/4 of 16 */
    CHECK_INT(ga_hmap_reserve(&m, 100000), 0);
    size_t cap = m.cap;
    CHECK_INT(cap, 262144);                  /* 100000 <= 3/4 of 2^18 */
    const uint64_t *slots = m.slot;
    for (uint32_t k = 20; k < 100000 - 13 + 20; k++) {
        struct ga_hmap_it w = ga_hmap_find(&m, ga_hash_fmix64(k));
        while (ga_hmap_next(&w, &v))
            ;
        CHECK_INT(ga_hmap_put(&m, &w, ga_hash_fmix64(k), k), 0);
    }
    CHECK(m.slot == slots && m.cap == cap && m.n == 100000);
    CHECK_INT(ga_hmap_reserve(&m, 10), 0);   /* never shrinks */
    CHECK(m.slot == slots);
    size_t found = 0;
    for (uint32_t k = 7; k < 100000 + 7; k++) {
        struct ga_hmap_it w = ga_hmap_find(&m, ga_hash_fmix64(k));
        while (ga_hmap_next(&w, &v))
            found += v == k;
    }
    CHECK_INT(found, 100000);
    ga_hmap_clear(&m);
    CHECK(m.n == 0 && m.cap == cap && m.slot == slots);
    it = ga_hmap_find(&m, ga_hash_fmix64(7));
    CHECK(!ga_hmap_next(&it, &v));
    ga_hmap_free(&m);
}

/* A value too big is refused, changing nothing; so is a reserve past the
 * bound. */
static void test_bounds(void)
{
    struct ga_hmap_it it;
    uint32_t v;
    struct ga_hmap w = { 0 };
    CHECK_INT(ga_hmap_reserve(&w, GA_HMAP_MAX_ENTRIES + 1), GA_ENOSPC);
    CHECK(w.slot == NULL && w.cap == 0);
    CHECK_INT(ga_hmap_put(&w, NULL, 1ULL << 32, GA_HMAP_VALUE_MAX), 0);
    it = ga_hmap_find(&w, 2ULL << 32);
    CHECK(!ga_hmap_next(&it, &v));
    CHECK_INT(ga_hmap_put(&w, &it, 2ULL << 32, UINT32_MAX), GA_EINVAL);
    CHECK_INT(w.n, 1);
    it = ga_hmap_find(&w, 1ULL << 32);
    CHECK(ga_hmap_next(&it, &v) && v == GA_HMAP_VALUE_MAX);
    ga_hmap_free(&w);
}

/* Ten values under one hash among others; deleting every other one during
 * the walk still visits all ten and leaves the other five. */
static void test_delete_during_walk(void)
{
    struct ga_hmap m = { 0 };
    uint64_t h = ga_hash_fmix64(42);
    for (uint32_t i = 0; i < 10; i++) {
        CHECK_INT(ga_hmap_put(&m, NULL, h, i), 0);
        CHECK_INT(ga_hmap_put(&m, NULL, ga_hash_fmix64(1000 + i), 1000 + i), 0);
    }
    struct ga_hmap_it it = ga_hmap_find(&m, h);
    uint32_t v, seen = 0;
    while (ga_hmap_next(&it, &v)) {
        seen |= 1u << v;
        if (v % 2 == 0)
            ga_hmap_del(&m, &it);
    }
    CHECK_INT(seen, 0x3ff);
    CHECK_INT(m.n, 15);
    seen = 0;
    it = ga_hmap_find(&m, h);
    while (ga_hmap_next(&it, &v))
        seen |= 1u << v;
    CHECK_INT(seen, 0x2aa);
    for (uint32_t i = 0; i < 10; i++) {
        it = ga_hmap_find(&m, ga_hash_fmix64(1000 + i));
        CHECK(ga_hmap_next(&it, &v) && v == 1000 + i);
    }
    ga_hmap_free(&m);
}

void run_tests(void)
{
    RUN(test_random_good);
    RUN(test_random_shared_hashes);
    RUN(test_random_one_cluster);
    RUN(test_growth_reserve_clear);
    RUN(test_bounds);
    RUN(test_delete_during_walk);
}
