/* test_engine_multi.c — an engine over N CPU backends (the batch split per
 * backend, the backends fed at the same time, their outputs gathered into
 * the caller's result) against an engine over one backend, on random data
 * over several batches: the same rows as a set, bit for bit, the same late
 * points, the same statistics; and two N-backend engines fed the same
 * batches give the same rows and late points in the same order (the order
 * must not depend on which backend finishes first).  Batches include
 * unknown ids (gaps between added ids, huge ids, a dropped metric), late,
 * negative and non-finite points, batches that leave some or all backends
 * without points, empty batches, and big batches (split and gathered on
 * several threads).  The caller's result already holds a row, which must
 * stay first. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tests/unit/random_policy.h"

static int cmp_bits(double a, double b)
{
    uint64_t x, y;
    memcpy(&x, &a, 8);
    memcpy(&y, &b, 8);
    return x < y ? -1 : x > y;
}

static int cmp_agg(const void *pa, const void *pb)
{
    const struct ga_agg *a = pa, *b = pb;
    if (a->metric != b->metric) return a->metric < b->metric ? -1 : 1;
    if (a->granularity_ns != b->granularity_ns) return a->granularity_ns < b->granularity_ns ? -1 : 1;
    if (a->method != b->method) return a->method < b->method ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return cmp_bits(a->value, b->value);
}

static int cmp_late(const void *pa, const void *pb)
{
    const struct ga_late *a = pa, *b = pb;
    if (a->metric != b->metric) return a->metric < b->metric ? -1 : 1;
    if (a->reason != b->reason) return a->reason < b->reason ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return cmp_bits(a->value, b->value);
}

/* Rows and late points equal in order, field by field (value bits). */
static int same_in_order(const struct ga_result *a, const struct ga_result *b)
{
    if (a->naggs != b->naggs || a->nlate != b->nlate)
        return 0;
    for (size_t i = 0; i < a->naggs; i++)
        if (cmp_agg(&a->aggs[i], &b->aggs[i]))
            return 0;
    for (size_t i = 0; i < a->nlate; i++)
        if (cmp_late(&a->late[i], &b->late[i]))
            return 0;
    return 1;
}

/* Rows and late points equal as sets (sorts copies). */
static int same_as_sets(const struct ga_result *a, const struct ga_result *b)
{
    if (a->naggs != b->naggs || a->nlate != b->nlate)
        return 0;
    struct ga_result x = { 0 }, y = { 0 };
    CHECK_INT(ga_result_reserve(&x, a->naggs + 1, a->nlate + 1), 0);   /* never NULL */
    CHECK_INT(ga_result_reserve(&y, b->naggs + 1, b->nlate + 1), 0);
    if (a->naggs) {
        memcpy(x.aggs, a->aggs, a->naggs * sizeof *a->aggs);
        memcpy(y.aggs, b->aggs, b->naggs * sizeof *b->aggs);
    }
    if (a->nlate) {
        memcpy(x.late, a->late, a->nlate * sizeof *a->late);
        memcpy(y.late, b->late, b->nlate * sizeof *b->late);
    }
    x.naggs = y.naggs = a->naggs;
    x.nlate = y.nlate = a->nlate;
    qsort(x.aggs, x.naggs, sizeof *x.aggs, cmp_agg);
    qsort(y.aggs, y.naggs, sizeof *y.aggs, cmp_agg);
    qsort(x.late, x.nlate, sizeof *x.late, cmp_late);
    qsort(y.late, y.nlate, sizeof *y.late, cmp_late);
    int same = same_in_order(&x, &y);
    ga_result_free(&x);
    ga_result_free(&y);
    return same;
}

/* engine.h: the rows of one metric come together. */
static int metrics_contiguous(const struct ga_result *r, uint32_t max_id)
{
    uint8_t *seen = calloc((size_t)max_id + 1, 1);
    int ok = 1;
    for (size_t i = 0; i < r->naggs && ok; i++) {
        uint32_t m = r->aggs[i].metric;
        if (m > max_id) {
            ok = 0;
        } else if (i == 0 || m != r->aggs[i - 1].metric) {
            ok = !seen[m];
            seen[m] = 1;
        }
    }
    free(seen);
    return ok;
}

static const struct ga_agg mark = { .metric = 4000000000u, .ts = -1, .value = 42 };

/* Strip the mark row the caller's result held before the feed. */
static void strip_mark(struct ga_result *r)
{
    CHECK(r->naggs > 0 && r->aggs[0].metric == mark.metric && r->aggs[0].ts == mark.ts &&
          r->aggs[0].value == mark.value);
    if (r->naggs > 0) {
        memmove(r->aggs, r->aggs + 1, (r->naggs - 1) * sizeof *r->aggs);
        r->naggs--;
    }
}

#define NPOL 5

/* Engines: [0] one backend of one thread, [1] and [2] nb backends of the
 * same (random) thread counts. */
struct trio {
    struct ga_engine *e[3];
    struct ga_result r[3];
    int nb;
};

static void trio_open(struct trio *t, int nb)
{
    memset(t, 0, sizeof *t);
    t->nb = nb;
    int threads[16];
    for (int i = 0; i < nb; i++)
        threads[i] = (int)rnd_in(1, 3);
    for (int k = 0; k < 3; k++) {
        int n = k == 0 ? 1 : nb;
        struct ga_backend *b[16];
        for (int i = 0; i < n; i++)
            CHECK_INT(ga_cpu_backend_open(&b[i], k == 0 ? 1 : threads[i]), 0);
        CHECK_INT(ga_engine_open(&t->e[k], b, n), 0);
    }
}

static void trio_close(struct trio *t)
{
    for (int k = 0; k < 3; k++) {
        ga_engine_close(t->e[k]);
        ga_result_free(&t->r[k]);
    }
}

static void trio_add(struct trio *t, uint32_t id, const struct ga_policy *p)
{
    for (int k = 0; k < 3; k++)
        CHECK_INT(ga_engine_metric_add(t->e[k], id, p), 0);
}

static void trio_drop(struct trio *t, uint32_t id)
{
    for (int k = 0; k < 3; k++)
        ga_engine_metric_drop(t->e[k], id);
}

static size_t rows_compared, late_compared, batches_fed;

/* Feed one batch to the three engines and compare. */
static void trio_feed(struct trio *t, const struct ga_points *pts, uint32_t max_id)
{
    for (int k = 0; k < 3; k++) {
        ga_result_reset(&t->r[k]);
        if (k)
            CHECK_INT(ga_result_push_agg(&t->r[k], &mark), 0);
        CHECK_INT(ga_engine_feed(t->e[k], pts, &t->r[k]), 0);
        if (k)
            strip_mark(&t->r[k]);
    }
    CHECK_INT(t->r[1].naggs, t->r[0].naggs);
    CHECK_INT(t->r[1].nlate, t->r[0].nlate);
    CHECK(same_as_sets(&t->r[1], &t->r[0]));
    CHECK(same_in_order(&t->r[1], &t->r[2]));
    CHECK(metrics_contiguous(&t->r[1], max_id));
    struct ga_engine_feed_times ft;
    ga_engine_feed_times(t->e[1], &ft);
    CHECK_INT(ft.nslots, t->nb);
    CHECK(ft.split_s >= 0 && ft.feed_s >= 0 && ft.append_s >= 0 &&
          ft.total_s >= ft.split_s + ft.feed_s + ft.append_s - 1e-9);
    rows_compared += t->r[1].naggs;
    late_compared += t->r[1].nlate;
    batches_fed++;
}

static void trio_check_stats(struct trio *t, uint32_t max_id)
{
    struct ga_engine_stats s0, s1;
    ga_engine_get_stats(t->e[0], &s0);
    ga_engine_get_stats(t->e[1], &s1);
    CHECK_INT(s1.points_in, s0.points_in);
    CHECK_INT(s1.points_aggregated, s0.points_aggregated);
    CHECK_INT(s1.aggs_out, s0.aggs_out);
    CHECK_INT(s1.late_window, s0.late_window);
    CHECK_INT(s1.late_before_epoch, s0.late_before_epoch);
    CHECK_INT(s1.late_nonfinite, s0.late_nonfinite);
    CHECK_INT(s1.late_unknown, s0.late_unknown);
    CHECK_INT(s1.metrics, s0.metrics);
    uint64_t per_backend = 0;
    for (int i = 0; i < t->nb; i++)
        per_backend += ga_engine_backend_metrics(t->e[1], i);
    CHECK_INT(per_backend, s1.metrics);
    for (uint32_t id = 0; id <= max_id; id++) {
        struct ga_metric_stats m0, m1;
        int rc0 = ga_engine_metric_stats(t->e[0], id, &m0);
        CHECK_INT(ga_engine_metric_stats(t->e[1], id, &m1), rc0);
        if (rc0 == 0 && memcmp(&m0, &m1, sizeof m0) != 0)
            harness_fail(__FILE__, __LINE__, "metric %u: late counts differ", id);
    }
}

struct batch {
    uint32_t *mid;
    int64_t *ts;
    double *val;
    size_t cap;
};

static void batch_reserve(struct batch *b, size_t n)
{
    if (n <= b->cap)
        return;
    b->mid = realloc(b->mid, n * sizeof *b->mid);
    b->ts = realloc(b->ts, n * sizeof *b->ts);
    b->val = realloc(b->val, n * sizeof *b->val);
    b->cap = n;
}

/* Added ids are 3m + 1 for m in [0, nmet); 3m + 2 are never added (unknown,
 * but below the engine's table size); unknown() also gives huge ids. */
static uint32_t id_of(int m) { return (uint32_t)m * 3 + 1; }

static uint32_t unknown_id(int nmet)
{
    switch (rnd() % 3) {
    case 0: return (uint32_t)rnd_in(0, nmet - 1) * 3 + 2;
    case 1: return (uint32_t)rnd_in(1u << 24, 1u << 30);
    default: return UINT32_MAX - (uint32_t)(rnd() % 4);
    }
}

/* One random scenario: nb backends, nmet metrics, nbatch batches of up to
 * maxn points. */
static void scenario(int nb, int nmet, size_t maxn, int nbatch)
{
    struct ga_policy pol[NPOL];
    for (int i = 0; i < NPOL; i++)
        random_policy(&pol[i]);
    struct trio t;
    trio_open(&t, nb);
    for (int m = 0; m < nmet; m++)
        trio_add(&t, id_of(m), &pol[m % NPOL]);
    uint32_t max_id = id_of(nmet - 1) + 1;
    struct batch b = { 0 };
    int64_t now = rnd_in(1600000000, 1700000000) * SEC;
    int dropped = -1;
    for (int bi = 0; bi < nbatch; bi++) {
        int kind = (int)(rnd() % 10);         /* 0: empty, 1: one metric, 2: unknown ids only */
        size_t n = kind == 0 ? 0 : (size_t)rnd_in(1, (int64_t)maxn);
        batch_reserve(&b, n + 1);
        int64_t spread = rnd_in(1, 900) * SEC;
        int one = (int)rnd_in(0, nmet - 1);
        for (size_t i = 0; i < n; i++) {
            int m = kind == 1 ? one : (int)rnd_in(0, nmet - 1);
            b.mid[i] = kind == 2 || rnd() % 40 == 0 ? unknown_id(nmet) : id_of(m);
            int64_t ts = now + rnd_in(-spread / 4, spread);
            if (rnd() % 12 == 0)
                ts = now - rnd_in(0, 7200) * SEC;            /* late, maybe out of the window */
            if (rnd() % 10 == 0 && i)
                ts = b.ts[rnd() % i];                        /* duplicate timestamp */
            if (rnd() % 100 == 0)
                ts = -rnd_in(1, 1000) * SEC;                 /* before the epoch */
            b.ts[i] = ts;
            b.val[i] = rnd() % 100 == 0 ? (rnd() % 2 ? NAN : -INFINITY) : rnd_value();
        }
        now += spread;
        struct ga_points pts = { .n = n, .metric = b.mid, .ts = b.ts, .value = b.val };
        trio_feed(&t, &pts, max_id);
        if (bi == nbatch / 2 && nmet > 1) {    /* its points are unknown from now on */
            dropped = (int)rnd_in(0, nmet - 1);
            trio_drop(&t, id_of(dropped));
        } else if (dropped >= 0 && rnd() % 2) {
            trio_add(&t, id_of(dropped), &pol[(dropped + 1) % NPOL]);
            dropped = -1;
        }
    }
    trio_check_stats(&t, max_id);
    free(b.mid);
    free(b.ts);
    free(b.val);
    trio_close(&t);
}

/* Small batches, any number of backends: some have no metric at all
 * (nb > metrics), or no point in a batch. */
static void test_random_small(void)
{
    rows_compared = late_compared = batches_fed = 0;
    static const int nbs[] = { 2, 3, 4, 7 };
    static const int nmets[] = { 1, 2, 5, 40, 300 };
    for (int s = 0; s < 40; s++)
        scenario(nbs[rnd() % 4], nmets[rnd() % 5], (size_t)rnd_in(1, 3000), (int)rnd_in(2, 8));
    CHECK(rows_compared > 50000);            /* the comparisons compared something */
    CHECK(late_compared > 2000);
    CHECK(batches_fed >= 80);
}

/* Big batches: the split runs on several threads (from 2 x 65536 points
 * when there are 2 cores), and the outputs of the backends past the first
 * are gathered on several threads (from 2 x 2 MiB of rows). */
static void test_big_batches(void)
{
    struct ga_policy p = { .name = "big", .back_window = 1 };
    const char *ms[] = { "mean", "count", "max", "last", "std" };
    CHECK_INT(ga_policy_add_def(&p, SEC, 0, 0, NULL), 0);
    CHECK_INT(ga_policy_add_def(&p, 60 * SEC, 0, 0, NULL), 0);
    CHECK_INT(ga_policy_methods_from_list(&p, ms, 5, NULL), 0);
    enum { NMET = 3000 };
    size_t n = 400000;
    struct trio t;
    trio_open(&t, 3);
    for (int m = 0; m < NMET; m++)
        trio_add(&t, id_of(m), &p);
    struct batch b = { 0 };
    batch_reserve(&b, n);
    int64_t t0 = 1700000000 * SEC;
    size_t rows0 = rows_compared;
    for (int bi = 0; bi < 3; bi++) {
        for (size_t i = 0; i < n; i++) {
            b.mid[i] = rnd() % 100 == 0 ? unknown_id(NMET) : id_of((int)(rnd() % NMET));
            /* whole seconds: duplicate timestamps, where arrival order decides */
            b.ts[i] = t0 + (int64_t)bi * 200 * SEC + rnd_in(0, 300) * SEC;
            b.val[i] = rnd_value();
        }
        trio_feed(&t, &(struct ga_points){ .n = n, .metric = b.mid,
                                           .ts = b.ts, .value = b.val }, id_of(NMET - 1) + 1);
    }
    CHECK(rows_compared - rows0 > 3 * 200000);
    trio_check_stats(&t, id_of(NMET - 1) + 1);
    free(b.mid);
    free(b.ts);
    free(b.val);
    trio_close(&t);
}

void run_tests(void)
{
    ga_log_set_level(GA_LOG_ERROR + 1);
    RUN(test_random_small);
    RUN(test_big_batches);
}
