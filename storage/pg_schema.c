/* pg_schema.c — applying the embedded migrations, and schema helpers (see
 * pg_schema.h, docs/STORAGE.md).  The migrations themselves are the files
 * storage/sql/NNNN_*.sql, built into pg_schema_migrations[]; one, once released,
 * is never edited: a change is a new file. */
#include "storage/pg_schema.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/ga_partition.h"
#include "storage/pg_util.h"

/* pg_advisory_xact_lock key: "gpuagg" in ASCII (the migrations' SQL takes
 * this key + 1 around partitions). */
#define PG_SCHEMA_LOCK_KEY "106240213050983"

/* Migrations 5 and 15 create one row and one table per partition of the
 * metric space: 64, written out in their SQL. */
_Static_assert(GA_PARTITIONS == 64, "storage/sql/0005 and 0015 create 64 partitions");

int pg_schema_step_count(int after)
{
    int n = 0;
    for (int i = 0; i < pg_schema_nmigrations; i++)
        n += pg_schema_migrations[i].version > after;
    return n;
}

int pg_schema_latest_version(void)
{
    return pg_schema_nmigrations ? pg_schema_migrations[pg_schema_nmigrations - 1].version : 0;
}

/* Current version inside the open transaction: 0 for a fresh database. */
static int current_version(PGconn *c, int *version, char *err, size_t errlen)
{
    PGresult *r = PQexec(c, "SELECT to_regclass('gpuagg_migrations') IS NOT NULL");
    int rc = 0;
    *version = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        goto dberr;
    if (strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
        PQclear(r);
        r = PQexec(c, "CREATE TABLE gpuagg_migrations (\n"
                      "    version integer PRIMARY KEY,\n"
                      "    name    text NOT NULL,\n"
                      "    applied timestamptz NOT NULL DEFAULT now())");
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            goto dberr;
        goto out;
    }
    PQclear(r);
    r = PQexec(c, "SELECT coalesce(max(version), 0) FROM gpuagg_migrations");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        goto dberr;
    *version = atoi(PQgetvalue(r, 0, 0));
    goto out;
dberr:
    pg_util_result_error(err, errlen, c, r);
    rc = GA_EDB;
out:
    PQclear(r);
    return rc;
}

static int record_step(PGconn *c, const struct pg_schema_migration *s, char *err, size_t errlen)
{
    char v[16];
    snprintf(v, sizeof v, "%d", s->version);
    const char *params[] = { v, s->name };
    PGresult *r = PQexecParams(c, "INSERT INTO gpuagg_migrations (version, name) VALUES ($1, $2)",
                               2, NULL, params, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        pg_util_result_error(err, errlen, c, r);
        rc = GA_EDB;
    }
    PQclear(r);
    return rc;
}

int pg_schema_migrate(PGconn *c, char *err, size_t errlen)
{
    return pg_schema_migrate_to(c, pg_schema_latest_version(), err, errlen);
}

int pg_schema_migrate_to(PGconn *c, int target, char *err, size_t errlen)
{
    char why[512] = "";
    int version = 0, applied = 0, rc;
    if ((rc = pg_util_exec(c, "BEGIN", why, sizeof why)) < 0 ||
        (rc = pg_util_exec(c, "SELECT pg_advisory_xact_lock(" PG_SCHEMA_LOCK_KEY ")", why, sizeof why)) < 0 ||
        (rc = current_version(c, &version, why, sizeof why)) < 0) {
        snprintf(err, errlen, "migrations: %s", why);
        goto fail;
    }
    if (version > pg_schema_latest_version()) {
        snprintf(err, errlen, "database schema is version %d, newer than this gpuaggd knows (%d)",
                 version, pg_schema_latest_version());
        rc = GA_EPROTO;
        goto fail;
    }
    for (int i = 0; i < pg_schema_nmigrations; i++) {
        const struct pg_schema_migration *s = &pg_schema_migrations[i];
        if (s->version <= version || s->version > target)
            continue;
        if ((rc = pg_util_exec(c, s->sql, why, sizeof why)) < 0 ||
            (rc = record_step(c, s, why, sizeof why)) < 0) {
            snprintf(err, errlen, "migration %d (%s, %s): %s", s->version, s->name, s->file, why);
            goto fail;
        }
        applied++;
    }
    if ((rc = pg_util_exec(c, "COMMIT", why, sizeof why)) < 0) {
        snprintf(err, errlen, "migrations: commit: %s", why);
        goto fail;
    }
    if (applied)
        ga_log(GA_LOG_INFO, "storage_migrated", "from=%d to=%d", version,
               target < pg_schema_latest_version() ? target : pg_schema_latest_version());
    return applied;
fail:
    if (PQtransactionStatus(c) != PQTRANS_IDLE)
        pg_util_exec(c, "ROLLBACK", why, sizeof why);
    return rc;
}

int64_t pg_schema_partition_width(int64_t granularity_ns)
{
    int64_t days = granularity_ns / 337500000000LL;
    return PG_SCHEMA_DAY_NS * (days < 1 ? 1 : days > 32 ? 32 : days);
}

/* The count of partitions a "SELECT count(*) FILTER (WHERE
 * gpuagg_ensure_partition(…))" created; clears r.  Or GA_EDB (err). */
static int created(PGconn *c, PGresult *r, char *err, size_t errlen)
{
    int rc;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        rc = atoi(PQgetvalue(r, 0, 0));
    } else {
        pg_util_result_error(err, errlen, c, r);
        rc = GA_EDB;
    }
    PQclear(r);
    return rc;
}

int pg_schema_ensure_partitions(PGconn *c, const struct pg_schema_part *parts, size_t n, char *err,
                          size_t errlen)
{
    struct pg_util_buf b[2] = { { 0 } };
    pg_util_array_begin(&b[0], PG_UTIL_INT8OID, n);
    pg_util_array_begin(&b[1], PG_UTIL_INT8OID, n);
    for (size_t i = 0; i < n; i++) {
        pg_util_array_i64(&b[0], parts[i].granularity_ns);
        pg_util_array_i64(&b[1], parts[i].period);
    }
    if (b[0].oom || b[1].oom) {
        pg_util_buf_free(&b[0]);
        pg_util_buf_free(&b[1]);
        snprintf(err, errlen, "out of memory");
        return GA_ENOMEM;
    }
    const char *vals[] = { (const char *)b[0].p, (const char *)b[1].p };
    int lens[] = { (int)b[0].len, (int)b[1].len }, fmts[] = { 1, 1 };
    int rc = created(c,
                     PQexecParams(c,
                                  "SELECT count(*) FILTER (WHERE gpuagg_ensure_partition(g, p)) "
                                  "FROM unnest($1::int8[], $2::int8[]) u(g, p)",
                                  2, NULL, vals, lens, fmts, 0),
                     err, errlen);
    pg_util_buf_free(&b[0]);
    pg_util_buf_free(&b[1]);
    return rc;
}

int pg_schema_ensure_ahead(PGconn *c, int64_t now_ns, int64_t ahead_ns, char *err, size_t errlen)
{
    char now[32], end[32];
    snprintf(now, sizeof now, "%" PRId64, now_ns);
    snprintf(end, sizeof end, "%" PRId64, now_ns + ahead_ns);
    const char *vals[] = { now, end };
    return created(c,
                   PQexecParams(c,
                                "SELECT count(*) FILTER (WHERE gpuagg_ensure_partition(g, p))\n"
                                "  FROM (SELECT DISTINCT granularity AS g FROM bucket_partitions) gs,\n"
                                "  LATERAL generate_series($1::int8 / gpuagg_partition_width(g),\n"
                                "                          $2::int8 / gpuagg_partition_width(g)) p",
                                2, NULL, vals, NULL, NULL, 0),
                   err, errlen);
}

int pg_schema_retention(PGconn *c, int64_t now_ns, char *err, size_t errlen)
{
    char now[32];
    snprintf(now, sizeof now, "%" PRId64, now_ns);
    const char *vals[] = { now };
    PGresult *r = PQexecParams(c, "SELECT gpuagg_retention($1::bigint)", 1, NULL, vals, NULL,
                               NULL, 0);
    int rc;
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        rc = PQntuples(r);
        for (int i = 0; i < rc; i++)
            ga_log(GA_LOG_INFO, "storage_retention_drop", "partition=%s", PQgetvalue(r, i, 0));
    } else {
        pg_util_result_error(err, errlen, c, r);
        rc = GA_EDB;
    }
    PQclear(r);
    return rc;
}

int pg_schema_policy_json(const struct ga_policy *p, char *def, size_t deflen, char *methods,
                    size_t mlen)
{
    size_t o = 0;
    char nm[GA_METHOD_NAME_MAX];
    o += (size_t)snprintf(def, deflen, "[");
    for (int i = 0; i < p->ndefs && o < deflen; i++)
        o += (size_t)snprintf(def + o, deflen - o,
                              "%s{\"granularity_ns\": %" PRId64 ", \"timespan_ns\": %" PRId64
                              ", \"points\": %" PRId64 "}",
                              i ? ", " : "", p->defs[i].granularity_ns, p->defs[i].timespan_ns,
                              p->defs[i].points);
    if (o < deflen)
        o += (size_t)snprintf(def + o, deflen - o, "]");
    if (o >= deflen)
        return GA_ERANGE;
    o = (size_t)snprintf(methods, mlen, "{");
    for (int i = 0; i < p->nmethods && o < mlen; i++)
        o += (size_t)snprintf(methods + o, mlen - o, "%s\"%s\"", i ? "," : "",
                              ga_method_name(p->methods[i], nm));
    if (o < mlen)
        o += (size_t)snprintf(methods + o, mlen - o, "}");
    return o >= mlen ? GA_ERANGE : 0;
}
