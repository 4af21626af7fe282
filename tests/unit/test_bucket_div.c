/* test_bucket_div.c — ga_bucket_start (gpu/bucket_div.h, the GPU kernels'
 * bucket arithmetic) equals ts - ts % g: random timestamps and
 * granularities over every magnitude, and the values next to bucket
 * edges where the double-precision estimate is off by one. */
#include <stdint.h>

#include "gpu/bucket_div.h"
#include "tests/unit/harness.h"

static uint64_t s = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
    return harness_xorshift(&s);
}

/* Uniform over magnitudes: a random bit length, then random bits. */
static int64_t magnitude(int maxbits)
{
    int bits = 1 + (int)(next() % (uint64_t)maxbits);
    return (int64_t)(next() >> (64 - bits));
}

static size_t wrong;

static void check(int64_t ts, int64_t g)
{
    if (ts < 0 || g <= 0)
        return;
    wrong += ga_bucket_start(ts, g) != ts - ts % g;
}

static void test_random_magnitudes(void)
{
    wrong = 0;
    for (int i = 0; i < 3000000; i++)
        check(magnitude(63), 1 + magnitude(62));
    CHECK_INT(wrong, 0);
}

static void test_realistic(void)
{
    /* 1970-2100 in ns, granularities 1 ns .. 1 year, the common ones */
    static const int64_t common[] = { 1, 1000, 1000000, 1000000000LL, 5000000000LL, 35000000000LL,
                                      60000000000LL, 300000000000LL, 3600000000000LL,
                                      86400000000000LL, 604800000000000LL, 31536000000000000LL };
    wrong = 0;
    for (int i = 0; i < 2000000; i++) {
        int64_t ts = (int64_t)(next() % 4102444800000000000ULL);
        int64_t g = i & 1 ? common[next() % (sizeof common / sizeof common[0])] : 1 + magnitude(55);
        check(ts, g);
    }
    CHECK_INT(wrong, 0);
}

static void test_edges(void)
{
    /* around multiples of g, where qd can round up to the next integer or
     * truncate to the previous one */
    wrong = 0;
    for (int i = 0; i < 1000000; i++) {
        int64_t g = 1 + magnitude(62);
        int64_t qmax = INT64_MAX / g - 1;
        int64_t q = qmax > 0 ? (int64_t)(next() % (uint64_t)qmax) : 0;
        int64_t base = q * g;
        for (int64_t d = -3; d <= 3; d++)
            if (d >= 0 || base >= -d)
                check(base + d, g);
        check(base + g - 1, g);
    }
    /* the fast path's limits: quotient 2^50 and g = 2^62 */
    for (int64_t g = 1; g < 5000; g++) {
        check((g << 50) - 1, g);
        check(g << 50, g);
    }
    check(INT64_MAX, (int64_t)1 << 62);
    check(INT64_MAX, ((int64_t)1 << 62) - 1);
    check(INT64_MAX, INT64_MAX);
    check(INT64_MAX - 1, INT64_MAX);
    check(0, 1);
    CHECK_INT(wrong, 0);
    /* 2025-11-21T04:40:00.123456789Z in 60 s buckets */
    CHECK_INT(ga_bucket_start(1763700000123456789LL, 60000000000LL), 1763700000000000000LL);
}

void run_tests(void)
{
    RUN(test_random_magnitudes);
    RUN(test_realistic);
    RUN(test_edges);
}
