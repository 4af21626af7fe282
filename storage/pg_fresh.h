/* pg_fresh.h — which buckets the writer can COPY straight into aggregates.
 *
 * Per (metric, granularity) the newest bucket start this process has seen
 * committed ("high water").  A row whose bucket starts after it is almost
 * surely not in the database yet, so the flush transaction COPYs such rows
 * directly into `aggregates` (plain inserts, PostgreSQL's fast path) and
 * sends only the others through the staging table and INSERT … ON CONFLICT
 * DO UPDATE.  The guess never decides correctness: the direct COPY runs
 * under a savepoint, and if the primary key says a row existed after all
 * (a previous process wrote it, say), the transaction rolls back to the
 * savepoint and upserts every row (docs/STORAGE.md "Fresh buckets").
 * A pair never seen is "not fresh"; before its first flush the writer asks
 * the database for its newest bucket (-1 when it has none), so that even
 * the first flush after a start COPYs the new buckets.  Not thread-safe:
 * writer thread only. */
#ifndef GA_PG_FRESH_H
#define GA_PG_FRESH_H

#include <stddef.h>
#include <stdint.h>

#include "proto/agg.h"
#include "proto/base/hmap.h"

struct pg_fresh_ent {
    int64_t granularity_ns, hi;
    uint32_t metric;
    int32_t mset;                    /* method set of the row at hi, -1 unknown */
};

struct pg_fresh_map {                     /* zeroed: empty */
    struct pg_fresh_ent *e;               /* the pairs, n of cap */
    size_t cap, n;
    struct ga_hmap ix;               /* (metric, granularity) → index in e */
};

/* Above this many pairs the map forgets everything (every pair is then
 * "not fresh" until committed again): bounds memory at 40 bytes × this
 * (24 a pair, 16 for the hash map's slots). */
#define PG_FRESH_MAX_PAIRS ((size_t)1 << 22)

/* 1 if a's bucket starts after the high water of its pair, else 0. */
int pg_fresh(const struct pg_fresh_map *m, const struct ga_agg *a);

/* 1 if a's pair has a high water (noted before), else 0. */
int pg_fresh_known(const struct pg_fresh_map *m, const struct ga_agg *a);

/* After a commit: raise the pairs' high water to the newest bucket of
 * aggs[0..n) (any order).  GA_ENOMEM leaves the map valid (some pairs not
 * raised: only slower, never wrong). */
int pg_fresh_note(struct pg_fresh_map *m, const struct ga_agg *aggs, size_t n);

/* The method set (method_sets id) of the stored row of a's pair at the
 * high water, if a's bucket is that one and it is known; else -1.  The
 * writer rewrites the open bucket with a plain replacement when its new
 * set holds every method of that one, and merges otherwise. */
int32_t pg_fresh_mset(const struct pg_fresh_map *m, const struct ga_agg *a);
/* Note the method set of the row just committed for a's bucket, if it is
 * its pair's high water. */
void pg_fresh_set_mset(struct pg_fresh_map *m, const struct ga_agg *a, int32_t mset);

void pg_fresh_clear(struct pg_fresh_map *m);
void pg_fresh_free(struct pg_fresh_map *m);

#endif
