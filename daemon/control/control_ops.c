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
#include "daemon/ingest/pipeline.h"
#include "storage/journal.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "storage/pg_conn.h"

static int null_write(void *data, const char *buf, size_t len)
{
    return 0;
}

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

/* Everything the status and stats ops report, gathered once. */
struct snapshot {
    struct pgc_status pg;
    struct ew_status ew;
    struct ga_ingest_stats in;
    struct jnl_stats jn;
    struct pl_stats pl;
    int have_ew, have_in, have_jn, have_pl;
};

static void take_snapshot(struct ga_daemon *d, struct snapshot *s)
{
    memset(s, 0, sizeof *s);
    pgc_get_status(d->storage, &s->pg);
    if ((s->have_ew = d->worker != NULL))
        ew_get_status(d->worker, &s->ew);
    if ((s->have_in = d->ingest != NULL))
        ga_ingest_get_stats(d->ingest, &s->in);
    if ((s->have_jn = d->journal != NULL))
        jnl_get_stats(d->journal, &s->jn);
    if ((s->have_pl = d->pipeline != NULL))
        pl_get_stats(d->pipeline, &s->pl);
}

static void pack_storage(const struct snapshot *s, msgpack_packer *pk)
{
    const struct pgw_status *w = &s->ew.writer;
    int wr = s->ew.have_writer;
    msgpack_pack_map(pk, 15);
    /* The writer's view once it runs; before, the health checker's. */
    mp_pack_kv_str(pk, "state", pgc_state_name(wr ? w->state : s->pg.state));
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
static void pack_workers(const struct ew_status *ew, msgpack_packer *pk)
{
    msgpack_pack_array(pk, (size_t)ew->nworkers);
    for (int k = 0; k < ew->nworkers; k++) {
        const struct ew_worker_status *x = &ew->workers[k];
        msgpack_pack_map(pk, 9);
        mp_pack_kv_int(pk, "partitions", __builtin_popcountll(x->owned));
        mp_pack_kv_str(pk, "state", ew_state_name(x->state));
        mp_pack_kv_uint(pk, "processed_lsn", x->processed_lsn);
        mp_pack_kv_uint(pk, "metrics", x->metrics);
        mp_pack_kv_uint(pk, "metric_slots", x->metric_slots);
        mp_pack_kv_uint(pk, "points", x->points);
        mp_pack_kv_uint(pk, "feeds", x->feeds);
        mp_pack_kv_double(pk, "feed_s", (double)x->feed_ns / 1e9);
        mp_pack_kv_double(pk, "submit_s", (double)x->submit_ns / 1e9);
    }
}

static void pack_engine(const struct snapshot *s, msgpack_packer *pk)
{
    msgpack_pack_map(pk, 12);
    mp_pack_kv_int(pk, "workers", s->have_ew ? s->ew.nworkers : 0);
    mp_pack_cstr(pk, "worker");
    pack_workers(&s->ew, pk);
    mp_pack_kv_str(pk, "state", s->have_ew ? ew_state_name(s->ew.state) : "off");
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

static void pack_ingest(struct ga_daemon *d, const struct snapshot *s, msgpack_packer *pk)
{
    /* each listener's port (or path) and status counters, then the core's */
    msgpack_pack_map(pk, 4 + (size_t)ic_pack_status(d->ingest, d->cfg, &s->in, NULL));
    ic_pack_status(d->ingest, d->cfg, &s->in, pk);
    mp_pack_kv_uint(pk, "connections", s->in.conns_open);
    mp_pack_kv_uint(pk, "points_accepted", s->in.points_accepted);
    mp_pack_kv_uint(pk, "points_rejected", s->in.points_rejected);
    mp_pack_kv_bool(pk, "backpressure", (int)s->in.paused);
}

static void pack_journal(struct ga_daemon *d, const struct snapshot *s, msgpack_packer *pk)
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
static int find_backend(const struct ew_status *ew, const char *label)
{
    for (int i = 0; i < ew->nbackends; i++)
        if (strcmp(ew->backends[i].label, label) == 0)
            return i;
    return -1;
}

/* One entry per compute device: the CPU backend, then each GPU found, with
 * the role each plays now and the metrics it serves. */
static void pack_backends(struct ga_daemon *d, const struct snapshot *s, msgpack_packer *pk)
{
    const struct ew_status *ew = &s->ew;
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
                            : bi < 0   ? (ew->state == EW_RUNNING ? "unused" : "starting")
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
    struct snapshot snap;
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
    ctlj_pack_status(d, pk);
    mp_pack_kv_str(pk, "last_reload_error", d->last_reload_error);
    if (d->cluster) {
        mp_pack_cstr(pk, "cluster");
        ga_cluster_pack_status(d->cluster, pk);
    }
    return 0;
}

#define KV(name, v) do { mp_pack_kv_uint(pk, name, (uint64_t)(v)); n++; } while (0)

/* A latency histogram's summary names: stem.count, stem.p50_us, stem.p99_us
 * (the buckets are in /metrics). */
static int pack_histo(msgpack_packer *pk, const char *stem, const struct histo *h)
{
    struct histo_snap s;
    char name[96];
    histo_read(h, &s);
    snprintf(name, sizeof name, "%s.count", stem);
    mp_pack_kv_uint(pk, name, s.count);
    snprintf(name, sizeof name, "%s.p50_us", stem);
    mp_pack_kv_uint(pk, name, (uint64_t)histo_quantile_bound_ns(&s, 0.5) / 1000);
    snprintf(name, sizeof name, "%s.p99_us", stem);
    mp_pack_kv_uint(pk, name, (uint64_t)histo_quantile_bound_ns(&s, 0.99) / 1000);
    return 3;
}

/* Flat counters, one name each (docs/COUNTERS.md lists them). */
static int pack_stats(struct ga_daemon *d, const struct snapshot *s, msgpack_packer *pk)
{
    const struct ga_counters *c = &d->counters;
    const struct pgw_status *w = &s->ew.writer;
    int n = 0;
    KV("ctl.connections_total", c->ctl_connections);
    KV("ctl.connections_open", ga_control_connections(d->control));
    KV("ctl.requests", c->ctl_requests);
    KV("ctl.errors", c->ctl_errors);
    KV("ctl.protocol_errors", c->ctl_protocol_errors);
    KV("config.reloads", c->reloads);
    KV("config.reload_failures", c->reload_failures);
    KV("ingest.connections_open", s->in.conns_open);
    KV("ingest.connections_total", s->in.conns_total);
    KV("ingest.connections_refused", s->in.conns_refused);
    KV("ingest.connections_refused_peer", s->in.conns_refused_peer);
    KV("ingest.bytes_in", s->in.bytes_in);
    KV("ingest.frames", s->in.frames);
    KV("ingest.batches_acked", s->in.batches_acked);
    KV("ingest.points_accepted", s->in.points_accepted);
    KV("ingest.points_rejected", s->in.points_rejected);
    KV("ingest.points_rejected_future", s->in.points_rejected_future);
    KV("ingest.points_late_noticed", s->in.points_late_noticed);
    KV("ingest.protocol_errors", s->in.protocol_errors);
    KV("ingest.auth_failures", s->in.auth_failures);
    KV("ingest.idle_timeouts", s->in.idle_timeouts);
    KV("ingest.slow_timeouts", s->in.slow_timeouts);
    KV("ingest.backpressure_pauses", s->in.pauses);
    KV("ingest.backpressure_active", s->in.paused);
    KV("ingest.inflight_waits", s->in.inflight_waits);
    KV("ingest.metrics_admitted", d->admit ? ga_admit_count(d->admit) : 0);
    KV("ingest.metrics_refused", d->admit ? ga_admit_refused(d->admit) : 0);
    KV("ingest.decode_bytes_inflight", s->in.decode_bytes_inflight);
    n += pack_histo(pk, "ingest.ack_latency", &latency_ack);
    n += ic_pack_stats(&s->in, pk);         /* each listener's own counters */
    KV("journal.retained_bytes", s->jn.retained_bytes);
    KV("journal.segments", s->jn.segments);
    KV("journal.appends", s->jn.appends);
    KV("journal.syncs", s->jn.syncs);
    KV("journal.bytes_written", s->jn.bytes_written);
    KV("journal.full_refusals", s->jn.backpressure);
    KV("journal.torn_tails_cut", s->jn.torn_tails_cut);
    KV("journal.write_failures", s->jn.write_failures);
    KV("journal.stalled", s->jn.stalled_errno != 0);
    KV("pipeline.journal_stall_refusals", s->pl.journal_stall_refusals);
    KV("pipeline.journal_full_busy", s->pl.journal_full_busy);
    KV("pipeline.sequencer_backlog", s->pl.sequencer_backlog);
    KV("pipeline.engine_queue", s->pl.engine_queue);
    KV("pipeline.engine_queue_bytes", s->pl.engine_queue_bytes);
    KV("pipeline.journal_only_batches", s->pl.journal_only);
    KV("pipeline.journal_full_waits", s->pl.journal_full_waits);
    KV("engine.metrics", s->ew.metrics);
    KV("engine.batches", s->ew.batches);
    KV("engine.points", s->ew.points);
    KV("engine.aggregates", s->ew.aggs);
    KV("engine.late_points", s->ew.late);
    KV("engine.late.window", s->ew.late_window);
    KV("engine.late.before_epoch", s->ew.late_before_epoch);
    KV("engine.late.nonfinite", s->ew.late_nonfinite);
    KV("engine.late.out_of_range", s->ew.late_out_of_range);
    KV("engine.replayed_records", s->ew.replayed_records);
    KV("engine.window_snapshots", s->ew.snapshots);
    KV("engine.feeds", s->ew.feeds);
    KV("engine.feed_ms", s->ew.feed_ns / 1000000);
    KV("engine.submit_ms", s->ew.submit_ns / 1000000);
    KV("engine.snapshot_ms", s->ew.snapshot_ns / 1000000);
    KV("engine.gpu_rebuild_ms", s->ew.gpu_rebuild_ns / 1000000);
    KV("engine.window_points", s->ew.window_points);
    KV("engine.coarse_held", s->ew.coarse_held);
    KV("engine.coarse_released", s->ew.coarse_released);
    KV("engine.gpu_failovers", s->ew.failover.failovers);
    KV("engine.gpu_failover_metrics_moved", s->ew.failover.metrics_moved);
    KV("engine.gpu_failover_windows_lost", s->ew.failover.windows_lost);
    KV("storage.connected", (s->ew.have_writer ? w->state : s->pg.state) == PGC_CONNECTED);
    KV("storage.connect_attempts", s->pg.attempts);
    KV("storage.rows_committed", w->rows_committed);
    KV("storage.buckets_committed", w->buckets_committed);
    KV("storage.rows_fresh", w->rows_fresh);
    KV("storage.rows_merged", w->rows_merged);
    KV("storage.fresh_fallbacks", w->fresh_fallbacks);
    KV("storage.rows_rejected", w->rows_rejected);
    KV("storage.isolations", w->isolations);
    KV("storage.open_buckets", w->open_buckets);
    KV("storage.open_blocks", w->open_blocks);
    KV("storage.open_written", w->open_written);
    KV("storage.open_blocks_written", w->open_blocks_written);
    KV("storage.open_closed", w->open_closed);
    KV("storage.open_full", w->open_full);
    KV("storage.rows_updated", w->rows_updated);
    KV("storage.pairs_asked", w->pairs_asked);
    KV("storage.pairs_new", w->pairs_new);
    KV("storage.update_fallbacks", w->update_fallbacks);
    KV("storage.late_committed", w->late_committed);
    KV("storage.transactions", w->transactions);
    KV("storage.retries", w->retries);
    KV("storage.pending_rows", w->pending_rows);
    KV("storage.lag_journal_bytes", w->lag_lsn);
    KV("storage.partitions_created", w->partitions_created);
    KV("storage.partitions_dropped", w->partitions_dropped);
    n += pack_histo(pk, "storage.commit_lag", &latency_commit);
    KV("gpu.devices", d->ngpus);
    const struct ga_config_sized *sz = d->cfg->sizing.key;     /* zeros if never sized */
    KV("sizing.storage.writers", sz[GA_SIZED_WRITERS].value);
    KV("sizing.storage.writers.auto", sz[GA_SIZED_WRITERS].is_auto);
    KV("sizing.journal.max_bytes", sz[GA_SIZED_JOURNAL_MAX_BYTES].value);
    KV("sizing.journal.max_bytes.auto", sz[GA_SIZED_JOURNAL_MAX_BYTES].is_auto);
    KV("sizing.limits.max_metrics", sz[GA_SIZED_MAX_METRICS].value);
    KV("sizing.limits.max_metrics.auto", sz[GA_SIZED_MAX_METRICS].is_auto);
    KV("sizing.engine.workers", sz[GA_SIZED_ENGINE_WORKERS].value);
    KV("sizing.engine.workers.auto", sz[GA_SIZED_ENGINE_WORKERS].is_auto);
    struct http_stats hs = { 0 };
    struct cres_stats rs = { 0 };
    if (d->http)
        http_get_stats(d->http, &hs);
    if (d->resources)
        cres_get_stats(d->resources, &rs);
    KV("http.connections_open", hs.connections);
    KV("http.requests", hs.requests);
    KV("http.errors_4xx", hs.errors_4xx);
    KV("http.errors_5xx", hs.errors_5xx);
    KV("http.too_big", hs.too_big);
    KV("http.unauthorized", hs.unauthorized);
    KV("http.header_timeouts", hs.header_timeouts);
    KV("http.probe_timeouts", hs.probe_timeouts);
    KV("http.wait_timeouts", hs.wait_timeouts);
    KV("http.wait_evicted", hs.wait_evicted);
    KV("http.refused_full", hs.refused_full);
    KV("http.refused_peer", hs.refused_peer);
    KV("http.keystone.validations", hs.keystone.validations);
    KV("http.keystone.cache_hits", hs.keystone.cache_hits);
    KV("http.keystone.rejected", hs.keystone.rejected);
    KV("http.keystone.errors", hs.keystone.errors);
    KV("http.keystone.evictions", hs.keystone.evictions);
    KV("http.keystone.service_tokens", hs.keystone.service_tokens);
    KV("http.keystone.cached", hs.keystone.cached);
    n += pack_histo(pk, "http.request_latency", &latency_http);
    KV("resources.samples_seen", rs.seen);
    KV("resources.recorded", rs.recorded);
    KV("resources.dropped", rs.dropped);
    KV("resources.errors", rs.errors);
    return n + ctlj_pack_stats(d, pk);
}

void ga_ctl_pack_stats(struct ga_daemon *d, msgpack_packer *pk)
{
    struct snapshot snap;
    take_snapshot(d, &snap);
    /* Count first with a null writer, then pack for real. */
    msgpack_packer counter;
    msgpack_packer_init(&counter, NULL, null_write);
    int n = pack_stats(d, &snap, &counter);
    msgpack_pack_map(pk, (size_t)n + 1);
    mp_pack_kv_double(pk, "uptime_s", uptime_s(d));
    pack_stats(d, &snap, pk);
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
