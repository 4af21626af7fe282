/* pg_txn.h — one writer connection and the flush transaction.
 *
 * Used by the writer thread only (pg_writer.c); exposed for tests and the
 * benchmark.  A pg_txn_conn is one libpq connection with the session setup the
 * flush needs (temp staging table, migrations checked) and a cache of the
 * aggregates partitions known to exist.  Not thread-safe: one thread per
 * pg_txn_conn. */
#ifndef GA_PG_TXN_H
#define GA_PG_TXN_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/pg_batch.h"
#include "storage/pg_fresh.h"
#include "storage/pg_open.h"
#include "proto/ga_partition.h"
#include "storage/pg_schema.h"

/* A method set (method_sets row) this connection has seen. */
struct pg_txn_mset {
    uint64_t hash;
    int32_t id;
    uint32_t n;
    ga_method_t *m;                  /* ascending, owned */
};

/* advisory lock class of the partitions (with the partition as second key) */
#define PG_TXN_PART_LOCK_CLASS "745263746"

struct pg_txn_conn {
    PGconn *c;                       /* NULL when not connected */
    uint64_t own_parts;              /* partitions this connection writes (bit p); 0 = all */
    struct pg_schema_part *parts;          /* partitions known to exist, sorted */
    size_t nparts, cap_parts;
    struct pg_txn_mset *msets;          /* method sets known, by id lookup (few) */
    size_t nmsets, cap_msets;
    uint8_t *merged;                 /* per row of the last written batch: its bucket
                                        was merged (the stored set is the union) */
    int32_t *prev_mset;              /* per row: the set stored before, where merged */
    size_t cap_merged;
    uint64_t merged_batch;           /* the batch_id merged[] belongs to */
};

/* Where this connection's partitions stand (table partitions): the lowest
 * committed_lsn and window_lsn of those it owns, the last_batch they were
 * written by, and every partition's window_lsn. */
struct pg_txn_checkpoint {
    uint64_t committed_lsn, window_lsn, last_batch;
    uint64_t part_lsn[GA_PARTITIONS];    /* partitions.window_lsn, every partition */
};

#define PG_TXN_MAX_STEPS 16

struct pg_txn_timing {
    double partitions_ms, fresh_ms, copy_ms, upsert_ms, commit_ms, total_ms;
    int nsteps;                      /* the pipelined steps after the COPY */
    const char *step_what[PG_TXN_MAX_STEPS];       /* their names (static strings) */
    double step_ms[PG_TXN_MAX_STEPS];              /* each one's time, from the previous result */
    int partitions_created;
    size_t rows;                     /* bucket rows written */
    size_t rows_fresh;               /* of which COPYed straight into buckets */
    size_t rows_merged;              /* of which merged with another method set */
    int fresh_fallback;              /* 1: a "fresh" row existed; all were upserted */
    size_t rows_updated;             /* of which replaced by the plain UPDATE */
    int update_fallback;             /* 1: a row to replace was missing; all were upserted */
    size_t open_blocks;              /* open buckets' blocks written (pg_open.h) */
    size_t open_entries;             /* the open buckets they hold */
    size_t open_changed;             /* of which the batch changed */
    double blocks_ms;                /* their COPY */
    double tails_ms;                 /* the COPY of the window tails into staging */
};

/* Connect to conninfo as application_name "gpuaggd-writer", take the
 * instance lock (when instance_lock) and the advisory lock of every
 * partition in parts (0 = all) for the session, migrate the schema, prepare
 * the session and read the checkpoint into *cp.  Returns 0, or GA_EDB /
 * GA_EPROTO / GA_ENOMEM / GA_EBUSY (another daemon holds a lock) with the
 * reason in err (tc is left closed). */
int pg_txn_open(struct pg_txn_conn *tc, const char *conninfo, uint64_t parts, int instance_lock,
             struct pg_txn_checkpoint *cp, char *err, size_t errlen);

/* Close the connection (if any) and free the cache; tc can be reopened. */
void pg_txn_close(struct pg_txn_conn *tc);

/* Read where the partitions stand.  0 or GA_EDB (err). */
int pg_txn_read_checkpoint(struct pg_txn_conn *tc, struct pg_txn_checkpoint *cp, char *err, size_t errlen);

/* Write b (sorted with pg_batch_sort) as one transaction and set the owned
 * partitions' last_batch = batch_id (a unique non-zero tag that tells,
 * after a lost connection, whether the commit happened).  Creates the
 * partitions it needs first (committed on their own).  Returns 0 once
 * committed; GA_EDB (rolled back, the connection still usable) or GA_EIO
 * (the connection is broken: pg_txn_close it) with the reason in err.  *t
 * gets the timings.  hw (may be NULL): the high-water map that picks the
 * rows COPYed straight into aggregates (pg_fresh.h); only read here — the
 * caller raises it with pg_fresh_note once the batch is known committed.  o
 * (may be NULL): the open buckets b was routed through (pg_open_route); their
 * changed blocks are written in the same transaction, and the caller calls
 * pg_open_commit once it is known committed. */
int pg_txn_write(struct pg_txn_conn *tc, const struct pg_batch *b, const struct pg_fresh_map *hw,
              struct pg_open *o, uint64_t batch_id, struct pg_txn_timing *t, char *err, size_t errlen);

/* Write b (sorted) as pg_txn_write does, without advancing the checkpoint,
 * and roll it back: does the database take these rows?  Partitions it
 * needs are still created.  Returns 0 when every statement succeeded;
 * GA_EDB / GA_EIO / GA_ENOMEM as pg_txn_write (err: the database's message,
 * pg_util_data_error tells whether the rows were the cause). */
int pg_txn_probe(struct pg_txn_conn *tc, const struct pg_batch *b, const struct pg_fresh_map *hw,
              char *err, size_t errlen);

/* Raise hw, for every (metric, method, granularity) of aggs[0..n) (sorted
 * as pg_batch_sort leaves them), to the newest bucket the database holds: after
 * a flush whose "fresh" rows turned out to exist (a previous process wrote
 * them), and before the first flush of pairs this process has not seen.
 * 0, or GA_EDB / GA_EIO / GA_ENOMEM (err); hw stays valid. */
int pg_txn_high_water(struct pg_txn_conn *tc, const struct ga_agg *aggs, size_t n, struct pg_fresh_map *hw,
                   char *err, size_t errlen);

/* Maintenance: create the partitions for today (now_ns) and ahead_days
 * after it, then drop the partitions past every policy's reach.  Returns
 * 0 and the counts, or GA_EDB / GA_EIO (err). */
/* After b (written as batch_id) committed: note the method set now stored
 * for each of its buckets that is its pair's high water (pg_fresh.h), for
 * the next rewrites: the batch's own set where the row was inserted or
 * replaced, unknown where it was merged (the union) or where the commit was
 * confirmed on another connection. */
void pg_txn_note_msets(const struct pg_txn_conn *tc, const struct pg_batch *b, uint64_t batch_id,
                    struct pg_fresh_map *hw);

int pg_txn_maintain(struct pg_txn_conn *tc, int64_t now_ns, int ahead_days, int *created, int *dropped,
                 char *err, size_t errlen);

#endif
