/* http_ops.c — the operational endpoints on the HTTP listener:
 *   GET /metrics  Prometheus text of the counter table (daemon/stat_table.h)
 *   GET /healthz  liveness: the event loop runs a request within 2 s
 *   GET /readyz   readiness: storage connected, journal not full, not
 *                 draining
 * Handlers run on the listener's threads; what only the loop thread may
 * read is read there through ga_loop_call (daemon/loop_call.h).  The bodies
 * are built by daemon/http/ops_render.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "daemon/control/control_ops.h"
#include "daemon/daemon.h"
#include "daemon/engine_worker.h"
#include "daemon/http/http_routes.h"
#include "proto/base/log.h"
#include "daemon/loop_call.h"
#include "daemon/http/ops_render.h"
#include "proto/ga_err.h"
#include "storage/journal.h"
#include "storage/pg_conn.h"

#define OPS_LOOP_LIMIT_MS 2000

static void loop_failed(struct http_resp *resp, int rc)
{
    if (rc == GA_ESHUTDOWN)
        http_error(resp, 503, "the daemon is stopping");
    else
        http_error(resp, 503, "the event loop did not answer within %d ms", OPS_LOOP_LIMIT_MS);
}

/* ---- /metrics ---------------------------------------------------------------- */

struct stats_call {
    struct ga_daemon *d;
    msgpack_sbuffer sb;
};

static void take_stats(void *arg)
{
    struct stats_call *c = arg;
    msgpack_packer pk;
    msgpack_packer_init(&pk, &c->sb, msgpack_sbuffer_write);
    ga_ctl_pack_stats(c->d, &pk);
}

void http_metrics(struct http_req *req, struct http_resp *resp)
{
    struct stats_call c = { http_server_app(req->srv), { 0 } };
    msgpack_sbuffer_init(&c.sb);
    int rc = ga_loop_call(c.d->loop_call, take_stats, &c, OPS_LOOP_LIMIT_MS);
    if (rc < 0) {
        msgpack_sbuffer_destroy(&c.sb);
        loop_failed(resp, rc);
        return;
    }
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    char *text = NULL;
    size_t len = 0;
    rc = msgpack_unpack_next(&u, c.sb.data, c.sb.size, NULL) == MSGPACK_UNPACK_SUCCESS
             ? ops_prom_render(&u.data, stat_table, stat_table_n, stat_table_families,
                               stat_table_nfamilies, &text, &len)
             : GA_EINVAL;
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&c.sb);
    if (rc < 0) {
        http_error(resp, 500, "cannot render the counters: %s", ga_strerror(rc));
        return;
    }
    resp->status = 200;
    resp->body = text;
    resp->len = len;
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- /healthz ---------------------------------------------------------------- */

static void nothing(void *arg)
{
    (void)arg;
}

static void send_json(struct http_resp *resp, int status, char *json)
{
    if (status < 0) {
        http_error(resp, 500, "out of memory");
        return;
    }
    resp->status = status;
    resp->body = json;
    resp->len = strlen(json);
    resp->content_type = "application/json";
}

void http_healthz(struct http_req *req, struct http_resp *resp)
{
    struct ga_daemon *d = http_server_app(req->srv);
    int64_t t0 = ga_now_mono_ns();
    int rc = ga_loop_call(d->loop_call, nothing, NULL, OPS_LOOP_LIMIT_MS);
    int64_t t1 = ga_now_mono_ns();
    struct ops_health h = {
        .loop_ok = rc == 0,
        .draining = __atomic_load_n(&d->draining, __ATOMIC_ACQUIRE),
        .loop_ms = (double)(t1 - t0) / 1e6,
        .limit_ms = OPS_LOOP_LIMIT_MS,
        .uptime_s = (double)(t1 - d->start_mono_ns) / 1e9,
        .version = GA_VERSION,
    };
    char *json = NULL;
    int status = ops_health_render(&h, &json);
    send_json(resp, status, json);
}

/* ---- /readyz ----------------------------------------------------------------- */

struct ready_call {
    struct ga_daemon *d;
    struct ops_ready r;
    char storage_error[512];
    char journal_error[128];
};

static void take_ready(void *arg)
{
    struct ready_call *c = arg;
    struct ga_daemon *d = c->d;
    struct pg_conn_status pg;
    struct engine_worker_status ew;
    memset(&ew, 0, sizeof ew);
    pg_conn_get_status(d->storage, &pg);
    int wr = 0;
    if (d->worker) {
        engine_worker_get_status(d->worker, &ew);
        wr = ew.have_writer;
    }
    enum pg_conn_state st = wr ? ew.writer.state : pg.state;
    const char *last = wr && ew.writer.last_error[0] ? ew.writer.last_error : pg.last_error;
    snprintf(c->storage_error, sizeof c->storage_error, "%s", last);
    c->r.state = ga_state_name(d->state);
    c->r.draining = d->state == GA_STATE_DRAINING;
    c->r.storage_connected = st == PG_CONN_CONNECTED;
    c->r.storage_state = pg_conn_state_name(st);
    c->r.storage_error = c->storage_error;
    if (d->journal) {
        struct journal_stats js;
        journal_get_stats(d->journal, &js);
        c->r.journal_retained_bytes = js.retained_bytes;
        if (js.stalled_errno)
            snprintf(c->journal_error, sizeof c->journal_error, "%s", strerror(js.stalled_errno));
        else if (js.failed)
            snprintf(c->journal_error, sizeof c->journal_error, "a write or fsync failed; the "
                     "daemon restarts");
        c->r.journal_error = c->journal_error;
    }
    c->r.journal_max_bytes = (uint64_t)d->cfg->journal.max_bytes;
    c->r.journal_segment_bytes = (uint64_t)d->cfg->journal.segment_bytes;
}

void http_readyz(struct http_req *req, struct http_resp *resp)
{
    struct ready_call c;
    memset(&c, 0, sizeof c);
    c.d = http_server_app(req->srv);
    int rc = ga_loop_call(c.d->loop_call, take_ready, &c, OPS_LOOP_LIMIT_MS);
    if (rc < 0) {
        /* The loop is busy: during the drain it blocks in the final commit. */
        if (!__atomic_load_n(&c.d->draining, __ATOMIC_ACQUIRE)) {
            loop_failed(resp, rc);
            return;
        }
        memset(&c.r, 0, sizeof c.r);
        c.r.state = "draining";
        c.r.draining = 1;
        c.r.unread = 1;
    }
    char *json = NULL;
    int status = ops_ready_render(&c.r, &json);
    send_json(resp, status, json);
}
