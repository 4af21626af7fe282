/* cap.h — bench_capacity, the capacity benchmark from the ingest socket to
 * committed rows (docs/PERFORMANCE.md, "Capacity (socket to committed
 * rows)").  tools/bench/bench_capacity.c is the program (options, the run's
 * steps, the summary); the modules here are its parts:
 *   cap_proc.c     child processes (gpuaggd, gpuagg-load, pg-private.sh),
 *                  the daemon's config, RSS from /proc
 *   cap_sample.c   the daemon's counters over time: samples through the
 *                  control protocol, lag and committed points from the
 *                  journal positions, quantiles, the table lines
 *   cap_ceiling.c  PostgreSQL's own ceiling: the rows the daemon wrote,
 *                  copied out and loaded back by N parallel COPY sessions
 * Single-threaded except cap_ceiling's COPY sessions. */
#ifndef GA_CAP_H
#define GA_CAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/gpuaggctl/client.h"

/* ---- cap_proc.c ---- */

/* Start argv[0] (a path) with stdout and stderr appended to the files
 * out_path and err_path (NULL: inherited).  Returns the pid, or -1 with
 * the reason printed. */
pid_t cap_spawn(char *const argv[], const char *out_path, const char *err_path);
/* Run argv to completion, its stdout into out (NUL-terminated, cut at
 * outlen - 1, trailing newlines removed), stderr inherited.  Returns the
 * exit status, or -1 when it could not run or died of a signal. */
int cap_run_capture(char *const argv[], char *out, size_t outlen);
/* Wait up to timeout_s for pid to exit.  Returns its exit status (128 + the
 * signal if it died of one), or -1 when it is still running. */
int cap_wait(pid_t pid, double timeout_s);
/* VmRSS of pid in KiB from /proc/PID/status, or -1. */
long cap_rss_kib(pid_t pid);
/* Remove the regular files directly in dir (a stale journal); creates dir
 * when missing.  Returns 0 or -1 (printed). */
int cap_clean_dir(const char *dir);
/* Monotonic clock in seconds. */
double cap_now(void);

/* ---- cap_sample.c ---- */

/* One reading of the daemon's `status` (docs/COUNTERS.md). */
struct cap_sample {
    double t;                   /* seconds since the load started (negative before) */
    uint64_t durable_lsn;       /* journal.durable_lsn: below it everything is fsynced, so acked */
    uint64_t committed_lsn;     /* storage.committed_lsn, raised to the journal's start */
    uint64_t processed_lsn;     /* engine.processed_lsn */
    uint64_t accepted;          /* ingest.points_accepted */
    uint64_t engine_points;     /* engine.points */
    uint64_t rows;              /* storage.rows_committed */
    uint64_t pending_rows;      /* storage.pending_rows */
    double writer_lag_s;        /* storage.lag_s: the writer's oldest uncommitted unit */
    long rss_kib;               /* the daemon's VmRSS */
    /* derived by cap_series_add */
    double lag_s;               /* storage lag: see cap_series_add */
    double engine_lag_s;        /* the same for processed_lsn */
    double committed_points;    /* points below committed_lsn */
};

struct cap_series {
    struct cap_sample *s;
    size_t n, cap;
    uint64_t base_lsn;          /* durable_lsn before the load: the journal's start */
};

/* Read one sample over c (op "status"); t is stored as given, rss from
 * /proc of pid.  Also returns the engine state in state (may be NULL).
 * Returns 0, or -1 with the reason in err. */
int cap_read_sample(struct ctl_client *c, pid_t pid, double t, struct cap_sample *s,
                    char *state, size_t statelen, char *err, size_t errlen);

/* Append s and derive its lag and committed points from the samples so far.
 * The storage lag at a sample is the age of the oldest acknowledged byte
 * not yet committed: 0 when committed_lsn >= durable_lsn, else now minus
 * the moment durable_lsn passed committed_lsn (interpolated between the two
 * samples around it).  committed_points interpolates ingest.points_accepted
 * the same way.  Returns 0 or -1 (out of memory). */
int cap_series_add(struct cap_series *se, const struct cap_sample *s);
void cap_series_free(struct cap_series *se);

/* The q-quantile (0..1, nearest rank) of the lag_s (engine: engine_lag_s)
 * of the samples with t in [t0, t1]; 0 when there are none. */
double cap_lag_quantile(const struct cap_series *se, double t0, double t1, double q, int engine);

/* ---- cap_ceiling.c ---- */

struct cap_ceiling {
    uint64_t rows;              /* rows copied out of the table and loaded back */
    uint64_t bytes;             /* size of the binary COPY file */
    double export_s, load_s;
    double rows_per_s;          /* rows / load_s */
    int sessions;
    int partitions;             /* partitions of the clone (0: a plain table) */
};

/* Copy every row of table (as the SQL names it, e.g. "aggregates"; for
 * gpuagg's "buckets", every bucket: the view bucket_rows, which adds the
 * open buckets packed in blocks) out to
 * the binary COPY file path, in primary-key order, create a fresh table of the same shape
 * (partitions, defaults, constraints, indexes, storage parameters), load
 * the rows back through `sessions` connections in parallel, each with one
 * COPY FROM STDIN, and time that load.  keep: leave the file and the fresh
 * table.  Returns 0, or -1 with the reason in err. */
int cap_ceiling_run(const char *conninfo, const char *table, const char *path, int sessions,
                    int keep, struct cap_ceiling *res, char *err, size_t errlen);

#endif
