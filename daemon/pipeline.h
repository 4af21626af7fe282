/* pipeline.h — from a decoded batch to the journal and the engine, in order.
 *
 *   loop thread          decode workers (uv_queue_work)     sequencer thread
 *   frame → pipeline_item  ──▶ ing_decode, journal record encode ─▶ (back on the loop,
 *                                                             per-connection order)
 *                        pipeline_submit(item) ─────────────────▶ journal_append → lsn
 *                                                             engine queue push
 *   ack when durable ◀── uv_async ◀── group commit thread (durable_lsn)
 *
 * The sequencer appends items in the order they are submitted, which the
 * ingest layer keeps equal to each connection's arrival order, and pushes
 * them onto the engine queue in the same (LSN) order, so journal replay
 * reproduces exactly what the engine saw.  A full journal (journal.max_bytes
 * reached because storage is behind) blocks the sequencer, never the loop;
 * the loop sees pipeline_backlog() grow and stops reading sockets.
 *
 * The engine queue holds decoded batches for the engine workers, one lane
 * a worker: with several, each batch is split on the decode workers into
 * one batch per lane (the points of the partitions p with
 * pipeline_lane_of(p, lanes) == lane), and a lane with no point of a record gets
 * a "skip" entry, so that every worker's position moves with the journal.
 * Each lane is bounded (limits.queue_batches entries, and half the memory
 * budget divided by the lanes); past that a batch is dropped from memory and its
 * worker reads it back from the journal (a "journal-only" entry), so
 * memory stays bounded whatever storage does, and nothing acknowledged
 * depends on memory. */
#ifndef GA_PIPELINE_H
#define GA_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "proto/ga_partition.h"
#include "proto/ingest_proto.h"
#include "storage/journal.h"

/* At most one lane a partition. */
#define PIPELINE_MAX_LANES GA_PARTITIONS

/* The lane (engine worker) of partition p when there are lanes of them. */
static inline int pipeline_lane_of(int p, int lanes)
{
    return p % lanes;
}

struct js_log;

/* Cluster mode: one message of a batch, the points of one partition. */
struct pipeline_prec {
    int part;
    uint8_t *data;                /* columnar points message (owned) */
    size_t len;
};

enum pipeline_item_state {
    PIPELINE_DECODING = 0,     /* with a decode worker */
    PIPELINE_DECODED,          /* back on the loop, not yet submitted */
    PIPELINE_SEQUENCING,       /* with the sequencer */
    PIPELINE_SEQUENCED,        /* journaled (end set) or nothing to journal */
    PIPELINE_FAILED,           /* decode error: rc, err */
};

/* One batch on its way.  Owned by the ingest layer (loop thread) except
 * while with a worker or the sequencer. */
struct pipeline_item {
    enum pipeline_item_state state;
    /* in */
    uint8_t *frame;               /* the frame bytes (freed after decode) */
    size_t len;
    /* The listener's decoder, run on a decode worker: fill b (a zeroed
     * batch) from frame/len and dctx; 0 or GA_E*.  NULL = protocol v1
     * (ing_decode, with its seq and per-point rejections). */
    int (*decode)(struct pipeline_item *it, struct ing_batch *b);
    void *dctx;                   /* the listener's per-item state, owned */
    void (*dctx_free)(void *dctx); /* frees dctx with the item; NULL = free() */
    int64_t recv_mono_ns;         /* stream batches: when the frame was taken in (the
                                     ack latency, daemon/latency.h); 0: not timed */
    /* out */
    int rc;                       /* ing_decode() result or GA_E* */
    char err[256];
    uint64_t seq;                 /* the client's batch seq */
    int has_seq;
    uint64_t accepted;
    size_t nrejected;
    struct ing_reject *rejected;  /* copies, owned by the item */
    size_t nlate;                 /* accepted points behind their metric's window as
                                     the door knew it (late_notice.h): the ack's late */
    struct ing_reject *late;      /* owned by the item */
    char **late_text;             /* its reasons, one a name (NULL: none) */
    size_t late_ntext;
    struct ing_batch *batch;      /* handed to the engine queue by the sequencer */
    struct ing_batch **lane_batch; /* several lanes: the batch split, one per lane
                                     (NULL: no point there), instead of batch */
    int nlanes;
    uint8_t *record;              /* journal payload (columnar points message) */
    size_t record_len;
    uint64_t lsn, end;            /* journal range; end 0 = nothing journaled (cluster
                                     mode: the publish counter, see pipeline_start_cluster) */
    struct pipeline_prec *precs;        /* cluster mode: the batch by partition, instead of record */
    size_t nprecs;
    /* links */
    void *owner;                  /* the ingest connection or listener */
    struct pipeline_item *next;         /* the owner's FIFO */
    struct pipeline_item *seq_next;     /* private: sequencer queue */
    void *owner_ctx;              /* private: decode context */
    uv_work_t work;
};

/* An engine queue entry: a batch, or NULL when it must be read back from
 * the journal (lsn..end), or (skip) records with no point for the lane. */
struct pipeline_entry {
    uint64_t lsn, end;
    struct ing_batch *batch;      /* owned by whoever popped the entry */
    size_t bytes;
    int skip;
};

struct pipeline_stats {
    uint64_t batches, points, rejected, journal_bytes;
    uint64_t engine_queue, engine_queue_bytes, journal_only;
    uint64_t sequencer_backlog, journal_full_waits;
    uint64_t journal_stall_refusals;  /* batches refused while the journal could not write */
    uint64_t journal_full_busy;       /* batches answered busy at journal.max_bytes */
    uint64_t durable_lsn;
};

struct ga_pipeline;

/* Start the sequencer and the group commit thread on an open journal.
 *   on_durable    called on the loop thread when the durable LSN advances
 *   lanes         engine queues, one per engine worker (1..PIPELINE_MAX_LANES)
 *   max_entries   engine queue entries kept in memory, each lane
 *   max_bytes     engine queue bytes kept in memory, all lanes together
 * Returns 0 or GA_E*. */
int pipeline_start(struct ga_pipeline **out, uv_loop_t *loop, struct journal *j, int fsync_interval_ms,
             int lanes, size_t max_entries, size_t max_bytes,
             void (*on_durable)(void *ctx, uint64_t durable_lsn), void *ctx);
/* Cluster mode (docs/CLUSTER.md): no journal.  Decoding splits each batch
 * into one message per partition (chunks of at most 256 KiB); the
 * sequencer publishes the items queued at that moment as one group to
 * JetStream (js_log_publish: ack once every message is stored on a quorum of
 * replicas) and then gives them ends from a counter (lsn = n, end = n + 1)
 * and moves the "durable" position to the counter, so the ingest layer acks
 * them exactly as it does journaled items.  While JetStream does not
 * acknowledge, the sequencer retries and the backlog grows: the loop stops
 * reading sockets (backpressure).  The engine queue is not used: the
 * engine worker consumes the stream.  Returns 0 or GA_E*. */
int pipeline_start_cluster(struct ga_pipeline **out, uv_loop_t *loop, struct js_log *jsl,
                     size_t max_group_bytes,
                     void (*on_durable)(void *ctx, uint64_t durable_lsn), void *ctx);
/* Drain: every submitted item is journaled and synced (items still waiting
 * for journal space fail with GA_ESHUTDOWN: they were never acknowledged);
 * stops the threads.  Blocks; call once the loop no longer submits.  The
 * engine side may still pop what is queued. */
void pipeline_stop(struct ga_pipeline *p);
/* The drain's deadline passed: items waiting for journal space fail with
 * GA_ESHUTDOWN from now on instead of waiting (they were never
 * acknowledged), so their connections can close before pipeline_stop.  Loop
 * thread; does not block. */
void pipeline_drain(struct ga_pipeline *p);
/* Free what is left and close the loop handle (loop thread, after the
 * engine worker stopped). */
void pipeline_close(struct ga_pipeline *p);

/* Decode item on the libuv thread pool, then call done(item) on the loop. */
int pipeline_decode(struct ga_pipeline *p, struct pipeline_item *item, const struct ing_limits *lim,
              void (*done)(struct pipeline_item *));
/* Hand a decoded item to the sequencer (loop thread, in arrival order).
 * item->state becomes PIPELINE_SEQUENCED later; on_durable fires after. */
void pipeline_submit(struct ga_pipeline *p, struct pipeline_item *item);
/* Items submitted but not yet sequenced (backpressure signal). */
size_t pipeline_backlog(struct ga_pipeline *p);
/* Read item->state safely from the loop thread. */
enum pipeline_item_state pipeline_item_state(struct ga_pipeline *p, const struct pipeline_item *item);
uint64_t pipeline_durable_lsn(struct ga_pipeline *p);
/* 1 while the sequencer waits for journal space (journal.max_bytes):
 * ingest pauses reading; a batch that waited 1 s is answered "busy". */
int pipeline_journal_full(struct ga_pipeline *p);
/* Check every decoded batch's metric names against a (limits.max_metrics,
 * daemon/ingest/admit.h) before it is journaled.  Call before the first pipeline_decode. */
struct ga_admit;
void pipeline_set_admit(struct ga_pipeline *p, struct ga_admit *a);
/* List in each protocol-v1 ack the accepted points behind their metric's
 * window as n knows it (daemon/ingest/late_notice.h).  Call before the
 * first pipeline_decode. */
struct ga_late_notice;
void pipeline_set_late_notice(struct ga_pipeline *p, struct ga_late_notice *n);
void pipeline_item_free(struct pipeline_item *item);

/* Engine side (the worker of one lane, one thread a lane): the lane's next
 * entry whose record is durable, waiting up to timeout_ms.  Returns 1 with
 * *e filled, 0 on timeout, GA_ESHUTDOWN once stopped and empty. */
int pipeline_engine_pop(struct ga_pipeline *p, int lane, struct pipeline_entry *e, int timeout_ms);
/* The lanes pipeline_start was given (1 in cluster mode). */
int pipeline_lanes(const struct ga_pipeline *p);
void pipeline_get_stats(struct ga_pipeline *p, struct pipeline_stats *st);
/* Engine-side notice that the journal was released up to lsn (storage
 * committed); wakes a sequencer waiting on a full journal. */
void pipeline_journal_released(struct ga_pipeline *p);

#endif
