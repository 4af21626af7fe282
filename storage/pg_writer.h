/* pg_writer.h — the storage writer: batches of changed buckets, late
 * points, metric definitions and window snapshots, written to PostgreSQL in
 * one transaction per flush, together with the journal checkpoint they
 * cover.
 *
 * The daemon submits units of work (pg_writer_submit, any thread).  Units are
 * copied at once (windows encoded) and coalesced on the writer's own
 * thread into the pending batch: for the same
 * (metric, granularity, method, ts) the later value wins, the latest window
 * snapshot of a metric wins, point counters add up.  A dedicated thread
 * with its own connection flushes the pending batch when it holds
 * flush_rows rows, when its oldest unit is flush_interval_ms old, on
 * pg_writer_flush, and at stop, as ONE transaction:
 *
 *   COPY (binary) aggregates → temp staging table; INSERT … SELECT … ON
 *   CONFLICT (pk) DO UPDATE; insert late points; upsert policies, metrics,
 *   point counters and window snapshots; advance the checkpoint row; COMMIT
 *
 * then calls on_commit(ctx, committed_lsn, window_lsn) from that thread.
 * When PostgreSQL is down or the transaction fails, the same batch is
 * retried with exponential backoff (retry_initial_ms .. retry_max_ms);
 * nothing is ever dropped — except where the database refuses the data
 * itself (pg_util_data_error): then the refused metrics' rows are isolated
 * and recorded in rejected_rows, and the rest commits (pg_isolate.h).  A commit whose outcome was lost with the
 * connection is recognised on reconnect (checkpoints.last_batch) and not
 * applied twice.  New units keep coalescing into the next batch meanwhile,
 * up to queue_max_rows; then pg_writer_submit returns GA_EBUSY (backpressure).
 * The rows counted are the next batch's distinct rows (a bucket rewritten
 * by many units counts once) and those of units not yet merged into it, so
 * the bound is memory (about 40 bytes a row) and a slow transaction makes
 * the next one carry more points per row, not block the engine sooner.
 *
 * LSNs.  unit.lsn means: every journal record below this LSN is covered by
 * this unit and the units submitted before it (0 = the unit covers no
 * journal record).  unit.window_lsn != 0 means: unit.windows holds the
 * window of every metric of the partitions in unit.window_parts (all when
 * 0) that changed since the previous snapshot set of its partition, as it
 * was after every record below window_lsn, and unit.counts the points those
 * metrics took since then.  Each partition has its window checkpoint (table
 * `partitions`); the checkpoint row holds the highest committed_lsn and the
 * lowest partition's window_lsn, from which the journal is replayed.  At start the daemon loads the checkpoint
 * (pg_load.h), restores the windows and replays the journal from
 * window_lsn; replayed units whose lsn <= the loaded committed_lsn are
 * already in the database, so the writer drops their buckets, late points
 * and counters (counted in units_skipped) and keeps only their metric
 * definitions; window sets with window_lsn <= the committed window_lsn are
 * dropped likewise.
 *
 * Thread-safety: every function may be called from any thread, except
 * pg_writer_stop (once, and nothing else on w after it starts; pg_writer_stop_begin
 * may come before it). */
#ifndef GA_PG_WRITER_H
#define GA_PG_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "proto/agg.h"
#include "proto/policy.h"
#include "proto/ga_partition.h"
#include "storage/pg_conn.h"

/* A new metric: its dense id, name and policy. */
struct pg_writer_metric_def {
    uint32_t id;
    const char *name;                 /* NUL-terminated, <= 255 bytes */
    const struct ga_policy *policy;
};

/* Points aggregated for a metric by this unit (metrics.points += points). */
struct pg_writer_count {
    uint32_t metric;
    uint64_t points;
};

/* A metric's raw window (ga_engine_window_get), borrowed. */
/* A metric's window, whole; or with tail set, only the points appended
 * since its last save (which holds every point before them), keep_from
 * being the window's first timestamp now (docs/STORAGE.md "Window
 * snapshots"). */
struct pg_writer_window {
    uint32_t metric;
    const struct ga_window *window;
    int tail;
    int64_t keep_from;
};

/* One unit of work.  Every array is borrowed for the duration of
 * pg_writer_submit only (copied).  Any count may be 0. */
struct pg_writer_unit {
    const struct ga_agg *aggs;    /* rows and wide records (engine.h), as a ga_result's */
    size_t naggs;                 /* slots */
    const uint8_t *agg_part;      /* per slot: its metric's partition (proto/ga_partition.h),
                                     which lets its open buckets go into blocks (pg_open.h);
                                     NULL: not known, every bucket a row */
    const struct ga_late *late;
    size_t nlate;
    const struct pg_writer_metric_def *defs;
    size_t ndefs;
    const struct pg_writer_count *counts;
    size_t ncounts;
    const struct pg_writer_window *windows;
    size_t nwindows;
    uint64_t lsn;                     /* see "LSNs" above; must not decrease */
    uint64_t window_lsn;              /* != 0: windows is a complete set of window_parts */
    uint64_t window_parts;            /* with window_lsn: bit p for partition p
                                         (proto/ga_partition.h); 0 = every partition */
};

struct pg_writer;

/* The default queue_max_rows, in flush_rows: room for every open bucket
 * of the metrics a writer serves (100,000-row batches: 1,600,000 rows,
 * 64 MB, the 12 values a point writes under `medium` for 130,000 metrics). */
#define PG_WRITER_QUEUE_FLUSHES 16

struct pg_writer_opts {
    const char *conninfo;             /* copied */
    int flush_rows;                   /* storage.flush_rows (> 0) */
    int flush_interval_ms;            /* storage.flush_interval_ms (> 0) */
    int retry_initial_ms;             /* storage.retry_initial_ms (> 0) */
    int retry_max_ms;                 /* storage.retry_max_ms (>= initial) */
    size_t queue_max_rows;            /* pending rows cap; 0 = PG_WRITER_QUEUE_FLUSHES * flush_rows */
    int maintenance_interval_ms;      /* partitions ahead + retention; 0 = 1 h, < 0 off */
    int partitions_ahead_days;        /* created ahead of today; 0 = 2 */
    uint64_t committed_lsn;           /* the loaded checkpoint (pg_load.h) */
    uint64_t window_lsn;              /* the lowest of part_window_lsn */
    const uint64_t *part_window_lsn;  /* GA_PARTITIONS loaded window checkpoints; NULL: all
                                         window_lsn */
    uint64_t parts;                   /* the partitions this writer owns (bit p; 0 = all):
                                         it holds their advisory locks and moves their rows
                                         of `partitions`; units carry only their metrics */
    int no_instance_lock;             /* another writer of the daemon holds the instance lock */
    int fence;                        /* cluster mode: once connected, never reconnect: a
                                         lost session lost its partition locks, and another
                                         daemon may own them now; the writer stays down
                                         ("fenced") and writes nothing more */
    size_t open_max;                  /* open buckets this writer holds in blocks at most
                                         (pg_open.h); 0: none new (blocks already stored
                                         are still kept up) */
    size_t window_txn_bytes;          /* window records a transaction writes at most: a
                                         window set bigger goes over several, its
                                         partitions advanced with the last; 0: no limit */
    uint64_t lsn_floor;               /* no unit's LSN is below it (the journal's first
                                         LSN): lag_lsn counts from it while the
                                         checkpoint is lower (a fresh database) */
    /* Called from the writer thread after each commit; may be NULL.  Must
     * not call pg_writer_stop. */
    void (*on_commit)(void *ctx, uint64_t committed_lsn, uint64_t window_lsn);
    void *ctx;
};

struct pg_writer_status {
    enum pg_conn_state state;             /* connecting / connected / down / stopped */
    char last_error[256];             /* "" when none since the last commit */
    int64_t since_real_ns;            /* when state last changed */
    uint64_t committed_lsn, window_lsn;   /* window_lsn: the lowest partition's */
    uint64_t part_window_lsn[GA_PARTITIONS];
    uint64_t submitted_lsn;           /* highest unit.lsn submitted */
    double lag_s;                     /* age of the oldest uncommitted unit, 0 if none */
    uint64_t lag_lsn;                 /* submitted_lsn - max(committed_lsn, lsn_floor) */
    uint64_t pending_rows;            /* rows not yet committed (coalesced once taken) */
    uint64_t pending_units;
    uint64_t rows_committed;          /* method values (one per method of a bucket) */
    uint64_t buckets_committed;       /* bucket rows written (each holds several values) */
    uint64_t late_committed, windows_committed, defs_committed;
    uint64_t transactions, retries, connects, units_skipped, busy_refusals;
    uint64_t partitions_created, partitions_dropped;
    uint64_t last_rows;               /* rows of the last transaction */
    double last_flush_ms;             /* its wall time, and the parts: */
    double last_copy_ms, last_upsert_ms, last_commit_ms;
    double last_fresh_ms;             /* its direct COPY of fresh buckets */
    uint64_t rows_fresh;              /* bucket rows COPYed straight into buckets */
    uint64_t fresh_fallbacks;         /* flushes whose "fresh" rows existed */
    uint64_t rows_updated;            /* bucket rows replaced by a plain UPDATE */
    uint64_t pairs_asked;             /* (metric, granularity) high waters read from the database */
    uint64_t pairs_new;               /* pairs of metrics new to this process: not asked */
    uint64_t update_fallbacks;        /* flushes whose rows to replace were missing */
    uint64_t rows_merged;             /* bucket rows merged with another stored method set */
    uint64_t rows_rejected;           /* rows the database refused, committed to rejected_rows
                                         (or counted only, where even that was refused) */
    uint64_t isolations;              /* flushes that failed on their data and were split */
    uint64_t open_buckets;            /* open buckets held in blocks now (pg_open.h) */
    uint64_t open_blocks;             /* their blocks */
    uint64_t open_written;            /* open buckets written into blocks, since start */
    uint64_t open_blocks_written;     /* block rows written */
    uint64_t open_closed;             /* open buckets closed: moved to buckets as rows */
    uint64_t open_full;               /* new pairs kept as rows: open_buckets_max reached */
    char last_rejected[256];          /* "metric M: <database message>" of the last; "" none */
    int fenced;                       /* pg_writer_opts.fence: the session was lost */
};

/* Start the writer thread; it connects (with backoff) on its own.  Returns
 * 0 and *out, or GA_EINVAL (bad options) / GA_ENOMEM. */
int pg_writer_start(struct pg_writer **out, const struct pg_writer_opts *o);

/* Copy a unit for the writer thread, which coalesces it into the pending
 * batch.  Returns 0; GA_EBUSY when the rows pending (units not yet taken
 * by the writer count before coalescing) plus the unit's rows would pass
 * queue_max_rows (nothing taken: retry later; a
 * unit alone larger than the cap is taken when nothing is pending); GA_ESHUTDOWN after pg_writer_stop began; GA_EINVAL for a window not
 * strictly increasing, a name too long, an LSN above INT64_MAX or lower
 * than the previous unit's; GA_ENOMEM. */
int pg_writer_submit(struct pg_writer *w, const struct pg_writer_unit *u);

/* Ask for everything submitted so far to be committed now.  cb(ctx, rc,
 * committed_lsn) is called once it is (rc 0), from the writer thread — or
 * at once from this thread when nothing is pending — or with GA_ESHUTDOWN
 * if the writer stops before it could commit.  Returns 0 or GA_ENOMEM /
 * GA_ESHUTDOWN (cb not called). */
int pg_writer_flush(struct pg_writer *w, void (*cb)(void *ctx, int rc, uint64_t committed_lsn), void *ctx);

/* pg_writer_flush and wait.  Returns 0 when committed, GA_ETIMEDOUT after
 * timeout_ms (< 0: no limit; the flush still happens), GA_ESHUTDOWN. */
int pg_writer_flush_sync(struct pg_writer *w, int timeout_ms);

/* Reload: new flush and backoff settings (values <= 0 keep the old one). */
void pg_writer_set_tuning(struct pg_writer *w, int flush_rows, int flush_interval_ms, int retry_initial_ms,
                    int retry_max_ms);

/* Snapshot of the status; thread-safe. */
void pg_writer_get_status(struct pg_writer *w, struct pg_writer_status *st);

/* Graceful stop: refuse new units, flush and commit everything pending,
 * close the connection, free w.  If it cannot commit within timeout_ms
 * (< 0: wait forever) it gives up, logs what stayed uncommitted (it is
 * still in the journal) and returns GA_ETIMEDOUT; else 0.  After
 * pg_writer_stop_begin the earlier of the two deadlines holds.  NULL: no-op. */
int pg_writer_stop(struct pg_writer *w, int timeout_ms);

/* Begin pg_writer_stop's graceful stop without waiting for it: new units are
 * refused and what is not committed timeout_ms from now (< 0: no limit)
 * is given up.  Writers begun together wait out one deadline side by side,
 * not one after another; pg_writer_stop then joins each.  NULL: no-op. */
void pg_writer_stop_begin(struct pg_writer *w, int timeout_ms);

#endif
