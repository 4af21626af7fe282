/* random_policy.h — seeded random inputs shared by the engine tests: a
 * xorshift generator, values with ties and wide magnitudes, and random
 * archive policies (granularities that do and do not divide the block, any
 * methods, back windows, timespans).  Header-only: each test binary gets
 * its own generator; set rng to seed it. */
#ifndef GA_TEST_RANDOM_POLICY_H
#define GA_TEST_RANDOM_POLICY_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/policy.h"
#include "tests/unit/harness.h"

#ifndef SEC
#define SEC 1000000000LL
#endif

static uint64_t rng = 0x9e3779b97f4a7c15ULL;  /* reseed by assigning */
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static double rnd_value(void)
{
    switch (rnd() % 4) {
    case 0: return (double)rnd_in(-5, 5);                      /* ties in values */
    case 1: return (double)(rnd() % 1000000) / 997.0 - 400.0;
    case 2: return ((double)(rnd() % 1000003) - 5e5) * 1e-7;
    default: return (double)rnd_in(1, 1000) * 1e6 + (double)(rnd() % 1000) / 7.0;
    }
}

static const char *const all_methods[] = {
    "mean", "sum", "min", "max", "count", "first", "last", "std", "median", "1pct", "25pct",
    "50pct", "90pct", "99pct", "33pct", "rate:mean", "rate:sum", "rate:min", "rate:max",
    "rate:count", "rate:first", "rate:last", "rate:std", "rate:median", "rate:90pct", "rate:7pct",
};
#define NALL (int)(sizeof all_methods / sizeof all_methods[0])

static void random_policy(struct ga_policy *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "rand");
    p->back_window = rnd_in(0, 3);
    int64_t unit = (int64_t[]){ SEC, SEC / 2, 7 * SEC, 3 * SEC / 10 }[rnd() % 4];
    int nd = (int)rnd_in(1, 3);
    int64_t g = unit * rnd_in(1, 4);
    for (int d = 0; d < nd; d++) {
        int64_t points = rnd() % 3 == 0 ? rnd_in(2, 40) : 0;
        CHECK_INT(ga_policy_add_def(p, g, 0, points, NULL), 0);
        g *= rnd_in(2, 5);
        if (rnd() % 4 == 0)
            g += unit;                         /* not a multiple: partial buckets */
    }
    const char *names[NALL];
    int nm = 0;
    for (int i = 0; i < NALL; i++)
        if (rnd() % 3 == 0)
            names[nm++] = all_methods[i];
    if (!nm)
        names[nm++] = all_methods[rnd() % NALL];
    CHECK_INT(ga_policy_methods_from_list(p, names, nm, NULL), 0);
}

#endif
