/* test_pg_writer.c — the storage writer against a real private PostgreSQL:
 * random round trip across partitions (bit-exact; half the units as wide
 * records), coalescing, late points,
 * metric definitions and counters, checkpoint and commit callback, flush
 * requests, backpressure, replay skipping, graceful stop (several writers
 * that cannot commit give up against one deadline), the fresh-bucket
 * COPY path and its fallback, flushes of new metrics without the policy
 * row's lock, window-set counts applied by key. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/policy.h"
#include "proto/ga_err.h"
#include "storage/pg_batch.h"
#include "storage/pg_load.h"
#include "storage/pg_schema.h"
#include "storage/pg_writer.h"
#include "storage/pg_writers.h"
#include "tests/unit/harness.h"
#include "tests/unit/test_pg_env.h"
#include "tests/unit/wide_pack.h"

static struct pgenv env;
static int env_ok;
static uint64_t seed;
static struct ga_policy nano;
static const struct ga_policy *pols[3];

static void reset_db(void)
{
    PGconn *c = pgenv_connect(&env);
    pg_cmd(c, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    PQfinish(c);
}

struct commits {
    pthread_mutex_t mu;
    int calls;
    uint64_t lsn, wlsn;
};

static void on_commit(void *ctx, uint64_t lsn, uint64_t wlsn)
{
    struct commits *k = ctx;
    pthread_mutex_lock(&k->mu);
    k->calls++;
    k->lsn = lsn;
    k->wlsn = wlsn;
    pthread_mutex_unlock(&k->mu);
}

static struct pg_writer_opts opts(struct commits *k)
{
    struct pg_writer_opts o = { 0 };
    o.conninfo = env.conninfo;
    o.flush_rows = 5000;
    o.flush_interval_ms = 200;
    o.retry_initial_ms = 20;
    o.retry_max_ms = 200;
    o.on_commit = k ? on_commit : NULL;
    o.ctx = k;
    return o;
}

/* Definitions for metrics 0..n-1, policy by id % 3, names "m<id>/é" (UTF-8). */
static void make_defs(struct pg_writer_metric_def *d, char (*names)[32], int n)
{
    for (int i = 0; i < n; i++) {
        snprintf(names[i], 32, "m%d/\xc3\xa9", i);
        d[i] = (struct pg_writer_metric_def){ (uint32_t)i, names[i], pols[i % 3] };
    }
}

static void test_round_trip_random(void)
{
    reset_db();
    uint64_t s = seed;
    enum { NM = 40, NUNITS = 30, PER = 700 };
    struct pg_writer_metric_def defs[NM];
    char names[NM][32];
    make_defs(defs, names, NM);
    struct commits k = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
    struct pg_writer *w;
    struct pg_writer_opts o = opts(&k);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    int64_t today = ga_now_real_ns() / PG_SCHEMA_DAY_NS;
    struct ga_agg *all = malloc(NUNITS * PER * sizeof *all);
    struct ga_agg *packed = malloc(2 * PER * sizeof *packed);
    size_t nall = 0, nwide = 0;
    for (int u = 0; u < NUNITS; u++) {
        struct ga_agg *a = all + nall;
        for (int i = 0; i < PER; i++) {
            uint32_t m = (uint32_t)(rnd_next(&s) % NM);
            a[i] = rnd_agg(&s, m, pols[m % 3], today - 3, 5);
            /* odd units: every method of a bucket in turn, as the engine
             * writes them, sent as wide records (below) */
            const struct ga_policy *p = pols[m % 3];
            for (int j = 0; u % 2 && j < p->nmethods && i + 1 < PER; j++, i++) {
                a[i + 1] = a[i];
                a[i + 1].method = p->methods[j];
                a[i + 1].value = rnd_value(&s);
            }
            /* re-send an earlier key now and then: must coalesce */
            if (nall && i % 7 == 3) {
                struct ga_agg again = all[rnd_next(&s) % nall];
                again.value = rnd_value(&s);
                a[i] = again;
            }
        }
        struct pg_writer_unit unit = { .aggs = a, .naggs = PER, .lsn = 1000 + (uint64_t)u * 10 };
        if (u % 2) {
            unit.naggs = wide_pack(a, PER, packed);
            unit.aggs = packed;
            CHECK(unit.naggs < PER);
            nwide += unit.naggs;
        }
        if (u == 0) {
            unit.defs = defs;
            unit.ndefs = NM;
        }
        CHECK_INT(pg_writer_submit(w, &unit), 0);
        nall += PER;
    }
    CHECK_INT(pg_writer_flush_sync(w, 30000), 0);
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    CHECK_INT(st.committed_lsn, 1000 + (NUNITS - 1) * 10);
    CHECK_INT(st.state, PG_CONN_CONNECTED);
    CHECK(st.transactions >= 1);
    CHECK_INT(st.pending_rows, 0);
    CHECK(st.lag_s == 0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    CHECK(k.calls >= 1);
    CHECK_INT(k.lsn, 1000 + (NUNITS - 1) * 10);

    struct ga_agg *want, *got;
    size_t nw = aggs_expected(all, nall, &want);
    PGconn *c = pgenv_connect(&env);
    size_t ng = pg_read_aggs(c, &got);
    CHECK(nw > 10000);
    CHECK_INT(ng, nw);
    CHECK_INT(aggs_diff(got, ng, want, nw), 0);
    CHECK_INT(st.rows_committed >= nw, 1);
    CHECK(nwide > 0);
    /* the rows went to several daily partitions */
    CHECK(pg_scalar(c, "SELECT count(*) FROM bucket_partitions") >= 5);
    CHECK(pg_scalar(c, "SELECT count(DISTINCT tableoid) FROM buckets") >= 5);
    CHECK_INT(pg_scalar(c, "SELECT committed_lsn FROM checkpoints"), 1000 + (NUNITS - 1) * 10);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metrics"), NM);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metrics WHERE name LIKE 'm%/\xc3\xa9'"), NM);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM archive_policies"), 3);
    PQfinish(c);
    free(want);
    free(got);
    free(all);
    free(packed);
}

/* Submitted units are taken into the writer's batch (and coalesce there) on
 * its own thread: wait up to 5 s for pending_rows to reach want; returns
 * the last value seen. */
static uint64_t wait_pending_rows(struct pg_writer *w, uint64_t want)
{
    struct pg_writer_status st;
    for (int i = 0; i < 500; i++) {
        pg_writer_get_status(w, &st);
        if (st.pending_rows == want)
            break;
        usleep(10000);
    }
    return st.pending_rows;
}

static void test_coalesce_later_wins(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    o.flush_interval_ms = 60000;                /* only the explicit flush writes */
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_metric_def d = { 7, "coalesce.me", pols[2] };
    int64_t g = pols[2]->defs[0].granularity_ns;
    struct ga_agg a1[2] = { { 7, GA_M_MEAN, 0, g, 10 * g, 1.5 }, { 7, GA_M_MEAN, 0, g, 10 * g, 2.5 } };
    struct ga_agg a2[1] = { { 7, GA_M_MEAN, 0, g, 10 * g, -3.25 } };
    struct pg_writer_unit u1 = { .aggs = a1, .naggs = 2, .defs = &d, .ndefs = 1, .lsn = 5 };
    struct pg_writer_unit u2 = { .aggs = a2, .naggs = 1, .lsn = 6 };
    CHECK_INT(pg_writer_submit(w, &u1), 0);
    CHECK_INT(pg_writer_submit(w, &u2), 0);
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    CHECK(st.pending_rows >= 1 && st.pending_rows <= 3);   /* at most, until the writer takes them */
    CHECK_INT(wait_pending_rows(w, 1), 1);       /* three submissions, one key */
    pg_writer_get_status(w, &st);
    CHECK_INT(st.pending_units, 2);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    PGconn *c = pgenv_connect(&env);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), 1);
    CHECK_INT(pg_scalar(c, "SELECT (value * 100)::int FROM aggregates"), -325);
    /* a later flush with the same key updates the row in place */
    a2[0].value = 9.75;
    u2.lsn = 7;
    CHECK_INT(pg_writer_submit(w, &u2), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), 1);
    CHECK_INT(pg_scalar(c, "SELECT (value * 100)::int FROM aggregates"), 975);
    CHECK_INT(pg_scalar(c, "SELECT committed_lsn FROM checkpoints"), 7);
    PQfinish(c);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
}

/* While a transaction runs (held here at its checkpoint update by a lock
 * on partitions), the units that come meanwhile coalesce into the next
 * batch: 40 units rewriting the same 60 buckets are 60 pending rows, not
 * 2,400, and one transaction writes the last values. */
static void test_coalesce_while_writing(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    o.flush_interval_ms = 20;
    o.queue_max_rows = 200;                      /* 60 writing + 60 next: fits; 2,400 would not */
    CHECK_INT(pg_writer_start(&w, &o), 0);
    enum { K = 60, U = 40 };
    struct pg_writer_metric_def d = { 3, "coalesce.writing", pols[2] };
    int64_t g = pols[2]->defs[0].granularity_ns;
    int64_t t0 = ga_now_real_ns() / g * g;
    struct ga_agg a[K];
    for (int i = 0; i < K; i++)
        a[i] = (struct ga_agg){ 3, GA_M_MEAN, 0, g, t0 - (int64_t)i * g, 1.0 };
    struct pg_writer_unit u = { .aggs = a, .naggs = K, .defs = &d, .ndefs = 1, .lsn = 10 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    struct pg_writer_status st0, st;
    pg_writer_get_status(w, &st0);
    PGconn *lk = pgenv_connect(&env), *c = pgenv_connect(&env);
    CHECK_INT(pg_cmd(lk, "BEGIN; LOCK TABLE partitions IN ACCESS EXCLUSIVE MODE"), 0);
    for (int i = 0; i < K; i++)
        a[i].value = 2.0;
    u.defs = NULL;
    u.ndefs = 0;
    u.lsn = 20;
    CHECK_INT(pg_writer_submit(w, &u), 0);             /* written, then held at the lock */
    long long waiting = 0;
    for (int i = 0; i < 500 && !waiting; i++) {
        waiting = pg_scalar(c, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'");
        if (!waiting)
            usleep(10000);
    }
    CHECK_INT(waiting, 1);
    for (int k = 0; k < U; k++) {
        for (int i = 0; i < K; i++)
            a[i].value = 100.0 + k;
        u.lsn = 30 + (uint64_t)k;
        CHECK_INT(pg_writer_submit(w, &u), 0);        /* not EBUSY: each is merged as it comes */
        wait_pending_rows(w, 2 * K);
    }
    CHECK_INT(wait_pending_rows(w, 2 * K), 2 * K);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.busy_refusals, 0);
    CHECK_INT(st.transactions, st0.transactions);
    CHECK_INT(pg_cmd(lk, "ROLLBACK"), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.transactions, st0.transactions + 2);
    CHECK_INT(st.committed_lsn, 30 + U - 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates WHERE metric = 3"), K);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates WHERE metric = 3 AND value = 139"), K);
    PQfinish(c);
    PQfinish(lk);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
}

static void test_late_points_and_counters(void)
{
    reset_db();
    uint64_t s = seed ^ 77;
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_metric_def d[2] = { { 0, "late.a", pols[0] }, { 1, "late.b", pols[1] } };
    struct ga_late late[50];
    for (int i = 0; i < 50; i++) {
        late[i].metric = (uint32_t)(i % 3);      /* 2 is an unknown metric */
        late[i].reason = (uint32_t)(1 + i % 4);
        late[i].ts = (int64_t)(rnd_next(&s) % 1000000000000ULL) - (i % 4 == 1 ? 2000000000000LL : 0);
        late[i].value = i % 4 == 2 ? NAN : rnd_value(&s);
    }
    struct pg_writer_count cnt[2] = { { 0, 17 }, { 1, 5 } };
    struct pg_writer_unit u = { .late = late, .nlate = 50, .defs = d, .ndefs = 2, .counts = cnt,
                          .ncounts = 2, .lsn = 100 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    cnt[0].points = 3;
    u.lsn = 200;
    u.nlate = 10;                                 /* the same 10 again: not duplicated */
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    PGconn *c = pgenv_connect(&env);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM late_points"), 50);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM late_points WHERE reason = 'window'"), 13);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM late_points WHERE reason = 'nonfinite' "
                           "AND value = 'NaN'"), 12);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM late_points WHERE reason = 'before_epoch' "
                           "AND ts < 0"), 13);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM late_points WHERE metric = 2"), 16);
    CHECK_INT(pg_scalar(c, "SELECT points FROM metrics WHERE name = 'late.a'"), 20);
    CHECK_INT(pg_scalar(c, "SELECT points FROM metrics WHERE name = 'late.b'"), 10);
    /* bit-exact values of the finite ones */
    PGresult *r = PQexecParams(c, "SELECT ts, value FROM late_points WHERE metric = 0 AND "
                                  "reason = 'window' ORDER BY ts", 0, NULL, NULL, NULL, NULL, 1);
    int found = 0;
    for (int i = 0; i < PQntuples(r); i++)
        for (int j = 0; j < 50; j++)
            if (late[j].metric == 0 && late[j].reason == 1 &&
                late[j].ts == pg_util_get_i64(PQgetvalue(r, i, 0))) {
                double v = pg_util_get_f64(PQgetvalue(r, i, 1));
                found += memcmp(&v, &late[j].value, 8) == 0;
            }
    CHECK(found >= 4);
    CHECK_INT(found, PQntuples(r));
    PQclear(r);
    PQfinish(c);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
}

static void flushed(void *ctx, int rc, uint64_t lsn)
{
    int *got = ctx;
    __atomic_store_n(got, rc == 0 ? (int)lsn : -1, __ATOMIC_RELEASE);
}

static void test_flush_request_and_stop(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    o.flush_interval_ms = 600000;
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_metric_def d = { 3, "flush.req", pols[1] };
    int64_t g = pols[1]->defs[0].granularity_ns;
    struct ga_agg a = { 3, pols[1]->methods[0], 0, g, 1234 * g, 42.5 };
    struct pg_writer_unit u = { .aggs = &a, .naggs = 1, .defs = &d, .ndefs = 1, .lsn = 77 };
    /* nothing pending: the callback runs at once */
    int got = -2;
    CHECK_INT(pg_writer_flush(w, flushed, &got), 0);
    CHECK_INT(got, 0);
    CHECK_INT(pg_writer_submit(w, &u), 0);
    got = -2;
    CHECK_INT(pg_writer_flush(w, flushed, &got), 0);
    for (int i = 0; i < 500 && __atomic_load_n(&got, __ATOMIC_ACQUIRE) == -2; i++)
        usleep(10000);
    CHECK_INT(__atomic_load_n(&got, __ATOMIC_ACQUIRE), 77);
    /* stop commits what is pending, even with a long flush interval */
    a.ts += g;
    u.lsn = 88;
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    PGconn *c = pgenv_connect(&env);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), 2);
    CHECK_INT(pg_scalar(c, "SELECT committed_lsn FROM checkpoints"), 88);
    PQfinish(c);
}

static void test_backpressure(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    o.conninfo = "host=/nonexistent-gpuagg dbname=x connect_timeout=1";   /* never connects */
    o.queue_max_rows = 100;
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct ga_agg a[60];
    for (int i = 0; i < 60; i++)
        a[i] = (struct ga_agg){ 1, GA_M_MEAN, 0, 1000, (int64_t)i * 1000, i + 1.0 };
    struct pg_writer_unit u = { .aggs = a, .naggs = 60, .lsn = 1 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    u.lsn = 2;
    u.naggs = 30;
    CHECK_INT(pg_writer_submit(w, &u), 0);              /* 60 + 30 <= 100; same keys: still 60 */
    CHECK_INT(wait_pending_rows(w, 60), 60);      /* once the writer has taken them */
    u.naggs = 60;
    for (int i = 0; i < 60; i++)
        a[i].ts += 60000;
    u.lsn = 3;
    CHECK_INT(pg_writer_submit(w, &u), GA_EBUSY);       /* 120 > 100 */
    u.lsn = 0;
    u.naggs = 40;
    CHECK_INT(pg_writer_submit(w, &u), 0);              /* exactly 100 */
    u.lsn = 1;
    CHECK_INT(pg_writer_submit(w, &u), GA_EINVAL);      /* LSN went backwards */
    struct pg_writer_status st;
    for (int i = 0; i < 300; i++) {
        pg_writer_get_status(w, &st);
        if (st.state == PG_CONN_DOWN)
            break;
        usleep(10000);
    }
    CHECK_INT(st.state, PG_CONN_DOWN);
    CHECK(st.last_error[0] != '\0');
    CHECK_INT(st.busy_refusals, 1);
    CHECK_INT(st.pending_rows, 100);
    CHECK_INT(st.lag_lsn, 2);                     /* LSN 2 the last taken (3 was refused) */
    CHECK_INT(st.lag_lsn, 2);
    CHECK(st.lag_s > 0);
    CHECK_INT(pg_writer_flush_sync(w, 100), GA_ETIMEDOUT);
    /* a stop that cannot commit gives up at its deadline */
    int64_t t0 = ga_now_mono_ns();
    CHECK_INT(pg_writer_stop(w, 300), GA_ETIMEDOUT);
    CHECK((ga_now_mono_ns() - t0) / 1000000 < 3000);
}

static int part_of_id(void *ctx, uint32_t metric)
{
    (void)ctx;
    return (int)(metric % GA_PARTITIONS);
}

static int never_stop(void *ctx)
{
    (void)ctx;
    return 0;
}

/* Writers that cannot commit (PostgreSQL down) stop against one deadline,
 * side by side: four of them give up after about timeout_ms, not four
 * times it (the daemon's SIGTERM bound counts on it). */
static void test_writers_stop_one_deadline(void)
{
    struct pg_writers *s;
    struct pg_writers_opts o = { .w = opts(NULL), .nwriters = 4, .partition_of = part_of_id };
    o.w.conninfo = "host=/nonexistent-gpuagg dbname=x connect_timeout=1";   /* never connects */
    CHECK_INT(pg_writers_start(&s, &o), 0);
    struct ga_agg a[4];
    for (int i = 0; i < 4; i++)       /* metrics 0..3: partitions 0..3, one to each writer */
        a[i] = (struct ga_agg){ (uint32_t)i, GA_M_MEAN, 0, 1000, 1000, i + 1.0 };
    struct pg_writer_unit u = { .aggs = a, .naggs = 4, .lsn = 1 };
    CHECK_INT(pg_writers_submit(s, &u, never_stop, NULL), 0);
    int64_t t0 = ga_now_mono_ns();
    CHECK_INT(pg_writers_stop(s, 400), GA_ETIMEDOUT);
    int64_t ms = (ga_now_mono_ns() - t0) / 1000000;
    if (ms >= 1000)
        harness_fail(__FILE__, __LINE__, "4 writers stopped in %lld ms, one deadline is 400",
                     (long long)ms);
}

/* A fresh journal is numbered from the clock (daemon.c): before the first
 * commit the lag counts from its first LSN (lsn_floor), not from 0. */
static void test_lag_counts_from_floor(void)
{
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    o.conninfo = "host=/nonexistent-gpuagg dbname=x connect_timeout=1";   /* never connects */
    uint64_t floor = (uint64_t)1 << 50;
    o.lsn_floor = floor;
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct ga_agg a = { 1, GA_M_MEAN, 0, 1000, 1000, 2.5 };
    struct pg_writer_unit u = { .aggs = &a, .naggs = 1, .lsn = floor + 777 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    CHECK_INT(st.committed_lsn, 0);
    CHECK_INT(st.lag_lsn, 777);
    pg_writer_stop(w, 100);
}

static void test_replay_skips_committed(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    o.committed_lsn = 500;                        /* as loaded at start */
    o.window_lsn = 400;
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_metric_def d = { 0, "replayed", pols[1] };
    int64_t g = pols[1]->defs[0].granularity_ns;
    struct ga_agg a = { 0, pols[1]->methods[0], 0, g, 50 * g, 1.0 };
    struct pg_writer_count cnt = { 0, 9 };
    int64_t wts[2] = { 50 * g, 50 * g + 1 };
    double wv[2] = { 1.0, 2.0 };
    struct ga_window win = { .n = 2, .ts = wts, .value = wv };
    struct pg_writer_window pw = { .metric = 0, .window = &win };
    /* a replayed unit below the checkpoint: only its definition stays */
    struct pg_writer_unit u = { .aggs = &a, .naggs = 1, .defs = &d, .ndefs = 1, .counts = &cnt,
                          .ncounts = 1, .windows = &pw, .nwindows = 1, .lsn = 450,
                          .window_lsn = 380 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    /* the first unit past it */
    a.value = 2.0;
    u.defs = NULL;
    u.ndefs = 0;
    u.lsn = 600;
    u.window_lsn = 600;
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    CHECK_INT(st.units_skipped, 1);
    PGconn *c = pgenv_connect(&env);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metrics"), 1);
    CHECK_INT(pg_scalar(c, "SELECT points FROM metrics"), 9);
    CHECK_INT(pg_scalar(c, "SELECT value FROM aggregates"), 2);
    CHECK_INT(pg_scalar(c, "SELECT lsn FROM metric_windows"), 600);
    CHECK_INT(pg_scalar(c, "SELECT window_lsn FROM checkpoints"), 600);
    CHECK_INT(pg_scalar(c, "SELECT committed_lsn FROM checkpoints"), 600);
    PQfinish(c);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
}

static struct pg_load_stored took;            /* take_window: what was stored for metric 0 */
static uint64_t took_lsn;                 /* and its position */

static int take_window(void *ctx, uint32_t metric, uint64_t lsn, const struct ga_window *w,
                       const struct pg_load_stored *stored)
{
    struct ga_window *out = ctx;
    if (metric != 0)
        return 0;
    took_lsn = lsn;
    out->n = w->n;
    out->ts = malloc((w->n + 1) * sizeof *out->ts);
    out->value = malloc((w->n + 1) * sizeof *out->value);
    memcpy(out->ts, w->ts, w->n * sizeof *out->ts);
    memcpy(out->value, w->value, w->n * sizeof *out->value);
    took = *stored;
    return 0;
}

/* A window saved whole, then tails (one unit each, two of them coalesced in
 * one batch): the load gives the window as it is now; a whole save drops
 * the tail rows. */
static void test_window_tails(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_metric_def d = { 0, "tailed", pols[1] };
    int64_t ts[6] = { 100, 200, 300, 400, 500, 600 };
    double v[6] = { 1, 2, 3, 4, 5, 6 };
    struct ga_window whole = { .n = 3, .ts = ts, .value = v };       /* 100 200 300 */
    struct ga_window t1 = { .n = 1, .ts = ts + 3, .value = v + 3 };   /* +400, drop 100 */
    struct ga_window t2 = { .n = 2, .ts = ts + 4, .value = v + 4 };   /* +500 600, drop 200 */
    struct pg_writer_window pw = { .metric = 0, .window = &whole };
    struct pg_writer_unit u = { .defs = &d, .ndefs = 1, .windows = &pw, .nwindows = 1, .lsn = 10,
                          .window_lsn = 10 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    pw = (struct pg_writer_window){ .metric = 0, .window = &t1, .tail = 1, .keep_from = 200 };
    u = (struct pg_writer_unit){ .windows = &pw, .nwindows = 1, .lsn = 20, .window_lsn = 20 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    pw = (struct pg_writer_window){ .metric = 0, .window = &t2, .tail = 1, .keep_from = 300 };
    u = (struct pg_writer_unit){ .windows = &pw, .nwindows = 1, .lsn = 30, .window_lsn = 30 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);             /* a load needs the database to itself */
    PGconn *c = pgenv_connect(&env);
    CHECK(pg_scalar(c, "SELECT count(*) FROM metric_window_tails") >= 1);
    struct pg_load_state s;
    struct ga_window got = { 0 };
    char err[256];
    CHECK_INT(pg_load(env.conninfo, &s, take_window, &got, err, sizeof err), 0);
    pg_load_free(&s);
    CHECK_INT(got.n, 4);                                 /* 300 400 500 600 */
    CHECK(got.n == 4 && got.ts[0] == 300 && got.ts[3] == 600 && got.value[0] == 3 &&
          got.value[3] == 6);
    /* stored: the snapshot's 3 points, and the two tails (one row) with 3 */
    CHECK_INT(took.snapshot_points, 3);
    CHECK_INT(took.tails, 2);
    CHECK_INT(took.tail_points, 3);
    CHECK(took.tail_bytes > 0);
    free(got.ts);
    free(got.value);
    /* whole again: the tails go */
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct ga_window now = { .n = 4, .ts = ts + 2, .value = v + 2 };
    pw = (struct pg_writer_window){ .metric = 0, .window = &now };
    u = (struct pg_writer_unit){ .windows = &pw, .nwindows = 1, .lsn = 40, .window_lsn = 40 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metric_window_tails"), 0);
    got = (struct ga_window){ 0 };
    CHECK_INT(pg_load(env.conninfo, &s, take_window, &got, err, sizeof err), 0);
    pg_load_free(&s);
    CHECK(got.n == 4 && got.ts[0] == 300);
    CHECK_INT(took.snapshot_points, 4);
    CHECK_INT(took.tails, 0);
    CHECK_INT(took.tail_bytes, 0);
    free(got.ts);
    free(got.value);
    PQfinish(c);
}

/* A window set bigger than window_txn_bytes goes over several
 * transactions: every window is stored with its own position, each
 * metric's counter with its window, the partitions' position moves only
 * once the last is in, and a flush waits for all of it. */
static void test_window_set_sliced(void)
{
    enum { N = 40 };
    reset_db();
    struct commits k = { 0 };
    struct pg_writer_opts o = opts(&k);
    o.window_txn_bytes = 300;                  /* one window a transaction (PG_BATCH_WINDOW_ROW_BYTES) */
    struct pg_writer *w;
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_metric_def d[N];
    char names[N][32];
    make_defs(d, names, N);
    struct pg_writer_unit u = { .defs = d, .ndefs = N, .lsn = 5 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    int64_t ts[12];
    double v[12];
    for (int i = 0; i < 12; i++)
        ts[i] = 1000 + i, v[i] = i;
    struct ga_window win = { .n = 12, .ts = ts, .value = v };
    struct pg_writer_window pw[N];
    struct pg_writer_count cnt[N];
    for (int m = 0; m < N; m++) {
        pw[m] = (struct pg_writer_window){ .metric = (uint32_t)m, .window = &win };
        cnt[m] = (struct pg_writer_count){ (uint32_t)m, 12 };
    }
    uint64_t tx0 = 0;
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    tx0 = st.transactions;
    u = (struct pg_writer_unit){ .windows = pw, .nwindows = N, .counts = cnt, .ncounts = N, .lsn = 70,
                           .window_lsn = 70 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    pg_writer_get_status(w, &st);
    CHECK(st.transactions - tx0 >= 10);         /* 40 windows of ~110 bytes, ~3 a transaction */
    CHECK_INT(st.window_lsn, 70);
    PGconn *c = pgenv_connect(&env);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metric_windows WHERE saved_lsn = 70"), N);
    CHECK_INT(pg_scalar(c, "SELECT sum(points) FROM metrics"), 12 * N);
    CHECK_INT(pg_scalar(c, "SELECT min(window_lsn) FROM partitions"), 70);
    /* tails of the next set, sliced too, carry their position */
    int64_t ts2[2] = { 2000, 2001 };
    double v2[2] = { 1, 2 };
    struct ga_window t = { .n = 2, .ts = ts2, .value = v2 };
    for (int m = 0; m < N; m++)
        pw[m] = (struct pg_writer_window){ .metric = (uint32_t)m, .window = &t, .tail = 1, .keep_from = 1000 };
    u = (struct pg_writer_unit){ .windows = pw, .nwindows = N, .lsn = 90, .window_lsn = 90 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metric_window_tails WHERE lsn = 90"), N);
    CHECK_INT(pg_scalar(c, "SELECT min(window_lsn) FROM partitions"), 90);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    /* the load gives each window its own position */
    struct pg_load_state s;
    struct ga_window got = { 0 };
    char err[256];
    CHECK_INT(pg_load(env.conninfo, &s, take_window, &got, err, sizeof err), 0);
    pg_load_free(&s);
    CHECK_INT(took_lsn, 90);
    CHECK_INT(got.n, 14);
    free(got.ts);
    free(got.value);
    PQfinish(c);
}

static const struct pg_batch_window *window_of(const struct pg_batch *b, uint32_t metric)
{
    for (size_t i = 0; i < b->nwindows; i++)
        if (b->windows[i].metric == metric)
            return &b->windows[i];
    return NULL;
}

/* Moving windows between batches (the writer's pieces of a window set,
 * no database): a later set merges after an earlier one (its tail after
 * the stored snapshot, the newest position), counters go with their
 * windows, and the partitions' positions only with the last window. */
static void test_move_windows(void)
{
    int64_t ts[4] = { 100, 200, 300, 400 };
    double v[4] = { 1, 2, 3, 4 };
    struct ga_window whole = { .n = 3, .ts = ts, .value = v }, t = { .n = 1, .ts = ts + 3, .value = v + 3 };
    struct pg_writer_window w1 = { .metric = 0, .window = &whole };
    struct pg_writer_unit u1 = { .windows = &w1, .nwindows = 1, .lsn = 10, .window_lsn = 10, .window_parts = 1 };
    struct pg_writer_window w2[2] = { { .metric = 0, .window = &t, .tail = 1, .keep_from = 100 },
                                { .metric = 1, .window = &whole } };
    struct pg_writer_count c2[2] = { { 0, 4 }, { 1, 3 } };
    struct pg_writer_unit u2 = { .windows = w2, .nwindows = 2, .counts = c2, .ncounts = 2, .lsn = 20,
                           .window_lsn = 20, .window_parts = 2 };
    struct pg_batch a = { 0 }, b = { 0 }, c = { 0 };
    CHECK_INT(pg_batch_merge(&a, &u1, 0, 0, 1, 0), 0);
    CHECK_INT(pg_batch_merge(&b, &u2, 0, 0, 2, 0), 0);
    size_t snap_len = a.windows[0].len, tail_len = window_of(&b, 0)->tlen;
    CHECK_INT(pg_batch_move_windows(&a, &b, 0, 1), 0);
    CHECK_INT(b.nwindows + b.ncounts + (size_t)b.has_windows, 0);
    CHECK_INT(a.nwindows, 2);
    const struct pg_batch_window *m0 = window_of(&a, 0);
    CHECK(m0 && m0->len == snap_len && m0->tlen == tail_len && m0->lsn == 20);
    CHECK_INT(a.ncounts, 2);
    CHECK_INT(a.part_lsn[0], 10);
    CHECK_INT(a.part_lsn[1], 20);
    CHECK_INT(pg_batch_window_bytes(&a), snap_len + tail_len + window_of(&a, 1)->len + 2 * PG_BATCH_WINDOW_ROW_BYTES);
    /* in pieces of 1 byte: one window a move, the positions with the last */
    CHECK_INT(pg_batch_move_windows(&c, &a, 1, 0), 0);
    CHECK_INT(c.nwindows, 1);
    CHECK_INT(c.ncounts, 1);
    CHECK_INT(c.has_windows, 0);
    CHECK_INT(pg_batch_move_windows(&c, &a, 1, 0), 0);
    CHECK_INT(c.nwindows, 2);
    CHECK_INT(c.ncounts, 2);
    CHECK(c.has_windows && c.part_lsn[1] == 20 && a.nwindows == 0 && !a.has_windows);
    CHECK(window_of(&c, 0) && window_of(&c, 0)->tlen == tail_len);
    /* tiny windows weigh their rows: 8 KiB takes fewer than 8 of 20 */
    enum { NT = 20 };
    struct pg_writer_window tw[NT];
    for (int i = 0; i < NT; i++)
        tw[i] = (struct pg_writer_window){ .metric = (uint32_t)(10 + i), .window = &t };
    struct pg_writer_unit ut = { .windows = tw, .nwindows = NT, .lsn = 30, .window_lsn = 30, .window_parts = 4 };
    struct pg_batch d = { 0 }, e = { 0 };
    CHECK_INT(pg_batch_merge(&d, &ut, 0, 0, 3, 0), 0);
    size_t one = pg_batch_window_bytes(&d) / NT;
    CHECK(one > PG_BATCH_WINDOW_ROW_BYTES && one < PG_BATCH_WINDOW_ROW_BYTES + 64);
    CHECK_INT(pg_batch_move_windows(&e, &d, 8192, 0), 0);
    CHECK_INT(e.nwindows, 8192 / one);
    CHECK_INT(d.nwindows, NT - 8192 / one);
    pg_batch_free(&a);
    pg_batch_free(&b);
    pg_batch_free(&c);
    pg_batch_free(&d);
    pg_batch_free(&e);
}

/* A block of open buckets the daemon did not write (arrays of unequal
 * lengths, an unknown method set) is refused when the writer loads its
 * partitions: it stays down naming the block, and commits nothing. */
static void test_damaged_open_block(void)
{
    static const char *const damage[2] = {
        "INSERT INTO method_sets (methods) VALUES ('{1}'); INSERT INTO open_blocks SELECT 7, "
        "'{1}', ARRAY[id], '{60,60}', '{0,0}', '{0,0}', '{1,2}' FROM method_sets "
        "WHERE methods = '{1}'",
        "INSERT INTO open_blocks VALUES (7, '{1}', '{999999}', '{60}', '{0}', '{0}', '{1}')",
    };
    for (int k = 0; k < 2; k++) {
        reset_db();
        struct pg_writer *w;
        struct pg_writer_opts o = opts(NULL);
        PGconn *c = pgenv_connect(&env);
        char err[256] = "";
        CHECK(pg_schema_migrate(c, err, sizeof err) >= 0);
        CHECK_INT(pg_cmd(c, damage[k]), 0);
        CHECK_INT(pg_writer_start(&w, &o), 0);
        struct pg_writer_unit u = { .lsn = 50 };
        CHECK_INT(pg_writer_submit(w, &u), 0);
        struct pg_writer_status st;
        int seen = 0;
        for (int t = 0; t < 200 && !seen; t++) {
            struct timespec ts = { 0, 50 * 1000000 };
            nanosleep(&ts, NULL);
            pg_writer_get_status(w, &st);
            seen = strstr(st.last_error, "open block 7 is damaged") != NULL;
        }
        CHECK(seen);
        CHECK_CONTAINS(st.last_error, k ? "registered method set" : "1 methods and 0 values");
        CHECK(st.state != PG_CONN_CONNECTED && st.committed_lsn < 50);
        pg_writer_stop(w, 1000);
        PQfinish(c);
    }
}

/* One "flush" of rows for metrics 0..nm-1, methods[0..2] of pols[1], its
 * first granularity, bucket step `b`, value base + metric. */
static size_t step_rows(struct ga_agg *a, int nm, int64_t b, double base)
{
    const struct ga_policy *p = pols[1];
    int64_t g = p->defs[0].granularity_ns, day0 = ga_now_real_ns() / PG_SCHEMA_DAY_NS * PG_SCHEMA_DAY_NS;
    size_t n = 0;
    for (int m = 0; m < nm; m++)
        for (int k = 0; k < 3 && k < p->nmethods; k++)
            a[n++] = (struct ga_agg){ (uint32_t)m, p->methods[k], 0, g, day0 + b * g, base + m + k * 0.125 };
    return n;
}

static int submit_flush(struct pg_writer *w, struct ga_agg *a, size_t n, uint64_t lsn,
                        struct pg_writer_metric_def *defs, size_t ndefs)
{
    struct pg_writer_unit u = { .aggs = a, .naggs = n, .defs = defs, .ndefs = ndefs, .lsn = lsn };
    int rc = pg_writer_submit(w, &u);
    return rc ? rc : pg_writer_flush_sync(w, 20000);
}

/* Buckets newer than the high water go straight into buckets
 * (pg_fresh.h): the writer learns a pair's high water from the database
 * before its first flush, raises it as it commits, and when a "fresh" row
 * exists after all (written behind its back) falls back to the upsert,
 * loses nothing, and learns the database's newest bucket again. */
static void test_fresh_buckets_and_fallback(void)
{
    reset_db();
    enum { NM = 50 };
    struct pg_writer_metric_def defs[NM];
    char names[NM][32];
    make_defs(defs, names, NM);
    for (int i = 0; i < NM; i++)
        defs[i].policy = pols[1];
    struct ga_agg a[NM * 3];
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    o.flush_interval_ms = 60000;
    struct pg_writer_status st;
    int64_t day0 = ga_now_real_ns() / PG_SCHEMA_DAY_NS * PG_SCHEMA_DAY_NS;
    int64_t g = pols[1]->defs[0].granularity_ns;

    /* writer 1 on an empty database: buckets 0..4 and 20, all new */
    CHECK_INT(pg_writer_start(&w, &o), 0);
    size_t n = step_rows(a, NM, 0, 1.0);
    CHECK_INT(submit_flush(w, a, n, 10, defs, NM), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.rows_fresh, n / 3);             /* the database had none: COPYed (a row a bucket) */
    CHECK_INT(st.pairs_new, NM);                 /* new metrics: not asked for their newest bucket */
    CHECK_INT(st.pairs_asked, 0);
    for (int b = 1; b <= 4; b++) {
        n = step_rows(a, NM, b, 1.0);
        CHECK_INT(submit_flush(w, a, n, 10 + (uint64_t)b, NULL, 0), 0);
    }
    n = step_rows(a, NM, 20, 1.0);
    CHECK_INT(submit_flush(w, a, n, 20, NULL, 0), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.rows_fresh, 6 * n / 3);
    /* bucket 4 again (an open bucket re-written): below the high water */
    n = step_rows(a, NM, 4, 100.0);
    CHECK_INT(submit_flush(w, a, n, 21, NULL, 0), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.rows_fresh, 6 * n / 3);
    CHECK_INT(st.fresh_fallbacks, 0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);

    /* writer 2 (a restarted daemon) learns the database's newest bucket, 20 */
    CHECK_INT(pg_writer_start(&w, &o), 0);
    n = step_rows(a, NM, 3, 200.0);
    CHECK_INT(submit_flush(w, a, n, 30, NULL, 0), 0);
    n = step_rows(a, NM, 20, 300.0);
    CHECK_INT(submit_flush(w, a, n, 31, NULL, 0), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.rows_fresh, 0);
    CHECK_INT(st.fresh_fallbacks, 0);
    CHECK_INT(st.pairs_asked, NM);               /* known metrics: asked once each */
    CHECK_INT(st.pairs_new, 0);
    /* 20 is each pair's newest stored bucket, its method set read with it:
     * replaced by the plain UPDATE; 3 (older) was merged by the upsert */
    CHECK_INT(st.rows_updated, n / 3);
    CHECK_INT(st.rows_merged, n / 3);
    /* a row written behind its back: bucket 30 of metric 7 */
    PGconn *c = pgenv_connect(&env);
    char q[512];
    snprintf(q, sizeof q, "INSERT INTO method_sets (methods) VALUES ('{%d}') ON CONFLICT DO NOTHING; "
             "INSERT INTO buckets SELECT 7, id, %lld, %lld, '{-1}' FROM method_sets WHERE methods = '{%d}'",
             (int)pols[1]->methods[0], (long long)g, (long long)(day0 + 30 * g), (int)pols[1]->methods[0]);
    pg_cmd(c, q);
    n = step_rows(a, NM, 30, 500.0);             /* looks fresh, one row exists */
    CHECK_INT(submit_flush(w, a, n, 32, NULL, 0), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.fresh_fallbacks, 1);
    CHECK_INT(st.rows_fresh, 0);
    n = step_rows(a, NM, 31, 600.0);             /* fresh again */
    CHECK_INT(submit_flush(w, a, n, 33, NULL, 0), 0);
    n = step_rows(a, NM, 30, 700.0);             /* learnt: 30 is not fresh any more */
    CHECK_INT(submit_flush(w, a, n, 34, NULL, 0), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.fresh_fallbacks, 1);
    CHECK_INT(st.rows_fresh, n / 3);
    CHECK_INT(st.committed_lsn, 34);
    /* 31, the newest, rewritten: the UPDATE path; then one of its rows is
     * deleted behind the writer's back and the next rewrite finds one row
     * short: rolled back, upserted, nothing lost */
    n = step_rows(a, NM, 31, 650.0);
    CHECK_INT(submit_flush(w, a, n, 35, NULL, 0), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.rows_updated, 2 * n / 3);
    CHECK_INT(st.update_fallbacks, 0);
    snprintf(q, sizeof q, "DELETE FROM buckets WHERE metric = 7 AND granularity = %lld AND ts = %lld",
             (long long)g, (long long)(day0 + 31 * g));
    pg_cmd(c, q);
    n = step_rows(a, NM, 31, 600.0);
    CHECK_INT(submit_flush(w, a, n, 36, NULL, 0), 0);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.update_fallbacks, 1);
    CHECK_INT(st.rows_updated, 2 * n / 3);
    CHECK_INT(st.committed_lsn, 36);
    CHECK_INT(pg_writer_stop(w, 10000), 0);

    /* every bucket holds its latest value, exactly once */
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), 8 * NM * 3);
    static const struct { int b; double v; } want[] = {
        { 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 200 }, { 4, 100 }, { 20, 300 }, { 30, 700 }, { 31, 600 }
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        snprintf(q, sizeof q, "SELECT round(sum(value - metric)::numeric * 1000)::bigint FROM aggregates "
                              "WHERE (ts - %lld) / %lld = %d",
                 (long long)day0, (long long)g, want[k].b);
        /* per metric: 3 methods, base + m + {0, .125, .25}: sum over m of (3 base + .375) */
        CHECK_INT(pg_scalar(c, q), (long long)(NM * (3 * want[k].v + 0.375) * 1000 + 0.5));
    }
    CHECK_INT(pg_scalar(c, "SELECT committed_lsn FROM checkpoints"), 36);
    /* partitions leave half of each page for HOT rewrites */
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_class c JOIN bucket_partitions p ON p.name = "
                           "c.relname WHERE 'fillfactor=50' = ANY (c.reloptions)"),
              pg_scalar(c, "SELECT count(*) FROM bucket_partitions"));
    CHECK(pg_scalar(c, "SELECT count(*) FROM bucket_partitions") >= 1);
    PQfinish(c);
}

static void test_bad_units_refused(void)
{
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_metric_def d = { 0, "bad\xff" "utf8", pols[0] };
    struct pg_writer_unit u = { .defs = &d, .ndefs = 1 };
    CHECK_INT(pg_writer_submit(w, &u), GA_EINVAL);
    int64_t ts[2] = { 5, 5 };
    double v[2] = { 1, 2 };
    struct ga_window win = { .n = 2, .ts = ts, .value = v };
    struct pg_writer_window pw = { .metric = 0, .window = &win };
    struct pg_writer_unit u2 = { .windows = &pw, .nwindows = 1 };
    CHECK_INT(pg_writer_submit(w, &u2), GA_EINVAL);
    struct pg_writer_unit u3 = { .lsn = (uint64_t)INT64_MAX + 1 };
    CHECK_INT(pg_writer_submit(w, &u3), GA_EINVAL);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    o.flush_rows = 0;
    CHECK_INT(pg_writer_start(&w, &o), GA_EINVAL);
}

/* Window sets per partition (pg_writer.h "LSNs"): a set moves only its
 * partitions' window_lsn, the checkpoint keeps the lowest, counters travel
 * with the set, and a replayed set whose partitions all have a newer one
 * is dropped with its counters while another partition's is taken. */
static void test_partition_window_sets(void)
{
    reset_db();
    struct pg_writer_metric_def defs[2];
    char names[2][32];
    make_defs(defs, names, 2);
    struct ga_window win = { 0 };
    int64_t ts[1] = { 1000000000 };
    double v[1] = { 1.5 };
    win.n = 1, win.ts = ts, win.value = v;
    struct pg_writer_window pw = { .metric = 0, .window = &win };
    struct pg_writer_count c5 = { 0, 5 }, c7 = { 0, 7 }, c11 = { 1, 11 };
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_unit u = { .defs = defs, .ndefs = 2, .windows = &pw, .nwindows = 1, .counts = &c5,
                          .ncounts = 1, .lsn = 100, .window_lsn = 100, .window_parts = 1ULL << 3 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 20000), 0);
    PGconn *c = pgenv_connect(&env);
    CHECK_INT(pg_scalar(c, "SELECT window_lsn FROM partitions WHERE id = 3"), 100);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM partitions WHERE window_lsn = 0"), GA_PARTITIONS - 1);
    CHECK_INT(pg_scalar(c, "SELECT window_lsn FROM checkpoints"), 0);
    CHECK_INT(pg_scalar(c, "SELECT committed_lsn FROM checkpoints"), 100);
    CHECK_INT(pg_scalar(c, "SELECT points FROM metrics WHERE id = 0"), 5);
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    CHECK_INT(st.window_lsn, 0);
    CHECK_INT(st.part_window_lsn[3], 100);
    /* every partition at once */
    u = (struct pg_writer_unit){ .lsn = 200, .window_lsn = 200 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 20000), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM partitions WHERE window_lsn = 200"), GA_PARTITIONS);
    CHECK_INT(pg_scalar(c, "SELECT window_lsn FROM checkpoints"), 200);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    /* a restart whose partition 5 was saved at 300: its replayed set at 250
     * is dropped (window and counters), partition 6's is taken */
    uint64_t loaded[GA_PARTITIONS];
    for (int p = 0; p < GA_PARTITIONS; p++)
        loaded[p] = p == 5 ? 300 : 200;
    pg_cmd(c, "UPDATE partitions SET window_lsn = 300 WHERE id = 5");
    o.committed_lsn = 300, o.window_lsn = 200, o.part_window_lsn = loaded;
    CHECK_INT(pg_writer_start(&w, &o), 0);
    win.value[0] = 9.5;
    u = (struct pg_writer_unit){ .windows = &pw, .nwindows = 1, .counts = &c7, .ncounts = 1, .lsn = 250,
                           .window_lsn = 250, .window_parts = 1ULL << 5 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    u = (struct pg_writer_unit){ .counts = &c11, .ncounts = 1, .lsn = 250, .window_lsn = 250,
                           .window_parts = 1ULL << 6 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 20000), 0);
    CHECK_INT(pg_scalar(c, "SELECT points FROM metrics WHERE id = 0"), 5);
    CHECK_INT(pg_scalar(c, "SELECT points FROM metrics WHERE id = 1"), 11);
    CHECK_INT(pg_scalar(c, "SELECT window_lsn FROM partitions WHERE id = 5"), 300);
    CHECK_INT(pg_scalar(c, "SELECT window_lsn FROM partitions WHERE id = 6"), 250);
    CHECK_INT(pg_scalar(c, "SELECT window_lsn FROM checkpoints"), 200);
    /* metric 0's window is still the one saved with partition 3's set at 100 */
    CHECK_INT(pg_scalar(c, "SELECT lsn FROM metric_windows WHERE metric = 0"), 100);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    PQfinish(c);
}

/* A writer idle on an empty batch wakes for the first unit and commits it
 * within the flush interval (200 ms), not at its next idle check (5 s). */
static void test_idle_writer_wakes(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_status st;
    for (int i = 0; i < 500; i++) {          /* connected, batch empty: idle */
        pg_writer_get_status(w, &st);
        if (st.state == PG_CONN_CONNECTED)
            break;
        usleep(10000);
    }
    usleep(300000);
    struct pg_writer_unit u = { .lsn = 7 };
    int64_t t0 = ga_now_mono_ns();
    CHECK_INT(pg_writer_submit(w, &u), 0);
    for (int i = 0; i < 1000; i++) {
        pg_writer_get_status(w, &st);
        if (st.committed_lsn == 7)
            break;
        usleep(5000);
    }
    double s = (double)(ga_now_mono_ns() - t0) / 1e9;
    CHECK_INT(st.committed_lsn, 7);
    CHECK(s < 2.0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
}

/* Rewrites of the open bucket: a set holding the stored one replaces it;
 * a smaller set merges (the union stays), and keeps merging after a merge
 * (the stored set is then the union, not the last written one). */
static void test_replace_or_merge(void)
{
    reset_db();
    struct pg_writer_metric_def defs[1];
    char names[1][32];
    make_defs(defs, names, 1);
    defs[0].policy = pols[1];
    int64_t g = pols[1]->defs[0].granularity_ns, ts = ga_now_real_ns() / g * g;
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    o.flush_interval_ms = 60000;
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct { int n; ga_method_t m[3]; double v; int merged; } steps[] = {
        { 2, { GA_M_MEAN, GA_M_SUM }, 1, 0 },          /* new bucket */
        { 2, { GA_M_MEAN, GA_M_SUM }, 2, 0 },          /* same set: replace */
        { 1, { GA_M_SUM }, 3, 1 },                     /* smaller: merge */
        { 1, { GA_M_SUM }, 4, 1 },                     /* stored is the union: merge again */
        { 3, { GA_M_MEAN, GA_M_SUM, GA_M_MAX }, 5, 0 } /* holds it: replace */
    };
    PGconn *c = pgenv_connect(&env);
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        struct ga_agg a[3];
        for (int i = 0; i < steps[k].n; i++)
            a[i] = (struct ga_agg){ 0, steps[k].m[i], 0, g, ts, steps[k].v };
        struct pg_writer_unit u = { .aggs = a, .naggs = (size_t)steps[k].n, .defs = defs,
                              .ndefs = k == 0, .lsn = 10 + k };
        struct pg_writer_status before, after;
        pg_writer_get_status(w, &before);
        CHECK_INT(pg_writer_submit(w, &u), 0);
        CHECK_INT(pg_writer_flush_sync(w, 20000), 0);
        pg_writer_get_status(w, &after);
        CHECK_INT(after.rows_merged - before.rows_merged, steps[k].merged);
        char q[256];
        snprintf(q, sizeof q, "SELECT value * 10 FROM aggregates WHERE method = %d", GA_M_MEAN);
        /* mean keeps its last written value through the sum-only rewrites */
        CHECK_INT(pg_scalar(c, q), k < 2 ? (long long)(steps[k].v * 10) : k < 4 ? 20 : 50);
    }
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), 3);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    PQfinish(c);
}

static int key_cmp(const void *pa, const void *pb)
{
    const struct ga_agg *a = pa, *b = pb;
    if (a->metric != b->metric)
        return a->metric < b->metric ? -1 : 1;
    if (a->granularity_ns != b->granularity_ns)
        return a->granularity_ns < b->granularity_ns ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->method > b->method) - (a->method < b->method);
}

/* Rows the database refuses (pg_isolate.h): a CHECK on buckets refuses
 * metric 7, a trigger on late_points metric 9's late points, a CHECK on
 * metrics the definition "bad.def".  Every other row commits in the same
 * flush, the refused ones are in rejected_rows with the database's
 * message, the checkpoint advances, and the next flushes go on. */
static void test_bad_rows_isolated(void)
{
    reset_db();
    uint64_t s = seed ^ 4242;
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(0));
    CHECK_INT(pg_cmd(c, "ALTER TABLE buckets ADD CONSTRAINT no_seven CHECK (metric <> 7)"), 0);
    CHECK_INT(pg_cmd(c, "ALTER TABLE metrics ADD CONSTRAINT no_bad CHECK (name <> 'bad.def')"), 0);
    CHECK_INT(pg_cmd(c, "CREATE FUNCTION no_nine() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                        "IF NEW.metric = 9 THEN RAISE EXCEPTION 'metric nine refused'; END IF; "
                        "RETURN NEW; END $$; CREATE TRIGGER no_nine BEFORE INSERT ON late_points "
                        "FOR EACH ROW EXECUTE FUNCTION no_nine()"), 0);
    enum { NM = 16, NA = 1500, NL = 64 };
    struct pg_writer_metric_def defs[NM];
    char names[NM][32];
    make_defs(defs, names, NM);
    defs[11].name = "bad.def";
    struct ga_agg *a = malloc(NA * sizeof *a);
    int64_t today = ga_now_real_ns() / PG_SCHEMA_DAY_NS;
    for (int i = 0; i < NA; i++) {
        uint32_t m = (uint32_t)(rnd_next(&s) % NM);
        a[i] = rnd_agg(&s, m, pols[m % 3], today - 2, 3);
    }
    struct ga_late late[NL];
    for (int i = 0; i < NL; i++)
        late[i] = (struct ga_late){ (uint32_t)(i % NM), GA_LATE_WINDOW, 1000 + i, i + 0.5 };
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_unit u = { .aggs = a, .naggs = NA, .late = late, .nlate = NL, .defs = defs,
                          .ndefs = NM, .lsn = 5000 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 20000), 0);
    /* what should be there: the distinct keys, the later value winning */
    qsort(a, NA, sizeof *a, key_cmp);
    long long keys7 = 0, buckets_ok = 0;
    for (int i = 0; i < NA; i++) {
        int new_key = !i || key_cmp(&a[i - 1], &a[i]) != 0;
        int new_bucket = !i || a[i - 1].metric != a[i].metric ||
                         a[i - 1].granularity_ns != a[i].granularity_ns || a[i - 1].ts != a[i].ts;
        keys7 += new_key && a[i].metric == 7;
        buckets_ok += new_bucket && a[i].metric != 7;
    }
    CHECK(keys7 > 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM buckets"), buckets_ok);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM buckets WHERE metric = 7"), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM rejected_rows WHERE kind = 'bucket'"), keys7);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM rejected_rows WHERE kind = 'bucket' AND "
                           "(metric <> 7 OR error NOT LIKE '%SQLSTATE 23514:%no_seven%' OR "
                           "granularity IS NULL OR ts IS NULL OR method IS NULL)"), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM late_points"), NL - NL / NM);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM rejected_rows WHERE kind = 'late' AND "
                           "metric = 9 AND error LIKE '%SQLSTATE P0001:%metric nine refused%'"),
              NL / NM);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metrics"), NM - 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM rejected_rows WHERE kind = 'definition' AND "
                           "metric = 11"), 1);
    CHECK_INT(pg_scalar(c, "SELECT min(committed_lsn) FROM partitions"), 5000);
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    CHECK_INT(st.rows_rejected, keys7 + NL / NM + 1);
    CHECK_INT(st.isolations, 1);
    CHECK(strstr(st.last_rejected, "SQLSTATE") != NULL);
    CHECK_INT(st.committed_lsn, 5000);
    /* the next flush: metric 7 again with metric 3; 3 commits */
    struct ga_agg b2[2] = { a[0], a[0] };
    b2[0].metric = 7;
    b2[1].metric = 3;
    b2[1].granularity_ns = pols[0]->defs[0].granularity_ns;
    b2[1].method = pols[0]->methods[0];
    b2[1].ts = (today + 1) * PG_SCHEMA_DAY_NS;
    b2[0].granularity_ns = b2[1].granularity_ns;
    b2[0].method = b2[1].method;
    b2[0].ts = b2[1].ts;
    struct pg_writer_unit u2 = { .aggs = b2, .naggs = 2, .lsn = 6000 };
    CHECK_INT(pg_writer_submit(w, &u2), 0);
    CHECK_INT(pg_writer_flush_sync(w, 20000), 0);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM buckets WHERE metric = 3 AND ts = %lld",
             (long long)b2[1].ts);
    CHECK_INT(pg_scalar(c, sql), 1);
    CHECK_INT(pg_scalar(c, "SELECT min(committed_lsn) FROM partitions"), 6000);
    pg_writer_get_status(w, &st);
    CHECK_INT(st.isolations, 2);
    CHECK_INT(st.rows_rejected, keys7 + NL / NM + 2);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    free(a);
    PQfinish(c);
}

/* A flush that carries definitions of an unchanged policy takes no lock on
 * the policy's row: while another transaction holds the lock an
 * ON CONFLICT DO UPDATE took (FOR NO KEY UPDATE: another writer's open
 * flush), this writer's flush of new metrics still commits.  A changed
 * policy is still written. */
static void test_policy_rows_not_locked(void)
{
    reset_db();
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct ga_policy pol = nano;
    struct pg_writer_metric_def d1 = { 1, "lock.one", &pol }, d2 = { 2, "lock.two", &pol };
    int64_t g = pol.defs[0].granularity_ns;
    struct ga_agg a1 = { 1, GA_M_MEAN, 0, g, 10 * g, 1.5 }, a2 = { 2, GA_M_MEAN, 0, g, 10 * g, 2.5 };
    struct pg_writer_unit u1 = { .aggs = &a1, .naggs = 1, .defs = &d1, .ndefs = 1, .lsn = 5 };
    struct pg_writer_unit u2 = { .aggs = &a2, .naggs = 1, .defs = &d2, .ndefs = 1, .lsn = 6 };
    CHECK_INT(pg_writer_submit(w, &u1), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    PGconn *lk = pgenv_connect(&env), *c = pgenv_connect(&env);
    CHECK_INT(pg_cmd(lk, "BEGIN"), 0);
    CHECK_INT(pg_scalar(lk, "SELECT count(*) FROM (SELECT 1 FROM archive_policies "
                            "WHERE name = 'nano' FOR NO KEY UPDATE) l"), 1);
    CHECK_INT(pg_writer_submit(w, &u2), 0);
    CHECK_INT(pg_writer_flush_sync(w, 5000), 0);       /* not behind the lock */
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metrics"), 2);
    CHECK_INT(pg_cmd(lk, "ROLLBACK"), 0);
    /* the policy's definition changes: its row is updated */
    pol.back_window = 7;
    d1 = (struct pg_writer_metric_def){ 3, "lock.three", &pol };
    a1.metric = 3;
    u1.lsn = 7;
    CHECK_INT(pg_writer_submit(w, &u1), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    CHECK_INT(pg_scalar(c, "SELECT back_window FROM archive_policies WHERE name = 'nano'"), 7);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM archive_policies"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metrics"), 3);
    PQfinish(c);
    PQfinish(lk);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
}

/* Seq scans of metrics, once the statistics show `col` >= want. */
static long long metrics_scans_when(PGconn *c, const char *col, long long want)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT %s FROM pg_stat_user_tables WHERE relname = 'metrics'", col);
    for (int i = 0; i < 100 && pg_scalar(c, sql) < want; i++) {
        usleep(100000);
        pg_cmd(c, "SELECT pg_stat_clear_snapshot()");
    }
    CHECK(pg_scalar(c, sql) >= want);
    return pg_scalar(c, "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'metrics'");
}

/* One writer session (its statistics are reported when it ends). */
static void one_session(const struct pg_writer_unit *u)
{
    struct pg_writer *w;
    struct pg_writer_opts o = opts(NULL);
    CHECK_INT(pg_writer_start(&w, &o), 0);
    CHECK_INT(pg_writer_submit(w, u), 0);
    CHECK_INT(pg_writer_flush_sync(w, 10000), 0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
}

/* The counts of a window set are applied by key: a flush with 5,000 counts
 * scans metrics no more than one without (with the arrays' lengths known
 * the planner would hash the whole table, a cost that grows with the
 * metrics there are). */
static void test_counts_by_key(void)
{
    char err[512];
    reset_db();
    PGconn *c = pgenv_connect(&env);
    CHECK(pg_schema_migrate(c, err, sizeof err) >= 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO archive_policies (name, back_window, definition, methods) "
                        "VALUES ('nano', 0, '[]', '{mean}')"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO metrics (id, name, policy, uuid) "
                        "SELECT i, 'count.' || i, 'nano', gpuagg_metric_uuid('count.' || i) "
                        "FROM generate_series(1, 50000) i"), 0);
    CHECK_INT(pg_cmd(c, "ANALYZE metrics"), 0);
    CHECK_INT(pg_cmd(c, "SELECT pg_stat_force_next_flush()"), 0);
    long long base = metrics_scans_when(c, "n_tup_ins", 50000);
    enum { N = 5000 };
    struct pg_writer_count *cnt = calloc(N, sizeof *cnt);
    for (int i = 0; i < N; i++)
        cnt[i] = (struct pg_writer_count){ (uint32_t)(1 + i * 10), 3 };
    struct pg_writer_metric_def d = { 60000, "count.new", &nano };
    one_session(&(struct pg_writer_unit){ .defs = &d, .ndefs = 1, .counts = cnt, .ncounts = N, .lsn = 5 });
    long long with = metrics_scans_when(c, "n_tup_upd", N) - base;
    d = (struct pg_writer_metric_def){ 60001, "count.newer", &nano };
    one_session(&(struct pg_writer_unit){ .defs = &d, .ndefs = 1, .lsn = 6 });
    long long without = metrics_scans_when(c, "n_tup_ins", 50002) - base - with;
    CHECK_INT(with, without);
    CHECK_INT(pg_scalar(c, "SELECT sum(points) FROM metrics"), 3 * N);
    free(cnt);
    PQfinish(c);
}

void run_tests(void)
{
    PGENV_SKIP_IF_NO_PG("test_pg_writer");
    seed = rnd_seed();
    printf("seed=%llu (GA_TEST_SEED to repeat)\n", (unsigned long long)seed);
    nano_policy(&nano);
    pols[0] = ga_policy_builtin("low");
    pols[1] = ga_policy_builtin("high");
    pols[2] = &nano;
    env_ok = pgenv_start(&env) == 0;
    CHECK(env_ok);
    if (!env_ok)
        return;
    RUN(test_policy_rows_not_locked);
    RUN(test_counts_by_key);
    RUN(test_partition_window_sets);
    RUN(test_idle_writer_wakes);
    RUN(test_replace_or_merge);
    RUN(test_round_trip_random);
    RUN(test_coalesce_later_wins);
    RUN(test_coalesce_while_writing);
    RUN(test_late_points_and_counters);
    RUN(test_flush_request_and_stop);
    RUN(test_backpressure);
    RUN(test_writers_stop_one_deadline);
    RUN(test_lag_counts_from_floor);
    RUN(test_replay_skips_committed);
    RUN(test_window_tails);
    RUN(test_window_set_sliced);
    RUN(test_move_windows);
    RUN(test_damaged_open_block);
    RUN(test_fresh_buckets_and_fallback);
    RUN(test_bad_units_refused);
    RUN(test_bad_rows_isolated);
    pgenv_destroy(&env);
}
