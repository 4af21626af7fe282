/* agg_cpu_kernels.c — the reference kernels: every method over one bucket,
 * and the sorts the CPU backend needs.
 *
 * Arithmetic follows carbonara's numpy code operation for operation so that
 * results are bit-identical, not merely close:
 *   sum    numpy.bincount(weights=) adds left to right from 0.0
 *   mean   sum / count
 *   std    sqrt(sum((x - mean)^2) / (n - 1)), sums left to right, n >= 2
 *   median (s[f] + s[c]) / 2.0 on the sorted bucket
 *   Npct   carbonara's quantile(): rank min_pos + (n-1)*(N/100) in float64,
 *          where min_pos is the bucket's offset in the grouped series
 * The build uses -std=c11, so GCC does not contract a*b+c*d into an FMA. */
#include "gpu/agg_cpu.h"

#include <math.h>
#include <string.h>

static size_t put(struct ga_agg *rows, size_t nr, const struct agg_emit *e, ga_method_t m,
                  double v)
{
    rows[nr] = (struct ga_agg){ .metric = e->metric, .method = m, .granularity_ns = e->g,
                                .ts = e->b, .value = v };
    return nr + 1;
}

static double quantile(const double *s, size_t n, int64_t min_pos, int pct)
{
    double q = (double)pct / 100.0;
    double real_pos = (double)min_pos + (double)(int64_t)(n - 1) * q;
    double fl = floor(real_pos), ce = ceil(real_pos);
    int64_t f = (int64_t)fl, c = (int64_t)ce;
    if (f == c)
        return s[f - min_pos];
    double wf = (double)c - real_pos, wc = real_pos - (double)f;
    double a = s[f - min_pos] * wf;
    double b = s[c - min_pos] * wc;
    return a + b;
}

size_t agg_kern_bucket(const double *x, size_t n, int64_t min_pos, const ga_method_t *ms,
                       int nm, unsigned need, double *sortbuf, const struct agg_emit *e,
                       struct ga_agg *rows)
{
    double sum = 0.0, mn = x[0], mx = x[0];
    if (need & GA_NEED_SUM)
        for (size_t i = 0; i < n; i++)
            sum += x[i];
    if (need & GA_NEED_MINMAX) {
        for (size_t i = 1; i < n; i++) {
            mn = x[i] < mn ? x[i] : mn;
            mx = x[i] > mx ? x[i] : mx;
        }
    }
    const double *s = NULL;
    if (need & GA_NEED_SORT) {
        memcpy(sortbuf, x, n * sizeof *x);
        agg_sort_doubles(sortbuf, n);
        s = sortbuf;
    }
    size_t nr = 0;
    for (int k = 0; k < nm; k++) {
        ga_method_t m = ms[k];
        int base = GA_M_BASE(m);
        if (base == GA_M_STD) {
            if (n < 2 || !e->allow_std)
                continue;
            double mean = sum / (double)n, ss = 0.0;
            for (size_t i = 0; i < n; i++) {
                double d = x[i] - mean;
                ss += d * d;
            }
            nr = put(rows, nr, e, m, sqrt(ss / (double)(n - 1)));
            continue;
        }
        if (!e->allow_other)
            continue;
        double v;
        switch (base) {
        case GA_M_MEAN: v = sum / (double)n; break;
        case GA_M_SUM: v = sum; break;
        case GA_M_MIN: v = mn; break;
        case GA_M_MAX: v = mx; break;
        case GA_M_COUNT: v = (double)n; break;
        case GA_M_FIRST: v = x[0]; break;
        case GA_M_LAST: v = x[n - 1]; break;
        case GA_M_MEDIAN: {
            size_t f = (n - 1) - n / 2, c = f + ((n % 2) + 1) % 2;
            v = (s[f] + s[c]) / 2.0;
            break;
        }
        default:
            v = quantile(s, n, min_pos, GA_M_PCT_N(m));
            break;
        }
        nr = put(rows, nr, e, m, v);
    }
    return nr;
}

/* ---- sorts --------------------------------------------------------------- */

static void insertion_pairs(int64_t *ts, double *val, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int64_t t = ts[i];
        double v = val[i];
        size_t j = i;
        while (j > 0 && ts[j - 1] > t) {
            ts[j] = ts[j - 1];
            val[j] = val[j - 1];
            j--;
        }
        ts[j] = t;
        val[j] = v;
    }
}

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

/* LSD radix sort on ts - min (stable), 11 bits a pass, passes where every
 * key has the same digit skipped. */
static void radix_pairs(int64_t *ts, double *val, size_t n, int64_t *tts, double *tval)
{
    int64_t lo = ts[0], hi = ts[0];
    for (size_t i = 1; i < n; i++) {
        lo = ts[i] < lo ? ts[i] : lo;
        hi = ts[i] > hi ? ts[i] : hi;
    }
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    int64_t *src_t = ts, *dst_t = tts;
    double *src_v = val, *dst_v = tval;
    static _Thread_local uint32_t hist[RADIX_SIZE];
    for (int shift = 0; shift < 64 && (range >> shift) != 0; shift += RADIX_BITS) {
        memset(hist, 0, sizeof hist);
        for (size_t i = 0; i < n; i++)
            hist[(((uint64_t)src_t[i] - (uint64_t)lo) >> shift) & (RADIX_SIZE - 1)]++;
        uint32_t first = (((uint64_t)src_t[0] - (uint64_t)lo) >> shift) & (RADIX_SIZE - 1);
        if (hist[first] == n)
            continue;
        uint32_t sum = 0;
        for (uint32_t d = 0; d < RADIX_SIZE; d++) {
            uint32_t c = hist[d];
            hist[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t d = (((uint64_t)src_t[i] - (uint64_t)lo) >> shift) & (RADIX_SIZE - 1);
            uint32_t at = hist[d]++;
            dst_t[at] = src_t[i];
            dst_v[at] = src_v[i];
        }
        int64_t *tt = src_t; src_t = dst_t; dst_t = tt;
        double *tv = src_v; src_v = dst_v; dst_v = tv;
    }
    if (src_t != ts) {
        memcpy(ts, src_t, n * sizeof *ts);
        memcpy(val, src_v, n * sizeof *val);
    }
}

void agg_sort_pairs(int64_t *ts, double *val, size_t n, int64_t *tts, double *tval)
{
    size_t i = 1;
    while (i < n && ts[i - 1] <= ts[i])
        i++;
    if (i >= n)
        return;                                /* already sorted: the usual case */
    if (n <= 48)
        insertion_pairs(ts, val, n);
    else
        radix_pairs(ts, val, n, tts, tval);
}

static void insertion_doubles(double *x, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        double v = x[i];
        size_t j = i;
        while (j > 0 && x[j - 1] > v) {
            x[j] = x[j - 1];
            j--;
        }
        x[j] = v;
    }
}

static void swapd(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

void agg_sort_doubles(double *x, size_t n)
{
    /* Quicksort, median of three, recursing on the smaller side. */
    while (n > 24) {
        size_t mid = n / 2;
        if (x[mid] < x[0])
            swapd(&x[mid], &x[0]);
        if (x[n - 1] < x[0])
            swapd(&x[n - 1], &x[0]);
        if (x[n - 1] < x[mid])
            swapd(&x[n - 1], &x[mid]);
        double pivot = x[mid];
        size_t i = 0, j = n - 1;
        for (;;) {
            while (x[i] < pivot)
                i++;
            while (pivot < x[j])
                j--;
            if (i >= j)
                break;
            swapd(&x[i], &x[j]);
            i++;
            j--;
        }
        size_t left = j + 1;                   /* [0, left) <= pivot <= [left, n) */
        if (left < n - left) {
            agg_sort_doubles(x, left);
            x += left;
            n -= left;
        } else {
            agg_sort_doubles(x + left, n - left);
            n = left;
        }
    }
    insertion_doubles(x, n);
}
