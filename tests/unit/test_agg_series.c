/* test_agg_series.c — the aggregates API's series arithmetic
 * (daemon/http/agg_series.h) on small series whose answers are Gnocchi
 * 4.4's: carbonara's AggregatedTimeSerie.resample() and the numpy
 * nan-reductions of operations.AGG_MAP, NaN cells included (as a
 * fill=null grid has them).  tests/api/test_aggregates_ops.py compares
 * the whole API with Gnocchi's code on stored data. */
#include <math.h>
#include <stdint.h>

#include "daemon/http/agg_series.h"
#include "proto/ga_err.h"
#include "tests/unit/harness.h"

#define S 1000000000LL

static const int64_t T[] = { 0, 10 * S, 60 * S, 70 * S, 80 * S, 130 * S };
static const double V[] = { 1.0, 4.0, 2.0, NAN, 5.0, 7.0 };

/* resample of T/V to 60 s with method m: n buckets, their values (NAN for
 * NaN), their start times in seconds. */
static void expect(const char *m, size_t n, const double *want, const int64_t *want_t)
{
    int64_t ot[6];
    double ov[6];
    size_t on = 99;
    CHECK_INT(agg_resample(m, T, V, 6, 60 * S, ot, ov, &on), 0);
    CHECK_INT(on, n);
    for (size_t i = 0; i < n && i < on; i++) {
        CHECK_INT(ot[i], want_t[i] * S);
        if (isnan(want[i]))
            CHECK(isnan(ov[i]));
        else
            CHECK_NEAR(ov[i], want[i], 1e-15);
    }
}

static void test_resample_as_carbonara(void)
{
    static const int64_t t3[] = { 0, 60, 120 }, t2[] = { 0, 60 };
    expect("mean", 3, (const double[]){ 2.5, NAN, 7.0 }, t3);
    expect("sum", 3, (const double[]){ 5.0, NAN, 7.0 }, t3);
    expect("min", 3, (const double[]){ 1.0, 2.0, 7.0 }, t3);    /* NaN sorts last */
    expect("max", 3, (const double[]){ 4.0, NAN, 7.0 }, t3);
    expect("count", 3, (const double[]){ 2.0, 3.0, 1.0 }, t3);
    expect("median", 3, (const double[]){ 2.5, 5.0, 7.0 }, t3);
    expect("first", 3, (const double[]){ 1.0, 2.0, 7.0 }, t3);
    expect("last", 3, (const double[]){ 4.0, 5.0, 7.0 }, t3);
    expect("std", 2, (const double[]){ 2.1213203435596424, NAN }, t2);   /* one point: none */
    expect("rate:sum", 3, (const double[]){ 3.0, NAN, 2.0 }, t3);
}

static void test_resample_refuses(void)
{
    int64_t ot[6];
    double ov[6];
    size_t on;
    CHECK_INT(agg_resample("var", T, V, 6, 60 * S, ot, ov, &on), GA_EINVAL);   /* not carbonara's */
    CHECK_INT(agg_resample("mean", T, V, 6, 0, ot, ov, &on), GA_EINVAL);
}

static void test_nan_reductions(void)
{
    const double x[] = { 3.0, NAN, 1.0, 2.0, 8.0 };
    int rate;
    CHECK_INT(agg_red_parse("median", &rate), AGG_MEDIAN);
    CHECK_INT(rate, 0);
    CHECK_INT(agg_red_parse("rate:count", &rate), AGG_COUNT);
    CHECK_INT(rate, 1);
    CHECK_INT(agg_red_parse("first", &rate), -1);        /* not in AGG_MAP */
    CHECK_NEAR(agg_red_apply(AGG_MEDIAN, x, 5, 1), 2.5, 0);
    CHECK_NEAR(agg_red_apply(AGG_STD, x, 3, 1), 1.0, 0);  /* ddof 0 over 3 and 1 */
    CHECK_NEAR(agg_red_apply(AGG_VAR, x, 3, 1), 1.0, 0);
    CHECK_NEAR(agg_red_apply(AGG_COUNT, x, 5, 1), 4.0, 0);
    CHECK_NEAR(agg_red_apply(AGG_MEAN, x, 5, 1), 3.5, 0);
    CHECK_NEAR(agg_red_apply(AGG_MIN, x + 1, 4, 1), 1.0, 0);
    const double nan1[] = { NAN };
    CHECK_NEAR(agg_red_apply(AGG_SUM, nan1, 1, 1), 0.0, 0);
    CHECK(isnan(agg_red_apply(AGG_MIN, nan1, 1, 1)));
    CHECK(isnan(agg_red_apply(AGG_MEAN, nan1, 1, 1)));
    CHECK_NEAR(agg_red_apply(AGG_COUNT, nan1, 1, 1), 0.0, 0);
}

static void test_rolling(void)
{
    /* two interleaved series (stride 2): a = 1 2 4 7, b = 0 0 1 NaN */
    const double v[] = { 1, 0, 2, 0, 4, 1, 7, NAN };
    double out[8];
    CHECK_INT(agg_rolling(AGG_SUM, 0, v, 4, 2, 2, out, 1), 3);
    CHECK_NEAR(out[0], 3.0, 0);
    CHECK_NEAR(out[1], 6.0, 0);
    CHECK_NEAR(out[2], 11.0, 0);
    CHECK_INT(agg_rolling(AGG_MAX, 1, v + 1, 4, 2, 2, out, 1), 2);   /* rate:max of b */
    CHECK_NEAR(out[0], 1.0, 0);                     /* max(0,1) - max(0,0) */
    CHECK_NEAR(out[1], 0.0, 0);                     /* max(1,NaN) - max(0,1) */
    CHECK_INT(agg_rolling(AGG_MEAN, 0, v, 4, 2, 5, out, 1), 0);      /* window over the length */
}

void run_tests(void)
{
    RUN(test_resample_as_carbonara);
    RUN(test_resample_refuses);
    RUN(test_nan_reductions);
    RUN(test_rolling);
}
