/* wide_pack.h — tests: rows packed into wide records (gpu/engine.h) the way
 * a backend writes them, written apart from gpu/result.c so that the two
 * check each other.  Consecutive rows of one (metric, granularity, ts)
 * whose methods are basic (GA_M_MEAN..GA_M_STD) and ascending become one
 * record; any other row is copied.  out has room for 2 * n slots (a record
 * of one value takes two).  Returns the slots written. */
#ifndef GA_TEST_WIDE_PACK_H
#define GA_TEST_WIDE_PACK_H

#include <string.h>

#include "gpu/engine.h"
#include "gpu/policy.h"

static inline int wide_pack_basic(ga_method_t m) { return m >= GA_M_MEAN && m <= GA_M_STD; }

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
        size_t k = j - i, slots = 1 + (k + 3) / 4;
        out[o] = (struct ga_agg){ .metric = r[i].metric, .method = GA_M_WIDE,
                                  .granularity_ns = r[i].granularity_ns, .ts = r[i].ts,
                                  .value = (double)mask };
        memcpy(&out[o + 1], v, (slots - 1) * sizeof *out);
        o += slots;
        i = j;
    }
    return o;
}

#endif
