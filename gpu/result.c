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

/* A record's mask (0 when a is a row or a malformed header) and slots. */
struct rec {
    unsigned mask;
    size_t span;
};

static int is_packed(const struct ga_agg *a) { return (a->method & 0xff00) == GA_M_PACKED; }

/* Values a packed record of mask m stores (engine.h): all but count, and
 * mean when sum is there. */
static unsigned packed_kept(unsigned m)
{
    unsigned drop = 1u << (GA_M_COUNT - GA_M_MEAN);
    if (m & (1u << (GA_M_SUM - GA_M_MEAN)))
        drop |= 1u << (GA_M_MEAN - GA_M_MEAN);
    return m & ~drop;
}

static struct rec rec_of(const struct ga_agg *a)
{
    if (is_packed(a)) {
        unsigned m = a->method & 0xffu;
        if (!m || !a->aux)
            return (struct rec){ 0, 1 };
        return (struct rec){ m, __builtin_popcount(packed_kept(m)) > 2 ? 2 : 1 };
    }
    if (a->method != GA_M_WIDE)
        return (struct rec){ 0, 1 };
    double v = a->value;
    if (!(v >= 1.0 && v <= 255.0) || v != (double)(unsigned)v)
        return (struct rec){ 0, 1 };
    unsigned m = (unsigned)v;
    return (struct rec){ m, 1 + ((size_t)__builtin_popcount(m) + 3) / 4 };
}

size_t ga_agg_span(const struct ga_agg *a)
{
    return rec_of(a).span;
}

static int is_record(const struct ga_agg *a) { return is_packed(a) || a->method == GA_M_WIDE; }

static size_t unpack_packed(const struct ga_agg *a, unsigned m, size_t span, struct ga_agg *out)
{
    uint32_t w[2];
    double v[6] = { 0 }, sum = 0.0;
    memcpy(w, &a->granularity_ns, sizeof w);
    memcpy(v, (const char *)a + 16, (32 * span - 16));
    int64_t g = (int64_t)w[0] * 1000000000, ts = (int64_t)w[1] * 1000000000;
    double n = (double)a->aux;
    unsigned kept = packed_kept(m);
    size_t k = 0, j = 0;
    for (int b = 0; b < GA_WIDE_MAX; b++) {
        if (!(m & (1u << b)))
            continue;
        double x = kept & (1u << b) ? v[j++] : GA_M_MEAN + b == GA_M_COUNT ? n : 0.0;
        if (GA_M_MEAN + b == GA_M_SUM)
            sum = x;
        out[k++] = (struct ga_agg){ .metric = a->metric, .method = (ga_method_t)(GA_M_MEAN + b),
                                    .granularity_ns = g, .ts = ts, .value = x };
    }
    if ((m & 1u) && !(kept & 1u))     /* mean, from sum (which follows it) */
        out[0].value = sum / n;
    return k;
}

size_t ga_agg_unpack(const struct ga_agg *a, size_t avail, struct ga_agg out[GA_WIDE_MAX])
{
    if (!avail)
        return 0;
    if (!is_record(a)) {
        out[0] = *a;
        return 1;
    }
    struct rec r = rec_of(a);
    if (!r.mask || r.span > avail)
        return 0;
    if (is_packed(a))
        return unpack_packed(a, r.mask, r.span, out);
    double v[4 * 2];
    memcpy(v, a + 1, (r.span - 1) * sizeof *a);
    size_t k = 0;
    for (int b = 0; b < GA_WIDE_MAX; b++)
        if (r.mask & (1u << b)) {
            out[k] = (struct ga_agg){ .metric = a->metric, .method = (ga_method_t)(GA_M_MEAN + b),
                                      .granularity_ns = a->granularity_ns, .ts = a->ts, .value = v[k] };
            k++;
        }
    return k;
}

/* A malformed header (a record's method, no valid mask or count) is one
 * slot of no row; a record cut short by the end of the slots ends the walk. */
size_t ga_aggs_count(const struct ga_agg *aggs, size_t n)
{
    size_t rows = 0;
    for (size_t i = 0; i < n;) {
        struct rec r = rec_of(&aggs[i]);
        if (r.span > n - i)
            break;
        rows += r.mask ? (size_t)__builtin_popcount(r.mask) : !is_record(&aggs[i]);
        i += r.span;
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
    case GA_LATE_OUT_OF_RANGE: return "out_of_range";
    default: return "?";
    }
}
