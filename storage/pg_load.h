/* pg_load.h — what the daemon reads back from PostgreSQL at start.
 *
 * Order at start: pg_load (migrates the schema, then reads the metrics
 * with their policies, the checkpoint, and streams the window snapshots to
 * a callback), restore the registry and the engine from it, start the
 * writer with the checkpoint (pg_writer_opts.committed_lsn / window_lsn), then
 * replay the journal from window_lsn (pg_writer.h "LSNs").
 *
 * Everything is read in one REPEATABLE READ transaction, so the metrics,
 * checkpoint and windows are one consistent snapshot. */
#ifndef GA_PG_LOAD_H
#define GA_PG_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "proto/agg.h"
#include "proto/policy.h"
#include "proto/ga_partition.h"

struct pg_load_metric {
    uint32_t id;
    char *name;                       /* owned by the state */
    const struct ga_policy *policy;   /* points into pg_load_state.policies */
    uint64_t points;                  /* metrics.points */
};

struct pg_load_state {
    uint64_t committed_lsn;           /* replayed units at or below are in the database */
    uint64_t window_lsn;              /* replay the journal from here: the lowest of */
    uint64_t part_window_lsn[GA_PARTITIONS];  /* each partition's window checkpoint: its
                                                 metrics' records below are in their windows */
    struct ga_policy *policies;       /* as stored in archive_policies */
    size_t npolicies;
    struct pg_load_metric *metrics;       /* ascending id */
    size_t nmetrics;
    size_t nwindows;                  /* windows passed to the callback */
};

/* What is stored for a window: its snapshot's points, its tail records
 * and their points (before the truncations they carry), their bytes. */
struct pg_load_stored {
    size_t snapshot_points;
    size_t tails, tail_points, tail_bytes;
};

/* Called once per stored window (its snapshot with its tail records
 * applied, pg_window.h); w and st are valid during the call only (copy
 * what you keep; ga_engine_window_put copies).  lsn is the window's own
 * position, the newest window set it was saved with: every journal record
 * below it is in the window (0: not known; its partition's window_lsn
 * counts).  Return 0 to go on, or a negative code to stop the load
 * (returned by pg_load). */
typedef int (*pg_load_window_cb)(void *ctx, uint32_t metric, uint64_t lsn, const struct ga_window *w,
                             const struct pg_load_stored *st);

/* Connect to conninfo, migrate the schema (pg_schema.h), read everything
 * into *out (free with pg_load_free; zeroed on failure) and call on_window for
 * each window snapshot (may be NULL to skip them).  Blocking; call from a
 * worker thread or before the loop starts.  Returns 0; GA_EIO (cannot
 * connect), GA_EDB, GA_EPROTO (schema newer than this binary),
 * GA_ECORRUPT (a snapshot or policy that does not decode; err names the
 * metric or policy), GA_ENOMEM, or the callback's code; err[errlen] says
 * why. */
int pg_load(const char *conninfo, struct pg_load_state *out, pg_load_window_cb on_window, void *ctx,
             char *err, size_t errlen);

/* pg_load, with on_window called only for the windows of the metrics of
 * the partitions in parts (bit p; 0: all), the others not decoded; a
 * follower (an engine worker loading after the first one of its daemon,
 * whose writer holds the instance lock and has migrated the schema) takes
 * no instance lock and does not migrate. */
int pg_load_load_parts(const char *conninfo, uint64_t parts, int follower, struct pg_load_state *out,
                   pg_load_window_cb on_window, void *ctx, char *err, size_t errlen);

void pg_load_free(struct pg_load_state *s);

#endif
