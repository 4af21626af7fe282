/* pg_open.h — open buckets packed into blocks (docs/STORAGE.md "Open
 * buckets").
 *
 * Every point rewrites the newest bucket of each archive of its metric,
 * and PostgreSQL rewrites a row at a cost that hardly depends on the row:
 * a million metrics at a point a second under `medium` are two million row
 * rewrites a second, more than it applies on a 16-core host beside the
 * daemon.  So a writer keeps the open bucket of each (metric, granularity)
 * of its partitions in memory and stores them packed, several metrics to a
 * row of `open_blocks`: a flush rewrites one row per block that changed.
 *
 * A bucket is in exactly one place.  It enters a block when it starts
 * after every bucket `buckets` holds for its pair (pg_fresh.h says so); it
 * is rewritten there while it is its pair's newest; when a newer bucket of
 * the pair starts, it goes to `buckets` as a row, once, in the transaction
 * that puts the newer one in the block.  Rewrites of older buckets (late
 * points) are rows as before.  Readers see both through the view
 * `bucket_rows`; metrics.open_block names a metric's block.
 *
 * A block holds metrics of one partition of the metric space
 * (proto/ga_partition.h), every open bucket of each, so that a partition
 * moves between writers and daemons with its blocks: the writer that
 * takes a partition loads them (pg_open_load).  Block ids are partition << 32
 * | a number.
 *
 * A flush: pg_open_route takes the open buckets out of the batch's rows into
 * pending changes and adds the rows of the buckets that closed; the
 * transaction writes the changed blocks (pg_txn.c, through pg_open_block_len
 * and pg_open_block_entry); once it committed, pg_open_commit makes the pending
 * changes the state.  A batch that fails is written again with the same
 * pending changes.
 *
 * Memory: the open buckets held are bounded by max (new pairs past it stay
 * rows); about 150 bytes each for 6 methods.  Not thread-safe: the writer
 * thread only. */
#ifndef GA_PG_OPEN_H
#define GA_PG_OPEN_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/agg.h"
#include "proto/base/hmap.h"
#include "proto/ga_partition.h"
#include "proto/method.h"
#include "storage/pg_batch.h"
#include "storage/pg_fresh.h"

/* A block takes a new metric while its entries, with the new metric's
 * every open bucket (its policy's archives where the batch defines it),
 * stay within PG_OPEN_BLOCK_BYTES as stored (PG_OPEN_ENTRY_BYTES an entry, 8 a
 * value): the row, arrays' headers and all, then stays below PostgreSQL's
 * 2 kB TOAST threshold, so a rewrite neither compresses it nor stores it
 * out of line, and one row a page (fillfactor 20, migration 13) leaves
 * room for the next versions on the page (HOT). */
#define PG_OPEN_BLOCK_BYTES 1536
#define PG_OPEN_ENTRY_BYTES 28

/* A bucket's values, methods ascending. */
struct pg_open_vals {
    double *v;                       /* n values, then n methods: one allocation */
    ga_method_t *m;
    uint16_t n;
    int32_t mset;                    /* its method_sets id; -1 until known */
};

struct pg_open_ent {
    uint32_t metric;
    uint32_t blk;                    /* index in pg_open.blk */
    int64_t granularity_ns, ts;      /* the committed open bucket */
    struct pg_open_vals cur;
    uint32_t pend;                   /* 1 + index in pg_open.pend while a batch changes it */
};

/* A change routed from the pending batch: an entry's next state, or a new
 * entry (ent == UINT32_MAX). */
struct pg_open_pend {
    uint32_t ent;
    uint32_t metric;
    uint32_t blk;
    int64_t granularity_ns, ts;
    struct pg_open_vals val;             /* owned until pg_open_commit hands it to the entry */
};

struct pg_open_blk {
    int64_t id;
    uint32_t *ent;                   /* its entries, in the order of the stored arrays */
    uint32_t n, cap;
    uint32_t bytes;                  /* its entries as stored (PG_OPEN_ENTRY_BYTES + 8 a value) */
    uint8_t stored;                  /* its row exists */
    uint8_t dirty;                   /* the pending batch rewrites it */
    uint32_t nnew;                   /* pending new entries placed in it ... */
    uint32_t newfirst;               /* ... pg_open.newp[newfirst .. + nnew) once routed */
    uint32_t bytes_new;              /* and what they add to bytes */
};

/* A metric given a block by the pending batch (metrics.open_block). */
struct pg_open_place {
    uint32_t metric;
    uint32_t blk;                    /* index in pg_open.blk */
};

struct pg_open_stats {
    uint64_t entries, blocks;        /* held now */
    uint64_t written, blocks_written, closed, full;   /* since start */
};

struct pg_open {
    size_t max;                      /* entries held at most */
    struct pg_open_ent *ent;
    size_t nent, cap_ent;
    struct ga_hmap pair_ix;          /* (metric, granularity) → ent */
    struct ga_hmap metric_ix;        /* metric → blk (its entries' block) */
    struct pg_open_blk *blk;
    size_t nblk, cap_blk;
    int32_t fill[GA_PARTITIONS];     /* the block new metrics of a partition go to, -1 */
    uint32_t next_no[GA_PARTITIONS]; /* the number of the partition's next block */
    /* the pending batch */
    struct pg_open_pend *pend;
    size_t npend, cap_pend;
    struct ga_hmap new_ix;           /* (metric, granularity) → pend, new pairs */
    struct ga_hmap newm_ix;          /* metric → placed, metrics placed by this batch */
    uint32_t *dirty;                 /* blocks rewritten */
    size_t ndirty, cap_dirty;
    uint64_t *newp;                  /* new pending entries: block << 32 | pend index */
    size_t nnewp, cap_newp;
    struct pg_open_place *placed;
    size_t nplaced, cap_placed;
    size_t nblk_before;              /* blocks before the batch made new ones */
    int32_t fill_before[GA_PARTITIONS];
    uint32_t no_before[GA_PARTITIONS];
    uint64_t pend_closed;
    uint32_t most_entries;           /* the most open buckets a metric had: 2 until more */
    uint16_t most_vals;              /* the most values an entry had */
    struct pg_open_stats st;
};

/* An empty set holding at most max open buckets.  0 or GA_ENOMEM. */
int pg_open_init(struct pg_open *o, size_t max);
void pg_open_free(struct pg_open *o);

/* Replace what o holds with the blocks of partitions parts (bit p; 0 =
 * all) read from c.  0, or GA_EDB / GA_EIO / GA_ENOMEM / GA_EPROTO (err). */
int pg_open_load(struct pg_open *o, PGconn *c, uint64_t parts, char *err, size_t errlen);

/* 1 if o holds an open bucket of (metric, granularity). */
int pg_open_has(const struct pg_open *o, uint32_t metric, int64_t granularity_ns);

/* Route b (sorted, pg_batch_sort): a bucket of a pair o holds goes into the
 * pending changes when it is the held one or newer (the held one, closed
 * by a newer, goes to b as rows); a bucket of a pair not held enters a
 * block when b's rows name its partition (ga_agg.aux = partition + 1,
 * pg_batch_take), hw says it starts after every stored bucket of its pair, and
 * there is room.  Every other bucket stays in b.  Re-sorts b.  0, or
 * GA_ENOMEM with b and o as they were. */
int pg_open_route(struct pg_open *o, struct pg_batch *b, const struct pg_fresh_map *hw);

/* The id of the block the pending batch placed metric in, or -1. */
int64_t pg_open_placed_block(const struct pg_open *o, uint32_t metric);

/* 1 if the pending batch rewrites blocks. */
int pg_open_pending(const struct pg_open *o);

/* The pending batch committed: its changes become the state. */
void pg_open_commit(struct pg_open *o);

/* A block's entries as the pending batch writes it: its entry k's pair,
 * bucket and values (the pending ones where it has some).  Blocks are
 * pg_open.dirty[0..ndirty); entries 0..pg_open_block_len(). */
uint32_t pg_open_block_len(const struct pg_open *o, uint32_t blk);
void pg_open_block_entry(const struct pg_open *o, uint32_t blk, uint32_t k, uint32_t *metric,
                     int64_t *granularity_ns, int64_t *ts, struct pg_open_vals **val);

#endif
