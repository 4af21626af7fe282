/* pg_batch.h — the writer's pending batch: units coalesced in memory.
 *
 * Buckets are keyed by (metric, granularity, method, ts) in a hash map
 * (proto/base/hmap.h): a later unit's value replaces an earlier one in place.
 * Metric definitions are keyed by id (later wins), policies by name (later
 * wins), point counters by metric (summed), window snapshots by metric
 * (a snapshot replaces, a tail record goes after; stored encoded,
 * pg_window.h).  Late points are appended.
 *
 * Not thread-safe: the writer guards a batch with its mutex. */
#ifndef GA_PG_BATCH_H
#define GA_PG_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "proto/agg.h"
#include "proto/base/hmap.h"
#include "proto/policy.h"
#include "proto/ga_partition.h"
#include "storage/pg_writer.h"

struct pg_batch_def {
    uint32_t id;
    char *name;                      /* owned */
    char policy[GA_POLICY_NAME_MAX];
};

/* A metric's window as the batch will store it: a whole snapshot (NULL
 * when none: the stored one stays), then tail records to append to it
 * (pg_window.h; len 0: none). */
struct pg_batch_window {
    uint32_t metric;
    uint8_t *snap;                   /* owned, pg_window_encode */
    size_t len;
    uint8_t *tail;                   /* owned, pg_window_encode_tail records */
    size_t tlen, tcap;
    uint64_t lsn;                    /* the newest window set it comes from: the window
                                        holds every record below */
};

/* What a rejected row was (table rejected_rows, column kind). */
enum pg_batch_reject_kind { PG_BATCH_REJ_BUCKET, PG_BATCH_REJ_LATE, PG_BATCH_REJ_DEF, PG_BATCH_REJ_WINDOW };

/* A row the database refused, recorded instead of written (pg_isolate.h). */
struct pg_batch_reject {
    uint32_t metric;
    uint8_t kind;                    /* enum pg_batch_reject_kind */
    uint8_t has_value;
    int16_t method;                  /* buckets: ga_method_t; else -1 */
    uint32_t error;                  /* index into pg_batch.errors */
    int64_t granularity_ns;          /* buckets; else 0 */
    int64_t ts;                      /* buckets, late points; else 0 */
    double value;                    /* has_value */
};

/* The reason a group of rows was rejected (the database's message). */
struct pg_batch_reject_error {
    char text[256];
};

struct pg_batch {
    struct ga_agg *aggs;
    size_t naggs, cap_aggs;
    struct ga_hmap ix;               /* bucket key → index in aggs */
    struct ga_late *late;
    size_t nlate, cap_late;
    struct pg_batch_def *defs;
    size_t ndefs, cap_defs;
    struct ga_hmap def_ix;           /* id → index in defs */
    struct ga_policy *policies;
    size_t npolicies, cap_policies;
    struct pg_writer_count *counts;
    size_t ncounts, cap_counts;
    struct ga_hmap count_ix;         /* metric → index in counts */
    struct pg_batch_window *windows;
    size_t nwindows, cap_windows;
    struct ga_hmap window_ix;        /* metric → index in windows */
    uint64_t lsn;                    /* highest of the merged units (0: none) */
    uint64_t part_lsn[GA_PARTITIONS]; /* highest window_lsn merged per partition (0: none) */
    int has_windows;                 /* some part_lsn is set */
    uint64_t window_lsn;             /* set by the writer before writing: the lowest
                                        partition window_lsn once this batch commits */
    struct pg_batch_reject *rejects;      /* rows refused by the database, recorded with the batch */
    size_t nrejects, cap_rejects;
    struct pg_batch_reject_error *errors;
    size_t nerrors, cap_errors;
    uint64_t units, last_seq;        /* units merged; seq of the last one */
    int64_t oldest_mono_ns;          /* submit time of the first unit, 0 if empty */
};

/* A unit copied off its submitter (pg_batch_copy): owns every array, its
 * windows already encoded, what the skips drop already dropped.  The
 * writer thread takes it into its batch (pg_batch_take), so that the coalescing
 * work runs on the writer's thread, not the submitter's. */
struct pg_batch_unit {
    struct pg_batch_unit *next;           /* the writer's inbox */
    struct ga_agg *aggs;             /* rows and wide records, as submitted */
    uint8_t *agg_part;               /* per slot of aggs: its metric's partition; NULL */
    size_t naggs;
    struct ga_late *late;
    size_t nlate;
    struct pg_writer_metric_def *defs;     /* names and policies point into this unit */
    char **names;
    struct ga_policy *policies;
    size_t ndefs;
    struct pg_writer_count *counts;
    size_t ncounts;
    uint32_t *wmetric;
    uint8_t **snaps;                 /* pg_window_encode */
    size_t *lens, nwindows;
    uint64_t lsn, window_lsn, window_parts;
    int skip_windows;
    size_t rows;                     /* what it adds to pg_batch_rows, at most */
    uint64_t seq;                    /* the writer's sequence number */
    int64_t submit_mono_ns;
};

/* Copy u (the arrays it borrows) into a new unit, leaving out what
 * skip_rows / skip_windows drop (see pg_batch_merge).  0, or GA_ENOMEM /
 * GA_EINVAL (a bad window or name: nothing copied). */
int pg_batch_copy(const struct pg_writer_unit *u, int skip_rows, int skip_windows, struct pg_batch_unit **out);

/* Merge q into b and free q (0); on GA_ENOMEM b is unchanged but for spare
 * capacity and q is still the caller's. */
int pg_batch_take(struct pg_batch *b, struct pg_batch_unit *q, uint64_t seq, int64_t now_mono_ns);

void pg_batch_unit_free(struct pg_batch_unit *q);

/* Merge u into b (pg_batch_copy, then pg_batch_take).  skip_rows: drop u's aggs and late points (and its
 * counters when it is not a window set); skip_windows: drop its windows
 * and their counters (see pg_writer.h "LSNs").  On failure
 * (GA_ENOMEM, GA_EINVAL for a bad window or name) b is unchanged except for
 * spare capacity.  Windows are encoded here. */
int pg_batch_merge(struct pg_batch *b, const struct pg_writer_unit *u, int skip_rows, int skip_windows,
              uint64_t seq, int64_t now_mono_ns);

/* 1 if b carries the definition of metric id (a metric new to this
 * process: it has no rows in the database yet). */
int pg_batch_has_def(const struct pg_batch *b, uint32_t id);
/* The policy of the definition of metric id in b, or NULL when b has none. */
const struct ga_policy *pg_batch_def_policy(const struct pg_batch *b, uint32_t id);

/* 1 if b holds nothing to write (no rows, late, defs, counts, windows, and
 * no LSN to advance). */
int pg_batch_empty(const struct pg_batch *b);

/* Rows that count against flush_rows and queue_max_rows. */
size_t pg_batch_rows(const struct pg_batch *b);

/* Sort aggs by (granularity, partition, metric, ts, method): each bucket's
 * rows (methods ascending) are adjacent, and bucket rows come in each
 * partition's primary-key order, which keeps its index inserts sequential.  Invalidates the hash:
 * call only once the batch is closed for merging. */
void pg_batch_sort(struct pg_batch *b);

/* Append a rejected row / an error text (copied, truncated).  0 or
 * GA_ENOMEM; pg_batch_add_error returns its index in *ix. */
int pg_batch_add_reject(struct pg_batch *b, const struct pg_batch_reject *r);
int pg_batch_add_error(struct pg_batch *b, const char *text, uint32_t *ix);

/* What a window weighs against storage.window_txn_bytes besides its
 * records: the rows it writes (its window or tail row, its metric's point
 * count), whose cost grows with the tables rather than with the records.
 * At 10 M metrics such a window's rows took PostgreSQL about 40 us, as
 * long as 1.4 kB of records (docs/STORAGE.md "A window set over several
 * transactions"). */
#define PG_BATCH_WINDOW_ROW_BYTES 1024

/* The weight of b's windows: the bytes of their records (snapshots and
 * tails) plus PG_BATCH_WINDOW_ROW_BYTES each. */
size_t pg_batch_window_bytes(const struct pg_batch *b);

/* Move windows of src, with their metrics' counters, into dst (merged as
 * pg_batch_take merges: a snapshot replaces what dst holds for the metric, a
 * tail goes after it): at least one, then more while dst's window weight
 * (pg_batch_window_bytes) stays within max_bytes (all: every one).  Once src has none left, its
 * remaining counters and its window positions (part_lsn) go too, so that
 * the batch holding the last of a window set advances its partitions.
 * 0, or GA_ENOMEM with nothing moved. */
int pg_batch_move_windows(struct pg_batch *dst, struct pg_batch *src, size_t max_bytes, int all);

/* Empty b, keeping its memory. */
void pg_batch_reset(struct pg_batch *b);
/* Free everything; b is left zeroed. */
void pg_batch_free(struct pg_batch *b);

#endif
