/* test_engine.c — the CPU backend against a naive carbonara model on random
 * series: random policies (granularities that do and do not divide the
 * block, all kinds of methods, back windows, timespans), out-of-order and
 * multi-batch arrival, gaps, duplicate timestamps, sub-second timestamps,
 * late points inside and outside the back window.  Also: thread count and
 * backend count do not change the answer; window get/put round trip. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tests/unit/engine_model.h"
#include "tests/unit/random_policy.h"

#define SEC 1000000000LL

/* Previous values, per metric: (g, m, b) -> v, linear (small tests). */
struct state {
    struct model_row *r;
    size_t n;
};
static struct model_row *state_find(struct state *s, int64_t g, ga_method_t m, int64_t b)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->r[i].g == g && s->r[i].m == m && s->r[i].b == b)
            return &s->r[i];
    return NULL;
}
static void state_put(struct state *s, int64_t g, ga_method_t m, int64_t b, double v)
{
    struct model_row *x = state_find(s, g, m, b);
    if (!x) {
        s->r = realloc(s->r, (s->n + 1) * sizeof *s->r);
        x = &s->r[s->n++];
    }
    *x = (struct model_row){ g, b, m, v };
}

static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static int agg_eq(const struct ga_agg *a, const struct ga_agg *b)
{
    return a->metric == b->metric && a->method == b->method &&
           a->granularity_ns == b->granularity_ns && a->ts == b->ts && same(a->value, b->value);
}

#define MAXM 6

static size_t rows_checked, late_seen;

static void one_trial(int trial, int threads, int nbackends)
{
    struct ga_policy pol[MAXM];
    int nmet = (int)rnd_in(1, MAXM);
    struct ga_backend *bk[4];
    for (int i = 0; i < nbackends; i++)
        CHECK_INT(ga_cpu_backend_open(&bk[i], threads), 0);
    struct ga_engine *e;
    CHECK_INT(ga_engine_open(&e, bk, nbackends), 0);
    struct model md[MAXM] = { 0 };
    struct state st[MAXM] = { 0 };
    for (int m = 0; m < nmet; m++) {
        random_policy(&pol[m]);
        CHECK_INT(ga_engine_metric_add(e, (uint32_t)(m * 7 + 3), &pol[m]), 0);
        md[m].p = &pol[m];
    }
    struct ga_result res = { 0 };
    int64_t now = rnd_in(1600000000, 1700000000) * SEC + rnd_in(0, SEC);
    int nbatch = (int)rnd_in(1, 8);
    size_t cap = 4096;
    uint32_t *mid = malloc(cap * sizeof *mid);
    int64_t *ts = malloc(cap * sizeof *ts);
    double *val = malloc(cap * sizeof *val);
    for (int bi = 0; bi < nbatch; bi++) {
        size_t n = (size_t)rnd_in(1, 300);
        int64_t spread = rnd_in(1, 600) * SEC;
        for (size_t i = 0; i < n; i++) {
            mid[i] = (uint32_t)(rnd_in(0, nmet - 1) * 7 + 3);
            int64_t t = now + rnd_in(-spread / 2, spread);
            if (rnd() % 10 == 0)
                t = now - rnd_in(0, 3600) * SEC;   /* late: maybe outside the window */
            if (rnd() % 8 == 0 && i)
                t = ts[rnd() % i];                  /* duplicate timestamp */
            if (rnd() % 3 == 0)
                t = t / SEC * SEC;                  /* whole seconds: bucket edges */
            ts[i] = t;
            val[i] = rnd_value();
        }
        now += spread;
        ga_result_reset(&res);
        CHECK_INT(ga_engine_feed(e, &(struct ga_points){ .n = n, .metric = mid,
                                                         .ts = ts, .value = val }, &res), 0);
        for (int m = 0; m < nmet; m++) {
            int64_t mts[4096];
            double mv[4096];
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (mid[i] == (uint32_t)(m * 7 + 3)) {
                    mts[k] = ts[i];
                    mv[k++] = val[i];
                }
            model_feed(&md[m], mts, mv, k);
        }
        /* every row the engine emits is carbonara's value, bit for bit */
        for (size_t r = 0; r < res.naggs; r++) {
            const struct ga_agg *a = &res.aggs[r];
            int m = (int)(a->metric - 3) / 7;
            CHECK(m >= 0 && m < nmet && a->metric == (uint32_t)(m * 7 + 3));
            if (m < 0 || m >= nmet)
                continue;
            const struct model_row *x = model_find(&md[m], a->granularity_ns, a->method, a->ts);
            if (!x) {
                char nb[GA_METHOD_NAME_MAX];
                harness_fail(__FILE__, __LINE__, "trial %d batch %d: engine row %s g=%lld b=%lld "
                             "not in carbonara's output", trial, bi, ga_method_name(a->method, nb),
                             (long long)a->granularity_ns, (long long)a->ts);
                continue;
            }
            if (!same(x->v, a->value)) {
                char nb[GA_METHOD_NAME_MAX];
                harness_fail(__FILE__, __LINE__, "trial %d batch %d: %s g=%lld b=%lld: %.17g, "
                             "carbonara %.17g", trial, bi, ga_method_name(a->method, nb),
                             (long long)a->granularity_ns, (long long)a->ts, a->value, x->v);
            }
            state_put(&st[m], a->granularity_ns, a->method, a->ts, a->value);
            rows_checked++;
        }
        late_seen += res.nlate;
        /* every bucket whose value changed was emitted (pct may move by an
         * ulp when carbonara recomputes an untouched bucket: its min_pos) */
        for (int m = 0; m < nmet; m++) {
            for (size_t r = 0; r < md[m].nrows; r++) {
                const struct model_row *x = &md[m].rows[r];
                struct model_row *y = state_find(&st[m], x->g, x->m, x->b);
                if (y && (same(y->v, x->v) || fabs(y->v - x->v) <= 1e-12 * fabs(x->v)))
                    continue;
                /* carbonara artefact (docs/SEMANTICS.md): a late point makes it
                 * recompute the window's first bucket from what is left of it
                 * (rate: loses its first difference; a bucket straddling the
                 * first block loses points).  We keep the first value. */
                if (x->b <= md[m].first_at_feed)
                    continue;
                /* Npct depends on where carbonara's recomputation starts
                 * (min_pos); the other methods of the bucket cover it */
                if (GA_M_IS_PCT(x->m))
                    continue;
                /* rate: in a bucket that was once the first recomputed one:
                 * carbonara's value depends on its history (SEMANTICS.md) */
                int d = 0;
                while (pol[m].defs[d].granularity_ns != x->g)
                    d++;
                if (GA_M_IS_RATE(x->m) && model_was_start(&md[m], d, x->b))
                    continue;
                char nb[GA_METHOD_NAME_MAX];
                harness_fail(__FILE__, __LINE__, "trial %d batch %d metric %d: %s g=%lld b=%lld "
                             "changed to %.17g (engine had %.17g) but was not emitted", trial, bi,
                             m, ga_method_name(x->m, nb), (long long)x->g, (long long)x->b, x->v,
                             y ? y->v : NAN);
                state_put(&st[m], x->g, x->m, x->b, x->v);
            }
        }
    }
    /* late points, per metric and in total */
    struct ga_engine_stats es;
    ga_engine_get_stats(e, &es);
    uint64_t tot = 0;
    for (int m = 0; m < nmet; m++) {
        struct ga_metric_stats ms;
        CHECK_INT(ga_engine_metric_stats(e, (uint32_t)(m * 7 + 3), &ms), 0);
        CHECK_INT(ms.late_window, md[m].late[GA_LATE_WINDOW]);
        tot += ms.late_window;
        /* the window is carbonara's bound serie, point for point */
        struct ga_window w;
        CHECK_INT(ga_engine_window_get(e, (uint32_t)(m * 7 + 3), &w), 0);
        CHECK_INT(w.n, md[m].n);
        for (size_t i = 0; i < w.n && i < md[m].n; i++)
            CHECK(w.ts[i] == md[m].ts[i] && same(w.value[i], md[m].v[i]));
        free(w.ts);
        free(w.value);
    }
    CHECK_INT(es.late_window, tot);
    for (int m = 0; m < nmet; m++) {
        model_free(&md[m]);
        free(st[m].r);
    }
    free(mid);
    free(ts);
    free(val);
    ga_result_free(&res);
    ga_engine_close(e);
}

static void test_random_vs_carbonara_model(void)
{
    ga_log_set_level(GA_LOG_ERROR);
    rows_checked = late_seen = 0;
    for (int t = 0; t < 150; t++)
        one_trial(t, 1, 1);
    CHECK(rows_checked > 20000);           /* the comparison compared something */
    CHECK(late_seen > 500);
}

static void test_random_threads_and_backends(void)
{
    for (int t = 0; t < 60; t++)
        one_trial(1000 + t, (int)rnd_in(2, 5), (int)rnd_in(1, 4));
}

/* Same big batch through 1 thread and 4 threads, 1 and 3 backends: the
 * same rows (as a set) and the same late points. */
static int cmp_agg(const void *a, const void *b)
{
    const struct ga_agg *x = a, *y = b;
    if (x->metric != y->metric) return x->metric < y->metric ? -1 : 1;
    if (x->granularity_ns != y->granularity_ns) return x->granularity_ns < y->granularity_ns ? -1 : 1;
    if (x->method != y->method) return x->method < y->method ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return 0;
}

static void run_big(int threads, int nb, const struct ga_points *pts, struct ga_result *res)
{
    struct ga_backend *bk[3];
    for (int i = 0; i < nb; i++)
        CHECK_INT(ga_cpu_backend_open(&bk[i], threads), 0);
    struct ga_engine *e;
    CHECK_INT(ga_engine_open(&e, bk, nb), 0);
    const struct ga_policy *pol = ga_policy_builtin("high");
    struct ga_policy p = *pol;
    const char *ms[] = { "mean", "std", "90pct", "rate:mean", "median", "last" };
    CHECK_INT(ga_policy_methods_from_list(&p, ms, 6, NULL), 0);
    for (uint32_t m = 0; m < 500; m++)
        CHECK_INT(ga_engine_metric_add(e, m, &p), 0);
    CHECK_INT(ga_engine_feed(e, pts, res), 0);
    qsort(res->aggs, res->naggs, sizeof *res->aggs, cmp_agg);
    ga_engine_close(e);
}

/* Threads in the CPU backend and several backends (whose shares of a batch
 * are split on several threads past 1 Mi points, and fed concurrently)
 * give the same rows and the same late points as one backend on one
 * thread; 1 % of the points name metrics never added. */
static void test_parallel_equals_serial(void)
{
    size_t n = 2500000;
    uint32_t *mid = malloc(n * sizeof *mid);
    int64_t *ts = malloc(n * sizeof *ts);
    double *val = malloc(n * sizeof *val);
    int64_t t0 = 1700000000 * SEC;
    for (size_t i = 0; i < n; i++) {
        mid[i] = rnd() % 100 == 0 ? 100000 + (uint32_t)(rnd() % 7) : (uint32_t)(rnd() % 500);
        ts[i] = t0 + rnd_in(0, 7200) * (SEC / 4);
        val[i] = rnd_value();
    }
    struct ga_points pts = { .n = n, .metric = mid, .ts = ts, .value = val };
    struct ga_result a = { 0 }, b = { 0 }, c = { 0 };
    run_big(1, 1, &pts, &a);
    run_big(4, 1, &pts, &b);
    run_big(3, 3, &pts, &c);
    CHECK(a.naggs > n / 10);
    CHECK_INT(a.naggs, b.naggs);
    CHECK_INT(a.naggs, c.naggs);
    CHECK(a.nlate > n / 200);
    CHECK_INT(a.nlate, c.nlate);
    for (size_t i = 0; i < a.nlate && i < c.nlate; i++)
        if (a.late[i].metric != c.late[i].metric || a.late[i].ts != c.late[i].ts) {
            harness_fail(__FILE__, __LINE__, "late point %zu differs", i);
            break;
        }
    for (size_t i = 0; i < a.naggs && i < b.naggs && i < c.naggs; i++) {
        if (!agg_eq(&a.aggs[i], &b.aggs[i]) || !agg_eq(&a.aggs[i], &c.aggs[i])) {
            harness_fail(__FILE__, __LINE__, "row %zu differs: %u/%u/%u %lld/%lld/%lld %.17g/%.17g/%.17g", i,
                         a.aggs[i].method, b.aggs[i].method, c.aggs[i].method, (long long)a.aggs[i].ts,
                         (long long)b.aggs[i].ts, (long long)c.aggs[i].ts, a.aggs[i].value,
                         b.aggs[i].value, c.aggs[i].value);
            break;
        }
    }
    free(mid);
    free(ts);
    free(val);
    ga_result_free(&a);
    ga_result_free(&b);
    ga_result_free(&c);
}

/* window_put then feed == feeding everything to the original. */
static void test_window_roundtrip(void)
{
    struct ga_policy p;
    random_policy(&p);
    struct ga_backend *b1, *b2;
    CHECK_INT(ga_cpu_backend_open(&b1, 2), 0);
    CHECK_INT(ga_cpu_backend_open(&b2, 1), 0);
    CHECK_INT(b1->ops->metric_add(b1, 5, &p), 0);
    int64_t t0 = 1650000000 * SEC;
    int64_t ts[64];
    double v[64];
    uint32_t mid[64];
    for (int i = 0; i < 64; i++) {        /* the second batch is newer: never all late */
        ts[i] = t0 + (i < 32 ? rnd_in(0, 60) : rnd_in(61, 120)) * SEC / 3;
        v[i] = rnd_value();
        mid[i] = 5;
    }
    struct ga_result r1 = { 0 }, r2 = { 0 };
    CHECK_INT(b1->ops->feed(b1, &(struct ga_points){ .n = 32, .metric = mid, .ts = ts, .value = v }, &r1), 0);
    struct ga_window w;
    CHECK_INT(b1->ops->window_get(b1, 5, &w), 0);
    CHECK(w.n > 0);
    CHECK_INT(w.has_prev, 0);
    CHECK_INT(b2->ops->window_put(b2, 5, &p, &w), 0);
    ga_result_reset(&r1);
    CHECK_INT(b1->ops->feed(b1, &(struct ga_points){ .n = 32, .metric = mid + 32,
                                                     .ts = ts + 32, .value = v + 32 }, &r1), 0);
    CHECK_INT(b2->ops->feed(b2, &(struct ga_points){ .n = 32, .metric = mid + 32,
                                                     .ts = ts + 32, .value = v + 32 }, &r2), 0);
    CHECK_INT(r1.naggs, r2.naggs);
    CHECK(r1.naggs > 0);
    for (size_t i = 0; i < r1.naggs && i < r2.naggs; i++)
        if (!agg_eq(&r1.aggs[i], &r2.aggs[i])) {
            harness_fail(__FILE__, __LINE__, "row %zu: m=%u %u g=%lld %lld b=%lld %lld v=%.17g %.17g", i,
                         r1.aggs[i].method, r2.aggs[i].method, (long long)r1.aggs[i].granularity_ns,
                         (long long)r2.aggs[i].granularity_ns, (long long)r1.aggs[i].ts,
                         (long long)r2.aggs[i].ts, r1.aggs[i].value, r2.aggs[i].value);
            break;
        }
    CHECK_INT(r1.nlate, r2.nlate);
    /* a window that is not sorted is refused */
    if (w.n >= 2) {
        int64_t tmp = w.ts[0];
        w.ts[0] = w.ts[1];
        w.ts[1] = tmp;
        CHECK_INT(b2->ops->window_put(b2, 6, &p, &w), GA_EINVAL);
    }
    free(w.ts);
    free(w.value);
    ga_result_free(&r1);
    ga_result_free(&r2);
    b1->ops->close(b1);
    b2->ops->close(b2);
}

void run_tests(void)
{
    RUN(test_random_vs_carbonara_model);
    RUN(test_random_threads_and_backends);
    RUN(test_parallel_equals_serial);
    RUN(test_window_roundtrip);
}
