/* result.c — ga_result helpers (see engine.h). */
#include <stdlib.h>

#include "gpu/engine.h"
#include "proto/ga_err.h"

void ga_result_reset(struct ga_result *r)
{
    r->naggs = 0;
    r->nlate = 0;
}

void ga_result_free(struct ga_result *r)
{
    free(r->aggs);
    free(r->late);
    *r = (struct ga_result){ 0 };
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c += c / 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return GA_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

int ga_result_reserve(struct ga_result *r, size_t more_aggs, size_t more_late)
{
    if (grow((void **)&r->aggs, &r->cap_aggs, r->naggs + more_aggs, sizeof *r->aggs) ||
        grow((void **)&r->late, &r->cap_late, r->nlate + more_late, sizeof *r->late))
        return GA_ENOMEM;
    return 0;
}

int ga_result_push_agg(struct ga_result *r, const struct ga_agg *a)
{
    if (grow((void **)&r->aggs, &r->cap_aggs, r->naggs + 1, sizeof *r->aggs))
        return GA_ENOMEM;
    r->aggs[r->naggs++] = *a;
    return 0;
}

int ga_result_push_late(struct ga_result *r, const struct ga_late *l)
{
    if (grow((void **)&r->late, &r->cap_late, r->nlate + 1, sizeof *r->late))
        return GA_ENOMEM;
    r->late[r->nlate++] = *l;
    return 0;
}

const char *ga_late_reason_name(uint32_t reason)
{
    switch (reason) {
    case GA_LATE_WINDOW: return "window";
    case GA_LATE_BEFORE_EPOCH: return "before_epoch";
    case GA_LATE_NONFINITE: return "nonfinite";
    case GA_LATE_UNKNOWN_METRIC: return "unknown_metric";
    default: return "?";
    }
}
