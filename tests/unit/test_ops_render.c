/* test_ops_render.c — daemon/http/ops_render.c: Prometheus names and text,
 * the /healthz and /readyz JSON bodies. */
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "daemon/http/ops_render.h"
#include "proto/ga_err.h"
#include "tests/unit/harness.h"

static const struct ops_counter_doc docs[] = {
    { "uptime_s", "gauge", "seconds (float)", "Time since the daemon started." },
    { "ctl.connections_total", "counter", "connections", "Connections accepted." },
    { "ingest.bytes_in", "counter", "bytes", "Bytes read from \\ streams.\nSecond line." },
    { "journal.retained_bytes", "gauge", "bytes", "Bytes kept." },
    { "udp.rejected.not_msgpack", "counter", "datagrams", "Not msgpack." },
    { "storage.connected", "flag", "—", "1 while connected." },
    { "engine.metrics", "gauge", "metrics", "Metrics known." },
};
#define NDOCS (sizeof docs / sizeof docs[0])

static const char *pname(const char *name, int i)
{
    static char out[320];
    if (!ops_prom_name(name, i >= 0 ? &docs[i] : NULL, out, sizeof out))
        return "(too long)";
    return out;
}

static void test_names(void)
{
    CHECK_STR(pname("uptime_s", 0), "gpuagg_uptime_seconds");
    CHECK_STR(pname("ctl.connections_total", 1), "gpuagg_ctl_connections_total");
    CHECK_STR(pname("ingest.bytes_in", 2), "gpuagg_ingest_bytes_in_total");
    CHECK_STR(pname("journal.retained_bytes", 3), "gpuagg_journal_retained_bytes");
    CHECK_STR(pname("udp.rejected.not_msgpack", 4), "gpuagg_udp_rejected_not_msgpack_total");
    CHECK_STR(pname("storage.connected", 5), "gpuagg_storage_connected");
    CHECK_STR(pname("odd-name.x y", -1), "gpuagg_odd_name_x_y");
    char small[16];
    CHECK_INT(ops_prom_name("ingest.points_accepted", NULL, small, sizeof small), 0);
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
    msgpack_pack_map(&pk, 5);
    msgpack_pack_str(&pk, 8);
    msgpack_pack_str_body(&pk, "uptime_s", 8);
    msgpack_pack_double(&pk, 12.5);
    kv_u(&pk, "ingest.bytes_in", 18446744073709551615ull);
    kv_u(&pk, "storage.connected", 1);
    kv_u(&pk, "new.thing", 7);
    msgpack_pack_str(&pk, 14);
    msgpack_pack_str_body(&pk, "engine.metrics", 14);
    msgpack_pack_int64(&pk, -3);
    msgpack_unpacked u;
    msgpack_object *o = unpack(&sb, &u);
    char *text = NULL;
    size_t len = 0;
    CHECK_INT(ops_prom_render(o, docs, NDOCS, &text, &len), 0);
    CHECK(text && strlen(text) == len);
    CHECK_STR(text,
              "# HELP gpuagg_uptime_seconds Time since the daemon started. Unit: seconds (float). "
              "(gpuaggctl stats: uptime_s)\n"
              "# TYPE gpuagg_uptime_seconds gauge\n"
              "gpuagg_uptime_seconds 12.5\n"
              "# HELP gpuagg_ingest_bytes_in_total Bytes read from \\\\ streams.\\nSecond line. "
              "Unit: bytes. (gpuaggctl stats: ingest.bytes_in)\n"
              "# TYPE gpuagg_ingest_bytes_in_total counter\n"
              "gpuagg_ingest_bytes_in_total 18446744073709551615\n"
              "# HELP gpuagg_storage_connected 1 while connected. (gpuaggctl stats: storage.connected)\n"
              "# TYPE gpuagg_storage_connected gauge\n"
              "gpuagg_storage_connected 1\n"
              "# HELP gpuagg_new_thing gpuaggctl stats name new.thing (not in docs/COUNTERS.md)\n"
              "# TYPE gpuagg_new_thing untyped\n"
              "gpuagg_new_thing 7\n"
              "# HELP gpuagg_engine_metrics Metrics known. Unit: metrics. (gpuaggctl stats: engine.metrics)\n"
              "# TYPE gpuagg_engine_metrics gauge\n"
              "gpuagg_engine_metrics -3\n");
    free(text);
    msgpack_unpacked_destroy(&u);

    /* not a map; a value that is not a number */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 0);
    o = unpack(&sb, &u);
    CHECK_INT(ops_prom_render(o, docs, NDOCS, &text, &len), GA_EINVAL);
    CHECK(text == NULL);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str(&pk, 1);
    msgpack_pack_str_body(&pk, "x", 1);
    msgpack_pack_str(&pk, 1);
    msgpack_pack_str_body(&pk, "y", 1);
    o = unpack(&sb, &u);
    CHECK_INT(ops_prom_render(o, docs, NDOCS, &text, &len), GA_EINVAL);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
}

static void test_generated_docs(void)
{
    CHECK(ops_ncounter_docs > 80);
    int found = 0;
    for (size_t i = 0; i < ops_ncounter_docs; i++) {
        const struct ops_counter_doc *d = &ops_counter_docs[i];
        CHECK(d->help[0] && !strchr(d->help, '`'));
        CHECK(!strcmp(d->kind, "counter") || !strcmp(d->kind, "gauge") || !strcmp(d->kind, "flag"));
        if (!strcmp(d->name, "ingest.points_accepted")) {
            found = 1;
            CHECK_STR(d->kind, "counter");
            CHECK_STR(d->unit, "points");
        }
    }
    CHECK(found);
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
    RUN(test_names);
    RUN(test_render);
    RUN(test_generated_docs);
    RUN(test_health);
    RUN(test_ready);
}
