/* test_policy.c — archive policies: method names, method lists, definitions,
 * built-ins (equal to Gnocchi 4.4's and Ceilometer's), durations, rules. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "proto/policy.h"
#include "proto/ga_err.h"

#define SEC 1000000000LL

static void test_method_names_round_trip(void)
{
    const char *base[] = { "mean", "sum", "min", "max", "count", "first", "last", "std", "median" };
    char buf[GA_METHOD_NAME_MAX], name[32];
    int seen = 0;
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 9 + 99; i++) {
            if (i < 9)
                snprintf(name, sizeof name, "%s%s", r ? "rate:" : "", base[i]);
            else
                snprintf(name, sizeof name, "%s%dpct", r ? "rate:" : "", i - 8);
            int m = ga_method_parse(name);
            CHECK(m > 0);
            CHECK_INT(GA_M_IS_RATE(m), r);
            CHECK_STR(ga_method_name((ga_method_t)m, buf), name);
            seen++;
        }
    }
    CHECK_INT(seen, GA_POLICY_MAX_METHODS);
    const char *bad[] = { "0pct", "100pct", "05pct", "pct", "-1pct", "avg", "rate:", "rate:rate:mean",
                          "Mean", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(ga_method_parse(bad[i]), GA_EINVAL);
    CHECK(GA_M_IS_PCT(ga_method_parse("90pct")) && GA_M_PCT_N(ga_method_parse("90pct")) == 90);
}

static int has(const struct ga_policy *p, const char *m)
{
    int id = ga_method_parse(m);
    for (int i = 0; i < p->nmethods; i++)
        if (p->methods[i] == id)
            return 1;
    return 0;
}

static void test_method_lists(void)
{
    struct ga_policy p = { 0 };
    const char *only_signed[] = { "-std", "+median", "+rate:last" };
    CHECK_INT(ga_policy_methods_from_list(&p, only_signed, 3, NULL), 0);
    /* Gnocchi: +/- only → start from the default (mean min max sum std count) */
    CHECK_INT(p.nmethods, 7);
    CHECK(has(&p, "mean") && has(&p, "count") && has(&p, "median") && has(&p, "rate:last"));
    CHECK(!has(&p, "std"));
    for (int i = 1; i < p.nmethods; i++)
        CHECK(p.methods[i - 1] < p.methods[i]);
    const char *plain[] = { "last", "90pct", "last" };
    CHECK_INT(ga_policy_methods_from_list(&p, plain, 3, NULL), 0);
    CHECK_INT(p.nmethods, 2);
    const char *star[] = { "*", "-rate:std" };
    CHECK_INT(ga_policy_methods_from_list(&p, star, 2, NULL), 0);
    CHECK_INT(p.nmethods, GA_POLICY_MAX_METHODS - 1);
    const char *bad[] = { "mean", "nope" };
    const char *which = NULL;
    CHECK_INT(ga_policy_methods_from_list(&p, bad, 2, &which), GA_EINVAL);
    CHECK_STR(which, "nope");
}

static void test_definitions(void)
{
    struct ga_policy p = { 0 };
    const char *why = NULL;
    /* random granularity and points: timespan follows */
    int64_t g = (int64_t)(1 + rand() % 600) * SEC, n = 1 + rand() % 1000;
    CHECK_INT(ga_policy_add_def(&p, g, 0, n, &why), 0);
    CHECK(p.defs[0].timespan_ns == g * n && p.defs[0].points == n);
    /* timespan + points: granularity follows */
    CHECK_INT(ga_policy_add_def(&p, 0, 7 * g * n, n, &why), 0);
    CHECK(p.defs[1].granularity_ns == 7 * g);
    /* granularity + timespan: points = timespan / g, timespan rounded down */
    CHECK_INT(ga_policy_add_def(&p, 3 * g, 10 * g + 1, 0, &why), 0);
    CHECK(p.defs[1].granularity_ns == 3 * g && p.defs[1].points == 3 && p.defs[1].timespan_ns == 9 * g);
    CHECK(ga_policy_max_granularity(&p) == 7 * g);
    CHECK_INT(ga_policy_add_def(&p, g, 0, 0, &why), GA_EINVAL);      /* duplicate */
    CHECK_CONTAINS(why, "granularity");
    CHECK_INT(ga_policy_add_def(&p, 5 * g, 5 * g * 3, 4, &why), GA_EINVAL);
    CHECK_INT(ga_policy_add_def(&p, 0, 0, 4, &why), GA_EINVAL);
    CHECK_INT(ga_policy_add_def(&p, 9 * g, g, 0, &why), GA_EINVAL);  /* timespan < g */
    CHECK_INT(ga_policy_add_def(&p, -g, 0, 0, &why), GA_EINVAL);
}

static void test_builtins_equal_gnocchi(void)
{
    /* gnocchi/archive_policy.py DEFAULT_ARCHIVE_POLICIES and ceilometer's
     * gnocchi_resources.yaml */
    const struct ga_policy *p = ga_policy_builtin("bool");
    CHECK(p && p->back_window == 3600 && p->ndefs == 1 && p->nmethods == 1 && has(p, "last"));
    CHECK(p && p->defs[0].granularity_ns == SEC && p->defs[0].points == 31536000);
    p = ga_policy_builtin("low");
    CHECK(p && p->ndefs == 1 && p->defs[0].granularity_ns == 300 * SEC && p->defs[0].points == 8640);
    CHECK(p && p->nmethods == 6 && has(p, "std") && has(p, "count") && !has(p, "median"));
    p = ga_policy_builtin("medium");
    CHECK(p && p->ndefs == 2 && p->defs[0].points == 10080 && p->defs[1].points == 8760);
    p = ga_policy_builtin("high");
    CHECK(p && p->ndefs == 3 && p->defs[0].points == 3600 && p->defs[1].points == 10080 &&
          p->defs[2].points == 8760);
    CHECK(p && ga_policy_max_granularity(p) == 3600 * SEC && !ga_policy_has_rate(p));
    p = ga_policy_builtin("ceilometer-low-rate");
    CHECK(p && p->nmethods == 2 && has(p, "mean") && has(p, "rate:mean") && ga_policy_has_rate(p));
    p = ga_policy_builtin("ceilometer-low");
    CHECK(p && p->nmethods == 1 && p->defs[0].points == 8640);
    CHECK(ga_policy_builtin("nope") == NULL);
    int n = 0;
    while (ga_policy_builtin_at(n))
        n++;
    CHECK(n >= 6);
}

static void test_rules_first_match(void)
{
    struct ga_rule r[3] = { { "disk.*", "low" }, { "cpu*", "high" }, { "*", "medium" } };
    CHECK_INT(ga_rule_match(r, 3, "cpu_util"), 1);
    CHECK_INT(ga_rule_match(r, 3, "disk.read.bytes"), 0);
    CHECK_INT(ga_rule_match(r, 3, "network"), 2);
    CHECK_INT(ga_rule_match(r, 2, "network"), -1);
}

void run_tests(void)
{
    srand(12345);
    RUN(test_method_names_round_trip);
    RUN(test_method_lists);
    RUN(test_definitions);
    RUN(test_builtins_equal_gnocchi);
    RUN(test_rules_first_match);
}
