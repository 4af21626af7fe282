/* daemon.c — gpuaggd lifecycle: start, signals, reload, watchdog, drain. */
#include "daemon/daemon.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cluster.h"
#include "daemon/ingest/admit.h"
#include "daemon/ingest/late_notice.h"
#include "daemon/control/control.h"
#include "daemon/engine_worker.h"
#include "daemon/http/http_server.h"
#include "daemon/ingest/ceilo_resources.h"
#include "daemon/ingest/ingest.h"
#include "daemon/jobs/job_kinds.h"
#include "daemon/loop_call.h"
#include "daemon/pipeline.h"
#include "daemon/notify.h"
#include "daemon/stop_guard.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "gpu/cuda.h"
#include "gpu/engine.h"
#include "storage/journal.h"
#include "storage/js_log.h"
#include "storage/pg_conn.h"
#include "storage/pg_query.h"

#define DRAIN_INGEST_MS 10000          /* acks still owed after this (or after half of
                                          storage.stop_timeout_ms, if less) are not sent */

const char *ga_state_name(enum ga_state s)
{
    switch (s) {
    case GA_STATE_STARTING: return "starting";
    case GA_STATE_RUNNING: return "running";
    case GA_STATE_RELOADING: return "reloading";
    case GA_STATE_DRAINING: return "draining";
    }
    return "?";
}

/* mkdir -p for the directory part of path (sockets' parents). */
static int make_parent_dirs(const char *path)
{
    char tmp[GA_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    char *slash = strrchr(tmp, '/');
    if (!slash || slash == tmp)
        return 0;
    *slash = '\0';
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static void probe_gpus(struct ga_daemon *d)
{
    const struct ga_config *c = d->cfg;
    d->ngpus = 0;
    d->gpu_error[0] = '\0';
    if (!c->gpu.all && c->gpu.ndevices == 0) {
        snprintf(d->gpu_error, sizeof d->gpu_error, "gpu.devices is none");
        return;
    }
    int n = ga_gpu_probe(d->gpus, GA_GPU_MAX, d->gpu_error, sizeof d->gpu_error);
    if (n < 0)
        return;
    d->ngpus = n;
    if (!c->gpu.all) {                   /* keep only the configured ordinals */
        int kept = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < c->gpu.ndevices; k++)
                if (d->gpus[i].index == c->gpu.devices[k])
                    d->gpus[kept++] = d->gpus[i];
        for (int k = 0; k < c->gpu.ndevices; k++)
            if (c->gpu.devices[k] >= n)
                ga_log(GA_LOG_WARN, "gpu_missing", "device=%d found=%d", c->gpu.devices[k], n);
        d->ngpus = kept;
    }
    for (int i = 0; i < d->ngpus; i++) {
        const struct ga_gpu_info *g = &d->gpus[i];
        ga_log(GA_LOG_INFO, "gpu", "device=%d name=\"%s\" cc=%d.%d mem_mib=%llu usable=%d why=\"%s\"",
               g->index, g->name, g->cc_major, g->cc_minor,
               (unsigned long long)(g->mem_total >> 20), g->usable, g->why);
    }
}

static void on_durable(void *ctx, uint64_t durable_lsn)
{
    struct ga_daemon *d = ctx;
    if (d->ingest)
        ga_ingest_on_durable(d->ingest, durable_lsn);
}

/* A fresh journal starts numbering at a clock-derived LSN, above anything
 * an earlier journal in a lost directory can have reached (unless it wrote
 * more than 2 GB/s on average over its whole life), so the database's
 * checkpoint can never mistake new records for committed ones. */
static void number_fresh_journal(struct journal *j)
{
    struct journal_stats st;
    journal_get_stats(j, &st);
    if (st.next_lsn == 0)
        journal_release(j, (uint64_t)(ga_now_real_ns() / 1000) * 2048);
}

/* One CUDA backend per usable GPU, metrics spread over them by hash, and
 * the CPU backend as the fallback a failing GPU's metrics move to; without
 * a usable GPU, the CPU backend alone. */
static int open_engine(struct ga_daemon *d, int share, struct ga_engine **out)
{
    int threads = d->cpu_threads / (share > 0 ? share : 1);
    struct ga_backend *b[GA_GPU_MAX], *cpu;
    int nb = 0, rc;
    for (int i = 0; i < d->ngpus; i++) {
        if (!d->gpus[i].usable)
            continue;
        rc = ga_cuda_backend_open(&b[nb], d->gpus[i].index, NULL);
        if (rc == 0) {
            nb++;
        } else {
            snprintf(d->gpus[i].why, sizeof d->gpus[i].why, "backend open failed: %s",
                     ga_strerror(rc));
            d->gpus[i].usable = 0;
            ga_log(GA_LOG_ERROR, "gpu_backend_open", "device=%d error=\"%s\" action=cpu",
                   d->gpus[i].index, ga_strerror(rc));
        }
    }
    if ((rc = ga_cpu_backend_open(&cpu, threads > 0 ? threads : 1)) < 0) {
        for (int i = 0; i < nb; i++)
            b[i]->ops->close(b[i]);
        return rc;
    }
    if (nb == 0)
        return ga_engine_open(out, &cpu, 1);
    if ((rc = ga_engine_open(out, b, nb)) < 0) {
        cpu->ops->close(cpu);
        return rc;
    }
    ga_log(GA_LOG_INFO, "engine_backends", "gpus=%d fallback=cpu", nb);
    return ga_engine_set_fallback(*out, cpu);
}

int ga_daemon_open_engine(struct ga_daemon *d, int share, struct ga_engine **out)
{
    return open_engine(d, share, out);
}

/* Cluster mode: the JetStream log instead of the journal; the cluster
 * module starts and replaces the engine worker as partitions move. */
static int start_cluster_path(struct ga_daemon *d, char *err, size_t errlen)
{
    const struct ga_config *c = d->cfg;
    char member[64];
    snprintf(member, sizeof member, "%s", c->cluster.member);
    if (!member[0] && gethostname(member, sizeof member) != 0)
        snprintf(member, sizeof member, "gpuaggd");
    member[sizeof member - 1] = '\0';
    struct js_log_opts jo = { .urls = c->cluster.nats, .stream = c->cluster.stream,
                           .replicas = c->cluster.replicas, .credentials = c->cluster.credentials,
                           .token = c->cluster.token, .name = member,
                           .publish_timeout_ms = c->cluster.publish_timeout_ms,
                           .max_pending_bytes = c->cluster.max_pending_bytes };
    int rc = js_log_open(&d->jsl, &jo, err, errlen);
    if (rc < 0)
        return rc;
    rc = pipeline_start_cluster(&d->pipeline, d->loop, d->jsl, (size_t)c->cluster.max_pending_bytes,
                          on_durable, d);
    if (rc < 0) {
        snprintf(err, errlen, "pipeline: %s", ga_strerror(rc));
        return rc;
    }
    if ((rc = ga_cluster_start(&d->cluster, d, d->jsl, d->pipeline, err, errlen)) < 0)
        return rc;
    ga_log(GA_LOG_INFO, "cluster_mode", "nats=\"%s\" stream=%s replicas=%d", c->cluster.nats,
           c->cluster.stream, c->cluster.replicas);
    return ga_ingest_start(d, d->pipeline, &d->ingest, err, errlen);
}

/* Journal, pipeline, engine worker, listeners — in that order, so the
 * worker knows where live records start before the first is appended. */
static int start_data_path(struct ga_daemon *d, char *err, size_t errlen)
{
    const struct ga_config *c = d->cfg;
    if (c->cluster.nats[0])
        return start_cluster_path(d, err, errlen);
    struct journal_opts jo = { .dir = c->journal.dir, .segment_bytes = (uint64_t)c->journal.segment_bytes,
                           .max_bytes = (uint64_t)c->journal.max_bytes };
    int rc = journal_open(&d->journal, &jo, err, errlen);
    if (rc < 0)
        return rc;
    number_fresh_journal(d->journal);
    if ((rc = ga_admit_open(&d->admit, ga_config_max_metrics(c))) < 0) {
        snprintf(err, errlen, "metric admission: %s", ga_strerror(rc));
        return rc;
    }
    size_t qbytes = (size_t)c->limits.memory_budget_bytes / 2;
    int workers = c->engine.workers > 0 ? c->engine.workers : 1;
    workers = workers < ENGINE_WORKER_MAX_WORKERS ? workers : ENGINE_WORKER_MAX_WORKERS;
    rc = pipeline_start(&d->pipeline, d->loop, d->journal, c->journal.fsync_interval_ms, workers,
                  (size_t)c->limits.queue_batches, qbytes, on_durable, d);
    if (rc < 0) {
        snprintf(err, errlen, "pipeline: %s", ga_strerror(rc));
        return rc;
    }
    pipeline_set_admit(d->pipeline, d->admit);
    if ((rc = ga_late_notice_open(&d->late_notice)) < 0) {
        snprintf(err, errlen, "late notice: %s", ga_strerror(rc));
        return rc;
    }
    pipeline_set_late_notice(d->pipeline, d->late_notice);
    if (c->listen.http[0]) {
        if ((rc = ceilo_resources_start(&d->resources, c->storage.conninfo, c->http.resource_creator)) < 0) {
            snprintf(err, errlen, "resource recorder: %s", ga_strerror(rc));
            return rc;
        }
    }
    if ((rc = engine_worker_start(&d->worker, d, d->pipeline, d->journal, workers)) < 0) {
        snprintf(err, errlen, "engine: %s", ga_strerror(rc));
        return rc;
    }
    return ga_ingest_start(d, d->pipeline, &d->ingest, err, errlen);
}

static void update_status_line(struct ga_daemon *d)
{
    struct pg_conn_status st;
    pg_conn_get_status(d->storage, &st);
    ga_notify("STATUS=%s; storage %s; %d GPU(s)", ga_state_name(d->state),
              pg_conn_state_name(st.state), d->ngpus);
}

/* The engine worker cannot go on (a GPU died with state we could not read
 * back): drain and exit non-zero, so systemd restarts us and the restart
 * rebuilds the engine from PostgreSQL and the journal. */
static void on_housekeeping(uv_timer_t *t)
{
    struct ga_daemon *d = t->data;
    if (!d->worker || d->state == GA_STATE_DRAINING)
        return;
    struct journal_stats js;
    journal_get_stats(d->journal, &js);
    if (js.failed) {
        /* an fsync failed: its data may be gone from the page cache, so
         * the journal cannot be trusted past its durable LSN in this
         * process; the restart reopens and validates it */
        ga_log(GA_LOG_ERROR, "journal_fatal", "action=\"exit 1; the restart reopens the journal\"");
        d->exit_code = 1;
        ga_daemon_shutdown(d, "journal failed");
        return;
    }
    struct engine_worker_status st;
    engine_worker_get_status(d->worker, &st);
    if (st.fatal) {
        ga_log(GA_LOG_ERROR, "engine_fatal", "reason=\"%s\" action=\"exit 1; the restart replays "
               "the journal\"", st.fatal_reason);
        d->exit_code = 1;
        ga_daemon_shutdown(d, "engine state lost");
    }
}

static void on_watchdog(uv_timer_t *t)
{
    struct ga_daemon *d = t->data;
    ga_notify("WATCHDOG=1");
    update_status_line(d);
}

static void on_closed_noop(uv_handle_t *h)
{
    (void)h;
}

/* The last drain stage: nothing of ours is left on the loop. */
static void close_loop_handles(struct ga_daemon *d)
{
    /* First: HTTP handlers may be waiting in a loop call.  The pointer
     * stays set (handlers may still read it until http_server_stop has
     * joined them); the struct is freed on a later loop turn. */
    ga_loop_call_close(d->loop_call);
    http_server_stop(d->http);           /* waits for running handlers */
    d->http = NULL;
    ga_control_stop(d->control);
    d->control = NULL;
    uv_close((uv_handle_t *)&d->sig_term, on_closed_noop);
    uv_close((uv_handle_t *)&d->sig_int, on_closed_noop);
    uv_close((uv_handle_t *)&d->sig_hup, on_closed_noop);
    if (d->watchdog_usec)
        uv_close((uv_handle_t *)&d->watchdog, on_closed_noop);
    uv_close((uv_handle_t *)&d->housekeeping, on_closed_noop);
}

/* What is left of the drain's stages' time (storage.stop_timeout_ms from
 * the signal), in milliseconds, 0 when it is over. */
static int stop_left_ms(const struct ga_daemon *d)
{
    int64_t left = (d->stop_deadline_ns - ga_now_mono_ns()) / 1000000;
    return left > 0 ? (int)left : 0;
}

/* After the engine stopped: records acknowledged (durable) that the
 * journal could not let go of are not all in PostgreSQL (the writers
 * could not commit them, or the engine never loaded); they stay for the
 * next start, and the exit status says so. */
static void check_committed(struct ga_daemon *d)
{
    struct journal_stats js;
    journal_get_stats(d->journal, &js);
    uint64_t from = js.released_lsn > js.first_lsn ? js.released_lsn : js.first_lsn;
    if (js.durable_lsn <= from)
        return;
    ga_log(GA_LOG_ERROR, "stop_uncommitted", "journal_bytes=%llu from_lsn=%llu durable_lsn=%llu "
           "msg=\"acknowledged records not yet in PostgreSQL stay in the journal and are "
           "replayed at the next start; exit 1\"", (unsigned long long)(js.durable_lsn - from),
           (unsigned long long)from, (unsigned long long)js.durable_lsn);
    d->exit_code = 1;
}

/* Ingest has answered what it could and closed its connections: finish
 * the journal, aggregate and commit everything accepted, then stop.  Runs
 * from a timer, outside the ingest's own callbacks. */
static void drain_rest(uv_timer_t *t)
{
    struct ga_daemon *d = t->data;
    if (ga_cluster_busy(d->cluster)) {
        stop_guard_stage(d->stop_guard, "cluster_swap");
        uv_timer_start(t, drain_rest, 50, 0);   /* a worker swap finishes first */
        return;
    }
    ga_cluster_freeze(d->cluster);
    uv_close((uv_handle_t *)t, (uv_close_cb)free);
    if (d->ingest_stopped) {
        ga_ingest_free(d->ingest_stopped);
        d->ingest_stopped = NULL;
    }
    if (d->pipeline) {
        stop_guard_stage(d->stop_guard, "journal");
        pipeline_stop(d->pipeline);            /* sequence + fsync what was accepted */
        stop_guard_stage(d->stop_guard, "engine");
        if (engine_worker_stop(d->worker, stop_left_ms(d)) < 0)
            d->exit_code = 1;            /* storage_stop_incomplete: systemd sees a failure */
        d->worker = NULL;
        pipeline_close(d->pipeline);
        d->pipeline = NULL;
    }
    if (d->admit) {
        ga_admit_close(d->admit);
        d->admit = NULL;
    }
    ga_late_notice_close(d->late_notice);   /* after the workers and the pipeline */
    d->late_notice = NULL;
    if (d->journal) {
        check_committed(d);
        journal_close(d->journal);
        d->journal = NULL;
    }
    if (d->cluster) {
        ga_cluster_stop(d->cluster, 1);  /* after the worker let go of its partitions */
        d->cluster = NULL;
    }
    if (d->jsl) {
        js_log_close(d->jsl);
        d->jsl = NULL;
    }
    stop_guard_stage(d->stop_guard, "listeners");
    close_loop_handles(d);
}

static void on_ingest_drained(void *ctx)
{
    struct ga_daemon *d = ctx;
    d->ingest_stopped = d->ingest;
    d->ingest = NULL;                    /* no more acks to route */
    uv_timer_t *t = malloc(sizeof *t);
    if (!t) {
        ga_log(GA_LOG_ERROR, "drain_oom", "msg=\"exiting without the final commit; the journal "
               "keeps everything\"");
        close_loop_handles(d);
        return;
    }
    uv_timer_init(d->loop, t);
    t->data = d;
    uv_timer_start(t, drain_rest, 0, 0);
}

void ga_daemon_shutdown(struct ga_daemon *d, const char *why)
{
    if (d->state == GA_STATE_DRAINING)
        return;
    d->state = GA_STATE_DRAINING;
    __atomic_store_n(&d->draining, 1, __ATOMIC_RELEASE);
    /* Every stage below ends by the signal + stop_timeout_ms; the guard
     * ends the process STOP_GUARD_GRACE_MS after that if one could not. */
    int timeout_ms = d->cfg->storage.stop_timeout_ms;
    d->stop_deadline_ns = ga_now_mono_ns() + (int64_t)timeout_ms * 1000000;
    int rc = stop_guard_start(&d->stop_guard, timeout_ms + STOP_GUARD_GRACE_MS);
    if (rc < 0)
        ga_log(GA_LOG_WARN, "stop_guard", "error=\"%s\" msg=\"the stop is not bounded\"",
               ga_strerror(rc));
    ga_log(GA_LOG_INFO, "draining", "reason=%s bound_ms=%d", why, timeout_ms + STOP_GUARD_GRACE_MS);
    ga_notify("STOPPING=1\nSTATUS=draining (%s)", why);
    uv_signal_stop(&d->sig_hup);
    ga_job_service_drain(d);             /* cancel jobs; the workers are joined after the loop */
    /* Stop accepting; every stage then finishes and persists what it
     * accepted: ingest (acks owed) → journal → engine → storage. */
    stop_guard_stage(d->stop_guard, "ingest");
    int ingest_ms = timeout_ms / 2 < DRAIN_INGEST_MS ? timeout_ms / 2 : DRAIN_INGEST_MS;
    if (d->ingest)                       /* the rest of the time is the final commit's */
        ga_ingest_stop(d->ingest, ingest_ms, on_ingest_drained, d);
    else
        on_ingest_drained(d);
}

int ga_daemon_reload(struct ga_daemon *d, char *restart_needed, size_t rlen,
                     char *err, size_t errlen)
{
    restart_needed[0] = '\0';
    if (d->state == GA_STATE_DRAINING) {
        snprintf(err, errlen, "daemon is shutting down");
        return GA_ESHUTDOWN;
    }
    d->state = GA_STATE_RELOADING;
    ga_notify("RELOADING=1\nMONOTONIC_USEC=%lld", (long long)(ga_now_mono_ns() / 1000));
    struct ga_config *next = malloc(sizeof *next);
    int rc = next ? ga_config_load(next, d->config_path, err, errlen) : GA_ENOMEM;
    if (rc == 0) {
        int n = ga_config_apply_reload(d->cfg, next, restart_needed, rlen);
        ga_log_set_level(d->cfg->log.level);
        pg_conn_set_backoff(d->storage, d->cfg->storage.retry_initial_ms, d->cfg->storage.retry_max_ms);
        if (d->admit)
            ga_admit_set_max(d->admit, ga_config_max_metrics(d->cfg));
        if (d->worker)
            engine_worker_reload(d->worker);
        ga_job_service_reload(d);
        d->counters.reloads++;
        d->last_reload_error[0] = '\0';
        ga_log(GA_LOG_INFO, "reloaded", "config=%s restart_needed=%d keys=\"%s\"",
               d->config_path, n, restart_needed);
    } else {
        if (!next)
            snprintf(err, errlen, "out of memory");
        d->counters.reload_failures++;
        snprintf(d->last_reload_error, sizeof d->last_reload_error, "%s", err);
        ga_log(GA_LOG_ERROR, "reload_refused", "config=%s error=\"%s\" action=kept_running_config",
               d->config_path, err);
        rc = GA_ECONFIG;
    }
    free(next);
    d->state = GA_STATE_RUNNING;
    ga_notify("READY=1");
    update_status_line(d);
    return rc;
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct ga_daemon *d = s->data;
    if (signum == SIGHUP) {
        char restart[512], err[512];
        ga_daemon_reload(d, restart, sizeof restart, err, sizeof err);
        return;
    }
    ga_daemon_shutdown(d, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* Resolve the keys sized by the machine (storage.writers,
 * journal.max_bytes, limits.max_metrics, engine.workers) before anything
 * reads them, and log what was chosen and why. */
static void size_config(struct ga_daemon *d)
{
    struct ga_machine m;
    int usable = 0;
    for (int i = 0; i < d->ngpus; i++)
        usable += d->gpus[i].usable != 0;
    ga_machine_probe(&m, d->cfg->journal.dir, usable);
    ga_config_size(d->cfg, &m);
    if (m.fs_errno)
        ga_log(GA_LOG_WARN, "sizing_statvfs_failed", "path=%s error=\"%s\" journal_max_bytes=%lld",
               m.fs_path, strerror(m.fs_errno), (long long)d->cfg->journal.max_bytes);
    for (int k = 0; k < GA_SIZED_N; k++) {
        const struct ga_config_sized *s = &d->cfg->sizing.key[k];
        ga_log(GA_LOG_INFO, "sizing", "key=%s value=%lld source=%s reason=\"%s\"", s->key,
               (long long)s->value, s->is_auto ? "auto" : "set", s->reason);
    }
}

static int start_signals(struct ga_daemon *d)
{
    uv_signal_t *sigs[] = { &d->sig_term, &d->sig_int, &d->sig_hup };
    int nums[] = { SIGTERM, SIGINT, SIGHUP };
    for (int i = 0; i < 3; i++) {
        uv_signal_init(d->loop, sigs[i]);
        sigs[i]->data = d;
        int rc = uv_signal_start(sigs[i], on_signal, nums[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int ga_daemon_run(struct ga_config *cfg, const char *config_path, int ready_fd)
{
    struct ga_daemon *d = calloc(1, sizeof *d);
    char err[512];
    int rc;
    if (!d) {
        free(cfg);
        return 1;
    }
    d->cfg = cfg;
    snprintf(d->config_path, sizeof d->config_path, "%s", config_path);
    d->start_mono_ns = ga_now_mono_ns();
    d->loop = uv_default_loop();
    d->exit_code = 0;
    ga_log_set_level(cfg->log.level);
    signal(SIGPIPE, SIG_IGN);
    ga_log(GA_LOG_INFO, "starting", "version=%s pid=%d config=%s", GA_VERSION, (int)getpid(),
           config_path);

    uv_timer_init(d->loop, &d->housekeeping);   /* first: every exit path closes it */
    d->housekeeping.data = d;
    uv_timer_start(&d->housekeeping, on_housekeeping, 1000, 1000);
    if ((rc = ga_loop_call_open(&d->loop_call, d->loop)) < 0) {
        ga_log(GA_LOG_ERROR, "loop_call", "error=\"%s\"", ga_strerror(rc));
        d->exit_code = 1;
        goto out;
    }
    if ((rc = start_signals(d)) < 0) {
        ga_log(GA_LOG_ERROR, "signals", "error=\"%s\"", uv_strerror(rc));
        d->exit_code = 1;
        goto out;
    }
    probe_gpus(d);
    if (d->ngpus == 0)
        ga_log(GA_LOG_INFO, "cpu_backend", "reason=\"%s\"", d->gpu_error);
    size_config(d);
    d->cpu_threads = cfg->gpu.cpu_threads > 0 ? cfg->gpu.cpu_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);

    if ((rc = pg_conn_start(&d->storage, cfg->storage.conninfo, cfg->storage.retry_initial_ms,
                        cfg->storage.retry_max_ms)) < 0) {
        ga_log(GA_LOG_ERROR, "storage_start", "error=\"%s\"", ga_strerror(rc));
        d->exit_code = 1;
        goto out;
    }
    if ((rc = pg_query_open(&d->query, cfg->storage.conninfo, cfg->storage.pool_size)) < 0) {
        ga_log(GA_LOG_ERROR, "storage_query_pool", "error=\"%s\"", ga_strerror(rc));
        d->exit_code = 1;
        goto out;
    }
    if ((rc = start_data_path(d, err, sizeof err)) < 0) {
        ga_log(GA_LOG_ERROR, "startup_failed", "error=\"%s\"", err);
        fprintf(stderr, "gpuaggd: %s\n", err);
        d->exit_code = 1;
        ga_daemon_shutdown(d, "startup failure");
        uv_run(d->loop, UV_RUN_DEFAULT);
        goto out;
    }
    if ((rc = ga_job_service_start(d, err, sizeof err)) < 0) {
        ga_log(GA_LOG_ERROR, "startup_failed", "error=\"%s\"", err);
        d->exit_code = 1;
        ga_daemon_shutdown(d, "startup failure");
        uv_run(d->loop, UV_RUN_DEFAULT);
        goto out;
    }
    if ((rc = make_parent_dirs(cfg->control.socket)) < 0 ||
        (rc = ga_control_start(d, cfg->control.socket, cfg->control.mode, ga_ctl_ops,
                               &d->control, err, sizeof err)) < 0) {
        if (rc != GA_EIO && rc != GA_EEXIST && rc != GA_ENOMEM)
            snprintf(err, sizeof err, "cannot create directory for %s: %s", cfg->control.socket,
                     ga_strerror(rc));
        ga_log(GA_LOG_ERROR, "control_listen", "error=\"%s\"", err);
        d->exit_code = 1;
        d->control = NULL;
        ga_daemon_shutdown(d, "startup failure");
        uv_run(d->loop, UV_RUN_DEFAULT);
        goto out;
    }
    ga_log(GA_LOG_INFO, "control_listen", "socket=%s mode=%04o", cfg->control.socket,
           cfg->control.mode);

    if (cfg->listen.http[0] &&
        ((rc = pg_query_open(&d->http_query, cfg->storage.conninfo, cfg->http.pool_size)) < 0 ||
         (rc = http_server_start(&d->http, cfg, d, d->http_query, err, sizeof err)) < 0)) {
        if (!d->http_query)
            snprintf(err, sizeof err, "http query pool: %s", ga_strerror(rc));
        ga_log(GA_LOG_ERROR, "http_listen", "error=\"%s\"", err);
        d->exit_code = 1;
        ga_daemon_shutdown(d, "startup failure");
        uv_run(d->loop, UV_RUN_DEFAULT);
        goto out;
    }

    d->watchdog_usec = ga_notify_watchdog_usec();
    if (d->watchdog_usec) {
        uint64_t half_ms = d->watchdog_usec / 2000;
        uv_timer_init(d->loop, &d->watchdog);
        d->watchdog.data = d;
        uv_timer_start(&d->watchdog, on_watchdog, half_ms ? half_ms : 1, half_ms ? half_ms : 1);
        ga_log(GA_LOG_INFO, "watchdog", "interval_ms=%llu", (unsigned long long)half_ms);
    }

    d->state = GA_STATE_RUNNING;
    ga_notify("READY=1\nMAINPID=%d", (int)getpid());
    update_status_line(d);
    ga_log(GA_LOG_INFO, "ready", "gpus=%d cpu_threads=%d", d->ngpus, d->cpu_threads);
    if (ready_fd >= 0) {
        ssize_t w = write(ready_fd, "R", 1);
        (void)w;
        close(ready_fd);
    }

    uv_run(d->loop, UV_RUN_DEFAULT);
out:
    stop_guard_stage(d->stop_guard, "close");
    ga_job_service_stop(d);              /* the control server's threads are gone */
    pg_conn_stop(d->storage);
    pg_query_close(d->query);                 /* the control server's threads are gone */
    pg_query_close(d->http_query);            /* the HTTP server's threads are gone */
    ceilo_resources_stop(d->resources);       /* the decode workers are gone */
    if (uv_loop_close(d->loop) == UV_EBUSY)
        ga_log(GA_LOG_WARN, "loop_busy", "msg=\"handles left open at exit\"");
    rc = d->exit_code;
    int64_t stop_ms = stop_guard_elapsed_ms(d->stop_guard);
    stop_guard_end(d->stop_guard);
    ga_log(GA_LOG_INFO, "stopped", "exit_code=%d stop_ms=%lld", rc, (long long)stop_ms);
    free(d->cfg);
    free(d);
    return rc;
}
