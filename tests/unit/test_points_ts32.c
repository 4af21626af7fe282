/* test_points_ts32.c — batches whose timestamps come as 32-bit offsets
 * (gpu/engine.h ga_points, ga_points_pack_ts32): the packer's choice of
 * unit and its refusals; and the same random batches fed as int64
 * timestamps and as offsets giving the same rows and late points, bit for
 * bit, through an engine of one CPU backend (nothing split), of two (the
 * split keeps the offsets), and through the CUDA backend (emulated: the
 * upload in chunks, prefetched or not, classify decoding the offsets)
 * against the same backend given int64. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "proto/base/log.h"
#include "gpu/cuda.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tests/unit/random_policy.h"

static int64_t unpacked(const uint32_t *o, size_t i, int64_t base, int64_t unit)
{
    struct ga_points p = { .ts32 = o, .ts_base = base, .ts_unit = unit };
    return ga_points_ts(&p, i);
}

static void check_pack(const int64_t *ts, size_t n, int64_t want_unit)
{
    uint32_t o[8];
    int64_t base = -1, unit = -1;
    CHECK_INT(ga_points_pack_ts32(ts, n, o, &base, &unit), 0);
    CHECK_INT(unit, want_unit);
    for (size_t i = 0; i < n; i++)
        CHECK_INT(unpacked(o, i, base, unit), ts[i]);
}

static void test_pack_units(void)
{
    const int64_t t0 = 1700000000 * SEC;
    int64_t s[] = { t0 + 40 * SEC, t0, t0 + 3600 * SEC, t0 + 7 * SEC };
    check_pack(s, 4, SEC);
    int64_t ms[] = { t0 + 5000000, t0, t0 + 3 * SEC + 1000000 };
    check_pack(ms, 3, 1000000);
    int64_t us[] = { t0 + 4000 * SEC + 3000, t0 + 17000, t0 };   /* 4,000 s in us: fits */
    check_pack(us, 3, 1000);
    int64_t ns[] = { t0 + 1, t0, t0 + 4 * SEC };
    check_pack(ns, 3, 1);
    /* the same residue on both sides of 0; one point; the minimum in the middle */
    int64_t neg[] = { -3 * SEC + 250000000, 2 * SEC + 250000000, -7 * SEC + 250000000 };
    check_pack(neg, 3, SEC);
    int64_t one[] = { 123456789 };
    check_pack(one, 1, SEC);
    /* refused: ns precision over more than 4.29 s; seconds over 136 years;
     * the whole int64 range */
    uint32_t o[4];
    int64_t base, unit;
    int64_t far_ns[] = { t0, t0 + 5 * SEC + 1 };
    CHECK_INT(ga_points_pack_ts32(far_ns, 2, o, &base, &unit), GA_ERANGE);
    int64_t far_s[] = { 0, (int64_t)UINT32_MAX * SEC + SEC };
    CHECK_INT(ga_points_pack_ts32(far_s, 2, o, &base, &unit), GA_ERANGE);
    int64_t edge_s[] = { 0, (int64_t)UINT32_MAX * SEC };            /* just fits */
    check_pack(edge_s, 2, SEC);
    int64_t all[] = { INT64_MIN, INT64_MAX };
    CHECK_INT(ga_points_pack_ts32(all, 2, o, &base, &unit), GA_ERANGE);
    CHECK_INT(ga_points_pack_ts32(NULL, 0, o, &base, &unit), 0);
}

enum { NM = 10, NB = 5, NPTS = 2500 };

struct run {
    uint32_t mid[NB][NPTS];
    int64_t ts[NB][NPTS];
    uint32_t o[NB][NPTS];
    double val[NB][NPTS];
    int64_t base[NB], unit[NB];
};

/* Random batches: unknown ids, late and non-finite points, each batch in
 * whole ms (packs in ms) or, one in three, in ns over 3 s.  (A batch with
 * a point before 1970 beside today's spans too long to pack.) */
static void make_run(struct run *r, uint64_t seed)
{
    rng = seed;
    int64_t now = 1700000000 * SEC;
    for (int k = 0; k < NB; k++) {
        int fine = k % 3 == 2;
        for (int i = 0; i < NPTS; i++) {
            r->mid[k][i] = rnd() % 40 == 0 ? NM + (uint32_t)(rnd() % 5) : (uint32_t)(rnd() % NM);
            int64_t t = fine ? now + rnd_in(0, 3 * SEC) : now + rnd_in(-300, 900) * 1000000 * 1000;
            if (!fine && rnd() % 10 == 0)
                t = now - rnd_in(0, 5000) * 1000000 * 1000 + rnd_in(0, 999) * 1000000;
            r->ts[k][i] = t;
            r->val[k][i] = rnd() % 150 == 0 ? NAN : rnd_value();
        }
        CHECK_INT(ga_points_pack_ts32(r->ts[k], NPTS, r->o[k], &r->base[k], &r->unit[k]), 0);
        CHECK_INT(r->unit[k], fine ? 1 : 1000000);
        now += 600 * SEC;
    }
}

static struct ga_points batch(const struct run *r, int k, int ts32)
{
    struct ga_points p = { .n = NPTS, .metric = r->mid[k], .value = r->val[k] };
    if (ts32) {
        p.ts32 = r->o[k];
        p.ts_base = r->base[k];
        p.ts_unit = r->unit[k];
    } else {
        p.ts = r->ts[k];
    }
    return p;
}

static int same(const struct ga_result *a, const struct ga_result *b)
{
    if (a->naggs != b->naggs || a->nlate != b->nlate)
        return 0;
    for (size_t i = 0; i < a->naggs; i++)
        if (a->aggs[i].metric != b->aggs[i].metric || a->aggs[i].method != b->aggs[i].method ||
            a->aggs[i].granularity_ns != b->aggs[i].granularity_ns || a->aggs[i].ts != b->aggs[i].ts ||
            memcmp(&a->aggs[i].value, &b->aggs[i].value, 8) != 0)
            return 0;
    for (size_t i = 0; i < a->nlate; i++)
        if (a->late[i].metric != b->late[i].metric || a->late[i].reason != b->late[i].reason ||
            a->late[i].ts != b->late[i].ts || memcmp(&a->late[i].value, &b->late[i].value, 8) != 0)
            return 0;
    return 1;
}

static void add_metrics(struct ga_engine *e, struct ga_backend *b, uint64_t seed)
{
    rng = seed;
    for (uint32_t m = 0; m < NM; m++) {
        struct ga_policy p;
        random_policy(&p);
        if (e)
            CHECK_INT(ga_engine_metric_add(e, m, &p), 0);
        else
            CHECK_INT(b->ops->metric_add(b, m, &p), 0);
    }
}

/* The run through an engine of nb CPU backends, int64 or offsets. */
static void engine_run(const struct run *r, int nb, int ts32, struct ga_result out[NB])
{
    struct ga_backend *b[2];
    for (int i = 0; i < nb; i++)
        CHECK_INT(ga_cpu_backend_open(&b[i], 2), 0);
    struct ga_engine *e;
    CHECK_INT(ga_engine_open(&e, b, nb), 0);
    add_metrics(e, NULL, 0xabcdefULL);
    for (int k = 0; k < NB; k++) {
        struct ga_points p = batch(r, k, ts32);
        CHECK_INT(ga_engine_feed(e, &p, &out[k]), 0);
    }
    ga_engine_close(e);
}

static void test_engine_same_rows(void)
{
    static struct run r;
    make_run(&r, 0x7532aULL);
    for (int nb = 1; nb <= 2; nb++) {
        struct ga_result a[NB] = { { 0 } }, b[NB] = { { 0 } };
        if (nb == 1) {            /* neither form of timestamps: refused, nothing fed */
            struct ga_backend *cb;
            struct ga_engine *e;
            CHECK_INT(ga_cpu_backend_open(&cb, 1), 0);
            CHECK_INT(ga_engine_open(&e, &cb, 1), 0);
            struct ga_points none = { .n = 3, .metric = r.mid[0], .value = r.val[0] };
            CHECK_INT(ga_engine_feed(e, &none, &a[0]), GA_EINVAL);
            none.ts32 = r.o[0];   /* no unit */
            CHECK_INT(ga_engine_feed(e, &none, &a[0]), GA_EINVAL);
            CHECK_INT(a[0].naggs + a[0].nlate, 0);
            ga_engine_close(e);
        }
        engine_run(&r, nb, 0, a);
        engine_run(&r, nb, 1, b);
        size_t rows = 0, late = 0;
        for (int k = 0; k < NB; k++) {
            CHECK(same(&a[k], &b[k]));
            rows += a[k].naggs;
            late += a[k].nlate;
            ga_result_free(&a[k]);
            ga_result_free(&b[k]);
        }
        printf("engine of %d CPU backend(s): %zu rows, %zu late points the same both ways\n", nb, rows,
               late);
        CHECK(rows > 5000 && late > 100);
    }
}

/* The CUDA backend (emulated, small upload chunks) on offsets against one
 * on int64: every other batch prefetched and fed in two halves. */
static void test_cuda_same_rows(void)
{
    static struct run r;
    make_run(&r, 0x1e55edULL);
    struct ga_backend *g[2];
    struct ga_cuda_opts o = { .emulate = 1, .chunk_points = 700 };
    int rc = ga_cuda_backend_open(&g[0], 0, &o);
    if (rc == GA_ENOGPU) {
        harness_skip("built without CUDA (GA_ENOGPU): no CUDA backend to compare");
        return;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(ga_cuda_backend_open(&g[1], 0, &o), 0);
    add_metrics(NULL, g[0], 0x5eedULL);
    add_metrics(NULL, g[1], 0x5eedULL);
    size_t rows = 0, late = 0;
    for (int k = 0; k < NB; k++) {
        struct ga_result res[2] = { { 0 } };
        for (int i = 0; i < 2; i++) {
            struct ga_points p = batch(&r, k, i == 0);
            if (k % 2) {
                CHECK_INT(g[i]->ops->prefetch(g[i], &p), 1);
                CHECK_INT(g[i]->ops->feed_start(g[i], &p, &res[i]), 0);
                CHECK_INT(g[i]->ops->feed_wait(g[i]), 0);
            } else {
                CHECK_INT(g[i]->ops->feed(g[i], &p, &res[i]), 0);
            }
        }
        CHECK(same(&res[0], &res[1]));
        rows += res[0].naggs;
        late += res[0].nlate;
        ga_result_free(&res[0]);
        ga_result_free(&res[1]);
    }
    printf("CUDA backend (emulated): %zu rows, %zu late points the same from offsets as from int64\n",
           rows, late);
    CHECK(rows > 5000 && late > 100);
    g[0]->ops->close(g[0]);
    g[1]->ops->close(g[1]);
}

void run_tests(void)
{
    ga_log_set_level(GA_LOG_ERROR);
    RUN(test_pack_units);
    RUN(test_engine_same_rows);
    RUN(test_cuda_same_rows);
}
