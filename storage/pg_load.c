/* pg_load.c — read metrics, policies, checkpoint and windows at start (see
 * pg_load.h). */
#include "storage/pg_load.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/ga_partition.h"
#include "storage/pg_schema.h"
#include "storage/pg_util.h"
#include "storage/pg_window.h"

static const char policies_sql[] =
    "SELECT p.name, p.back_window, d.granularity_ns, d.timespan_ns, d.points\n"
    "FROM archive_policies p CROSS JOIN LATERAL jsonb_to_recordset(p.definition)\n"
    "    AS d(granularity_ns bigint, timespan_ns bigint, points bigint)\n"
    "ORDER BY p.name COLLATE \"C\", d.granularity_ns";
static const char methods_sql[] =
    "SELECT p.name, m FROM archive_policies p CROSS JOIN LATERAL unnest(p.methods) m\n"
    "ORDER BY p.name COLLATE \"C\"";
static const char metrics_sql[] = "SELECT id, name, policy, points FROM metrics ORDER BY id";
static const char checkpoint_sql[] = "SELECT committed_lsn, window_lsn FROM checkpoints WHERE id = 1";
/* each window with its tail records, in the order they were written, and
 * its own position: the newest it was saved with (0: not known) */
static const char windows_sql[] =
    "SELECT w.metric, greatest(w.saved_lsn, t.lsn), w.snapshot, coalesce(t.recs, ''::bytea)\n"
    "FROM metric_windows w LEFT JOIN (SELECT metric, string_agg(rec, ''::bytea ORDER BY id) AS recs,\n"
    "                                        max(lsn) AS lsn\n"
    "                                 FROM metric_window_tails GROUP BY metric) t USING (metric)\n"
    "ORDER BY w.metric";

/* Run a query returning rows (text format).  NULL on failure with err set. */
static PGresult *rows(PGconn *c, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK)
        return r;
    pg_util_result_error(err, errlen, c, r);
    PQclear(r);
    return NULL;
}

static struct ga_policy *find_policy(struct pg_load_state *s, const char *name)
{
    size_t lo = 0, hi = s->npolicies;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int d = strcmp(s->policies[mid].name, name);
        if (!d)
            return &s->policies[mid];
        if (d < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int cmp_method(const void *a, const void *b)
{
    return (int)*(const ga_method_t *)a - (int)*(const ga_method_t *)b;
}

static int load_policies(PGconn *c, struct pg_load_state *s, char *err, size_t errlen)
{
    PGresult *r = rows(c, policies_sql, err, errlen);
    int rc = GA_EDB;
    if (!r)
        return GA_EDB;
    int n = PQntuples(r);
    s->policies = calloc((size_t)(n ? n : 1), sizeof *s->policies);
    if (!s->policies) {
        rc = GA_ENOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const char *name = PQgetvalue(r, i, 0), *why = NULL;
        struct ga_policy *p = s->npolicies ? &s->policies[s->npolicies - 1] : NULL;
        if (!p || strcmp(p->name, name) != 0) {
            p = &s->policies[s->npolicies++];
            snprintf(p->name, sizeof p->name, "%s", name);
            p->back_window = strtoll(PQgetvalue(r, i, 1), NULL, 10);
        }
        if (ga_policy_add_def(p, strtoll(PQgetvalue(r, i, 2), NULL, 10),
                              strtoll(PQgetvalue(r, i, 3), NULL, 10),
                              strtoll(PQgetvalue(r, i, 4), NULL, 10), &why) < 0) {
            snprintf(err, errlen, "archive policy '%s': bad definition: %s", name, why);
            rc = GA_ECORRUPT;
            goto out;
        }
    }
    PQclear(r);
    if (!(r = rows(c, methods_sql, err, errlen)))
        return GA_EDB;
    for (int i = 0; i < PQntuples(r); i++) {
        struct ga_policy *p = find_policy(s, PQgetvalue(r, i, 0));
        int m = ga_method_parse(PQgetvalue(r, i, 1));
        if (!p || m < 0 || p->nmethods >= GA_POLICY_MAX_METHODS) {
            snprintf(err, errlen, "archive policy '%s': bad method '%s'", PQgetvalue(r, i, 0),
                     PQgetvalue(r, i, 1));
            rc = GA_ECORRUPT;
            goto out;
        }
        p->methods[p->nmethods++] = (ga_method_t)m;
    }
    for (size_t i = 0; i < s->npolicies; i++)
        qsort(s->policies[i].methods, (size_t)s->policies[i].nmethods, sizeof(ga_method_t),
              cmp_method);
    rc = 0;
out:
    PQclear(r);
    return rc;
}

static int load_metrics(PGconn *c, struct pg_load_state *s, char *err, size_t errlen)
{
    PGresult *r = rows(c, metrics_sql, err, errlen);
    int rc = 0;
    if (!r)
        return GA_EDB;
    int n = PQntuples(r);
    s->metrics = calloc((size_t)(n ? n : 1), sizeof *s->metrics);
    if (!s->metrics) {
        rc = GA_ENOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        struct pg_load_metric *m = &s->metrics[s->nmetrics];
        m->id = (uint32_t)strtoul(PQgetvalue(r, i, 0), NULL, 10);
        m->policy = find_policy(s, PQgetvalue(r, i, 2));
        m->points = strtoull(PQgetvalue(r, i, 3), NULL, 10);
        if (!m->policy) {
            snprintf(err, errlen, "metric '%s' has unknown policy '%s'", PQgetvalue(r, i, 1),
                     PQgetvalue(r, i, 2));
            rc = GA_ECORRUPT;
            goto out;
        }
        if (!(m->name = strdup(PQgetvalue(r, i, 1)))) {
            rc = GA_ENOMEM;
            goto out;
        }
        s->nmetrics++;
    }
out:
    PQclear(r);
    return rc;
}

static int load_checkpoint(PGconn *c, struct pg_load_state *s, char *err, size_t errlen)
{
    PGresult *r = rows(c, checkpoint_sql, err, errlen);
    if (!r)
        return GA_EDB;
    int rc = 0;
    if (PQntuples(r) != 1) {
        snprintf(err, errlen, "checkpoints has %d rows, expected 1", PQntuples(r));
        rc = GA_ECORRUPT;
    } else {
        s->committed_lsn = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
        s->window_lsn = strtoull(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
    if (rc || !(r = rows(c, "SELECT id, window_lsn FROM partitions", err, errlen)))
        return rc ? rc : GA_EDB;
    int seen = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int id = atoi(PQgetvalue(r, i, 0));
        if (id < 0 || id >= GA_PARTITIONS)
            continue;
        s->part_window_lsn[id] = strtoull(PQgetvalue(r, i, 1), NULL, 10);
        seen++;
    }
    PQclear(r);
    if (seen != GA_PARTITIONS) {
        snprintf(err, errlen, "partitions has %d of its %d rows", seen, GA_PARTITIONS);
        return GA_ECORRUPT;
    }
    /* replay from the lowest; checkpoints.window_lsn is kept equal to it */
    s->window_lsn = s->part_window_lsn[0];
    for (int p = 1; p < GA_PARTITIONS; p++)
        if (s->part_window_lsn[p] < s->window_lsn)
            s->window_lsn = s->part_window_lsn[p];
    return 0;
}

/* Stream metric_windows row by row (single-row mode) to cb. */
/* A bit per metric id below max + 1: set where the metric's partition is
 * in parts.  NULL (and *nbits 0) when out of memory. */
static uint8_t *metrics_of(const struct pg_load_state *s, uint64_t parts, size_t *nbits)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nmetrics; i++)
        if ((size_t)s->metrics[i].id + 1 > n)
            n = (size_t)s->metrics[i].id + 1;
    uint8_t *bits = calloc(n / 8 + 1, 1);
    *nbits = bits ? n : 0;
    for (size_t i = 0; bits && i < s->nmetrics; i++) {
        const struct pg_load_metric *m = &s->metrics[i];
        if (parts >> ga_partition_of(m->name, strlen(m->name)) & 1)
            bits[m->id / 8] |= (uint8_t)(1u << m->id % 8);
    }
    return bits;
}

static int load_windows(PGconn *c, struct pg_load_state *s, uint64_t parts, pg_load_window_cb cb,
                        void *ctx, char *err, size_t errlen)
{
    int rc = 0;
    PGresult *r;
    size_t nbits = 0;
    uint8_t *mine = NULL;
    if (parts && ~parts && !(mine = metrics_of(s, parts, &nbits))) {
        snprintf(err, errlen, "out of memory");
        return GA_ENOMEM;
    }
    if (!PQsendQueryParams(c, windows_sql, 0, NULL, NULL, NULL, NULL, 1) ||
        !PQsetSingleRowMode(c)) {
        pg_util_errcopy(err, errlen, PQerrorMessage(c));
        return GA_EDB;
    }
    while ((r = PQgetResult(c)) != NULL) {
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_SINGLE_TUPLE && rc == 0) {
            uint32_t metric = (uint32_t)pg_util_get_i32(PQgetvalue(r, 0, 0));
            uint64_t lsn = (uint64_t)pg_util_get_i64(PQgetvalue(r, 0, 1));
            if (mine && (metric >= nbits || !(mine[metric / 8] >> metric % 8 & 1))) {
                PQclear(r);            /* another worker's partition */
                continue;
            }
            struct ga_window w = { 0 };
            size_t slen = (size_t)PQgetlength(r, 0, 2), tlen = (size_t)PQgetlength(r, 0, 3);
            /* an empty snapshot: tail records whose snapshot was never stored */
            struct pg_load_stored stored = { .tail_bytes = tlen };
            rc = slen ? pg_window_decode((const uint8_t *)PQgetvalue(r, 0, 2), slen, &w) : 0;
            stored.snapshot_points = w.n;
            if (rc == 0 && tlen)
                rc = pg_window_tail_count((const uint8_t *)PQgetvalue(r, 0, 3), tlen, &stored.tails,
                                      &stored.tail_points);
            if (rc < 0) {
                free(w.ts);
                free(w.value);
            } else if (tlen) {
                rc = pg_window_apply_tail(&w, (const uint8_t *)PQgetvalue(r, 0, 3), tlen);
                if (rc < 0) {
                    free(w.ts);
                    free(w.value);
                }
            }
            if (rc < 0) {
                snprintf(err, errlen, "metric_windows: snapshot of metric %u does not decode: %s",
                         metric, rc == GA_ENOMEM ? "out of memory" : "corrupt or unknown version");
            } else {
                rc = cb(ctx, metric, lsn, &w, &stored);
                free(w.ts);
                free(w.value);
                if (rc < 0)
                    snprintf(err, errlen, "restoring the window of metric %u failed (%d)", metric, rc);
                else
                    s->nwindows++;
            }
        } else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK && rc == 0) {
            pg_util_result_error(err, errlen, c, r);
            rc = GA_EDB;
        }
        PQclear(r);
    }
    free(mine);
    return rc;
}

int pg_load(const char *conninfo, struct pg_load_state *out, pg_load_window_cb on_window, void *ctx,
             char *err, size_t errlen)
{
    return pg_load_load_parts(conninfo, 0, 0, out, on_window, ctx, err, errlen);
}

int pg_load_load_parts(const char *conninfo, uint64_t parts, int follower, struct pg_load_state *out,
                   pg_load_window_cb on_window, void *ctx, char *err, size_t errlen)
{
    struct pg_load_state s = { 0 };
    char why[512];
    int rc;
    PGconn *c = pg_util_connect(conninfo, "gpuaggd-load");
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return GA_ENOMEM;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        pg_util_errcopy(err, errlen, PQerrorMessage(c));
        rc = GA_EIO;
        goto fail;
    }
    if (!follower && ((rc = pg_util_instance_lock(c, 10000, err, errlen)) < 0 ||
                      (rc = pg_schema_migrate(c, err, errlen)) < 0))
        goto fail;
    if ((rc = pg_util_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err, errlen)) < 0 ||
        (rc = load_policies(c, &s, err, errlen)) < 0 ||
        (rc = load_metrics(c, &s, err, errlen)) < 0 ||
        (rc = load_checkpoint(c, &s, err, errlen)) < 0 ||
        (on_window && (rc = load_windows(c, &s, parts, on_window, ctx, err, errlen)) < 0) ||
        (rc = pg_util_exec(c, "COMMIT", err, errlen)) < 0)
        goto fail;
    if (!follower)
        pg_util_instance_unlock(c);
    PQfinish(c);
    *out = s;
    return 0;
fail:
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
        pg_util_exec(c, "ROLLBACK", why, sizeof why);
    PQfinish(c);
    pg_load_free(&s);
    memset(out, 0, sizeof *out);
    return rc;
}

void pg_load_free(struct pg_load_state *s)
{
    for (size_t i = 0; s->metrics && i < s->nmetrics; i++)
        free(s->metrics[i].name);
    free(s->metrics);
    free(s->policies);
    memset(s, 0, sizeof *s);
}
