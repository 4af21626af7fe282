/* pg_query.c — read queries on a small connection pool (see pg_query.h). */
#include "storage/pg_query.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "storage/pg_util.h"

struct pg_query {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *conninfo;
    int n;
    PGconn **conns;                   /* NULL: not connected */
    int *busy;
    /* the statements prepared on each connection (names, static strings) */
    const char *(*prepared)[PG_QUERY_MAX_PREPARED];
};

static const char metrics_sql[] =
    "SELECT id, name, policy, points FROM metrics ORDER BY name COLLATE \"C\"";

static const char series_sql[] =
    "SELECT m.id,\n"
    "       m.policy,\n"
    "       EXISTS (SELECT 1 FROM jsonb_array_elements(p.definition) d\n"
    "               WHERE (d->>'granularity_ns')::bigint = $2::bigint),\n"
    "       $3::text = ANY (p.methods),\n"
    "       (SELECT string_agg(d->>'granularity_ns', ',' ORDER BY (d->>'granularity_ns')::bigint)\n"
    "          FROM jsonb_array_elements(p.definition) d)\n"
    "FROM metrics m JOIN archive_policies p ON p.name = m.policy WHERE m.name = $1";

/* The series as the gpuagg_measures view keeps it: the buckets past the
 * newest one minus the archive's timespan (docs/SEMANTICS.md "Timespan"),
 * so that the CLI and SQL readers see the same rows. */
static const char points_sql[] =
    "SELECT ts_ns, value FROM gpuagg_measures\n"
    "WHERE metric = $1 AND granularity_ns = $2::int8 AND method = $3\n"
    "  AND ts_ns >= $4::int8 AND ts_ns < $5::int8\n"
    "ORDER BY ts_ns";

int pg_query_open(struct pg_query **out, const char *conninfo, int pool_size)
{
    if (!conninfo || pool_size < 1)
        return GA_EINVAL;
    struct pg_query *q = calloc(1, sizeof *q);
    if (!q)
        return GA_ENOMEM;
    q->n = pool_size;
    q->conninfo = strdup(conninfo);
    q->conns = calloc((size_t)pool_size, sizeof *q->conns);
    q->busy = calloc((size_t)pool_size, sizeof *q->busy);
    q->prepared = calloc((size_t)pool_size, sizeof *q->prepared);
    if (!q->conninfo || !q->conns || !q->busy || !q->prepared) {
        free(q->conninfo);
        free(q->conns);
        free(q->busy);
        free(q->prepared);
        free(q);
        return GA_ENOMEM;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    *out = q;
    return 0;
}

void pg_query_close(struct pg_query *q)
{
    if (!q)
        return;
    for (int i = 0; i < q->n; i++)
        if (q->conns[i])
            PQfinish(q->conns[i]);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->conninfo);
    free(q->conns);
    free(q->busy);
    free(q->prepared);
    free(q);
}

/* Take a free slot (waiting if all are busy) and make sure it is
 * connected.  Returns the slot, or GA_EIO with err set (slot released). */
static int acquire(struct pg_query *q, char *err, size_t errlen)
{
    int slot = -1;
    pthread_mutex_lock(&q->mu);
    while (slot < 0) {
        for (int i = 0; i < q->n && slot < 0; i++)
            if (!q->busy[i])
                slot = i;
        if (slot < 0)
            pthread_cond_wait(&q->cv, &q->mu);
    }
    q->busy[slot] = 1;
    pthread_mutex_unlock(&q->mu);
    PGconn *c = q->conns[slot];
    if (c && PQstatus(c) != CONNECTION_OK) {
        PQfinish(c);
        c = NULL;
    }
    if (!c) {
        memset(q->prepared[slot], 0, sizeof q->prepared[slot]);
        c = pg_util_connect(q->conninfo, "gpuaggd-query");
        if (!c || PQstatus(c) != CONNECTION_OK) {
            pg_util_errcopy(err, errlen, c ? PQerrorMessage(c) : "out of memory");
            if (c)
                PQfinish(c);
            q->conns[slot] = NULL;
            pthread_mutex_lock(&q->mu);
            q->busy[slot] = 0;
            pthread_cond_signal(&q->cv);
            pthread_mutex_unlock(&q->mu);
            return GA_EIO;
        }
    }
    q->conns[slot] = c;
    return slot;
}

static void release(struct pg_query *q, int slot)
{
    pthread_mutex_lock(&q->mu);
    q->busy[slot] = 0;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Prepare sql as name on the slot's connection unless it was.  1 when
 * prepared (now or before), 0 when it cannot be kept (no room: run it
 * unnamed), or -1 with r set to the failed result. */
static int prepare(struct pg_query *q, int slot, const char *name, const char *sql, int nparams,
                   PGresult **r)
{
    const char **names = q->prepared[slot];
    int i = 0;
    for (; i < PG_QUERY_MAX_PREPARED && names[i]; i++)
        if (names[i] == name || !strcmp(names[i], name))
            return 1;
    if (i == PG_QUERY_MAX_PREPARED)
        return 0;
    PGresult *p = PQprepare(q->conns[slot], name, sql, nparams, NULL);
    if (PQresultStatus(p) != PGRES_COMMAND_OK) {
        *r = p;
        return -1;
    }
    PQclear(p);
    names[i] = name;
    return 1;
}

/* Run a query returning rows (prepared as name unless name is NULL),
 * retrying once on a fresh connection when the old one turns out to be
 * broken.  Returns the result (caller clears) or NULL with *rc and err
 * set. */
static PGresult *run_named(struct pg_query *q, const char *name, const char *sql, int nparams,
                           const char *const *vals, int binary, int *rc, char *err,
                           size_t errlen)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int slot = acquire(q, err, errlen);
        if (slot < 0) {
            *rc = slot;
            return NULL;
        }
        PGconn *c = q->conns[slot];
        PGresult *r = NULL;
        int named = name ? prepare(q, slot, name, sql, nparams, &r) : 0;
        if (named > 0)
            r = PQexecPrepared(c, name, nparams, vals, NULL, NULL, binary);
        else if (named == 0)
            r = PQexecParams(c, sql, nparams, NULL, vals, NULL, NULL, binary);
        if (PQresultStatus(r) == PGRES_TUPLES_OK) {
            release(q, slot);
            return r;
        }
        pg_util_result_error(err, errlen, c, r);
        PQclear(r);
        int broken = PQstatus(c) != CONNECTION_OK;
        release(q, slot);
        *rc = broken ? GA_EIO : GA_EDB;
        if (!broken)
            break;
    }
    return NULL;
}

static PGresult *run(struct pg_query *q, const char *sql, int nparams, const char *const *vals,
                     int binary, int *rc, char *err, size_t errlen)
{
    return run_named(q, NULL, sql, nparams, vals, binary, rc, err, errlen);
}

PGresult *pg_query_exec(struct pg_query *q, const char *sql, int nparams, const char *const *vals, int *rc,
                   char *err, size_t errlen)
{
    return run(q, sql, nparams, vals, 0, rc, err, errlen);
}

PGresult *pg_query_exec_prepared(struct pg_query *q, const char *name, const char *sql, int nparams,
                            const char *const *vals, int *rc, char *err, size_t errlen)
{
    return run_named(q, name, sql, nparams, vals, 1, rc, err, errlen);
}

int pg_query_metrics(struct pg_query *q, struct pg_query_metric **out, size_t *n, char *err, size_t errlen)
{
    int rc = 0;
    *out = NULL;
    *n = 0;
    PGresult *r = run(q, metrics_sql, 0, NULL, 0, &rc, err, errlen);
    if (!r)
        return rc;
    int nr = PQntuples(r);
    struct pg_query_metric *m = calloc((size_t)(nr ? nr : 1), sizeof *m);
    if (!m) {
        PQclear(r);
        snprintf(err, errlen, "out of memory");
        return GA_ENOMEM;
    }
    for (int i = 0; i < nr; i++) {
        m[i].id = (uint32_t)strtoul(PQgetvalue(r, i, 0), NULL, 10);
        snprintf(m[i].policy, sizeof m[i].policy, "%s", PQgetvalue(r, i, 2));
        m[i].points = strtoull(PQgetvalue(r, i, 3), NULL, 10);
        if (!(m[i].name = strdup(PQgetvalue(r, i, 1)))) {
            pg_query_metrics_free(m, (size_t)i);
            PQclear(r);
            snprintf(err, errlen, "out of memory");
            return GA_ENOMEM;
        }
    }
    PQclear(r);
    *out = m;
    *n = (size_t)nr;
    return 0;
}

void pg_query_metrics_free(struct pg_query_metric *m, size_t n)
{
    for (size_t i = 0; m && i < n; i++)
        free(m[i].name);
    free(m);
}

/* "300s" for whole seconds, else "1500ns". */
static void fmt_ns(char *buf, size_t n, int64_t ns)
{
    if (ns % 1000000000 == 0)
        snprintf(buf, n, "%" PRId64 "s", ns / 1000000000);
    else
        snprintf(buf, n, "%" PRId64 "ns", ns);
}

/* ",300000000000,3600000000000" → "300s, 1h" style list in seconds. */
static void fmt_grans(char *buf, size_t n, const char *csv)
{
    size_t o = 0;
    buf[0] = '\0';
    while (*csv && o + 1 < n) {
        char one[32];
        fmt_ns(one, sizeof one, strtoll(csv, NULL, 10));
        o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "", one);
        csv = strchr(csv, ',');
        if (!csv)
            break;
        csv++;
    }
}

int pg_query(struct pg_query *q, const char *metric, int64_t granularity_ns, const char *method,
              int64_t start_ns, int64_t stop_ns, struct pg_query_point **out, size_t *n, char *err,
              size_t errlen)
{
    char g[32], m[GA_METHOD_NAME_MAX], lo[32], hi[32], gs[32], list[256];
    int rc = 0;
    *out = NULL;
    *n = 0;
    int mid = ga_method_parse(method);
    if (mid < 0) {
        snprintf(err, errlen, "unknown method '%s'", method);
        return GA_EINVAL;
    }
    if (start_ns > stop_ns) {
        snprintf(err, errlen, "start (%" PRId64 ") is after stop (%" PRId64 ")", start_ns, stop_ns);
        return GA_EINVAL;
    }
    snprintf(g, sizeof g, "%" PRId64, granularity_ns);
    const char *sv[] = { metric, g, method };
    PGresult *r = run(q, series_sql, 3, sv, 0, &rc, err, errlen);
    if (!r)
        return rc;
    if (PQntuples(r) != 1) {
        snprintf(err, errlen, "unknown metric '%s'", metric);
        rc = GA_ENOENT;
        goto out;
    }
    fmt_ns(gs, sizeof gs, granularity_ns);
    fmt_grans(list, sizeof list, PQgetvalue(r, 0, 4));
    if (strcmp(PQgetvalue(r, 0, 2), "t") != 0) {
        snprintf(err, errlen, "granularity %s is not in policy '%s' of metric '%s' (it has %s)", gs,
                 PQgetvalue(r, 0, 1), metric, list);
        rc = GA_EINVAL;
        goto out;
    }
    if (strcmp(PQgetvalue(r, 0, 3), "t") != 0) {
        snprintf(err, errlen, "method '%s' is not in policy '%s' of metric '%s'", method,
                 PQgetvalue(r, 0, 1), metric);
        rc = GA_EINVAL;
        goto out;
    }
    PQclear(r);
    ga_method_name((ga_method_t)mid, m);
    snprintf(lo, sizeof lo, "%" PRId64, start_ns);
    snprintf(hi, sizeof hi, "%" PRId64, stop_ns);
    const char *pv[] = { metric, g, m, lo, hi };
    if (!(r = run(q, points_sql, 5, pv, 1, &rc, err, errlen)))
        return rc;
    size_t nr = (size_t)PQntuples(r);
    if (nr) {
        struct pg_query_point *p = malloc(nr * sizeof *p);
        if (!p) {
            snprintf(err, errlen, "out of memory");
            rc = GA_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < nr; i++) {
            p[i].ts = pg_util_get_i64(PQgetvalue(r, (int)i, 0));
            p[i].value = pg_util_get_f64(PQgetvalue(r, (int)i, 1));
        }
        *out = p;
        *n = nr;
    }
out:
    PQclear(r);
    return rc;
}
