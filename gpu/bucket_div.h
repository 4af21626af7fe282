/* bucket_div.h — a bucket's start, floor(ts / g) * g, without a 64-bit
 * integer division in the common case (C and CUDA, host and device).
 *
 * On the GPU a 64-bit `%` is a ~70-instruction software routine, and the
 * bucket kernels take one or two per point.  Here, when the quotient is
 * below 2^50 (every g >= 1.6 µs for today's timestamps), the quotient is
 * estimated in double precision and corrected once:
 *   qd = rn(rn(ts) * rn(1/g))  is within 3 ulp of ts/g, so with q < 2^50
 *   it is off by less than 0.5: trunc(qd) is q-1, q or q+1, and the
 *   remainder ts - trunc(qd)*g (exact, in wrapping 64-bit arithmetic; the
 *   true value lies in [-g, 2g)) needs at most one step back into [0, g).
 * Every operation is correctly rounded on both sides (__drcp_rn and
 * __dmul_rn on the device, IEEE division and multiplication on the host),
 * so host and device agree bit for bit, and both equal ts - ts % g
 * (tests/unit/test_bucket_div.c checks that over random and edge values).
 * Other inputs (ts < 0, quotient >= 2^50, g >= 2^62) take the division. */
#ifndef GA_BUCKET_DIV_H
#define GA_BUCKET_DIV_H

#include <stdint.h>

#ifdef __CUDACC__
#define GA_BUCKET_HD __host__ __device__
#else
#define GA_BUCKET_HD
#endif

GA_BUCKET_HD static inline int64_t ga_bucket_start(int64_t ts, int64_t g)
{
    if (ts >= 0 && (ts >> 50) < g && g < ((int64_t)1 << 62)) {
#ifdef __CUDA_ARCH__
        double qd = __dmul_rn((double)ts, __drcp_rn((double)g));
#else
        double qd = (double)ts * (1.0 / (double)g);
#endif
        uint64_t q = (uint64_t)qd;
        int64_t r = (int64_t)((uint64_t)ts - q * (uint64_t)g);
        if (r < 0)
            r += g;
        else if (r >= g)
            r -= g;
        return ts - r;
    }
    return ts - ts % g;
}

#endif
