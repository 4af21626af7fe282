/* pg_writers.h — several storage writers side by side, one per group of
 * partitions (proto/ga_partition.h), behind the single-writer interface.
 *
 * One PostgreSQL backend applies rows at a fixed rate however many cores
 * the server has; N writers (storage.writers) each own the partitions p
 * with p % N == their index, hold those partitions' advisory locks on their
 * own connection, and commit their rows, window sets and positions in
 * their own transactions (pg_writer.h).  pg_writers_submit splits a unit by the
 * partition of each metric and gives every writer its part, and every
 * writer the unit's LSN (so that each one's committed position moves with
 * the journal); the on_commit callback sees the lowest committed and window
 * positions over the writers, which is what the journal may let go of.
 *
 * Thread-safety: pg_writers_submit from one thread at a time (the engine
 * worker); the others from any thread, pg_writers_stop once. */
#ifndef GA_PG_WRITERS_H
#define GA_PG_WRITERS_H

#include <stddef.h>
#include <stdint.h>

#include "storage/pg_writer.h"

struct pg_writers;

struct pg_writers_opts {
    struct pg_writer_opts w;                /* for every writer; parts, no_instance_lock and the
                                         callbacks are set here per writer */
    int nwriters;                     /* 1..GA_PARTITIONS */
    uint64_t parts;                   /* cluster mode: write only these partitions (bit p),
                                         spread over min(nwriters, their count) writers in
                                         turn; no writer takes the instance lock.  0 = all
                                         (writer i: p % nwriters == i, writer 0 holds the
                                         instance lock) */
    int instance_lock;                /* with parts: the first writer holds the instance lock
                                         all the same (the first of a single daemon's
                                         engine workers) */
    /* the partition of a metric id; called on the thread of pg_writers_submit */
    int (*partition_of)(void *ctx, uint32_t metric);
    void *pctx;
};

/* Start the writers.  Returns 0 and *out, GA_EINVAL or GA_ENOMEM. */
int pg_writers_start(struct pg_writers **out, const struct pg_writers_opts *o);

/* Split u and hand each writer its part, waiting (20 ms steps) while one
 * is full, until stop(sctx) says to give up (GA_ESHUTDOWN; the writers
 * before it have their part: every part is idempotent but for counters,
 * which travel in window sets, each whole in one writer).  Other errors as
 * pg_writer_submit. */
int pg_writers_submit(struct pg_writers *s, const struct pg_writer_unit *u, int (*stop)(void *sctx), void *sctx);

/* pg_writer_flush on every writer; cb once all have answered (the first error,
 * or 0 and the lowest committed LSN). */
int pg_writers_flush(struct pg_writers *s, void (*cb)(void *ctx, int rc, uint64_t committed_lsn), void *ctx);

void pg_writers_set_tuning(struct pg_writers *s, int flush_rows, int flush_interval_ms);

/* The writers' status as one: counters summed, positions the lowest, lag
 * the largest, the state and last error of the worst writer. */
void pg_writers_get_status(struct pg_writers *s, struct pg_writer_status *st);
/* Merge o, the status of writers owning the partitions in parts (bit p),
 * into st as pg_writers_get_status does. */
void pg_writers_status_merge(struct pg_writer_status *st, const struct pg_writer_status *o, uint64_t parts);

/* pg_writer_stop on every writer, all against one deadline timeout_ms from now
 * (they wait side by side: the whole stop takes timeout_ms, not one
 * timeout_ms per writer); the first error.  NULL: no-op. */
int pg_writers_stop(struct pg_writers *s, int timeout_ms);

#endif
