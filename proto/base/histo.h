/* histo.h — a latency histogram with fixed buckets, safe to observe from any
 * thread: each observation is two relaxed atomic increments and one atomic
 * add, no lock.  A reader takes a snapshot (histo_read) that may be a few
 * observations inconsistent (the count read before a bucket), which is
 * what Prometheus client libraries accept too.
 *
 * Bounds are upper bounds in nanoseconds, ascending, at most HISTO_MAX; an
 * observation of v lands in the first bucket whose bound is >= v (the
 * Prometheus "le" rule), or in the implicit +Inf bucket after the last. */
#ifndef GA_BASE_HISTO_H
#define GA_BASE_HISTO_H

#include <stddef.h>
#include <stdint.h>

#define HISTO_MAX 16

struct histo {
    const int64_t *bounds_ns;        /* nbounds ascending upper bounds; static */
    int nbounds;
    uint64_t counts[HISTO_MAX + 1];  /* per bucket, not cumulative; [nbounds]: +Inf */
    uint64_t sum_ns;
    uint64_t count;
};

/* A snapshot: cumulative counts as Prometheus exposes them. */
struct histo_snap {
    int nbounds;
    const int64_t *bounds_ns;
    uint64_t cum[HISTO_MAX + 1];     /* cum[i]: observations <= bounds_ns[i]; cum[nbounds]: all */
    uint64_t sum_ns;
    uint64_t count;
};

/* Record one observation of ns nanoseconds (negative counts as 0). */
void histo_observe_ns(struct histo *h, int64_t ns);

/* Copy h's counts into s. */
void histo_read(const struct histo *h, struct histo_snap *s);

/* The upper bound (ns) of the bucket that holds the q-quantile (0 < q <= 1)
 * of s: the smallest bound with cum >= q * count.  0 when s is empty; the
 * last bound when the quantile is past it (in +Inf). */
int64_t histo_quantile_bound_ns(const struct histo_snap *s, double q);

#endif
