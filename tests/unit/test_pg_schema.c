/* test_pg_schema.c — migrations (idempotent, versioned, refusing a newer
 * schema), the methods lookup table, partitions ahead and retention,
 * against a real private PostgreSQL. */
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "gpu/engine.h"
#include "gpu/policy.h"
#include "proto/ga_err.h"
#include "storage/pg_schema.h"
#include "storage/pg_txn.h"
#include "storage/pg_writer.h"
#include "tests/unit/harness.h"
#include "tests/unit/test_pg_env.h"

#define DAY_NS PGS_PARTITION_NS

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
    CHECK_INT(pgs_migrate(c, err, sizeof err), pgs_latest_version());
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_migrations"), pgs_latest_version());
    CHECK_INT(pg_scalar(c, "SELECT max(version) FROM gpuagg_migrations"), pgs_latest_version());
    long long tables = pg_scalar(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
    long long applied = pg_scalar(c, "SELECT extract(epoch FROM applied)::bigint FROM gpuagg_migrations");
    /* second run: nothing to do, nothing changed */
    CHECK_INT(pgs_migrate(c, err, sizeof err), 0);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM gpuagg_migrations"), pgs_latest_version());
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), tables);
    CHECK_INT(pg_scalar(c, "SELECT extract(epoch FROM applied)::bigint FROM gpuagg_migrations"),
              applied);
    CHECK_INT(PQtransactionStatus(c), PQTRANS_IDLE);
    /* every table of docs/STORAGE.md */
    static const char *const names[] = { "metrics", "archive_policies", "aggregates", "late_points",
                                         "checkpoints", "metric_windows", "methods",
                                         "aggregate_partitions", "gpuagg_measures" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_class WHERE relname = '%s'", names[i]);
        CHECK_INT(pg_scalar(c, sql), 1);
    }
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_partitioned_table p JOIN pg_class c "
                           "ON c.oid = p.partrelid WHERE c.relname = 'aggregates' AND p.partstrat = 'r'"), 1);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM checkpoints"), 1);
    PQfinish(c);
}

/* Migration 2 on a database migration 1 left: the partitions that exist
 * then get fillfactor 50 (v1 made them with 80), and later ones too. */
static void test_v2_alters_existing_partitions(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    reset_db(c);
    CHECK_INT(pgs_migrate(c, err, sizeof err), pgs_latest_version());
    int64_t days[3] = { 20000, 20001, 20002 };
    CHECK_INT(pgs_ensure_partitions(c, days, 3, err, sizeof err), 3);
    /* back to what migration 1 left: 80 on every partition, no v2 row */
    pg_cmd(c, "DO $$ DECLARE r record; BEGIN FOR r IN SELECT name FROM aggregate_partitions LOOP "
              "EXECUTE format('ALTER TABLE %I SET (fillfactor = 80)', r.name); END LOOP; END $$");
    pg_cmd(c, "DELETE FROM gpuagg_migrations WHERE version >= 2");
    const char *ff50 = "SELECT count(*) FROM aggregate_partitions p JOIN pg_class c ON c.relname = "
                       "p.name WHERE 'fillfactor=50' = ANY (c.reloptions)";
    CHECK_INT(pg_scalar(c, ff50), 0);
    CHECK_INT(pgs_migrate(c, err, sizeof err), pgs_latest_version() - 1);   /* v2 and on */
    CHECK_STR(err, "");
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregate_partitions"), 3);
    CHECK_INT(pg_scalar(c, ff50), 3);
    int64_t later = 20003;
    CHECK_INT(pgs_ensure_partitions(c, &later, 1, err, sizeof err), 1);
    CHECK_INT(pg_scalar(c, ff50), 4);
    PQfinish(c);
}

static void test_newer_schema_refused(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    CHECK_INT(pg_cmd(c, "INSERT INTO gpuagg_migrations (version, name) VALUES (9999, 'future')"), 0);
    CHECK_INT(pgs_migrate(c, err, sizeof err), GA_EPROTO);
    CHECK_CONTAINS(err, "9999");
    CHECK_INT(PQtransactionStatus(c), PQTRANS_IDLE);
    CHECK_INT(pg_cmd(c, "DELETE FROM gpuagg_migrations WHERE version = 9999"), 0);
    CHECK_INT(pgs_migrate(c, err, sizeof err), 0);
    PQfinish(c);
}

static void test_methods_table(void)
{
    PGconn *c = pgenv_connect(&env);
    PGresult *r = PQexec(c, "SELECT id, name FROM methods ORDER BY id");
    CHECK_INT(PQntuples(r), GA_POLICY_MAX_METHODS);
    for (int i = 0; i < PQntuples(r); i++) {
        int id = atoi(PQgetvalue(r, i, 0));
        char buf[GA_METHOD_NAME_MAX];
        CHECK_STR(PQgetvalue(r, i, 1), ga_method_name((ga_method_t)id, buf));
        CHECK_INT(ga_method_parse(PQgetvalue(r, i, 1)), id);
    }
    PQclear(r);
    PQfinish(c);
}

/* Write one row a day for days [d0, d0 + n) for a metric of policy p. */
static void write_days(const struct ga_policy *p, uint32_t id, const char *name, int64_t d0, int n,
                       uint64_t *s)
{
    struct pgw *w;
    struct pgw_opts o = { .conninfo = env.conninfo, .flush_rows = 1000, .flush_interval_ms = 100,
                          .retry_initial_ms = 10, .retry_max_ms = 100, .maintenance_interval_ms = -1 };
    CHECK_INT(pgw_start(&w, &o), 0);
    struct pgw_metric_def d = { id, name, p };
    struct ga_agg *a = malloc((size_t)n * sizeof *a);
    for (int i = 0; i < n; i++)
        a[i] = (struct ga_agg){ id, GA_M_MEAN, 0, p->defs[0].granularity_ns,
                                (d0 + i) * DAY_NS + DAY_NS / 2 / p->defs[0].granularity_ns *
                                p->defs[0].granularity_ns, rnd_value(s) };
    struct pgw_unit u = { .aggs = a, .naggs = (size_t)n, .defs = &d, .ndefs = 1 };
    CHECK_INT(pgw_submit(w, &u), 0);
    CHECK_INT(pgw_stop(w, 10000), 0);
    free(a);
}

static void test_retention(void)
{
    PGconn *c = pgenv_connect(&env);
    char err[512] = "";
    uint64_t s = seed;
    reset_db(c);
    CHECK_INT(pgs_migrate(c, err, sizeof err), pgs_latest_version());
    /* a policy reaching 10 days (+ its largest granularity, 1 day) and one
     * reaching 3 days: the longer one rules */
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
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregate_partitions"), 21);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), 42);
    /* reach = 10 days + 1 day: partitions ending at or before now - 11 days go */
    int64_t reach = 11 * DAY_NS;
    long long expect_drop = 0;
    for (int64_t d = today - 20; d <= today; d++)
        expect_drop += (d + 1) * DAY_NS <= now - reach;
    CHECK(expect_drop >= 9);
    CHECK_INT(pgs_retention(c, now, err, sizeof err), expect_drop);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregate_partitions"), 21 - expect_drop);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates"), 2 * (21 - expect_drop));
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM aggregates WHERE ts < %lld",
             (long long)((now - reach) / DAY_NS * DAY_NS));
    CHECK_INT(pg_scalar(c, sql), 0);
    /* the newest dropped day had rows (so the check above means something) */
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregates WHERE metric = 0"), 21 - expect_drop);
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent "
                           "WHERE p.relname = 'aggregates'"), 21 - expect_drop);
    /* idempotent */
    CHECK_INT(pgs_retention(c, now, err, sizeof err), 0);
    /* an unbounded policy in use keeps everything */
    struct ga_policy forever = { .name = "forever" };
    ga_policy_add_def(&forever, DAY_NS, 0, 0, NULL);
    ga_policy_methods_from_list(&forever, mean, 1, NULL);
    write_days(&forever, 2, "forever", today - 5, 1, &s);
    CHECK_INT(pgs_retention(c, now + 100 * DAY_NS, err, sizeof err), 0);
    PQfinish(c);
}

static void test_partitions_ahead(void)
{
    struct pgt_conn tc;
    struct pgt_checkpoint cp;
    char err[512] = "";
    PGconn *c = pgenv_connect(&env);
    reset_db(c);
    CHECK_INT(pgt_open(&tc, env.conninfo, &cp, err, sizeof err), 0);
    int created, dropped;
    int64_t now = ga_now_real_ns();
    CHECK_INT(pgt_maintain(&tc, now, 3, &created, &dropped, err, sizeof err), 0);
    CHECK_INT(created, 4);
    CHECK_INT(dropped, 0);
    CHECK_INT(pgt_maintain(&tc, now, 3, &created, &dropped, err, sizeof err), 0);
    CHECK_INT(created, 0);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM aggregate_partitions WHERE from_ns >= %lld",
             (long long)(now / DAY_NS * DAY_NS));
    CHECK_INT(pg_scalar(c, sql), 4);
    /* the partition name is its UTC day */
    CHECK_INT(pg_scalar(c, "SELECT count(*) FROM aggregate_partitions WHERE name = 'aggregates_' || "
                           "to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')"), 1);
    pgt_close(&tc);
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
    RUN(test_migrations_idempotent);
    RUN(test_v2_alters_existing_partitions);
    RUN(test_newer_schema_refused);
    RUN(test_methods_table);
    RUN(test_retention);
    RUN(test_partitions_ahead);
    pgenv_destroy(&env);
}
