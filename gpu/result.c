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

/* ---- wide records ---------------------------------------------------------- */

/* A wide header's mask, or 0 when a is a row or malformed. */
static unsigned wide_mask(const struct ga_agg *a)
{
    if (a->method != GA_M_WIDE)
        return 0;
    double v = a->value;
    if (!(v >= 1.0 && v <= 255.0) || v != (double)(unsigned)v)
        return 0;
    return (unsigned)v;
}

/* Slots of the row or record whose mask is m (0: a row). */
static size_t span_of(unsigned m)
{
    return m ? 1 + ((size_t)__builtin_popcount(m) + 3) / 4 : 1;
}

size_t ga_agg_span(const struct ga_agg *a)
{
    return span_of(wide_mask(a));
}

size_t ga_agg_unpack(const struct ga_agg *a, size_t avail, struct ga_agg out[GA_WIDE_MAX])
{
    if (!avail)
        return 0;
    if (a->method != GA_M_WIDE) {
        out[0] = *a;
        return 1;
    }
    unsigned m = wide_mask(a);
    size_t span = ga_agg_span(a);
    if (!m || span > avail)
        return 0;
    double v[4 * 2];
    memcpy(v, a + 1, (span - 1) * sizeof *a);
    size_t k = 0;
    for (int b = 0; b < GA_WIDE_MAX; b++)
        if (m & (1u << b)) {
            out[k] = (struct ga_agg){ .metric = a->metric, .method = (ga_method_t)(GA_M_MEAN + b),
                                      .granularity_ns = a->granularity_ns, .ts = a->ts, .value = v[k] };
            k++;
        }
    return k;
}

/* A malformed header (method GA_M_WIDE, no valid mask) is one slot of no
 * row; a record cut short by the end of the slots ends the walk. */
size_t ga_aggs_count(const struct ga_agg *aggs, size_t n)
{
    size_t rows = 0;
    for (size_t i = 0; i < n;) {
        unsigned m = wide_mask(&aggs[i]);
        size_t span = span_of(m);
        if (span > n - i)
            break;
        rows += m ? (size_t)__builtin_popcount(m) : aggs[i].method != GA_M_WIDE;
        i += span;
    }
    return rows;
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
