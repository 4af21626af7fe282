/* test_pg_faults.c — the writer when things go wrong, against a real
 * private PostgreSQL: its backend killed mid-transaction, the server
 * stopped between submit and commit, a partition dropped behind its back,
 * a stop that cannot commit followed by a journal replay.  After each:
 * rows, counters and checkpoint agree; nothing lost, nothing doubled. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/policy.h"
#include "proto/ga_err.h"
#include "storage/pg_load.h"
#include "storage/pg_schema.h"
#include "storage/pg_writer.h"
#include "tests/unit/harness.h"
#include "tests/unit/test_pg_env.h"

#define NM 12
#define PER 800

static struct pgenv env;
static uint64_t seed;
static const struct ga_policy *pol;
static char names[NM][32];
static struct pg_writer_metric_def defs[NM];

/* Unit i of a deterministic stream: PER random aggs over a small key space
 * (so later units overwrite earlier keys), 3 late points, a counter per
 * metric, lsn 10 * (i + 1); unit 0 carries the definitions. */
struct unit {
    struct ga_agg aggs[PER];
    struct ga_late late[3];
    struct pg_writer_count counts[NM];
    struct pg_writer_unit u;
};

static void make_unit(struct unit *x, int i)
{
    uint64_t s = seed + (uint64_t)i * 7919;
    int64_t today = ga_now_real_ns() / PG_SCHEMA_DAY_NS;
    for (int k = 0; k < PER; k++) {
        x->aggs[k] = rnd_agg(&s, (uint32_t)(rnd_next(&s) % NM), pol, today - 1, 2);
        x->aggs[k].ts = x->aggs[k].ts / (3600LL * 1000000000) * (3600LL * 1000000000);
    }
    for (int k = 0; k < 3; k++)
        x->late[k] = (struct ga_late){ (uint32_t)k, 1, (int64_t)(rnd_next(&s) % 100000) + i * 100000,
                                       rnd_value(&s) };
    for (int k = 0; k < NM; k++)
        x->counts[k] = (struct pg_writer_count){ (uint32_t)k, (uint64_t)(i + 1) * 10 + (uint64_t)k };
    x->u = (struct pg_writer_unit){ .aggs = x->aggs, .naggs = PER, .late = x->late, .nlate = 3,
                              .counts = x->counts, .ncounts = NM, .lsn = (uint64_t)(i + 1) * 10 };
    if (i == 0) {
        x->u.defs = defs;
        x->u.ndefs = NM;
    }
}

/* Check the database holds exactly units 0..n-1. */
static void check_db(int n, const char *when)
{
    struct unit *x = malloc(sizeof *x);
    struct ga_agg *all = malloc((size_t)n * PER * sizeof *all), *want, *got;
    long long points = 0;
    for (int i = 0; i < n; i++) {
        make_unit(x, i);
        memcpy(all + (size_t)i * PER, x->aggs, sizeof x->aggs);
        for (int k = 0; k < NM; k++)
            points += (long long)x->counts[k].points;
    }
    size_t nw = aggs_expected(all, (size_t)n * PER, &want);
    PGconn *c = pgenv_connect(&env);
    size_t ng = pg_read_aggs(c, &got);
    fprintf(stderr, "check %s: %zu rows\n", when, ng);
    CHECK_INT(ng, nw);
    CHECK_INT(aggs_diff(got, ng, want, nw), 0);
    CHECK_INT(pg_scalar(c, "SELECT sum(points) FROM metrics"), points);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM late_points"), 3 * n);
    CHECK_INT(pg_scalar(c, "SELECT committed_lsn FROM checkpoints"), 10 * n);
    PQfinish(c);
    free(want);
    free(got);
    free(all);
    free(x);
}

static void reset_db(void)
{
    PGconn *c = pgenv_connect(&env);
    pg_cmd(c, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    PQfinish(c);
}

static struct pg_writer_opts opts(uint64_t committed)
{
    struct pg_writer_opts o = { 0 };
    o.conninfo = env.conninfo;
    o.flush_rows = 100000;
    o.flush_interval_ms = 600000;                 /* only explicit flushes write */
    o.retry_initial_ms = 20;
    o.retry_max_ms = 200;
    o.committed_lsn = committed;
    return o;
}

static void submit(struct pg_writer *w, int i)
{
    struct unit *x = malloc(sizeof *x);
    make_unit(x, i);
    CHECK_INT(pg_writer_submit(w, &x->u), 0);
    free(x);
}

struct done {
    pthread_mutex_t mu;
    int rc;
};

static void flushed(void *ctx, int rc, uint64_t lsn)
{
    struct done *d = ctx;
    pthread_mutex_lock(&d->mu);
    d->rc = rc == 0 ? (int)lsn : -1;
    pthread_mutex_unlock(&d->mu);
}

static int wait_done(struct done *d, int ms)
{
    for (int t = 0; t < ms; t += 10) {
        pthread_mutex_lock(&d->mu);
        int rc = d->rc;
        pthread_mutex_unlock(&d->mu);
        if (rc != -2)
            return rc;
        usleep(10000);
    }
    return -2;
}

static void test_backend_killed_mid_transaction(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(0);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    submit(w, 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    /* Hold the checkpoint row: the writer's next transaction does all its
     * inserts and then waits on the lock, half-way. */
    PGconn *locker = pgenv_connect(&env), *c = pgenv_connect(&env);
    CHECK_INT(pg_cmd(locker, "BEGIN; LOCK TABLE partitions IN ACCESS EXCLUSIVE MODE"), 0);
    submit(w, 1);
    struct done d = { PTHREAD_MUTEX_INITIALIZER, -2 };
    CHECK_INT(pg_writer_flush(w, flushed, &d), 0);
    long long waiting = 0;
    for (int i = 0; i < 500 && waiting != 1; i++) {
        usleep(10000);
        waiting = pg_scalar(c, "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                               "'gpuaggd-writer' AND wait_event_type = 'Lock'");
    }
    CHECK_INT(waiting, 1);
    /* its rows are in, uncommitted: invisible to us */
    long long before = pg_scalar(c, "SELECT count(*) FROM aggregates");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                           "'gpuaggd-writer' AND state = 'active' AND query LIKE 'UPDATE partitions SET committed_lsn%'"), 1);
    CHECK_INT(pg_scalar(c, "WITH w AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE "
                           "application_name = 'gpuaggd-writer') "
                           "SELECT count(*) FROM w WHERE pg_terminate_backend(pid)"), 1);
    CHECK_INT(pg_cmd(locker, "ROLLBACK"), 0);
    CHECK_INT(wait_done(&d, 20000), 20);
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    CHECK(st.retries >= 1);
    CHECK(st.connects >= 2);
    CHECK_INT(st.committed_lsn, 20);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    check_db(2, "after kill");
    CHECK(pg_scalar(c, "SELECT count(*) FROM aggregates") > before);
    PQfinish(c);
    PQfinish(locker);
}

static void test_server_stopped_before_commit(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(0);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    submit(w, 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    submit(w, 1);
    CHECK_INT(pgenv_stop_server(&env), 0);
    struct done d = { PTHREAD_MUTEX_INITIALIZER, -2 };
    CHECK_INT(pg_writer_flush(w, flushed, &d), 0);
    struct pg_writer_status st;
    for (int i = 0; i < 500; i++) {
        pg_writer_get_status(w, &st);
        if (st.retries >= 2 && st.state != PG_CONN_CONNECTED)
            break;
        usleep(10000);
    }
    CHECK(st.state == PG_CONN_DOWN || st.state == PG_CONN_CONNECTING);
    CHECK(st.last_error[0] != '\0');
    CHECK_INT(st.committed_lsn, 10);
    CHECK_INT(st.lag_lsn, 10);
    submit(w, 2);                                 /* still accepted while down */
    CHECK_INT(wait_done(&d, 300), -2);            /* not committed while down */
    CHECK_INT(pgenv_restart_server(&env), 0);
    CHECK_INT(wait_done(&d, 20000), 20);          /* what was pending at the request */
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.state, PG_CONN_CONNECTED);
    CHECK_INT(st.last_error[0], '\0');
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    check_db(3, "after restart");
}

static void test_partition_dropped_behind_back(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(0);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    submit(w, 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    /* Drop every partition (as a concurrent retention might): the writer's
     * cache says they exist, the first attempt fails inside the pipeline,
     * rolls back, and the retry creates them again. */
    PGconn *c = pgenv_connect(&env);
    PGresult *r = PQexec(c, "SELECT name FROM bucket_partitions");
    for (int i = 0; i < PQntuples(r); i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "DROP TABLE %s", PQgetvalue(r, i, 0));
        CHECK_INT(pg_cmd(c, sql), 0);
    }
    PQclear(r);
    CHECK_INT(pg_cmd(c, "DELETE FROM bucket_partitions"), 0);
    PQfinish(c);
    struct pg_writer_status st0, st;
    pg_writer_get_status(w, &st0);
    /* the next batch lands in the dropped days */
    submit(w, 1);
    CHECK_INT(pg_writer_flush_sync(w, 20000), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.retries, st0.retries + 1);
    CHECK_STR(st.last_error, "");
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    c = pgenv_connect(&env);
    CHECK_INT(pg_scalar(c, "SELECT committed_lsn FROM checkpoints"), 20);
    CHECK(pg_scalar(c, "SELECT count(*) FROM aggregates") > 0);
    PQfinish(c);
}

static int count_windows(void *ctx, uint32_t metric, uint64_t lsn, const struct ga_window *win,
                         const struct pg_load_stored *stored)
{
    (void)stored;
    (void)metric;
    (void)lsn;
    (void)win;
    (*(int *)ctx)++;
    return 0;
}

static void test_stop_timeout_then_replay(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(0);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    submit(w, 0);
    submit(w, 1);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    CHECK_INT(pgenv_stop_server(&env), 0);
    submit(w, 2);
    submit(w, 3);
    /* "crash": the writer cannot commit units 2 and 3 and gives up */
    CHECK_INT(pg_writer_stop(w, 300), GA_ETIMEDOUT);
    CHECK_INT(pgenv_restart_server(&env), 0);
    struct pg_load_state ls;
    char err[256];
    int nwin = 0;
    CHECK_INT(pg_load(env.conninfo, &ls, count_windows, &nwin, err, sizeof err), 0);
    CHECK_INT(ls.committed_lsn, 20);
    CHECK_INT(ls.nmetrics, NM);
    /* the daemon replays the journal from the window snapshot LSN (0 here):
     * every unit again; those at or below the checkpoint must not double */
    o = opts(ls.committed_lsn);
    pg_load_free(&ls);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    for (int i = 0; i < 4; i++)
        submit(w, i);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    CHECK_INT(st.units_skipped, 2);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    check_db(4, "after replay");
}

void run_tests(void)
{
    PGENV_SKIP_IF_NO_PG("test_pg_faults");
    seed = rnd_seed();
    printf("seed=%llu (GA_TEST_SEED to repeat)\n", (unsigned long long)seed);
    pol = ga_policy_builtin("medium");
    for (int i = 0; i < NM; i++) {
        snprintf(names[i], sizeof names[i], "fault.%d", i);
        defs[i] = (struct pg_writer_metric_def){ (uint32_t)i, names[i], pol };
    }
    int ok = pgenv_start(&env) == 0;
    CHECK(ok);
    if (!ok)
        return;
    RUN(test_backend_killed_mid_transaction);
    RUN(test_server_stopped_before_commit);
    RUN(test_partition_dropped_behind_back);
    RUN(test_stop_timeout_then_replay);
    pgenv_destroy(&env);
}
