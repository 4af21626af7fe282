/* control_ops_query.c — the deferred control ops (proto/PROTOCOL.md):
 * flush (answered when the engine worker's flush commits) and metrics /
 * query (run on the control server's blocking-work threads with the pg_query
 * pool, never on the loop). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control_ops.h"
#include "daemon/daemon.h"
#include "daemon/engine_worker.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "proto/ts_parse.h"

#define FLUSH_TIMEOUT_MAX_MS 86400000u
#define METRIC_NAME_MAX 255

/* ---- flush ---------------------------------------------------------------- */

static int flush_finish(struct ga_daemon *d, int rc, msgpack_packer *pk, char *err, size_t errlen)
{
    if (rc == GA_ESHUTDOWN) {
        snprintf(err, errlen, "the daemon stopped before committing; what was not "
                 "committed stays in the journal");
        return rc;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", ga_strerror(rc));
        return rc;
    }
    msgpack_pack_map(pk, 1);
    mp_pack_cstr(pk, "committed_lsn");
    if (d->worker) {
        struct engine_worker_status st;
        engine_worker_get_status(d->worker, &st);
        msgpack_pack_uint64(pk, st.writer.committed_lsn);
    } else {
        msgpack_pack_nil(pk);           /* the engine stopped meanwhile */
    }
    return 0;
}

/* From the worker or writer thread, possibly under the worker's lock. */
static void flush_done(void *ctx, int rc)
{
    ga_ctl_finish_on_loop(ctx, rc, flush_finish);
}

int ga_ctl_op_flush(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                    msgpack_packer *pk, char *err, size_t errlen)
{
    uint64_t timeout_ms = 0;
    int rc = mp_get_uint(args, "timeout_ms", &timeout_ms);
    if ((rc < 0 && rc != GA_ENOENT) || timeout_ms > FLUSH_TIMEOUT_MAX_MS) {
        snprintf(err, errlen, "'timeout_ms' must be an integer 0..%u (milliseconds)",
                 FLUSH_TIMEOUT_MAX_MS);
        return GA_EBADARG;
    }
    if (d->state != GA_STATE_DRAINING && !d->worker && d->cluster) {
        snprintf(err, errlen, "cluster: this daemon's partitions are being reassigned (or it "
                 "owns none); retry");
        return GA_EBUSY;
    }
    if (d->state == GA_STATE_DRAINING || !d->worker) {
        snprintf(err, errlen, "the daemon is shutting down");
        return GA_ESHUTDOWN;
    }
    struct engine_worker_status st;
    engine_worker_get_status(d->worker, &st);
    if (st.state == ENGINE_WORKER_STOPPED) {
        snprintf(err, errlen, "storage unavailable: the storage writer is not running%s%s",
                 st.load_error[0] ? ": " : "", st.load_error);
        return GA_EDB;
    }
    /* While the workers load their state (a first start, or PostgreSQL
     * unreachable), the flush waits for it too, within timeout_ms: the
     * message says what it was waiting on. */
    char msg[256];
    if (st.state == ENGINE_WORKER_LOADING)
        snprintf(msg, sizeof msg, "not committed within %" PRIu64 " ms: the engine was loading "
                 "its state from PostgreSQL%s%.160s", timeout_ms,
                 st.load_error[0] ? ", last error: " : "", st.load_error);
    else
        snprintf(msg, sizeof msg, "not committed within %" PRIu64 " ms (storage %s%s%.160s)",
                 timeout_ms, pg_conn_state_name(st.have_writer ? st.writer.state : PG_CONN_CONNECTING),
                 st.writer.last_error[0] ? ": " : "", st.writer.last_error);
    ga_ctl_set_timeout(req, timeout_ms, msg);
    if ((rc = engine_worker_flush(d->worker, flush_done, req)) < 0) {
        snprintf(err, errlen, "%s", ga_strerror(rc));
        return rc;
    }
    return GA_CTL_DEFERRED;
}

/* ---- argument helpers ----------------------------------------------------- */

/* Copy the str args[key] into buf (cap bytes with the NUL).  Returns 0,
 * GA_ENOENT (absent) or GA_EBADARG with err set. */
static int get_cstr(const msgpack_object *args, const char *key, char *buf,
                    size_t cap, char *err, size_t errlen)
{
    const char *s;
    size_t n;
    int rc = mp_get_str(args, key, &s, &n);
    if (rc == GA_ENOENT)
        return rc;
    if (rc < 0 || n >= cap || memchr(s, '\0', n)) {
        snprintf(err, errlen, "'%s' must be a string of at most %zu bytes", key, cap - 1);
        return GA_EBADARG;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 0;
}

/* A time argument: int ns since the epoch, float seconds, or RFC 3339 str.
 * Absent: *ns = dflt.  Returns 0 or GA_EBADARG with err. */
static int get_time(const msgpack_object *args, const char *key, int64_t dflt, int64_t *ns,
                    char *err, size_t errlen)
{
    const msgpack_object *o = mp_map_get(args, key);
    char why[128] = "";
    int rc = 0;
    if (!o || o->type == MSGPACK_OBJECT_NIL) {
        *ns = dflt;
        return 0;
    }
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 > INT64_MAX)
            rc = GA_ERANGE;
        else
            *ns = (int64_t)o->via.u64;
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *ns = o->via.i64;
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        rc = ts_from_seconds(o->via.f64, ns);
        break;
    case MSGPACK_OBJECT_STR:
        rc = ts_parse_rfc3339(o->via.str.ptr, o->via.str.size, ns, why, sizeof why);
        break;
    default:
        rc = GA_EINVAL;
        snprintf(why, sizeof why, "not an int, float or string");
    }
    if (rc < 0) {
        snprintf(err, errlen, "'%s': %s", key, why[0] ? why : "out of range");
        return GA_EBADARG;
    }
    return 0;
}

/* args[key] as an integer 1..max, dflt when absent. */
static int get_limit(const msgpack_object *args, uint64_t dflt, uint64_t max,
                     uint64_t *v, char *err, size_t errlen)
{
    int rc = mp_get_uint(args, "limit", v);
    if (rc == GA_ENOENT) {
        *v = dflt;
        return 0;
    }
    if (rc < 0 || *v < 1 || *v > max) {
        snprintf(err, errlen, "'limit' must be an integer 1..%" PRIu64, max);
        return GA_EBADARG;
    }
    return 0;
}

/* pg_query's codes, as the protocol reports them. */
static int map_pgq_error(int rc, const char *why, char *err, size_t errlen)
{
    switch (rc) {
    case GA_EIO:
        snprintf(err, errlen, "storage unavailable: %s", why);
        return GA_EDB;
    case GA_EDB:
        snprintf(err, errlen, "database error: %s", why);
        return GA_EDB;
    case GA_EINVAL:
        snprintf(err, errlen, "%s", why);
        return GA_EBADARG;
    default:
        snprintf(err, errlen, "%s", why[0] ? why : ga_strerror(rc));
        return rc;
    }
}

/* ---- query ---------------------------------------------------------------- */

struct query_job {
    struct ga_ctl_req *req;
    struct pg_query *q;
    char metric[METRIC_NAME_MAX + 1];
    char method[32];
    int64_t granularity_ns, start_ns, stop_ns;
    uint64_t limit;
    int loading;                      /* the engine had not loaded its state yet */
};

void control_ops_query_pack_rows(msgpack_packer *pk, const char *metric, const char *method,
                                 int64_t granularity_ns, const struct pg_query_point *p, size_t n,
                                 size_t limit)
{
    size_t k = n < limit ? n : limit;
    msgpack_pack_map(pk, 5);
    mp_pack_kv_str(pk, "metric", metric);
    mp_pack_kv_str(pk, "method", method);
    mp_pack_kv_int(pk, "granularity_ns", granularity_ns);
    mp_pack_cstr(pk, "rows");
    msgpack_pack_array(pk, k);
    for (size_t i = 0; i < k; i++) {
        msgpack_pack_array(pk, 2);
        msgpack_pack_int64(pk, p[i].ts);
        msgpack_pack_double(pk, p[i].value);
    }
    mp_pack_cstr(pk, "next");
    if (n > limit)
        msgpack_pack_int64(pk, p[limit].ts);
    else
        msgpack_pack_nil(pk);
}

static void query_run(void *arg)
{
    struct query_job *j = arg;
    char why[512] = "", err[640];
    struct pg_query_point *p = NULL;
    size_t n = 0;
    int rc = pg_query(j->q, j->metric, j->granularity_ns, j->method, j->start_ns, j->stop_ns, &p,
                       &n, why, sizeof why);
    if (rc < 0 && j->loading) {
        /* before the first load the schema may not be there yet: say so
         * rather than only the database's "relation does not exist" */
        char db[sizeof err];
        rc = map_pgq_error(rc, why, db, sizeof db);
        snprintf(err, sizeof err, "the engine has not loaded its state from PostgreSQL yet (a "
                 "first start migrates the schema then; gpuaggctl flush waits for it): %.400s", db);
        ga_ctl_reply(j->req, rc, NULL, err);
    } else if (rc < 0) {
        rc = map_pgq_error(rc, why, err, sizeof err);
        ga_ctl_reply(j->req, rc, NULL, err);
    } else {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        control_ops_query_pack_rows(&pk, j->metric, j->method, j->granularity_ns, p, n, (size_t)j->limit);
        ga_ctl_reply(j->req, sb.data ? 0 : GA_ENOMEM, &sb, NULL);
        msgpack_sbuffer_destroy(&sb);
    }
    free(p);
    free(j);
}

/* "granularity": seconds, int or float, > 0. */
static int get_granularity(const msgpack_object *args, int64_t *ns, char *err, size_t errlen)
{
    const msgpack_object *o = mp_map_get(args, "granularity");
    int rc = GA_EINVAL;
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX / 1000000000) {
        *ns = (int64_t)o->via.u64 * 1000000000;
        rc = 0;
    } else if (o && (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32)) {
        rc = ts_from_seconds(o->via.f64, ns);
    }
    if (rc < 0 || *ns <= 0) {
        snprintf(err, errlen, "'granularity' %s", o && o->type != MSGPACK_OBJECT_NIL
                 ? "must be a positive number of seconds" : "missing (seconds)");
        return GA_EBADARG;
    }
    return 0;
}

/* rc == 0: hand j to the query thread (fn frees it) and answer later;
 * otherwise free j and answer rc (err names the reason). */
static int defer_job(struct ga_ctl_req *req, void (*fn)(void *), void *j, int rc, char *err,
                     size_t errlen)
{
    if (rc == 0 && (rc = ga_ctl_run_blocking(req, fn, j)) < 0)
        snprintf(err, errlen, "%s", rc == GA_EBUSY ? "too many queries queued" : ga_strerror(rc));
    if (rc < 0) {
        free(j);
        return rc;
    }
    return GA_CTL_DEFERRED;
}

int ga_ctl_op_query(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                    msgpack_packer *pk, char *err, size_t errlen)
{
    if (!d->query) {
        snprintf(err, errlen, "storage queries are not available");
        return GA_EDB;
    }
    struct query_job *j = calloc(1, sizeof *j);
    if (!j)
        return GA_ENOMEM;
    int rc = get_cstr(args, "metric", j->metric, sizeof j->metric, err, errlen);
    if (rc == GA_ENOENT || (rc == 0 && !j->metric[0])) {
        snprintf(err, errlen, "'metric' missing");
        rc = GA_EBADARG;
    }
    if (rc == 0 &&
        (rc = get_cstr(args, "method", j->method, sizeof j->method, err, errlen)) == GA_ENOENT) {
        snprintf(err, errlen, "'method' missing (mean, max, ...)");
        rc = GA_EBADARG;
    }
    if (rc == 0)
        rc = get_granularity(args, &j->granularity_ns, err, errlen);
    if (rc == 0)
        rc = get_time(args, "start", INT64_MIN, &j->start_ns, err, errlen);
    if (rc == 0)
        rc = get_time(args, "stop", INT64_MAX, &j->stop_ns, err, errlen);
    if (rc == 0)
        rc = get_limit(args, CONTROL_OPS_QUERY_MAX_ROWS, CONTROL_OPS_QUERY_MAX_ROWS, &j->limit, err, errlen);
    if (rc == 0) {
        j->req = req;
        j->q = d->query;
        if (d->worker) {
            struct engine_worker_status st;
            engine_worker_get_status(d->worker, &st);
            j->loading = st.state == ENGINE_WORKER_LOADING;
        }
    }
    return defer_job(req, query_run, j, rc, err, errlen);
}

/* ---- metrics -------------------------------------------------------------- */

struct metrics_job {
    struct ga_ctl_req *req;
    struct pg_query *q;
    char prefix[METRIC_NAME_MAX + 1];
    char after[METRIC_NAME_MAX + 1];
    int has_after;
    uint64_t limit;
};

static void pack_metric(msgpack_packer *pk, const struct pg_query_metric *m)
{
    msgpack_pack_map(pk, 3);
    mp_pack_kv_str(pk, "name", m->name);
    mp_pack_kv_str(pk, "policy", m->policy);
    mp_pack_kv_uint(pk, "points", m->points);
}

size_t control_ops_query_pack_metrics(msgpack_packer *pk, const struct pg_query_metric *const *m, size_t n,
                                      size_t limit, size_t budget)
{
    msgpack_sbuffer sb;
    msgpack_packer epk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&epk, &sb, msgpack_sbuffer_write);
    size_t k = 0, kept = 0;
    for (; k < n && k < limit; k++) {
        pack_metric(&epk, m[k]);
        if (sb.size > budget)
            break;
        kept = sb.size;
    }
    msgpack_pack_map(pk, 2);
    mp_pack_cstr(pk, "metrics");
    msgpack_pack_array(pk, k);
    if (kept)
        msgpack_pack_str_body(pk, sb.data, kept);   /* raw bytes of the k entries */
    mp_pack_cstr(pk, "next");
    if (k < n && k > 0)
        mp_pack_cstr(pk, m[k - 1]->name);
    else
        msgpack_pack_nil(pk);
    msgpack_sbuffer_destroy(&sb);
    return k;
}

static void metrics_run(void *arg)
{
    struct metrics_job *j = arg;
    char why[512] = "", err[640];
    struct pg_query_metric *all = NULL;
    const struct pg_query_metric **sel = NULL;
    size_t n = 0, ns = 0, plen = strlen(j->prefix);
    int rc = pg_query_metrics(j->q, &all, &n, why, sizeof why);
    if (rc < 0) {
        rc = map_pgq_error(rc, why, err, sizeof err);
        ga_ctl_reply(j->req, rc, NULL, err);
        goto out;
    }
    if (!(sel = malloc((n ? n : 1) * sizeof *sel))) {
        ga_ctl_reply(j->req, GA_ENOMEM, NULL, NULL);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (strncmp(all[i].name, j->prefix, plen) == 0 &&
            (!j->has_after || strcmp(all[i].name, j->after) > 0))
            sel[ns++] = &all[i];
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    control_ops_query_pack_metrics(&pk, sel, ns, (size_t)j->limit, CONTROL_OPS_QUERY_METRICS_BUDGET);
    ga_ctl_reply(j->req, sb.data ? 0 : GA_ENOMEM, &sb, NULL);
    msgpack_sbuffer_destroy(&sb);
out:
    free(sel);
    pg_query_metrics_free(all, n);
    free(j);
}

int ga_ctl_op_metrics(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                      msgpack_packer *pk, char *err, size_t errlen)
{
    if (!d->query) {
        snprintf(err, errlen, "storage queries are not available");
        return GA_EDB;
    }
    struct metrics_job *j = calloc(1, sizeof *j);
    if (!j)
        return GA_ENOMEM;
    int rc = get_cstr(args, "prefix", j->prefix, sizeof j->prefix, err, errlen);
    if (rc == 0 || rc == GA_ENOENT) {
        rc = get_cstr(args, "after", j->after, sizeof j->after, err, errlen);
        j->has_after = rc == 0;
    }
    if (rc == 0 || rc == GA_ENOENT)
        rc = get_limit(args, CONTROL_OPS_QUERY_MAX_METRICS, CONTROL_OPS_QUERY_MAX_METRICS, &j->limit, err, errlen);
    if (rc == 0) {
        j->req = req;
        j->q = d->query;
    }
    return defer_job(req, metrics_run, j, rc, err, errlen);
}
