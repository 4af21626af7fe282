/* pg_txn.c — the writer's connection and flush transaction (see pg_txn.h,
 * docs/STORAGE.md "The flush transaction"). */
#include "storage/pg_txn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/uuid.h"
#include "storage/pg_schema.h"
#include "storage/pg_util.h"

#define COPY_CHUNK (1u << 20)
#define PG_TXN_UPDATE_MISS "GA001"
#define MAX_STEPS PG_TXN_MAX_STEPS
#define MAX_PARAMS 8

static const char session_sql[] =
    "SET temp_buffers = '256MB';\n"
    "CREATE TEMP TABLE gpuagg_stage_buckets (\n"
    "    metric integer, mset integer, granularity bigint, ts bigint,\n"
    "    vals double precision[], merge boolean) ON COMMIT DELETE ROWS;\n"
    "CREATE TEMP TABLE gpuagg_stage_blocks (LIKE open_blocks INCLUDING STORAGE)\n"
    "    ON COMMIT DELETE ROWS;\n"
    "CREATE TEMP TABLE gpuagg_stage_tails (metric integer, lsn bigint, rec bytea)\n"
    "    WITH (toast_tuple_target = 8160) ON COMMIT DELETE ROWS;\n"
    "ALTER TABLE gpuagg_stage_tails ALTER COLUMN rec SET STORAGE EXTERNAL";

/* Rewritten buckets.  The writer knows the method set of the row it last
 * committed at each (metric, granularity)'s newest bucket (pg_fresh.h);
 * where the new set holds all of its methods (the same set; a second point
 * that brings std) the row is replaced outright.  Every other rewrite (a
 * rate:-only update of the bucket after a new point, an older bucket, a
 * set the writer does not know) is merged: the union of the two sets, new
 * values winning (gpuagg_merge, migration 4), as Gnocchi merges splits. */
/* The replaced rows (the writer knows them committed: each is its pair's
 * high water with a known method set) are rewritten by a plain UPDATE
 * joined on the primary key, which PostgreSQL applies about twice as fast
 * as INSERT … ON CONFLICT DO UPDATE (no speculative insertion; the row
 * stays on its page, a HOT update, with the partitions' fillfactor 50).
 * The writer's knowledge is a cache: when fewer rows than staged were
 * found (a partition dropped or rows deleted behind its back), the block
 * raises GA001 and the writer redoes the transaction with the upsert. */
static const char update_aggs_fmt[] =
    "DO $gpuagg$ DECLARE n bigint; BEGIN\n"
    "UPDATE buckets b SET mset = s.mset, vals = s.vals FROM gpuagg_stage_buckets s\n"
    "WHERE NOT s.merge AND b.metric = s.metric AND b.granularity = s.granularity AND b.ts = s.ts;\n"
    "GET DIAGNOSTICS n = ROW_COUNT;\n"
    "IF n <> %zu THEN RAISE EXCEPTION 'gpuagg: %% of %zu rewritten buckets not found', %zu - n\n"
    "    USING ERRCODE = '" PG_TXN_UPDATE_MISS "'; END IF;\n"
    "END $gpuagg$";

/* Every statement of the flush transaction looks its rows up by key, a
 * batch's worth: joined to the staged or unnested rows by nested loops over
 * the primary keys.  Given the arrays' real lengths (unnest of a parameter
 * is estimated at its length), the planner would otherwise hash or sort
 * the whole table for a large batch: "count points" hashed every row of
 * metrics (spilling to disk) for each partition's window set, a cost that
 * grows with the metrics there are, not with the batch. */
static const char begin_sql[] =
    "BEGIN; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off";

static const char upsert_aggs_sql[] =
    "INSERT INTO buckets AS b (metric, mset, granularity, ts, vals)\n"
    "SELECT metric, mset, granularity, ts, vals FROM gpuagg_stage_buckets WHERE NOT merge\n"
    "ON CONFLICT (metric, granularity, ts) DO UPDATE SET mset = EXCLUDED.mset, vals = EXCLUDED.vals";

static const char merge_aggs_sql[] =
    "INSERT INTO buckets AS b (metric, mset, granularity, ts, vals)\n"
    "SELECT metric, mset, granularity, ts, vals FROM gpuagg_stage_buckets WHERE merge\n"
    "ON CONFLICT (metric, granularity, ts) DO UPDATE SET\n"
    "    mset = CASE WHEN b.mset = EXCLUDED.mset THEN b.mset\n"
    "                ELSE (gpuagg_merge(b.mset, b.vals, EXCLUDED.mset, EXCLUDED.vals)).mset END,\n"
    "    vals = CASE WHEN b.mset = EXCLUDED.mset THEN EXCLUDED.vals\n"
    "                ELSE (gpuagg_merge(b.mset, b.vals, EXCLUDED.mset, EXCLUDED.vals)).vals END";

/* The policies of the batch's definitions: inserted when new, updated when
 * changed, and otherwise left alone without a row lock.  Every writer's
 * flush that carries definitions runs this, in its transaction; an
 * ON CONFLICT DO UPDATE would lock the policy's row (FOR NO KEY UPDATE)
 * even where its WHERE then skips the update, until the commit, and so
 * run the writers' transactions one at a time while metrics are new.  The
 * UPDATE's filter is evaluated before it locks a row, and ON CONFLICT DO
 * NOTHING takes no lock on the row it finds. */
static const char upsert_policy_sql[] =
    "WITH u AS (SELECT n, bw, d::jsonb AS d, m::text[] AS m\n"
    "           FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[]) u(n, bw, d, m)),\n"
    "changed AS (UPDATE archive_policies p SET back_window = u.bw, definition = u.d,\n"
    "                methods = u.m, updated = now()\n"
    "            FROM u WHERE p.name = u.n\n"
    "            AND (p.back_window, p.definition, p.methods) IS DISTINCT FROM (u.bw, u.d, u.m))\n"
    "INSERT INTO archive_policies (name, back_window, definition, methods)\n"
    "SELECT n, bw, d, m FROM u ON CONFLICT (name) DO NOTHING";

/* A new metric's row carries its block when the batch placed it (-1:
 * none); a definition written again (replayed) keeps its row, but for a
 * block it did not have. */
static const char insert_metrics_sql[] =
    "INSERT INTO metrics AS m (id, name, policy, uuid, open_block)\n"
    "SELECT u.i, u.n, u.p, u.u, nullif(u.b, -1)\n"
    "FROM unnest($1::int4[], $2::text[], $3::text[], $4::uuid[], $5::int8[]) u(i, n, p, u, b)\n"
    "ON CONFLICT (id) DO UPDATE SET open_block = EXCLUDED.open_block\n"
    "    WHERE EXCLUDED.open_block IS NOT NULL AND m.open_block IS DISTINCT FROM EXCLUDED.open_block";

/* The open buckets' blocks the flush changed (pg_open.h), whole, and the
 * block of each metric that got one (for readers: the bucket_rows view). */
static const char upsert_blocks_sql[] =
    "INSERT INTO open_blocks AS o (id, metrics, msets, grans, tss, offs, vals)\n"
    "SELECT id, metrics, msets, grans, tss, offs, vals FROM gpuagg_stage_blocks\n"
    "ON CONFLICT (id) DO UPDATE SET metrics = EXCLUDED.metrics, msets = EXCLUDED.msets,\n"
    "    grans = EXCLUDED.grans, tss = EXCLUDED.tss, offs = EXCLUDED.offs, vals = EXCLUDED.vals";

static const char place_metrics_sql[] =
    "UPDATE metrics m SET open_block = u.b\n"
    "FROM unnest($1::int4[], $2::int8[]) u(id, b)\n"
    "WHERE m.id = u.id AND m.open_block IS DISTINCT FROM u.b";

static const char insert_late_sql[] =
    "INSERT INTO late_points (metric, ts, value, reason)\n"
    "SELECT * FROM unnest($1::int4[], $2::int8[], $3::float8[], $4::text[])\n"
    "ON CONFLICT DO NOTHING";

static const char update_counts_sql[] =
    "UPDATE metrics m SET points = m.points + u.n\n"
    "FROM unnest($1::int4[], $2::int8[]) u(id, n) WHERE m.id = u.id";

/* Whole snapshots replace the metrics' rows and drop their tails; tail
 * records are added as rows of their own, so that a save writes what
 * changed (docs/STORAGE.md "Window snapshots"). */
static const char upsert_windows_sql[] =
    "WITH gone AS (DELETE FROM metric_window_tails t USING unnest($1::int4[]) u(m)\n"
    "              WHERE t.metric = u.m)\n"
    "INSERT INTO metric_windows (metric, lsn, saved_lsn, snapshot)\n"
    "SELECT u.m, u.l, u.l, u.s FROM unnest($1::int4[], $2::bytea[], $3::int8[]) u(m, s, l)\n"
    "ON CONFLICT (metric) DO UPDATE SET lsn = EXCLUDED.lsn, saved_lsn = EXCLUDED.saved_lsn,\n"
    "    snapshot = EXCLUDED.snapshot, updated = now()";

/* The tails are COPYed into a staging table first (copy_tails): a save
 * of one partition is thousands of records of kilobytes, which a binary
 * COPY takes faster than a bytea[] parameter of tens of megabytes. */
static const char insert_tails_sql[] =
    "INSERT INTO metric_window_tails (metric, lsn, rec) SELECT metric, lsn, rec FROM gpuagg_stage_tails";

static const char partitions_sql[] =
    "UPDATE partitions p SET window_lsn = greatest(p.window_lsn, u.l), updated = now()\n"
    "FROM unnest($1::int4[], $2::int8[]) u(id, l) WHERE p.id = u.id";

/* this connection's partitions: every unit up to $1 is committed */
static const char checkpoint_sql[] =
    "UPDATE partitions SET committed_lsn = greatest(committed_lsn, $1::bigint),\n"
    "    last_batch = $3::bigint, updated = now()\n"
    "WHERE id = ANY ($2::int4[])";

/* rows a flush could not store (pg_isolate.h); kind and has_value packed
 * in $6, errors by index ($8) into $7 */
static const char insert_rejects_sql[] =
    "INSERT INTO rejected_rows (metric, method, granularity, ts, value, kind, error)\n"
    "SELECT u.m, nullif(u.meth, -1)::smallint, nullif(u.g, 0),\n"
    "       CASE WHEN u.f & 255 < 2 THEN u.ts END, CASE WHEN u.f >> 8 = 1 THEN u.v END,\n"
    "       (ARRAY['bucket', 'late', 'definition', 'window'])[(u.f & 255) + 1],\n"
    "       ($7::text[])[u.e + 1]\n"
    "FROM unnest($1::int4[], $2::int4[], $3::int8[], $4::int8[], $5::float8[], $6::int4[],\n"
    "            $8::int4[]) u(m, meth, g, ts, v, f, e)";

static double ms_since(int64_t t0)
{
    return (double)(ga_now_mono_ns() - t0) / 1e6;
}

/* GA_EIO when the connection is gone, else GA_EDB. */
static int fail_code(PGconn *c)
{
    return PQstatus(c) == CONNECTION_OK ? GA_EDB : GA_EIO;
}

void pg_txn_close(struct pg_txn_conn *tc)
{
    if (tc->c)
        PQfinish(tc->c);
    free(tc->parts);
    free(tc->merged);
    free(tc->prev_mset);
    for (size_t i = 0; i < tc->nmsets; i++)
        free(tc->msets[i].m);
    free(tc->msets);
    memset(tc, 0, sizeof *tc);
}

static int owns(const struct pg_txn_conn *tc, int p)
{
    return !tc->own_parts || (tc->own_parts >> p & 1);
}

int pg_txn_read_checkpoint(struct pg_txn_conn *tc, struct pg_txn_checkpoint *cp, char *err, size_t errlen)
{
    PGresult *r = PQexecParams(tc->c,
                               "SELECT id, window_lsn, committed_lsn, last_batch FROM partitions",
                               0, NULL, NULL, NULL, NULL, 1);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != GA_PARTITIONS) {
        pg_util_result_error(err, errlen, tc->c, r);
        if (PQresultStatus(r) == PGRES_TUPLES_OK)
            snprintf(err, errlen, "partitions has %d rows, expected %d", PQntuples(r),
                     GA_PARTITIONS);
        rc = fail_code(tc->c);
    } else {
        memset(cp, 0, sizeof *cp);
        int first = 1, low = GA_PARTITIONS;
        for (int i = 0; i < GA_PARTITIONS; i++) {
            int32_t id = pg_util_get_i32(PQgetvalue(r, i, 0));
            if (id < 0 || id >= GA_PARTITIONS)
                continue;
            uint64_t wl = (uint64_t)pg_util_get_i64(PQgetvalue(r, i, 1));
            uint64_t cl = (uint64_t)pg_util_get_i64(PQgetvalue(r, i, 2));
            cp->part_lsn[id] = wl;
            if (!owns(tc, id))
                continue;
            /* what this connection's partitions all have */
            cp->committed_lsn = first || cl < cp->committed_lsn ? cl : cp->committed_lsn;
            cp->window_lsn = first || wl < cp->window_lsn ? wl : cp->window_lsn;
            first = 0;
            if (id < low) {
                low = id;
                cp->last_batch = (uint64_t)pg_util_get_i64(PQgetvalue(r, i, 3));
            }
        }
    }
    PQclear(r);
    return rc;
}

/* Hold the advisory lock of every partition this connection owns, for the
 * session: a second daemon's writer of the same partition waits here, and
 * a writer whose session is gone can no longer commit its partitions'
 * rows.  GA_EBUSY naming the holder when not granted within timeout_ms. */
static int lock_partitions(struct pg_txn_conn *tc, int timeout_ms, char *err, size_t errlen)
{
    char sql[1024], ignore[128];
    size_t o = (size_t)snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(" PG_TXN_PART_LOCK_CLASS
                                                 ", p) FROM unnest('{");
    for (int p = 0, k = 0; p < GA_PARTITIONS; p++)
        if (owns(tc, p))
            o += (size_t)snprintf(sql + o, sizeof sql - o, "%s%d", k++ ? "," : "", p);
    snprintf(sql + o, sizeof sql - o, "}'::int4[]) p");
    char to[64];
    snprintf(to, sizeof to, "SET lock_timeout = %d", timeout_ms);
    int rc = pg_util_exec(tc->c, to, err, errlen);
    if (rc == 0)
        rc = pg_util_exec(tc->c, sql, err, errlen);
    pg_util_exec(tc->c, "SET lock_timeout = 0", ignore, sizeof ignore);
    if (rc == 0)
        return 0;
    PGresult *r = PQexec(tc->c, "SELECT a.pid, coalesce(a.application_name, ''), l.objid "
                                "FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                                "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
                                "AND l.classid = " PG_TXN_PART_LOCK_CLASS " AND a.pid <> pg_backend_pid()");
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
        snprintf(err, errlen, "partition %s is written by another gpuaggd (backend pid %s, %s); "
                 "waiting for it to end", PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 0),
                 PQgetvalue(r, 0, 1));
    else if (rc != GA_ENOMEM)
        snprintf(err, errlen, "the partition locks were not granted within %d ms", timeout_ms);
    PQclear(r);
    return GA_EBUSY;
}

int pg_txn_open(struct pg_txn_conn *tc, const char *conninfo, uint64_t parts, int instance_lock,
             struct pg_txn_checkpoint *cp, char *err, size_t errlen)
{
    int rc;
    memset(tc, 0, sizeof *tc);
    tc->own_parts = parts;
    tc->c = pg_util_connect(conninfo, "gpuaggd-writer");
    if (!tc->c) {
        snprintf(err, errlen, "out of memory");
        return GA_ENOMEM;
    }
    if (PQstatus(tc->c) != CONNECTION_OK) {
        pg_util_errcopy(err, errlen, PQerrorMessage(tc->c));
        rc = GA_EIO;
        goto fail;
    }
    if ((instance_lock && (rc = pg_util_instance_lock(tc->c, 10000, err, errlen)) < 0) ||
        (rc = pg_schema_migrate(tc->c, err, errlen)) < 0 ||
        (rc = lock_partitions(tc, 10000, err, errlen)) < 0 ||
        (rc = pg_util_exec(tc->c, session_sql, err, errlen)) < 0 ||
        (rc = pg_txn_read_checkpoint(tc, cp, err, errlen)) < 0)
        goto fail;
    return 0;
fail:
    if (rc == GA_EDB)
        rc = fail_code(tc->c);
    pg_txn_close(tc);
    return rc;
}

static int part_cmp(const void *pa, const void *pb)
{
    const struct pg_schema_part *a = pa, *b = pb;
    if (a->granularity_ns != b->granularity_ns)
        return a->granularity_ns < b->granularity_ns ? -1 : 1;
    return (a->period > b->period) - (a->period < b->period);
}

static int part_known(const struct pg_txn_conn *tc, const struct pg_schema_part *p)
{
    return tc->nparts &&
           bsearch(p, tc->parts, tc->nparts, sizeof *tc->parts, part_cmp) != NULL;
}

/* Ensure the partitions parts[n] (sorted, unique) exist. */
static int ensure_parts(struct pg_txn_conn *tc, const struct pg_schema_part *parts, size_t n, int *created,
                        char *err, size_t errlen)
{
    struct pg_schema_part *want = malloc((n ? n : 1) * sizeof *want);
    size_t nw = 0;
    int rc = 0;
    if (!want)
        return GA_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (!part_known(tc, &parts[i]))
            want[nw++] = parts[i];
    if (!nw)
        goto out;
    if ((rc = pg_schema_ensure_partitions(tc->c, want, nw, err, errlen)) < 0) {
        rc = rc == GA_EDB ? fail_code(tc->c) : rc;
        goto out;
    }
    *created += rc;
    rc = 0;
    if (tc->nparts + nw > tc->cap_parts) {
        size_t cap = (tc->nparts + nw) * 2;
        struct pg_schema_part *d = realloc(tc->parts, cap * sizeof *d);
        if (!d) {
            rc = GA_ENOMEM;
            goto out;
        }
        tc->parts = d;
        tc->cap_parts = cap;
    }
    memcpy(tc->parts + tc->nparts, want, nw * sizeof *want);
    tc->nparts += nw;
    qsort(tc->parts, tc->nparts, sizeof *tc->parts, part_cmp);
out:
    free(want);
    return rc;
}

static int batch_parts(struct pg_txn_conn *tc, const struct pg_batch *b, int *created, char *err,
                       size_t errlen)
{
    struct pg_schema_part *parts = malloc((b->naggs ? b->naggs : 1) * sizeof *parts);
    size_t n = 0;
    if (!parts)
        return GA_ENOMEM;
    for (size_t i = 0; i < b->naggs; i++) {
        const struct ga_agg *a = &b->aggs[i];
        struct pg_schema_part p = { a->granularity_ns, a->ts / pg_schema_partition_width(a->granularity_ns) };
        if (!n || part_cmp(&parts[n - 1], &p) != 0)
            parts[n++] = p;
    }
    qsort(parts, n, sizeof *parts, part_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || part_cmp(&parts[u - 1], &parts[i]) != 0)
            parts[u++] = parts[i];
    int rc = ensure_parts(tc, parts, u, created, err, errlen);
    free(parts);
    return rc;
}

/* ---- method sets ----------------------------------------------------------- */

/* End of the bucket starting at aggs[i]: the rows of one (metric,
 * granularity, ts) are adjacent, methods ascending (pg_batch_sort). */
static size_t bucket_end(const struct pg_batch *b, size_t i)
{
    const struct ga_agg *a = &b->aggs[i];
    size_t j = i + 1;
    while (j < b->naggs && b->aggs[j].metric == a->metric && b->aggs[j].ts == a->ts &&
           b->aggs[j].granularity_ns == a->granularity_ns)
        j++;
    return j;
}

static uint64_t mset_hash(const struct ga_agg *a, size_t n)
{
    uint64_t h = 1469598103934665603ULL;       /* as mset_hash_m over the methods */
    for (size_t i = 0; i < n; i++)
        h = (h ^ a[i].method) * 1099511628211ULL;
    return h ^ n;
}

static uint64_t mset_hash_m(const ga_method_t *m, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ m[i]) * 1099511628211ULL;
    return h ^ n;
}

static const struct pg_txn_mset *mset_by_id(const struct pg_txn_conn *tc, int32_t id)
{
    for (size_t i = 0; i < tc->nmsets; i++)
        if (tc->msets[i].id == id)
            return &tc->msets[i];
    return NULL;
}

/* The id of the union of sets a and b where this connection knows it,
 * else -1. */
static int32_t mset_union(const struct pg_txn_conn *tc, int32_t a, int32_t b)
{
    const struct pg_txn_mset *x = mset_by_id(tc, a), *y = mset_by_id(tc, b);
    if (!x || !y || x->n + y->n > 2 * GA_POLICY_MAX_METHODS)
        return -1;
    ga_method_t u[2 * GA_POLICY_MAX_METHODS];
    size_t n = 0, i = 0, k = 0;
    while (i < x->n || k < y->n) {
        ga_method_t m = k == y->n || (i < x->n && x->m[i] < y->m[k]) ? x->m[i] : y->m[k];
        i += i < x->n && x->m[i] == m;
        k += k < y->n && y->m[k] == m;
        u[n++] = m;
    }
    uint64_t h = mset_hash_m(u, n);
    for (size_t j = 0; j < tc->nmsets; j++)
        if (tc->msets[j].hash == h && tc->msets[j].n == n &&
            !memcmp(tc->msets[j].m, u, n * sizeof *u))
            return tc->msets[j].id;
    return -1;
}

/* The id of the method set of rows a[0..n), or -1 when not known. */
static int32_t mset_find(const struct pg_txn_conn *tc, uint64_t h, const struct ga_agg *a, size_t n)
{
    for (size_t i = 0; i < tc->nmsets; i++) {
        const struct pg_txn_mset *s = &tc->msets[i];
        if (s->hash != h || s->n != n)
            continue;
        size_t k = 0;
        while (k < n && s->m[k] == a[k].method)
            k++;
        if (k == n)
            return s->id;
    }
    return -1;
}

static int mset_add(struct pg_txn_conn *tc, const ga_method_t *ms, size_t n, int32_t id)
{
    if (tc->nmsets == tc->cap_msets) {
        size_t cap = tc->cap_msets ? tc->cap_msets * 2 : 16;
        struct pg_txn_mset *v = realloc(tc->msets, cap * sizeof *v);
        if (!v)
            return GA_ENOMEM;
        tc->msets = v;
        tc->cap_msets = cap;
    }
    ga_method_t *m = malloc((n ? n : 1) * sizeof *m);
    if (!m)
        return GA_ENOMEM;
    memcpy(m, ms, n * sizeof *m);
    tc->msets[tc->nmsets++] = (struct pg_txn_mset){ mset_hash_m(m, n), id, (uint32_t)n, m };
    return 0;
}

/* The id of method set m[0..n), or -1 when not known. */
static int32_t mset_find_m(const struct pg_txn_conn *tc, const ga_method_t *m, size_t n)
{
    uint64_t h = mset_hash_m(m, n);
    for (size_t i = 0; i < tc->nmsets; i++)
        if (tc->msets[i].hash == h && tc->msets[i].n == n &&
            !memcmp(tc->msets[i].m, m, n * sizeof *m))
            return tc->msets[i].id;
    return -1;
}

/* "{1,2,3}" for methods m[0..n) into buf. */
static void mset_text(struct pg_util_buf *buf, const ga_method_t *m, size_t n)
{
    char one[16];
    pg_util_put(buf, "{", 1);
    for (size_t k = 0; k < n; k++) {
        int l = snprintf(one, sizeof one, "%s%u", k ? "," : "", (unsigned)m[k]);
        pg_util_put(buf, one, (size_t)l);
    }
    pg_util_put(buf, "}", 1);
}

/* In one order (the sets sorted), so that writers registering the same
 * new sets at once wait for each other instead of deadlocking on each
 * other's uncommitted insert. */
static const char mset_insert_sql[] =
    "INSERT INTO method_sets (methods) SELECT t::smallint[] FROM unnest($1::text[]) t ORDER BY 1\n"
    "ON CONFLICT (methods) DO NOTHING";
static const char mset_select_sql[] =
    "SELECT w.i, s.id FROM unnest($1::text[]) WITH ORDINALITY w(t, i)\n"
    "JOIN method_sets s ON s.methods = w.t::smallint[]";

/* Method sets to register: lists of methods, each its own copy. */
struct msets_new {
    ga_method_t **m;
    size_t *n;
    size_t k, cap;
};

/* Add m[0..n) to nw unless this connection or nw knows it.  0 or
 * GA_ENOMEM. */
static int msets_want(const struct pg_txn_conn *tc, struct msets_new *nw, const ga_method_t *m,
                      size_t n)
{
    if (mset_find_m(tc, m, n) >= 0)
        return 0;
    for (size_t i = 0; i < nw->k; i++)
        if (nw->n[i] == n && !memcmp(nw->m[i], m, n * sizeof *m))
            return 0;
    if (nw->k == nw->cap) {
        size_t cap = nw->cap ? nw->cap * 2 : 16;
        ga_method_t **vm = realloc(nw->m, cap * sizeof *vm);
        if (vm)
            nw->m = vm;
        size_t *vn = vm ? realloc(nw->n, cap * sizeof *vn) : NULL;
        if (!vn)
            return GA_ENOMEM;
        nw->n = vn;
        nw->cap = cap;
    }
    if (!(nw->m[nw->k] = malloc((n ? n : 1) * sizeof *m)))
        return GA_ENOMEM;
    memcpy(nw->m[nw->k], m, n * sizeof *m);
    nw->n[nw->k++] = n;
    return 0;
}

static void msets_new_free(struct msets_new *nw)
{
    for (size_t i = 0; i < nw->k; i++)
        free(nw->m[i]);
    free(nw->m);
    free(nw->n);
}

/* Register the sets of nw (each its own autocommit statement, before the
 * flush transaction: a set, once there, is never removed) and learn their
 * ids. */
static int msets_register(struct pg_txn_conn *tc, const struct msets_new *nw, char *err,
                          size_t errlen)
{
    struct pg_util_buf arr = { 0 }, txt = { 0 };
    int rc = 0;
    if (!nw->k)
        return 0;
    pg_util_array_begin(&arr, PG_UTIL_TEXTOID, nw->k);
    for (size_t k = 0; k < nw->k; k++) {
        txt.len = 0;
        mset_text(&txt, nw->m[k], nw->n[k]);
        pg_util_array_bytes(&arr, txt.p, txt.len);
    }
    if (arr.oom || txt.oom) {
        rc = GA_ENOMEM;
        goto out;
    }
    const char *vals[] = { (const char *)arr.p };
    int lens[] = { (int)arr.len }, fmts[] = { 1 };
    PGresult *r = PQexecParams(tc->c, mset_insert_sql, 1, NULL, vals, lens, fmts, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        pg_util_result_error(err, errlen, tc->c, r);
        PQclear(r);
        rc = fail_code(tc->c);
        goto out;
    }
    PQclear(r);
    r = PQexecParams(tc->c, mset_select_sql, 1, NULL, vals, lens, fmts, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || (size_t)PQntuples(r) != nw->k) {
        pg_util_result_error(err, errlen, tc->c, r);
        if (PQresultStatus(r) == PGRES_TUPLES_OK)
            snprintf(err, errlen, "method sets: %d of %zu registered", PQntuples(r), nw->k);
        PQclear(r);
        rc = fail_code(tc->c);
        goto out;
    }
    for (int row = 0; row < PQntuples(r) && !rc; row++) {
        size_t k = (size_t)strtoull(PQgetvalue(r, row, 0), NULL, 10) - 1;
        int32_t id = (int32_t)strtol(PQgetvalue(r, row, 1), NULL, 10);
        rc = mset_add(tc, nw->m[k], nw->n[k], id);
    }
    PQclear(r);
out:
    if (rc == GA_ENOMEM)
        snprintf(err, errlen, "out of memory");
    pg_util_buf_free(&arr);
    pg_util_buf_free(&txt);
    return rc;
}

/* Give every method set of b's buckets, and of the open buckets its blocks
 * write (o, may be NULL), an id. */
static int ensure_msets(struct pg_txn_conn *tc, const struct pg_batch *b, struct pg_open *o, char *err,
                        size_t errlen)
{
    struct msets_new nw = { 0 };
    ga_method_t m[GA_POLICY_MAX_METHODS];
    int rc = 0;
    for (size_t i = 0, j; i < b->naggs && !rc; i = j) {
        j = bucket_end(b, i);
        if (mset_find(tc, mset_hash(&b->aggs[i], j - i), &b->aggs[i], j - i) >= 0)
            continue;
        size_t n = j - i < GA_POLICY_MAX_METHODS ? j - i : GA_POLICY_MAX_METHODS;
        for (size_t k = 0; k < n; k++)
            m[k] = b->aggs[i + k].method;
        rc = msets_want(tc, &nw, m, n);
    }
    for (size_t d = 0; o && d < o->ndirty && !rc; d++)
        for (uint32_t k = 0, len = pg_open_block_len(o, o->dirty[d]); k < len && !rc; k++) {
            uint32_t metric;
            int64_t g, ts;
            struct pg_open_vals *v;
            pg_open_block_entry(o, o->dirty[d], k, &metric, &g, &ts, &v);
            if (v->mset < 0 && (v->mset = mset_find_m(tc, v->m, v->n)) < 0)
                rc = msets_want(tc, &nw, v->m, v->n);
        }
    if (rc == 0)
        rc = msets_register(tc, &nw, err, errlen);
    else if (rc == GA_ENOMEM)
        snprintf(err, errlen, "out of memory");
    msets_new_free(&nw);
    return rc;
}

/* One bucket row: rows a[0..n) of one (metric, granularity, ts), their
 * values as a float8[] in the order of method set mset. */
static void copy_bucket(struct pg_util_buf *cb, const struct ga_agg *a, size_t n, int32_t mset,
                        int merge)
{
    pg_util_put_i16(cb, merge < 0 ? 5 : 6);
    pg_util_put_i32(cb, 4);
    pg_util_put_i32(cb, (int32_t)a->metric);
    pg_util_put_i32(cb, 4);
    pg_util_put_i32(cb, mset);
    pg_util_put_i32(cb, 8);
    pg_util_put_i64(cb, a->granularity_ns);
    pg_util_put_i32(cb, 8);
    pg_util_put_i64(cb, a->ts);
    pg_util_put_i32(cb, (int32_t)(20 + 12 * n));        /* the array, binary */
    pg_util_put_i32(cb, 1);                             /* ndim */
    pg_util_put_i32(cb, 0);                             /* no NULLs */
    pg_util_put_i32(cb, PG_UTIL_FLOAT8OID);
    pg_util_put_i32(cb, (int32_t)n);
    pg_util_put_i32(cb, 1);                             /* lower bound */
    for (size_t k = 0; k < n; k++) {
        pg_util_put_i32(cb, 8);
        pg_util_put_f64(cb, a[k].value);
    }
    if (merge >= 0) {
        pg_util_put_i32(cb, 1);
        uint8_t m = (uint8_t)merge;
        pg_util_put(cb, &m, 1);
    }
}

/* 1 if method set sup holds every method of set sub (both known here). */
static int mset_holds(const struct pg_txn_conn *tc, int32_t sup, int32_t sub)
{
    const struct pg_txn_mset *a = mset_by_id(tc, sup), *b = mset_by_id(tc, sub);
    if (!a || !b)
        return 0;
    size_t i = 0;
    for (size_t k = 0; k < b->n; k++) {            /* both ascending */
        while (i < a->n && a->m[i] < b->m[k])
            i++;
        if (i == a->n || a->m[i] != b->m[k])
            return 0;
    }
    return 1;
}

static const char copy_stage_sql[] = "COPY gpuagg_stage_buckets FROM STDIN (FORMAT binary)";
static const char copy_fresh_sql[] =
    "COPY buckets (metric, mset, granularity, ts, vals) FROM STDIN (FORMAT binary)";

/* A binary COPY FROM STDIN in the open transaction: rows are put into buf
 * and sent a chunk at a time. */
struct copy_in {
    PGconn *c;
    struct pg_util_buf buf;
};

/* Start the COPY of sql.  0, or GA_EDB (err); copy_end either way. */
static int copy_begin(struct copy_in *ci, PGconn *c, const char *sql, char *err, size_t errlen)
{
    static const char header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0";
    *ci = (struct copy_in){ .c = c };
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COPY_IN;
    if (!ok)
        pg_util_result_error(err, errlen, c, r);
    PQclear(r);
    if (!ok) {
        ci->c = NULL;                      /* no COPY to end */
        return GA_EDB;
    }
    pg_util_buf_reserve(&ci->buf, COPY_CHUNK + 64);
    pg_util_put(&ci->buf, header, sizeof header);
    return 0;
}

/* Send what is buffered once it is a chunk, or (last) with the trailer.
 * 0, or GA_EDB (err; the COPY is cancelled). */
static int copy_send(struct copy_in *ci, int last, char *err, size_t errlen)
{
    if (!last && ci->buf.len < COPY_CHUNK)
        return 0;
    if (last)
        pg_util_put_i16(&ci->buf, -1);
    if (ci->buf.oom) {
        PQputCopyEnd(ci->c, "out of memory");
        snprintf(err, errlen, "out of memory");
        return GA_EDB;
    }
    if (PQputCopyData(ci->c, (const char *)ci->buf.p, (int)ci->buf.len) != 1) {
        pg_util_errcopy(err, errlen, PQerrorMessage(ci->c));
        return GA_EDB;
    }
    ci->buf.len = 0;
    return 0;
}

/* Cancel the COPY: the rows could not be written (why, also in err). */
static int copy_cancel(struct copy_in *ci, const char *why, char *err, size_t errlen)
{
    PQputCopyEnd(ci->c, why);
    snprintf(err, errlen, "%s", why);
    return GA_EDB;
}

/* End the COPY (rc: 0 when every row was sent) and read its result.
 * Returns rc, or GA_EDB with the server's reason in err; *unique (may be
 * NULL) is set when that was a primary-key violation (SQLSTATE 23505). */
static int copy_end(struct copy_in *ci, int rc, int *unique, char *err, size_t errlen)
{
    if (unique)
        *unique = 0;
    if (ci->c) {
        if (rc == 0 && PQputCopyEnd(ci->c, NULL) != 1) {
            pg_util_errcopy(err, errlen, PQerrorMessage(ci->c));
            rc = GA_EDB;
        }
        PGresult *r;
        while ((r = PQgetResult(ci->c)) != NULL) {     /* the COPY's own result, then NULL */
            if (rc == 0 && PQresultStatus(r) != PGRES_COMMAND_OK) {
                const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                pg_util_result_error(err, errlen, ci->c, r);
                if (unique)
                    *unique = state && !strcmp(state, "23505");
                rc = GA_EDB;
            }
            PQclear(r);
        }
    }
    pg_util_buf_free(&ci->buf);
    return rc;
}

/* COPY the buckets of b whose first row i has fresh[i] == want (every one
 * when fresh is NULL) with `sql` (inside the open transaction); *nrows
 * gets the bucket rows sent.  *unique is set when the COPY failed on a
 * primary-key violation (SQLSTATE 23505). */
static int copy_aggs(struct pg_txn_conn *tc, const char *sql, const struct pg_batch *b,
                     const uint8_t *fresh, uint8_t want, const struct pg_fresh_map *hw, size_t *nrows,
                     size_t *nmerge, int *unique, char *err, size_t errlen)
{
    struct copy_in ci;
    *nrows = 0;
    int rc = copy_begin(&ci, tc->c, sql, err, errlen);
    int32_t last_id = -1;
    uint64_t last_h = 0;
    size_t last_n = 0;
    for (size_t i = 0, j; rc == 0 && i < b->naggs; i = j) {
        j = bucket_end(b, i);
        if (!fresh || fresh[i] == want) {
            uint64_t h = mset_hash(&b->aggs[i], j - i);
            int32_t id = h == last_h && j - i == last_n ? last_id
                                                        : mset_find(tc, h, &b->aggs[i], j - i);
            if (id < 0) {
                char why[96];
                snprintf(why, sizeof why, "method set of metric %u not registered",
                         b->aggs[i].metric);
                rc = copy_cancel(&ci, why, err, errlen);
                break;
            }
            last_id = id, last_h = h, last_n = j - i;
            int merge = -1;                 /* the fresh COPY has no such column */
            if (nmerge) {
                int32_t old = hw ? pg_fresh_mset(hw, &b->aggs[i]) : -1;
                merge = !(old >= 0 && (old == id || mset_holds(tc, id, old)));
                *nmerge += (size_t)merge;
                tc->merged[i] = (uint8_t)merge;
                tc->prev_mset[i] = old;
            }
            copy_bucket(&ci.buf, &b->aggs[i], j - i, id, merge);
            (*nrows)++;
        }
        rc = copy_send(&ci, j == b->naggs, err, errlen);
    }
    if (rc == 0 && !b->naggs)
        rc = copy_send(&ci, 1, err, errlen);
    return copy_end(&ci, rc, unique, err, errlen);
}

static const char copy_blocks_sql[] =
    "COPY gpuagg_stage_blocks (id, metrics, msets, grans, tss, offs, vals) FROM STDIN "
    "(FORMAT binary)";

/* One block row: its entries' columns as arrays (pg_open.h). */
static void copy_block(struct pg_util_buf *cb, const struct pg_open *o, uint32_t bi, uint32_t len,
                       size_t nvals)
{
    uint32_t metric;
    int64_t g, ts;
    struct pg_open_vals *v;
    pg_util_put_i16(cb, 7);
    pg_util_put_i32(cb, 8);
    pg_util_put_i64(cb, o->blk[bi].id);
    for (int col = 0; col < 5; col++) {
        int wide = col == 2 || col == 3;
        pg_util_put_i32(cb, (int32_t)(20 + len * (wide ? 12 : 8)));
        pg_util_array_begin(cb, wide ? PG_UTIL_INT8OID : PG_UTIL_INT4OID, len);
        size_t off = 0;
        for (uint32_t k = 0; k < len; k++) {
            pg_open_block_entry(o, bi, k, &metric, &g, &ts, &v);
            switch (col) {
            case 0: pg_util_array_i32(cb, (int32_t)metric); break;
            case 1: pg_util_array_i32(cb, v->mset); break;
            case 2: pg_util_array_i64(cb, g); break;
            case 3: pg_util_array_i64(cb, ts); break;
            default: pg_util_array_i32(cb, (int32_t)off); off += v->n; break;
            }
        }
    }
    pg_util_put_i32(cb, (int32_t)(20 + nvals * 12));
    pg_util_array_begin(cb, PG_UTIL_FLOAT8OID, nvals);
    for (uint32_t k = 0; k < len; k++) {
        pg_open_block_entry(o, bi, k, &metric, &g, &ts, &v);
        for (size_t x = 0; x < v->n; x++)
            pg_util_array_f64(cb, v->v[x]);
    }
}

/* COPY the blocks o's pending batch rewrites, whole, into the staging
 * table; *nent gets their entries.  Every entry's method set has its id
 * (ensure_msets). */
static int copy_blocks(struct pg_txn_conn *tc, const struct pg_open *o, size_t *nent, char *err,
                       size_t errlen)
{
    struct copy_in ci;
    *nent = 0;
    int rc = copy_begin(&ci, tc->c, copy_blocks_sql, err, errlen);
    for (size_t d = 0; rc == 0 && d < o->ndirty; d++) {
        uint32_t bi = o->dirty[d], len = pg_open_block_len(o, bi), metric;
        size_t nvals = 0;
        int64_t g, ts;
        struct pg_open_vals *v;
        for (uint32_t k = 0; k < len && rc == 0; k++) {
            pg_open_block_entry(o, bi, k, &metric, &g, &ts, &v);
            if (v->mset < 0)
                v->mset = mset_find_m(tc, v->m, v->n);
            if (v->mset < 0) {
                char why[96];
                snprintf(why, sizeof why, "method set of open bucket of metric %u not registered",
                         metric);
                rc = copy_cancel(&ci, why, err, errlen);
            }
            nvals += v->n;
        }
        if (rc == 0) {
            copy_block(&ci.buf, o, bi, len, nvals);
            *nent += len;
            rc = copy_send(&ci, d + 1 == o->ndirty, err, errlen);
        }
    }
    return copy_end(&ci, rc, NULL, err, errlen);
}

static size_t count_tails(const struct pg_batch *b)
{
    size_t k = 0;
    for (size_t i = 0; i < b->nwindows; i++)
        k += b->windows[i].tail != NULL;
    return k;
}

static const char copy_tails_sql[] =
    "COPY gpuagg_stage_tails (metric, lsn, rec) FROM STDIN (FORMAT binary)";

/* COPY b's window tail records into the staging table (insert_tails_sql
 * moves them, after the snapshots). */
static int copy_tails(struct pg_txn_conn *tc, const struct pg_batch *b, char *err, size_t errlen)
{
    struct copy_in ci;
    size_t left = count_tails(b);
    int rc = copy_begin(&ci, tc->c, copy_tails_sql, err, errlen);
    for (size_t i = 0; rc == 0 && i < b->nwindows; i++) {
        const struct pg_batch_window *w = &b->windows[i];
        if (!w->tail)
            continue;
        pg_util_put_i16(&ci.buf, 3);
        pg_util_put_i32(&ci.buf, 4);
        pg_util_put_i32(&ci.buf, (int32_t)w->metric);
        pg_util_put_i32(&ci.buf, 8);
        pg_util_put_i64(&ci.buf, (int64_t)w->lsn);
        pg_util_put_i32(&ci.buf, (int32_t)w->tlen);
        pg_util_put(&ci.buf, w->tail, w->tlen);
        rc = copy_send(&ci, --left == 0, err, errlen);
    }
    return copy_end(&ci, rc, NULL, err, errlen);
}

/* The pipelined statements after the COPY, with their binary parameters. */
struct step {
    const char *what;
    const char *sql;
    char sqlbuf[800];                /* where sql is built here */
    int nparams;
    struct pg_util_buf p[MAX_PARAMS];
    char text[MAX_PARAMS][64];       /* small text parameters */
    int text_param[MAX_PARAMS];      /* 0: p[i] binary; 1: text[i] */
};

static void step_text(struct step *s, int i, const char *fmt, uint64_t v)
{
    snprintf(s->text[i], sizeof s->text[i], fmt, v);
    s->text_param[i] = 1;
}

static int send_step(PGconn *c, struct step *s)
{
    const char *vals[MAX_PARAMS];
    int lens[MAX_PARAMS], fmts[MAX_PARAMS];
    for (int i = 0; i < s->nparams; i++) {
        if (s->text_param[i] == 1) {
            vals[i] = s->text[i];
            lens[i] = 0;
            fmts[i] = 0;
        } else {
            if (s->p[i].oom)
                return GA_ENOMEM;
            vals[i] = (const char *)s->p[i].p;
            lens[i] = (int)s->p[i].len;
            fmts[i] = 1;
        }
    }
    return PQsendQueryParams(c, s->sql, s->nparams, NULL, vals, lens, fmts, 0) == 1 ? 0 : GA_EIO;
}

/* Build the steps for b; returns their count. */
static int nparts(uint64_t parts)
{
    return parts ? __builtin_popcountll(parts) : GA_PARTITIONS;
}

static int build_steps(const struct pg_batch *b, const struct pg_open *o, size_t nreplace,
                       size_t nmerge, int update, uint64_t batch_id, uint64_t parts, int probe,
                       struct step *st)
{
    int n = 0;
    char def[4096], methods[4096];
    if (nreplace && update) {
        struct step *s = &st[n++];
        *s = (struct step){ .what = "update buckets" };
        snprintf(s->sqlbuf, sizeof s->sqlbuf, update_aggs_fmt, nreplace, nreplace, nreplace);
        s->sql = s->sqlbuf;
    } else if (nreplace) {
        st[n++] = (struct step){ .what = "upsert buckets", .sql = upsert_aggs_sql };
    }
    if (nmerge)
        st[n++] = (struct step){ .what = "merge buckets", .sql = merge_aggs_sql };
    if (o && o->ndirty)
        st[n++] = (struct step){ .what = "write open blocks", .sql = upsert_blocks_sql };
    if (b->npolicies) {
        struct step *s = &st[n++];
        *s = (struct step){ .what = "upsert policies", .sql = upsert_policy_sql, .nparams = 4 };
        pg_util_array_begin(&s->p[0], PG_UTIL_TEXTOID, b->npolicies);
        pg_util_array_begin(&s->p[1], PG_UTIL_INT8OID, b->npolicies);
        pg_util_array_begin(&s->p[2], PG_UTIL_TEXTOID, b->npolicies);
        pg_util_array_begin(&s->p[3], PG_UTIL_TEXTOID, b->npolicies);
        for (size_t i = 0; i < b->npolicies; i++) {
            const struct ga_policy *p = &b->policies[i];
            pg_schema_policy_json(p, def, sizeof def, methods, sizeof methods);
            pg_util_array_bytes(&s->p[0], p->name, strlen(p->name));
            pg_util_array_i64(&s->p[1], p->back_window);
            pg_util_array_bytes(&s->p[2], def, strlen(def));
            pg_util_array_bytes(&s->p[3], methods, strlen(methods));
        }
    }
    if (b->ndefs) {
        struct step *s = &st[n++];
        *s = (struct step){ .what = "insert metrics", .sql = insert_metrics_sql, .nparams = 5 };
        pg_util_array_begin(&s->p[0], PG_UTIL_INT4OID, b->ndefs);
        pg_util_array_begin(&s->p[1], PG_UTIL_TEXTOID, b->ndefs);
        pg_util_array_begin(&s->p[2], PG_UTIL_TEXTOID, b->ndefs);
        pg_util_array_begin(&s->p[3], PG_UTIL_UUIDOID, b->ndefs);
        pg_util_array_begin(&s->p[4], PG_UTIL_INT8OID, b->ndefs);
        for (size_t i = 0; i < b->ndefs; i++) {
            size_t len = strlen(b->defs[i].name);
            uint8_t id[16];
            ga_metric_uuid(b->defs[i].name, len, id);
            pg_util_array_i32(&s->p[0], (int32_t)b->defs[i].id);
            pg_util_array_bytes(&s->p[1], b->defs[i].name, len);
            pg_util_array_bytes(&s->p[2], b->defs[i].policy, strlen(b->defs[i].policy));
            pg_util_array_bytes(&s->p[3], id, sizeof id);
            pg_util_array_i64(&s->p[4], o ? pg_open_placed_block(o, b->defs[i].id) : -1);
        }
    }
    size_t nplace = 0;                   /* metrics placed whose row is not written here */
    for (size_t i = 0; o && i < o->nplaced; i++)
        nplace += !pg_batch_has_def(b, o->placed[i].metric);
    if (nplace) {
        struct step *s = &st[n++];
        *s = (struct step){ .what = "place metrics", .sql = place_metrics_sql, .nparams = 2 };
        pg_util_array_begin(&s->p[0], PG_UTIL_INT4OID, nplace);
        pg_util_array_begin(&s->p[1], PG_UTIL_INT8OID, nplace);
        for (size_t i = 0; i < o->nplaced; i++) {
            if (pg_batch_has_def(b, o->placed[i].metric))
                continue;
            pg_util_array_i32(&s->p[0], (int32_t)o->placed[i].metric);
            pg_util_array_i64(&s->p[1], o->blk[o->placed[i].blk].id);
        }
    }
    if (b->nlate) {
        struct step *s = &st[n++];
        *s = (struct step){ .what = "insert late points", .sql = insert_late_sql, .nparams = 4 };
        pg_util_array_begin(&s->p[0], PG_UTIL_INT4OID, b->nlate);
        pg_util_array_begin(&s->p[1], PG_UTIL_INT8OID, b->nlate);
        pg_util_array_begin(&s->p[2], PG_UTIL_FLOAT8OID, b->nlate);
        pg_util_array_begin(&s->p[3], PG_UTIL_TEXTOID, b->nlate);
        for (size_t i = 0; i < b->nlate; i++) {
            const char *why = ga_late_reason_name(b->late[i].reason);
            pg_util_array_i32(&s->p[0], (int32_t)b->late[i].metric);
            pg_util_array_i64(&s->p[1], b->late[i].ts);
            pg_util_array_f64(&s->p[2], b->late[i].value);
            pg_util_array_bytes(&s->p[3], why, strlen(why));
        }
    }
    if (b->ncounts) {
        struct step *s = &st[n++];
        *s = (struct step){ .what = "count points", .sql = update_counts_sql, .nparams = 2 };
        pg_util_array_begin(&s->p[0], PG_UTIL_INT4OID, b->ncounts);
        pg_util_array_begin(&s->p[1], PG_UTIL_INT8OID, b->ncounts);
        for (size_t i = 0; i < b->ncounts; i++) {
            pg_util_array_i32(&s->p[0], (int32_t)b->counts[i].metric);
            pg_util_array_i64(&s->p[1], (int64_t)b->counts[i].points);
        }
    }
    /* whole windows first: their statement drops the metrics' older tails,
     * then the tails staged by copy_tails (some may follow a snapshot of
     * the same metric in this batch) */
    size_t nsnap = 0, ntail = count_tails(b);
    for (size_t i = 0; i < b->nwindows; i++)
        nsnap += b->windows[i].snap != NULL;
    if (nsnap) {
        struct step *s = &st[n++];
        *s = (struct step){ .what = "upsert windows", .sql = upsert_windows_sql, .nparams = 3 };
        pg_util_array_begin(&s->p[0], PG_UTIL_INT4OID, nsnap);
        pg_util_array_begin(&s->p[1], PG_UTIL_BYTEAOID, nsnap);
        pg_util_array_begin(&s->p[2], PG_UTIL_INT8OID, nsnap);
        for (size_t i = 0; i < b->nwindows; i++) {
            const struct pg_batch_window *w = &b->windows[i];
            if (!w->snap)
                continue;
            pg_util_array_i32(&s->p[0], (int32_t)w->metric);
            pg_util_array_bytes(&s->p[1], w->snap, w->len);
            pg_util_array_i64(&s->p[2], (int64_t)w->lsn);
        }
    }
    if (ntail)
        st[n++] = (struct step){ .what = "insert window tails", .sql = insert_tails_sql };
    if (b->has_windows) {
        size_t np = 0;
        for (int p = 0; p < GA_PARTITIONS; p++)
            np += b->part_lsn[p] != 0;
        struct step *s = &st[n++];
        *s = (struct step){ .what = "advance partitions", .sql = partitions_sql, .nparams = 2 };
        pg_util_array_begin(&s->p[0], PG_UTIL_INT4OID, np);
        pg_util_array_begin(&s->p[1], PG_UTIL_INT8OID, np);
        for (int p = 0; p < GA_PARTITIONS; p++) {
            if (!b->part_lsn[p])
                continue;
            pg_util_array_i32(&s->p[0], p);
            pg_util_array_i64(&s->p[1], (int64_t)b->part_lsn[p]);
        }
    }
    if (b->nrejects) {
        struct step *s = &st[n++];
        *s = (struct step){ .what = "record rejected rows", .sql = insert_rejects_sql,
                            .nparams = 8 };
        pg_util_array_begin(&s->p[0], PG_UTIL_INT4OID, b->nrejects);
        pg_util_array_begin(&s->p[1], PG_UTIL_INT4OID, b->nrejects);
        pg_util_array_begin(&s->p[2], PG_UTIL_INT8OID, b->nrejects);
        pg_util_array_begin(&s->p[3], PG_UTIL_INT8OID, b->nrejects);
        pg_util_array_begin(&s->p[4], PG_UTIL_FLOAT8OID, b->nrejects);
        pg_util_array_begin(&s->p[5], PG_UTIL_INT4OID, b->nrejects);
        pg_util_array_begin(&s->p[6], PG_UTIL_TEXTOID, b->nerrors);
        pg_util_array_begin(&s->p[7], PG_UTIL_INT4OID, b->nrejects);
        for (size_t i = 0; i < b->nrejects; i++) {
            const struct pg_batch_reject *r = &b->rejects[i];
            pg_util_array_i32(&s->p[0], (int32_t)r->metric);
            pg_util_array_i32(&s->p[1], r->method);
            pg_util_array_i64(&s->p[2], r->granularity_ns);
            pg_util_array_i64(&s->p[3], r->ts);
            pg_util_array_f64(&s->p[4], r->value);
            pg_util_array_i32(&s->p[5], r->kind | (r->has_value ? 256 : 0));
            pg_util_array_i32(&s->p[7], (int32_t)r->error);
        }
        for (size_t i = 0; i < b->nerrors; i++)
            pg_util_array_bytes(&s->p[6], b->errors[i].text, strlen(b->errors[i].text));
    }
    if (probe)
        return n;
    struct step *s = &st[n++];
    *s = (struct step){ .what = "advance checkpoint", .sql = checkpoint_sql, .nparams = 3 };
    step_text(s, 0, "%" PRIu64, b->lsn);
    pg_util_array_begin(&s->p[1], PG_UTIL_INT4OID, (size_t)nparts(parts));
    for (int p = 0; p < GA_PARTITIONS; p++)
        if (!parts || (parts >> p & 1))
            pg_util_array_i32(&s->p[1], p);
    step_text(s, 2, "%" PRId64, batch_id & INT64_MAX);
    st[n++] = (struct step){ .what = "commit", .sql = "COMMIT" };
    return n;
}

/* Send the steps in one pipeline and read every result.  Returns 0 when all
 * succeeded (the transaction is committed). */
static int run_pipeline(PGconn *c, struct step *st, int n, int owned, int64_t t0,
                        struct pg_txn_timing *t, char state[6], char *err, size_t errlen)
{
    int rc = 0, failed = 0;
    state[0] = 0;
    if (PQenterPipelineMode(c) != 1) {
        pg_util_errcopy(err, errlen, PQerrorMessage(c));
        return fail_code(c);
    }
    /* A flush request after each step: the server sends each result when
     * its statement ends (not all at the sync), so step_ms times each one. */
    for (int i = 0; i < n && !rc; i++)
        if ((rc = send_step(c, &st[i])) < 0 || (rc = PQsendFlushRequest(c) == 1 ? 0 : GA_EIO) < 0)
            pg_util_errcopy(err, errlen, rc == GA_ENOMEM ? "out of memory" : PQerrorMessage(c));
    if (rc < 0 || PQpipelineSync(c) != 1) {
        if (!rc)
            pg_util_errcopy(err, errlen, PQerrorMessage(c));
        PQexitPipelineMode(c);
        return fail_code(c);
    }
    int64_t commit_t0 = 0, step_t0 = t0;
    t->nsteps = n;
    for (int i = 0; i < n; i++) {
        PGresult *r = PQgetResult(c);
        if (!r) {
            pg_util_errcopy(err, errlen, PQerrorMessage(c));
            return GA_EIO;
        }
        ExecStatusType es = PQresultStatus(r);
        if (es != PGRES_COMMAND_OK && !failed) {
            char why[400];
            const char *ss = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            pg_util_result_error(why, sizeof why, c, r);
            snprintf(err, errlen, "%s: %s", st[i].what, why);
            snprintf(state, 6, "%s", ss ? ss : "");
            failed = 1;
        } else if (es == PGRES_COMMAND_OK && st[i].sql == checkpoint_sql &&
                   atoi(PQcmdTuples(r)) != owned && !failed) {
            snprintf(err, errlen, "advance checkpoint: %s of %d partitions rows", PQcmdTuples(r),
                     owned);
            failed = 1;
        }
        PQclear(r);
        while ((r = PQgetResult(c)) != NULL)          /* the NULL ending each query */
            PQclear(r);
        if (i == 0)
            t->upsert_ms = ms_since(t0);
        t->step_what[i] = st[i].what;
        t->step_ms[i] = ms_since(step_t0);
        step_t0 = ga_now_mono_ns();
        if (st[i].sql == checkpoint_sql)
            commit_t0 = ga_now_mono_ns();
    }
    if (commit_t0)
        t->commit_ms = ms_since(commit_t0);
    PGresult *r = PQgetResult(c);                     /* PGRES_PIPELINE_SYNC */
    int synced = r && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
    PQclear(r);
    if (!synced || PQexitPipelineMode(c) != 1) {
        if (!failed)
            pg_util_errcopy(err, errlen, PQerrorMessage(c));
        return GA_EIO;
    }
    return failed ? fail_code(c) : 0;
}

/* The fresh buckets of b (pg_fresh.h) straight into buckets, under a
 * savepoint.  Returns 0 with *nfresh bucket rows written (fresh[] cleared
 * when one turned out to exist: the savepoint was rolled back and every
 * bucket goes through the upsert), or an error of the transaction. */
static int copy_fresh(struct pg_txn_conn *tc, const struct pg_batch *b, uint8_t *fresh,
                      size_t *nfresh, struct pg_txn_timing *t, char *err, size_t errlen)
{
    PGconn *c = tc->c;
    int unique, rc;
    int64_t t0 = ga_now_mono_ns();
    if ((rc = pg_util_exec(c, "SAVEPOINT gpuagg_fresh", err, errlen)) < 0)
        return rc;
    rc = copy_aggs(tc, copy_fresh_sql, b, fresh, 1, NULL, nfresh, NULL, &unique, err, errlen);
    if (rc == 0) {
        rc = pg_util_exec(c, "RELEASE SAVEPOINT gpuagg_fresh", err, errlen);
    } else if (unique && PQstatus(c) == CONNECTION_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        if ((rc = pg_util_exec(c, "ROLLBACK TO SAVEPOINT gpuagg_fresh", err, errlen)) == 0) {
            ga_log(GA_LOG_INFO, "storage_fresh_fallback", "rows=%zu reason=\"%s\"", *nfresh, why);
            memset(fresh, 0, b->naggs);
            *nfresh = 0;
            t->fresh_fallback = 1;
        }
    }
    t->fresh_ms = ms_since(t0);
    return rc;
}

/* One try of the flush transaction; with probe, the same statements but
 * for the checkpoint, rolled back (pg_txn_probe). */
static int write_once(struct pg_txn_conn *tc, const struct pg_batch *b, const struct pg_fresh_map *hw,
                      struct pg_open *o, uint64_t batch_id, int update, int probe,
                      struct pg_txn_timing *t, char state[6], char *err, size_t errlen)
{
    PGconn *c = tc->c;
    struct step st[MAX_STEPS];
    int n = 0, rc, unique;
    int64_t t0 = ga_now_mono_ns(), t1;
    uint8_t *fresh = NULL;
    size_t nfresh = 0, nstaged = 0, nmerge = 0, fresh_rows = 0;
    memset(t, 0, sizeof *t);
    if (!c) {
        snprintf(err, errlen, "not connected");
        return GA_EIO;
    }
    if ((rc = batch_parts(tc, b, &t->partitions_created, err, errlen)) < 0 ||
        (rc = ensure_msets(tc, b, o, err, errlen)) < 0)
        goto out;
    t->partitions_ms = ms_since(t0);
    tc->merged_batch = 0;
    if (b->naggs > tc->cap_merged) {
        uint8_t *m = realloc(tc->merged, b->naggs);
        int32_t *pm = m ? realloc(tc->prev_mset, b->naggs * sizeof *pm) : NULL;
        tc->merged = m ? m : tc->merged;
        if (!pm) {
            snprintf(err, errlen, "out of memory");
            rc = GA_ENOMEM;
            goto out;
        }
        tc->prev_mset = pm;
        tc->cap_merged = b->naggs;
    }
    if (b->naggs)
        memset(tc->merged, 0, b->naggs);
    if (hw && hw->n && b->naggs) {
        if (!(fresh = malloc(b->naggs))) {
            snprintf(err, errlen, "out of memory");
            rc = GA_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < b->naggs; i++)
            fresh_rows += fresh[i] = (uint8_t)pg_fresh(hw, &b->aggs[i]);
    }
    if ((rc = pg_util_exec(c, begin_sql, err, errlen)) < 0)
        goto fail;
    if (fresh_rows && (rc = copy_fresh(tc, b, fresh, &nfresh, t, err, errlen)) < 0)
        goto fail;
    t->rows_fresh = nfresh;
    t1 = ga_now_mono_ns();
    if (b->naggs && (!fresh_rows || t->fresh_fallback || fresh_rows < b->naggs) &&
        (rc = copy_aggs(tc, copy_stage_sql, b, nfresh ? fresh : NULL, 0, hw, &nstaged, &nmerge,
                        &unique, err, errlen)) < 0)
        goto fail;
    t->copy_ms = ms_since(t1);
    if (o && o->ndirty) {
        t1 = ga_now_mono_ns();
        if ((rc = copy_blocks(tc, o, &t->open_entries, err, errlen)) < 0)
            goto fail;
        t->blocks_ms = ms_since(t1);
        t->open_blocks = o->ndirty;
        t->open_changed = o->npend;
    }
    if (count_tails(b)) {
        t1 = ga_now_mono_ns();
        if ((rc = copy_tails(tc, b, err, errlen)) < 0)
            goto fail;
        t->tails_ms = ms_since(t1);
    }
    t->rows = nfresh + nstaged;
    t->rows_merged = nmerge;
    t->rows_updated = update ? nstaged - nmerge : 0;
    n = build_steps(b, o, nstaged - nmerge, nmerge, update, batch_id, tc->own_parts, probe, st);
    rc = run_pipeline(c, st, n, nparts(tc->own_parts), ga_now_mono_ns(), t, state, err, errlen);
    if (rc == 0 && probe) {
        if ((rc = pg_util_exec(c, "ROLLBACK", err, errlen)) < 0)
            rc = GA_EIO;
        goto out;
    }
    if (rc == 0) {
        tc->merged_batch = batch_id;
        goto out;
    }
fail:
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE) {
        char why[256];
        if (pg_util_exec(c, "ROLLBACK", why, sizeof why) < 0)
            rc = GA_EIO;
    }
    if (rc == GA_EDB)
        rc = fail_code(c);
    /* A failure may come from a partition dropped behind our back: forget
     * the cache so the next attempt checks again. */
    tc->nparts = 0;
out:
    for (int i = 0; i < n; i++)
        for (int k = 0; k < MAX_PARAMS; k++)
            pg_util_buf_free(&st[i].p[k]);
    free(fresh);
    t->total_ms = ms_since(t0);
    return rc;
}

int pg_txn_write(struct pg_txn_conn *tc, const struct pg_batch *b, const struct pg_fresh_map *hw,
              struct pg_open *o, uint64_t batch_id, struct pg_txn_timing *t, char *err, size_t errlen)
{
    char state[6] = "";
    int rc = write_once(tc, b, hw, o, batch_id, 1, 0, t, state, err, errlen);
    if (rc < 0 && !strcmp(state, PG_TXN_UPDATE_MISS) && tc->c && PQstatus(tc->c) == CONNECTION_OK) {
        ga_log(GA_LOG_INFO, "storage_update_fallback", "reason=\"%s\"", err);
        rc = write_once(tc, b, hw, o, batch_id, 0, 0, t, state, err, errlen);
        t->update_fallback = 1;
    }
    return rc;
}

int pg_txn_probe(struct pg_txn_conn *tc, const struct pg_batch *b, const struct pg_fresh_map *hw,
              char *err, size_t errlen)
{
    struct pg_txn_timing t;
    char state[6] = "";
    /* the upsert, not the UPDATE: a probe must fail only on its data */
    return write_once(tc, b, hw, NULL, 0, 0, 1, &t, state, err, errlen);
}

static const char high_water_sql[] =
    "SELECT u.m, u.g, x.ts, x.mset FROM unnest($1::int4[], $2::int8[]) u(m, g),\n"
    "LATERAL (SELECT ts, mset FROM buckets b WHERE b.metric = u.m AND b.granularity = u.g\n"
    "         ORDER BY ts DESC LIMIT 1) x";

int pg_txn_high_water(struct pg_txn_conn *tc, const struct ga_agg *aggs, size_t naggs, struct pg_fresh_map *hw,
                   char *err, size_t errlen)
{
    struct pg_util_buf p[2] = { { 0 } };
    size_t n = 0;
    int rc = 0;
    /* aggs are sorted by (granularity, partition, metric, ts, method):
     * distinct pairs are runs (a pair spanning partitions repeats;
     * harmless). */
    for (int pass = 0; pass < 2; pass++) {
        size_t k = 0;
        for (size_t i = 0; i < naggs; i++) {
            const struct ga_agg *a = &aggs[i], *q = i ? &aggs[i - 1] : NULL;
            if (q && q->metric == a->metric && q->granularity_ns == a->granularity_ns)
                continue;
            if (pass) {
                pg_util_array_i32(&p[0], (int32_t)a->metric);
                pg_util_array_i64(&p[1], a->granularity_ns);
            }
            k++;
        }
        if (!pass) {
            n = k;
            pg_util_array_begin(&p[0], PG_UTIL_INT4OID, n);
            pg_util_array_begin(&p[1], PG_UTIL_INT8OID, n);
        }
    }
    if (!n)
        goto out;
    if (p[0].oom || p[1].oom) {
        snprintf(err, errlen, "out of memory");
        rc = GA_ENOMEM;
        goto out;
    }
    const char *vals[2] = { (const char *)p[0].p, (const char *)p[1].p };
    int lens[2] = { (int)p[0].len, (int)p[1].len }, fmts[2] = { 1, 1 };
    PGresult *r = PQexecParams(tc->c, high_water_sql, 2, NULL, vals, lens, fmts, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_util_result_error(err, errlen, tc->c, r);
        rc = fail_code(tc->c);
    } else {
        for (int i = 0; i < PQntuples(r) && !rc; i++) {
            struct ga_agg a = { .metric = (uint32_t)pg_util_get_i32(PQgetvalue(r, i, 0)),
                                .granularity_ns = pg_util_get_i64(PQgetvalue(r, i, 1)),
                                .ts = pg_util_get_i64(PQgetvalue(r, i, 2)) };
            rc = pg_fresh_note(hw, &a, 1);
            if (!rc)
                pg_fresh_set_mset(hw, &a, pg_util_get_i32(PQgetvalue(r, i, 3)));
        }
    }
    PQclear(r);
out:
    for (int i = 0; i < 2; i++)
        pg_util_buf_free(&p[i]);
    return rc;
}

void pg_txn_note_msets(const struct pg_txn_conn *tc, const struct pg_batch *b, uint64_t batch_id,
                    struct pg_fresh_map *hw)
{
    int ours = tc->merged_batch == batch_id && tc->cap_merged >= b->naggs;
    for (size_t i = 0, j; i < b->naggs; i = j) {
        j = bucket_end(b, i);
        int32_t id = ours ? mset_find(tc, mset_hash(&b->aggs[i], j - i), &b->aggs[i], j - i) : -1;
        if (ours && tc->merged[i])                /* stored: the union with what was there */
            id = id >= 0 && tc->prev_mset[i] >= 0 ? mset_union(tc, tc->prev_mset[i], id) : -1;
        pg_fresh_set_mset(hw, &b->aggs[i], id);
    }
}

int pg_txn_maintain(struct pg_txn_conn *tc, int64_t now_ns, int ahead_days, int *created, int *dropped,
                 char *err, size_t errlen)
{
    int rc;
    *created = *dropped = 0;
    if (ahead_days > 62)
        ahead_days = 62;
    if ((rc = pg_schema_retention(tc->c, now_ns, err, errlen)) < 0)
        return fail_code(tc->c);
    *dropped = rc;
    if (rc > 0)
        tc->nparts = 0;
    if ((rc = pg_schema_ensure_ahead(tc->c, now_ns, (int64_t)ahead_days * PG_SCHEMA_DAY_NS, err,
                               errlen)) < 0)
        return fail_code(tc->c);
    *created = rc;
    return 0;
}
