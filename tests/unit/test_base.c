/* test_base.c — the leaf utilities of proto/base/ (grow, hash, deadline;
 * the hash map has test_hmap.c) and the methods table of proto/method.h. */
#include "tests/unit/harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/deadline.h"
#include "proto/base/grow.h"
#include "proto/base/hash.h"
#include "proto/ga_err.h"
#include "proto/method.h"
#include "proto/policy.h"

/* Capacity doubles from `first`, contents stay, ga_grow_zero zeroes only
 * the new elements, an overflowing size is refused with nothing changed. */
static void test_grow(void)
{
    int *a = NULL;
    size_t cap = 0;
    CHECK_INT(ga_grow((void **)&a, &cap, 0, sizeof *a, 64), 0);
    CHECK(a == NULL && cap == 0);
    CHECK_INT(ga_grow((void **)&a, &cap, 1, sizeof *a, 64), 0);
    CHECK_INT(cap, 64);
    for (int i = 0; i < 64; i++)
        a[i] = i;
    CHECK_INT(ga_grow((void **)&a, &cap, 65, sizeof *a, 64), 0);
    CHECK_INT(cap, 128);
    CHECK_INT(ga_grow((void **)&a, &cap, 1000, sizeof *a, 64), 0);
    CHECK_INT(cap, 1024);
    int bad = 0;
    for (int i = 0; i < 64; i++)
        bad += a[i] != i;
    CHECK_INT(bad, 0);
    int *before = a;
    CHECK_INT(ga_grow((void **)&a, &cap, SIZE_MAX / 2, sizeof *a, 64), GA_ENOMEM);
    CHECK(a == before && cap == 1024);
    free(a);

    unsigned char *z = NULL;
    size_t zc = 0;
    CHECK_INT(ga_grow_zero((void **)&z, &zc, 3, 1, 4), 0);
    CHECK_INT(zc, 4);
    memset(z, 0xab, zc);
    CHECK_INT(ga_grow_zero((void **)&z, &zc, 9, 1, 4), 0);
    CHECK_INT(zc, 16);
    CHECK(z[3] == 0xab);
    for (size_t i = 4; i < zc; i++)
        CHECK_INT(z[i], 0);
    free(z);
}

/* Known values: the engine's placement of metrics and every map built on
 * these depend on them never changing. */
static void test_hash(void)
{
    CHECK(ga_hash_fmix32(0) == 0);
    CHECK(ga_hash_fmix32(1) == 0x514e28b7u);
    CHECK(ga_hash_fmix64(0) == 0);
    CHECK(ga_hash_fmix64(1) == 0xb456bcfc34c2cb2cULL);
    CHECK(ga_hash_fnv1a("", 0) == 0x14650fb0739d0383ULL);
    CHECK(ga_hash_fnv1a("a", 1) == 0x44bd8ad473cd9906ULL);
}

static void test_deadline(void)
{
    struct timespec t = { .tv_sec = 10, .tv_nsec = 999999999 };
    struct timespec u = ga_timespec_add_ns(t, 1);
    CHECK(u.tv_sec == 11 && u.tv_nsec == 0);
    u = ga_timespec_add_ns(t, 2500000001LL);
    CHECK(u.tv_sec == 13 && u.tv_nsec == 500000000);
    u = ga_timespec_add_ns(t, 0);
    CHECK(u.tv_sec == 10 && u.tv_nsec == 999999999);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    u = ga_deadline_ms(CLOCK_MONOTONIC, 1500);
    int64_t d = (int64_t)(u.tv_sec - now.tv_sec) * 1000000000 + (u.tv_nsec - now.tv_nsec);
    CHECK(d >= 1500000000LL && d < 1600000000LL);
    CHECK(u.tv_nsec >= 0 && u.tv_nsec < 1000000000);
}

/* Every method's name parses back to it, rate: or not; the table's needs
 * and wide bits are the ones the backends and the record codec use. */
static void test_methods_table(void)
{
    char buf[GA_METHOD_NAME_MAX];
    int n = 0;
    for (int rate = 0; rate < 2; rate++)
        for (int b = 0; b < 0x100; b++) {
            ga_method_t m = (ga_method_t)(b | (rate ? GA_M_RATE : 0));
            const struct ga_method_info *mi = ga_method_info(m);
            if (!mi) {
                CHECK(ga_method_parse(ga_method_name(m, buf)) < 0);
                continue;
            }
            n++;
            CHECK_INT(ga_method_parse(ga_method_name(m, buf)), m);
        }
    CHECK_INT(n, GA_POLICY_MAX_METHODS);
    CHECK_INT(ga_method_info(GA_M_MEAN)->wide_bit, 0);
    CHECK_INT(ga_method_info(GA_M_STD | GA_M_RATE)->wide_bit, 7);
    CHECK_INT(ga_method_info(GA_M_MEDIAN)->wide_bit, -1);
    CHECK_STR(ga_method_info(GA_M_PCT_BASE + 90)->name, "Npct");
    CHECK(ga_method_info(GA_M_WIDE) == NULL && ga_method_info(GA_M_PACKED | 1) == NULL);
    for (int b = GA_M_MEAN; b <= GA_M_STD; b++)
        CHECK_INT(ga_method_info((ga_method_t)b)->wide_bit, b - GA_M_MEAN);
    ga_method_t ms[] = { GA_M_COUNT, GA_M_FIRST, GA_M_RATE | GA_M_MAX };
    CHECK_INT(ga_methods_need(ms, 1), 0);
    CHECK_INT(ga_methods_need(ms, 3), GA_NEED_POINT | GA_NEED_MINMAX);
    ga_method_t srt[] = { GA_M_PCT_BASE + 5, GA_M_STD };
    CHECK_INT(ga_methods_need(srt, 2), GA_NEED_SORT | GA_NEED_SUM);
}

void run_tests(void)
{
    RUN(test_grow);
    RUN(test_hash);
    RUN(test_deadline);
    RUN(test_methods_table);
}
