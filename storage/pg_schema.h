/* pg_schema.h — gpuagg's PostgreSQL schema and its versioned migrations.
 *
 * The SQL of every migration is compiled into the binary (pg_schema.c);
 * docs/STORAGE.md describes the resulting schema.  Applied migrations are
 * recorded in gpuagg_migrations(version, name, applied).  pgs_migrate runs
 * in one transaction under a transaction-level advisory lock, so two
 * daemons starting together cannot both apply a step, and a failure leaves
 * the schema as it was. */
#ifndef GA_PG_SCHEMA_H
#define GA_PG_SCHEMA_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/policy.h"
#include "proto/uuid.h"

#define PGS_DAY_NS (86400LL * 1000000000LL)

/* The buckets table is partitioned by (granularity, ts): each archive's
 * rows in ranges of pgs_partition_width(granularity) ns, aligned to the
 * epoch — granularity × 256 in whole days, at least 1 and at most 32 (1 day
 * for granularities below 5 min 37.5 s, 10 days for 1 h, 32 for 1 day and
 * more), so that retention can drop an archive's rows soon after its own
 * timespan.  Partition `period` p of granularity g holds ts in
 * [p * width, (p + 1) * width). */
int64_t pgs_partition_width(int64_t granularity_ns);

struct pgs_part {
    int64_t granularity_ns;
    int64_t period;                   /* ts / pgs_partition_width(granularity_ns) */
};

/* The newest schema version this binary knows. */
int pgs_latest_version(void);
/* How many migrations this binary knows above version `after` (the
 * versions need not be contiguous). */
int pgs_step_count(int after);

/* Bring the database on connection c up to pgs_latest_version().  c must be
 * idle, outside a transaction.  Returns the number of migrations applied
 * (0 when already current), or GA_EDB with the failing step and the server's
 * message in err[errlen] (nothing applied), or GA_EPROTO when the database
 * is at a version newer than this binary knows. */
int pgs_migrate(PGconn *c, char *err, size_t errlen);
/* The same, stopping at version target (tests of a migration on a database
 * an older binary left). */
int pgs_migrate_to(PGconn *c, int target, char *err, size_t errlen);

/* Make sure the buckets partitions parts[0..n) exist (period >= 0),
 * creating the missing ones (each in the caller's transaction if one is
 * open).  Returns the number created, or GA_EDB (err). */
int pgs_ensure_partitions(PGconn *c, const struct pgs_part *parts, size_t n, char *err,
                          size_t errlen);

/* For every granularity that has a partition, create those covering
 * [now_ns, now_ns + ahead_ns).  Returns the number created, or GA_EDB. */
int pgs_ensure_ahead(PGconn *c, int64_t now_ns, int64_t ahead_ns, char *err, size_t errlen);

/* Drop the buckets partitions that lie entirely before their archive's
 * reach at now_ns: max(timespan + granularity) over the definitions of that
 * granularity in the policies in use, none of them unbounded (see
 * gpuagg_retention() in docs/STORAGE.md).  Returns the number of partitions
 * dropped, or GA_EDB (err). */
int pgs_retention(PGconn *c, int64_t now_ns, char *err, size_t errlen);

/* The archive_policies row of p, as three text parameters: definition
 * (jsonb array of {granularity_ns, timespan_ns, points}) into def[deflen],
 * methods (a text[] literal) into methods[mlen].  Returns 0 or GA_ERANGE
 * when a buffer is too small. */
int pgs_policy_json(const struct ga_policy *p, char *def, size_t deflen, char *methods,
                    size_t mlen);

#endif
