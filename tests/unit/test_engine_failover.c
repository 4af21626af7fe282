/* test_engine_failover.c — a primary backend failing with GA_ECUDA: its
 * metrics move to the CPU fallback with their windows, the failed feed's
 * share is fed to the fallback, and the answers equal an engine that never
 * failed.  A primary that cannot give its windows back is counted as
 * windows lost.  The "GPU" is a CPU backend behind a wrapper that fails on
 * command, without touching its state (the CUDA backend's contract).
 * Pipelined (ga_engine_feed_start / wait): a primary failing while the next
 * batch, split for it already, waits its turn — that share goes to the
 * fallback, and the failed primary is never fed again. */
#include "tests/unit/harness.h"

#include <stdlib.h>
#include <unistd.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tests/unit/random_policy.h"

struct flaky {
    struct ga_backend base;
    struct ga_backend *inner;
    int fail_feed, fail_window;
    int gate;                  /* fail_feed: wait until it is 1 (atomic), then fail */
    int failed, fed_after;     /* has failed; feeds asked of it after that */
};

static int f_add(struct ga_backend *b, uint32_t id, const struct ga_policy *p)
{
    struct flaky *f = (struct flaky *)b;
    return f->inner->ops->metric_add(f->inner, id, p);
}
static int f_feed(struct ga_backend *b, const struct ga_points *pts, struct ga_result *out)
{
    struct flaky *f = (struct flaky *)b;
    f->fed_after += f->failed;
    if (f->fail_feed) {
        f->fail_feed = 0;
        while (!__atomic_load_n(&f->gate, __ATOMIC_ACQUIRE))
            usleep(200);
        f->failed = 1;
        struct ga_agg junk = { 0 };        /* partial output the engine must drop */
        ga_result_push_agg(out, &junk);
        return GA_ECUDA;
    }
    return f->inner->ops->feed(f->inner, pts, out);
}
static int f_get(struct ga_backend *b, uint32_t id, struct ga_window *w)
{
    struct flaky *f = (struct flaky *)b;
    return f->fail_window ? GA_ECUDA : f->inner->ops->window_get(f->inner, id, w);
}
static int f_put(struct ga_backend *b, uint32_t id, const struct ga_policy *p, const struct ga_window *w)
{
    struct flaky *f = (struct flaky *)b;
    return f->inner->ops->window_put(f->inner, id, p, w);
}
static void f_drop(struct ga_backend *b, uint32_t id)
{
    struct flaky *f = (struct flaky *)b;
    f->inner->ops->metric_drop(f->inner, id);
}
static void f_close(struct ga_backend *b)
{
    struct flaky *f = (struct flaky *)b;
    f->inner->ops->close(f->inner);
    free(f);
}
static const struct ga_backend_ops flaky_ops = { "flaky", f_add, f_feed, f_get, f_put, f_drop, f_close,
                                                 NULL, NULL, NULL, NULL };

static struct flaky *flaky_open(void)
{
    struct flaky *f = calloc(1, sizeof *f);
    f->base.ops = &flaky_ops;
    f->gate = 1;
    snprintf(f->base.label, sizeof f->base.label, "cuda:9");
    CHECK_INT(ga_cpu_backend_open(&f->inner, 1), 0);
    return f;
}

static int cmp_agg(const void *pa, const void *pb)
{
    const struct ga_agg *a = pa, *b = pb;
    if (a->metric != b->metric) return a->metric < b->metric ? -1 : 1;
    if (a->granularity_ns != b->granularity_ns) return a->granularity_ns < b->granularity_ns ? -1 : 1;
    if (a->method != b->method) return a->method < b->method ? -1 : 1;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* The engines each case compares: e over nprim flaky primaries (gf the one
 * that will fail) with a CPU fallback, ref one plain CPU backend; M metrics
 * under one random policy in both. */
enum { M = 40, N = 600 };
struct rig {
    struct ga_policy p;
    struct ga_engine *e, *ref;
    struct flaky *gf;
};

static void rig_open(struct rig *r, int nprim, int fail)
{
    random_policy(&r->p);
    struct flaky *g0 = flaky_open(), *g1 = nprim == 2 ? flaky_open() : g0;
    struct ga_backend *prim[2] = { &g0->base, &g1->base }, *cpu, *ref_b;
    r->gf = fail ? g1 : g0;
    CHECK_INT(ga_engine_open(&r->e, prim, nprim), 0);
    CHECK_INT(ga_cpu_backend_open(&cpu, 1), 0);
    CHECK_INT(ga_engine_set_fallback(r->e, cpu), 0);
    CHECK_INT(ga_cpu_backend_open(&ref_b, 1), 0);
    CHECK_INT(ga_engine_open(&r->ref, &ref_b, 1), 0);
    for (uint32_t m = 0; m < M; m++) {
        CHECK_INT(ga_engine_metric_add(r->e, m, &r->p), 0);
        CHECK_INT(ga_engine_metric_add(r->ref, m, &r->p), 0);
    }
}

/* Feeds 3 batches to an engine of nprim flaky primaries + CPU fallback,
 * failing primary `fail` on batch 2, and to a plain CPU engine; compares.
 * Two primaries take the concurrent path (primary 0 writes straight into
 * the caller's result, primary 1 into its own, appended after), one the
 * daemon's one-GPU path.  The result handed to the engine already holds a
 * row, which must stay first. */
static void run_case(int lose_windows, int nprim, int fail)
{
    struct rig rg;
    rig_open(&rg, nprim, fail);
    struct ga_engine *e = rg.e, *ref = rg.ref;
    struct flaky *gf = rg.gf;
    int64_t t0 = 1700000000 * SEC;
    struct ga_result r = { 0 }, want = { 0 };
    const struct ga_agg mark = { .metric = 777777, .ts = -1, .value = 42 };
    for (int batch = 0; batch < 3; batch++) {
        uint32_t mid[N];
        int64_t ts[N];
        double v[N];
        for (int i = 0; i < N; i++) {
            mid[i] = (uint32_t)(rnd() % M);
            ts[i] = t0 + (batch * 300 + rnd_in(0, 400)) * SEC / 2;
            v[i] = rnd_value();
        }
        gf->fail_feed = batch == 1;
        gf->fail_window = batch == 1 && lose_windows;
        ga_result_reset(&r);
        ga_result_reset(&want);
        CHECK_INT(ga_result_push_agg(&r, &mark), 0);
        struct ga_points pts = { .n = N, .metric = mid, .ts = ts, .value = v };
        CHECK_INT(ga_engine_feed(e, &pts, &r), 0);
        CHECK_INT(ga_engine_feed(ref, &pts, &want), 0);
        CHECK(r.naggs > 0 && r.aggs[0].metric == mark.metric && r.aggs[0].ts == mark.ts &&
              r.aggs[0].value == mark.value);
        if (r.naggs > 0) {                     /* drop the mark: compare the feed's rows */
            memmove(r.aggs, r.aggs + 1, (r.naggs - 1) * sizeof *r.aggs);
            r.naggs--;
        }
        if (!lose_windows || batch == 0) {
            qsort(r.aggs, r.naggs, sizeof *r.aggs, cmp_agg);
            qsort(want.aggs, want.naggs, sizeof *want.aggs, cmp_agg);
            CHECK_INT(r.naggs, want.naggs);
            int same = r.naggs == want.naggs;
            for (size_t i = 0; same && i < r.naggs; i++)
                same = cmp_agg(&r.aggs[i], &want.aggs[i]) == 0 && r.aggs[i].value == want.aggs[i].value;
            CHECK(same);
            CHECK_INT(r.nlate, want.nlate);
        }
    }
    struct ga_engine_failover_stats fo;
    ga_engine_failover_stats(e, &fo);
    CHECK_INT(fo.failovers, 1);
    CHECK(fo.metrics_moved > 0);
    CHECK_INT(ga_engine_backend_failed(e, fail), 1);
    CHECK_INT(ga_engine_backend_metrics(e, fail), 0);
    CHECK_INT(ga_engine_backend_metrics(e, -1), fo.metrics_moved);
    if (nprim == 2) {
        CHECK_INT(ga_engine_backend_failed(e, !fail), 0);
        CHECK_INT(ga_engine_backend_metrics(e, !fail) + ga_engine_backend_metrics(e, -1), M);
    } else {
        CHECK_INT(fo.metrics_moved, M);
    }
    if (lose_windows)
        CHECK_INT(fo.windows_lost, fo.metrics_moved);
    else
        CHECK_INT(fo.windows_lost, 0);
    if (!lose_windows) {
        /* a window set read at once, over the primary left and the
         * fallback, is each metric's window */
        uint32_t ids[M];
        struct ga_window set[M], one;
        size_t k = 0;
        for (uint32_t id = 0; id < M; id++)
            if (ga_engine_window_get(ref, id, &one) == 0) {
                ids[k++] = id;
                free(one.ts);
                free(one.value);
            }
        CHECK_INT(ga_engine_windows_get(e, ids, k, set), 0);
        for (size_t i = 0; i < k; i++) {
            CHECK_INT(ga_engine_window_get(ref, ids[i], &one), 0);
            CHECK_INT(set[i].n, one.n);
            for (size_t j = 0; j < one.n && j < set[i].n; j++)
                CHECK(set[i].ts[j] == one.ts[j] && set[i].value[j] == one.value[j]);
            free(one.ts);
            free(one.value);
            free(set[i].ts);
            free(set[i].value);
        }
        uint32_t unknown = M + 5;
        CHECK_INT(ga_engine_windows_get(e, &unknown, 1, set), GA_ENOENT);
    }
    ga_result_free(&r);
    ga_result_free(&want);
    ga_engine_close(e);
    ga_engine_close(ref);
}

/* Rows of r and want the same as sets (r's sorted). */
static void same_rows(struct ga_result *r, struct ga_result *want)
{
    qsort(r->aggs, r->naggs, sizeof *r->aggs, cmp_agg);
    qsort(want->aggs, want->naggs, sizeof *want->aggs, cmp_agg);
    CHECK_INT(r->naggs, want->naggs);
    CHECK_INT(r->nlate, want->nlate);
    int same = r->naggs == want->naggs;
    for (size_t i = 0; same && i < r->naggs; i++)
        same = cmp_agg(&r->aggs[i], &want->aggs[i]) == 0 && r->aggs[i].value == want->aggs[i].value;
    CHECK(same);
}

/* Pipelined: 4 batches, two in flight; primary `fail` fails on batch 1 but
 * only once batch 2 has been split (routed to it) — the gate holds its
 * feed until then (the same thread writes fail_feed and gate only while
 * the feeder is idle or held at the gate).  Batch 2's share for it goes to
 * the fallback, the failed primary is not fed again, and every batch's rows
 * equal a plain CPU engine's. */
static void run_pipelined(int nprim, int fail)
{
    struct rig rg;
    rig_open(&rg, nprim, fail);
    struct ga_engine *e = rg.e, *ref = rg.ref;
    struct flaky *gf = rg.gf;
    enum { K = 4 };
    static uint32_t mid[K][N];
    static int64_t ts[K][N];
    static double v[K][N];
    int64_t t0 = 1700000000 * SEC;
    struct ga_result r[2] = { { 0 } }, want[K] = { { 0 } };
    struct ga_points pts[K];
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < N; i++) {
            mid[k][i] = (uint32_t)(rnd() % M);
            ts[k][i] = t0 + (k * 300 + rnd_in(0, 400)) * SEC / 2;
            v[k][i] = rnd_value();
        }
        pts[k] = (struct ga_points){ .n = N, .metric = mid[k], .ts = ts[k], .value = v[k] };
        CHECK_INT(ga_engine_feed(ref, &pts[k], &want[k]), 0);
    }
    CHECK_INT(ga_engine_feed_start(e, &pts[0], &r[0]), 0);
    CHECK_INT(ga_engine_feed_wait(e), 0);
    same_rows(&r[0], &want[0]);
    ga_result_reset(&r[0]);
    gf->gate = 0;             /* the feeder is idle: no batch in flight */
    gf->fail_feed = 1;
    CHECK_INT(ga_engine_feed_start(e, &pts[1], &r[1]), 0);   /* fails, once the gate opens */
    CHECK_INT(ga_engine_feed_start(e, &pts[2], &r[0]), 0);   /* split before the failover */
    usleep(2000);
    CHECK_INT(gf->failed, 0);
    __atomic_store_n(&gf->gate, 1, __ATOMIC_RELEASE);
    CHECK_INT(ga_engine_feed_wait(e), 0);
    same_rows(&r[1], &want[1]);
    ga_result_reset(&r[1]);
    CHECK_INT(ga_engine_feed_start(e, &pts[3], &r[1]), 0);
    CHECK_INT(ga_engine_feed_wait(e), 0);
    same_rows(&r[0], &want[2]);
    CHECK_INT(ga_engine_feed_wait(e), 0);
    same_rows(&r[1], &want[3]);
    CHECK_INT(gf->failed, 1);
    CHECK_INT(gf->fed_after, 0);
    struct ga_engine_failover_stats fo;
    ga_engine_failover_stats(e, &fo);
    CHECK_INT(fo.failovers, 1);
    CHECK_INT(fo.windows_lost, 0);
    CHECK_INT(ga_engine_backend_failed(e, fail), 1);
    for (int i = 0; i < 2; i++)
        ga_result_free(&r[i]);
    for (int k = 0; k < K; k++)
        ga_result_free(&want[k]);
    ga_engine_close(e);
    ga_engine_close(ref);
}

static void test_failover_pipelined(void)
{
    for (int i = 0; i < 10; i++) {
        run_pipelined(2, 1);
        run_pipelined(2, 0);
        run_pipelined(1, 0);
    }
}

static void test_failover_keeps_answers(void)
{
    for (int i = 0; i < 20; i++) {
        run_case(0, 2, 1);
        run_case(0, 2, 0);
    }
}

static void test_failover_one_gpu(void)
{
    for (int i = 0; i < 20; i++)
        run_case(0, 1, 0);
}

static void test_failover_counts_lost_windows(void)
{
    run_case(1, 2, 1);
    run_case(1, 2, 0);
    run_case(1, 1, 0);
}

void run_tests(void)
{
    ga_log_set_level(GA_LOG_ERROR + 1);
    RUN(test_failover_keeps_answers);
    RUN(test_failover_one_gpu);
    RUN(test_failover_counts_lost_windows);
    RUN(test_failover_pipelined);
}
