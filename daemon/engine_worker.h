/* engine_worker.h — the thread that turns durable batches into roll-ups.
 *
 * At start it loads the state PostgreSQL holds (metrics, policies, the
 * checkpoint, window snapshots: storage/pg_load.h), retrying with backoff
 * while the database is unreachable (ingest keeps acknowledging into the
 * journal meanwhile, up to journal.max_bytes).  It restores the registry
 * and the engine, starts the storage writer, replays the journal from the
 * window checkpoint, then consumes the pipeline's engine queue in LSN
 * order: names → metric ids (creating metrics by rule), ga_engine_feed,
 * and one storage unit per batch (changed buckets, late points, new
 * metrics, point counts, the LSN covered).  Every WINDOW_SNAPSHOT_MS it
 * submits the windows of the metrics that changed; once the writer commits
 * a snapshot set the journal is released below it.
 *
 * The worker owns the registry, the engine and the writer; other threads
 * read only the status snapshot (ew_get_status). */
#ifndef GA_ENGINE_WORKER_H
#define GA_ENGINE_WORKER_H

#include <stdint.h>

#include "gpu/engine.h"
#include "storage/pg_writer.h"

struct ga_daemon;
struct ga_pipeline;
struct jnl;
struct jsl;
struct ga_engine_worker;

enum ew_state { EW_LOADING = 0, EW_REPLAYING, EW_RUNNING, EW_STOPPED };

#define EW_MAX_BACKENDS 16

struct ew_status {
    int nbackends;                    /* primaries (GPUs, or the CPU alone) */
    struct {
        char label[32];
        int failed;
        uint64_t metrics;
    } backends[EW_MAX_BACKENDS];
    int have_fallback;
    uint64_t fallback_metrics;        /* metrics moved to the CPU fallback */
    struct ga_engine_failover_stats failover;
    int fatal;                        /* engine state lost: the daemon must restart */
    char fatal_reason[160];
    enum ew_state state;
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
    int have_writer;
    struct pgw_status writer;
    uint64_t owned;                   /* cluster mode: the partitions worked on */
};

/* Start the worker.  engine: ownership passes.  Returns 0 or GA_E*. */
int ew_start(struct ga_engine_worker **out, struct ga_daemon *d, struct ga_pipeline *pl,
             struct jnl *j, struct ga_engine *engine);
/* Cluster mode (docs/CLUSTER.md): the worker of the partitions in owned
 * (bit p).  It starts the writers of those partitions first (each takes
 * its partitions' advisory locks, waiting while the previous owner still
 * holds them; fenced: a lost session is not re-made), then loads their
 * metrics and windows, and consumes the stream from the lowest of their
 * window positions (messages of other partitions are skipped).  New
 * metrics get ids by partition (id % 64 = partition), so daemons owning
 * different partitions never clash.  ew_stop commits a window set of every
 * owned partition at the position reached, so the next owner starts from
 * there.  pl: the cluster pipeline (ew_flush waits for what it published). */
int ew_start_cluster(struct ga_engine_worker **out, struct ga_daemon *d, struct ga_pipeline *pl,
                     struct jsl *jsl, uint64_t owned, struct ga_engine *engine);
/* Drain: process everything the pipeline holds, commit it, stop.  Blocks
 * up to timeout_ms for the final commit (what stays uncommitted is still
 * in the journal).  Call after pl_stop.  Returns 0, or the storage
 * writers' error when the final commit did not complete (GA_ETIMEDOUT):
 * the daemon then exits non-zero. */
int ew_stop(struct ga_engine_worker *w, int timeout_ms);
void ew_get_status(struct ga_engine_worker *w, struct ew_status *st);
/* `gpuaggctl flush`: once every batch durable now is aggregated and
 * committed, cb(ctx, rc) runs on the worker or writer thread. */
int ew_flush(struct ga_engine_worker *w, void (*cb)(void *ctx, int rc), void *ctx);
const char *ew_state_name(enum ew_state s);
/* The config changed (SIGHUP): new metrics get policies from it. */
void ew_reload(struct ga_engine_worker *w);

#endif
