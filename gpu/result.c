/* result.c — ga_result helpers (see engine.h). */
#include <stdlib.h>

#include <string.h>

#include "gpu/cuda.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"

void ga_result_reset(struct ga_result *r)
{
    r->naggs = r->nrows = 0;
    r->nlate = 0;
}

static void free_aggs(struct ga_result *r)
{
    if (r->aggs_pinned)
        ga_cuda_host_free(r->aggs);
    else
        free(r->aggs);
}

void ga_result_free(struct ga_result *r)
{
    int want = r->want_pinned, wide = r->want_wide;
    free_aggs(r);
    free(r->late);
    *r = (struct ga_result){ .want_pinned = want, .want_wide = wide };
}

static size_t grown(size_t cap, size_t need)
{
    size_t c = cap ? cap : 256;
    while (c < need)
        c += c / 2;
    return c;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = grown(*cap, need);
    void *q = realloc(*p, c * elem);
    if (!q)
        return GA_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

/* Page-locked memory cannot be realloc'd: a new block, the rows copied. */
static int grow_aggs(struct ga_result *r, size_t need)
{
    if (need <= r->cap_aggs)
        return 0;
    if (!r->want_pinned && !r->aggs_pinned)
        return grow((void **)&r->aggs, &r->cap_aggs, need, sizeof *r->aggs);
    size_t c = grown(r->cap_aggs, need);
    void *q = NULL;
    int pinned = r->want_pinned && ga_cuda_host_alloc(&q, c * sizeof *r->aggs) == 0;
    if (!pinned && !(q = malloc(c * sizeof *r->aggs)))
        return GA_ENOMEM;
    if (r->naggs)
        memcpy(q, r->aggs, r->naggs * sizeof *r->aggs);
    free_aggs(r);
    r->aggs = q;
    r->cap_aggs = c;
    r->aggs_pinned = pinned;
    return 0;
}

int ga_result_reserve(struct ga_result *r, size_t more_aggs, size_t more_late)
{
    if (grow_aggs(r, r->naggs + more_aggs) ||
        grow((void **)&r->late, &r->cap_late, r->nlate + more_late, sizeof *r->late))
        return GA_ENOMEM;
    return 0;
}

int ga_result_push_agg(struct ga_result *r, const struct ga_agg *a)
{
    if (grow_aggs(r, r->naggs + 1))
        return GA_ENOMEM;
    r->aggs[r->naggs++] = *a;     /* a row: wide records come from backends */
    r->nrows++;
    return 0;
}

int ga_result_push_late(struct ga_result *r, const struct ga_late *l)
{
    if (grow((void **)&r->late, &r->cap_late, r->nlate + 1, sizeof *r->late))
        return GA_ENOMEM;
    r->late[r->nlate++] = *l;
    return 0;
}

int ga_result_narrow(struct ga_result *r, size_t from)
{
    if (from >= r->naggs)
        return 0;
    size_t n = r->naggs - from, rows = ga_aggs_count(r->aggs + from, n);
    struct ga_agg *tmp = malloc((rows ? rows : 1) * sizeof *tmp);
    if (!tmp)
        return GA_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t span = ga_agg_span(&r->aggs[from + i]);
        if (span > n - i)
            break;
        k += ga_agg_unpack(&r->aggs[from + i], n - i, tmp + k);
        i += span;
    }
    int rc = grow_aggs(r, from + k);
    if (!rc) {
        memcpy(r->aggs + from, tmp, k * sizeof *tmp);
        r->naggs = from + k;
        r->nrows = ga_aggs_count(r->aggs, r->naggs);
    }
    free(tmp);
    return rc;
}
