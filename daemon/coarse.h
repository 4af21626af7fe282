/* coarse.h — the buckets of coarse archives, held back a bounded time
 * before they go to the writers (docs/STORAGE.md "Coarse archives").
 *
 * Every point rewrites its metric's newest bucket in every archive: under
 * `medium` at a point a second, the minute bucket and the hour bucket, so
 * half of what the partition workers hand to the writers is hour buckets
 * that a reader looks at far less often than once a second.  A partition
 * worker hands the rows of each metric's finest archive over with the
 * feed that computed them; the rows of its coarser archives (every
 * granularity above the policy's finest) wait here, a bucket's newest
 * value replacing the one before, and go:
 *   - each partition's within storage.coarse_delay_ms: the worker drains
 *     one owned partition every coarse_delay_ms / (partitions owned);
 *   - a partition's before its window set (the set claims the journal
 *     records they were computed from), and so all of them at flush and
 *     at stop;
 *   - a bucket at once when a newer bucket of its (metric, granularity)
 *     comes (the held one closed), or when an older one comes (a late
 *     point: the older goes, the held one stays).
 *
 * What goes out is handed over as a unit of LSN 0 ("covers no journal
 * record", pg_writer.h), which the writer writes even while the journal
 * is replayed below its committed position: a bucket's value is whole
 * (computed from the metric's window, which holds every point of the
 * bucket), so writing it again is harmless, and a crash that loses what
 * was held is made good by the replay, which computes those buckets
 * again from records the window sets have not yet claimed.
 *
 * Memory: one entry (32 bytes) and the bucket's slots (32 bytes each: a
 * wide record is one to three, a row one a method) for each bucket held,
 * at most the metrics times their coarse archives.  Not thread-safe: the
 * partition worker's thread only.  Metric ids are the worker's local ids. */
#ifndef GA_COARSE_H
#define GA_COARSE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/engine.h"
#include "proto/agg.h"
#include "proto/ga_partition.h"

struct coarse_ent {
    uint32_t metric;
    uint32_t next;                   /* the metric's next entry + 1; 0: none */
    int64_t granularity_ns, ts;
    uint32_t off, len;               /* its slots in its partition's pool */
};

/* What the holder asks of the worker about a metric (local id). */
struct coarse_src {
    int64_t (*finest_ns)(void *ctx, uint32_t metric);   /* its policy's finest granularity */
    int (*part)(void *ctx, uint32_t metric);
    void *ctx;
};

/* The buckets held of one partition: a drain lets go of all of them and
 * keeps the memory, touching no other partition's. */
struct coarse_part {
    struct coarse_ent *e;
    size_t n, cap;
    struct ga_agg *pool;             /* the held slots (replaced ones linger until the drain) */
    size_t npool, cap_pool;
};

struct coarse {
    struct coarse_part part[GA_PARTITIONS];
    size_t held;                     /* entries over the partitions */
    uint32_t *head;                  /* per metric: its first entry in its partition + 1 */
    size_t head_cap;
    struct ga_agg *out;              /* slots to hand over (coarse_out), row or record whole */
    size_t nout, cap_out, out_rows;
    struct ga_agg *scratch;          /* two buckets' rows, for merging */
    uint64_t released;               /* buckets handed out since start */
    uint64_t replaced;               /* held buckets replaced by a newer value of the same bucket */
};

/* Move the coarse archives' rows and records out of r->aggs[0..naggs)
 * into c (r keeps the finest archive's, in order; r->nrows follows), and
 * put what they displace in c's out.  A bucket whose methods come apart
 * (a later run of some of them only) is held as the merge of both.  0, or
 * GA_ENOMEM with r and c partly done: the feed must not be stored (the
 * journal keeps it). */
int coarse_take(struct coarse *c, struct ga_result *r, const struct coarse_src *src);

/* Put the held buckets of the partitions in mask (bit p; 0: all) in c's
 * out.  0 or GA_ENOMEM (nothing moved). */
int coarse_drain(struct coarse *c, uint64_t mask);

/* Buckets held now. */
static inline size_t coarse_held(const struct coarse *c) { return c->held; }

/* Forget out once it was handed over. */
void coarse_out_clear(struct coarse *c);

void coarse_free(struct coarse *c);

#endif
