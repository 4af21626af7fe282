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

/* The series a statement reads: for each series asked (numbered from 1 in
 * the order given; $1 names, $2 methods, $3 the granularity) its metric,
 * the archive's timespan, the method sets holding the method, and what
 * gpuagg_measures needs to truncate it: the newest bucket holding the
 * method (the timespan's end, docs/SEMANTICS.md "Timespan"), found by one
 * backward index descent over the rows of those method sets (a join to
 * method_sets there is planned as a read and sort of the whole series),
 * and the newest such entry of its open block.  m1 and p1: the method set
 * of that newest bucket and the method's place in it, so that a row of
 * that set (nearly all of them) is read without the array searches of
 * the general case (msets, pos: every method set and the method's place
 * in each). */
#define SERIES_CTE                                                                                 \
    "WITH q AS MATERIALIZED (\n"                                                                   \
    "    SELECT q.i::int4 AS i, m.id AS metric, m.open_block AS ob, mt.id AS method, d.span,\n"    \
    "           (SELECT array_agg(ms.id) FROM method_sets ms WHERE mt.id = ANY (ms.methods))\n"    \
    "             AS holds\n"                                                                      \
    "      FROM unnest($1::text[], $2::text[]) WITH ORDINALITY q(name, method, i)\n"               \
    "      JOIN metrics m ON m.name = q.name\n"                                                    \
    "      JOIN archive_policies p ON p.name = m.policy\n"                                         \
    "      JOIN methods mt ON mt.name = q.method AND mt.name = ANY (p.methods)\n"                  \
    "      CROSS JOIN LATERAL (SELECT (e->>'timespan_ns')::int8 AS span\n"                         \
    "                            FROM jsonb_array_elements(p.definition) e\n"                      \
    "                           WHERE (e->>'granularity_ns')::int8 = $3::int8) d\n"                \
    "), s AS MATERIALIZED (\n"                                                                     \
    "    SELECT q.i, q.metric, q.ob, q.span, nb.mset AS m1,\n"                                     \
    "        (SELECT array_position(ms.methods, q.method) FROM method_sets ms\n"                   \
    "          WHERE ms.id = nb.mset) AS p1,\n"                                                    \
    "        CASE WHEN q.span <> 0 THEN greatest(nb.ts,\n"                                         \
    "        (SELECT max(u.ts) FROM open_blocks o\n"                                               \
    "                CROSS JOIN LATERAL unnest(o.metrics, o.msets, o.grans, o.tss)\n"              \
    "                           u(metric, mset, granularity, ts)\n"                                \
    "          WHERE o.id = q.ob AND u.metric = q.metric AND u.granularity = $3::int8\n"           \
    "            AND u.mset = ANY (q.holds))) END AS last,\n"                                      \
    "        (SELECT array_agg(ms.id ORDER BY ms.id) FROM method_sets ms) AS msets,\n"             \
    "        (SELECT array_agg(array_position(ms.methods, q.method) ORDER BY ms.id)\n"             \
    "           FROM method_sets ms) AS pos\n"                                                     \
    "      FROM q\n"                                                                               \
    "      LEFT JOIN LATERAL (SELECT b.ts, b.mset FROM buckets b\n"                                \
    "                          WHERE b.metric = q.metric AND b.granularity = $3::int8\n"           \
    "                            AND b.mset = ANY (q.holds)\n"                                     \
    "                          ORDER BY b.ts DESC LIMIT 1) nb ON true\n"                           \
    ")\n"

/* The buckets of series s with $4 <= ts < $5 (ts, value): its rows of
 * buckets and its entries in its block past the newest bucket holding the
 * method minus the timespan, with the method's value, NULL where the
 * bucket has none (gpuagg_measures leaves those out: the reader does). */
#define SERIES_POINTS                                                                              \
    "    SELECT r.ts, v.value FROM (\n"                                                            \
    "      SELECT b.ts, b.mset, b.vals FROM buckets b\n"                                           \
    "       WHERE b.metric = s.metric AND b.granularity = $3::int8\n"                              \
    "         AND b.ts >= $4::int8 AND b.ts < $5::int8\n"                                          \
    "      UNION ALL\n"                                                                            \
    "      SELECT u.ts, u.mset,\n"                                                                 \
    "             o.vals[u.off + 1 : coalesce(o.offs[(u.k + 1)::int], cardinality(o.vals))]\n"     \
    "        FROM open_blocks o\n"                                                                 \
    "        CROSS JOIN LATERAL unnest(o.metrics, o.msets, o.grans, o.tss, o.offs)\n"              \
    "                   WITH ORDINALITY u(metric, mset, granularity, ts, off, k)\n"                \
    "       WHERE o.id = s.ob AND u.metric = s.metric AND u.granularity = $3::int8\n"              \
    "         AND u.ts >= $4::int8 AND u.ts < $5::int8) r\n"                                       \
    "    CROSS JOIN LATERAL (SELECT CASE WHEN r.mset = s.m1 THEN r.vals[s.p1]\n"                   \
    "                               ELSE r.vals[s.pos[array_position(s.msets, r.mset)]] END\n"     \
    "                          AS value) v\n"                                                      \
    "     WHERE s.span = 0 OR r.ts > s.last - s.span\n"

/* One row a series that has buckets: (i, ts int8[], value float8[],
 * buckets read), each series' first $6 buckets (the caller asks one more
 * than it can take, to tell "too many" from "just enough").  A row a
 * series instead of a row a point: PostgreSQL sends, and libpq allocates,
 * a thousandth of the rows.  A bucket's value is computed once, in the
 * FILTER (a WHERE on it is evaluated at the scan and again above). */
static const char series_sql[] =
    SERIES_CTE
    "SELECT s.i, a.ts, a.vals, a.n\n"
    "  FROM s\n"
    "  CROSS JOIN LATERAL (\n"
    "    SELECT array_agg(p.ts) FILTER (WHERE p.value IS NOT NULL) AS ts,\n"
    "           array_agg(p.value) FILTER (WHERE p.value IS NOT NULL) AS vals, count(*) AS n\n"
    "      FROM (\n"
    SERIES_POINTS
    "     LIMIT $6::int8) p) a\n"
    " WHERE a.ts IS NOT NULL OR a.n = $6::int8";

/* The same points a row each, (i, ts, value), at most $6 in all: for a
 * read whose series could hold more than its share of the points allowed
 * (pg_read_series_read). */
static const char points_sql[] =
    SERIES_CTE
    "SELECT s.i, p.ts, p.value\n"
    "  FROM s\n"
    "  CROSS JOIN LATERAL (\n"
    SERIES_POINTS
    "  ) p\n"
    " WHERE p.value IS NOT NULL\n"
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

/* Field col of row `row`, a one-dimensional int8[] or float8[] without
 * NULLs in binary format, or NULL (empty): *n elements from *data, each a
 * 4-byte length (8) and 8 bytes.  0, or GA_EDB for anything else. */
static int array_elems(const PGresult *r, int row, int col, size_t *n, const char **data)
{
    const char *p = PQgetvalue(r, row, col);
    int len = PQgetlength(r, row, col);
    *n = 0;
    *data = p;
    if (PQgetisnull(r, row, col))
        return 0;
    if (len < 12)
        return GA_EDB;
    int32_t ndim = pg_util_get_i32(p), hasnull = pg_util_get_i32(p + 4);
    if (ndim == 0)
        return 0;
    if (ndim != 1 || hasnull || len < 20)
        return GA_EDB;
    int32_t dim = pg_util_get_i32(p + 12);
    if (dim < 0 || (size_t)len != 20 + (size_t)dim * 12)
        return GA_EDB;
    for (int32_t i = 0; i < dim; i++)
        if (pg_util_get_i32(p + 20 + (size_t)i * 12) != 8)
            return GA_EDB;
    *n = (size_t)dim;
    *data = p + 20;
    return 0;
}

/* The series of row `row` of a result (column 0, numbered from 1) as an
 * index below nseries, or GA_EDB. */
static int row_series(const PGresult *r, int row, size_t nseries, size_t *k, char *err,
                      size_t errlen)
{
    int32_t i = pg_util_get_i32(PQgetvalue(r, row, 0));
    if (i < 1 || (size_t)i > nseries)
        return ga_fail(GA_EDB, err, errlen, "series %d of %zu in the result", (int)i, nseries);
    *k = (size_t)i - 1;
    return 0;
}

/* out's one block for n points of nseries series, the offsets zeroed.
 * 0 or GA_ENOMEM. */
static int alloc_series(struct pg_read_series *out, size_t nseries, size_t n)
{
    size_t offs = (nseries + 1) * sizeof *out->off;
    char *mem = malloc(offs + n * (sizeof *out->ts + sizeof *out->val));
    if (!mem)
        return GA_ENOMEM;
    out->off = (size_t *)mem;
    out->ts = (int64_t *)(mem + offs);
    out->val = (double *)(out->ts + n);
    out->nseries = nseries;
    out->n = n;
    memset(out->off, 0, offs);
    return 0;
}

/* out from a result of series_sql (points_rows 0) or points_sql
 * (points_rows 1): counted by series (off[k + 1], as given by count), then
 * placed (a counting sort), then each series sorted by time. */
static int fill_series(const PGresult *r, int points_rows, size_t nseries,
                       struct pg_read_series *out, char *err, size_t errlen)
{
    int nr = PQntuples(r), rc;
    size_t n = 0, k = 0, m, nv;
    const char *ts, *vs;
    size_t *count = calloc(nseries + 1, sizeof *count);
    if (!count)
        return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
    for (int i = 0; i < nr; i++) {
        if ((rc = row_series(r, i, nseries, &k, err, errlen)) < 0)
            goto out;
        m = 1;
        if (!points_rows && (array_elems(r, i, 1, &m, &ts) < 0 ||
                             array_elems(r, i, 2, &nv, &vs) < 0 || nv != m)) {
            rc = ga_fail(GA_EDB, err, errlen, "a series' arrays in the result are not int8[] "
                         "and float8[] of one length");
            goto out;
        }
        count[k + 1] += m;
        n += m;
    }
    if (alloc_series(out, nseries, n) < 0) {
        rc = ga_fail(GA_ENOMEM, err, errlen, "out of memory");
        goto out;
    }
    for (k = 1; k <= nseries; k++)
        count[k] += count[k - 1];
    memcpy(out->off, count, (nseries + 1) * sizeof *count);
    for (int i = 0; i < nr; i++) {
        row_series(r, i, nseries, &k, err, errlen);
        size_t at = count[k];
        if (points_rows) {
            out->ts[at] = pg_util_get_i64(PQgetvalue(r, i, 1));
            out->val[at] = pg_util_get_f64(PQgetvalue(r, i, 2));
            count[k]++;
            continue;
        }
        array_elems(r, i, 1, &m, &ts);
        array_elems(r, i, 2, &m, &vs);
        for (size_t j = 0; j < m; j++) {
            out->ts[at + j] = pg_util_get_i64(ts + j * 12 + 4);
            out->val[at + j] = pg_util_get_f64(vs + j * 12 + 4);
        }
        count[k] += m;
    }
    rc = 0;
    for (k = 0; k < nseries && rc == 0; k++)
        if (sort_series(out->ts + out->off[k], out->val + out->off[k],
                        out->off[k + 1] - out->off[k]) < 0)
            rc = ga_fail(GA_ENOMEM, err, errlen, "out of memory");
out:
    free(count);
    return rc;
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
    if (!nseries) {
        rc = alloc_series(out, 0, 0) < 0 ? ga_fail(GA_ENOMEM, err, errlen, "out of memory") : 0;
        goto out;
    }
    snprintf(g, sizeof g, "%" PRId64, granularity_ns);
    snprintf(lo, sizeof lo, "%" PRId64, start_ns);
    snprintf(hi, sizeof hi, "%" PRId64, stop_ns);
    const char *pv[] = { ms, ws, g, lo, hi, lim };
    /* A row a series, each at most its share of max_points and one more:
     * the result holds at most max_points and 2 a series.  A series past
     * its share may hold more than the share but the whole read need not:
     * then a row a point, at most max_points and one in all. */
    size_t share = max_points / nseries + 1;
    share = share < ((size_t)1 << 40) ? share : (size_t)1 << 40;
    snprintf(lim, sizeof lim, "%zu", share + 1);
    if (!(r = pg_query_exec_prepared(q, "gpuagg_read_series", series_sql, 6, pv, &rc, err,
                                     errlen)))
        goto out;
    int points_rows = 0;
    for (int i = 0; i < PQntuples(r) && !points_rows; i++)
        points_rows = (uint64_t)pg_util_get_i64(PQgetvalue(r, i, 3)) > share;
    if (points_rows) {
        PQclear(r);
        snprintf(lim, sizeof lim, "%zu", max_points < SIZE_MAX / 2 ? max_points + 1 : max_points);
        if (!(r = pg_query_exec_prepared(q, "gpuagg_read_points", points_sql, 6, pv, &rc, err,
                                         errlen)))
            goto out;
    }
    if ((rc = fill_series(r, points_rows, nseries, out, err, errlen)) < 0)
        goto out;
    if (out->n > max_points)
        rc = ga_fail(GA_ERANGE, err, errlen, "more than %zu points", max_points);
out:
    PQclear(r);
    free(ms);
    free(ws);
    return rc;
}
