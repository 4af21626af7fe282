/* bench_pgw.c — storage writer throughput: rows/s from pg_writer_submit to
 * commit, against a private PostgreSQL started here (tools/pg-private.sh,
 * fsync on) or a given conninfo.
 *
 *   build/bench/bench_pgw [--rows N] [--metrics M] [--unit-rows U]
 *                         [--flush-rows F] [--conninfo STR] [--keep]
 *
 * Two phases over the same keys: "insert" (every bucket new) and "update"
 * (every bucket again with a new value: the ON CONFLICT DO UPDATE path).
 * Each unit holds U rows: for consecutive metrics, 6 methods x 3
 * granularities of one minute bucket.  Prints one line per phase with
 * rows/s and the mean share of each part of the flush transaction (fresh
 * buckets COPYed straight into aggregates, staging COPY, upsert), then
 * PostgreSQL's own ceilings for the same rows measured in the same run
 * (server-side plain INSERT and ON CONFLICT DO UPDATE). */
#include <inttypes.h>
#include <pthread.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/policy.h"
#include "proto/ga_err.h"
#include "tools/bench/bench_opts.h"
#include "storage/pg_schema.h"
#include "storage/pg_util.h"
#include "storage/pg_writer.h"

struct acc {
    pthread_mutex_t mu;
    struct pg_writer *w;
    double fresh, copy, upsert, commit, total;
    uint64_t txns;
};

static void on_commit(void *ctx, uint64_t lsn, uint64_t wlsn)
{
    struct acc *a = ctx;
    struct pg_writer_status st;
    (void)lsn, (void)wlsn;
    pthread_mutex_lock(&a->mu);
    if (a->w) {
        pg_writer_get_status(a->w, &st);
        a->fresh += st.last_fresh_ms;
        a->copy += st.last_copy_ms;
        a->upsert += st.last_upsert_ms;
        a->commit += st.last_commit_ms;
        a->total += st.last_flush_ms;
        a->txns++;
    }
    pthread_mutex_unlock(&a->mu);
}

static const ga_method_t methods[6] = { GA_M_MEAN, GA_M_SUM, GA_M_MIN, GA_M_MAX, GA_M_COUNT, GA_M_STD };
static const int64_t grans[3] = { 1000000000LL, 10000000000LL, 60000000000LL };

/* Row k of the key space: 18 distinct buckets per (metric, step): 6
 * methods x 3 granularities, bucket `step` of each granularity.  Every row
 * is a different key, so rows submitted = rows written. */
static void row(struct ga_agg *a, uint64_t k, uint32_t nmetrics, int64_t base, double salt)
{
    uint64_t combo = k % 18, mk = k / 18;
    a->metric = (uint32_t)(mk % nmetrics);
    a->method = methods[combo % 6];
    a->granularity_ns = grans[combo / 6];
    a->ts = base + (int64_t)(mk / nmetrics) * a->granularity_ns;
    a->value = (double)(k % 100003) * 0.5 + salt + 1;
}

static uint64_t lsn;                  /* continues across phases: the checkpoint only grows */

static int run_phase(const char *name, const char *conninfo, uint64_t rows, uint32_t nmetrics,
                     size_t unit_rows, int flush_rows, int64_t base, double salt,
                     struct pg_writer_metric_def *defs, double *rate)
{
    struct acc a = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, 0, 0 };
    struct pg_writer_opts o = { .conninfo = conninfo, .flush_rows = flush_rows, .flush_interval_ms = 1000,
                          .retry_initial_ms = 50, .retry_max_ms = 1000, .maintenance_interval_ms = -1,
                          .queue_max_rows = (size_t)flush_rows * 2, .on_commit = on_commit, .ctx = &a };
    struct pg_writer *w;
    if (pg_writer_start(&w, &o) < 0)
        return 1;
    pthread_mutex_lock(&a.mu);
    a.w = w;
    pthread_mutex_unlock(&a.mu);
    /* metric definitions first, outside the timing */
    struct pg_writer_unit du = { .defs = defs, .ndefs = nmetrics };
    if (pg_writer_submit(w, &du) < 0 || pg_writer_flush_sync(w, -1) < 0)
        return 1;
    pthread_mutex_lock(&a.mu);
    a.fresh = a.copy = a.upsert = a.commit = a.total = 0;
    a.txns = 0;
    pthread_mutex_unlock(&a.mu);
    struct ga_agg *buf = malloc(unit_rows * sizeof *buf);
    uint64_t busy = 0;
    struct pg_writer_status st0;
    pg_writer_get_status(w, &st0);
    int64_t t0 = ga_now_mono_ns();
    for (uint64_t k = 0; k < rows;) {
        size_t n = rows - k < unit_rows ? (size_t)(rows - k) : unit_rows;
        for (size_t i = 0; i < n; i++)
            row(&buf[i], k + i, nmetrics, base, salt);
        struct pg_writer_unit u = { .aggs = buf, .naggs = n, .lsn = ++lsn };
        int rc;
        while ((rc = pg_writer_submit(w, &u)) == GA_EBUSY) {
            busy++;
            usleep(500);
        }
        if (rc < 0) {
            fprintf(stderr, "submit: %s\n", ga_strerror(rc));
            return 1;
        }
        k += n;
    }
    int64_t t_sub = ga_now_mono_ns();
    if (pg_writer_flush_sync(w, -1) < 0)
        return 1;
    int64_t t1 = ga_now_mono_ns();
    struct pg_writer_status st;
    pg_writer_get_status(w, &st);
    pthread_mutex_lock(&a.mu);
    a.w = NULL;
    pthread_mutex_unlock(&a.mu);
    pg_writer_stop(w, -1);
    double secs = (double)(t1 - t0) / 1e9;
    uint64_t written = st.rows_committed - st0.rows_committed;
    double nt = a.txns ? (double)a.txns : 1;
    printf("%-7s rows=%" PRIu64 " secs=%.2f rows_per_s=%.0f txns=%" PRIu64
           " submit_s=%.2f busy_waits=%" PRIu64 " fresh_rows=%" PRIu64 " fresh_fallbacks=%" PRIu64
           " | per txn: rows=%.0f total=%.0fms fresh_copy=%.0fms stage_copy=%.0fms "
           "upsert=%.0fms rest+commit=%.0fms\n",
           name, written, secs, (double)written / secs, a.txns, (double)(t_sub - t0) / 1e9, busy,
           st.rows_fresh - st0.rows_fresh, st.fresh_fallbacks - st0.fresh_fallbacks,
           (double)written / nt, a.total / nt, a.fresh / nt, a.copy / nt, a.upsert / nt,
           (a.total - a.fresh - a.copy - a.upsert) / nt);
    *rate = (double)written / secs;
    free(buf);
    return 0;
}

/* PostgreSQL's own ceilings for the same rows, in the same run: the rows
 * the phases wrote, copied server side into a temp table, then (1) plain
 * INSERT into an empty table with the aggregates' key and fillfactor
 * (no client, no protocol: the insert ceiling) and (2) INSERT … ON
 * CONFLICT DO UPDATE of every row again (the rewrite ceiling). */
static double timed_exec(PGconn *c, const char *sql)
{
    int64_t t0 = ga_now_mono_ns();
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "ceiling: %s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    return ok ? (double)(ga_now_mono_ns() - t0) / 1e9 : -1;
}

static void ceilings(const char *conninfo, double ins_rate, double upd_rate)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "ceiling: %s", PQerrorMessage(c));
        PQfinish(c);
        return;
    }
    timed_exec(c, "SET client_min_messages = warning");
    timed_exec(c, "SET temp_buffers = '512MB'");
    timed_exec(c, "CREATE TEMP TABLE ceil_src AS SELECT metric, method, granularity, ts, value FROM aggregates");
    timed_exec(c, "DROP TABLE IF EXISTS gpuagg_bench_ceiling");
    timed_exec(c, "CREATE TABLE gpuagg_bench_ceiling (metric integer, method smallint, granularity bigint, "
                  "ts bigint, value double precision, PRIMARY KEY (metric, method, granularity, ts)) "
                  "WITH (fillfactor = 50)");
    timed_exec(c, "CHECKPOINT");
    PGresult *r = PQexec(c, "SELECT count(*) FROM ceil_src");
    double n = PQresultStatus(r) == PGRES_TUPLES_OK ? atof(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    double ti = timed_exec(c, "INSERT INTO gpuagg_bench_ceiling SELECT * FROM ceil_src ORDER BY 1, 2, 3, 4");
    timed_exec(c, "VACUUM gpuagg_bench_ceiling");
    timed_exec(c, "CHECKPOINT");
    double tu = timed_exec(c, "INSERT INTO gpuagg_bench_ceiling SELECT metric, method, granularity, ts, "
                              "value + 1 FROM ceil_src ORDER BY 1, 2, 3, 4 ON CONFLICT (metric, method, "
                              "granularity, ts) DO UPDATE SET value = EXCLUDED.value");
    timed_exec(c, "DROP TABLE gpuagg_bench_ceiling");
    PQfinish(c);
    if (ti > 0 && tu > 0 && n > 0)
        printf("ceiling rows=%.0f | plain INSERT (server side) rows_per_s=%.0f: writer insert phase at "
               "%.0f%% | ON CONFLICT DO UPDATE (server side) rows_per_s=%.0f: writer update phase at "
               "%.0f%%\n",
               n, n / ti, 100 * ins_rate / (n / ti), n / tu, 100 * upd_rate / (n / tu));
}

int main(int argc, char **argv)
{
    uint64_t rows = 2000000;
    uint32_t nmetrics = 10000;
    size_t unit_rows = 18000;
    int flush_rows = 200000, keep = 0;
    const char *conninfo = NULL;
    char dir[] = "/tmp/gapg-bench-XXXXXX", line[1200], ci[512] = "";
    enum { O_ROWS = 0x100, O_METRICS, O_UNIT_ROWS, O_FLUSH_ROWS, O_CONNINFO, O_KEEP };
    static const struct option lo[] = {
        { "rows", required_argument, NULL, O_ROWS },
        { "metrics", required_argument, NULL, O_METRICS },
        { "unit-rows", required_argument, NULL, O_UNIT_ROWS },
        { "flush-rows", required_argument, NULL, O_FLUSH_ROWS },
        { "conninfo", required_argument, NULL, O_CONNINFO },
        { "keep", no_argument, NULL, O_KEEP },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *usage = "usage: %s [--rows N] [--metrics M] [--unit-rows U] [--flush-rows F] "
                        "[--conninfo STR] [--keep]\n";
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (opt) {
        case O_ROWS: rows = strtoull(optarg, NULL, 10); break;
        case O_METRICS: nmetrics = (uint32_t)strtoul(optarg, NULL, 10); break;
        case O_UNIT_ROWS: unit_rows = strtoull(optarg, NULL, 10); break;
        case O_FLUSH_ROWS: flush_rows = atoi(optarg); break;
        case O_CONNINFO: conninfo = optarg; break;
        case O_KEEP: keep = 1; break;
        case 'h':
            printf(usage, argv[0]);
            return 0;
        default:
            bench_opt_error(argv[0], opt, argv);
            fprintf(stderr, usage, argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        fprintf(stderr, usage, argv[0]);
        return 2;
    }
    if (!conninfo) {
        if (!mkdtemp(dir))
            return 1;
        snprintf(line, sizeof line, "tools/pg-private.sh start %s", dir);
        FILE *f = popen(line, "r");
        if (!f || !fgets(ci, sizeof ci, f) || pclose(f) != 0) {
            fprintf(stderr, "could not start a private PostgreSQL (run from the repository root)\n");
            return 1;
        }
        ci[strcspn(ci, "\n")] = '\0';
        conninfo = ci;
    }
    const struct ga_policy *p = ga_policy_builtin("medium");
    struct pg_writer_metric_def *defs = malloc(nmetrics * sizeof *defs);
    char (*names)[24] = malloc(nmetrics * sizeof *names);
    for (uint32_t i = 0; i < nmetrics; i++) {
        snprintf(names[i], sizeof names[i], "bench.%u", i);
        defs[i] = (struct pg_writer_metric_def){ i, names[i], p };
    }
    int64_t base = ga_now_real_ns() / PG_SCHEMA_DAY_NS * PG_SCHEMA_DAY_NS;
    printf("bench_pgw: rows=%" PRIu64 " metrics=%u unit_rows=%zu flush_rows=%d fsync=on\n", rows,
           nmetrics, unit_rows, flush_rows);
    double ins = 0, upd = 0;
    int rc = run_phase("insert", conninfo, rows, nmetrics, unit_rows, flush_rows, base, 0, defs, &ins) ||
             run_phase("update", conninfo, rows, nmetrics, unit_rows, flush_rows, base, 0.25, defs, &upd);
    if (!rc)
        ceilings(conninfo, ins, upd);
    if (ci[0] && !keep) {
        snprintf(line, sizeof line, "tools/pg-private.sh stop %s && rm -rf %s", dir, dir);
        if (system(line) != 0)
            fprintf(stderr, "could not clean %s\n", dir);
    }
    free(defs);
    free(names);
    return rc;
}
