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

#include "gpu/policy.h"

/* Aggregates partitions are one UTC day of bucket timestamps (ns). */
#define PGS_PARTITION_NS (86400LL * 1000000000LL)

/* The newest schema version this binary knows. */
int pgs_latest_version(void);

/* Bring the database on connection c up to pgs_latest_version().  c must be
 * idle, outside a transaction.  Returns the number of migrations applied
 * (0 when already current), or GA_EDB with the failing step and the server's
 * message in err[errlen] (nothing applied), or GA_EPROTO when the database
 * is at a version newer than this binary knows. */
int pgs_migrate(PGconn *c, char *err, size_t errlen);

/* Make sure the aggregates partitions of the n UTC days days[] (day =
 * ts_ns / PGS_PARTITION_NS, >= 0) exist, creating the missing ones (each in
 * the caller's transaction if one is open).  Returns the number created, or
 * GA_EDB (err). */
int pgs_ensure_partitions(PGconn *c, const int64_t *days, size_t n, char *err, size_t errlen);

/* Drop the aggregates partitions that lie entirely before every policy's
 * reach at now_ns (see gpuagg_retention() in docs/STORAGE.md).  Returns the
 * number of partitions dropped, or GA_EDB (err). */
int pgs_retention(PGconn *c, int64_t now_ns, char *err, size_t errlen);

/* The archive_policies row of p, as three text parameters: definition
 * (jsonb array of {granularity_ns, timespan_ns, points}) into def[deflen],
 * methods (a text[] literal) into methods[mlen].  Returns 0 or GA_ERANGE
 * when a buffer is too small. */
int pgs_policy_json(const struct ga_policy *p, char *def, size_t deflen, char *methods,
                    size_t mlen);

#endif
