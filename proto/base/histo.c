/* histo.c — fixed-bucket latency histograms (see histo.h). */
#include "proto/base/histo.h"

void histo_observe_ns(struct histo *h, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    int i = 0;
    while (i < h->nbounds && ns > h->bounds_ns[i])
        i++;
    __atomic_add_fetch(&h->counts[i], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&h->sum_ns, (uint64_t)ns, __ATOMIC_RELAXED);
    __atomic_add_fetch(&h->count, 1, __ATOMIC_RELAXED);
}

void histo_read(const struct histo *h, struct histo_snap *s)
{
    s->nbounds = h->nbounds;
    s->bounds_ns = h->bounds_ns;
    uint64_t c = 0;
    for (int i = 0; i <= h->nbounds; i++) {
        c += __atomic_load_n(&h->counts[i], __ATOMIC_RELAXED);
        s->cum[i] = c;
    }
    s->sum_ns = __atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED);
    s->count = c;                    /* the buckets' total, so that +Inf == _count */
}

int64_t histo_quantile_bound_ns(const struct histo_snap *s, double q)
{
    if (s->count == 0 || s->nbounds == 0)
        return 0;
    double want = q * (double)s->count;
    for (int i = 0; i < s->nbounds; i++)
        if ((double)s->cum[i] >= want)
            return s->bounds_ns[i];
    return s->bounds_ns[s->nbounds - 1];
}
