/* pg_query.h — read queries for the control ops `metrics` and `query`.
 *
 * Runs on its own small pool of connections (application_name
 * "gpuaggd-query"), never the writer's, so reads do not wait behind a
 * flush.  Calls block: make them from a worker thread (uv_queue_work), not
 * the loop thread.  Connections are opened on first use and reopened after
 * a failure (one retry per call).  They see committed data only: call
 * pg_writer_flush first for "everything up to now".
 *
 * Thread-safety: every function may be called from any number of threads
 * at once (up to pool_size run in parallel, the rest wait), except
 * pg_query_close. */
#ifndef GA_PG_QUERY_H
#define GA_PG_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "proto/policy.h"

struct pg_query;

struct pg_query_metric {
    uint32_t id;
    char *name;                       /* owned by the array */
    char policy[GA_POLICY_NAME_MAX];
    uint64_t points;                  /* points aggregated (metrics.points) */
};

struct pg_query_point {
    int64_t ts;                       /* bucket start, ns since the epoch */
    double value;
};

/* Create the pool (no connection yet).  conninfo copied; pool_size >= 1.
 * Returns 0, GA_EINVAL or GA_ENOMEM. */
int pg_query_open(struct pg_query **out, const char *conninfo, int pool_size);
/* Close every connection and free q.  No call may be running.  NULL ok. */
void pg_query_close(struct pg_query *q);

/* Every metric, ascending by name (byte order).  *out (free with
 * pg_query_metrics_free) and *n.  Returns 0, GA_EIO (cannot connect) or GA_EDB,
 * with err[errlen]. */
int pg_query_metrics(struct pg_query *q, struct pg_query_metric **out, size_t *n, char *err, size_t errlen);
void pg_query_metrics_free(struct pg_query_metric *m, size_t n);

/* The buckets of one series with start_ns <= ts < stop_ns, ascending ts.
 * granularity_ns must be one of the metric's policy, method (a name such
 * as "mean", "90pct", "rate:max") one of its methods.  *out is malloc'ed
 * (free(); NULL when *n == 0).  Returns 0; GA_ENOENT unknown metric;
 * GA_EINVAL unknown method, method or granularity not in the metric's
 * policy, or start_ns > stop_ns; GA_EIO / GA_EDB; err[errlen] names the
 * offending value. */
int pg_query(struct pg_query *q, const char *metric, int64_t granularity_ns, const char *method,
              int64_t start_ns, int64_t stop_ns, struct pg_query_point **out, size_t *n, char *err,
              size_t errlen);

/* Run one read statement with text parameters and text results (for the
 * HTTP API, whose SQL is built from the request).  Returns the result
 * (PGRES_TUPLES_OK; the caller PQclear()s it) or NULL with *rc = GA_EIO
 * (cannot connect) or GA_EDB and err set.  Retries once on a fresh
 * connection when the old one was broken. */
struct pg_result;
struct pg_result *pg_query_exec(struct pg_query *q, const char *sql, int nparams, const char *const *vals,
                           int *rc, char *err, size_t errlen);
/* As pg_query_exec, for a statement run often: prepared as name (a static
 * string, the same sql every call) on each connection the first time it
 * runs there, so that PostgreSQL can keep its plan; the result in binary
 * format (read its fields with pg_util_get_i32, pg_util_get_i64, pg_util_get_f64).
 * Past PG_QUERY_MAX_PREPARED names a connection runs it unprepared. */
#define PG_QUERY_MAX_PREPARED 8
struct pg_result *pg_query_exec_prepared(struct pg_query *q, const char *name, const char *sql,
                                    int nparams, const char *const *vals, int *rc, char *err,
                                    size_t errlen);

#endif
