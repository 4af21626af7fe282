/* points.c — a batch's timestamps as 32-bit offsets (points.h). */
#include "proto/points.h"
#include "proto/ga_err.h"

/* t mod u in [0, u): the same for two ts a whole number of u apart, on
 * either side of 0 */
static inline int64_t mod(int64_t t, int64_t u)
{
    int64_t r = t % u;
    return r < 0 ? r + u : r;
}

int ga_points_pack_ts32(const int64_t *ts, size_t n, uint32_t *ts32, int64_t *base, int64_t *unit)
{
    static const int64_t units[] = { 1000000000, 1000000, 1000, 1 };
    if (!n) {
        *base = 0;
        *unit = 1;
        return 0;
    }
    /* every ts a whole number of u from the minimum: all the same residue
     * mod u as ts[0] (the minimum among them) */
    int64_t lo = ts[0], hi = ts[0];
    int64_t r9 = mod(ts[0], 1000000000), r6 = mod(ts[0], 1000000), r3 = mod(ts[0], 1000);
    unsigned same = 7;            /* bit k: units[k] still divides */
    for (size_t i = 0; i < n; i++) {
        int64_t t = ts[i];
        lo = t < lo ? t : lo;
        hi = t > hi ? t : hi;
        same &= (unsigned)(mod(t, 1000000000) == r9) | (unsigned)(mod(t, 1000000) == r6) << 1 |
                (unsigned)(mod(t, 1000) == r3) << 2;
    }
    int k = same & 1 ? 0 : same & 2 ? 1 : same & 4 ? 2 : 3;
    /* the span in that unit (hi - lo can pass INT64_MAX: unsigned); a
     * finer unit only makes it longer */
    int64_t u = units[k];
    if (((uint64_t)hi - (uint64_t)lo) / (uint64_t)u > UINT32_MAX)
        return GA_ERANGE;
    for (size_t i = 0; i < n; i++)
        ts32[i] = (uint32_t)(((uint64_t)ts[i] - (uint64_t)lo) / (uint64_t)u);
    *base = lo;
    *unit = u;
    return 0;
}
