/* test_pg_window.c — window snapshot encoding: random round trips
 * (bit-exact), and every kind of damaged input refused. */
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "storage/pg_window.h"
#include "tests/unit/harness.h"
#include "tests/unit/test_pg_env.h"

static uint64_t seed;

static void random_window(uint64_t *s, struct ga_window *w, size_t n)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    w->ts = malloc((n ? n : 1) * sizeof *w->ts);
    w->value = malloc((n ? n : 1) * sizeof *w->value);
    int64_t t = (int64_t)(rnd_next(s) % 2000000000000000000ULL) - (rnd_next(s) % 3 == 0 ? 1000 : 0);
    for (size_t i = 0; i < n; i++) {
        uint64_t kind = rnd_next(s) % 4;
        int64_t d = kind == 0 ? 1 : kind == 1 ? (int64_t)(rnd_next(s) % 1000) + 1
                  : kind == 2 ? 1000000000 : (int64_t)(rnd_next(s) % 100000000000ULL) + 1;
        t += d;
        w->ts[i] = t;
        uint64_t bits = rnd_next(s);
        memcpy(&w->value[i], &bits, 8);      /* any bit pattern, NaNs included */
        if (rnd_next(s) % 2)
            w->value[i] = rnd_value(s);
    }
    w->has_prev = (int)(rnd_next(s) % 2);
    if (w->has_prev) {
        w->prev_ts = n ? w->ts[0] - 1 - (int64_t)(rnd_next(s) % 1000) : (int64_t)rnd_next(s);
        w->prev_value = rnd_value(s);
    }
}

static void free_window(struct ga_window *w)
{
    free(w->ts);
    free(w->value);
}

static void test_round_trip_random(void)
{
    uint64_t s = seed;
    for (int iter = 0; iter < 400; iter++) {
        size_t n = iter < 5 ? (size_t)iter : (size_t)(rnd_next(&s) % 3000);
        struct ga_window w, back;
        random_window(&s, &w, n);
        uint8_t *buf;
        size_t len;
        CHECK_INT(pg_window_encode(&w, &buf, &len), 0);
        CHECK(len <= pg_window_encoded_max(n));
        CHECK_INT(buf[0], PG_WINDOW_VERSION);
        CHECK_INT(pg_window_decode(buf, len, &back), 0);
        CHECK_INT(back.n, n);
        CHECK_INT(back.has_prev, w.has_prev);
        if (w.has_prev) {
            CHECK_INT(back.prev_ts, w.prev_ts);
            CHECK(memcmp(&back.prev_value, &w.prev_value, 8) == 0);
        }
        if (n) {
            CHECK(memcmp(back.ts, w.ts, n * 8) == 0);
            CHECK(memcmp(back.value, w.value, n * 8) == 0);
        }
        free_window(&back);
        free(buf);
        free_window(&w);
    }
}

static void test_compact(void)
{
    /* 3600 points a second apart: ~5 bytes of ts + 8 of value each. */
    struct ga_window w = { 0 };
    w.n = 3600;
    w.ts = malloc(w.n * 8);
    w.value = malloc(w.n * 8);
    for (size_t i = 0; i < w.n; i++) {
        w.ts[i] = 1700000000000000000LL + (int64_t)i * 1000000000;
        w.value[i] = (double)i * 0.25 + 1;
    }
    uint8_t *buf;
    size_t len;
    CHECK_INT(pg_window_encode(&w, &buf, &len), 0);
    CHECK(len < w.n * 14);
    free(buf);
    free_window(&w);
}

static void test_unsorted_refused(void)
{
    int64_t ts[] = { 10, 20, 20 };
    double v[] = { 1, 2, 3 };
    struct ga_window w = { .n = 3, .ts = ts, .value = v };
    uint8_t *buf = NULL;
    size_t len;
    CHECK_INT(pg_window_encode(&w, &buf, &len), GA_EINVAL);
    ts[2] = 15;
    CHECK_INT(pg_window_encode(&w, &buf, &len), GA_EINVAL);
    CHECK(buf == NULL);
}

static void test_damage_refused(void)
{
    uint64_t s = seed ^ 0x5555;
    struct ga_window w, back;
    random_window(&s, &w, 50);
    w.has_prev = 1;
    w.prev_ts = w.ts[0] - 5;
    uint8_t *buf;
    size_t len;
    CHECK_INT(pg_window_encode(&w, &buf, &len), 0);
    /* every truncation */
    for (size_t cut = 0; cut < len; cut++)
        CHECK_INT(pg_window_decode(buf, cut, &back), GA_ECORRUPT);
    /* trailing garbage */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, buf, len);
    longer[len] = 0;
    CHECK_INT(pg_window_decode(longer, len + 1, &back), GA_ECORRUPT);
    /* unknown version and flags */
    longer[0] = PG_WINDOW_VERSION + 1;
    CHECK_INT(pg_window_decode(longer, len, &back), GA_ECORRUPT);
    memcpy(longer, buf, len);
    longer[1] |= 0x80;
    CHECK_INT(pg_window_decode(longer, len, &back), GA_ECORRUPT);
    /* an absurd count must not allocate or read out of bounds */
    uint8_t huge[] = { PG_WINDOW_VERSION, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0 };
    CHECK_INT(pg_window_decode(huge, sizeof huge, &back), GA_ECORRUPT);
    /* a zero delta (duplicate timestamp) */
    int64_t ts2[] = { 100, 101 };
    double v2[] = { 1, 2 };
    struct ga_window w2 = { .n = 2, .ts = ts2, .value = v2 };
    uint8_t *b2;
    size_t l2;
    CHECK_INT(pg_window_encode(&w2, &b2, &l2), 0);
    /* version, flags, n = 2, zigzag(100) = 200 = varint c8 01, delta 1 */
    CHECK_INT(l2, 6 + 16);
    CHECK_INT(b2[3], 0xc8);
    CHECK_INT(b2[4], 0x01);
    CHECK_INT(b2[5], 1);
    free(b2);
    uint8_t dup[] = { PG_WINDOW_VERSION, 0, 2, 0x02, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    CHECK_INT(pg_window_decode(dup, sizeof dup, &back), GA_ECORRUPT);
    dup[4] = 1;
    CHECK_INT(pg_window_decode(dup, sizeof dup, &back), 0);
    CHECK_INT(back.ts[0], 1);
    CHECK_INT(back.ts[1], 2);
    free_window(&back);
    free(longer);
    free(buf);
    free_window(&w);
}

/* The example of docs/STORAGE.md, byte for byte. */
static void test_documented_example(void)
{
    static const uint8_t doc[] = { 0x01, 0x00, 0x02, 0xc8, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,
                                   0, 0, 0, 0, 0, 0, 0, 0x40 };
    int64_t ts[] = { 100, 101 };
    double v[] = { 1.0, 2.0 };
    struct ga_window w = { .n = 2, .ts = ts, .value = v };
    uint8_t *buf;
    size_t len;
    CHECK_INT(pg_window_encode(&w, &buf, &len), 0);
    CHECK_INT(len, sizeof doc);
    CHECK(len == sizeof doc && memcmp(buf, doc, len) == 0);
    free(buf);
}

/* A base and a chain of tails (front truncated, points appended) give back
 * the window as it is now, bit for bit; in one blob or record by record. */
static void test_tail_chain_random(void)
{
    uint64_t s = seed ^ 0x7a11;
    for (int trial = 0; trial < 300; trial++) {
        struct ga_window now;
        random_window(&s, &now, rnd_next(&s) % 40);
        now.has_prev = 0;
        uint8_t *base;
        size_t blen;
        CHECK_INT(pg_window_encode(&now, &base, &blen), 0);
        uint8_t *chain = NULL;
        size_t clen = 0;
        int steps = (int)(rnd_next(&s) % 6);
        size_t ends[7] = { 0 }, added = 0;
        for (int k = 0; k < steps; k++) {
            size_t drop = now.n ? rnd_next(&s) % (now.n + 1) : 0;
            size_t add = rnd_next(&s) % 30;
            added += add;
            int64_t t = now.n ? now.ts[now.n - 1] : (int64_t)(rnd_next(&s) % 1000000000000ULL);
            struct ga_window tail = { .n = add, .ts = malloc((add + 1) * 8), .value = malloc((add + 1) * 8) };
            for (size_t i = 0; i < add; i++) {
                t += (int64_t)(rnd_next(&s) % 5000000000ULL) + 1;
                tail.ts[i] = t;
                tail.value[i] = rnd_value(&s);
            }
            /* now = now[drop..] + tail */
            size_t n2 = now.n - drop + add;
            int64_t *ts2 = malloc((n2 + 1) * 8);
            double *v2 = malloc((n2 + 1) * 8);
            memcpy(ts2, now.ts + drop, (now.n - drop) * 8);
            memcpy(v2, now.value + drop, (now.n - drop) * 8);
            memcpy(ts2 + now.n - drop, tail.ts, add * 8);
            memcpy(v2 + now.n - drop, tail.value, add * 8);
            free_window(&now);
            now = (struct ga_window){ .n = n2, .ts = ts2, .value = v2 };
            int64_t keep = n2 ? ts2[0] : t + 1;
            uint8_t *rec;
            size_t rlen;
            CHECK_INT(pg_window_encode_tail(keep, &tail, &rec, &rlen), 0);
            chain = realloc(chain, clen + rlen);
            memcpy(chain + clen, rec, rlen);
            clen += rlen;
            ends[k + 1] = clen;
            free(rec);
            free_window(&tail);
        }
        struct ga_window got;
        CHECK_INT(pg_window_decode(base, blen, &got), 0);
        CHECK_INT(pg_window_apply_tail(&got, chain, clen), 0);
        CHECK_INT(got.n, now.n);
        CHECK(got.n == now.n && (!now.n || (memcmp(got.ts, now.ts, now.n * 8) == 0 &&
                                            memcmp(got.value, now.value, now.n * 8) == 0)));
        /* what is stored: one record a step, the points they added */
        size_t recs, pts;
        CHECK_INT(pg_window_tail_count(chain, clen, &recs, &pts), 0);
        CHECK_INT(recs, (size_t)steps);
        CHECK_INT(pts, added);
        /* record by record: the same */
        struct ga_window step;
        CHECK_INT(pg_window_decode(base, blen, &step), 0);
        for (int k = 0; k < steps; k++)
            CHECK_INT(pg_window_apply_tail(&step, chain + ends[k], ends[k + 1] - ends[k]), 0);
        CHECK(step.n == now.n && (!now.n || memcmp(step.ts, now.ts, now.n * 8) == 0));
        free_window(&step);
        free_window(&got);
        free_window(&now);
        free(base);
        free(chain);
    }
}

/* Damaged tails are refused and leave the window as it was. */
static void test_tail_damage_refused(void)
{
    int64_t ts[] = { 100, 200, 300 }, tt[] = { 400, 500 }, bad[] = { 250 };
    double v[] = { 1, 2, 3 }, tv[] = { 4, 5 }, bv[] = { 9 };
    struct ga_window base = { .n = 3, .ts = ts, .value = v };
    struct ga_window tail = { .n = 2, .ts = tt, .value = tv }, back = { .n = 1, .ts = bad, .value = bv };
    uint8_t *rec, *brec;
    size_t rlen, blen;
    CHECK_INT(pg_window_encode_tail(200, &tail, &rec, &rlen), 0);
    CHECK_INT(pg_window_encode_tail(100, &back, &brec, &blen), 0);
    struct ga_window w;
    uint8_t *enc;
    size_t elen;
    CHECK_INT(pg_window_encode(&base, &enc, &elen), 0);
    CHECK_INT(pg_window_decode(enc, elen, &w), 0);
    size_t recs, pts;
    for (size_t cut = 1; cut < rlen; cut++) {           /* truncated */
        CHECK_INT(pg_window_apply_tail(&w, rec, cut), GA_ECORRUPT);
        CHECK_INT(pg_window_tail_count(rec, cut, &recs, &pts), GA_ECORRUPT);
    }
    CHECK_INT(pg_window_tail_count(rec, rlen, &recs, &pts), 0);
    CHECK(recs == 1 && pts == 2);
    rec[0] = PG_WINDOW_VERSION;                            /* not a tail record */
    CHECK_INT(pg_window_apply_tail(&w, rec, rlen), GA_ECORRUPT);
    rec[0] = PG_WINDOW_TAIL;
    CHECK_INT(pg_window_apply_tail(&w, brec, blen), GA_ECORRUPT);   /* not after the points kept */
    CHECK_INT(w.n, 3);
    CHECK(w.n == 3 && w.ts[0] == 100 && w.ts[2] == 300);
    CHECK_INT(pg_window_apply_tail(&w, rec, rlen), 0);
    CHECK_INT(w.n, 4);                                 /* 200 300 400 500 */
    CHECK(w.n == 4 && w.ts[0] == 200 && w.ts[3] == 500 && w.value[3] == 5);
    CHECK_INT(pg_window_apply_tail(&w, NULL, 0), 0);       /* no record: unchanged */
    CHECK_INT(w.n, 4);
    free_window(&w);
    free(enc);
    free(rec);
    free(brec);
}

void run_tests(void)
{
    seed = rnd_seed();
    printf("seed=%llu (GA_TEST_SEED to repeat)\n", (unsigned long long)seed);
    RUN(test_round_trip_random);
    RUN(test_compact);
    RUN(test_documented_example);
    RUN(test_unsorted_refused);
    RUN(test_damage_refused);
    RUN(test_tail_chain_random);
    RUN(test_tail_damage_refused);
}
