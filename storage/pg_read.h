/* pg_read.h — the series reads of the HTTP read API (docs/API.md): the
 * buckets of many series of one granularity in one prepared statement,
 * the rows the gpuagg_measures view (what gpuaggctl query reads) gives for
 * each, a row a series of binary arrays, decoded into one allocation
 * (docs/STORAGE.md "The series reads").
 *
 * Runs on the API's query pool (pg_query.h); calls block.  Thread-safe on
 * distinct outputs. */
#ifndef GA_PG_READ_H
#define GA_PG_READ_H

#include <stddef.h>
#include <stdint.h>

struct pg_query;

/* The points of nseries series, each ascending by time: series i is
 * ts[off[i] .. off[i + 1]) and val[the same].  One allocation, freed by
 * pg_read_series_free. */
struct pg_read_series {
    size_t nseries;
    size_t n;                             /* points in all */
    size_t *off;                          /* nseries + 1 offsets */
    int64_t *ts;                          /* bucket starts, ns since the epoch */
    double *val;
};

/* The buckets of (metrics[i], methods[i], granularity_ns) with start_ns <=
 * ts < stop_ns for each i < nseries (a series may be asked more than once;
 * an unknown metric, method or granularity is an empty series).  At most
 * max_points points in all: more is GA_ERANGE (a series past its share of
 * max_points is read again a row a point, so that the result never holds
 * much more).  *out filled (free with
 * pg_read_series_free, also after an error).  Returns 0, GA_ERANGE, GA_ENOMEM,
 * GA_EIO (cannot connect) or GA_EDB, with err[errlen]. */
int pg_read_series_read(struct pg_query *q, size_t nseries, const char *const *metrics,
                    const char *const *methods, int64_t granularity_ns, int64_t start_ns,
                    int64_t stop_ns, size_t max_points, struct pg_read_series *out, char *err,
                    size_t errlen);
void pg_read_series_free(struct pg_read_series *s);

#endif
