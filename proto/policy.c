/* policy.c — archive policies, methods, durations and rules (see policy.h). */
#include "proto/policy.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/ga_time.h"

#define SEC  1000000000LL
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define DAY  (24 * HOUR)

/* Method sets as bitmaps over the 0x3ff id space, so +/- are trivial. */
#define MSET_WORDS ((GA_M_RATE | 0xff) / 64 + 1)
typedef struct { uint64_t w[MSET_WORDS]; } mset;

static void mset_put(mset *s, int m, int on)
{
    if (on)
        s->w[m / 64] |= 1ULL << (m % 64);
    else
        s->w[m / 64] &= ~(1ULL << (m % 64));
}

static void mset_all(mset *s)
{
    for (int r = 0; r < 2; r++) {
        int rate = r ? GA_M_RATE : 0;
        for (int b = GA_M_MEAN; b <= GA_M_MEDIAN; b++)
            mset_put(s, b | rate, 1);
        for (int n = 1; n <= 99; n++)
            mset_put(s, (GA_M_PCT_BASE + n) | rate, 1);
    }
}

static void mset_default(mset *s)
{
    static const int d[] = { GA_M_MEAN, GA_M_MIN, GA_M_MAX, GA_M_SUM, GA_M_STD, GA_M_COUNT };
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        mset_put(s, d[i], 1);
}

int ga_policy_methods_from_list(struct ga_policy *p, const char *const *names, int n,
                                const char **bad_entry)
{
    mset s = { { 0 } };
    int star = 0, only_signed = n > 0;
    for (int i = 0; i < n; i++) {
        const char *e = names[i];
        if (strcmp(e, "*") == 0) {
            star = 1;
            only_signed = 0;
            continue;
        }
        const char *bare = (e[0] == '-' || e[0] == '+') ? e + 1 : e;
        if (bare == e)
            only_signed = 0;
        if (ga_method_parse(bare) < 0) {
            if (bad_entry)
                *bad_entry = e;
            return GA_EINVAL;
        }
    }
    if (star)
        mset_all(&s);
    else if (only_signed || n == 0)
        mset_default(&s);
    for (int i = 0; i < n; i++) {
        const char *e = names[i];
        if (strcmp(e, "*") == 0)
            continue;
        if (e[0] == '-')
            mset_put(&s, ga_method_parse(e + 1), 0);
        else
            mset_put(&s, ga_method_parse(e[0] == '+' ? e + 1 : e), 1);
    }
    p->nmethods = 0;
    for (int m = 0; m < MSET_WORDS * 64; m++)
        if (s.w[m / 64] >> (m % 64) & 1)
            p->methods[p->nmethods++] = (ga_method_t)m;
    return 0;
}

/* Everything computed from an accepted timestamp and a policy within these
 * limits stays inside int64 (proto/ga_time.h says which sums). */
_Static_assert(GA_TS_MAX <= INT64_MAX - GA_GRANULARITY_MAX - GA_NS_PER_DAY,
               "bucket start + granularity + one day must fit int64");
_Static_assert(GA_TIMESPAN_MAX <= INT64_MAX - GA_GRANULARITY_MAX,
               "timespan + granularity (the retention reach) must fit int64");
_Static_assert(GA_TS_MIN - GA_TIMESPAN_MAX - GA_GRANULARITY_MAX > INT64_MIN,
               "a timestamp minus the reach, or a window's first block, must fit int64");

int ga_policy_add_def(struct ga_policy *p, int64_t g, int64_t ts, int64_t points,
                      const char **why)
{
    const char *dummy;
    int64_t prod;
    if (!why)
        why = &dummy;
    if (g < 0 || ts < 0 || points < 0) {
        *why = "granularity, timespan and points must be positive";
        return GA_EINVAL;
    }
    if (g > GA_GRANULARITY_MAX) {
        *why = "granularity is longer than " GA_GRANULARITY_MAX_TEXT " (the largest accepted)";
        return GA_EINVAL;
    }
    if (ts > GA_TIMESPAN_MAX) {
        *why = "timespan is longer than " GA_TIMESPAN_MAX_TEXT " (the largest accepted)";
        return GA_EINVAL;
    }
    if (g && points && (__builtin_mul_overflow(g, points, &prod) || prod > GA_TIMESPAN_MAX)) {
        *why = "granularity x points is longer than " GA_TIMESPAN_MAX_TEXT " (the largest accepted)";
        return GA_EINVAL;
    }
    if (g && points && ts && ts != prod) {
        *why = "timespan must equal granularity x points";
        return GA_EINVAL;
    }
    if (!g) {
        if (!points || !ts) {
            *why = "at least two of granularity/points/timespan must be given";
            return GA_EINVAL;
        }
        g = ts / points;
        if (g <= 0) {
            *why = "granularity computed from timespan/points is zero";
            return GA_EINVAL;
        }
        if (g > GA_GRANULARITY_MAX) {
            *why = "granularity computed from timespan/points is longer than "
                   GA_GRANULARITY_MAX_TEXT " (the largest accepted)";
            return GA_EINVAL;
        }
    }
    if (!points && ts) {
        points = ts / g;
        if (points <= 0) {
            *why = "timespan is shorter than granularity";
            return GA_EINVAL;
        }
    }
    ts = points ? g * points : 0;    /* Gnocchi: timespan = granularity × points */
    if (p->ndefs >= GA_POLICY_MAX_DEFS) {
        *why = "too many definitions";
        return GA_EINVAL;
    }
    int at = 0;
    while (at < p->ndefs && p->defs[at].granularity_ns < g)
        at++;
    if (at < p->ndefs && p->defs[at].granularity_ns == g) {
        *why = "more than one definition uses this granularity";
        return GA_EINVAL;
    }
    memmove(&p->defs[at + 1], &p->defs[at], (size_t)(p->ndefs - at) * sizeof p->defs[0]);
    p->defs[at] = (struct ga_policy_def){ g, ts, points };
    p->ndefs++;
    return 0;
}

int ga_policy_check_range(const struct ga_policy *p, const char **why)
{
    const char *dummy;
    int64_t span;
    if (!why)
        why = &dummy;
    for (int d = 0; d < p->ndefs; d++) {
        if (p->defs[d].granularity_ns <= 0 || p->defs[d].granularity_ns > GA_GRANULARITY_MAX) {
            *why = "granularity must be 1 ns .. " GA_GRANULARITY_MAX_TEXT;
            return GA_EINVAL;
        }
        if (p->defs[d].timespan_ns < 0 || p->defs[d].timespan_ns > GA_TIMESPAN_MAX) {
            *why = "timespan must be 0 (unbounded) .. " GA_TIMESPAN_MAX_TEXT;
            return GA_EINVAL;
        }
    }
    /* the window reaches back_window blocks back (one more with a rate:
     * method): agg_cpu_window.c first_block() */
    if (p->back_window < 0 ||
        __builtin_mul_overflow(ga_policy_max_granularity(p), p->back_window, &span) ||
        __builtin_add_overflow(span, ga_policy_max_granularity(p), &span) ||
        span > GA_TIMESPAN_MAX) {
        *why = "(back_window + 1) x largest granularity is longer than " GA_TIMESPAN_MAX_TEXT
               " (the largest accepted)";
        return GA_EINVAL;
    }
    return 0;
}

int64_t ga_policy_max_granularity(const struct ga_policy *p)
{
    return p->ndefs ? p->defs[p->ndefs - 1].granularity_ns : 0;
}

int ga_policy_has_rate(const struct ga_policy *p)
{
    for (int i = 0; i < p->nmethods; i++)
        if (GA_M_IS_RATE(p->methods[i]))
            return 1;
    return 0;
}

/* ---- built-ins -------------------------------------------------------- */

struct builtin_spec {
    const char *name;
    int64_t back_window;
    const char *methods[3];          /* NULL-terminated; none → default set */
    int64_t defs[3][2];              /* {granularity, timespan} */
};

static const struct builtin_spec specs[] = {
    { "bool", 3600, { "last" }, { { SEC, 365 * DAY } } },
    { "low", 0, { NULL }, { { 5 * MIN, 30 * DAY } } },
    { "medium", 0, { NULL }, { { MIN, 7 * DAY }, { HOUR, 365 * DAY } } },
    { "high", 0, { NULL }, { { SEC, HOUR }, { MIN, 7 * DAY }, { HOUR, 365 * DAY } } },
    /* ceilometer/publisher/data/gnocchi_resources.yaml */
    { "ceilometer-low", 0, { "mean" }, { { 5 * MIN, 30 * DAY } } },
    { "ceilometer-low-rate", 0, { "mean", "rate:mean" }, { { 5 * MIN, 30 * DAY } } },
    { "ceilometer-high", 0, { "mean" }, { { SEC, HOUR }, { MIN, DAY }, { HOUR, 365 * DAY } } },
    { "ceilometer-high-rate", 0, { "mean", "rate:mean" },
      { { SEC, HOUR }, { MIN, DAY }, { HOUR, 365 * DAY } } },
};
#define NBUILTIN (int)(sizeof specs / sizeof specs[0])

static struct ga_policy builtins[NBUILTIN];
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

static void builtins_init(void)
{
    for (int i = 0; i < NBUILTIN; i++) {
        struct ga_policy *p = &builtins[i];
        const struct builtin_spec *s = &specs[i];
        snprintf(p->name, sizeof p->name, "%s", s->name);
        p->back_window = s->back_window;
        int nm = 0;
        while (nm < 3 && s->methods[nm])
            nm++;
        ga_policy_methods_from_list(p, s->methods, nm, NULL);
        for (int d = 0; d < 3 && s->defs[d][0]; d++)
            ga_policy_add_def(p, s->defs[d][0], s->defs[d][1], 0, NULL);
    }
}

const struct ga_policy *ga_policy_builtin_at(int i)
{
    pthread_once(&builtins_once, builtins_init);
    return i >= 0 && i < NBUILTIN ? &builtins[i] : NULL;
}

const struct ga_policy *ga_policy_builtin(const char *name)
{
    for (int i = 0; i < NBUILTIN; i++)
        if (strcmp(specs[i].name, name) == 0)
            return ga_policy_builtin_at(i);
    return NULL;
}

int ga_rule_match(const struct ga_rule *rules, int nrules, const char *name)
{
    for (int i = 0; i < nrules; i++)
        if (fnmatch(rules[i].pattern, name, 0) == 0)
            return i;
    return -1;
}
