/* pg_read.c — many series in one statement (see pg_read.h). */
#include "storage/pg_read.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "storage/pg_query.h"
#include "storage/pg_util.h"

/* The rows gpuagg_measures gives for (metric, method, granularity) with
 * $4 <= ts < $5, for each series asked (numbered from 1 in the order
 * given), without the view's cost: the view finds each series' newest
 * bucket (the timespan's end, docs/SEMANTICS.md "Timespan") by reading
 * every bucket of the series and sorting them; here a backward index scan
 * stops at the first, and only series whose archive has a timespan ask
 * for it.  A series is what the view would give: the buckets past the
 * newest bucket holding the method minus the timespan, of the method's
 * non-NULL values.  Rows come in no particular order (the caller sorts);
 * $6 bounds them (the caller's limit plus one, to tell "too many" from
 * "just enough"). */
static const char series_sql[] =
    "WITH q AS MATERIALIZED (\n"
    "    SELECT q.i::int4 AS i, m.id AS metric, m.open_block AS ob, mt.id AS method, d.span\n"
    "      FROM unnest($1::text[], $2::text[]) WITH ORDINALITY q(name, method, i)\n"
    "      JOIN metrics m ON m.name = q.name\n"
    "      JOIN archive_policies p ON p.name = m.policy\n"
    "      JOIN methods mt ON mt.name = q.method AND mt.name = ANY (p.methods)\n"
    "      CROSS JOIN LATERAL (SELECT (e->>'timespan_ns')::int8 AS span\n"
    "                            FROM jsonb_array_elements(p.definition) e\n"
    "                           WHERE (e->>'granularity_ns')::int8 = $3::int8) d\n"
    "), s AS MATERIALIZED (\n"
    "    SELECT q.*, CASE WHEN q.span <> 0 THEN greatest(\n"
    "        (SELECT b.ts FROM buckets b JOIN method_sets ms ON ms.id = b.mset\n"
    "          WHERE b.metric = q.metric AND b.granularity = $3::int8\n"
    "            AND q.method = ANY (ms.methods)\n"
    "          ORDER BY b.ts DESC LIMIT 1),\n"
    "        (SELECT max(u.ts) FROM open_blocks o\n"
    "                CROSS JOIN LATERAL unnest(o.metrics, o.msets, o.grans, o.tss)\n"
    "                           u(metric, mset, granularity, ts)\n"
    "                JOIN method_sets ms ON ms.id = u.mset\n"
    "          WHERE o.id = q.ob AND u.metric = q.metric AND u.granularity = $3::int8\n"
    "            AND q.method = ANY (ms.methods))) END AS last,\n"
    "        (SELECT array_agg(ms.id ORDER BY ms.id) FROM method_sets ms) AS msets,\n"
    "        (SELECT array_agg(array_position(ms.methods, q.method) ORDER BY ms.id)\n"
    "           FROM method_sets ms) AS pos\n"
    "      FROM q\n"
    ")\n"
    "SELECT s.i, r.ts, v.value\n"
    "  FROM s\n"
    "  CROSS JOIN LATERAL (\n"
    "    SELECT b.ts, b.mset, b.vals FROM buckets b\n"
    "     WHERE b.metric = s.metric AND b.granularity = $3::int8\n"
    "       AND b.ts >= $4::int8 AND b.ts < $5::int8\n"
    "    UNION ALL\n"
    "    SELECT u.ts, u.mset,\n"
    "           o.vals[u.off + 1 : coalesce(o.offs[(u.k + 1)::int], cardinality(o.vals))]\n"
    "      FROM open_blocks o\n"
    "      CROSS JOIN LATERAL unnest(o.metrics, o.msets, o.grans, o.tss, o.offs) WITH ORDINALITY\n"
    "                 u(metric, mset, granularity, ts, off, k)\n"
    "     WHERE o.id = s.ob AND u.metric = s.metric AND u.granularity = $3::int8\n"
    "       AND u.ts >= $4::int8 AND u.ts < $5::int8) r\n"
    "  CROSS JOIN LATERAL (SELECT r.vals[s.pos[array_position(s.msets, r.mset)]] AS value) v\n"
    " WHERE v.value IS NOT NULL AND (s.span = 0 OR r.ts > s.last - s.span)\n"
    " LIMIT $6::int8";

/* names as a text[] literal: {"a","b\"c"}.  malloc'ed, NULL when out of
 * memory. */
static char *text_array(size_t n, const char *const *v)
{
    size_t len = 3;
    for (size_t i = 0; i < n; i++)
        len += 3 + 2 * strlen(v[i]);
    char *s = malloc(len), *o = s;
    if (!s)
        return NULL;
    *o++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i)
            *o++ = ',';
        *o++ = '"';
        for (const char *c = v[i]; *c; c++) {
            if (*c == '"' || *c == '\\')
                *o++ = '\\';
            *o++ = *c;
        }
        *o++ = '"';
    }
    *o++ = '}';
    *o = '\0';
    return s;
}

struct point {
    int64_t ts;
    double val;
};

static int cmp_point(const void *a, const void *b)
{
    int64_t x = ((const struct point *)a)->ts, y = ((const struct point *)b)->ts;
    return (x > y) - (x < y);
}

/* Sort one series by time (its rows usually come sorted: then one pass).
 * 0 or GA_ENOMEM. */
static int sort_series(int64_t *ts, double *val, size_t n)
{
    size_t i = 1;
    while (i < n && ts[i - 1] <= ts[i])
        i++;
    if (i >= n)
        return 0;
    struct point *p = malloc(n * sizeof *p);
    if (!p)
        return GA_ENOMEM;
    for (i = 0; i < n; i++)
        p[i] = (struct point){ ts[i], val[i] };
    qsort(p, n, sizeof *p, cmp_point);
    for (i = 0; i < n; i++) {
        ts[i] = p[i].ts;
        val[i] = p[i].val;
    }
    free(p);
    return 0;
}

void pg_read_series_free(struct pg_read_series *s)
{
    if (!s)
        return;
    free(s->off);
    memset(s, 0, sizeof *s);
}

int pg_read_series_read(struct pg_query *q, size_t nseries, const char *const *metrics,
                    const char *const *methods, int64_t granularity_ns, int64_t start_ns,
                    int64_t stop_ns, size_t max_points, struct pg_read_series *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    char g[32], lo[32], hi[32], lim[32];
    char *ms = text_array(nseries, metrics), *ws = text_array(nseries, methods);
    PGresult *r = NULL;
    int rc = 0;
    if (!ms || !ws) {
        rc = ga_fail(GA_ENOMEM, err, errlen, "out of memory");
        goto out;
    }
    snprintf(g, sizeof g, "%" PRId64, granularity_ns);
    snprintf(lo, sizeof lo, "%" PRId64, start_ns);
    snprintf(hi, sizeof hi, "%" PRId64, stop_ns);
    snprintf(lim, sizeof lim, "%zu", max_points < SIZE_MAX / 2 ? max_points + 1 : max_points);
    const char *pv[] = { ms, ws, g, lo, hi, lim };
    if (!(r = pg_query_exec_prepared(q, "gpuagg_read_series", series_sql, 6, pv, &rc, err, errlen)))
        goto out;
    size_t nr = (size_t)PQntuples(r);
    if (nr > max_points) {
        rc = ga_fail(GA_ERANGE, err, errlen, "more than %zu points", max_points);
        goto out;
    }
    /* off, then ts, then val: one block */
    size_t offs = (nseries + 1) * sizeof *out->off;
    char *mem = malloc(offs + nr * (sizeof *out->ts + sizeof *out->val));
    if (!mem) {
        rc = ga_fail(GA_ENOMEM, err, errlen, "out of memory");
        goto out;
    }
    out->off = (size_t *)mem;
    out->ts = (int64_t *)(mem + offs);
    out->val = (double *)(out->ts + nr);
    out->nseries = nseries;
    out->n = nr;
    /* by series (a counting sort), then by time within each */
    for (size_t k = 0; k <= nseries; k++)
        out->off[k] = 0;
    for (size_t i = 0; i < nr; i++) {
        size_t k = (size_t)pg_util_get_i32(PQgetvalue(r, (int)i, 0));  /* from 1 */
        if (k < 1 || k > nseries) {
            rc = ga_fail(GA_EDB, err, errlen, "series %zu of %zu in the result", k, nseries);
            goto out;
        }
        out->off[k]++;
    }
    for (size_t k = 1; k <= nseries; k++)
        out->off[k] += out->off[k - 1];
    for (size_t i = 0; i < nr; i++) {
        size_t k = (size_t)pg_util_get_i32(PQgetvalue(r, (int)i, 0)) - 1;
        size_t at = out->off[k]++;
        out->ts[at] = pg_util_get_i64(PQgetvalue(r, (int)i, 1));
        out->val[at] = pg_util_get_f64(PQgetvalue(r, (int)i, 2));
    }
    for (size_t k = nseries; k > 0; k--)
        out->off[k] = out->off[k - 1];
    out->off[0] = 0;
    for (size_t k = 0; k < nseries; k++)
        if (sort_series(out->ts + out->off[k], out->val + out->off[k],
                        out->off[k + 1] - out->off[k]) < 0) {
            rc = ga_fail(GA_ENOMEM, err, errlen, "out of memory");
            goto out;
        }
out:
    PQclear(r);
    free(ms);
    free(ws);
    return rc;
}
