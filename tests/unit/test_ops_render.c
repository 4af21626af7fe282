/* test_ops_render.c — daemon/http/ops_render.c: the Prometheus text from
 * a counter table, the daemon's table (daemon/stat_table.c), the latency
 * histograms (proto/base/histo.c), the /healthz and /readyz JSON bodies. */
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "daemon/http/ops_render.h"
#include "daemon/stat_snapshot.h"
#include "proto/ga_err.h"
#include "tests/unit/harness.h"

static const int64_t bounds[] = { 1000000, 250000000 };
static struct histo lat = { .bounds_ns = bounds, .nbounds = 2 };

static const struct stat_def table[] = {
    { "uptime_s", STAT_GAUGE, "seconds (float)", "Time since the daemon started.", "gpuagg_uptime_seconds",
      NULL, 1, NULL, { 0 } },
    { "ingest.bytes_in", STAT_COUNTER, "bytes", "Bytes read from \\ streams.\nSecond line.",
      "gpuagg_received_bytes_total", "listener=\"stream\"", 1, NULL, { 0 } },
    { "storage.connected", STAT_FLAG, "—", "1 while connected.", "gpuagg_storage_connected", NULL, 1,
      NULL, { 0 } },
    { "engine.late.window", STAT_COUNTER, "points", "Older than the window.",
      "gpuagg_engine_late_points_total", "reason=\"window\"", 1, NULL, { 0 } },
    { "engine.late_points", STAT_COUNTER, "points", "All late points.", NULL, NULL, 1, NULL, { 0 } },
    { "engine.feed_ms", STAT_COUNTER, "ms", "Time in feeds.", "gpuagg_engine_feed_seconds_total", NULL,
      0.001, NULL, { 0 } },
    { "ceilometer_tcp.bytes_in", STAT_COUNTER, "bytes", "Bytes read.", "gpuagg_received_bytes_total",
      "listener=\"ceilometer_tcp\"", 1, NULL, { 0 } },
    { "engine.late.nonfinite", STAT_COUNTER, "points", "NaN.", "gpuagg_engine_late_points_total",
      "reason=\"nonfinite\"", 1, NULL, { 0 } },
    { "engine.metrics", STAT_GAUGE, "metrics", "Metrics known.", "gpuagg_engine_metrics", NULL, 1, NULL, { 0 } },
    { "x.lat", STAT_HISTOGRAM, "seconds", "A latency.", "gpuagg_x_latency_seconds", NULL, 1e-9, &lat, { 0 } },
};
#define NTABLE (sizeof table / sizeof table[0])
static const struct stat_family fams[] = {
    { "gpuagg_received_bytes_total", "Bytes read, by listener." },
    { "gpuagg_engine_late_points_total", "Late points, by reason." },
};

static void test_histo(void)
{
    struct histo_snap s;
    histo_read(&lat, &s);
    CHECK_INT(s.count, 0);
    CHECK_INT(histo_quantile_bound_ns(&s, 0.99), 0);
    histo_observe_ns(&lat, 500000);         /* 0.5 ms: le 0.001 */
    histo_observe_ns(&lat, 1000000);        /* exactly the bound: le 0.001 */
    histo_observe_ns(&lat, 2000000);        /* le 0.25 */
    histo_observe_ns(&lat, 3000000000LL);   /* +Inf */
    histo_observe_ns(&lat, -5);             /* counts as 0 */
    histo_read(&lat, &s);
    CHECK_INT(s.count, 5);
    CHECK_INT(s.cum[0], 3);
    CHECK_INT(s.cum[1], 4);
    CHECK_INT(s.cum[2], 5);
    CHECK_INT(s.sum_ns, 3003500000LL);
    CHECK_INT(histo_quantile_bound_ns(&s, 0.5), 1000000);
    CHECK_INT(histo_quantile_bound_ns(&s, 0.8), 250000000);
    CHECK_INT(histo_quantile_bound_ns(&s, 0.99), 250000000);   /* past the last bound */
}

static msgpack_object *unpack(msgpack_sbuffer *sb, msgpack_unpacked *u)
{
    msgpack_unpacked_init(u);
    CHECK(msgpack_unpack_next(u, sb->data, sb->size, NULL) == MSGPACK_UNPACK_SUCCESS);
    return &u->data;
}

static void kv_u(msgpack_packer *pk, const char *k, uint64_t v)
{
    msgpack_pack_str(pk, strlen(k));
    msgpack_pack_str_body(pk, k, strlen(k));
    msgpack_pack_uint64(pk, v);
}

static void test_render(void)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 9);
    msgpack_pack_str(&pk, 8);
    msgpack_pack_str_body(&pk, "uptime_s", 8);
    msgpack_pack_double(&pk, 12.5);
    kv_u(&pk, "ingest.bytes_in", 18446744073709551615ull);
    kv_u(&pk, "storage.connected", 1);
    kv_u(&pk, "new.thing", 7);
    kv_u(&pk, "engine.late.window", 4);
    kv_u(&pk, "engine.late_points", 5);
    kv_u(&pk, "engine.feed_ms", 1500);
    kv_u(&pk, "engine.late.nonfinite", 1);
    msgpack_pack_str(&pk, 14);
    msgpack_pack_str_body(&pk, "engine.metrics", 14);
    msgpack_pack_int64(&pk, -3);
    msgpack_unpacked u;
    msgpack_object *o = unpack(&sb, &u);
    char *text = NULL;
    size_t len = 0;
    CHECK_INT(ops_prom_render(o, table, NTABLE, fams, 2, &text, &len), 0);
    CHECK(text && strlen(text) == len);
    CHECK_STR(text,
              "# HELP gpuagg_uptime_seconds Time since the daemon started. Unit: seconds (float). "
              "(gpuaggctl stats: uptime_s)\n"
              "# TYPE gpuagg_uptime_seconds gauge\n"
              "gpuagg_uptime_seconds 12.5\n"
              /* a family with labels: its rows together, ceilometer_tcp's absent from the map */
              "# HELP gpuagg_received_bytes_total Bytes read, by listener.\n"
              "# TYPE gpuagg_received_bytes_total counter\n"
              "gpuagg_received_bytes_total{listener=\"stream\"} 18446744073709551615\n"
              "# HELP gpuagg_storage_connected 1 while connected. (gpuaggctl stats: storage.connected)\n"
              "# TYPE gpuagg_storage_connected gauge\n"
              "gpuagg_storage_connected 1\n"
              "# HELP gpuagg_engine_late_points_total Late points, by reason.\n"
              "# TYPE gpuagg_engine_late_points_total counter\n"
              "gpuagg_engine_late_points_total{reason=\"window\"} 4\n"
              "gpuagg_engine_late_points_total{reason=\"nonfinite\"} 1\n"
              /* engine.late_points: stats only; ms scaled to seconds */
              "# HELP gpuagg_engine_feed_seconds_total Time in feeds. Unit: seconds. "
              "(gpuaggctl stats: engine.feed_ms)\n"
              "# TYPE gpuagg_engine_feed_seconds_total counter\n"
              "gpuagg_engine_feed_seconds_total 1.5\n"
              "# HELP gpuagg_engine_metrics Metrics known. Unit: metrics. (gpuaggctl stats: engine.metrics)\n"
              "# TYPE gpuagg_engine_metrics gauge\n"
              "gpuagg_engine_metrics -3\n"
              "# HELP gpuagg_x_latency_seconds A latency. (gpuaggctl stats: x.lat.*)\n"
              "# TYPE gpuagg_x_latency_seconds histogram\n"
              "gpuagg_x_latency_seconds_bucket{le=\"0.001\"} 3\n"
              "gpuagg_x_latency_seconds_bucket{le=\"0.25\"} 4\n"
              "gpuagg_x_latency_seconds_bucket{le=\"+Inf\"} 5\n"
              "gpuagg_x_latency_seconds_sum 3.0035\n"
              "gpuagg_x_latency_seconds_count 5\n"
              "# HELP gpuagg_new_thing gpuaggctl stats name new.thing (not in the counter table)\n"
              "# TYPE gpuagg_new_thing untyped\n"
              "gpuagg_new_thing 7\n");
    free(text);
    msgpack_unpacked_destroy(&u);

    /* not a map; a value that is not a number */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 0);
    o = unpack(&sb, &u);
    CHECK_INT(ops_prom_render(o, table, NTABLE, fams, 2, &text, &len), GA_EINVAL);
    CHECK(text == NULL);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str(&pk, 1);
    msgpack_pack_str_body(&pk, "x", 1);
    msgpack_pack_str(&pk, 1);
    msgpack_pack_str_body(&pk, "y", 1);
    o = unpack(&sb, &u);
    CHECK_INT(ops_prom_render(o, table, NTABLE, fams, 2, &text, &len), GA_EINVAL);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
}

/* The daemon's table: Prometheus conventions hold for every row. */
static void test_stat_table(void)
{
    CHECK(stat_table_n > 150);
    for (size_t i = 0; i < stat_table_n; i++) {
        const struct stat_def *d = &stat_table[i];
        CHECK(d->help[0] && !strchr(d->help, '`'));
        CHECK(stat_table_find(d->name, strlen(d->name)) == d);     /* names are unique */
        if (!d->prom)
            continue;
        size_t n = strlen(d->prom);
        int total = n > 6 && !strcmp(d->prom + n - 6, "_total");
        CHECK(!strncmp(d->prom, "gpuagg_", 7));
        CHECK(strspn(d->prom, "abcdefghijklmnopqrstuvwxyz0123456789_") == n);
        if (total != (d->kind == STAT_COUNTER))
            harness_fail(__FILE__, __LINE__, "%s: _total on counters and only on them", d->prom);
        if (strstr(d->prom, "_ms") || (!strcmp(d->unit, "bytes") && !strstr(d->prom, "bytes") &&
                                        !d->labels))
            harness_fail(__FILE__, __LINE__, "%s: not in base units", d->prom);
        if (d->kind == STAT_HISTOGRAM)
            CHECK(d->histo && strstr(d->prom, "_seconds"));
        if (d->labels && !stat_table_family_help(d->prom))
            harness_fail(__FILE__, __LINE__, "%s: a labelled family without its help", d->prom);
        /* a family's rows agree on the kind */
        for (size_t j = 0; j < i; j++)
            if (stat_table[j].prom && !strcmp(stat_table[j].prom, d->prom))
                CHECK_INT(stat_table[j].kind == STAT_COUNTER, d->kind == STAT_COUNTER);
    }
    const struct stat_def *d = stat_table_find("udp.rejected.bad_signature", 26);
    CHECK(d && !strcmp(d->prom, "gpuagg_udp_rejected_total"));
    CHECK_STR(d->labels, "reason=\"bad_signature\"");
    d = stat_table_find("engine.late.window", 18);
    CHECK(d && !strcmp(d->prom, "gpuagg_engine_late_points_total"));
    CHECK_STR(d->labels, "reason=\"window\"");
    d = stat_table_find("engine.feed_ms", 14);
    CHECK(d && !strcmp(d->prom, "gpuagg_engine_feed_seconds_total") && d->scale == 0.001);
}

/* Every row but the histograms has a value; the sources read the fields
 * they name, and each listener row finds its own slot. */
static void test_stat_values(void)
{
    static struct stat_snapshot s;
    for (int i = 0; i < INGEST_MAX_LISTENERS; i++)
        for (int j = 0; j < INGEST_MAX_COUNTERS; j++)
            s.in.listener[i][j] = 1000 * (uint64_t)i + (uint64_t)j + 1;
    s.uptime_s = 2.5;
    s.in.conns_refused_peer = 4;
    s.ew.feed_ns = 2999999999;
    s.jn.stalled_errno = 28;
    s.pg.state = PG_CONN_CONNECTED;
    s.sizing[GA_SIZED_JOURNAL_MAX_BYTES].value = 1 << 30;
    s.sizing[GA_SIZED_ENGINE_WORKERS].is_auto = 1;
    s.http.connections = 3;
    uint64_t seen[64];
    int nl = 0;
    for (size_t i = 0; i < stat_table_n; i++) {
        const struct stat_def *d = &stat_table[i];
        CHECK_INT(d->kind == STAT_HISTOGRAM, d->src.kind == STAT_SRC_NONE);
        if (d->src.kind != STAT_SRC_LISTENER)
            continue;
        uint64_t v = stat_value(d, &s);
        if (!v)
            harness_fail(__FILE__, __LINE__, "%s: no listener counter of that name", d->name);
        for (int k = 0; k < nl; k++)
            CHECK(seen[k] != v);
        if (nl < 64)
            seen[nl++] = v;
    }
    CHECK(nl >= 30);
#define VAL(name) stat_value(stat_table_find(name, strlen(name)), &s)
    CHECK(stat_value_double(stat_table_find("uptime_s", 8), &s) == 2.5);
    CHECK_INT(VAL("ingest.connections_refused_peer"), 4);
    CHECK_INT(VAL("ingest.connections_refused"), 0);
    CHECK_INT(VAL("engine.feed_ms"), 2999);
    CHECK_INT(VAL("journal.stalled"), 1);
    CHECK_INT(VAL("storage.connected"), 1);
    s.ew.have_writer = 1;               /* the writer's state once it runs */
    CHECK_INT(VAL("storage.connected"), 0);
    CHECK_INT(VAL("sizing.journal.max_bytes"), 1 << 30);
    CHECK_INT(VAL("sizing.engine.workers.auto"), 1);
    CHECK_INT(VAL("http.connections_open"), 3);
#undef VAL
}

static void test_health(void)
{
    char *j = NULL;
    struct ops_health h = { 1, 0, 0.25, 2000, 10.5, "1.2.3" };
    CHECK_INT(ops_health_render(&h, &j), 200);
    CHECK_STR(j, "{\"checks\":{\"loop\":{\"ok\":true,\"round_trip_ms\":0.25,\"limit_ms\":2000.0},"
                 "\"draining\":false},"
                 "\"uptime_s\":10.5,\"version\":\"1.2.3\",\"status\":\"ok\",\"reasons\":[]}");
    free(j);
    h.loop_ok = 0;
    CHECK_INT(ops_health_render(&h, &j), 503);
    CHECK_CONTAINS(j, "\"status\":\"fail\"");
    CHECK_CONTAINS(j, "the event loop did not run a request within 2000 ms\"");
    free(j);
    h.draining = 1;                               /* the drain's final commit holds the loop */
    CHECK_INT(ops_health_render(&h, &j), 200);
    CHECK_CONTAINS(j, "\"status\":\"ok\"");
    CHECK_CONTAINS(j, "within 2000 ms (expected while draining");
    free(j);
}

static void test_ready(void)
{
    char *j = NULL;
    struct ops_ready r = { 0, "running", 0, 1, "connected", "", 1000, 4000, 1000, "" };
    CHECK_INT(ops_ready_render(&r, &j), 200);
    CHECK_CONTAINS(j, "\"status\":\"ready\"");
    CHECK_CONTAINS(j, "\"reasons\":[]");
    free(j);
    r.journal_retained_bytes = 3001;              /* less than a segment of room */
    CHECK_INT(ops_ready_render(&r, &j), 503);
    CHECK_CONTAINS(j, "journal full: 3001 of 4000 bytes");
    CHECK_CONTAINS(j, "\"journal\":{\"ok\":false");
    free(j);
    r.journal_retained_bytes = 0;
    r.journal_error = "No space left on device";  /* stalled: its file system full */
    CHECK_INT(ops_ready_render(&r, &j), 503);
    CHECK_CONTAINS(j, "journal cannot write: No space left on device");
    CHECK_CONTAINS(j, "\"error\":\"No space left on device\"");
    free(j);
    r.journal_error = "";
    r.storage_connected = 0;
    r.storage_state = "down";
    r.storage_error = "could not connect: \"quoted\"";
    r.draining = 1;
    r.state = "draining";
    CHECK_INT(ops_ready_render(&r, &j), 503);
    CHECK_CONTAINS(j, "\"status\":\"not ready\"");
    CHECK_CONTAINS(j, "storage (PostgreSQL) is down: could not connect: \\\"quoted\\\"");
    CHECK_CONTAINS(j, "draining: the daemon is shutting down");
    CHECK_CONTAINS(j, "\"draining\":{\"ok\":false,\"state\":\"draining\"}");
    free(j);
    struct ops_ready busy = { .unread = 1, .state = "draining", .draining = 1 };
    CHECK_INT(ops_ready_render(&busy, &j), 503);
    CHECK_CONTAINS(j, "\"storage\":{\"ok\":null,\"why\":\"not read:");
    CHECK_CONTAINS(j, "\"reasons\":[\"draining: the daemon is shutting down\"]");
    free(j);
}

void run_tests(void)
{
    RUN(test_histo);
    RUN(test_render);
    RUN(test_stat_table);
    RUN(test_stat_values);
    RUN(test_health);
    RUN(test_ready);
}
