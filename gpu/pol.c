/* pol.c — agg_pol_init (pol.h). */
#include "gpu/pol.h"

#include <string.h>

#include "proto/ga_err.h"

int agg_pol_init(struct agg_pol *pol, const struct ga_policy *p)
{
    if (p->ndefs < 1 || p->ndefs > GA_POLICY_MAX_DEFS || p->nmethods < 1 ||
        p->nmethods > GA_POLICY_MAX_METHODS || p->back_window < 0 ||
        ga_policy_check_range(p, NULL) < 0)
        return GA_EINVAL;
    memset(pol, 0, sizeof *pol);
    pol->p = *p;
    for (int d = 0; d < p->ndefs; d++) {
        if (p->defs[d].granularity_ns <= 0 || p->defs[d].timespan_ns < 0 ||
            (d && p->defs[d].granularity_ns <= p->defs[d - 1].granularity_ns))
            return GA_EINVAL;
    }
    for (int i = 0; i < p->nmethods; i++) {
        ga_method_t m = p->methods[i];
        int b = GA_M_BASE(m);
        if ((m & ~(GA_M_RATE | 0xff)) || !((b >= GA_M_MEAN && b <= GA_M_MEDIAN) || GA_M_IS_PCT(m)))
            return GA_EINVAL;
        if (GA_M_IS_RATE(m))
            pol->rate[pol->nrate++] = m;
        else
            pol->plain[pol->nplain++] = m;
    }
    pol->block = p->defs[p->ndefs - 1].granularity_ns;
    pol->bw = p->back_window + (pol->nrate ? 1 : 0);
    while (pol->nwide < pol->nplain && pol->plain[pol->nwide] <= GA_M_STD &&
           (!pol->nwide || pol->plain[pol->nwide] > pol->plain[pol->nwide - 1]))
        pol->nwide++;
    pol->plain_need = ga_methods_need(pol->plain, pol->nplain);
    pol->rate_need = ga_methods_need(pol->rate, pol->nrate);
    return 0;
}

int64_t agg_pol_first_block(const struct agg_pol *pol, int64_t newest)
{
    int64_t span;
    if (__builtin_mul_overflow(pol->block, pol->bw, &span))
        return INT64_MIN;
    return newest - newest % pol->block - span;     /* newest >= 0: its block */
}
