/* control_ops.c — the control protocol's operations (proto/PROTOCOL.md) and
 * the op table.  Each handler here packs one result object or returns a GA_E*
 * code + message; the deferred ones (flush, metrics, query) are in
 * control_ops_query.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/cluster.h"
#include "daemon/ingest/admit.h"
#include "daemon/control/control.h"
#include "daemon/control/control_ops.h"
#include "daemon/control/control_ops_jobs.h"
#include "daemon/daemon.h"
#include "daemon/engine_worker.h"
#include "daemon/latency.h"
#include "daemon/ingest/ceilo_resources.h"
#include "daemon/http/http_server.h"
#include "daemon/ingest/ingest.h"
#include "daemon/ingest/listener.h"
#include "daemon/pipeline.h"
#include "daemon/jobs/jobs.h"
#include "daemon/stat_snapshot.h"
#include "daemon/stat_table.h"
#include "storage/journal.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "storage/pg_conn.h"

static double uptime_s(const struct ga_daemon *d)
{
    return (double)(ga_now_mono_ns() - d->start_mono_ns) / 1e9;
}

static int op_ping(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                   msgpack_packer *pk, char *err, size_t errlen)
{
    msgpack_pack_map(pk, 2);
    mp_pack_kv_bool(pk, "pong", 1);
    mp_pack_kv_str(pk, "version", GA_VERSION);
    return 0;
}

/* The parts of the snapshot (daemon/stat_snapshot.h) that status reports
 * too: storage, the engine, ingest, the journal and the pipeline. */
static void take_snapshot(struct ga_daemon *d, struct stat_snapshot *s)
{
    memset(s, 0, sizeof *s);
    pg_conn_get_status(d->storage, &s->pg);
    if ((s->have_ew = d->worker != NULL))
        engine_worker_get_status(d->worker, &s->ew);
    if ((s->have_in = d->ingest != NULL))
        ga_ingest_get_stats(d->ingest, &s->in);
    if ((s->have_jn = d->journal != NULL))
        journal_get_stats(d->journal, &s->jn);
    if ((s->have_pl = d->pipeline != NULL))
        pipeline_get_stats(d->pipeline, &s->pl);
}

static void pack_storage(const struct stat_snapshot *s, msgpack_packer *pk)
{
    const struct pg_writer_status *w = &s->ew.writer;
    int wr = s->ew.have_writer;
    msgpack_pack_map(pk, 15);
    /* The writer's view once it runs; before, the health checker's. */
    mp_pack_kv_str(pk, "state", pg_conn_state_name(wr ? w->state : s->pg.state));
    mp_pack_kv_str(pk, "last_error", wr && w->last_error[0] ? w->last_error : s->pg.last_error);
    mp_pack_kv_double(pk, "state_for_s",
                      (double)(ga_now_real_ns() - (wr ? w->since_real_ns : s->pg.since_real_ns)) / 1e9);
    mp_pack_kv_uint(pk, "attempts", s->pg.attempts);
    mp_pack_kv_uint(pk, "connects", s->pg.connects);
    mp_pack_kv_int(pk, "server_version", s->pg.server_version);
    mp_pack_kv_double(pk, "lag_s", wr ? w->lag_s : 0);
    mp_pack_kv_uint(pk, "lag_journal_bytes", wr ? w->lag_lsn : 0);
    mp_pack_kv_uint(pk, "pending_rows", wr ? w->pending_rows : 0);
    mp_pack_kv_uint(pk, "committed_lsn", wr ? w->committed_lsn : 0);
    mp_pack_kv_uint(pk, "rows_committed", wr ? w->rows_committed : 0);
    mp_pack_kv_uint(pk, "buckets_committed", wr ? w->buckets_committed : 0);
    mp_pack_kv_uint(pk, "rows_rejected", wr ? w->rows_rejected : 0);
    mp_pack_kv_str(pk, "last_rejected", wr ? w->last_rejected : "");
    mp_pack_kv_str(pk, "load_error", s->ew.load_error);
}

/* Each partition worker: its partitions, state, position and work. */
static void pack_workers(const struct engine_worker_status *ew, msgpack_packer *pk)
{
    msgpack_pack_array(pk, (size_t)ew->nworkers);
    for (int k = 0; k < ew->nworkers; k++) {
        const struct engine_worker_worker_status *x = &ew->workers[k];
        msgpack_pack_map(pk, 9);
        mp_pack_kv_int(pk, "partitions", __builtin_popcountll(x->owned));
        mp_pack_kv_str(pk, "state", engine_worker_state_name(x->state));
        mp_pack_kv_uint(pk, "processed_lsn", x->processed_lsn);
        mp_pack_kv_uint(pk, "metrics", x->metrics);
        mp_pack_kv_uint(pk, "metric_slots", x->metric_slots);
        mp_pack_kv_uint(pk, "points", x->points);
        mp_pack_kv_uint(pk, "feeds", x->feeds);
        mp_pack_kv_double(pk, "feed_s", (double)x->feed_ns / 1e9);
        mp_pack_kv_double(pk, "submit_s", (double)x->submit_ns / 1e9);
    }
}

static void pack_engine(const struct stat_snapshot *s, msgpack_packer *pk)
{
    msgpack_pack_map(pk, 12);
    mp_pack_kv_int(pk, "workers", s->have_ew ? s->ew.nworkers : 0);
    mp_pack_cstr(pk, "worker");
    pack_workers(&s->ew, pk);
    mp_pack_kv_str(pk, "state", s->have_ew ? engine_worker_state_name(s->ew.state) : "off");
    mp_pack_kv_uint(pk, "metrics", s->ew.metrics);
    mp_pack_kv_uint(pk, "batches", s->ew.batches);
    mp_pack_kv_uint(pk, "points", s->ew.points);
    mp_pack_kv_uint(pk, "aggregates", s->ew.aggs);
    mp_pack_kv_uint(pk, "late_points", s->ew.late);
    mp_pack_cstr(pk, "late");                  /* late_points by reason */
    msgpack_pack_map(pk, 4);
    mp_pack_kv_uint(pk, "window", s->ew.late_window);
    mp_pack_kv_uint(pk, "before_epoch", s->ew.late_before_epoch);
    mp_pack_kv_uint(pk, "nonfinite", s->ew.late_nonfinite);
    mp_pack_kv_uint(pk, "out_of_range", s->ew.late_out_of_range);
    mp_pack_kv_uint(pk, "processed_lsn", s->ew.processed_lsn);
    mp_pack_kv_uint(pk, "replayed_records", s->ew.replayed_records);
    mp_pack_kv_uint(pk, "window_snapshots", s->ew.snapshots);
}

static void pack_ingest(struct ga_daemon *d, const struct stat_snapshot *s, msgpack_packer *pk)
{
    /* each listener's port (or path) and status counters, then the core's */
    msgpack_pack_map(pk, 4 + (size_t)listeners_pack_status(d->ingest, d->cfg, &s->in, NULL));
    listeners_pack_status(d->ingest, d->cfg, &s->in, pk);
    mp_pack_kv_uint(pk, "connections", s->in.conns_open);
    mp_pack_kv_uint(pk, "points_accepted", s->in.points_accepted);
    mp_pack_kv_uint(pk, "points_rejected", s->in.points_rejected);
    mp_pack_kv_bool(pk, "backpressure", (int)s->in.paused);
}

static void pack_journal(struct ga_daemon *d, const struct stat_snapshot *s, msgpack_packer *pk)
{
    msgpack_pack_map(pk, 8);
    mp_pack_kv_str(pk, "dir", d->cfg->journal.dir);
    mp_pack_kv_str(pk, "state", s->jn.failed ? "failed" : s->jn.stalled_errno ? "stalled" : "ok");
    mp_pack_kv_str(pk, "error", s->jn.stalled_errno ? strerror(s->jn.stalled_errno)
                                : s->jn.failed ? "write or fsync failed; the daemon restarts" : "");
    mp_pack_kv_uint(pk, "retained_bytes", s->jn.retained_bytes);
    mp_pack_kv_uint(pk, "max_bytes", (uint64_t)d->cfg->journal.max_bytes);
    mp_pack_kv_uint(pk, "segments", s->jn.segments);
    mp_pack_kv_uint(pk, "next_lsn", s->jn.next_lsn);
    mp_pack_kv_uint(pk, "durable_lsn", s->jn.durable_lsn);
}

/* Which engine backend (by label) serves a device, from the worker's copy. */
static int find_backend(const struct engine_worker_status *ew, const char *label)
{
    for (int i = 0; i < ew->nbackends; i++)
        if (strcmp(ew->backends[i].label, label) == 0)
            return i;
    return -1;
}

/* One entry per compute device: the CPU backend, then each GPU found, with
 * the role each plays now and the metrics it serves. */
static void pack_backends(struct ga_daemon *d, const struct stat_snapshot *s, msgpack_packer *pk)
{
    const struct engine_worker_status *ew = &s->ew;
    int cpu_primary = find_backend(ew, "cpu") >= 0 || ew->nbackends == 0;
    msgpack_pack_array(pk, 1 + (size_t)d->ngpus);
    msgpack_pack_map(pk, 6);
    mp_pack_kv_str(pk, "device", "cpu");
    mp_pack_kv_str(pk, "backend", "cpu");
    mp_pack_kv_str(pk, "name", "CPU reference backend");
    mp_pack_kv_int(pk, "threads", d->cpu_threads);
    mp_pack_kv_str(pk, "state", cpu_primary ? "active" : "fallback");
    mp_pack_kv_uint(pk, "metrics", cpu_primary && ew->nbackends ? ew->backends[0].metrics
                                                                 : ew->fallback_metrics);
    for (int i = 0; i < d->ngpus; i++) {
        const struct ga_gpu_info *g = &d->gpus[i];
        char dev[16], cc[16];
        snprintf(dev, sizeof dev, "cuda:%d", g->index);
        snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        int bi = find_backend(ew, dev);
        const char *state = !g->usable ? "unusable"
                            : bi < 0   ? (ew->state == ENGINE_WORKER_RUNNING ? "unused" : "starting")
                            : ew->backends[bi].failed ? "failed (metrics moved to cpu)" : "active";
        msgpack_pack_map(pk, 8);
        mp_pack_kv_str(pk, "device", dev);
        mp_pack_kv_str(pk, "backend", "cuda");
        mp_pack_kv_str(pk, "name", g->name);
        mp_pack_kv_uint(pk, "memory_bytes", g->mem_total);
        mp_pack_kv_str(pk, "compute_capability", cc);
        mp_pack_kv_str(pk, "state", state);
        mp_pack_kv_uint(pk, "metrics", bi >= 0 ? ew->backends[bi].metrics : 0);
        mp_pack_kv_str(pk, "why", g->why);
    }
}

static void pack_counters(struct ga_daemon *d, msgpack_packer *pk)
{
    const struct ga_counters *c = &d->counters;
    msgpack_pack_map(pk, 6);
    mp_pack_kv_uint(pk, "ctl_connections", c->ctl_connections);
    mp_pack_kv_uint(pk, "ctl_requests", c->ctl_requests);
    mp_pack_kv_uint(pk, "ctl_errors", c->ctl_errors);
    mp_pack_kv_uint(pk, "ctl_protocol_errors", c->ctl_protocol_errors);
    mp_pack_kv_uint(pk, "reloads", c->reloads);
    mp_pack_kv_uint(pk, "reload_failures", c->reload_failures);
}

/* What each key sized by the machine came to, auto or set, and why
 * (daemon/config/config_size.c). */
static void pack_sizing(const struct ga_daemon *d, msgpack_packer *pk)
{
    const struct ga_config *c = d->cfg;
    msgpack_pack_array(pk, c->sizing.done ? GA_SIZED_N : 0);
    for (int k = 0; c->sizing.done && k < GA_SIZED_N; k++) {
        const struct ga_config_sized *s = &c->sizing.key[k];
        msgpack_pack_map(pk, 4);
        mp_pack_kv_str(pk, "key", s->key);
        mp_pack_kv_uint(pk, "value", (uint64_t)s->value);
        mp_pack_kv_str(pk, "source", s->is_auto ? "auto" : "set");
        mp_pack_kv_str(pk, "reason", s->reason);
    }
}

static int op_status(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                   msgpack_packer *pk, char *err, size_t errlen)
{
    struct stat_snapshot snap;
    take_snapshot(d, &snap);
    msgpack_pack_map(pk, d->cluster ? 18 : 17);
    mp_pack_kv_str(pk, "version", GA_VERSION);
    mp_pack_kv_int(pk, "pid", getpid());
    mp_pack_kv_double(pk, "uptime_s", uptime_s(d));
    mp_pack_kv_str(pk, "state", ga_state_name(d->state));
    mp_pack_kv_str(pk, "config", d->config_path);
    mp_pack_kv_str(pk, "gpu_error", d->gpu_error);
    mp_pack_cstr(pk, "backends");
    pack_backends(d, &snap, pk);
    mp_pack_cstr(pk, "sizing");
    pack_sizing(d, pk);
    mp_pack_cstr(pk, "storage");
    pack_storage(&snap, pk);
    mp_pack_cstr(pk, "engine");
    pack_engine(&snap, pk);
    mp_pack_cstr(pk, "ingest");
    pack_ingest(d, &snap, pk);
    mp_pack_cstr(pk, "journal");
    pack_journal(d, &snap, pk);
    mp_pack_cstr(pk, "http");
    msgpack_pack_map(pk, 3);
    mp_pack_kv_str(pk, "listen", d->cfg->listen.http);
    mp_pack_kv_int(pk, "port", d->http ? http_server_port(d->http) : 0);
    mp_pack_kv_str(pk, "auth", d->cfg->http.auth);
    mp_pack_cstr(pk, "queues");
    msgpack_pack_map(pk, 5);
    mp_pack_kv_int(pk, "control_connections", ga_control_connections(d->control));
    mp_pack_kv_uint(pk, "sequencer_backlog", snap.pl.sequencer_backlog);
    mp_pack_kv_uint(pk, "engine_queue", snap.pl.engine_queue);
    mp_pack_kv_uint(pk, "engine_queue_bytes", snap.pl.engine_queue_bytes);
    mp_pack_kv_uint(pk, "decode_bytes_inflight", snap.in.decode_bytes_inflight);
    mp_pack_cstr(pk, "counters");
    pack_counters(d, pk);
    mp_pack_cstr(pk, "jobs");
    control_ops_jobs_pack_status(d, pk);
    mp_pack_kv_str(pk, "last_reload_error", d->last_reload_error);
    if (d->cluster) {
        mp_pack_cstr(pk, "cluster");
        ga_cluster_pack_status(d->cluster, pk);
    }
    return 0;
}

/* The whole snapshot, what the counter table's rows read: status's parts,
 * then the rest. */
static void take_stats_snapshot(struct ga_daemon *d, struct stat_snapshot *s)
{
    take_snapshot(d, s);
    s->uptime_s = uptime_s(d);
    s->ctl = d->counters;
    s->ctl_connections_open = (uint64_t)ga_control_connections(d->control);
    if (d->admit) {
        s->metrics_admitted = ga_admit_count(d->admit);
        s->metrics_refused = ga_admit_refused(d->admit);
    }
    s->gpus = d->ngpus;
    memcpy(s->sizing, d->cfg->sizing.key, sizeof s->sizing);
    if (d->http)
        http_get_stats(d->http, &s->http);
    if (d->resources)
        ceilo_resources_get_stats(d->resources, &s->res);
    if (d->jobs)
        ga_jobs_get_stats(d->jobs, &s->jobs);
    histo_read(&latency_ack, &s->ack_latency);
    histo_read(&latency_commit, &s->commit_lag);
    histo_read(&latency_http, &s->request_latency);
}

/* One pair per row of the counter table, in its order; a histogram has
 * none (its summary rows have). */
void ga_ctl_pack_stats(struct ga_daemon *d, msgpack_packer *pk)
{
    struct stat_snapshot snap;
    take_stats_snapshot(d, &snap);
    size_t n = 0;
    for (size_t i = 0; i < stat_table_n; i++)
        n += stat_table[i].src.kind != STAT_SRC_NONE;
    msgpack_pack_map(pk, n);
    for (size_t i = 0; i < stat_table_n; i++) {
        const struct stat_def *r = &stat_table[i];
        if (r->src.kind == STAT_SRC_DOUBLE)
            mp_pack_kv_double(pk, r->name, stat_value_double(r, &snap));
        else if (r->src.kind != STAT_SRC_NONE)
            mp_pack_kv_uint(pk, r->name, stat_value(r, &snap));
    }
}

static int op_stats(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                   msgpack_packer *pk, char *err, size_t errlen)
{
    ga_ctl_pack_stats(d, pk);
    return 0;
}

static int op_config_get(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                   msgpack_packer *pk, char *err, size_t errlen)
{
    return ga_config_pack(d->cfg, pk);
}

static int op_reload(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                   msgpack_packer *pk, char *err, size_t errlen)
{
    char restart[1024];
    int rc = ga_daemon_reload(d, restart, sizeof restart, err, errlen);
    if (rc < 0)
        return rc;
    int n = 0;
    for (char *p = restart; *p; p++)
        n += (p == restart || p[-1] == ' ') && *p != ' ';
    msgpack_pack_map(pk, 2);
    mp_pack_kv_bool(pk, "reloaded", 1);
    mp_pack_cstr(pk, "restart_needed");
    msgpack_pack_array(pk, (size_t)n);
    for (char *tok = strtok(restart, " "); tok; tok = strtok(NULL, " "))
        mp_pack_cstr(pk, tok);
    return 0;
}

static void on_shutdown_timer(uv_timer_t *t)
{
    struct ga_daemon *d = t->data;
    uv_close((uv_handle_t *)t, (uv_close_cb)free);
    ga_daemon_shutdown(d, "control");
}

static int op_shutdown(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                   msgpack_packer *pk, char *err, size_t errlen)
{
    /* Start the drain on the next loop turn, after this reply is queued. */
    uv_timer_t *t = malloc(sizeof *t);
    if (!t)
        return GA_ENOMEM;
    uv_timer_init(d->loop, t);
    t->data = d;
    uv_timer_start(t, on_shutdown_timer, 0, 0);
    msgpack_pack_map(pk, 1);
    mp_pack_kv_bool(pk, "stopping", 1);
    return 0;
}

const struct ga_ctl_op ga_ctl_ops[] = {
    { "ping", op_ping },
    { "status", op_status },
    { "stats", op_stats },
    { "config.get", op_config_get },
    { "reload", op_reload },
    { "shutdown", op_shutdown },
    { "flush", ga_ctl_op_flush },
    { "metrics", ga_ctl_op_metrics },
    { "query", ga_ctl_op_query },
    { "job.submit", ga_ctl_op_job_submit },
    { "job.status", ga_ctl_op_job_status },
    { "job.result", ga_ctl_op_job_result },
    { "job.cancel", ga_ctl_op_job_cancel },
    { "job.list", ga_ctl_op_job_list },
    { NULL, NULL },
};
