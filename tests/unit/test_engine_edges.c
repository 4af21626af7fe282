/* test_engine_edges.c — one test per edge of the semantics (SEMANTICS.md):
 * std with n = 1, percentiles at exact ranks and between them, rate: across
 * bucket boundaries and after a gap, points before 1970, duplicates, NaN and
 * Inf, the back window, timespans, unknown metrics.  Values are random;
 * expectations are computed here from the inputs. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"

#define SEC 1000000000LL

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static double rnd_value(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng % 2000003) / 1000.0 - 1000.0;
}

struct fix {
    struct ga_engine *e;
    struct ga_policy p;
    struct ga_result r;
};

/* Engine with one metric (id 1) under granularities g[] and methods m[]. */
static void fix_open(struct fix *f, const int64_t *g, int ng, const char *const *m, int nm,
                     int64_t back_window)
{
    memset(f, 0, sizeof *f);
    ga_log_set_level(GA_LOG_ERROR);
    f->p.back_window = back_window;
    for (int i = 0; i < ng; i++)
        CHECK_INT(ga_policy_add_def(&f->p, g[i], 0, 0, NULL), 0);
    CHECK_INT(ga_policy_methods_from_list(&f->p, m, nm, NULL), 0);
    struct ga_backend *b;
    CHECK_INT(ga_cpu_backend_open(&b, 2), 0);
    CHECK_INT(ga_engine_open(&f->e, &b, 1), 0);
    CHECK_INT(ga_engine_metric_add(f->e, 1, &f->p), 0);
}

static void fix_feed(struct fix *f, const int64_t *ts, const double *v, size_t n)
{
    uint32_t ids[512];
    for (size_t i = 0; i < n; i++)
        ids[i] = 1;
    ga_result_reset(&f->r);
    CHECK_INT(ga_engine_feed(f->e, &(struct ga_points){ .n = n, .metric = ids,
                                                        .ts = ts, .value = v }, &f->r), 0);
}

static void fix_close(struct fix *f)
{
    ga_engine_close(f->e);
    ga_result_free(&f->r);
}

/* The value of (method, g, bucket) in the last feed's rows; NAN if absent. */
static double row(const struct fix *f, const char *method, int64_t g, int64_t b, int *found)
{
    int m = ga_method_parse(method);
    *found = 0;
    for (size_t i = 0; i < f->r.naggs; i++) {
        const struct ga_agg *a = &f->r.aggs[i];
        if (a->method == m && a->granularity_ns == g && a->ts == b) {
            *found = 1;
            return a->value;
        }
    }
    return NAN;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const int64_t T0 = 1700000040LL * SEC;   /* a 60 s bucket start */

static void test_std_needs_two_points(void)
{
    struct fix f;
    const char *m[] = { "std", "count", "rate:std" };
    fix_open(&f, (int64_t[]){ 60 * SEC }, 1, m, 3, 0);
    double v[3] = { rnd_value(), rnd_value(), rnd_value() };
    int64_t ts[3] = { T0 + 5 * SEC, T0 + 60 * SEC + 1, T0 + 60 * SEC + 2 };
    fix_feed(&f, ts, v, 3);
    int found;
    row(&f, "std", 60 * SEC, T0, &found);
    CHECK(!found);                                   /* n = 1: nothing */
    CHECK_INT(row(&f, "count", 60 * SEC, T0, &found), 1);
    double s = row(&f, "std", 60 * SEC, T0 + 60 * SEC, &found);
    CHECK(found);
    CHECK_NEAR(s, fabs(v[1] - v[2]) / sqrt(2.0), 1e-15);  /* sample std, n - 1 */
    /* rate:std of bucket 2: differences v1-v0, v2-v1 (the first uses the
     * point of the previous bucket) */
    double d1 = v[1] - v[0], d2 = v[2] - v[1];
    CHECK_NEAR(row(&f, "rate:std", 60 * SEC, T0 + 60 * SEC, &found), fabs(d1 - d2) / sqrt(2.0), 1e-14);
    row(&f, "rate:std", 60 * SEC, T0, &found);
    CHECK(!found);                                   /* no difference at all */
    fix_close(&f);
}

static void test_percentiles_at_exact_ranks(void)
{
    struct fix f;
    const char *m[] = { "1pct", "37pct", "50pct", "99pct", "median", "min", "max" };
    fix_open(&f, (int64_t[]){ 3600 * SEC }, 1, m, 7, 0);
    /* 101 points: rank (n-1)*N/100 = N exactly */
    double v[101], s[101];
    int64_t ts[101];
    for (int i = 0; i < 101; i++) {
        ts[i] = 1699999200LL * SEC + (int64_t)(rng % 3600) * SEC + i;   /* any order */
        s[i] = v[i] = rnd_value();
    }
    qsort(s, 101, sizeof *s, cmpd);
    fix_feed(&f, ts, v, 101);
    int64_t b = 1699999200LL * SEC;
    int found;
    CHECK(row(&f, "1pct", 3600 * SEC, b, &found) == s[1]);
    CHECK(row(&f, "37pct", 3600 * SEC, b, &found) == s[37]);
    CHECK(row(&f, "50pct", 3600 * SEC, b, &found) == s[50]);
    CHECK(row(&f, "99pct", 3600 * SEC, b, &found) == s[99]);
    CHECK(row(&f, "median", 3600 * SEC, b, &found) == s[50]);
    CHECK(row(&f, "min", 3600 * SEC, b, &found) == s[0]);
    CHECK(row(&f, "max", 3600 * SEC, b, &found) == s[100]);
    fix_close(&f);
}

static void test_percentiles_between_ranks(void)
{
    struct fix f;
    const char *m[] = { "90pct", "median", "25pct" };
    fix_open(&f, (int64_t[]){ 60 * SEC }, 1, m, 3, 0);
    double v[6], s[6];
    int64_t ts[6];
    for (int i = 0; i < 6; i++) {
        ts[i] = T0 + (5 - i) * SEC;                  /* reverse order */
        s[i] = v[i] = rnd_value();
    }
    qsort(s, 6, sizeof *s, cmpd);
    fix_feed(&f, ts, v, 6);
    int found;
    /* rank 5 * 0.9 = 4.5: halfway between s[4] and s[5] */
    CHECK_NEAR(row(&f, "90pct", 60 * SEC, T0, &found), (s[4] + s[5]) / 2, 1e-12);
    CHECK_NEAR(row(&f, "median", 60 * SEC, T0, &found), (s[2] + s[3]) / 2, 1e-15);
    /* rank 1.25 */
    CHECK_NEAR(row(&f, "25pct", 60 * SEC, T0, &found), s[1] * 0.75 + s[2] * 0.25, 1e-12);
    fix_close(&f);
}

static void test_rate_across_buckets_and_gaps(void)
{
    struct fix f;
    const char *m[] = { "rate:first", "rate:count", "rate:sum", "rate:last" };
    int64_t g = 60 * SEC;
    fix_open(&f, &g, 1, m, 4, 5);
    double v[6];
    for (int i = 0; i < 6; i++)
        v[i] = rnd_value();
    /* one batch: bucket T0 (2 points), T0+g (2), T0+3g (2) after an empty bucket */
    int64_t ts[6] = { T0 + 1, T0 + 30 * SEC, T0 + g + 2, T0 + g + 9 * SEC, T0 + 3 * g, T0 + 3 * g + 1 };
    fix_feed(&f, ts, v, 6);
    int found;
    CHECK_INT(row(&f, "rate:count", g, T0, &found), 1);          /* first point: no diff */
    CHECK(row(&f, "rate:first", g, T0 + g, &found) == v[2] - v[1]);
    CHECK_INT(row(&f, "rate:count", g, T0 + g, &found), 2);
    /* across the empty bucket too, within one batch */
    CHECK(row(&f, "rate:first", g, T0 + 3 * g, &found) == v[4] - v[3]);
    CHECK(row(&f, "rate:last", g, T0 + 3 * g, &found) == v[5] - v[4]);
    CHECK_NEAR(row(&f, "rate:sum", g, T0 + 3 * g, &found), v[5] - v[3], 1e-12);

    /* next batch, after a gap of more than one bucket: carbonara derives
     * from start - g on, so the first point of the batch's first bucket has
     * no difference */
    double w[2] = { rnd_value(), rnd_value() };
    int64_t t2[2] = { T0 + 6 * g + 5, T0 + 6 * g + 7 };
    fix_feed(&f, t2, w, 2);
    CHECK_INT(row(&f, "rate:count", g, T0 + 6 * g, &found), 1);
    CHECK(row(&f, "rate:first", g, T0 + 6 * g, &found) == w[1] - w[0]);
    /* a point that lands right after bucket T0+g changes the difference of
     * its successor in T0+3g: that bucket is reported again */
    double x = rnd_value();
    int64_t t3 = T0 + 2 * g + 4;
    fix_feed(&f, &t3, &x, 1);
    CHECK(row(&f, "rate:first", g, T0 + 3 * g, &found) == v[4] - x);
    CHECK(found);
    CHECK(row(&f, "rate:first", g, T0 + 2 * g, &found) == x - v[3]);
    fix_close(&f);
}

static void test_before_epoch_rejected(void)
{
    struct fix f;
    const char *m[] = { "sum", "count" };
    fix_open(&f, (int64_t[]){ 60 * SEC }, 1, m, 2, 0);
    double v[3] = { rnd_value(), rnd_value(), rnd_value() };
    int64_t ts[3] = { 5 * SEC, -1, -3600 * SEC };
    fix_feed(&f, ts, v, 3);
    CHECK_INT(f.r.nlate, 2);
    for (size_t i = 0; i < f.r.nlate; i++) {
        CHECK_INT(f.r.late[i].reason, GA_LATE_BEFORE_EPOCH);
        CHECK_STR(ga_late_reason_name(f.r.late[i].reason), "before_epoch");
    }
    CHECK(f.r.late[0].ts == -1 && f.r.late[0].value == v[1]);   /* arrival order */
    int found;
    CHECK(row(&f, "sum", 60 * SEC, 0, &found) == v[0]);
    CHECK_INT(row(&f, "count", 60 * SEC, 0, &found), 1);
    struct ga_metric_stats ms;
    CHECK_INT(ga_engine_metric_stats(f.e, 1, &ms), 0);
    CHECK_INT(ms.late_before_epoch, 2);
    struct ga_engine_stats es;
    ga_engine_get_stats(f.e, &es);
    CHECK_INT(es.late_before_epoch, 2);
    CHECK_INT(es.points_in, 3);
    CHECK_INT(es.points_aggregated, 1);
    fix_close(&f);
}

static void test_duplicates_last_received_wins(void)
{
    struct fix f;
    const char *m[] = { "sum", "count", "last", "min" };
    fix_open(&f, (int64_t[]){ 60 * SEC }, 1, m, 4, 0);
    double v[4];
    for (int i = 0; i < 4; i++)
        v[i] = rnd_value();
    /* carbonara would keep min(v[0], v[2]) at T0+1; we keep v[2] */
    int64_t ts[4] = { T0 + 1, T0 + 2, T0 + 1, T0 + 3 };
    fix_feed(&f, ts, v, 4);
    int found;
    CHECK_INT(row(&f, "count", 60 * SEC, T0, &found), 3);
    CHECK_NEAR(row(&f, "sum", 60 * SEC, T0, &found), v[2] + v[1] + v[3], 1e-15);
    double mn = fmin(v[2], fmin(v[1], v[3]));
    CHECK(row(&f, "min", 60 * SEC, T0, &found) == mn);
    /* a later batch replaces a stored point */
    double nv = rnd_value();
    int64_t t = T0 + 3;
    fix_feed(&f, &t, &nv, 1);
    CHECK(row(&f, "last", 60 * SEC, T0, &found) == nv);
    CHECK_INT(row(&f, "count", 60 * SEC, T0, &found), 3);
    CHECK_NEAR(row(&f, "sum", 60 * SEC, T0, &found), v[2] + v[1] + nv, 1e-15);
    fix_close(&f);
}

static void test_nonfinite_rejected(void)
{
    struct fix f;
    const char *m[] = { "mean", "count", "rate:sum" };
    fix_open(&f, (int64_t[]){ 60 * SEC }, 1, m, 3, 0);
    double v[5] = { rnd_value(), NAN, INFINITY, rnd_value(), -INFINITY };
    int64_t ts[5] = { T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 5 };
    fix_feed(&f, ts, v, 5);
    CHECK_INT(f.r.nlate, 3);
    for (size_t i = 0; i < f.r.nlate; i++)
        CHECK_INT(f.r.late[i].reason, GA_LATE_NONFINITE);
    CHECK(isnan(f.r.late[0].value) && isinf(f.r.late[1].value));
    int found;
    CHECK_NEAR(row(&f, "mean", 60 * SEC, T0, &found), (v[0] + v[3]) / 2, 1e-15);
    CHECK_INT(row(&f, "count", 60 * SEC, T0, &found), 2);
    CHECK(row(&f, "rate:sum", 60 * SEC, T0, &found) == v[3] - v[0]);
    struct ga_metric_stats ms;
    CHECK_INT(ga_engine_metric_stats(f.e, 1, &ms), 0);
    CHECK_INT(ms.late_nonfinite, 3);
    fix_close(&f);
}

static void test_back_window_late_points(void)
{
    struct fix f;
    const char *m[] = { "sum", "count" };
    int64_t g[2] = { 60 * SEC, 300 * SEC };          /* block 300 s */
    fix_open(&f, g, 2, m, 2, 1);                     /* back window: 1 block */
    int64_t base = 1700000100LL * SEC;               /* a 300 s block start */
    double v[2] = { rnd_value(), rnd_value() };
    int64_t ts[2] = { base + 10 * SEC, base + 700 * SEC };   /* newest in block base+600 */
    fix_feed(&f, ts, v, 2);
    /* first block = base + 600 - 300 = base + 300 */
    double w[3] = { rnd_value(), rnd_value(), rnd_value() };
    int64_t t2[3] = { base + 299 * SEC, base + 300 * SEC, base + 12 * SEC };
    fix_feed(&f, t2, w, 3);
    CHECK_INT(f.r.nlate, 2);
    CHECK(f.r.late[0].ts == t2[0] && f.r.late[1].ts == t2[2]);
    CHECK_INT(f.r.late[0].reason, GA_LATE_WINDOW);
    int found;
    CHECK(row(&f, "sum", 60 * SEC, base + 300 * SEC, &found) == w[1]);  /* exactly at the edge */
    CHECK(row(&f, "sum", 300 * SEC, base + 300 * SEC, &found) == w[1]);
    struct ga_metric_stats ms;
    CHECK_INT(ga_engine_metric_stats(f.e, 1, &ms), 0);
    CHECK_INT(ms.late_window, 2);
    /* the window kept only what carbonara keeps */
    struct ga_window win;
    CHECK_INT(ga_engine_window_get(f.e, 1, &win), 0);
    CHECK_INT(win.n, 2);
    CHECK(win.ts[0] == base + 300 * SEC && win.ts[1] == base + 700 * SEC);
    free(win.ts);
    free(win.value);
    fix_close(&f);
}

static void test_timespan_truncation(void)
{
    struct fix f;
    memset(&f, 0, sizeof f);
    ga_log_set_level(GA_LOG_ERROR);
    f.p.back_window = 10;
    CHECK_INT(ga_policy_add_def(&f.p, 60 * SEC, 0, 3, NULL), 0);   /* 3 points: 180 s */
    const char *m[] = { "mean", "std" };
    CHECK_INT(ga_policy_methods_from_list(&f.p, m, 2, NULL), 0);
    struct ga_backend *b;
    CHECK_INT(ga_cpu_backend_open(&b, 1), 0);
    CHECK_INT(ga_engine_open(&f.e, &b, 1), 0);
    CHECK_INT(ga_engine_metric_add(f.e, 1, &f.p), 0);
    double v[6];
    int64_t ts[6];
    for (int i = 0; i < 6; i++) {
        v[i] = rnd_value();
        ts[i] = T0 + i * 60 * SEC;                   /* one point per bucket */
    }
    ts[5] = ts[4] + 1;                               /* newest bucket has two */
    fix_feed(&f, ts, v, 6);
    int found;
    /* newest bucket T0+4m: keep buckets > T0+4m-3m, i.e. T0+2m..T0+4m */
    row(&f, "mean", 60 * SEC, T0 + 60 * SEC, &found);
    CHECK(!found);
    row(&f, "mean", 60 * SEC, T0 + 120 * SEC, &found);
    CHECK(found);
    CHECK_NEAR(row(&f, "mean", 60 * SEC, T0 + 240 * SEC, &found), (v[4] + v[5]) / 2, 1e-15);
    CHECK(row(&f, "std", 60 * SEC, T0 + 240 * SEC, &found) > 0);
    fix_close(&f);
}

static void test_unknown_metric(void)
{
    struct fix f;
    const char *m[] = { "count" };
    fix_open(&f, (int64_t[]){ 60 * SEC }, 1, m, 1, 0);
    uint32_t ids[3] = { 1, 77, 1 };
    int64_t ts[3] = { T0, T0 + 1, T0 + 2 };
    double v[3] = { rnd_value(), rnd_value(), rnd_value() };
    ga_result_reset(&f.r);
    CHECK_INT(ga_engine_feed(f.e, &(struct ga_points){ .n = 3, .metric = ids,
                                                       .ts = ts, .value = v }, &f.r), 0);
    CHECK_INT(f.r.nlate, 1);
    CHECK_INT(f.r.late[0].reason, GA_LATE_UNKNOWN_METRIC);
    CHECK_INT(f.r.late[0].metric, 77);
    int found;
    CHECK_INT(row(&f, "count", 60 * SEC, T0, &found), 2);
    CHECK_INT(ga_engine_metric_stats(f.e, 77, &(struct ga_metric_stats){ 0 }), GA_ENOENT);
    fix_close(&f);
}

void run_tests(void)
{
    RUN(test_std_needs_two_points);
    RUN(test_percentiles_at_exact_ranks);
    RUN(test_percentiles_between_ranks);
    RUN(test_rate_across_buckets_and_gaps);
    RUN(test_before_epoch_rejected);
    RUN(test_duplicates_last_received_wins);
    RUN(test_nonfinite_rejected);
    RUN(test_back_window_late_points);
    RUN(test_timespan_truncation);
    RUN(test_unknown_metric);
}
