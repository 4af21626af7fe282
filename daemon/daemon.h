/* daemon.h — gpuaggd's process state and lifecycle.
 *
 * One libuv loop thread owns everything here.  Signals arrive as
 * uv_signal_t callbacks (no work in signal handlers):
 *   SIGTERM/SIGINT  graceful drain: stop accepting, finish and persist all
 *                   accepted work, exit 0; exit 1 when something
 *                   acknowledged stayed uncommitted (it stays in the
 *                   journal).  It ends within storage.stop_timeout_ms +
 *                   STOP_GUARD_GRACE_MS (daemon/stop_guard.h).
 *   SIGHUP          reload: validate the file first; a bad file is refused,
 *                   logged, and the running config stays
 * systemd's notify protocol is spoken when NOTIFY_SOCKET is set. */
#ifndef GA_DAEMON_H
#define GA_DAEMON_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/config/config.h"
#include "gpu/device.h"

enum ga_state { GA_STATE_STARTING = 0, GA_STATE_RUNNING, GA_STATE_RELOADING, GA_STATE_DRAINING };

/* Counters shown by `status` and `stats`.  Written on the loop thread
 * unless noted; atomics where another thread writes. */
struct ga_counters {
    uint64_t ctl_connections, ctl_requests, ctl_errors, ctl_protocol_errors;
    uint64_t reloads, reload_failures;
};

struct ga_control;
struct pg_conn;
struct journal;
struct ga_pipeline;
struct ga_ingest;
struct ga_engine_worker;
struct pg_query;
struct ga_jobs;
struct control_ops_jobs_waiters;
struct http_server;
struct ceilo_resources;
struct ga_loop_call;
struct js_log;
struct ga_cluster;
struct ga_engine;
struct stop_guard;

struct ga_daemon {
    uv_loop_t *loop;
    struct ga_config *cfg;               /* the running config, heap */
    char config_path[GA_PATH_MAX];
    enum ga_state state;
    int draining;                        /* 1 once the drain began; __atomic (HTTP threads read it) */
    int64_t start_mono_ns;
    int exit_code;
    int64_t stop_deadline_ns;            /* the drain's stages end by then (monotonic):
                                            the signal + storage.stop_timeout_ms */
    struct stop_guard *stop_guard;       /* ends the process if the drain overruns */

    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t watchdog;
    uv_timer_t housekeeping;             /* 1 s: engine health */
    uint64_t watchdog_usec;

    struct ga_control *control;
    struct pg_conn *storage;                 /* connection health, for status */
    struct journal *journal;
    struct ga_pipeline *pipeline;
    struct ga_admit *admit;              /* limits.max_metrics at the door (daemon/ingest/admit.h) */
    struct ga_late_notice *late_notice;  /* window floors for the acks (daemon/ingest/late_notice.h);
                                            NULL in cluster mode */
    struct ga_ingest *ingest;
    struct ga_ingest *ingest_stopped;    /* drained, freed by the drain */
    struct ga_engine_worker *worker;     /* cluster mode: NULL while being replaced */
    struct js_log *jsl;                     /* cluster mode: the JetStream log */
    struct ga_cluster *cluster;          /* cluster mode: ownership (daemon/cluster.h) */
    struct pg_query *query;                   /* read queries of the control ops; blocking */
    struct ga_jobs *jobs;                /* the job manager (daemon/jobs/job_kinds.h) */
    struct control_ops_jobs_waiters *job_waiters;    /* job.submit {"wait": true} in progress */
    struct http_server *http;            /* listen.http (daemon/http/), NULL when off */
    struct pg_query *http_query;              /* the HTTP handlers' own query pool */
    struct ceilo_resources *resources;   /* resources from Ceilometer samples, with listen.http */
    struct ga_loop_call *loop_call;      /* other threads' calls onto the loop (loop_call.h) */

    int ngpus;                           /* devices found, usable or not */
    struct ga_gpu_info gpus[GA_GPU_MAX];
    char gpu_error[256];                 /* why no GPU, "" when some */
    int cpu_threads;

    struct ga_counters counters;
    char last_reload_error[512];
};

/* Run the daemon with an already loaded and validated config (ownership of
 * cfg passes to the daemon).  ready_fd >= 0: one byte is written to it and
 * it is closed once the daemon is ready (the parent of a backgrounded
 * daemon waits for it).  Returns the process exit code. */
int ga_daemon_run(struct ga_config *cfg, const char *config_path, int ready_fd);

/* Reload the config file.  On success applies what may change and writes
 * the keys that need a restart into restart_needed.  On failure keeps the
 * old config and writes the reason into err.  Returns 0 or GA_ECONFIG. */
int ga_daemon_reload(struct ga_daemon *d, char *restart_needed, size_t rlen,
                     char *err, size_t errlen);

/* Begin the graceful drain (idempotent). */
void ga_daemon_shutdown(struct ga_daemon *d, const char *why);

const char *ga_state_name(enum ga_state s);
/* A new engine on the configured backends (GPUs, else the CPU), for one of
 * share engine workers: its CPU backend gets 1/share of the CPU threads.
 * Any thread.  Returns 0 or GA_E*. */
int ga_daemon_open_engine(struct ga_daemon *d, int share, struct ga_engine **out);

#endif
