/* test_engine_pipeline.c — ga_engine_feed_start / ga_engine_feed_wait with
 * two batches in flight give, batch for batch, the rows and late points of
 * ga_engine_feed on a twin engine, in the same order, bit for bit, and the
 * same statistics; metrics added and dropped while a batch is in flight
 * act where they would between two ga_engine_feed calls.  One backend
 * (nothing split) and several (the split of batch k + 1 on the caller
 * while the feeder feeds batch k).  Random batches: unknown ids, late,
 * duplicate, negative and non-finite points, empty batches.  And the
 * contract: two in flight at most, one out per batch, ga_engine_feed
 * refused while batches are in flight, GA_ENOENT with none, close with
 * batches never waited for. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tests/unit/random_policy.h"

#define NPOL 4

struct bat {
    struct ga_points pts;
    uint32_t *mid;
    int64_t *ts;
    double *val;
};

static void bat_make(struct bat *b, int nmet, size_t maxn, int64_t now)
{
    size_t n = rnd() % 8 == 0 ? 0 : (size_t)rnd_in(1, (int64_t)maxn);
    b->mid = malloc((n + 1) * sizeof *b->mid);
    b->ts = malloc((n + 1) * sizeof *b->ts);
    b->val = malloc((n + 1) * sizeof *b->val);
    for (size_t i = 0; i < n; i++) {
        b->mid[i] = rnd() % 30 == 0 ? (uint32_t)rnd_in(nmet, 1 << 20) : (uint32_t)rnd_in(0, nmet - 1);
        int64_t ts = now + rnd_in(-200, 600) * SEC;
        if (rnd() % 12 == 0)
            ts = now - rnd_in(0, 7200) * SEC;            /* late, maybe out of the window */
        if (rnd() % 10 == 0 && i)
            ts = b->ts[rnd() % i];                       /* duplicate timestamp */
        if (rnd() % 100 == 0)
            ts = -rnd_in(1, 1000) * SEC;                 /* before the epoch */
        b->ts[i] = ts;
        b->val[i] = rnd() % 100 == 0 ? NAN : rnd_value();
    }
    b->pts = (struct ga_points){ .n = n, .metric = b->mid, .ts = b->ts, .value = b->val };
}

static void bat_free(struct bat *b)
{
    free(b->mid);
    free(b->ts);
    free(b->val);
}

static struct ga_engine *engine(int nb, const int *threads)
{
    struct ga_backend *b[8];
    struct ga_engine *e;
    for (int i = 0; i < nb; i++)
        CHECK_INT(ga_cpu_backend_open(&b[i], threads[i]), 0);
    CHECK_INT(ga_engine_open(&e, b, nb), 0);
    return e;
}

static size_t rows_compared, batches_compared;

/* Field by field, value bits (ga_agg has padding after the method). */
static int agg_eq(const struct ga_agg *a, const struct ga_agg *b)
{
    return a->metric == b->metric && a->method == b->method &&
           a->granularity_ns == b->granularity_ns && a->ts == b->ts &&
           memcmp(&a->value, &b->value, sizeof a->value) == 0;
}

/* r (pipelined) equals want (ga_engine_feed) in order, bit for bit. */
static void same(const struct ga_result *r, const struct ga_result *want)
{
    CHECK_INT(r->naggs, want->naggs);
    CHECK_INT(r->nlate, want->nlate);
    size_t i = 0;
    while (r->naggs == want->naggs && i < r->naggs && agg_eq(&r->aggs[i], &want->aggs[i]))
        i++;
    CHECK_INT(i, want->naggs);
    if (r->nlate == want->nlate && r->nlate)   /* (memcmp of NULL: undefined, even for 0) */
        CHECK(memcmp(r->late, want->late, r->nlate * sizeof *r->late) == 0);
    rows_compared += r->naggs;
    batches_compared++;
}

/* Metric changes between batches k and k + 1: drop one, add it back. */
static void churn(struct ga_engine *s, struct ga_engine *p, int k, int nmet,
                  const struct ga_policy *pol)
{
    uint32_t id = (uint32_t)(k * 7 % nmet);
    if (k % 3 == 1) {
        ga_engine_metric_drop(s, id);
        ga_engine_metric_drop(p, id);
    } else if (k % 3 == 2) {
        CHECK_INT(ga_engine_metric_add(s, id, &pol[(k + 1) % NPOL]), 0);
        CHECK_INT(ga_engine_metric_add(p, id, &pol[(k + 1) % NPOL]), 0);
    }
}

/* K batches to a ga_engine_feed engine and to a pipelined twin: start k,
 * (churn), wait k - 1, compare. */
static void scenario(int nb, int nmet, size_t maxn, int K)
{
    struct ga_policy pol[NPOL];
    for (int i = 0; i < NPOL; i++)
        random_policy(&pol[i]);
    int threads[8];
    for (int i = 0; i < nb; i++)
        threads[i] = (int)rnd_in(1, 2);
    struct ga_engine *s = engine(nb, threads), *p = engine(nb, threads);
    for (int m = 0; m < nmet; m++) {
        CHECK_INT(ga_engine_metric_add(s, (uint32_t)m, &pol[m % NPOL]), 0);
        CHECK_INT(ga_engine_metric_add(p, (uint32_t)m, &pol[m % NPOL]), 0);
    }
    struct bat *b = calloc((size_t)K, sizeof *b);
    struct ga_result *want = calloc((size_t)K, sizeof *want), r[2] = { { 0 } };
    int64_t now = rnd_in(1600000000, 1700000000) * SEC;
    for (int k = 0; k < K; k++, now += rnd_in(1, 600) * SEC)
        bat_make(&b[k], nmet, maxn, now);
    for (int k = 0; k <= K; k++) {
        if (k < K) {
            CHECK_INT(ga_engine_feed(s, &b[k].pts, &want[k]), 0);
            ga_result_reset(&r[k % 2]);
            CHECK_INT(ga_engine_feed_start(p, &b[k].pts, &r[k % 2]), 0);
            churn(s, p, k, nmet, pol);   /* while batch k (and k - 1) may be in flight */
        }
        if (k > 0) {
            CHECK_INT(ga_engine_feed_wait(p), 0);
            same(&r[(k - 1) % 2], &want[k - 1]);
        }
    }
    CHECK_INT(ga_engine_feed_wait(p), GA_ENOENT);
    struct ga_engine_stats a, c;
    ga_engine_get_stats(s, &a);
    ga_engine_get_stats(p, &c);
    CHECK(memcmp(&a, &c, sizeof a) == 0);
    for (uint32_t id = 0; id < (uint32_t)nmet; id++) {
        struct ga_metric_stats ma, mc;
        int rc = ga_engine_metric_stats(s, id, &ma);
        CHECK_INT(ga_engine_metric_stats(p, id, &mc), rc);
        if (rc == 0 && memcmp(&ma, &mc, sizeof ma) != 0)
            harness_fail(__FILE__, __LINE__, "metric %u: late counts differ", id);
    }
    for (int k = 0; k < K; k++) {
        bat_free(&b[k]);
        ga_result_free(&want[k]);
    }
    free(b);
    free(want);
    ga_result_free(&r[0]);
    ga_result_free(&r[1]);
    ga_engine_close(s);
    ga_engine_close(p);
}

static void test_same_as_feed(void)
{
    rows_compared = batches_compared = 0;
    static const int nbs[] = { 1, 2, 3, 5 };
    for (int i = 0; i < 24; i++)
        scenario(nbs[i % 4], (int)rnd_in(1, 200), (size_t)rnd_in(1, 4000), (int)rnd_in(2, 9));
    CHECK(rows_compared > 20000);            /* the comparisons compared something */
    CHECK(batches_compared >= 24 * 2);
}

/* Big batches: the split on several threads and the appends on several
 * threads, both while the other batch is being fed. */
static void test_big_batches(void)
{
    rows_compared = 0;
    scenario(3, 3000, 300000, 4);
    CHECK(rows_compared > 100000);
}

static void test_contract(void)
{
    int th[2] = { 1, 1 };
    struct ga_engine *e = engine(2, th);
    struct ga_policy pol;
    random_policy(&pol);
    for (uint32_t m = 0; m < 10; m++)
        CHECK_INT(ga_engine_metric_add(e, m, &pol), 0);
    struct bat b;
    do
        bat_make(&b, 10, 500, 1700000000 * SEC);
    while (b.pts.n == 0 && (bat_free(&b), 1));
    struct ga_result r[3] = { { 0 } };
    CHECK_INT(ga_engine_feed_wait(e), GA_ENOENT);
    CHECK_INT(ga_engine_feed_start(e, &b.pts, &r[0]), 0);
    CHECK_INT(ga_engine_feed_start(e, &b.pts, &r[0]), GA_EINVAL);   /* r[0] is in flight */
    CHECK_INT(ga_engine_feed(e, &b.pts, &r[2]), GA_EBUSY);
    CHECK_INT(ga_engine_feed_start(e, &b.pts, &r[1]), 0);
    CHECK_INT(ga_engine_feed_start(e, &b.pts, &r[2]), GA_EBUSY);    /* two in flight */
    CHECK_INT(ga_engine_feed_wait(e), 0);
    CHECK_INT(ga_engine_feed_wait(e), 0);
    CHECK_INT(ga_engine_feed_wait(e), GA_ENOENT);
    CHECK_INT(ga_engine_feed(e, &b.pts, &r[2]), 0);
    CHECK_INT(ga_engine_feed_start(e, &b.pts, &r[0]), 0);
    CHECK_INT(ga_engine_feed_start(e, &b.pts, &r[1]), 0);
    ga_engine_close(e);                      /* two never waited for: dropped */
    for (int i = 0; i < 3; i++)
        ga_result_free(&r[i]);
    bat_free(&b);
}

void run_tests(void)
{
    ga_log_set_level(GA_LOG_ERROR + 1);
    RUN(test_same_as_feed);
    RUN(test_big_batches);
    RUN(test_contract);
}
