/* policy.h — archive policies and metric→policy rules.
 *
 * Semantics follow Gnocchi 4.4 (gnocchi/archive_policy.py).  A policy is a
 * back window, a set of definitions (granularity + timespan) and a set of
 * aggregation methods (proto/method.h). */
#ifndef GA_POLICY_H
#define GA_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "proto/method.h"

#define GA_POLICY_NAME_MAX 64
#define GA_POLICY_MAX_DEFS 16
#define GA_POLICY_MAX_METHODS 216   /* every valid method, rate: included */

struct ga_policy_def {
    int64_t granularity_ns;      /* > 0 */
    int64_t timespan_ns;         /* 0 = unbounded (points not given) */
    int64_t points;              /* timespan / granularity, 0 = unbounded */
};

struct ga_policy {
    char name[GA_POLICY_NAME_MAX];
    int64_t back_window;                       /* in blocks of max granularity */
    int ndefs;
    struct ga_policy_def defs[GA_POLICY_MAX_DEFS];   /* ascending granularity */
    int nmethods;
    ga_method_t methods[GA_POLICY_MAX_METHODS];      /* ascending, unique */
};

/* Apply one Gnocchi method-set entry to a policy: "mean" (add), "-std"
 * (remove), "+median" (add), "*" (all valid methods).  As in Gnocchi, a list
 * made only of +/- entries starts from the default set (mean min max sum std
 * count).  Use ga_policy_methods_from_list() for a whole list.
 * Returns 0, or GA_EINVAL naming nothing (the caller knows the entry). */
int ga_policy_methods_from_list(struct ga_policy *p, const char *const *names, int n,
                                const char **bad_entry);

/* Add a definition from any two of granularity/timespan/points (0 = not
 * given), as Gnocchi's ArchivePolicyItem.  Keeps defs sorted.  Returns 0 or
 * GA_EINVAL (duplicate granularity, non-positive values, inconsistent
 * triple, a granularity over GA_GRANULARITY_MAX or a timespan over
 * GA_TIMESPAN_MAX (proto/ga_time.h), or more than GA_POLICY_MAX_DEFS) with
 * a reason in *why. */
int ga_policy_add_def(struct ga_policy *p, int64_t granularity_ns, int64_t timespan_ns,
                      int64_t points, const char **why);

/* Check p against the limits of proto/ga_time.h, which keep every int64
 * computation on its buckets and windows from overflowing: every
 * granularity 1 ns .. GA_GRANULARITY_MAX, every timespan 0 ..
 * GA_TIMESPAN_MAX, back_window >= 0 and (back_window + 1) x the largest
 * granularity (how far back the window reaches with a rate: method's
 * extra block) at most GA_TIMESPAN_MAX.  Returns 0 or
 * GA_EINVAL with a reason (static text) in *why (why may be NULL). */
int ga_policy_check_range(const struct ga_policy *p, const char **why);

/* Largest granularity of the policy (its block size). */
int64_t ga_policy_max_granularity(const struct ga_policy *p);
/* 1 if the policy has any rate: method. */
int ga_policy_has_rate(const struct ga_policy *p);

/* Built-in policies, equal to Gnocchi's defaults (bool, low, medium, high)
 * and Ceilometer's (ceilometer-low, ceilometer-low-rate).  Returns NULL for
 * an unknown name. */
const struct ga_policy *ga_policy_builtin(const char *name);
/* The i-th built-in policy, NULL past the end. */
const struct ga_policy *ga_policy_builtin_at(int i);

/* Metric-name → policy rules: Gnocchi's archive_policy_rule, a glob
 * (fnmatch) pattern; the first match wins. */
struct ga_rule {
    char pattern[256];
    char policy[GA_POLICY_NAME_MAX];
};

/* Index of the first rule whose pattern matches name, or -1. */
int ga_rule_match(const struct ga_rule *rules, int nrules, const char *name);

#endif
