/* test_metrics.c — the metric registry: interning, dense ids, policy by rule,
 * growth past many rehashes, restore. */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/config/config.h"
#include "daemon/metrics.h"
#include "proto/ga_err.h"
#include "proto/ga_partition.h"
#include "tests/unit/harness.h"

static struct ga_config *cfg_with_rules(void)
{
    struct ga_config *c = malloc(sizeof *c);
    ga_config_defaults(c);
    c->nrules = 2;
    snprintf(c->rules[0].pattern, sizeof c->rules[0].pattern, "*/cpu");
    snprintf(c->rules[0].policy, sizeof c->rules[0].policy, "ceilometer-low-rate");
    snprintf(c->rules[1].pattern, sizeof c->rules[1].pattern, "hi.*");
    snprintf(c->rules[1].policy, sizeof c->rules[1].policy, "high");
    snprintf(c->default_policy, sizeof c->default_policy, "low");
    return c;
}

static void test_intern_dense_and_stable(void)
{
    struct ga_config *c = cfg_with_rules();
    struct ga_metrics *m;
    CHECK_INT(ga_metrics_open(&m), 0);
    uint32_t a, b, a2;
    int created;
    CHECK_INT(ga_metrics_intern(m, "vm1/cpu", 7, c, &a, &created), 0);
    CHECK_INT(created, 1);
    CHECK_INT(ga_metrics_intern(m, "hi.load", 7, c, &b, &created), 0);
    CHECK_INT(ga_metrics_intern(m, "vm1/cpu", 7, c, &a2, &created), 0);
    CHECK_INT(created, 0);
    CHECK_INT(a, 0);
    CHECK_INT(b, 1);
    CHECK_INT(a2, a);
    CHECK_STR(ga_metrics_get(m, a)->policy->name, "ceilometer-low-rate");
    CHECK_STR(ga_metrics_get(m, b)->policy->name, "high");
    uint32_t d;
    CHECK_INT(ga_metrics_intern(m, "other", 5, c, &d, NULL), 0);
    CHECK_STR(ga_metrics_get(m, d)->policy->name, "low");
    CHECK(ga_metrics_get(m, 3) == NULL);
    ga_metrics_close(m);
    free(c);
}

static void test_bad_names(void)
{
    struct ga_config *c = cfg_with_rules();
    struct ga_metrics *m;
    ga_metrics_open(&m);
    uint32_t id;
    char longname[300];
    memset(longname, 'x', sizeof longname);
    CHECK_INT(ga_metrics_intern(m, "", 0, c, &id, NULL), GA_EINVAL);
    CHECK_INT(ga_metrics_intern(m, longname, 256, c, &id, NULL), GA_EINVAL);
    CHECK_INT(ga_metrics_intern(m, longname, 255, c, &id, NULL), 0);
    CHECK_INT(ga_metrics_find(m, "nope", 4, &id), GA_ENOENT);
    ga_metrics_close(m);
    free(c);
}

static void test_many_metrics_survive_rehash(void)
{
    struct ga_config *c = cfg_with_rules();
    struct ga_metrics *m;
    ga_metrics_open(&m);
    enum { N = 50000 };
    char name[64];
    unsigned seed = 12345;
    int ok = 1;
    for (uint32_t i = 0; i < N; i++) {
        int len = snprintf(name, sizeof name, "res-%u-%u/cpu", i, (unsigned)rand_r(&seed));
        uint32_t id;
        if (ga_metrics_intern(m, name, (size_t)len, c, &id, NULL) != 0 || id != i)
            ok = 0;
    }
    CHECK(ok);
    CHECK_INT(ga_metrics_count(m), N);
    seed = 12345;
    for (uint32_t i = 0; i < N && ok; i++) {
        int len = snprintf(name, sizeof name, "res-%u-%u/cpu", i, (unsigned)rand_r(&seed));
        uint32_t id = 0;
        ok = ga_metrics_find(m, name, (size_t)len, &id) == 0 && id == i &&
             strcmp(ga_metrics_get(m, id)->name, name) == 0;
    }
    CHECK(ok);
    ga_metrics_close(m);
    free(c);
}

static void test_restore(void)
{
    struct ga_metrics *m;
    ga_metrics_open(&m);
    const struct ga_policy *p = ga_policy_builtin("medium");
    CHECK_INT(ga_metrics_restore(m, "a", 1, 0, p), 0);
    CHECK_INT(ga_metrics_restore(m, "b", 1, 1, p), 0);
    CHECK_INT(ga_metrics_restore(m, "a", 1, 0, p), 0);
    CHECK_INT(ga_metrics_restore(m, "a", 1, 1, p), GA_EEXIST);
    CHECK_INT(ga_metrics_restore(m, "c", 1, 5, p), 0);        /* 2..4 become holes */
    CHECK_INT(ga_metrics_restore(m, "d", 1, 1, p), GA_EINVAL); /* b's id */
    CHECK(ga_metrics_get(m, 3) == NULL);
    CHECK_STR(ga_metrics_get(m, 1)->policy->name, "medium");
    CHECK(ga_metrics_get(m, 0)->policy == ga_metrics_get(m, 1)->policy);
    ga_metrics_close(m);
}

/* Restored out of order with holes (a database written by several
 * workers: ids k * 64 + partition); new metrics go after the highest. */
static void test_holes(void)
{
    struct ga_config *c = cfg_with_rules();
    struct ga_metrics *m;
    CHECK_INT(ga_metrics_open(&m), 0);
    CHECK_INT(ga_metrics_restore(m, "old.b", 5, 200, ga_config_policy(c, "low")), 0);
    CHECK_INT(ga_metrics_restore(m, "old.a", 5, 70, ga_config_policy(c, "low")), 0);
    CHECK_INT(ga_metrics_count(m), 201);
    CHECK_INT(ga_metrics_named(m), 2);
    CHECK(ga_metrics_get(m, 0) == NULL);          /* a hole */
    CHECK(ga_metrics_get(m, 150) == NULL);
    CHECK_STR(ga_metrics_get(m, 70)->name, "old.a");
    CHECK_INT(ga_metrics_restore(m, "old.c", 5, 70, ga_config_policy(c, "low")), GA_EINVAL);
    char name[32];
    for (int i = 0; i < 3000; i++) {              /* past several rehashes */
        uint32_t id, again;
        int created;
        int n = snprintf(name, sizeof name, "new.%d", i);
        CHECK_INT(ga_metrics_intern(m, name, (size_t)n, c, &id, &created), 0);
        CHECK_INT(created, 1);
        CHECK_INT(id, 201 + i);
        CHECK_INT(ga_metrics_find(m, name, (size_t)n, &again), 0);
        CHECK_INT(again, id);
        CHECK_STR(ga_metrics_get(m, id)->name, name);
    }
    uint32_t id;
    CHECK_INT(ga_metrics_find(m, "old.b", 5, &id), 0);
    CHECK_INT(id, 200);
    CHECK_INT(ga_metrics_named(m), 3002);
    ga_metrics_close(m);
    free(c);
}

void run_tests(void)
{
    RUN(test_intern_dense_and_stable);
    RUN(test_bad_names);
    RUN(test_many_metrics_survive_rehash);
    RUN(test_restore);
    RUN(test_holes);
}
