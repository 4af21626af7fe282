/* bench_capacity.c — capacity from the ingest socket to committed rows:
 * the real gpuaggd, a real PostgreSQL, gpuagg-load at a fixed offered rate
 * with data time running at wall time (docs/PERFORMANCE.md, "Capacity
 * (socket to committed rows)").
 *
 *   build/bench/bench_capacity [--metrics M] [--interval DUR] [--policy P]
 *       [--rate R] [--duration S] [--connections N] [--batch B]
 *       [--backend cpu|gpu] [--out DIR] [--conninfo STR] [--table T]
 *       [--copy-sessions N] ...            (--help lists them all)
 *
 * Steps: a private PostgreSQL (tools/pg-private.sh) with a fresh database,
 * unless --conninfo names one; a config for gpuaggd; gpuaggd; gpuagg-load
 * sending one point of each metric per interval (-k 1 --realtime); the
 * daemon's counters sampled over the control socket, a table line every
 * --report-s; after the load, the time until committed catches up with
 * acknowledged; gpuaggd stopped; PostgreSQL's own parallel-COPY ceiling
 * for the rows the daemon wrote (cap_ceiling.c); a summary and the issue's
 * goals, each reported met or not.  Exit 0 when every step ran, 1 when one
 * failed, 2 usage.  Files (config, logs, samples.tsv) stay in --out.
 *
 * --backfill SPAN: instead, SPAN of history (data time ending now) of every
 * metric at one point per interval, sent as fast as acknowledgements allow;
 * the summary adds the points/s committed over the load and the drain. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "proto/mp_util.h"
#include "proto/ts_parse.h"
#include "tools/bench/capacity/cap.h"

struct opts {
    uint32_t metrics, connections, batch, inflight;
    double interval_s, rate, duration_s, sample_s, report_s, drain_timeout_s, warmup_s, backfill_s;
    const char *policy, *backend, *out, *conninfo, *table, *bindir, *pg_script, *pg_dir, *log_level;
    int copy_sessions, flush_rows, flush_interval_ms, writers, workers, snapshot_s, keep, ceiling_only;
    long long open_max;               /* storage.open_buckets_max; -1: the daemon's */
    long long window_txn;             /* storage.window_txn_bytes; -1: the daemon's */
    long long coarse_delay;           /* storage.coarse_delay_ms; -1: the daemon's */
    long max_metrics;
    long journal_gib;
};

static void usage(FILE *f)
{
    fprintf(f,
"usage: bench_capacity [options]\n"
"  --metrics M           live metrics (default 100000)\n"
"  --interval DUR        sampling interval of each metric: 1s, 2s, 500ms, 1min (default 2s)\n"
"  --policy P            archive policy, a built-in name such as medium, ceilometer-low (default medium)\n"
"  --rate R              offered points/s (default M / interval: data time runs at wall time)\n"
"  --duration S          seconds of load (default 120)\n"
"  --backfill DUR        history instead of live data: DUR of data time (1h, 1d, ...)\n"
"                        ending now, one point of each metric per interval, sent as\n"
"                        fast as acknowledgements allow (--rate and --duration unused)\n"
"  --connections N       ingest connections (default 2)\n"
"  --batch B             points per batch, at most metrics / connections (default 5000)\n"
"  --inflight N          unacknowledged batches per connection (default 8)\n"
"  --backend cpu|gpu     gpu.devices none | all (default cpu)\n"
"  --out DIR             config, logs, samples.tsv, the PostgreSQL cluster (default bench-capacity)\n"
"  --conninfo STR        use this PostgreSQL database (empty) instead of a private one\n"
"  --pg-dir DIR          where the private PostgreSQL lives (default OUT/pg)\n"
"  --table T             the daemon's aggregate table, for the ceiling (default buckets)\n"
"  --copy-sessions N     parallel COPY sessions of the ceiling (default: online CPUs)\n"
"  --flush-rows N        storage.flush_rows (default: the daemon's)\n"
"  --flush-interval-ms N storage.flush_interval_ms (default: the daemon's)\n"
"  --writers N           storage.writers (default: the daemon's, auto: one a CPU, 4..16)\n"
"  --workers N           engine.workers, the partition workers (default: the daemon's,\n"
"                        auto: a quarter of the CPUs, 1..16)\n"
"  --open-buckets-max N  storage.open_buckets_max (default: the daemon's; 0: every\n"
"                        bucket a row of buckets, no blocks)\n"
"  --window-txn-bytes N  storage.window_txn_bytes (default: the daemon's; 0: a window\n"
"                        set in one transaction)\n"
"  --window-snapshot-s S storage.window_snapshot_s (default: the daemon's)\n"
"  --coarse-delay-ms MS  storage.coarse_delay_ms (default: the daemon's; 0: coarse\n"
"                        archives' buckets written with their batch)\n"
"  --journal-gib G       journal.max_bytes in GiB (default: the daemon's, auto: sized from\n"
"                        the CPUs and the disk; it must hold a window_snapshot_s of ingest,\n"
"                        about 31 MB/s at 1 M points/s)\n"
"  --max-metrics N       limits.max_metrics (default: --metrics, the live metrics the\n"
"                        run needs; 0: the daemon's default, auto: one a KiB of a quarter\n"
"                        of the memory)\n"
"  --sample-ms N         status sampling period (default 200)\n"
"  --report-s S          seconds between table lines (default 5)\n"
"  --warmup S            the summary also gives the lag without the first S s (default 10)\n"
"  --drain-timeout S     stop waiting for the commit after S seconds (default 300)\n"
"  --bindir DIR          where gpuaggd and gpuagg-load are (default: found next to this program)\n"
"  --pg-script PATH      tools/pg-private.sh (default: found next to this program)\n"
"  --log-level L         gpuaggd's log.level (default info; debug logs every commit's timings)\n"
"  --keep                keep PostgreSQL running, the COPY file and the ceiling table\n"
"  --ceiling-only        only PostgreSQL's ceiling for the rows already in --table of\n"
"                        --conninfo (no daemon, no load); prints one 'ceiling' line\n"
"exit status: 0 the run completed (goals are reported, not asserted), 1 a step failed, 2 usage\n");
}

/* A duration in ts_parse_duration's syntax ("10", "10s", "500ms", "5min",
 * "1h"), more than zero, in seconds.  0 or -1. */
static int parse_dur(const char *s, double *out)
{
    int64_t ns;
    if (ts_parse_duration(s, &ns) < 0 || ns <= 0)
        return -1;
    *out = (double)ns / 1e9;
    return 0;
}

static int parse_num(const char *s, double min, double max, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

static int bad(const char *opt, const char *val)
{
    fprintf(stderr, "bench_capacity: bad value for %s: '%s'\n(see bench_capacity --help)\n", opt, val);
    return 2;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    enum { O_METRICS = 256, O_INTERVAL, O_POLICY, O_RATE, O_DURATION, O_CONN, O_BATCH, O_INFLIGHT,
           O_BACKEND, O_OUT, O_CONNINFO, O_PGDIR, O_TABLE, O_SESSIONS, O_FROWS, O_FMS, O_SAMPLE,
           O_REPORT, O_DRAIN, O_BINDIR, O_SCRIPT, O_KEEP, O_LOGLEVEL, O_WARMUP, O_WRITERS, O_WORKERS, O_SNAP, O_MAXM, O_JGIB, O_CEILONLY, O_OPENMAX, O_WTXN, O_COARSE, O_BACKFILL };
    static const struct option lo[] = {
        { "metrics", 1, 0, O_METRICS }, { "interval", 1, 0, O_INTERVAL }, { "policy", 1, 0, O_POLICY },
        { "rate", 1, 0, O_RATE }, { "duration", 1, 0, O_DURATION }, { "connections", 1, 0, O_CONN },
        { "batch", 1, 0, O_BATCH }, { "inflight", 1, 0, O_INFLIGHT }, { "backend", 1, 0, O_BACKEND },
        { "out", 1, 0, O_OUT }, { "conninfo", 1, 0, O_CONNINFO }, { "pg-dir", 1, 0, O_PGDIR },
        { "table", 1, 0, O_TABLE }, { "copy-sessions", 1, 0, O_SESSIONS }, { "flush-rows", 1, 0, O_FROWS },
        { "flush-interval-ms", 1, 0, O_FMS }, { "sample-ms", 1, 0, O_SAMPLE }, { "report-s", 1, 0, O_REPORT },
        { "drain-timeout", 1, 0, O_DRAIN }, { "bindir", 1, 0, O_BINDIR }, { "pg-script", 1, 0, O_SCRIPT },
        { "keep", 0, 0, O_KEEP }, { "log-level", 1, 0, O_LOGLEVEL },
        { "warmup", 1, 0, O_WARMUP }, { "writers", 1, 0, O_WRITERS }, { "workers", 1, 0, O_WORKERS }, { "open-buckets-max", 1, 0, O_OPENMAX },
        { "window-txn-bytes", 1, 0, O_WTXN },
        { "coarse-delay-ms", 1, 0, O_COARSE }, { "backfill", 1, 0, O_BACKFILL },
        { "window-snapshot-s", 1, 0, O_SNAP }, { "max-metrics", 1, 0, O_MAXM },
        { "journal-gib", 1, 0, O_JGIB }, { "ceiling-only", 0, 0, O_CEILONLY },
        { "help", 0, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    int opt;
    double v;
    while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (opt) {
        case O_METRICS: if (parse_num(optarg, 1, 1 << 24, &v) < 0) return bad("--metrics", optarg); o->metrics = (uint32_t)v; break;
        case O_INTERVAL: if (parse_dur(optarg, &o->interval_s) < 0) return bad("--interval", optarg); break;
        case O_POLICY: o->policy = optarg; break;
        case O_BACKFILL: if (parse_dur(optarg, &o->backfill_s) < 0) return bad("--backfill", optarg); break;
        case O_RATE: if (parse_num(optarg, 1e-3, 1e9, &o->rate) < 0) return bad("--rate", optarg); break;
        case O_DURATION: if (parse_num(optarg, 1, 1e6, &o->duration_s) < 0) return bad("--duration", optarg); break;
        case O_CONN: if (parse_num(optarg, 1, 1000, &v) < 0) return bad("--connections", optarg); o->connections = (uint32_t)v; break;
        case O_BATCH: if (parse_num(optarg, 1, 4 << 20, &v) < 0) return bad("--batch", optarg); o->batch = (uint32_t)v; break;
        case O_INFLIGHT: if (parse_num(optarg, 1, 1 << 20, &v) < 0) return bad("--inflight", optarg); o->inflight = (uint32_t)v; break;
        case O_BACKEND:
            if (strcmp(optarg, "cpu") && strcmp(optarg, "gpu")) return bad("--backend", optarg);
            o->backend = optarg;
            break;
        case O_OUT: o->out = optarg; break;
        case O_CONNINFO: o->conninfo = optarg; break;
        case O_PGDIR: o->pg_dir = optarg; break;
        case O_TABLE: o->table = optarg; break;
        case O_SESSIONS: if (parse_num(optarg, 1, 64, &v) < 0) return bad("--copy-sessions", optarg); o->copy_sessions = (int)v; break;
        case O_FROWS: if (parse_num(optarg, 1, 1e9, &v) < 0) return bad("--flush-rows", optarg); o->flush_rows = (int)v; break;
        case O_FMS: if (parse_num(optarg, 1, 3.6e6, &v) < 0) return bad("--flush-interval-ms", optarg); o->flush_interval_ms = (int)v; break;
        case O_WRITERS: if (parse_num(optarg, 1, 64, &v) < 0) return bad("--writers", optarg); o->writers = (int)v; break;
        case O_WORKERS: if (parse_num(optarg, 1, 64, &v) < 0) return bad("--workers", optarg); o->workers = (int)v; break;
        case O_OPENMAX: if (parse_num(optarg, 0, 1000000000, &v) < 0) return bad("--open-buckets-max", optarg); o->open_max = (long long)v; break;
        case O_COARSE: if (parse_num(optarg, 0, 600000, &v) < 0) return bad("--coarse-delay-ms", optarg); o->coarse_delay = (long long)v; break;
        case O_WTXN: if (parse_num(optarg, 0, 1 << 30, &v) < 0) return bad("--window-txn-bytes", optarg); o->window_txn = (long long)v; break;
        case O_MAXM: if (parse_num(optarg, 0, 1e9, &v) < 0) return bad("--max-metrics", optarg); o->max_metrics = (long)v; break;
        case O_JGIB: if (parse_num(optarg, 1, 1024, &v) < 0) return bad("--journal-gib", optarg); o->journal_gib = (long)v; break;
        case O_SNAP: if (parse_num(optarg, 10, 86400, &v) < 0) return bad("--window-snapshot-s", optarg); o->snapshot_s = (int)v; break;
        case O_SAMPLE: if (parse_num(optarg, 10, 60000, &v) < 0) return bad("--sample-ms", optarg); o->sample_s = v / 1e3; break;
        case O_REPORT: if (parse_num(optarg, 0.1, 3600, &o->report_s) < 0) return bad("--report-s", optarg); break;
        case O_DRAIN: if (parse_num(optarg, 1, 1e6, &o->drain_timeout_s) < 0) return bad("--drain-timeout", optarg); break;
        case O_BINDIR: o->bindir = optarg; break;
        case O_SCRIPT: o->pg_script = optarg; break;
        case O_KEEP: o->keep = 1; break;
        case O_CEILONLY: o->ceiling_only = 1; break;
        case O_LOGLEVEL: o->log_level = optarg; break;
        case O_WARMUP: if (parse_num(optarg, 0, 1e6, &o->warmup_s) < 0) return bad("--warmup", optarg); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench_capacity: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o->ceiling_only && !o->conninfo) {
        fprintf(stderr, "bench_capacity: --ceiling-only needs --conninfo\n");
        return 2;
    }
    if (o->connections > o->metrics) {
        fprintf(stderr, "bench_capacity: --connections (%u) must not exceed --metrics (%u)\n", o->connections, o->metrics);
        return 2;
    }
    if (o->backfill_s && o->backfill_s < o->interval_s) {
        fprintf(stderr, "bench_capacity: --backfill must span at least one --interval\n");
        return 2;
    }
    if (o->backfill_s)
        o->rate = 0;                   /* as fast as acknowledgements allow */
    else if (!o->rate)
        o->rate = o->metrics / o->interval_s;
    /* A batch holds at most one point of each metric of its connection:
     * a bigger one would carry several intervals, and --realtime would
     * hold it back until the last of them (a backfill has no such wait). */
    uint32_t per_conn = (o->metrics + o->connections - 1) / o->connections;
    if (!o->backfill_s && o->batch > per_conn) {
        fprintf(stderr, "bench_capacity: --batch %u lowered to %u, the metrics of one connection\n", o->batch,
                per_conn);
        o->batch = per_conn;
    }
    if (!o->copy_sessions) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->copy_sessions = n < 1 ? 1 : n > 64 ? 64 : (int)n;
    }
    return 0;
}

/* ---- the run ---- */

/* SIGINT / SIGTERM: stop the load, then stop and clean up as at the end. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* the stats read at the end (stats_names): 8 counters, then the engine worker's from S_BATCHES */
enum { S_BATCHES = 8, NSTATS = 15 };

struct run {
    struct opts *o;
    char out[PATH_MAX], rundir[PATH_MAX], cfg[PATH_MAX + 32], log[PATH_MAX + 32], pgdir[PATH_MAX];
    char gpuaggd[PATH_MAX + 16], load[PATH_MAX + 16], script[PATH_MAX + 32];
    char conninfo[1024];
    const char *rows_from;            /* what db_rows counts: --table, or bucket_rows */
    int pg_started, tmp_rundir;
    pid_t daemon;
    struct ctl_client ctl;
    struct cap_series se;
    FILE *tsv;
    double t_load_end, drain_s, rss_base_kib;
    int load_rc, drained;
    uint64_t acked_final, rows_final, db_points, db_rows;
    uint64_t stats[NSTATS];         /* the stats_names at the end of the drain */
    int have_stats;
    struct cap_ceiling ceil;
    int ceil_ok;
};

static int exists(const char *p)
{
    return access(p, X_OK) == 0;
}

/* gpuaggd and gpuagg-load: --bindir, else ../bin (a build tree: build/bench
 * next to build/bin), else this program's own directory (the GPU bundle's
 * bin/).  pg-private.sh: ../../tools/ (the repo), else ../ (the bundle). */
static int find_tools(struct run *r)
{
    char self[PATH_MAX], dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0)
        return -1;
    self[n] = 0;
    snprintf(dir, sizeof dir, "%s", dirname(self));
    const struct opts *o = r->o;
    if (o->bindir) {
        snprintf(r->gpuaggd, sizeof r->gpuaggd, "%s/gpuaggd", o->bindir);
    } else {
        snprintf(r->gpuaggd, sizeof r->gpuaggd, "%s/../bin/gpuaggd", dir);
        if (!exists(r->gpuaggd))
            snprintf(r->gpuaggd, sizeof r->gpuaggd, "%s/gpuaggd", dir);
    }
    snprintf(r->load, sizeof r->load, "%.*s/gpuagg-load", (int)(strrchr(r->gpuaggd, '/') - r->gpuaggd), r->gpuaggd);
    if (o->pg_script) {
        snprintf(r->script, sizeof r->script, "%s", o->pg_script);
    } else {
        snprintf(r->script, sizeof r->script, "%s/../../tools/pg-private.sh", dir);
        if (!exists(r->script))
            snprintf(r->script, sizeof r->script, "%s/../pg-private.sh", dir);
    }
    const char *need[] = { r->gpuaggd, r->load, o->conninfo ? NULL : r->script };
    for (size_t i = 0; i < 3; i++)
        if (need[i] && !exists(need[i])) {
            fprintf(stderr, "bench_capacity: %s not found (see --bindir, --pg-script)\n", need[i]);
            return -1;
        }
    return 0;
}

static void no_notice(void *arg, const char *msg)
{
    (void)arg, (void)msg;
}

static int sql_exec(const char *conninfo, const char *sql, char *val, size_t vlen)
{
    PGconn *c = PQconnectdb(conninfo);
    int rc = -1;
    PQsetNoticeProcessor(c, no_notice, NULL);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_capacity: PostgreSQL: %s", PQerrorMessage(c));
    } else {
        PGresult *res = PQexec(c, sql);
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_COMMAND_OK || (st == PGRES_TUPLES_OK && PQntuples(res) == 1)) {
            if (val && vlen)
                snprintf(val, vlen, "%s", st == PGRES_TUPLES_OK ? PQgetvalue(res, 0, 0) : "");
            rc = 0;
        } else {
            fprintf(stderr, "bench_capacity: %s: %s", sql, PQerrorMessage(c));
        }
        PQclear(res);
    }
    PQfinish(c);
    return rc;
}

/* A private PostgreSQL and a fresh database in it, or the given one. */
static int start_pg(struct run *r)
{
    if (r->o->conninfo) {
        snprintf(r->conninfo, sizeof r->conninfo, "%s", r->o->conninfo);
        return 0;
    }
    char base[900];
    char *argv[] = { "/bin/sh", r->script, "start", r->pgdir, NULL };
    printf("== PostgreSQL: %s start %s\n", r->script, r->pgdir);
    if (cap_run_capture(argv, base, sizeof base) != 0 || !base[0]) {
        fprintf(stderr, "bench_capacity: pg-private.sh start failed\n");
        return -1;
    }
    r->pg_started = 1;
    if (sql_exec(base, "DROP DATABASE IF EXISTS gpuagg_capacity WITH (FORCE)", NULL, 0) < 0 ||
        sql_exec(base, "CREATE DATABASE gpuagg_capacity", NULL, 0) < 0)
        return -1;
    snprintf(r->conninfo, sizeof r->conninfo, "%s dbname=gpuagg_capacity", base);
    return 0;
}

static void stop_pg(struct run *r)
{
    if (!r->pg_started || r->o->keep)
        return;
    char buf[256];
    char *argv[] = { "/bin/sh", r->script, "stop", r->pgdir, NULL };
    cap_run_capture(argv, buf, sizeof buf);
}

static int write_config(struct run *r)
{
    const struct opts *o = r->o;
    FILE *f = fopen(r->cfg, "w");
    if (!f) {
        fprintf(stderr, "bench_capacity: %s: %s\n", r->cfg, strerror(errno));
        return -1;
    }
    fprintf(f, "# written by bench_capacity\n"
               "log: { level: \"%s\" }\n"
               "control: { socket: \"%s/control.sock\" }\n"
               "listen: { unix: \"%s/ingest.sock\", tcp: \"\", udp: \"\" }\n"
               "storage:\n  conninfo: \"%s\"\n",
            o->log_level, r->rundir, r->rundir, r->conninfo);
    if (o->flush_rows)
        fprintf(f, "  flush_rows: %d\n", o->flush_rows);
    if (o->flush_interval_ms)
        fprintf(f, "  flush_interval_ms: %d\n", o->flush_interval_ms);
    if (o->writers)
        fprintf(f, "  writers: %d\n", o->writers);
    if (o->open_max >= 0)
        fprintf(f, "  open_buckets_max: %lld\n", o->open_max);
    if (o->window_txn >= 0)
        fprintf(f, "  window_txn_bytes: %lld\n", o->window_txn);
    if (o->coarse_delay >= 0)
        fprintf(f, "  coarse_delay_ms: %lld\n", o->coarse_delay);
    if (o->snapshot_s)
        fprintf(f, "  window_snapshot_s: %d\n", o->snapshot_s);
    fprintf(f, "limits: { max_metrics: %ld }\n", o->max_metrics);
    if (o->workers)
        fprintf(f, "engine: { workers: %d }\n", o->workers);
    fprintf(f, "journal: { dir: \"%s/journal\"", r->out);
    if (o->journal_gib)
        fprintf(f, ", max_bytes: %ldGiB", o->journal_gib);
    fprintf(f, " }\n"
               "gpu: { devices: %s }\n"
               "archive_policy_rules: []\n"
               "default_archive_policy: \"%s\"\n",
            strcmp(o->backend, "gpu") == 0 ? "all" : "none", o->policy);
    int bad_write = ferror(f) | (fclose(f) != 0);
    if (bad_write) {
        fprintf(stderr, "bench_capacity: %s: write failed\n", r->cfg);
        return -1;
    }
    char msg[2048];
    char *argv[] = { r->gpuaggd, "--check-config", r->cfg, NULL };
    if (cap_run_capture(argv, msg, sizeof msg) != 0) {
        fprintf(stderr, "bench_capacity: gpuaggd refused the config %s (see above)\n", r->cfg);
        return -1;
    }
    return 0;
}

/* Start gpuaggd and wait until its engine runs (state loaded from
 * PostgreSQL); print the backends it uses. */
static int start_daemon(struct run *r)
{
    char *argv[] = { r->gpuaggd, "--config", r->cfg, "--foreground", NULL };
    printf("== gpuaggd --config %s (log %s)\n", r->cfg, r->log);
    if ((r->daemon = cap_spawn(argv, NULL, r->log)) < 0)
        return -1;
    char sock[PATH_MAX + 16], err[512] = "", state[32] = "";
    snprintf(sock, sizeof sock, "%s/control.sock", r->rundir);
    double end = cap_now() + 120;
    r->ctl.fd = -1;
    while (cap_now() < end) {
        if (cap_wait(r->daemon, 0) >= 0) {
            fprintf(stderr, "bench_capacity: gpuaggd exited at start; see %s\n", r->log);
            r->daemon = 0;
            return -1;
        }
        if (r->ctl.fd < 0 && ctl_client_connect(&r->ctl, sock, 5000) < 0) {
            ctl_client_close(&r->ctl);
            r->ctl.fd = -1;
        } else {
            struct cap_sample s;
            if (cap_read_sample(&r->ctl, r->daemon, 0, &s, state, sizeof state, err, sizeof err) == 0 &&
                strcmp(state, "running") == 0)
                break;
        }
        usleep(100000);
    }
    if (strcmp(state, "running") != 0) {
        fprintf(stderr, "bench_capacity: the engine is not running after 120 s (state '%s' %s); see %s\n",
                state, err, r->log);
        return -1;
    }
    struct ctl_reply rep;
    if (ctl_client_call(&r->ctl, "status", NULL, 0, &rep, err, sizeof err) == 0 && rep.ok) {
        const msgpack_object *b = mp_map_get(rep.result, "backends");
        printf("   backends:");
        for (uint32_t i = 0; b && b->type == MSGPACK_OBJECT_ARRAY && i < b->via.array.size; i++) {
            const char *dev = "?", *st = "?";
            size_t dl = 1, sl = 1;
            mp_get_str(&b->via.array.ptr[i], "device", &dev, &dl);
            mp_get_str(&b->via.array.ptr[i], "state", &st, &sl);
            printf(" %.*s (%.*s)", (int)dl, dev, (int)sl, st);
        }
        printf("\n");
    }
    return 0;
}

static void stop_daemon(struct run *r)
{
    if (r->daemon <= 0)
        return;
    kill(r->daemon, SIGTERM);
    int rc = cap_wait(r->daemon, 300);
    if (rc < 0) {
        fprintf(stderr, "bench_capacity: gpuaggd still draining after 300 s; killing it\n");
        kill(r->daemon, SIGKILL);
        rc = cap_wait(r->daemon, 30);
    }
    if (rc != 0)
        fprintf(stderr, "bench_capacity: gpuaggd exited %d; see %s\n", rc, r->log);
    r->daemon = 0;
}

/* ---- sampling and the table ---- */

static void print_head(void)
{
    printf("%8s %10s %10s %10s %10s %10s %7s %7s %7s %8s %9s\n", "elapsed", "offered", "acked",
           "aggregated", "committed", "rows/s", "lag p50", "p99", "max", "RSS MiB", "RSS/metric");
    printf("%8s %10s %10s %10s %10s %10s %7s %7s %7s %8s %9s\n", "s", "pts/s", "pts/s", "pts/s", "pts/s", "",
           "s", "s", "s", "", "B");
}

/* One table line for the samples from index a to b (inclusive). */
static void print_line(struct run *r, size_t a, size_t b, double offered)
{
    const struct cap_sample *x = &r->se.s[a], *y = &r->se.s[b];
    double dt = y->t - x->t;
    if (dt <= 0)
        return;
    double rows_s = (double)(y->rows - x->rows) / dt;
    printf("%8.1f %10.0f %10.0f %10.0f %10.0f %10.0f %7.2f %7.2f %7.2f %8.0f %9.0f\n", y->t, offered,
           (double)(y->accepted - x->accepted) / dt, (double)(y->engine_points - x->engine_points) / dt,
           (y->committed_points - x->committed_points) / dt, rows_s,
           cap_lag_quantile(&r->se, x->t, y->t, 0.50, 0), cap_lag_quantile(&r->se, x->t, y->t, 0.99, 0),
           cap_lag_quantile(&r->se, x->t, y->t, 1.0, 0), (double)y->rss_kib / 1024.0,
           (double)y->rss_kib * 1024.0 / r->o->metrics);
    fflush(stdout);
}

static int sample(struct run *r, double t0)
{
    struct cap_sample s;
    char err[512];
    if (cap_read_sample(&r->ctl, r->daemon, cap_now() - t0, &s, NULL, 0, err, sizeof err) < 0) {
        fprintf(stderr, "bench_capacity: %s\n", err);
        return -1;
    }
    if (cap_series_add(&r->se, &s) < 0)
        return -1;
    const struct cap_sample *x = &r->se.s[r->se.n - 1];
    if (r->tsv)
        fprintf(r->tsv, "%.3f\t%llu\t%llu\t%llu\t%llu\t%llu\t%.0f\t%llu\t%llu\t%.3f\t%.3f\t%.3f\t%ld\n", x->t,
                (unsigned long long)x->durable_lsn, (unsigned long long)x->processed_lsn,
                (unsigned long long)x->committed_lsn, (unsigned long long)x->accepted,
                (unsigned long long)x->engine_points, x->committed_points, (unsigned long long)x->rows,
                (unsigned long long)x->pending_rows, x->lag_s, x->engine_lag_s, x->writer_lag_s, x->rss_kib);
    return 0;
}

static void sleep_until(double t)
{
    double d = t - cap_now();
    if (d > 0) {
        struct timespec ts = { (time_t)d, (long)((d - floor(d)) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

/* The load, sampled; then the drain until committed_lsn reaches the
 * durable position at the load's end. */
static int drive(struct run *r)
{
    const struct opts *o = r->o;
    char a_conn[PATH_MAX + 16], a_n[16], a_m[16], a_b[16], a_i[16], a_rate[32], a_step[32], a_d[32];
    char a_start[32], a_pts[32];
    char out[PATH_MAX + 16], err[PATH_MAX + 16];
    snprintf(a_conn, sizeof a_conn, "%s/ingest.sock", r->rundir);
    snprintf(a_n, sizeof a_n, "%u", o->connections);
    snprintf(a_m, sizeof a_m, "%u", o->metrics);
    snprintf(a_b, sizeof a_b, "%u", o->batch);
    snprintf(a_i, sizeof a_i, "%u", o->inflight);
    snprintf(a_rate, sizeof a_rate, "%.3f", o->rate);
    snprintf(a_step, sizeof a_step, "%lldns", (long long)llround(o->interval_s * 1e9));
    snprintf(a_d, sizeof a_d, "%g", o->duration_s);
    snprintf(out, sizeof out, "%s/load.json", r->out);
    snprintf(err, sizeof err, "%s/load.err", r->out);
    unlink(out);
    unlink(err);
    /* live: one point of each metric an interval, at wall time, for the
     * duration; a backfill: every metric's history of the span, ending
     * now, as fast as acknowledgements allow */
    char *argv[32] = { r->load, "--connect", a_conn, "--connections", a_n, "--metrics", a_m, "--batch", a_b,
                       "--inflight", a_i, "-k", "1", "--step", a_step, "--drain", "600", "--prefix", "cap.",
                       "--json" };
    int na = 20;
    if (o->backfill_s) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        long long steps = (long long)floor(o->backfill_s / o->interval_s);
        long long start = (long long)now.tv_sec * 1000000000LL + now.tv_nsec -
                          steps * llround(o->interval_s * 1e9);
        snprintf(a_start, sizeof a_start, "%lld", start);
        snprintf(a_pts, sizeof a_pts, "%lld", steps * (long long)o->metrics);
        char *mode[] = { "--start", a_start, "--rate", "max", "--points", a_pts };
        memcpy(argv + na, mode, sizeof mode);
        na += 6;
    } else {
        char *mode[] = { "--start", "now", "--realtime", "--rate", a_rate, "--duration", a_d };
        memcpy(argv + na, mode, sizeof mode);
        na += 7;
    }
    argv[na] = NULL;
    printf("== load:");
    for (char **p = argv; *p; p++)
        printf(" %s", *p);
    printf("\n");
    print_head();
    double t0 = cap_now();
    if (sample(r, t0) < 0)              /* the baseline, before the first batch */
        return -1;
    r->rss_base_kib = (double)r->se.s[0].rss_kib;
    pid_t load = cap_spawn(argv, out, err);
    if (load < 0)
        return -1;
    size_t line_from = 0;
    double next = t0, next_line = t0 + o->report_s;
    for (;;) {
        next += o->sample_s;
        sleep_until(next);
        if (sample(r, t0) < 0) {
            kill(load, SIGTERM);
            cap_wait(load, 10);
            return -1;
        }
        if (interrupted)
            kill(load, SIGTERM);
        int rc = cap_wait(load, 0);
        if (rc >= 0) {
            r->load_rc = rc;
            r->t_load_end = r->se.s[r->se.n - 1].t;
            break;
        }
        if (cap_now() >= next_line) {
            print_line(r, line_from, r->se.n - 1, o->rate);
            line_from = r->se.n - 1;
            next_line += o->report_s;
        }
    }
    /* The load's last stretch: its own line unless it is short, then it
     * goes with the drain's. */
    if (r->se.n - 1 > line_from && r->t_load_end - r->se.s[line_from].t >= o->report_s / 2) {
        print_line(r, line_from, r->se.n - 1, o->rate);
        line_from = r->se.n - 1;
    }
    if (r->load_rc != 0)
        fprintf(stderr, "bench_capacity: gpuagg-load exited %d; see %s\n", r->load_rc, err);
    /* The drain: sample faster, until everything acknowledged is committed. */
    uint64_t target = r->se.s[r->se.n - 1].durable_lsn;
    double t_end = cap_now();
    next_line = t_end + o->report_s;
    for (;;) {
        if (cap_now() >= next_line) {
            print_line(r, line_from, r->se.n - 1, 0);
            line_from = r->se.n - 1;
            next_line += o->report_s;
        }
        const struct cap_sample *x = &r->se.s[r->se.n - 1];
        if (x->committed_lsn >= target) {
            r->drained = 1;
            r->drain_s = x->t - r->t_load_end;
            break;
        }
        if (cap_now() - t_end > o->drain_timeout_s || interrupted)
            break;
        sleep_until(cap_now() + 0.05);
        if (sample(r, t0) < 0)
            return -1;
    }
    if (r->se.n - 1 > line_from)
        print_line(r, line_from, r->se.n - 1, 0);
    const struct cap_sample *last = &r->se.s[r->se.n - 1];
    r->acked_final = last->accepted;
    r->rows_final = last->rows;
    /* Not drained in time is a result (the drain goal), not a failure. */
    if (!r->drained)
        fprintf(stderr, "bench_capacity: not drained after %g s\n", o->drain_timeout_s);
    return r->load_rc == 0 && !interrupted ? 0 : -1;
}

/* Counters of `stats` that say where the time went (docs/COUNTERS.md). */
static const char *const stats_names[NSTATS] = {
    "storage.transactions", "storage.rows_fresh", "storage.fresh_fallbacks", "storage.retries",
    "pipeline.journal_only_batches", "pipeline.journal_full_waits", "ingest.backpressure_pauses",
    "engine.late_points",
    /* the engine worker's time (S_FEEDS on) */
    "engine.batches", "engine.feeds", "engine.feed_ms", "engine.submit_ms", "engine.snapshot_ms",
    "engine.gpu_rebuild_ms", "engine.window_points",
};

static void read_stats(struct run *r)
{
    struct ctl_reply rep;
    char err[256];
    if (ctl_client_call(&r->ctl, "stats", NULL, 0, &rep, err, sizeof err) < 0 || !rep.ok)
        return;
    for (int i = 0; i < NSTATS; i++)
        if (mp_get_uint(rep.result, stats_names[i], &r->stats[i]) < 0)
            return;
    r->have_stats = 1;
}

/* ---- the summary ---- */

static const char *yes(int v)
{
    return v ? "met" : "NOT met";
}

static void summary(struct run *r, int completed)
{
    const struct opts *o = r->o;
    const struct cap_series *se = &r->se;
    double tl = r->t_load_end, td = se->s[se->n - 1].t;      /* the load and the drain */
    double p50 = cap_lag_quantile(se, 0, tl, 0.5, 0), p99 = cap_lag_quantile(se, 0, tl, 0.99, 0);
    double mx = cap_lag_quantile(se, 0, tl, 1, 0), ep99 = cap_lag_quantile(se, 0, tl, 0.99, 1);
    double emx = cap_lag_quantile(se, 0, tl, 1, 1), wmax = 0;
    long rss_max = 0;
    const struct cap_sample *at_end = se->s;
    for (size_t i = 0; i < se->n; i++) {
        rss_max = se->s[i].rss_kib > rss_max ? se->s[i].rss_kib : rss_max;
        if (se->s[i].t <= tl) {
            wmax = se->s[i].writer_lag_s > wmax ? se->s[i].writer_lag_s : wmax;
            at_end = &se->s[i];
        }
    }
    double writer_mean = td > 0 ? (double)r->rows_final / td : 0;
    printf("\n== summary\n");
    printf("| what | value |\n|---|---|\n");
    printf("| workload | %u metrics, one point each per %g s, policy %s, backend %s |\n", o->metrics,
           o->interval_s, o->policy, o->backend);
    if (o->backfill_s)
        printf("| offered | %g s of history (%lld points of each metric), as fast as acks allow, over %u "
               "connections, batches of %u |\n", o->backfill_s, (long long)floor(o->backfill_s / o->interval_s),
               o->connections, o->batch);
    else
        printf("| offered | %.0f points/s for %g s over %u connections, batches of %u |\n", o->rate, o->duration_s,
               o->connections, o->batch);
    printf("| acked | %llu points, %.0f points/s over the load |\n", (unsigned long long)r->acked_final,
           tl > 0 ? (double)at_end->accepted / tl : 0);
    printf("| aggregated (engine) | %.0f points/s over the load |\n", tl > 0 ? (double)at_end->engine_points / tl : 0);
    printf("| committed | %.0f points/s over the load |\n", tl > 0 ? at_end->committed_points / tl : 0);
    if (o->backfill_s && r->drained && td > 0)
        printf("| committed, load and drain | %.0f points/s: %llu points in %.2f s |\n",
               (double)r->acked_final / td, (unsigned long long)r->acked_final, td);
    printf("| rows committed | %llu, %.0f rows/s over the load and the drain |\n", (unsigned long long)r->rows_final,
           writer_mean);
    printf("| storage lag over the load | p50 %.2f s, p99 %.2f s, max %.2f s |\n", p50, p99, mx);
    if (o->warmup_s > 0 && o->warmup_s < tl)
        printf("| storage lag after the first %g s | p50 %.2f s, p99 %.2f s, max %.2f s |\n", o->warmup_s,
               cap_lag_quantile(se, o->warmup_s, tl, 0.5, 0), cap_lag_quantile(se, o->warmup_s, tl, 0.99, 0),
               cap_lag_quantile(se, o->warmup_s, tl, 1, 0));
    printf("| engine lag over the load | p99 %.2f s, max %.2f s (processed_lsn behind durable_lsn) |\n", ep99, emx);
    printf("| writer's oldest pending unit | max %.2f s (storage.lag_s) |\n", wmax);
    if (r->have_stats) {
        printf("| counters at the end |");
        for (int i = 0; i < S_BATCHES; i++)
            printf(" %s %llu%s", stats_names[i], (unsigned long long)r->stats[i],
                   i < S_BATCHES - 1 ? "," : " |\n");
        const uint64_t *x = r->stats + S_BATCHES;
        double wall_ms = td * 1000;
        printf("| engine workers | %llu batches in %llu feeds (%.1f a feed); of the %.0f s of load "
               "and drain, summed over the workers: feeds %.1f %%, handing rows to the writers %.1f %%, "
               "window sets %.1f %%; "
               "GPU window pool rebuilds %.1f %% of that time, %llu raw points held at the end |\n",
               (unsigned long long)x[0], (unsigned long long)x[1], x[1] ? (double)x[0] / x[1] : 0.0,
               td, 100 * x[2] / wall_ms, 100 * x[3] / wall_ms, 100 * x[4] / wall_ms,
               100 * x[5] / wall_ms, (unsigned long long)x[6]);
    }
    if (r->drained)
        printf("| drain | %.2f s from the load's end to committed = acked |\n", r->drain_s);
    else
        printf("| drain | not drained within %g s |\n", o->drain_timeout_s);
    printf("| daemon RSS | %.0f MiB before the load, max %.0f MiB: %.0f B per live metric (%.0f B above the start) |\n",
           r->rss_base_kib / 1024, (double)rss_max / 1024, (double)rss_max * 1024 / o->metrics,
           ((double)rss_max - r->rss_base_kib) * 1024 / o->metrics);
    printf("| in PostgreSQL | sum(metrics.points) %llu (acked %llu), %llu rows in %s |\n",
           (unsigned long long)r->db_points, (unsigned long long)r->acked_final, (unsigned long long)r->db_rows,
           r->rows_from);
    if (r->ceil_ok) {
        printf("| PostgreSQL ceiling | %.0f rows/s: %llu rows (%.1f MiB binary) by %d parallel COPY sessions in %.2f s, into %s |\n",
               r->ceil.rows_per_s, (unsigned long long)r->ceil.rows, (double)r->ceil.bytes / 1048576.0,
               r->ceil.sessions, r->ceil.load_s, r->ceil.partitions ? "a partitioned clone" : "a clone of the table");
        printf("| writer / ceiling | %.1f %% |\n", 100 * writer_mean / r->ceil.rows_per_s);
    } else {
        printf("| PostgreSQL ceiling | not measured |\n");
    }
    printf("\n== goals (docs/PERFORMANCE.md \"Capacity\"; reported, not asserted)\n");
    printf("  storage lag p99 <= 2 s ............ %s (%.2f s)\n", yes(p99 <= 2), p99);
    printf("  drain <= 2 s ....................... %s (%s%.2f s)\n", yes(r->drained && r->drain_s <= 2),
           r->drained ? "" : "not drained, > ", r->drained ? r->drain_s : o->drain_timeout_s);
    if (r->ceil_ok)
        printf("  writer >= 80 %% of the COPY ceiling . %s (%.1f %%; a capacity figure only while the writer is behind)\n",
               yes(writer_mean >= 0.8 * r->ceil.rows_per_s), 100 * writer_mean / r->ceil.rows_per_s);
    int two = o->metrics >= 100000 && o->interval_s <= 2 && strcmp(o->policy, "medium") == 0 && o->duration_s >= 120;
    int gpu = o->metrics >= 1000000 && o->interval_s <= 1 && strcmp(o->policy, "medium") == 0 &&
              o->duration_s >= 600 && strcmp(o->backend, "gpu") == 0;
    printf("  this run is at least the 2-core workload (100,000 metrics at 0.5 points/s, medium, 2 min): %s\n", two ? "yes" : "no");
    printf("  this run is at least the GPU host workload (1,000,000 metrics at 1 point/s, medium, 10 min, gpu): %s\n",
           gpu ? "yes" : "no");
    printf("\nbench_capacity: %s\n", completed ? "completed" : "a step failed (see above)");
}

static int db_check(struct run *r)
{
    char v[64], sql[512];
    if (sql_exec(r->conninfo, "SELECT coalesce(sum(points), 0) FROM metrics", v, sizeof v) < 0)
        return -1;
    r->db_points = strtoull(v, NULL, 10);
    /* gpuagg's buckets: every bucket, the open ones in blocks too */
    if (!strcmp(r->o->table, "buckets") &&
        sql_exec(r->conninfo, "SELECT to_regclass('bucket_rows') IS NOT NULL", v, sizeof v) == 0 &&
        v[0] == 't')
        r->rows_from = "bucket_rows";
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", r->rows_from);
    if (sql_exec(r->conninfo, sql, v, sizeof v) < 0)
        return -1;
    r->db_rows = strtoull(v, NULL, 10);
    return 0;
}

static int setup_dirs(struct run *r)
{
    const struct opts *o = r->o;
    if (mkdir(o->out, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "bench_capacity: mkdir %s: %s\n", o->out, strerror(errno));
        return -1;
    }
    if (!realpath(o->out, r->out)) {
        fprintf(stderr, "bench_capacity: %s: %s\n", o->out, strerror(errno));
        return -1;
    }
    chmod(r->out, 0755);
    snprintf(r->cfg, sizeof r->cfg, "%s/gpuaggd.yaml", r->out);
    snprintf(r->log, sizeof r->log, "%s/gpuaggd.log", r->out);
    unlink(r->log);
    snprintf(r->pgdir, sizeof r->pgdir, "%s", o->pg_dir ? o->pg_dir : "");
    if (!o->pg_dir)
        snprintf(r->pgdir, sizeof r->pgdir, "%.*s/pg", PATH_MAX - 4, r->out);
    /* Unix socket paths are limited to 107 bytes. */
    snprintf(r->rundir, sizeof r->rundir, "%.*s/run", PATH_MAX - 5, r->out);
    if (strlen(r->rundir) > 90) {
        snprintf(r->rundir, sizeof r->rundir, "/tmp/bench-capacity.XXXXXX");
        if (!mkdtemp(r->rundir))
            return -1;
        r->tmp_rundir = 1;
    } else if (mkdir(r->rundir, 0755) < 0 && errno != EEXIST) {
        return -1;
    }
    char jdir[PATH_MAX + 16], tsv[PATH_MAX + 16];
    snprintf(jdir, sizeof jdir, "%s/journal", r->out);
    if (cap_clean_dir(jdir) < 0)
        return -1;
    snprintf(tsv, sizeof tsv, "%s/samples.tsv", r->out);
    if ((r->tsv = fopen(tsv, "w")))
        fprintf(r->tsv, "t_s\tdurable_lsn\tprocessed_lsn\tcommitted_lsn\tacked_points\tengine_points\t"
                        "committed_points\trows_committed\tpending_rows\tlag_s\tengine_lag_s\twriter_lag_s\trss_kib\n");
    return 0;
}

/* --ceiling-only: the ceiling for the rows in o->table, as one line of
 * key=value for scripts (tools/bench/bench_cluster.py). */
static int ceiling_only(const struct opts *o)
{
    struct cap_ceiling c;
    char path[PATH_MAX + 32], err[1024];
    if (mkdir(o->out, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "bench_capacity: mkdir %s: %s\n", o->out, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof path, "%s/ceiling.copy", o->out);
    if (cap_ceiling_run(o->conninfo, o->table, path, o->copy_sessions, o->keep, &c, err, sizeof err) < 0) {
        fprintf(stderr, "bench_capacity: ceiling: %s\n", err);
        return 1;
    }
    printf("ceiling rows=%llu bytes=%llu sessions=%d export_s=%.3f load_s=%.3f rows_per_s=%.0f partitions=%d\n",
           (unsigned long long)c.rows, (unsigned long long)c.bytes, c.sessions, c.export_s, c.load_s, c.rows_per_s,
           c.partitions);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {
        .metrics = 100000, .connections = 2, .batch = 5000, .inflight = 8, .interval_s = 2,
        .max_metrics = -1, .open_max = -1, .window_txn = -1, .coarse_delay = -1,
        .duration_s = 120, .sample_s = 0.2, .report_s = 5, .drain_timeout_s = 300, .warmup_s = 10, .policy = "medium",
        .backend = "cpu", .out = "bench-capacity", .table = "buckets", .log_level = "info",
    };
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    if (o.max_metrics < 0)
        o.max_metrics = (long)o.metrics;
    if (o.ceiling_only)
        return ceiling_only(&o);
    struct run r = { .o = &o, .rows_from = o.table };
    r.ctl.fd = -1;
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int ok = find_tools(&r) == 0 && setup_dirs(&r) == 0 && start_pg(&r) == 0 && write_config(&r) == 0 &&
             start_daemon(&r) == 0;
    if (ok)
        ok = drive(&r) == 0;
    if (r.daemon > 0)
        read_stats(&r);
    ctl_client_close(&r.ctl);
    stop_daemon(&r);
    if (r.pg_started || o.conninfo) {
        if (ok)
            ok = db_check(&r) == 0;
        if (ok) {
            char path[PATH_MAX + 32], err[1024];
            snprintf(path, sizeof path, "%s/ceiling.copy", r.out);
            printf("== PostgreSQL ceiling: %s copied out, loaded back by %d COPY sessions\n", o.table,
                   o.copy_sessions);
            r.ceil_ok = cap_ceiling_run(r.conninfo, o.table, path, o.copy_sessions, o.keep, &r.ceil, err,
                                        sizeof err) == 0;
            if (!r.ceil_ok)
                fprintf(stderr, "bench_capacity: ceiling: %s\n", err);
            ok = r.ceil_ok;
        }
    }
    stop_pg(&r);
    if (r.tsv)
        fclose(r.tsv);
    if (r.tmp_rundir)
        rmdir(r.rundir);
    if (r.se.n)
        summary(&r, ok);
    cap_series_free(&r.se);
    return ok ? 0 : 1;
}
