/* pol.h — a policy compiled for the backends: its methods split into plain
 * and rate: lists, what each list needs (the methods table,
 * proto/method.h), the raw window's reach and the wide-record prefix.  The
 * CPU backend (gpu/agg_cpu*.c) and the CUDA backend (gpu/cuda/) both
 * aggregate from it; it is laid out so that it can be copied to a GPU as
 * it is. */
#ifndef GA_POL_H
#define GA_POL_H

#include <stdint.h>

#include "proto/method.h"
#include "proto/policy.h"

/* A policy as a backend uses it (interned: metrics share these). */
struct agg_pol {
    struct ga_policy p;
    int64_t block;                /* max granularity, ns */
    int64_t bw;                   /* back window in blocks, +1 with rate: */
    int nplain, nrate;
    ga_method_t plain[GA_POLICY_MAX_METHODS];   /* non-rate methods */
    ga_method_t rate[GA_POLICY_MAX_METHODS];    /* rate: methods, bit kept */
    unsigned plain_need, rate_need;             /* GA_NEED_* (proto/method.h) */
    int nwide;                    /* plain[0..nwide): basic (GA_M_MEAN..GA_M_STD),
                                     ascending: what a wide record carries (proto/agg.h) */
};

/* Fill the derived fields of pol from pol->p.  0 or GA_EINVAL. */
int agg_pol_init(struct agg_pol *pol, const struct ga_policy *p);

/* The first timestamp a window whose newest point is at newest still
 * takes: the start of newest's block less back_window blocks (one more
 * with rate:).  An earlier point is late (GA_LATE_WINDOW).  INT64_MIN when
 * the span overflows. */
int64_t agg_pol_first_block(const struct agg_pol *pol, int64_t newest);

#endif
