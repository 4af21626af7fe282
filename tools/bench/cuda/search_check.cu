// search_check.cu — ga_cuda_search_check (gpu/cuda.h): the feed's galloping
// searches (gk.cuh: gk_bucket_end_near, gk_lower_bound_near,
// gk_lower_bound_up, gk_seg_of_near) against the binary searches they stand
// in for, on random sorted arrays with runs of equal values (segment
// offsets with empty segments), from every start (any guess).  The
// functions are __host__ __device__: the host runs the very code the
// kernels do, so no GPU is needed.
#include <stdlib.h>

#include <vector>

#include "gpu/cuda.h"
#include "gpu/cuda/gk.cuh"
#include "tools/bench/cuda/bench_hooks.h"

namespace {

uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

} // namespace

extern "C" int ga_cuda_search_check(uint64_t seed, int arrays, uint64_t *checked, uint64_t *differ)
{
    *checked = *differ = 0;
    uint64_t s = seed;
    for (int a = 0; a < arrays; a++) {
        size_t n = (size_t)(next(&s) % 300);
        int64_t step = (int64_t)(next(&s) % 4);   // 0: all equal; small steps: many ties
        std::vector<int64_t> ts(n);
        int64_t t = (int64_t)(next(&s) % 100);
        for (size_t i = 0; i < n; i++) {
            t += step ? (int64_t)(next(&s) % (uint64_t)(step + 1)) : 0;
            ts[i] = t;
        }
        const int64_t *p = ts.data();
        for (int q = 0; q < 40; q++) {
            int64_t key = (int64_t)(next(&s) % (uint64_t)(t + 3)) - 1;
            int64_t g = 1 + (int64_t)(next(&s) % 8), b = key;
            size_t lo = n ? (size_t)(next(&s) % (n + 1)) : 0;
            size_t hi = lo + (size_t)(next(&s) % (n - lo + 1));
            // gk_bucket_end_near / gk_lower_bound_up: any [lo, hi)
            *differ += gk_bucket_end_near(p, lo, hi, b, g) != gk_bucket_end(p, lo, hi, b, g);
            *differ += gk_lower_bound_up(p, lo, hi, key) != gk_lower_bound(p, lo, hi, key);
            // gk_lower_bound_near: from any at with ts[at] >= key, or at == n
            size_t at = gk_lower_bound(p, 0, n, key);
            at += (size_t)(next(&s) % (n - at + 1));
            *differ += gk_lower_bound_near(p, at, key) != gk_lower_bound(p, 0, at, key);
            *checked += 3;
        }
        // gk_seg_of_near: offsets off[0] = 0 <= ... <= off[m] (empty
        // segments where equal), a key in [0, off[m]), any guess
        size_t m = 1 + (size_t)(next(&s) % 200);
        std::vector<uint64_t> off(m + 1);
        off[0] = 0;
        for (size_t i = 1; i <= m; i++)
            off[i] = off[i - 1] + (next(&s) % 3 == 0 ? 0 : next(&s) % (uint64_t)(1 + 8 * step));
        if (off[m] == 0)
            off[m] = 1;
        for (int q = 0; q < 40; q++) {
            uint64_t key = next(&s) % off[m];
            size_t g = q & 1 ? (size_t)(key * m / off[m]) : (size_t)(next(&s) % (m + 2));
            *differ += gk_seg_of_near(off.data(), m, key, g) != gk_seg_of(off.data(), m, key);
            *checked += 1;
        }
    }
    return 0;
}
