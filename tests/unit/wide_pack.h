/* wide_pack.h — tests: rows packed into wide records (gpu/engine.h) the way
 * a backend writes them, written apart from gpu/result.c so that the two
 * check each other.  Consecutive rows of one (metric, granularity, ts)
 * whose methods are basic (GA_M_MEAN..GA_M_STD) and ascending become one
 * record: packed where the header fits (a count row gives n; mean is left
 * out only where it is sum / n to the bit), else wide.  Any other row is
 * copied.  out has room for 2 * n slots (a record of one value takes two).
 * Returns the slots written. */
#ifndef GA_TEST_WIDE_PACK_H
#define GA_TEST_WIDE_PACK_H

#include <string.h>

#include "gpu/engine.h"
#include "proto/policy.h"

static inline int wide_pack_basic(ga_method_t m) { return m >= GA_M_MEAN && m <= GA_M_STD; }

/* Rows r[0..k) of one bucket as a packed record at out; its slots, or 0
 * where the header does not fit them. */
static inline size_t wide_pack_packed(const struct ga_agg *r, size_t k, unsigned mask, struct ga_agg *out)
{
    const int64_t S = 1000000000;
    double n = 0, sum = 0, mean = 0;
    for (size_t j = 0; j < k; j++) {
        if (r[j].method == GA_M_COUNT)
            n = r[j].value;
        if (r[j].method == GA_M_SUM)
            sum = r[j].value;
        if (r[j].method == GA_M_MEAN)
            mean = r[j].value;
    }
    int64_t g = r[0].granularity_ns, ts = r[0].ts;
    if (!(n >= 1 && n <= 65535 && n == (double)(int)n) || g % S || g / S > UINT32_MAX || ts < 0 ||
        ts % S || ts / S > UINT32_MAX)
        return 0;
    int drop_mean = (mask & 1u) && (mask & 2u);
    double q = sum / n;
    if (drop_mean && memcmp(&q, &mean, sizeof q) != 0)
        return 0;
    double v[6] = { 0 };
    size_t nv = 0;
    for (size_t j = 0; j < k; j++)
        if (r[j].method != GA_M_COUNT && !(r[j].method == GA_M_MEAN && drop_mean))
            v[nv++] = r[j].value;
    size_t slots = nv > 2 ? 2 : 1;
    uint32_t w[2] = { (uint32_t)(g / S), (uint32_t)(ts / S) };
    memset(out, 0, slots * sizeof *out);
    out[0].metric = r[0].metric;
    out[0].method = (ga_method_t)(GA_M_PACKED | mask);
    out[0].aux = (uint16_t)n;
    memcpy(&out[0].granularity_ns, w, sizeof w);
    memcpy((char *)out + 16, v, nv * sizeof *v);
    return slots;
}

static inline size_t wide_pack(const struct ga_agg *r, size_t n, struct ga_agg *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        unsigned mask = 0;
        double v[8] = { 0 };
        while (j < n && wide_pack_basic(r[j].method) && (j == i || r[j].method > r[j - 1].method) &&
               r[j].metric == r[i].metric && r[j].granularity_ns == r[i].granularity_ns &&
               r[j].ts == r[i].ts) {
            v[j - i] = r[j].value;
            mask |= 1u << (r[j].method - GA_M_MEAN);
            j++;
        }
        if (j == i) {
            out[o++] = r[i++];
            continue;
        }
        size_t k = j - i, slots = wide_pack_packed(r + i, k, mask, out + o);
        if (!slots) {
            slots = 1 + (k + 3) / 4;
            out[o] = (struct ga_agg){ .metric = r[i].metric, .method = GA_M_WIDE,
                                      .granularity_ns = r[i].granularity_ns, .ts = r[i].ts,
                                      .value = (double)mask };
            memcpy(&out[o + 1], v, (slots - 1) * sizeof *out);
        }
        o += slots;
        i = j;
    }
    return o;
}

#endif
