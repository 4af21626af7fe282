/* test_coarse.c — coarse archives' buckets held back (daemon/coarse.h):
 * what the writers end up with is what they get when every row goes at
 * once, the finest archive is never held, a partition's drain lets go of
 * its own only, a late point's older bucket is not held. */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/coarse.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "proto/ga_time.h"
#include "proto/method.h"
#include "tests/unit/harness.h"
#include "tests/unit/wide_pack.h"

#define NMET 40
#define SEC 1000000000LL

static const struct ga_policy *pol;     /* `medium`: 1 min and 1 h; or mixed below */
static struct ga_policy mixed;          /* 10 s and 1 min, back_window 1, rate: methods:
                                           a late point's change to a bucket's last value
                                           changes the next bucket's rates alone */

static int64_t finest(void *ctx, uint32_t m) { return pol->defs[0].granularity_ns; }
static int part(void *ctx, uint32_t m) { return (int)(m % 4); }
static const struct coarse_src src = { finest, part, NULL };

/* The bucket values a writer holds: (metric, granularity, ts, method) →
 * value, the later write winning; rows found through an open-addressing
 * table of their indices + 1. */
struct row { uint32_t m; int16_t meth; int64_t g, ts; double v; };
struct store { struct row *r; size_t n, cap; size_t *slot; size_t nslot; };

static size_t row_hash(uint32_t m, int16_t meth, int64_t g, int64_t ts, size_t mask)
{
    uint64_t h = (uint64_t)m * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uint16_t)meth * 0xC2B2AE3D27D4EB4FULL ^
                 (uint64_t)g * 0x165667B19E3779F9ULL ^ (uint64_t)ts * 0xD6E8FEB86659FD93ULL;
    return (size_t)(h ^ h >> 29) & mask;
}

/* The index of the row of this key, or SIZE_MAX (insert: a new row). */
static size_t row_find(struct store *s, uint32_t m, int16_t meth, int64_t g, int64_t ts, int insert)
{
    if (insert && 2 * (s->n + 1) > s->nslot) {          /* grow: rehash every row */
        free(s->slot);
        s->nslot = s->nslot ? 2 * s->nslot : 4096;
        s->slot = calloc(s->nslot, sizeof *s->slot);
        CHECK(s->slot != NULL);
        for (size_t i = 0; i < s->n; i++) {
            size_t k = row_hash(s->r[i].m, s->r[i].meth, s->r[i].g, s->r[i].ts, s->nslot - 1);
            while (s->slot[k])
                k = (k + 1) & (s->nslot - 1);
            s->slot[k] = i + 1;
        }
    }
    if (!s->nslot)
        return SIZE_MAX;
    size_t k = row_hash(m, meth, g, ts, s->nslot - 1);
    for (; s->slot[k]; k = (k + 1) & (s->nslot - 1)) {
        const struct row *r = &s->r[s->slot[k] - 1];
        if (r->m == m && r->meth == meth && r->g == g && r->ts == ts)
            return s->slot[k] - 1;
    }
    if (!insert)
        return SIZE_MAX;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->r = realloc(s->r, s->cap * sizeof *s->r);
        CHECK(s->r != NULL);
    }
    s->slot[k] = ++s->n;
    return s->n - 1;
}

static void apply(struct store *s, const struct ga_agg *a, size_t n)
{
    for (size_t i = 0; i < n; i += ga_agg_span(&a[i])) {
        struct ga_agg rows[GA_WIDE_MAX];
        size_t k = ga_agg_unpack(&a[i], n - i, rows);
        CHECK(k > 0);
        for (size_t j = 0; j < k; j++) {
            size_t x = row_find(s, rows[j].metric, (int16_t)rows[j].method, rows[j].granularity_ns,
                                rows[j].ts, 1);
            s->r[x] = (struct row){ rows[j].metric, (int16_t)rows[j].method, rows[j].granularity_ns,
                                   rows[j].ts, rows[j].value };
        }
    }
}

static int same(struct store *a, struct store *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        size_t x = row_find(b, a->r[i].m, a->r[i].meth, a->r[i].g, a->r[i].ts, 0);
        if (x == SIZE_MAX || b->r[x].v != a->r[i].v)
            return 0;
    }
    return 1;
}

static void store_free(struct store *s)
{
    free(s->r);
    free(s->slot);
}

static struct ga_engine *engine_of(const struct ga_policy *p)
{
    struct ga_backend *b;
    struct ga_engine *e;
    CHECK_INT(ga_cpu_backend_open(&b, 1), 0);
    CHECK_INT(ga_engine_open(&e, &b, 1), 0);
    for (uint32_t m = 0; m < NMET; m++)
        CHECK_INT(ga_engine_metric_add(e, m, p), 0);
    return e;
}

static struct ga_engine *engine(void) { return engine_of(pol); }

/* Random batches over two hours (points in order and some late ones):
 * the rows the writers get with holding, drained in turns by partition
 * and at the end, make the same buckets as every row at once; no finest
 * row is ever held; what is held is at most a bucket a metric.  Half the
 * batches come as wide and packed records. */
static void test_same_buckets_as_without(void)
{
    struct ga_engine *e1 = engine(), *e2 = engine();
    struct store direct = { 0 }, held = { 0 };
    struct coarse c = { 0 };
    uint64_t seed = 42;
    int64_t t0 = 1700000000 * SEC;
    enum { N = 200 };
    uint32_t ids[N];
    int64_t ts[N];
    double val[N];
    for (int batch = 0; batch < 300; batch++) {
        for (int i = 0; i < N; i++) {
            ids[i] = (uint32_t)(harness_xorshift(&seed) % NMET);
            int64_t back = harness_xorshift(&seed) % 10 == 0 ? (int64_t)(harness_xorshift(&seed) % 600) * SEC : 0;
            ts[i] = t0 + (int64_t)batch * 30 * SEC + (int64_t)(harness_xorshift(&seed) % 30) * SEC - back;
            val[i] = (double)(harness_xorshift(&seed) % 1000) / 8.0;
        }
        struct ga_points pts = { .n = N, .metric = ids, .ts = ts, .value = val };
        struct ga_result r1 = { .want_wide = 1 }, r2 = { .want_wide = 1 };
        CHECK_INT(ga_engine_feed(e1, &pts, &r1), 0);
        CHECK_INT(ga_engine_feed(e2, &pts, &r2), 0);
        apply(&direct, r1.aggs, r1.naggs);
        if (batch % 2) {                       /* as a CUDA backend writes them: records */
            struct ga_agg *w = malloc((2 * r2.naggs + 1) * sizeof *w);
            r2.naggs = wide_pack(r2.aggs, r2.naggs, w);
            free(r2.aggs);
            r2.aggs = w;
            r2.cap_aggs = 0;
        }
        CHECK_INT(coarse_take(&c, &r2, &src), 0);
        CHECK_INT(r2.nrows, ga_aggs_count(r2.aggs, r2.naggs));
        for (size_t i = 0; i < r2.naggs; i += ga_agg_span(&r2.aggs[i])) {
            int64_t g, t;
            ga_agg_bucket(&r2.aggs[i], &g, &t);
            CHECK_INT(g, pol->defs[0].granularity_ns);       /* only the finest goes now */
        }
        apply(&held, r2.aggs, r2.naggs);
        apply(&held, c.out, c.nout);
        coarse_out_clear(&c);
        CHECK(coarse_held(&c) <= NMET);
        if (batch % 7 == 0) {
            CHECK_INT(coarse_drain(&c, 1ULL << (batch % 4)), 0);
            for (size_t i = 0; i < c.nout; i += ga_agg_span(&c.out[i]))
                CHECK_INT(c.out[i].metric % 4, batch % 4);
            CHECK_INT(c.part[batch % 4].n, 0);
            apply(&held, c.out, c.nout);
            coarse_out_clear(&c);
        }
        ga_result_free(&r1);
        ga_result_free(&r2);
    }
    CHECK(c.replaced > 0);
    CHECK(!same(&direct, &held));              /* what is held is missing yet */
    CHECK_INT(coarse_drain(&c, 0), 0);
    CHECK_INT(coarse_held(&c), 0);
    apply(&held, c.out, c.nout);
    CHECK(same(&direct, &held));
    coarse_free(&c);
    store_free(&direct);
    store_free(&held);
    ga_engine_close(e1);
    ga_engine_close(e2);
}

/* A late point's hour bucket, older than the one held, goes out at once
 * and the newer stays; a newer bucket displaces the held one. */
static void test_older_goes_newer_displaces(void)
{
    struct ga_policy back = *pol;
    back.back_window = 1;                      /* the hour before stays in the window */
    struct ga_engine *e = engine_of(&back);
    struct coarse c = { 0 };
    int64_t h = 1700002800LL * SEC;            /* an hour's start */
    uint32_t id = 3;
    int64_t t = h + 10 * SEC;
    double v = 1.0;
    struct ga_points pts = { .n = 1, .metric = &id, .ts = &t, .value = &v };
    struct ga_result r = { .want_wide = 1 };
    CHECK_INT(ga_engine_feed(e, &pts, &r), 0);
    CHECK_INT(coarse_take(&c, &r, &src), 0);
    CHECK_INT(coarse_held(&c), 1);
    CHECK_INT(c.nout, 0);
    CHECK_INT(c.part[3].e[0].ts, h);
    t = h - 10 * SEC;                          /* the hour before, in the window */
    ga_result_reset(&r);
    CHECK_INT(ga_engine_feed(e, &pts, &r), 0);
    CHECK_INT(coarse_take(&c, &r, &src), 0);
    CHECK_INT(coarse_held(&c), 1);
    CHECK_INT(c.part[3].e[0].ts, h);
    CHECK(c.nout > 0);
    int64_t g = 0, ts = 0;
    if (c.nout)
        ga_agg_bucket(&c.out[0], &g, &ts);
    CHECK_INT(ts, h - 3600 * SEC);
    coarse_out_clear(&c);
    t = h + 3600 * SEC + 5 * SEC;              /* the next hour */
    ga_result_reset(&r);
    CHECK_INT(ga_engine_feed(e, &pts, &r), 0);
    CHECK_INT(coarse_take(&c, &r, &src), 0);
    CHECK_INT(coarse_held(&c), 1);
    CHECK_INT(c.part[3].e[0].ts, h + 3600 * SEC);
    ga_agg_bucket(&c.out[0], &g, &ts);
    CHECK_INT(ts, h);
    CHECK_INT(c.released, 2);
    ga_result_free(&r);
    coarse_free(&c);
    ga_engine_close(e);
}

/* The same with rate:, percentile and last methods and a back window. */
static void test_same_buckets_mixed_methods(void)
{
    const struct ga_policy *was = pol;
    pol = &mixed;
    test_same_buckets_as_without();
    pol = was;
}

void run_tests(void)
{
    pol = ga_policy_builtin("medium");
    CHECK(pol && pol->ndefs == 2);
    const char *names[] = { "mean", "count", "std", "50pct", "last", "rate:mean", "rate:max" };
    const char *bad = NULL, *why = NULL;
    snprintf(mixed.name, sizeof mixed.name, "mixed");
    mixed.back_window = 1;
    CHECK_INT(ga_policy_methods_from_list(&mixed, names, 7, &bad), 0);
    CHECK_INT(ga_policy_add_def(&mixed, 10 * SEC, 86400 * SEC, 0, &why), 0);
    CHECK_INT(ga_policy_add_def(&mixed, 60 * SEC, 7 * 86400 * SEC, 0, &why), 0);
    RUN(test_same_buckets_as_without);
    RUN(test_same_buckets_mixed_methods);
    RUN(test_older_goes_newer_displaces);
}
