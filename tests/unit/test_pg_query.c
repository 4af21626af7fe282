/* test_pg_query.c — read side against a real private PostgreSQL: the
 * query API returns what was written (bit-exact), with clear errors; the
 * Grafana view returns the same rows; metrics list with counters; the
 * start-up load restores metrics, policies, checkpoint and windows. */
#include <stdlib.h>
#include <string.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/policy.h"
#include "proto/ga_err.h"
#include "storage/pg_load.h"
#include "storage/pg_query.h"
#include "storage/pg_schema.h"
#include "storage/pg_writer.h"
#include "tests/unit/harness.h"
#include "tests/unit/test_pg_env.h"

#define NM 9
#define NAGG 6000

static struct pgenv env;
static uint64_t seed;
static struct ga_policy nano;
static const struct ga_policy *pols[3];
static char names[NM][32];
static struct ga_agg *want;          /* what the read side returns, sorted by key */
static size_t nwant;
static struct ga_window wins[NM];

/* Keep of each series (want is sorted by series, then ts) what the read
 * side returns: the buckets newer than its newest minus the archive's
 * timespan (docs/SEMANTICS.md "Timespan"). */
static size_t truncate_series(struct ga_agg *a, size_t n)
{
    size_t out = 0;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && a[j].metric == a[i].metric && a[j].granularity_ns == a[i].granularity_ns &&
                    a[j].method == a[i].method;
             j++)
            ;
        const struct ga_policy *p = pols[a[i].metric % 3];
        int64_t span = 0;
        for (int d = 0; d < p->ndefs; d++)
            if (p->defs[d].granularity_ns == a[i].granularity_ns)
                span = p->defs[d].timespan_ns;
        for (size_t k = i; k < j; k++)
            if (span == 0 || a[k].ts > a[j - 1].ts - span)
                a[out++] = a[k];
    }
    return out;
}

static void populate(void)
{
    uint64_t s = seed;
    struct pg_writer_metric_def defs[NM];
    struct pg_writer_count counts[NM];
    struct pg_writer_window pw[NM];
    int64_t today = ga_now_real_ns() / PG_SCHEMA_DAY_NS;
    for (int i = 0; i < NM; i++) {
        snprintf(names[i], sizeof names[i], "host%d.cpu", i);
        defs[i] = (struct pg_writer_metric_def){ (uint32_t)i, names[i], pols[i % 3] };
        counts[i] = (struct pg_writer_count){ (uint32_t)i, 1000 + (uint64_t)i };
        size_t n = (size_t)(rnd_next(&s) % 500);
        wins[i].n = n;
        wins[i].ts = malloc((n + 1) * 8);
        wins[i].value = malloc((n + 1) * 8);
        int64_t t = today * PG_SCHEMA_DAY_NS;
        for (size_t k = 0; k < n; k++) {
            t += 1 + (int64_t)(rnd_next(&s) % 5000000000ULL);
            wins[i].ts[k] = t;
            wins[i].value[k] = rnd_value(&s);
        }
        pw[i] = (struct pg_writer_window){ .metric = (uint32_t)i, .window = &wins[i] };
    }
    struct ga_agg *all = malloc(NAGG * sizeof *all);
    for (int k = 0; k < NAGG; k++) {
        uint32_t m = (uint32_t)(rnd_next(&s) % NM);
        all[k] = rnd_agg(&s, m, pols[m % 3], today - 2, 3);
    }
    nwant = aggs_expected(all, NAGG, &want);
    nwant = truncate_series(want, nwant);
    struct pg_writer *w;
    struct pg_writer_opts o = { .conninfo = env.conninfo, .flush_rows = 100000, .flush_interval_ms = 100,
                          .retry_initial_ms = 10, .retry_max_ms = 100 };
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_unit u = { .aggs = all, .naggs = NAGG, .defs = defs, .ndefs = NM,
                          .counts = counts, .ncounts = NM, .windows = pw, .nwindows = NM,
                          .lsn = 4242, .window_lsn = 4200 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    free(all);
}

static void test_query_matches_written(void)
{
    struct pg_query *q;
    char err[256];
    CHECK_INT(pg_query_open(&q, env.conninfo, 2), 0);
    /* every series of the written data, compared row by row */
    size_t i = 0, series = 0, rows = 0;
    while (i < nwant) {
        size_t j = i;
        while (j < nwant && want[j].metric == want[i].metric &&
               want[j].granularity_ns == want[i].granularity_ns && want[j].method == want[i].method)
            j++;
        char mname[GA_METHOD_NAME_MAX];
        ga_method_name(want[i].method, mname);
        struct pg_query_point *p;
        size_t n;
        CHECK_INT(pg_query(q, names[want[i].metric], want[i].granularity_ns, mname, 0, INT64_MAX,
                            &p, &n, err, sizeof err), 0);
        CHECK_INT(n, j - i);
        for (size_t k = 0; k < n && k < j - i; k++) {
            CHECK_INT(p[k].ts, want[i + k].ts);
            CHECK(memcmp(&p[k].value, &want[i + k].value, 8) == 0);
        }
        /* a window [start, stop) in the middle */
        if (n >= 3) {
            struct pg_query_point *p2;
            size_t n2;
            CHECK_INT(pg_query(q, names[want[i].metric], want[i].granularity_ns, mname, p[1].ts,
                                p[n - 1].ts, &p2, &n2, err, sizeof err), 0);
            CHECK_INT(n2, n - 2);
            CHECK(n2 && p2[0].ts == p[1].ts && p2[n2 - 1].ts == p[n - 2].ts);
            free(p2);
        }
        free(p);
        rows += j - i;
        series++;
        i = j;
    }
    CHECK(series > 50);
    CHECK_INT(rows, nwant);
    pg_query_close(q);
}

static void test_query_errors(void)
{
    struct pg_query *q;
    char err[256] = "";
    struct pg_query_point *p;
    size_t n;
    CHECK_INT(pg_query_open(&q, env.conninfo, 1), 0);
    int64_t g = pols[0]->defs[0].granularity_ns;
    CHECK_INT(pg_query(q, "no.such.metric", g, "mean", 0, 1, &p, &n, err, sizeof err), GA_ENOENT);
    CHECK_CONTAINS(err, "unknown metric 'no.such.metric'");
    CHECK_INT(pg_query(q, names[0], g, "avg", 0, 1, &p, &n, err, sizeof err), GA_EINVAL);
    CHECK_CONTAINS(err, "unknown method 'avg'");
    CHECK_INT(pg_query(q, names[0], g, "rate:median", 0, 1, &p, &n, err, sizeof err), GA_EINVAL);
    CHECK_CONTAINS(err, "method 'rate:median' is not in policy 'low'");
    CHECK_INT(pg_query(q, names[0], 7000000000LL, "mean", 0, 1, &p, &n, err, sizeof err), GA_EINVAL);
    CHECK_CONTAINS(err, "granularity 7s is not in policy 'low'");
    CHECK_CONTAINS(err, "300s");
    CHECK_INT(pg_query(q, names[2], 2, "mean", 0, 1, &p, &n, err, sizeof err), GA_EINVAL);
    CHECK_CONTAINS(err, "granularity 2ns is not in policy 'nano'");
    CHECK_INT(pg_query(q, names[0], g, "mean", 5, 1, &p, &n, err, sizeof err), GA_EINVAL);
    /* a valid series with nothing in range: zero rows, no error */
    CHECK_INT(pg_query(q, names[0], g, "mean", 0, 1, &p, &n, err, sizeof err), 0);
    CHECK_INT(n, 0);
    CHECK(p == NULL);
    pg_query_close(q);
    /* an unreachable server: GA_EIO with libpq's reason */
    CHECK_INT(pg_query_open(&q, "host=/nonexistent-gpuagg connect_timeout=1", 1), 0);
    CHECK_INT(pg_query(q, names[0], g, "mean", 0, 1, &p, &n, err, sizeof err), GA_EIO);
    CHECK_CONTAINS(err, "nonexistent-gpuagg");
    pg_query_close(q);
}

static void test_metrics_list(void)
{
    struct pg_query *q;
    char err[256];
    struct pg_query_metric *m;
    size_t n;
    CHECK_INT(pg_query_open(&q, env.conninfo, 1), 0);
    CHECK_INT(pg_query_metrics(q, &m, &n, err, sizeof err), 0);
    CHECK_INT(n, NM);
    for (size_t i = 0; i < n; i++) {
        CHECK_STR(m[i].name, names[i]);                /* host0..host8 sort as written */
        CHECK_STR(m[i].policy, pols[i % 3]->name);
        CHECK_INT(m[i].points, 1000 + i);
        CHECK_INT(m[i].id, i);
    }
    pg_query_metrics_free(m, n);
    pg_query_close(q);
}

static void test_grafana_view_matches_query(void)
{
    PGconn *c = pgenv_connect(&env);
    struct pg_query *q;
    char err[256];
    CHECK_INT(pg_query_open(&q, env.conninfo, 1), 0);
    int checked = 0;
    for (uint32_t mi = 0; mi < NM; mi += 2) {
        const struct ga_policy *p = pols[mi % 3];
        for (int d = 0; d < p->ndefs; d++) {
            int64_t g = p->defs[d].granularity_ns;
            char mname[GA_METHOD_NAME_MAX];
            ga_method_name(p->methods[0], mname);
            struct pg_query_point *pts;
            size_t n;
            CHECK_INT(pg_query(q, names[mi], g, mname, 0, INT64_MAX, &pts, &n, err, sizeof err), 0);
            char gs[32];
            snprintf(gs, sizeof gs, "%.17g", (double)g / 1e9);
            const char *params[] = { names[mi], mname, gs };
            /* the documented example query's shape */
            PGresult *r = PQexecParams(c,
                "SELECT gpuagg_ns(time), value, ts_ns FROM gpuagg_measures "
                "WHERE metric = $1 AND method = $2 AND granularity_s = $3::float8 "
                "AND time >= '1970-01-01' ORDER BY time, ts_ns", 3, NULL, params, NULL, NULL, 1);
            CHECK_INT(PQresultStatus(r), PGRES_TUPLES_OK);
            CHECK_INT(PQntuples(r), n);
            for (int k = 0; k < PQntuples(r) && (size_t)k < n; k++) {
                int64_t t_us = pg_util_get_i64(PQgetvalue(r, k, 0));
                double v = pg_util_get_f64(PQgetvalue(r, k, 1));
                CHECK_INT(t_us, pts[k].ts / 1000 * 1000);      /* timestamptz: microseconds */
                CHECK_INT(pg_util_get_i64(PQgetvalue(r, k, 2)), pts[k].ts);   /* ts_ns: exact */
                CHECK(memcmp(&v, &pts[k].value, 8) == 0);
                checked++;
            }
            PQclear(r);
            free(pts);
        }
    }
    CHECK(checked > 100);
    pg_query_close(q);
    PQfinish(c);
}

static int got_window(void *ctx, uint32_t metric, uint64_t lsn, const struct ga_window *w,
                      const struct pg_load_stored *stored)
{
    CHECK_INT(stored->tail_bytes, 0);
    CHECK_INT(stored->snapshot_points, w->n);
    int *ok = ctx;
    CHECK_INT(lsn, 4200);
    CHECK(metric < NM);
    if (metric >= NM)
        return GA_EINVAL;
    CHECK_INT(w->n, wins[metric].n);
    if (w->n == wins[metric].n && w->n) {
        CHECK(memcmp(w->ts, wins[metric].ts, w->n * 8) == 0);
        CHECK(memcmp(w->value, wins[metric].value, w->n * 8) == 0);
    }
    (*ok)++;
    return 0;
}

static int stop_at_first(void *ctx, uint32_t metric, uint64_t lsn, const struct ga_window *w,
                         const struct pg_load_stored *stored)
{
    (void)ctx, (void)metric, (void)lsn, (void)w, (void)stored;
    return GA_ENOSPC;
}

static void test_load_at_start(void)
{
    struct pg_load_state s;
    char err[256];
    int nwin = 0;
    CHECK_INT(pg_load(env.conninfo, &s, got_window, &nwin, err, sizeof err), 0);
    CHECK_INT(s.committed_lsn, 4242);
    CHECK_INT(s.window_lsn, 4200);
    CHECK_INT(nwin, NM);
    CHECK_INT(s.nwindows, NM);
    CHECK_INT(s.nmetrics, NM);
    CHECK_INT(s.npolicies, 3);
    for (size_t i = 0; i < s.nmetrics; i++) {
        const struct ga_policy *orig = pols[i % 3], *p = s.metrics[i].policy;
        CHECK_INT(s.metrics[i].id, i);
        CHECK_STR(s.metrics[i].name, names[i]);
        CHECK_INT(s.metrics[i].points, 1000 + i);
        CHECK_STR(p->name, orig->name);
        CHECK_INT(p->back_window, orig->back_window);
        CHECK_INT(p->ndefs, orig->ndefs);
        CHECK(memcmp(p->defs, orig->defs, sizeof p->defs[0] * (size_t)p->ndefs) == 0);
        CHECK_INT(p->nmethods, orig->nmethods);
        CHECK(memcmp(p->methods, orig->methods, sizeof p->methods[0] * (size_t)p->nmethods) == 0);
    }
    pg_load_free(&s);
    CHECK_INT(pg_load(env.conninfo, &s, stop_at_first, NULL, err, sizeof err), GA_ENOSPC);
    CHECK_INT(s.nmetrics, 0);
    CHECK_INT(pg_load("host=/nonexistent-gpuagg connect_timeout=1", &s, NULL, NULL, err,
                       sizeof err), GA_EIO);
    /* a damaged snapshot is named */
    PGconn *c = pgenv_connect(&env);
    CHECK_INT(pg_cmd(c, "UPDATE metric_windows SET snapshot = '\\x0900' WHERE metric = 4"), 0);
    CHECK_INT(pg_load(env.conninfo, &s, got_window, &nwin, err, sizeof err), GA_ECORRUPT);
    CHECK_CONTAINS(err, "metric 4");
    PQfinish(c);
}

void run_tests(void)
{
    PGENV_SKIP_IF_NO_PG("test_pg_query");
    seed = rnd_seed();
    printf("seed=%llu (GA_TEST_SEED to repeat)\n", (unsigned long long)seed);
    nano_policy(&nano);
    pols[0] = ga_policy_builtin("low");
    pols[1] = ga_policy_builtin("high");
    pols[2] = &nano;
    int ok = pgenv_start(&env) == 0;
    CHECK(ok);
    if (!ok)
        return;
    populate();
    RUN(test_query_matches_written);
    RUN(test_query_errors);
    RUN(test_metrics_list);
    RUN(test_grafana_view_matches_query);
    RUN(test_load_at_start);
    pgenv_destroy(&env);
    free(want);
    for (int i = 0; i < NM; i++) {
        free(wins[i].ts);
        free(wins[i].value);
    }
}
