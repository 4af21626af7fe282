/* stat_snapshot.h — everything `gpuaggctl stats` and `status` report,
 * gathered once per request by the control ops (daemon/control/control_ops.c)
 * from the parts of the daemon, so that one reply is one moment.
 *
 * Each row of the counter table (daemon/stat_table.c) names the field here
 * its value is read from; a new counter is a field (or a field of one of
 * the structs below), the line that fills it in control_ops.c when it is
 * not part of one, and its row.  A part that is not running leaves its
 * fields 0. */
#ifndef GA_STAT_SNAPSHOT_H
#define GA_STAT_SNAPSHOT_H

#include <stdint.h>

#include "daemon/config/config.h"
#include "daemon/daemon.h"
#include "daemon/engine_worker.h"
#include "daemon/http/http_server.h"
#include "daemon/ingest/ceilo_resources.h"
#include "daemon/ingest/ingest.h"
#include "daemon/pipeline.h"
#include "daemon/jobs/jobs.h"
#include "proto/base/histo.h"
#include "storage/journal.h"
#include "storage/pg_conn.h"

struct stat_snapshot {
    /* status and stats */
    struct pg_conn_status pg;             /* the supervisor's connection */
    struct engine_worker_status ew;              /* the engine, its workers and writers */
    struct ga_ingest_stats in;        /* ingest core and each listener's own slots */
    struct journal_stats jn;
    struct pipeline_stats pl;
    int have_ew, have_in, have_jn, have_pl;
    /* stats only */
    double uptime_s;
    struct ga_counters ctl;           /* control socket and reloads */
    uint64_t ctl_connections_open;
    uint64_t metrics_admitted, metrics_refused;   /* the door's (admit.h) */
    int gpus;                         /* GPUs the probe found */
    struct ga_config_sized sizing[GA_SIZED_N];    /* zeros if never sized */
    struct http_stats http;
    struct ceilo_resources_stats res;
    struct ga_jobs_stats jobs;
    /* the latency histograms (daemon/latency.h) */
    struct histo_snap ack_latency, commit_lag, request_latency;
};

#endif
