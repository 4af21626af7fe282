/* pg_isolate.h — one bad row never blocks the others.
 *
 * When the database refuses a flush because of its data (pg_util_data_error:
 * a value out of range, a constraint or trigger that rejects a row), the
 * writer does not retry the same batch forever.  It splits the batch into
 * items — the bucket rows of one metric, its late points, its definition,
 * its window snapshot with its point counter — and bisects them with
 * probe transactions that are rolled back (pg_txn_probe), until it knows the
 * items the database refuses.  Those are taken out of the batch and
 * recorded in its rejects (table rejected_rows, with the database's
 * message); the rest is written as usual, together with the checkpoint, so
 * the journal moves on and a restart does not replay into the same wall.
 *
 * Not thread-safe: the writer thread's own batch. */
#ifndef GA_PG_ISOLATE_H
#define GA_PG_ISOLATE_H

#include <stddef.h>

#include "storage/pg_batch.h"

/* At most this many probe transactions per isolation; past it the writer
 * retries the whole batch with backoff, as for any other failure. */
#define PG_ISOLATE_MAX_PROBES 1024

/* probe: does the database take sub (sorted as b)?  0 yes; else an error
 * code with the database's message in err. */
typedef int (*pg_isolate_probe_fn)(void *ctx, const struct pg_batch *sub, char *err, size_t errlen);

struct pg_isolate_result {
    size_t items;                    /* items in the batch */
    size_t bad_items;                /* items refused and taken out */
    size_t rejected;                 /* rows added to b->rejects */
    int probes;                      /* probe transactions run */
    uint32_t first_metric;           /* the first refused item's metric */
};

/* Isolate the items of b (sorted with pg_batch_sort) that the database refuses,
 * move their rows to b->rejects (each with the message of its own probe)
 * and remove them from b.  Returns 0 when at least one item was taken out;
 * GA_EDB when none could be blamed (the batch without any item fails, every
 * item passes alone, or PG_ISOLATE_MAX_PROBES was reached: b unchanged), another
 * error of probe (a lost connection: b unchanged) with its message in err,
 * or GA_ENOMEM.  *res (may be NULL) gets the counts. */
int pg_isolate(struct pg_batch *b, pg_isolate_probe_fn probe, void *ctx, struct pg_isolate_result *res,
                char *err, size_t errlen);

#endif
