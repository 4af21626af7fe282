/* agg_series.h — the per-series arithmetic of the aggregates API
 * (daemon/http/api_aggregates.c, the measures' resample=): numpy's
 * nan-reductions of Gnocchi's AGG_MAP (gnocchi/rest/aggregates/
 * operations.py), carbonara's resample (GroupedTimeSeries) and the rolling
 * window.  docs/API.md "Aggregates" says what each computes.  Pure
 * functions over caller-owned arrays; safe from any thread. */
#ifndef GA_HTTP_AGG_SERIES_H
#define GA_HTTP_AGG_SERIES_H

#include <stddef.h>
#include <stdint.h>

/* The reductions of Gnocchi's AGG_MAP, numpy's NaN-ignoring functions. */
enum agg_red { AGG_MEAN, AGG_MEDIAN, AGG_STD, AGG_MIN, AGG_MAX, AGG_SUM, AGG_VAR, AGG_COUNT };

/* Parse an AGG_MAP name ("mean", "rate:max", ...).  Returns the reduction
 * (enum agg_red) with *rate set, or -1 for a name AGG_MAP does not hold. */
int agg_red_parse(const char *name, int *rate);

/* numpy.nanM over x[0], x[stride], ... x[(n-1)*stride]: NaN cells are
 * ignored; with none left, count is 0, sum 0.0 and the rest NaN. */
double agg_red_apply(int red, const double *x, size_t n, size_t stride);

/* carbonara's AggregatedTimeSerie.resample(sampling) of one series (t
 * ascending, unique): points grouped by floor(t / sampling) (exact int64),
 * method one of carbonara's ("mean", "sum", "min", "max", "median", "std",
 * "count", "first", "last", "Npct", each also "rate:"), NaN values treated
 * as numpy treats them there.  ot and ov hold at least n entries (caller's);
 * *on is set to the buckets written.  Returns 0, or GA_EINVAL for a method
 * carbonara does not have (GA_EINVAL leaves ot/ov untouched). */
int agg_resample(const char *method, const int64_t *t, const double *v, size_t n,
                 int64_t sampling, int64_t *ot, double *ov, size_t *on);

/* Gnocchi's rolling: out[i] = red over v[i .. i+window) (stride apart),
 * for i in 0 .. n-window; with rate, the differences of consecutive such
 * values (one fewer).  window in 1..n.  Returns the values written. */
size_t agg_rolling(int red, int rate, const double *v, size_t n, size_t stride, size_t window,
                   double *out, size_t out_stride);

#endif
