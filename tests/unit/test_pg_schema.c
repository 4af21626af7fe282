/* test_pg_schema.c — migrations (idempotent, versioned, refusing a newer
 * schema), the methods lookup table, partitions ahead and retention,
 * against a real private PostgreSQL. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/policy.h"
#include "proto/ga_err.h"
#include "proto/uuid.h"
#include "storage/pg_schema.h"
#include "storage/pg_txn.h"
#include "storage/pg_writer.h"
#include "tests/unit/harness.h"
#include "tests/unit/test_pg_env.h"

#define DAY_NS PG_SCHEMA_DAY_NS

static struct pgenv env;
static uint64_t seed;

static void reset_db(PGconn *c)
{
    pg_cmd(c, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public");
}

static void test_migrations_idempotent(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    reset_db(c);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(0));
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_migrations"), pg_schema_step_count(0));
    CHECK_INT(pg_scalar(c, "SELECT max(version) FROM gpuagg_migrations"), pg_schema_latest_version());
    long long tables = pg_scalar(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
    long long applied = pg_scalar(c, "SELECT extract(epoch FROM applied)::bigint FROM gpuagg_migrations");
    /* second run: nothing to do, nothing changed */
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_migrations"), pg_schema_step_count(0));
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), tables);
    CHECK_INT(pg_scalar(c, "SELECT extract(epoch FROM applied)::bigint FROM gpuagg_migrations"),
              applied);
    CHECK_INT(PQtransactionStatus(c), PQTRANS_IDLE);
    /* every table of docs/STORAGE.md */
    static const char *const names[] = { "metrics", "archive_policies", "buckets", "aggregates",
                                         "late_points", "checkpoints", "metric_windows", "methods",
                                         "method_sets", "bucket_partitions", "gpuagg_measures" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_class WHERE relname = '%s'", names[i]);
        CHECK_INT(pg_scalar(c, sql), 1);
    }
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_partitioned_table p JOIN pg_class c "
                           "ON c.oid = p.partrelid WHERE c.relname = 'buckets' AND p.partstrat = 'r' "
                           "AND p.partnatts = 2"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM checkpoints"), 1);
    PQfinish(c);
}

/* A view's rows before a migration (kept_VIEW), and how many of them it
 * no longer returns after. */
static void keep_view(PGconn *c, const char *view)
{
    char sql[256];
    snprintf(sql, sizeof sql, "CREATE TABLE kept_%s AS SELECT * FROM %s", view, view);
    CHECK_INT(pg_cmd(c, sql), 0);
}

static long long view_lost(PGconn *c, const char *view)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM (SELECT * FROM kept_%s EXCEPT SELECT * FROM %s) x",
             view, view);
    return pg_scalar(c, sql);
}

/* Migration 2 on a database migration 1 left: the partitions that exist
 * then get fillfactor 50 (v1 made them with 80), and later ones too. */
static void test_v2_alters_existing_partitions(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    reset_db(c);
    CHECK_INT(pg_schema_migrate_to(c, 1, err, sizeof err), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FILTER (WHERE gpuagg_ensure_partition(d)) "
                           "FROM unnest(ARRAY[20000, 20001, 20002]::int8[]) d"), 3);
    const char *ff50 = "SELECT count(*) FROM aggregate_partitions p JOIN pg_class c ON c.relname = "
                       "p.name WHERE 'fillfactor=50' = ANY (c.reloptions)";
    CHECK_INT(pg_scalar(c, ff50), 0);
    CHECK_INT(pg_schema_migrate_to(c, 2, err, sizeof err), 1);          /* one step: v2 */
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregate_partitions"), 3);
    CHECK_INT(pg_scalar(c, ff50), 3);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FILTER (WHERE gpuagg_ensure_partition(d)) "
                           "FROM unnest(ARRAY[20003]::int8[]) d"), 1);
    CHECK_INT(pg_scalar(c, ff50), 4);
    PQfinish(c);
}

/* Migration 4 on a database v3 left, with rows in its per-method table:
 * every stored value comes back from the aggregates view, the measures
 * view answers as before, and the writer goes on upserting into it. */
static void test_v4_moves_rows(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    reset_db(c);
    CHECK_INT(pg_schema_migrate_to(c, 3, err, sizeof err), 3);
    int64_t today = ga_now_real_ns() / DAY_NS, g = 60LL * 1000000000;
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT count(*) FILTER (WHERE gpuagg_ensure_partition(d)) "
                              "FROM unnest(ARRAY[%lld, %lld]::int8[]) d",
             (long long)today - 1, (long long)today);
    CHECK_INT(pg_scalar(c, sql), 2);
    CHECK_INT(pg_cmd(c, "INSERT INTO archive_policies (name, back_window, definition, methods) "
                        "VALUES ('p', 0, '[{\"granularity_ns\": 60000000000, \"timespan_ns\": 0, "
                        "\"points\": 0}, {\"granularity_ns\": 3600000000000, \"timespan_ns\": 0, "
                        "\"points\": 0}]', '{mean,max,rate:sum}')"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO metrics (id, name, policy) VALUES (0, 'a', 'p'), (1, 'b', 'p')"), 0);
    /* 2 metrics x 2 granularities x 20 buckets, 3 methods; some buckets lack rate:sum */
    snprintf(sql, sizeof sql,
             "INSERT INTO aggregates SELECT m, k, gr, %lld * 86400000000000 + i * gr, "
             "m * 1000 + k + i / 7.0 FROM generate_series(0, 1) m, unnest(ARRAY[1, 4, %d]) k, "
             "unnest(ARRAY[%lld, 3600000000000]::int8[]) gr, generate_series(0, 19) i "
             "WHERE k <> %d OR i %% 5 <> 0",
             (long long)today - 1, GA_M_RATE | GA_M_SUM, (long long)g, GA_M_RATE | GA_M_SUM);
    CHECK_INT(pg_cmd(c, sql), 0);
    long long values = pg_scalar(c, "SELECT count(*) FROM aggregates");
    CHECK_INT(values, 2 * 2 * 20 * 3 - 2 * 2 * 4);
    keep_view(c, "aggregates");
    keep_view(c, "gpuagg_measures");
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(3));
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), values);
    CHECK_INT(view_lost(c, "aggregates"), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM buckets"), 2 * 2 * 20);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM method_sets"), 2);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM kept_gpuagg_measures"),
              pg_scalar(c, "SELECT count(*) FROM gpuagg_measures"));
    CHECK_INT(view_lost(c, "gpuagg_measures"), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_class WHERE relname = 'aggregate_partitions'"), 0);
    PQfinish(c);
}

/* Migration 10 on a database migration 9 left: every metric gets the id
 * the expression of v7 gave it, which is the daemon's ga_metric_uuid; the
 * index is on the column; a definition checks no policy row. */
static void test_v10_stores_metric_ids(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    reset_db(c);
    CHECK_INT(pg_schema_migrate_to(c, 9, err, sizeof err), pg_schema_step_count(0) - pg_schema_step_count(9));
    CHECK_INT(pg_cmd(c, "INSERT INTO archive_policies (name, back_window, definition, methods) "
                        "VALUES ('p', 0, '[]', '{mean}')"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO metrics (id, name, policy) VALUES (0, 'cpu.util', 'p'), "
                        "(1, 'm\xc3\xbcnchen.temp', 'p'), (2, repeat('x', 100), 'p')"), 0);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(9));
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metrics WHERE uuid = gpuagg_metric_uuid(name)"), 3);
    PGresult *r = PQexec(c, "SELECT name, uuid FROM metrics ORDER BY id");
    CHECK_INT(PQntuples(r), 3);
    for (int i = 0; i < PQntuples(r); i++) {
        uint8_t u[16];
        char s[GA_UUID_STR];
        ga_metric_uuid(PQgetvalue(r, i, 0), strlen(PQgetvalue(r, i, 0)), u);
        ga_uuid_format(u, s);
        CHECK_STR(PQgetvalue(r, i, 1), s);
    }
    PQclear(r);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_indexes WHERE indexname = 'metrics_uuid' "
                           "AND indexdef LIKE '%(uuid)'"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_constraint WHERE conrelid = 'metrics'::regclass "
                           "AND contype = 'f'"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO metrics (id, name, policy) VALUES (3, 'no.id', 'p')") != 0, 1);
    PQfinish(c);
}

/* v12 on a database of v11: the windows stored stay and load as they
 * were (no tails), tails go in their own table. */
static void test_v12_window_tails(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    reset_db(c);
    CHECK_INT(pg_schema_migrate_to(c, 11, err, sizeof err), pg_schema_step_count(0) - pg_schema_step_count(11));
    CHECK_INT(pg_cmd(c, "INSERT INTO metric_windows (metric, lsn, snapshot) "
                        "VALUES (0, 7, '\\x0100020a0101000000000000f03f0000000000000040')"), 0);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(11));
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metric_windows WHERE lsn = 7"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metric_window_tails"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO metric_window_tails (metric, rec) VALUES (0, '\\x02'), "
                        "(0, '\\x02')"), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(DISTINCT id) FROM metric_window_tails WHERE metric = 0"), 2);
    PQfinish(c);
}

/* v13 on a database of v12 with buckets: the views read the same values
 * through bucket_rows; an open bucket in a block is read as the newest of
 * its series, with its method set, found through metrics.open_block. */
static void test_v13_open_blocks(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "", sql[1024];
    reset_db(c);
    CHECK_INT(pg_schema_migrate_to(c, 12, err, sizeof err), pg_schema_step_count(0) - pg_schema_step_count(12));
    long long g = 60000000000LL, day = (long long)(time(NULL) / 86400);
    long long t0 = (day - 1) * 86400000000000LL;
    CHECK_INT(pg_cmd(c, "INSERT INTO archive_policies (name, back_window, definition, methods) "
                        "VALUES ('p', 0, '[{\"granularity_ns\": 60000000000, \"timespan_ns\": "
                        "600000000000, \"points\": 10}]', '{mean,max}')"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO metrics (id, name, policy, uuid) SELECT i, n, 'p', "
                        "gpuagg_metric_uuid(n) FROM (VALUES (0, 'a'), (1, 'b')) v(i, n)"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO method_sets (methods) VALUES ('{1,4}')"), 0);
    snprintf(sql, sizeof sql, "SELECT gpuagg_ensure_partition(%lld, %lld / gpuagg_partition_width(%lld))",
             g, t0, g);
    CHECK_INT(pg_scalar(c, sql) >= 0, 1);
    snprintf(sql, sizeof sql,
             "INSERT INTO buckets SELECT m, (SELECT id FROM method_sets), %lld, %lld + i * %lld, "
             "ARRAY[m + i, m + i + 0.5] FROM generate_series(0, 1) m, generate_series(0, 19) i",
             g, t0, g);
    CHECK_INT(pg_cmd(c, sql), 0);
    keep_view(c, "aggregates");
    keep_view(c, "gpuagg_measures");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM kept_gpuagg_measures"), 2 * 10 * 2);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(12));
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM bucket_rows"), 2 * 20);
    CHECK_INT(view_lost(c, "aggregates"), 0);
    CHECK_INT(view_lost(c, "gpuagg_measures"), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_measures"), 2 * 10 * 2);
    /* metric 0's next bucket, open, in block 5 << 32 with an entry of another
     * metric (2, no row: not read) before it; method set {1} (mean only) */
    CHECK_INT(pg_cmd(c, "INSERT INTO method_sets (methods) VALUES ('{1}')"), 0);
    snprintf(sql, sizeof sql,
             "INSERT INTO open_blocks VALUES (%lld, '{2,0}', ARRAY[(SELECT id FROM method_sets "
             "WHERE methods = '{1,4}'), (SELECT id FROM method_sets WHERE methods = '{1}')], "
             "ARRAY[%lld, %lld]::int8[], ARRAY[%lld, %lld]::int8[], '{0,2}', '{7,8,42.5}')",
             5LL << 32, g, g, t0, t0 + 20 * g);
    CHECK_INT(pg_cmd(c, sql), 0);
    snprintf(sql, sizeof sql, "UPDATE metrics SET open_block = %lld WHERE id = 0", 5LL << 32);
    CHECK_INT(pg_cmd(c, sql), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM bucket_rows"), 2 * 20 + 1);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM bucket_rows WHERE metric = 0 AND ts = %lld "
                              "AND vals = '{42.5}'", t0 + 20 * g);
    CHECK_INT(pg_scalar(c, sql), 1);
    /* the series of a's mean now ends at the open bucket: 10 buckets, the
     * oldest of the 10 before dropped; max still ends at the last row */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM gpuagg_measures WHERE metric = 'a' AND "
                              "method = 'mean' AND ts_ns > %lld", t0 + 10 * g);
    CHECK_INT(pg_scalar(c, sql), 10);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_measures WHERE metric = 'a' AND "
                           "method = 'mean' AND value = 42.5"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_measures WHERE metric = 'a' AND "
                           "method = 'max'"), 10);
    PQfinish(c);
}

/* v14 on a database of v13 with a window and its tail: both stay, with
 * position 0 (not known: the partition's counts), and new ones take theirs. */
static void test_v14_window_positions(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    reset_db(c);
    CHECK_INT(pg_schema_migrate_to(c, 13, err, sizeof err), pg_schema_step_count(0) - pg_schema_step_count(13));
    CHECK_INT(pg_cmd(c, "INSERT INTO metric_windows (metric, lsn, snapshot) "
                        "VALUES (0, 7, '\\x0100020a0101000000000000f03f0000000000000040')"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO metric_window_tails (metric, rec) VALUES (0, '\\x02')"), 0);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(13));
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metric_windows WHERE lsn = 7 AND saved_lsn = 0"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM metric_window_tails WHERE lsn = 0"), 1);
    CHECK_INT(pg_cmd(c, "INSERT INTO metric_window_tails (metric, rec, lsn) VALUES (0, '\\x02', 9)"), 0);
    CHECK_INT(pg_scalar(c, "SELECT max(lsn) FROM metric_window_tails WHERE metric = 0"), 9);
    PQfinish(c);
}

/* v15 on a database of v14 with blocks of two partitions: each moves to
 * its partition's table, the views read the same, and the writer's upsert
 * works on the partitioned table. */
static void test_v15_blocks_partitioned(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "", sql[1024];
    reset_db(c);
    CHECK_INT(pg_schema_migrate_to(c, 14, err, sizeof err), pg_schema_step_count(0) - pg_schema_step_count(14));
    long long g = 60000000000LL, t0 = (long long)(time(NULL) / 86400) * 86400000000000LL;
    CHECK_INT(pg_cmd(c, "INSERT INTO archive_policies (name, back_window, definition, methods) "
                        "VALUES ('p', 0, '[{\"granularity_ns\": 60000000000, \"timespan_ns\": "
                        "0, \"points\": 0}]', '{mean,max}')"), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO method_sets (methods) VALUES ('{1,4}')"), 0);
    for (int m = 0; m < 2; m++) {
        long long blk = ((m ? 9LL : 5LL) << 32) | 3;
        snprintf(sql, sizeof sql,
                 "INSERT INTO metrics (id, name, policy, uuid, open_block) VALUES (%d, '%c', 'p', "
                 "gpuagg_metric_uuid('%c'), %lld); INSERT INTO open_blocks VALUES (%lld, '{%d}', "
                 "ARRAY[(SELECT id FROM method_sets)], '{%lld}', '{%lld}', '{0}', '{%d.5,%d}')",
                 m, 'a' + m, 'a' + m, blk, blk, m, g, t0, m, 10 + m);
        CHECK_INT(pg_cmd(c, sql), 0);
    }
    keep_view(c, "bucket_rows");
    keep_view(c, "gpuagg_measures");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM kept_gpuagg_measures"), 4);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(14));
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'open_blocks'::regclass"),
              GA_PARTITIONS);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM open_blocks_p05"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM open_blocks_p09"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM only open_blocks"), 0);
    CHECK_INT(view_lost(c, "bucket_rows"), 0);
    CHECK_INT(view_lost(c, "gpuagg_measures"), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_measures"), 4);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_class WHERE relname LIKE 'open_blocks_v13%'"), 0);
    /* the writer's upsert: a block rewritten in place, a new one routed */
    CHECK_INT(pg_cmd(c, "CREATE TEMP TABLE gpuagg_stage_blocks (LIKE open_blocks INCLUDING STORAGE)"), 0);
    snprintf(sql, sizeof sql,
             "INSERT INTO gpuagg_stage_blocks SELECT id, metrics, msets, grans, tss, offs, '{7,8}' "
             "FROM open_blocks WHERE id = %lld; INSERT INTO gpuagg_stage_blocks VALUES (%lld, '{1}', "
             "'{1}', '{1}', '{1}', '{0}', '{1}')", (5LL << 32) | 3, (63LL << 32) | 1);
    CHECK_INT(pg_cmd(c, sql), 0);
    CHECK_INT(pg_cmd(c, "INSERT INTO open_blocks AS o SELECT * FROM gpuagg_stage_blocks "
                        "ON CONFLICT (id) DO UPDATE SET vals = EXCLUDED.vals"), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM open_blocks_p63"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_measures WHERE metric = 'a' AND value = 8"), 1);
    /* an id outside the partitions' ranges has no table */
    snprintf(sql, sizeof sql, "INSERT INTO open_blocks VALUES (%lld, '{1}', '{1}', '{1}', '{1}', "
                              "'{0}', '{1}')", (long long)GA_PARTITIONS << 32);
    CHECK_INT(pg_cmd(c, sql) != 0, 1);
    PQfinish(c);
}

static void test_newer_schema_refused(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    CHECK_INT(pg_cmd(c, "INSERT INTO gpuagg_migrations (version, name) VALUES (9999, 'future')"), 0);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), GA_EPROTO);
    CHECK_CONTAINS(err, "9999");
    CHECK_INT(PQtransactionStatus(c), PQTRANS_IDLE);
    CHECK_INT(pg_cmd(c, "DELETE FROM gpuagg_migrations WHERE version = 9999"), 0);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), 0);
    PQfinish(c);
}

/* The methods table the migrations seed (storage/sql/0001_initial_schema.sql)
 * is proto/method.c's table: every method the code knows, by id and name,
 * and nothing else, so that the SQL rows and the code cannot drift apart. */
static void test_methods_table(void)
{
    PGconn *c = pgenv_connect(&env);
    PGresult *r = PQexec(c, "SELECT id, name FROM methods ORDER BY id");
    CHECK_INT(PQresultStatus(r), PGRES_TUPLES_OK);
    int row = 0, n = PQntuples(r);
    char buf[GA_METHOD_NAME_MAX];
    for (int rate = 0; rate < 2; rate++) {
        for (int b = 1; b <= 0xff; b++) {       /* every base a ga_method_t can hold */
            ga_method_t m = (ga_method_t)(b | (rate ? GA_M_RATE : 0));
            if (!ga_method_info(m))
                continue;
            ga_method_name(m, buf);
            if (row >= n) {
                harness_fail(__FILE__, __LINE__, "method %u (%s) has no row in methods", m, buf);
                row++;
                continue;
            }
            CHECK_INT(atoi(PQgetvalue(r, row, 0)), m);
            CHECK_STR(PQgetvalue(r, row, 1), buf);
            CHECK_INT(ga_method_parse(PQgetvalue(r, row, 1)), m);
            row++;
        }
    }
    CHECK_INT(n, row);
    CHECK_INT(n, GA_POLICY_MAX_METHODS);
    PQclear(r);
    PQfinish(c);
}

/* The contents of the file at path (relative to GA_ROOT), NUL-terminated,
 * malloc'd; NULL when it cannot be read. */
static char *read_source(const char *path)
{
    const char *root = getenv("GA_ROOT");
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", root && *root ? root : ".", path);
    FILE *f = fopen(full, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    size_t k;
    while (b && (k = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb)
                free(b);
            b = nb;
        }
    }
    fclose(f);
    if (b)
        b[n] = '\0';
    return b;
}

/* The embedded migrations (storage/sql/): ascending versions, each text
 * beginning with its "-- Migration N: name" line and equal, byte for byte,
 * to its file. */
static void test_migrations_embedded(void)
{
    CHECK(pg_schema_nmigrations > 0);
    CHECK_INT(pg_schema_migrations[0].version, 1);
    for (int i = 0; i < pg_schema_nmigrations; i++) {
        const struct pg_schema_migration *m = &pg_schema_migrations[i];
        char head[256];
        snprintf(head, sizeof head, "-- Migration %d: %s\n", m->version, m->name);
        CHECK_INT(strncmp(m->sql, head, strlen(head)), 0);
        CHECK_CONTAINS(m->file, "storage/sql/");
        char *text = read_source(m->file);
        CHECK(text != NULL);
        if (text && strcmp(text, m->sql) != 0)
            harness_fail(__FILE__, __LINE__, "the embedded text of %s differs from the file", m->file);
        free(text);
        if (i > 0)
            CHECK(m->version > pg_schema_migrations[i - 1].version);
    }
    CHECK_INT(pg_schema_latest_version(), pg_schema_migrations[pg_schema_nmigrations - 1].version);
    CHECK_INT(pg_schema_step_count(0), pg_schema_nmigrations);
}

/* A text that changes when the schema does: tables and their columns,
 * constraints, indexes, views, functions, storage options, and the seeded
 * rows of methods and partitions. */
static void schema_print(PGconn *c, char out[33])
{
    PGresult *r = PQexec(c,
        "SELECT md5(string_agg(x, E'\\n' ORDER BY x)) FROM (\n"
        "  SELECT format('col %s.%s %s %s %s %s', table_name, column_name, data_type,\n"
        "                is_nullable, column_default, ordinal_position)\n"
        "    FROM information_schema.columns WHERE table_schema = 'public'\n"
        "  UNION ALL SELECT format('con %s %s %s', conrelid::regclass, conname,\n"
        "                         pg_get_constraintdef(oid))\n"
        "    FROM pg_constraint WHERE connamespace = 'public'::regnamespace\n"
        "  UNION ALL SELECT 'idx ' || indexdef FROM pg_indexes WHERE schemaname = 'public'\n"
        "  UNION ALL SELECT format('view %s %s', viewname, definition)\n"
        "    FROM pg_views WHERE schemaname = 'public'\n"
        "  UNION ALL SELECT 'fn ' || pg_get_functiondef(oid)\n"
        "    FROM pg_proc WHERE pronamespace = 'public'::regnamespace\n"
        "  UNION ALL SELECT format('rel %s %s %s', relname, relkind, reloptions)\n"
        "    FROM pg_class WHERE relnamespace = 'public'::regnamespace\n"
        "  UNION ALL SELECT format('method %s %s', id, name) FROM methods\n"
        "  UNION ALL SELECT format('partition %s %s %s', id, window_lsn, committed_lsn) FROM partitions\n"
        ") q(x)");
    CHECK_INT(PQresultStatus(r), PGRES_TUPLES_OK);
    snprintf(out, 33, "%s", PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "error");
    PQclear(r);
}

/* From each version a database can be at, the rest of the migrations apply
 * cleanly, each set in its own transaction, and give the schema that the
 * whole set gives from empty. */
static void test_upgrade_from_each_version(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "", want[33], got[33];
    reset_db(c);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(0));
    schema_print(c, want);
    for (int i = 0; i + 1 < pg_schema_nmigrations; i++) {
        int v = pg_schema_migrations[i].version;
        reset_db(c);
        CHECK_INT(pg_schema_migrate_to(c, v, err, sizeof err), i + 1);
        CHECK_INT(pg_scalar(c, "SELECT max(version) FROM gpuagg_migrations"), v);
        CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(v));
        CHECK_STR(err, "");
        schema_print(c, got);
        if (strcmp(got, want) != 0)
            harness_fail(__FILE__, __LINE__, "the schema upgraded from version %d differs from "
                                             "the one made from empty", v);
    }
    PQfinish(c);
}

/* Write one row a day for days [d0, d0 + n) for a metric of policy p. */
static void write_days(const struct ga_policy *p, uint32_t id, const char *name, int64_t d0, int n,
                       uint64_t *s)
{
    struct pg_writer *w;
    struct pg_writer_opts o = { .conninfo = env.conninfo, .flush_rows = 1000, .flush_interval_ms = 100,
                          .retry_initial_ms = 10, .retry_max_ms = 100, .maintenance_interval_ms = -1 };
    CHECK_INT(pg_writer_start(&w, &o), 0);
    struct pg_writer_metric_def d = { id, name, p };
    struct ga_agg *a = malloc((size_t)n * sizeof *a);
    for (int i = 0; i < n; i++)
        a[i] = (struct ga_agg){ id, GA_M_MEAN, 0, p->defs[0].granularity_ns,
                                (d0 + i) * DAY_NS + DAY_NS / 2 / p->defs[0].granularity_ns *
                                p->defs[0].granularity_ns, rnd_value(s) };
    struct pg_writer_unit u = { .aggs = a, .naggs = (size_t)n, .defs = &d, .ndefs = 1 };
    CHECK_INT(pg_writer_submit(w, &u), 0);
    CHECK_INT(pg_writer_stop(w, 10000), 0);
    free(a);
}

static void test_retention(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    uint64_t s = seed;
    reset_db(c);
    CHECK_INT(pg_schema_migrate(c, err, sizeof err), pg_schema_step_count(0));
    /* each archive keeps its own reach: 1 h rows 10 days (+ 1 h), 1 min
     * rows 3 days (+ 1 min); partitions of 10 days and 1 day */
    struct ga_policy p10 = { .name = "ten-days", .back_window = 0 }, p3 = { .name = "three-days" };
    static const char *const mean[] = { "mean" };
    ga_policy_add_def(&p10, 3600LL * 1000000000, 10 * DAY_NS, 0, NULL);
    ga_policy_add_def(&p10, DAY_NS, 10 * DAY_NS, 0, NULL);
    ga_policy_methods_from_list(&p10, mean, 1, NULL);
    ga_policy_add_def(&p3, 60LL * 1000000000, 3 * DAY_NS, 0, NULL);
    ga_policy_methods_from_list(&p3, mean, 1, NULL);
    int64_t now = ga_now_real_ns(), today = now / DAY_NS;
    write_days(&p10, 0, "ten", today - 20, 21, &s);
    write_days(&p3, 1, "three", today - 20, 21, &s);
    const int64_t gs[2] = { 3600LL * 1000000000, 60LL * 1000000000 };
    const int64_t reach[2] = { 10 * DAY_NS + gs[0], 3 * DAY_NS + gs[1] };
    long long parts = 0, drop = 0, kept[2] = { 0, 0 }, dropped_each[2] = { 0, 0 };
    for (int a = 0; a < 2; a++) {
        int64_t w = pg_schema_partition_width(gs[a]), last = -1;
        for (int64_t d = today - 20; d <= today; d++) {
            int64_t p = (d * DAY_NS + DAY_NS / 2 / gs[a] * gs[a]) / w;
            int gone = (p + 1) * w <= now - reach[a];
            if (p != last) {
                parts++;
                drop += gone;
                dropped_each[a] += gone;
                last = p;
            }
            kept[a] += !gone;
        }
    }
    CHECK(pg_schema_partition_width(gs[0]) == 10 * DAY_NS && pg_schema_partition_width(gs[1]) == DAY_NS);
    CHECK(dropped_each[0] >= 1 && dropped_each[1] >= 15);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM bucket_partitions"), parts);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), 42);
    CHECK_INT(pg_schema_retention(c, now, err, sizeof err), drop);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM bucket_partitions"), parts - drop);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates WHERE metric = 0"), kept[0]);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates WHERE metric = 1"), kept[1]);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM aggregates WHERE metric = 1 AND ts < %lld",
             (long long)((now - reach[1]) / DAY_NS * DAY_NS));
    CHECK_INT(pg_scalar(c, sql), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent "
                           "WHERE p.relname = 'buckets'"), parts - drop);
    /* idempotent */
    CHECK_INT(pg_schema_retention(c, now, err, sizeof err), 0);
    /* an unbounded archive in use keeps its own rows; the others go by
     * their reach */
    struct ga_policy forever = { .name = "forever" };
    ga_policy_add_def(&forever, DAY_NS, 0, 0, NULL);
    ga_policy_methods_from_list(&forever, mean, 1, NULL);
    write_days(&forever, 2, "forever", today - 5, 1, &s);
    CHECK_INT(pg_schema_retention(c, now + 100 * DAY_NS, err, sizeof err), parts - drop);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM bucket_partitions"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates WHERE metric = 2"), 1);
    PQfinish(c);
}

static void test_partitions_ahead(void)
{
    struct pg_txn_conn tc;
    struct pg_txn_checkpoint cp;
    char err[512] = "";
    uint64_t s = seed;
    PGconn *c = pgenv_connect(&env);
    reset_db(c);
    CHECK_INT(pg_txn_open(&tc, env.conninfo, 0, 1, &cp, err, sizeof err), 0);
    int created, dropped;
    int64_t now = ga_now_real_ns();
    /* nothing written yet: no archive to create partitions for */
    CHECK_INT(pg_txn_maintain(&tc, now, 3, &created, &dropped, err, sizeof err), 0);
    CHECK_INT(created, 0);
    pg_txn_close(&tc);
    struct ga_policy p = { .name = "minutes" };
    static const char *const mean[] = { "mean" };
    ga_policy_add_def(&p, 60LL * 1000000000, 30 * DAY_NS, 0, NULL);
    ga_policy_methods_from_list(&p, mean, 1, NULL);
    write_days(&p, 0, "m", now / DAY_NS, 1, &s);
    CHECK_INT(pg_txn_open(&tc, env.conninfo, 0, 1, &cp, err, sizeof err), 0);
    CHECK_INT(pg_txn_maintain(&tc, now, 3, &created, &dropped, err, sizeof err), 0);
    CHECK_INT(created, 3);
    CHECK_INT(dropped, 0);
    CHECK_INT(pg_txn_maintain(&tc, now, 3, &created, &dropped, err, sizeof err), 0);
    CHECK_INT(created, 0);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM bucket_partitions WHERE from_ns >= %lld",
             (long long)(now / DAY_NS * DAY_NS));
    CHECK_INT(pg_scalar(c, sql), 4);
    /* the partition name is its archive and its first UTC day */
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM bucket_partitions WHERE name = 'buckets_60000000000_' || "
                           "to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')"), 1);
    pg_txn_close(&tc);
    PQfinish(c);
}

void run_tests(void)
{
    PGENV_SKIP_IF_NO_PG("test_pg_schema");
    seed = rnd_seed();
    printf("seed=%llu (GA_TEST_SEED to repeat)\n", (unsigned long long)seed);
    int ok = pgenv_start(&env) == 0;
    CHECK(ok);
    if (!ok)
        return;
    RUN(test_migrations_embedded);
    RUN(test_migrations_idempotent);
    RUN(test_upgrade_from_each_version);
    RUN(test_v2_alters_existing_partitions);
    RUN(test_v4_moves_rows);
    RUN(test_v10_stores_metric_ids);
    RUN(test_v12_window_tails);
    RUN(test_v13_open_blocks);
    RUN(test_v14_window_positions);
    RUN(test_v15_blocks_partitioned);
    RUN(test_newer_schema_refused);
    RUN(test_methods_table);
    RUN(test_retention);
    RUN(test_partitions_ahead);
    pgenv_destroy(&env);
}
