/* agg_series.c — numpy's nan-reductions, carbonara's resample and the
 * rolling window for the aggregates API (agg_series.h).
 *
 * Summation is left to right, as numpy does for the short rows of an
 * aggregates grid; numpy's pairwise summation over more than 8 values can
 * differ in the last bits (docs/API.md "Differences from Gnocchi"). */
#include "daemon/http/agg_series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/method.h"

int agg_red_parse(const char *name, int *rate)
{
    static const char *const names[] = { "mean", "median", "std", "min", "max", "sum", "var",
                                         "count" };
    *rate = !strncmp(name, "rate:", 5);
    if (*rate)
        name += 5;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i], name))
            return (int)i;
    return -1;
}

/* NaN after every number, as numpy sorts. */
static int cmp_nan_last(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

double agg_red_apply(int red, const double *x, size_t n, size_t stride)
{
    double s = 0, mn = NAN, mx = NAN;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double v = x[i * stride];
        if (isnan(v))
            continue;
        s += v;
        mn = k == 0 || v < mn ? v : mn;
        mx = k == 0 || v > mx ? v : mx;
        k++;
    }
    switch (red) {
    case AGG_COUNT: return (double)k;
    case AGG_SUM: return s;
    case AGG_MIN: return mn;
    case AGG_MAX: return mx;
    default: break;
    }
    if (!k)
        return NAN;
    double mean = s / (double)k;
    if (red == AGG_MEAN)
        return mean;
    if (red == AGG_STD || red == AGG_VAR) {
        double s2 = 0;
        for (size_t i = 0; i < n; i++) {
            double v = x[i * stride];
            if (!isnan(v))
                s2 += (v - mean) * (v - mean);
        }
        return red == AGG_VAR ? s2 / (double)k : sqrt(s2 / (double)k);   /* ddof=0 */
    }
    /* median: numpy's mean of the middle pair */
    double *tmp = malloc(k * sizeof *tmp);
    if (!tmp)
        return NAN;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i * stride]))
            tmp[j++] = x[i * stride];
    qsort(tmp, k, sizeof *tmp, cmp_nan_last);
    double med = k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2.0;
    free(tmp);
    return med;
}

static int64_t floor_div(int64_t t, int64_t g)
{
    int64_t q = t / g;
    return (t % g != 0 && t < 0) ? q - 1 : q;
}

/* carbonara's quantile() on the bucket's sorted values s (NaN last),
 * min_pos the bucket's offset in the grouped series. */
static double quantile(const double *s, size_t n, int64_t min_pos, int pct)
{
    double q = (double)pct / 100.0;
    double real_pos = (double)min_pos + (double)(int64_t)(n - 1) * q;
    double fl = floor(real_pos), ce = ceil(real_pos);
    int64_t f = (int64_t)fl, c = (int64_t)ce;
    if (f == c)
        return s[f - min_pos];
    double a = s[f - min_pos] * ((double)c - real_pos);
    double b = s[c - min_pos] * (real_pos - (double)f);
    return a + b;
}

/* One bucket x[0..n) of carbonara's GroupedTimeSeries; *keep 0 when the
 * method gives the bucket no value (std of one point). */
static double bucket(int base, const double *x, size_t n, int64_t min_pos, double *sortbuf,
                     int *keep)
{
    *keep = 1;
    double s = 0;
    switch (base) {
    case GA_M_MEAN:
    case GA_M_SUM:
    case GA_M_STD:
        for (size_t i = 0; i < n; i++)
            s += x[i];
        if (base == GA_M_SUM)
            return s;
        if (base == GA_M_MEAN)
            return s / (double)n;
        if (n < 2) {
            *keep = 0;
            return NAN;
        } else {
            double mean = s / (double)n, ss = 0;
            for (size_t i = 0; i < n; i++)
                ss += (x[i] - mean) * (x[i] - mean);
            return sqrt(ss / (double)(n - 1));
        }
    case GA_M_COUNT: return (double)n;
    case GA_M_FIRST: return x[0];
    case GA_M_LAST: return x[n - 1];
    default: break;
    }
    memcpy(sortbuf, x, n * sizeof *x);
    qsort(sortbuf, n, sizeof *sortbuf, cmp_nan_last);
    switch (base) {
    case GA_M_MIN: return sortbuf[0];          /* NaN only when all are */
    case GA_M_MAX: return sortbuf[n - 1];      /* NaN when any is */
    case GA_M_MEDIAN: {
        size_t f = (n - 1) - n / 2, c = f + ((n % 2) + 1) % 2;
        return (sortbuf[f] + sortbuf[c]) / 2.0;
    }
    default: return quantile(sortbuf, n, min_pos, GA_M_PCT_N(base));
    }
}

int agg_resample(const char *method, const int64_t *t, const double *v, size_t n,
                 int64_t sampling, int64_t *ot, double *ov, size_t *on)
{
    int m = ga_method_parse(method);
    if (m < 0 || sampling <= 0)
        return GA_EINVAL;
    *on = 0;
    const int64_t *tt = t;
    const double *vv = v;
    double *diff = NULL, *sortbuf = NULL;
    if (GA_M_IS_RATE(m)) {                 /* GroupedTimeSeries.derived() */
        if (n < 2)
            return 0;
        diff = malloc((n - 1) * sizeof *diff);
        if (!diff)
            return GA_ENOMEM;
        for (size_t i = 1; i < n; i++)
            diff[i - 1] = v[i] - v[i - 1];
        tt = t + 1;
        vv = diff;
        n--;
    }
    sortbuf = malloc((n ? n : 1) * sizeof *sortbuf);
    if (!sortbuf) {
        free(diff);
        return GA_ENOMEM;
    }
    size_t i = 0;
    while (i < n) {
        int64_t b = floor_div(tt[i], sampling);
        size_t j = i + 1;
        while (j < n && floor_div(tt[j], sampling) == b)
            j++;
        int keep;
        double r = bucket(GA_M_BASE(m), vv + i, j - i, (int64_t)i, sortbuf, &keep);
        if (keep) {
            ot[*on] = b * sampling;
            ov[*on] = r;
            (*on)++;
        }
        i = j;
    }
    free(sortbuf);
    free(diff);
    return 0;
}

size_t agg_rolling(int red, int rate, const double *v, size_t n, size_t stride, size_t window,
                   double *out, size_t out_stride)
{
    if (!window || window > n)
        return 0;
    size_t nw = n - window + 1;
    double prev = 0;
    size_t o = 0;
    for (size_t i = 0; i < nw; i++) {
        double r = agg_red_apply(red, v + i * stride, window, stride);
        if (!rate)
            out[o++ * out_stride] = r;
        else if (i)
            out[o++ * out_stride] = r - prev;
        prev = r;
    }
    return o;
}
