/* part_worker.h — one engine worker: the partitions it owns, from durable
 * batches to roll-ups in PostgreSQL.
 *
 * A worker owns a set of the metric space's partitions (proto/ga_partition.h)
 * and everything of theirs on the data path: the metrics (registry), their
 * windows (its own engine: a CUDA backend per usable GPU or the CPU
 * backend), its storage writers (their connections hold its partitions'
 * locks and commit its partitions' positions), its position in the log and
 * its window checkpoints.  No state is shared with the other workers of the
 * daemon; the group (engine_worker.h) starts them, merges what they report,
 * and lets the journal go below the lowest of their window positions.
 *
 * At start it loads its partitions' state from PostgreSQL (storage/pg_load.h)
 * and starts its writers; one of several workers starts its writers first
 * (they take its partitions' locks, the first worker's first writer the
 * instance lock too) and then loads, so that it reads what the sessions of
 * a killed instance committed last.  It replays the journal from the
 * lowest of its partitions' window positions (the records' points of other
 * partitions skipped), then consumes its lane of the pipeline's engine queue
 * (daemon/pipeline.h) in LSN order: names → metric ids (new ones
 * numbered by partition, id % 64 = partition, when it owns some partitions
 * only), ga_engine_feed, and one storage unit per run of batches.  Every
 * window_snapshot_s / (its partitions) it saves the changed windows of one
 * of its partitions.  Cluster mode: the stream instead of the journal
 * (docs/CLUSTER.md). */
#ifndef GA_PART_WORKER_H
#define GA_PART_WORKER_H

#include <stdint.h>

#include "daemon/engine_worker.h"

struct ga_config;
struct ga_part_worker;

struct part_worker_opts {
    struct ga_daemon *d;
    struct ga_pipeline *pl;
    struct journal *j;                    /* single node: the journal */
    struct js_log *jsl;                  /* cluster mode: the stream instead */
    struct ga_engine *engine;         /* ownership passes */
    int lane, nlanes;                 /* its engine queue, of nlanes (pipeline.h) */
    uint64_t owned;                   /* its partitions (bit p) */
    /* the group's callback (ctx): the writers committed a window set at
     * window_lsn (the lowest of the worker's partitions') */
    void (*released)(void *ctx, int lane, uint64_t window_lsn);
    void *ctx;
};

int part_worker_start(struct ga_part_worker **out, const struct part_worker_opts *o);
/* Ask the thread to stop: it drains its lane and saves a window set of
 * every partition; a journal replay still running at deadline_ns
 * (monotonic) stops there, and nothing after it is fed (the rest stays in
 * the journal for the next start).  part_worker_join waits for it. */
void part_worker_request_stop(struct ga_part_worker *w, int64_t deadline_ns);
void part_worker_join(struct ga_part_worker *w);
/* Join, stop its writers (up to timeout_ms for the final commit) and free.
 * 0 or the writers' error. */
int part_worker_stop(struct ga_part_worker *w, int timeout_ms);
void part_worker_get_status(struct ga_part_worker *w, struct engine_worker_status *st);
/* cb(ctx, rc) once every record below target is aggregated and committed. */
int part_worker_flush(struct ga_part_worker *w, uint64_t target, void (*cb)(void *ctx, int rc), void *ctx);
void part_worker_reload(struct ga_part_worker *w, const struct ga_config *cfg);

#endif
