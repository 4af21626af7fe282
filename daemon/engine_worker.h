/* engine_worker.h — the engine workers of a daemon, as one.
 *
 * The data path after the journal is owned by partitions: engine.workers
 * workers (daemon/part_worker.h), worker k owning the partitions p with
 * p % workers == k, each on its own lane of the pipeline's engine queue,
 * with its own registry, engine, writers, positions and window checkpoints.
 * No thread after the journal is passed by every point.  This group starts
 * them, answers for them (status merged, a flush once all flushed, reload),
 * and releases the journal below the lowest window position of them all.
 * In cluster mode one worker owns the daemon's share of the partitions and
 * consumes the stream (docs/CLUSTER.md).
 *
 * Other threads read only the status snapshot (engine_worker_get_status). */
#ifndef GA_ENGINE_WORKER_H
#define GA_ENGINE_WORKER_H

#include <stdint.h>

#include "gpu/engine.h"
#include "storage/pg_writer.h"

struct ga_daemon;
struct ga_pipeline;
struct journal;
struct js_log;
struct ga_engine_worker;

enum engine_worker_state { ENGINE_WORKER_LOADING = 0, ENGINE_WORKER_REPLAYING, ENGINE_WORKER_RUNNING, ENGINE_WORKER_STOPPED };

#define ENGINE_WORKER_MAX_BACKENDS 16
#define ENGINE_WORKER_MAX_WORKERS 64

/* One worker's share of the work, in the status. */
struct engine_worker_worker_status {
    enum engine_worker_state state;
    uint64_t owned;                   /* its partitions (bit p) */
    uint64_t processed_lsn, points, metrics, feeds, feed_ns, submit_ns, snapshot_ns;
    uint64_t metric_slots;            /* its registry's and engine's per-metric slots */
};

struct engine_worker_status {
    int nbackends;                    /* primaries (GPUs, or the CPU alone) */
    struct {
        char label[32];
        int failed;
        uint64_t metrics;
    } backends[ENGINE_WORKER_MAX_BACKENDS];
    int have_fallback;
    uint64_t fallback_metrics;        /* metrics moved to the CPU fallback */
    struct ga_engine_failover_stats failover;
    int fatal;                        /* engine state lost: the daemon must restart */
    char fatal_reason[160];
    enum engine_worker_state state;
    char load_error[256];
    uint64_t processed_lsn;           /* every record below is aggregated */
    uint64_t batches, points, aggs, late, metrics, snapshots, replayed_records;
    /* where the worker's time goes: feeds (several batches each when they
     * wait), the engine's share and the writers' (handing the rows over,
     * backpressure included), window sets (reading windows, handing them
     * over); the GPUs' window pool: its rebuilds (GPU time, the CUDA
     * backends' own timing) and the raw points it holds */
    uint64_t feeds, feed_ns, submit_ns, snapshot_ns, gpu_rebuild_ns, window_points;
    uint64_t late_window, late_before_epoch, late_nonfinite, late_out_of_range;
    uint64_t metric_slots;            /* per-metric slots of the registries and engines
                                         (a worker's own metrics, numbered from 0) */
    uint64_t coarse_held;             /* coarse archives' buckets held back now (coarse.h) */
    uint64_t coarse_released;         /* and handed to the writers since start */
    uint64_t stream_not_owned;        /* cluster mode: stream messages read and left, of
                                         partitions the worker does not own */
    int have_writer;
    struct pg_writer_status writer;
    uint64_t owned;                   /* the partitions worked on */
    int nworkers;
    struct engine_worker_worker_status workers[ENGINE_WORKER_MAX_WORKERS];
};

/* Start n workers (1..ENGINE_WORKER_MAX_WORKERS, at most the pipeline's lanes), each
 * with an engine of its own (ga_daemon_open_engine).  Returns 0 or GA_E*. */
int engine_worker_start(struct ga_engine_worker **out, struct ga_daemon *d, struct ga_pipeline *pl,
             struct journal *j, int n);
/* Cluster mode (docs/CLUSTER.md): the worker of the partitions in owned
 * (bit p).  It starts the writers of those partitions first (each takes
 * its partitions' advisory locks, waiting while the previous owner still
 * holds them; fenced: a lost session is not re-made), then loads their
 * metrics and windows, and consumes the stream from the lowest of their
 * window positions (messages of other partitions are skipped).  New
 * metrics get ids by partition (id % 64 = partition), so daemons owning
 * different partitions never clash.  engine_worker_stop commits a window set of every
 * owned partition at the position reached, so the next owner starts from
 * there.  pl: the cluster pipeline (engine_worker_flush waits for what it published). */
int engine_worker_start_cluster(struct ga_engine_worker **out, struct ga_daemon *d, struct ga_pipeline *pl,
                     struct js_log *jsl, uint64_t owned);
/* Drain: process everything the pipeline holds, commit it, stop.  Blocks
 * up to timeout_ms for the final commit (what stays uncommitted is still
 * in the journal).  Call after pipeline_stop.  Returns 0, or the storage
 * writers' error when the final commit did not complete (GA_ETIMEDOUT):
 * the daemon then exits non-zero. */
int engine_worker_stop(struct ga_engine_worker *w, int timeout_ms);
void engine_worker_get_status(struct ga_engine_worker *w, struct engine_worker_status *st);
/* `gpuaggctl flush`: once every batch durable now is aggregated and
 * committed by every worker, cb(ctx, rc) runs on a worker or writer
 * thread (rc: the first error). */
int engine_worker_flush(struct ga_engine_worker *w, void (*cb)(void *ctx, int rc), void *ctx);
const char *engine_worker_state_name(enum engine_worker_state s);
/* The config changed (SIGHUP): new metrics get policies from it. */
void engine_worker_reload(struct ga_engine_worker *w);

#endif
