/* agg.c — the wide and packed record codec and the late reasons' names
 * (agg.h). */
#include "proto/agg.h"

#include <string.h>

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

void ga_agg_bucket(const struct ga_agg *a, int64_t *granularity_ns, int64_t *ts)
{
    if (is_packed(a)) {
        uint32_t w[2];
        memcpy(w, &a->granularity_ns, sizeof w);
        *granularity_ns = (int64_t)w[0] * 1000000000;
        *ts = (int64_t)w[1] * 1000000000;
        return;
    }
    *granularity_ns = a->granularity_ns;
    *ts = a->ts;
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
