/* pg_schema.c — embedded migrations and schema helpers (see pg_schema.h,
 * docs/STORAGE.md).  A migration, once released, is never edited: changes
 * go in a new step appended to `steps`. */
#include "storage/pg_schema.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/ga_partition.h"
#include "storage/pg_util.h"

/* pg_advisory_xact_lock key: "gpuagg" in ASCII. */
#define PGS_LOCK_KEY "106240213050983"

/* gpuagg_ensure_partition(day): create the day's partition of aggregates
 * (with fillfactor ff) once, under an advisory lock.  v1 made it with 80,
 * v2 replaced it with 50 ("Fresh buckets and HOT updates" in
 * docs/STORAGE.md). */
#define ENSURE_PARTITION_FN(ff)                                                             \
    "FUNCTION gpuagg_ensure_partition(day bigint) RETURNS boolean\n"                         \
    "    LANGUAGE plpgsql AS $$\n"                                                          \
    "DECLARE\n"                                                                             \
    "    lo bigint := day * 86400000000000;\n"                                              \
    "    nm text := 'aggregates_' || to_char(timestamp '1970-01-01' + day * interval '1 day',\n" \
    "                                        'YYYYMMDD');\n"                                \
    "BEGIN\n"                                                                               \
    "    PERFORM pg_advisory_xact_lock(" PGS_LOCK_KEY " + 1);\n"                             \
    "    IF EXISTS (SELECT 1 FROM aggregate_partitions WHERE from_ns = lo) THEN\n"          \
    "        RETURN false;\n"                                                               \
    "    END IF;\n"                                                                         \
    "    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF aggregates '\n"         \
    "                   'FOR VALUES FROM (%s) TO (%s) WITH (fillfactor = " ff ")',\n"       \
    "                   nm, lo, lo + 86400000000000);\n"                                    \
    "    INSERT INTO aggregate_partitions VALUES (nm, lo, lo + 86400000000000);\n"          \
    "    RETURN true;\n"                                                                    \
    "END $$;\n"

static const char schema_v1[] =
    "CREATE TABLE methods (\n"
    "    id   smallint PRIMARY KEY,\n"
    "    name text NOT NULL UNIQUE\n"
    ");\n"
    "CREATE TABLE archive_policies (\n"
    "    name        text PRIMARY KEY,\n"
    "    back_window bigint NOT NULL,\n"
    "    definition  jsonb NOT NULL,\n"
    "    methods     text[] NOT NULL,\n"
    "    updated     timestamptz NOT NULL DEFAULT now()\n"
    ");\n"
    "CREATE TABLE metrics (\n"
    "    id      integer PRIMARY KEY CHECK (id >= 0),\n"
    "    name    text NOT NULL UNIQUE,\n"
    "    policy  text NOT NULL REFERENCES archive_policies (name),\n"
    "    points  bigint NOT NULL DEFAULT 0,\n"
    "    created timestamptz NOT NULL DEFAULT now()\n"
    ");\n"
    /* columns and key ordered for alignment: 32-byte heap tuples, 24-byte
     * index keys */
    "CREATE TABLE aggregates (\n"
    "    metric      integer NOT NULL,\n"
    "    method      smallint NOT NULL,\n"
    "    granularity bigint NOT NULL,\n"
    "    ts          bigint NOT NULL,\n"
    "    value       double precision NOT NULL,\n"
    "    PRIMARY KEY (metric, method, granularity, ts)\n"
    ") PARTITION BY RANGE (ts);\n"
    "CREATE TABLE aggregate_partitions (\n"
    "    name    text PRIMARY KEY,\n"
    "    from_ns bigint NOT NULL UNIQUE,\n"
    "    to_ns   bigint NOT NULL\n"
    ");\n"
    "CREATE TABLE late_points (\n"
    "    metric   integer NOT NULL,\n"
    "    ts       bigint NOT NULL,\n"
    "    value    double precision NOT NULL,\n"
    "    reason   text NOT NULL,\n"
    "    received timestamptz NOT NULL DEFAULT now(),\n"
    "    PRIMARY KEY (metric, ts, reason, value)\n"
    ");\n"
    "CREATE TABLE checkpoints (\n"
    "    id            smallint PRIMARY KEY CHECK (id = 1),\n"
    "    committed_lsn bigint NOT NULL,\n"
    "    window_lsn    bigint NOT NULL,\n"
    "    last_batch    bigint NOT NULL,\n"
    "    updated       timestamptz NOT NULL DEFAULT now()\n"
    ");\n"
    "INSERT INTO checkpoints (id, committed_lsn, window_lsn, last_batch) VALUES (1, 0, 0, 0);\n"
    "CREATE TABLE metric_windows (\n"
    "    metric   integer PRIMARY KEY,\n"
    "    lsn      bigint NOT NULL,\n"
    "    snapshot bytea NOT NULL,\n"
    "    updated  timestamptz NOT NULL DEFAULT now()\n"
    ");\n"
    "CREATE FUNCTION gpuagg_ns(t timestamptz) RETURNS bigint\n"
    "    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n"
    "    AS $$ SELECT (extract(epoch FROM t) * 1000000000)::bigint $$;\n"
    "CREATE FUNCTION gpuagg_time(ns bigint) RETURNS timestamptz\n"
    "    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n"
    "    AS $$ SELECT timestamptz '1970-01-01 00:00:00+00'\n"
    "                 + (ns / 1000000000) * interval '1 second'\n"
    "                 + (ns % 1000000000 / 1000) * interval '1 microsecond' $$;\n"
    "CREATE VIEW gpuagg_measures AS\n"
    "    SELECT m.name AS metric, mt.name AS method,\n"
    "           a.granularity / 1e9::double precision AS granularity_s,\n"
    "           gpuagg_time(a.ts) AS time, a.value,\n"
    "           a.ts AS ts_ns, a.granularity AS granularity_ns\n"
    "      FROM aggregates a\n"
    "      JOIN metrics m ON m.id = a.metric\n"
    "      JOIN methods mt ON mt.id = a.method;\n"
    "CREATE " ENSURE_PARTITION_FN("80")
    "CREATE FUNCTION gpuagg_retention(now_ns bigint) RETURNS SETOF text\n"
    "    LANGUAGE plpgsql AS $$\n"
    "DECLARE\n"
    "    unbounded boolean;\n"
    "    reach bigint;\n"
    "    r record;\n"
    "BEGIN\n"
    "    SELECT bool_or((d->>'timespan_ns')::bigint = 0),\n"
    "           max((d->>'timespan_ns')::bigint + (d->>'granularity_ns')::bigint)\n"
    "      INTO unbounded, reach\n"
    "      FROM archive_policies p CROSS JOIN LATERAL jsonb_array_elements(p.definition) d\n"
    "     WHERE p.name IN (SELECT policy FROM metrics);\n"
    "    IF reach IS NULL OR unbounded THEN\n"
    "        RETURN;\n"
    "    END IF;\n"
    "    PERFORM pg_advisory_xact_lock(" PGS_LOCK_KEY " + 1);\n"
    "    FOR r IN SELECT name FROM aggregate_partitions\n"
    "              WHERE to_ns <= now_ns - reach ORDER BY from_ns LOOP\n"
    "        EXECUTE format('DROP TABLE IF EXISTS %I', r.name);\n"
    "        DELETE FROM aggregate_partitions WHERE name = r.name;\n"
    "        RETURN NEXT r.name;\n"
    "    END LOOP;\n"
    "END $$;\n";

/* Fill the methods lookup table with every valid ga_method_t. */
static int seed_methods(PGconn *c, char *err, size_t errlen)
{
    char ids[4096], names[8192], nm[GA_METHOD_NAME_MAX];
    size_t io = 0, no = 0;
    int first = 1;
    ids[io++] = '{';
    names[no++] = '{';
    for (int rate = 0; rate < 2; rate++) {
        for (int b = 1; b <= 0xff; b++) {       /* every base the methods table knows */
            ga_method_t m = (ga_method_t)(b | (rate ? GA_M_RATE : 0));
            if (!ga_method_info(m))
                continue;
            io += (size_t)snprintf(ids + io, sizeof ids - io, "%s%u", first ? "" : ",", m);
            no += (size_t)snprintf(names + no, sizeof names - no, "%s\"%s\"", first ? "" : ",",
                                   ga_method_name(m, nm));
            first = 0;
        }
    }
    snprintf(ids + io, sizeof ids - io, "}");
    snprintf(names + no, sizeof names - no, "}");
    const char *params[] = { ids, names };
    PGresult *r = PQexecParams(c,
                               "INSERT INTO methods (id, name) "
                               "SELECT * FROM unnest($1::smallint[], $2::text[])",
                               2, NULL, params, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        pgu_result_error(err, errlen, c, r);
        rc = GA_EDB;
    }
    PQclear(r);
    return rc;
}

/* v2: partitions with fillfactor 50 (was 80).  Each flush rewrites the
 * open buckets; one round of rewrites touches every row of the newest
 * stretch, and with 20% free room most new versions left their page
 * (non-HOT: an index insert each, then bottom-up index deletion).  At 50%
 * they stay on the page (HOT): ~1.9x faster updates for ~1.5x heap
 * (docs/STORAGE.md "Fresh buckets and HOT updates").  Existing partitions
 * get the setting for their future writes. */
static const char schema_v2[] =
    "CREATE OR REPLACE " ENSURE_PARTITION_FN("50")
    "DO $$\n"
    "DECLARE r record;\n"
    "BEGIN\n"
    "    FOR r IN SELECT name FROM aggregate_partitions LOOP\n"
    "        EXECUTE format('ALTER TABLE IF EXISTS %I SET (fillfactor = 50)', r.name);\n"
    "    END LOOP;\n"
    "END $$;\n";

/* v3: the read side keeps what Gnocchi's get_aggregated_measures() keeps.
 * Rows written by earlier batches stay in their partition until retention
 * drops it, but per (metric, granularity, method) only the buckets newer
 * than the newest stored bucket minus the archive's timespan are the
 * series (docs/SEMANTICS.md "Timespan").  The view walks the metric's
 * policy (each granularity with its timespan, each method), finds the
 * newest bucket of the series with one index descent, and reads the rows
 * past its horizon; quals on metric, method, granularity and ts_ns reach
 * those scans, so a filtered read stays an index range scan.  Columns as
 * in v1; gpuaggctl query reads this same view. */
static const char schema_v3[] =
    "CREATE OR REPLACE VIEW gpuagg_measures AS\n"
    "    SELECT m.name AS metric, mt.name AS method,\n"
    "           a.granularity / 1e9::double precision AS granularity_s,\n"
    "           gpuagg_time(a.ts) AS time, a.value,\n"
    "           a.ts AS ts_ns, a.granularity AS granularity_ns\n"
    "      FROM metrics m\n"
    "      JOIN archive_policies p ON p.name = m.policy\n"
    "      CROSS JOIN LATERAL (SELECT (d->>'granularity_ns')::bigint AS g,\n"
    "                                 (d->>'timespan_ns')::bigint AS span\n"
    "                            FROM jsonb_array_elements(p.definition) d) s\n"
    "      JOIN methods mt ON mt.name = ANY (p.methods)\n"
    "      CROSS JOIN LATERAL (SELECT max(x.ts) AS last FROM aggregates x\n"
    "                           WHERE x.metric = m.id AND x.method = mt.id\n"
    "                             AND x.granularity = s.g) l\n"
    "      JOIN aggregates a ON a.metric = m.id AND a.method = mt.id AND a.granularity = s.g\n"
    "                       AND (s.span = 0 OR a.ts > l.last - s.span);\n";

/* v4: one row per bucket.  A row holds every method value of one
 * (metric, granularity, bucket) — those the bucket has — as a float8[]
 * whose order method_sets names (ascending method ids): 2 rows a point for
 * Gnocchi's `medium` policy where a row per method is 12.  Partitions are
 * ranges of (granularity, ts): each archive gets its own, as wide as
 * gpuagg_partition_width(granularity), so retention drops a fine archive's
 * old rows after its own timespan rather than the policy's longest.  The
 * rows v1-v3 stored move over; `aggregates` becomes a view of every stored
 * value (the v1 columns), `gpuagg_measures` keeps its columns. */
static const char schema_v4[] =
    "CREATE TABLE method_sets (\n"
    "    id      integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n"
    "    methods smallint[] NOT NULL UNIQUE\n"
    ");\n"
    "CREATE TABLE buckets (\n"
    "    metric      integer NOT NULL,\n"
    "    mset        integer NOT NULL,\n"
    "    granularity bigint NOT NULL,\n"
    "    ts          bigint NOT NULL,\n"
    "    vals        double precision[] NOT NULL,\n"
    "    PRIMARY KEY (metric, granularity, ts)\n"
    ") PARTITION BY RANGE (granularity, ts);\n"
    "CREATE TABLE bucket_partitions (\n"
    "    name        text PRIMARY KEY,\n"
    "    granularity bigint NOT NULL,\n"
    "    from_ns     bigint NOT NULL,\n"
    "    to_ns       bigint NOT NULL,\n"
    "    UNIQUE (granularity, from_ns)\n"
    ");\n"
    /* days: granularity * 256 in whole days, 1..32 (pgs_partition_width) */
    "CREATE FUNCTION gpuagg_partition_width(g bigint) RETURNS bigint\n"
    "    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n"
    "    AS $$ SELECT 86400000000000 * least(32, greatest(1, g / 337500000000)) $$;\n"
    "CREATE FUNCTION gpuagg_ensure_partition(g bigint, period bigint) RETURNS boolean\n"
    "    LANGUAGE plpgsql AS $$\n"
    "DECLARE\n"
    "    w  bigint := gpuagg_partition_width(g);\n"
    "    lo bigint := period * w;\n"
    "    nm text := 'buckets_' || g || '_' ||\n"
    "               to_char(timestamp '1970-01-01' + (lo / 86400000000000) * interval '1 day',\n"
    "                       'YYYYMMDD');\n"
    "BEGIN\n"
    /* the door keeps ts in [0, 2200-01-01] (proto/ga_time.h): anything
     * else is a bug, refused by name rather than by an int64 overflow */
    "    IF g <= 0 OR period < 0 OR lo > 7258118400000000000 THEN\n"
    "        RAISE EXCEPTION 'gpuagg_ensure_partition: granularity % period % is outside the "
    "accepted time range', g, period;\n"
    "    END IF;\n"
    "    PERFORM pg_advisory_xact_lock(" PGS_LOCK_KEY " + 1);\n"
    "    IF EXISTS (SELECT 1 FROM bucket_partitions p WHERE p.granularity = g AND p.from_ns = lo) THEN\n"
    "        RETURN false;\n"
    "    END IF;\n"
    "    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF buckets '\n"
    "                   'FOR VALUES FROM (%s, %s) TO (%s, %s) WITH (fillfactor = 50)',\n"
    "                   nm, g, lo, g, lo + w);\n"
    "    INSERT INTO bucket_partitions VALUES (nm, g, lo, lo + w);\n"
    "    RETURN true;\n"
    "END $$;\n"
    /* A stored row and a new one of another method set: the union of the
     * two sets, the new value where both have one. */
    "CREATE FUNCTION gpuagg_merge(omset integer, ovals double precision[], nmset integer,\n"
    "                             nvals double precision[], OUT mset integer,\n"
    "                             OUT vals double precision[])\n"
    "    LANGUAGE plpgsql AS $$\n"
    "DECLARE\n"
    "    om smallint[] := (SELECT methods FROM method_sets WHERE id = omset);\n"
    "    nm smallint[] := (SELECT methods FROM method_sets WHERE id = nmset);\n"
    "    um smallint[];\n"
    "BEGIN\n"
    "    IF om IS NULL OR om <@ nm THEN\n"
    "        mset := nmset;\n"
    "        vals := nvals;\n"
    "        RETURN;\n"
    "    END IF;\n"
    "    um := ARRAY(SELECT x FROM unnest(om || nm) x GROUP BY x ORDER BY x);\n"
    "    vals := ARRAY(SELECT coalesce(nvals[array_position(nm, x)], ovals[array_position(om, x)])\n"
    "                    FROM unnest(um) x ORDER BY x);\n"
    "    INSERT INTO method_sets (methods) VALUES (um) ON CONFLICT (methods) DO NOTHING;\n"
    "    mset := (SELECT id FROM method_sets WHERE methods = um);\n"
    "END $$;\n"
    "CREATE OR REPLACE FUNCTION gpuagg_retention(now_ns bigint) RETURNS SETOF text\n"
    "    LANGUAGE plpgsql AS $$\n"
    "DECLARE\n"
    "    r record;\n"
    "BEGIN\n"
    "    PERFORM pg_advisory_xact_lock(" PGS_LOCK_KEY " + 1);\n"
    "    FOR r IN\n"
    "        WITH reach AS (\n"
    "            SELECT (d->>'granularity_ns')::bigint AS g,\n"
    "                   bool_or((d->>'timespan_ns')::bigint = 0) AS unbounded,\n"
    "                   max((d->>'timespan_ns')::bigint + (d->>'granularity_ns')::bigint) AS reach\n"
    "              FROM archive_policies p CROSS JOIN LATERAL jsonb_array_elements(p.definition) d\n"
    "             WHERE p.name IN (SELECT policy FROM metrics)\n"
    "             GROUP BY 1)\n"
    "        SELECT b.name FROM bucket_partitions b JOIN reach ON reach.g = b.granularity\n"
    "         WHERE NOT reach.unbounded AND b.to_ns <= now_ns - reach.reach\n"
    "         ORDER BY b.granularity, b.from_ns\n"
    "    LOOP\n"
    "        EXECUTE format('DROP TABLE IF EXISTS %I', r.name);\n"
    "        DELETE FROM bucket_partitions WHERE name = r.name;\n"
    "        RETURN NEXT r.name;\n"
    "    END LOOP;\n"
    "END $$;\n"
    /* what v1-v3 stored */
    "INSERT INTO method_sets (methods)\n"
    "SELECT DISTINCT m FROM (SELECT array_agg(method ORDER BY method) AS m FROM aggregates\n"
    "                         GROUP BY metric, granularity, ts) q\n"
    "ON CONFLICT (methods) DO NOTHING;\n"
    "DO $$ BEGIN\n"
    "    PERFORM gpuagg_ensure_partition(g, p)\n"
    "       FROM (SELECT DISTINCT granularity AS g, ts / gpuagg_partition_width(granularity) AS p\n"
    "               FROM aggregates) q;\n"
    "END $$;\n"
    "INSERT INTO buckets (metric, mset, granularity, ts, vals)\n"
    "SELECT q.metric, s.id, q.granularity, q.ts, q.v\n"
    "  FROM (SELECT metric, granularity, ts, array_agg(method ORDER BY method) AS m,\n"
    "               array_agg(value ORDER BY method) AS v\n"
    "          FROM aggregates GROUP BY metric, granularity, ts) q\n"
    "  JOIN method_sets s ON s.methods = q.m;\n"
    "DROP VIEW gpuagg_measures;\n"
    "DROP TABLE aggregates;\n"
    "DROP TABLE aggregate_partitions;\n"
    "DROP FUNCTION gpuagg_ensure_partition(bigint);\n"
    /* every stored value, as v1-v3's table had them */
    "CREATE VIEW aggregates AS\n"
    "    SELECT b.metric, s.methods[i] AS method, b.granularity, b.ts, b.vals[i] AS value\n"
    "      FROM buckets b\n"
    "      JOIN method_sets s ON s.id = b.mset\n"
    "      CROSS JOIN LATERAL generate_subscripts(b.vals, 1) i;\n"
    /* as v3: each series from its newest bucket back over its timespan */
    "CREATE VIEW gpuagg_measures AS\n"
    "    SELECT m.name AS metric, mt.name AS method,\n"
    "           b.granularity / 1e9::double precision AS granularity_s,\n"
    "           gpuagg_time(b.ts) AS time, v.value,\n"
    "           b.ts AS ts_ns, b.granularity AS granularity_ns\n"
    "      FROM metrics m\n"
    "      JOIN archive_policies p ON p.name = m.policy\n"
    "      CROSS JOIN LATERAL (SELECT (d->>'granularity_ns')::bigint AS g,\n"
    "                                 (d->>'timespan_ns')::bigint AS span\n"
    "                            FROM jsonb_array_elements(p.definition) d) s\n"
    "      JOIN methods mt ON mt.name = ANY (p.methods)\n"
    "      CROSS JOIN LATERAL (SELECT x.ts AS last FROM buckets x\n"
    "                            JOIN method_sets xs ON xs.id = x.mset\n"
    "                           WHERE x.metric = m.id AND x.granularity = s.g\n"
    "                             AND mt.id = ANY (xs.methods)\n"
    "                           ORDER BY x.ts DESC LIMIT 1) l\n"
    "      JOIN buckets b ON b.metric = m.id AND b.granularity = s.g\n"
    "                    AND (s.span = 0 OR b.ts > l.last - s.span)\n"
    "      JOIN method_sets bs ON bs.id = b.mset\n"
    "      CROSS JOIN LATERAL (SELECT b.vals[array_position(bs.methods, mt.id)] AS value) v\n"
    "     WHERE v.value IS NOT NULL;\n";

/* v5: window checkpoints per partition (proto/ga_partition.h).  Each of
 * the 64 partitions of the metric space has the journal position its
 * metrics' window snapshots were taken at; checkpoints.window_lsn stays the
 * lowest of them, where replay starts.  They begin where the single
 * checkpoint was. */
static const char schema_v5[] =
    "CREATE TABLE partitions (\n"
    "    id         integer PRIMARY KEY CHECK (id >= 0 AND id < 64),\n"
    "    window_lsn bigint NOT NULL,\n"
    "    updated    timestamptz NOT NULL DEFAULT now()\n"
    ");\n"
    "INSERT INTO partitions (id, window_lsn)\n"
    "SELECT p, (SELECT window_lsn FROM checkpoints WHERE id = 1) FROM generate_series(0, 63) p;\n";

/* v6: several writer connections, each owning some partitions: the
 * committed position and the last batch tag move from the single
 * checkpoints row (which every writer would have had to update, one after
 * the other) to each partition's row; checkpoints becomes a view of the
 * lowest positions. */
static const char schema_v6[] =
    "ALTER TABLE partitions ADD COLUMN committed_lsn bigint NOT NULL DEFAULT 0,\n"
    "                       ADD COLUMN last_batch bigint NOT NULL DEFAULT 0;\n"
    "UPDATE partitions SET committed_lsn = c.committed_lsn, last_batch = c.last_batch\n"
    "  FROM checkpoints c WHERE c.id = 1;\n"
    "DROP TABLE checkpoints;\n"
    "CREATE VIEW checkpoints AS\n"
    "    SELECT 1::smallint AS id, min(committed_lsn) AS committed_lsn,\n"
    "           min(window_lsn) AS window_lsn, max(updated) AS updated\n"
    "      FROM partitions;\n";

/* v7: what the Gnocchi-compatible HTTP API reads (docs/API.md).
 * gpuagg_metric_uuid(name) is the metric's stable id: the name-based UUID
 * (RFC 4122 version 3, MD5) of the name in gpuagg's metric namespace —
 * version 3 because PostgreSQL computes MD5 itself, so the id is an
 * indexed expression and never stored.  resources are Gnocchi's resources
 * as Ceilometer samples describe them (id derived as Gnocchi's
 * ResourceUUID does, in the daemon); resource_metrics names a resource's
 * metrics (Gnocchi's metric name within the resource) and points at the
 * gpuagg metric by name. */
static const char schema_v7[] =
    "CREATE FUNCTION gpuagg_metric_uuid(name text) RETURNS uuid\n"
    "    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n"
    "    AS $$ SELECT encode(set_byte(set_byte(h, 6, (get_byte(h, 6) & 15) | 48),\n"
    "                                 8, (get_byte(h, 8) & 63) | 128), 'hex')::uuid\n"
    "            FROM (SELECT decode(md5('\\x" GA_METRIC_NS_HEX "'::bytea\n"
    "                                    || convert_to(name, 'UTF8')), 'hex') AS h) q $$;\n"
    "CREATE INDEX metrics_uuid ON metrics (gpuagg_metric_uuid(name));\n"
    "CREATE TABLE resources (\n"
    "    id                   uuid PRIMARY KEY,\n"
    "    original_resource_id text NOT NULL,\n"
    "    type                 text NOT NULL DEFAULT 'generic',\n"
    "    creator              text NOT NULL DEFAULT '',\n"
    "    project_id           text,\n"
    "    user_id              text,\n"
    "    attributes           jsonb NOT NULL DEFAULT '{}',\n"
    "    started_at           timestamptz NOT NULL DEFAULT now(),\n"
    "    revision_start       timestamptz NOT NULL DEFAULT now()\n"
    ");\n"
    "CREATE INDEX resources_type ON resources (type);\n"
    "CREATE INDEX resources_project ON resources (project_id);\n"
    "CREATE TABLE resource_metrics (\n"
    "    resource uuid NOT NULL REFERENCES resources (id) ON DELETE CASCADE,\n"
    "    name     text NOT NULL,\n"
    "    metric   text NOT NULL,\n"
    "    unit     text,\n"
    "    PRIMARY KEY (resource, name)\n"
    ");\n"
    "CREATE INDEX resource_metrics_metric ON resource_metrics (metric);\n";

/* v8: rows a flush could not store.  A flush that fails on its data
 * (docs/STORAGE.md "Rows the database refuses") isolates the metrics whose
 * rows cause it, records their rows here with the error and commits the
 * rest.  kind: 'bucket' (granularity, ts, method, value: one row per value
 * of the bucket), 'late' (ts, value), 'definition' (value NULL), 'window'
 * (value: the points counted with it). */
static const char schema_v8[] =
    "CREATE TABLE rejected_rows (\n"
    "    metric      integer NOT NULL,\n"
    "    method      smallint,\n"
    "    granularity bigint,\n"
    "    ts          bigint,\n"
    "    value       double precision,\n"
    "    kind        text NOT NULL,\n"
    "    error       text NOT NULL,\n"
    "    received    timestamptz NOT NULL DEFAULT now()\n"
    ");\n"
    "CREATE INDEX rejected_rows_metric ON rejected_rows (metric);\n";

_Static_assert(GA_PARTITIONS == 64, "migration 5 creates 64 partitions");

/* v9: cluster mode (docs/CLUSTER.md): the daemons sharing this database,
 * each with a heartbeat (the database's clock) and the partitions it owns
 * now, which the others read to spread the partitions and status shows. */
static const char schema_v9[] =
    "CREATE TABLE cluster_members (\n"
    "    name      text PRIMARY KEY,\n"
    "    started   timestamptz NOT NULL DEFAULT now(),\n"
    "    heartbeat timestamptz NOT NULL DEFAULT now(),\n"
    "    owned     bigint NOT NULL DEFAULT 0,\n"
    "    stream_seq bigint NOT NULL DEFAULT 0,\n"
    "    pid       integer NOT NULL DEFAULT 0,\n"
    "    host      text NOT NULL DEFAULT ''\n"
    ");\n";

/* v10: registering a metric costs its row and plain index entries only.
 * Its id is computed by the daemon (proto/uuid.h) and stored in
 * metrics.uuid, indexed as a column: the expression index of v7 ran the
 * SQL MD5 function for every new metric.  The foreign key to
 * archive_policies goes: every definition checked it with a row lock on
 * its policy's row, taken by every writer at once while metrics are new;
 * the writer stores a definition's policy in the same transaction, before
 * it (docs/STORAGE.md).  metrics leaves room on its pages (fillfactor 80)
 * so that point-count updates stay on the page (HOT) and add no index
 * entries. */
static const char schema_v10[] =
    "ALTER TABLE metrics ADD COLUMN uuid uuid;\n"
    "UPDATE metrics SET uuid = gpuagg_metric_uuid(name);\n"
    "ALTER TABLE metrics ALTER COLUMN uuid SET NOT NULL;\n"
    "DROP INDEX metrics_uuid;\n"
    "CREATE INDEX metrics_uuid ON metrics (uuid);\n"
    "ALTER TABLE metrics DROP CONSTRAINT IF EXISTS metrics_policy_fkey;\n"
    "ALTER TABLE metrics SET (fillfactor = 80);\n";

/* v11: cluster mode's identity check (docs/CLUSTER.md): a random id of
 * this database, which the stream records in its description, and the
 * stream whose sequences the positions in `partitions` are (its name and
 * creation time, recorded by the first cluster daemon). */
static const char schema_v11[] =
    "CREATE TABLE cluster_identity (\n"
    "    id                integer PRIMARY KEY CHECK (id = 1),\n"
    "    database_id       text NOT NULL,\n"
    "    stream            text NOT NULL DEFAULT '',\n"
    "    stream_created_ns bigint NOT NULL DEFAULT 0\n"
    ");\n"
    "INSERT INTO cluster_identity (id, database_id)\n"
    "VALUES (1, md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text));\n";

/* v12: a window save writes what changed (docs/STORAGE.md "Window
 * snapshots"): a row of tail records (pg_window.h) for the points appended
 * to a metric's window since its snapshot in metric_windows, applied in
 * id order when loading; a whole snapshot deletes them. */
static const char schema_v12[] =
    "CREATE TABLE metric_window_tails (\n"
    "    metric integer NOT NULL,\n"
    "    id     bigint GENERATED ALWAYS AS IDENTITY,\n"
    "    rec    bytea NOT NULL,\n"
    "    PRIMARY KEY (metric, id)\n"
    ");\n";

/* open_blocks' columns, as of v13; v15 partitions the table and replaces
 * the views that read it, unchanged. */
#define OPEN_BLOCKS_COLUMNS \
    "    id      bigint PRIMARY KEY,\n" \
    "    metrics integer[] NOT NULL,\n" \
    "    msets   integer[] NOT NULL,\n" \
    "    grans   bigint[] NOT NULL,\n" \
    "    tss     bigint[] NOT NULL,\n" \
    "    offs    integer[] NOT NULL,\n" \
    "    vals    double precision[] NOT NULL\n"

#define BUCKET_ROWS_V13 \
    "    SELECT metric, mset, granularity, ts, vals FROM buckets\n" \
    "    UNION ALL\n" \
    "    SELECT u.metric, u.mset, u.granularity, u.ts,\n" \
    "           o.vals[u.off + 1 : coalesce(o.offs[(u.i + 1)::int], cardinality(o.vals))]\n" \
    "      FROM metrics m\n" \
    "      JOIN open_blocks o ON o.id = m.open_block\n" \
    "      CROSS JOIN LATERAL unnest(o.metrics, o.msets, o.grans, o.tss, o.offs)\n" \
    "           WITH ORDINALITY u(metric, mset, granularity, ts, off, i)\n" \
    "     WHERE u.metric = m.id;\n"

#define MEASURES_V13 \
    "    SELECT m.name AS metric, mt.name AS method,\n" \
    "           s.g / 1e9::double precision AS granularity_s,\n" \
    "           gpuagg_time(b.ts) AS time, v.value,\n" \
    "           b.ts AS ts_ns, s.g AS granularity_ns\n" \
    "      FROM metrics m\n" \
    "      JOIN archive_policies p ON p.name = m.policy\n" \
    "      CROSS JOIN LATERAL (SELECT (d->>'granularity_ns')::bigint AS g,\n" \
    "                                 (d->>'timespan_ns')::bigint AS span\n" \
    "                            FROM jsonb_array_elements(p.definition) d) s\n" \
    "      JOIN methods mt ON mt.name = ANY (p.methods)\n" \
    "      CROSS JOIN LATERAL (\n" \
    "          SELECT x.ts AS last FROM (\n" \
    "                  SELECT b.ts, b.mset FROM buckets b WHERE b.metric = m.id AND b.granularity = s.g\n" \
    "                  UNION ALL\n" \
    "                  SELECT u.ts, u.mset FROM open_blocks o,\n" \
    "                         unnest(o.metrics, o.msets, o.grans, o.tss) u(metric, mset, granularity, ts)\n" \
    "                   WHERE o.id = m.open_block AND u.metric = m.id AND u.granularity = s.g) x\n" \
    "            JOIN method_sets xs ON xs.id = x.mset\n" \
    "           WHERE mt.id = ANY (xs.methods)\n" \
    "           ORDER BY x.ts DESC LIMIT 1) l\n" \
    "      CROSS JOIN LATERAL (\n" \
    "          SELECT b.ts, b.mset, b.vals FROM buckets b\n" \
    "           WHERE b.metric = m.id AND b.granularity = s.g AND (s.span = 0 OR b.ts > l.last - s.span)\n" \
    "          UNION ALL\n" \
    "          SELECT u.ts, u.mset, o.vals[u.off + 1 : coalesce(o.offs[(u.i + 1)::int], cardinality(o.vals))]\n" \
    "            FROM open_blocks o,\n" \
    "                 unnest(o.metrics, o.msets, o.grans, o.tss, o.offs) WITH ORDINALITY\n" \
    "                     u(metric, mset, granularity, ts, off, i)\n" \
    "           WHERE o.id = m.open_block AND u.metric = m.id AND u.granularity = s.g\n" \
    "             AND (s.span = 0 OR u.ts > l.last - s.span)) b\n" \
    "      JOIN method_sets bs ON bs.id = b.mset\n" \
    "      CROSS JOIN LATERAL (SELECT b.vals[array_position(bs.methods, mt.id)] AS value) v\n" \
    "     WHERE v.value IS NOT NULL;\n"

/* v13: open buckets packed into blocks (docs/STORAGE.md "Open buckets",
 * storage/pg_open.h).  A writer keeps the newest bucket of each (metric,
 * granularity) of its partitions in blocks of several metrics, one row a
 * block (entry k: metrics[k], msets[k], grans[k], tss[k], and its values
 * vals[offs[k] + 1 ..] up to the next entry's), so that rewriting a million
 * open buckets rewrites a few tens of thousands of rows.  A bucket is in a
 * block or in `buckets`, never both; `bucket_rows` is the union, and the
 * views read it.  metrics.open_block names a metric's block, so a reader of
 * one metric finds its open buckets by key; gpuagg_measures reads each
 * series through a lateral union of its rows and its block's entries (a
 * join to bucket_rows would be planned as a scan of every block).  A block row stays below 2 kB
 * (pg_open.h) and fillfactor 20 leaves it alone on its page: each rewrite's
 * new version goes on the same page (HOT), where the versions no snapshot
 * sees any more are pruned as the next rewrites come (two or three blocks
 * a page, each rewritten every second, leave no room for the versions the
 * writers' snapshots still see, and every rewrite grows the table). */
static const char schema_v13[] =
    "CREATE TABLE open_blocks (\n" OPEN_BLOCKS_COLUMNS ") WITH (fillfactor = 20);\n"
    "ALTER TABLE metrics ADD COLUMN open_block bigint;\n"
    "CREATE VIEW bucket_rows AS\n" BUCKET_ROWS_V13
    "CREATE OR REPLACE VIEW aggregates AS\n"
    "    SELECT b.metric, s.methods[i] AS method, b.granularity, b.ts, b.vals[i] AS value\n"
    "      FROM bucket_rows b\n"
    "      JOIN method_sets s ON s.id = b.mset\n"
    "      CROSS JOIN LATERAL generate_subscripts(b.vals, 1) i;\n"
    "CREATE OR REPLACE VIEW gpuagg_measures AS\n" MEASURES_V13;

/* Each stored window says which records it holds: `saved_lsn` on a
 * snapshot, `lsn` on a tail (the window set it was saved with; the
 * window holds every record below).  A partition's window set may then be
 * written over several transactions, each with some of its metrics, and
 * a replay skips a metric's points where its own position is past them
 * (docs/STORAGE.md "Window snapshots").  0: not known, the partition's
 * position counts. */
static const char schema_v14[] =
    "ALTER TABLE metric_windows ADD COLUMN saved_lsn bigint NOT NULL DEFAULT 0;\n"
    "ALTER TABLE metric_window_tails ADD COLUMN lsn bigint NOT NULL DEFAULT 0;\n";

/* v15: open_blocks partitioned by the metric space's partition (a block's
 * id is its partition << 32 | a number, pg_open.h): one table and one key
 * per partition, so that writers creating blocks at once (every metric new)
 * extend their own tables, and a partition's blocks are one table to hand
 * over.  The views are replaced with the same text, now over the
 * partitioned table. */
#define PARTS_STR_(n) #n
#define PARTS_STR(n) PARTS_STR_(n)
static const char schema_v15[] =
    "ALTER TABLE open_blocks RENAME TO open_blocks_v13;\n"
    "ALTER INDEX open_blocks_pkey RENAME TO open_blocks_v13_pkey;\n"
    "CREATE TABLE open_blocks (\n" OPEN_BLOCKS_COLUMNS ") PARTITION BY RANGE (id);\n"
    "DO $$ BEGIN\n"
    "    FOR p IN 0 .. " PARTS_STR(GA_PARTITIONS) " - 1 LOOP\n"
    "        EXECUTE format('CREATE TABLE open_blocks_p%s PARTITION OF open_blocks '\n"
    "                       'FOR VALUES FROM (%s) TO (%s) WITH (fillfactor = 20)',\n"
    "                       lpad(p::text, 2, '0'), p::int8 << 32, (p + 1)::int8 << 32);\n"
    "    END LOOP;\n"
    "END $$;\n"
    "INSERT INTO open_blocks SELECT * FROM open_blocks_v13;\n"
    "CREATE OR REPLACE VIEW bucket_rows AS\n" BUCKET_ROWS_V13
    "CREATE OR REPLACE VIEW gpuagg_measures AS\n" MEASURES_V13
    "DROP TABLE open_blocks_v13;\n";

struct step {
    int version;
    const char *name;
    const char *sql;
    int (*after)(PGconn *c, char *err, size_t errlen);
};

static const struct step steps[] = {
    { 1, "initial schema", schema_v1, seed_methods },
    { 2, "partitions with fillfactor 50", schema_v2, NULL },
    { 3, "the measures view truncates each series to its timespan", schema_v3, NULL },
    { 4, "one row per bucket, partitions per archive", schema_v4, NULL },
    { 5, "window checkpoints per partition of the metric space", schema_v5, NULL },
    { 6, "committed positions per partition, for parallel writers", schema_v6, NULL },
    { 7, "resources and metric ids for the HTTP API", schema_v7, NULL },
    { 8, "rows a flush could not store", schema_v8, NULL },
    { 9, "cluster members", schema_v9, NULL },
    { 10, "metric ids stored, no per-definition policy check", schema_v10, NULL },
    { 11, "cluster identity", schema_v11, NULL },
    { 12, "window tails: a save writes what changed", schema_v12, NULL },
    { 13, "open buckets packed into blocks", schema_v13, NULL },
    { 14, "a window's own position, for window sets over several transactions", schema_v14, NULL },
    { 15, "open buckets' blocks partitioned as the metric space", schema_v15, NULL },
};
#define NSTEPS ((int)(sizeof steps / sizeof steps[0]))

int pgs_step_count(int after)
{
    int n = 0;
    for (int i = 0; i < NSTEPS; i++)
        n += steps[i].version > after;
    return n;
}

int pgs_latest_version(void)
{
    return steps[NSTEPS - 1].version;
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
    pgu_result_error(err, errlen, c, r);
    rc = GA_EDB;
out:
    PQclear(r);
    return rc;
}

static int record_step(PGconn *c, const struct step *s, char *err, size_t errlen)
{
    char v[16];
    snprintf(v, sizeof v, "%d", s->version);
    const char *params[] = { v, s->name };
    PGresult *r = PQexecParams(c, "INSERT INTO gpuagg_migrations (version, name) VALUES ($1, $2)",
                               2, NULL, params, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        pgu_result_error(err, errlen, c, r);
        rc = GA_EDB;
    }
    PQclear(r);
    return rc;
}

int pgs_migrate(PGconn *c, char *err, size_t errlen)
{
    return pgs_migrate_to(c, pgs_latest_version(), err, errlen);
}

int pgs_migrate_to(PGconn *c, int target, char *err, size_t errlen)
{
    char why[512] = "";
    int version = 0, applied = 0, rc;
    if ((rc = pgu_exec(c, "BEGIN", why, sizeof why)) < 0 ||
        (rc = pgu_exec(c, "SELECT pg_advisory_xact_lock(" PGS_LOCK_KEY ")", why, sizeof why)) < 0 ||
        (rc = current_version(c, &version, why, sizeof why)) < 0) {
        snprintf(err, errlen, "migrations: %s", why);
        goto fail;
    }
    if (version > pgs_latest_version()) {
        snprintf(err, errlen, "database schema is version %d, newer than this gpuaggd knows (%d)",
                 version, pgs_latest_version());
        rc = GA_EPROTO;
        goto fail;
    }
    for (int i = 0; i < NSTEPS; i++) {
        const struct step *s = &steps[i];
        if (s->version <= version || s->version > target)
            continue;
        if ((rc = pgu_exec(c, s->sql, why, sizeof why)) < 0 ||
            (s->after && (rc = s->after(c, why, sizeof why)) < 0) ||
            (rc = record_step(c, s, why, sizeof why)) < 0) {
            snprintf(err, errlen, "migration %d (%s): %s", s->version, s->name, why);
            goto fail;
        }
        applied++;
    }
    if ((rc = pgu_exec(c, "COMMIT", why, sizeof why)) < 0) {
        snprintf(err, errlen, "migrations: commit: %s", why);
        goto fail;
    }
    if (applied)
        ga_log(GA_LOG_INFO, "storage_migrated", "from=%d to=%d", version,
               target < pgs_latest_version() ? target : pgs_latest_version());
    return applied;
fail:
    if (PQtransactionStatus(c) != PQTRANS_IDLE)
        pgu_exec(c, "ROLLBACK", why, sizeof why);
    return rc;
}

int64_t pgs_partition_width(int64_t granularity_ns)
{
    int64_t days = granularity_ns / 337500000000LL;
    return PGS_DAY_NS * (days < 1 ? 1 : days > 32 ? 32 : days);
}

/* The count of partitions a "SELECT count(*) FILTER (WHERE
 * gpuagg_ensure_partition(…))" created; clears r.  Or GA_EDB (err). */
static int created(PGconn *c, PGresult *r, char *err, size_t errlen)
{
    int rc;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        rc = atoi(PQgetvalue(r, 0, 0));
    } else {
        pgu_result_error(err, errlen, c, r);
        rc = GA_EDB;
    }
    PQclear(r);
    return rc;
}

int pgs_ensure_partitions(PGconn *c, const struct pgs_part *parts, size_t n, char *err,
                          size_t errlen)
{
    struct pgu_buf b[2] = { { 0 } };
    pgu_array_begin(&b[0], PGU_INT8OID, n);
    pgu_array_begin(&b[1], PGU_INT8OID, n);
    for (size_t i = 0; i < n; i++) {
        pgu_array_i64(&b[0], parts[i].granularity_ns);
        pgu_array_i64(&b[1], parts[i].period);
    }
    if (b[0].oom || b[1].oom) {
        pgu_buf_free(&b[0]);
        pgu_buf_free(&b[1]);
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
    pgu_buf_free(&b[0]);
    pgu_buf_free(&b[1]);
    return rc;
}

int pgs_ensure_ahead(PGconn *c, int64_t now_ns, int64_t ahead_ns, char *err, size_t errlen)
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

int pgs_retention(PGconn *c, int64_t now_ns, char *err, size_t errlen)
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
        pgu_result_error(err, errlen, c, r);
        rc = GA_EDB;
    }
    PQclear(r);
    return rc;
}

int pgs_policy_json(const struct ga_policy *p, char *def, size_t deflen, char *methods,
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
