/* test_ctl_query_bytes.c — the flush/query/metrics examples of
 * proto/PROTOCOL.md ("Examples: flush, query, metrics"), byte for byte, as
 * the daemon's own encoders write them; and the paging ("next") rules of
 * the query and metrics results. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include <msgpack.h>

#include "daemon/control/control_ops.h"
#include "daemon/control/control_priv.h"
#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tests/unit/ctl_bytes.h"

/* Generated with Python's msgpack.packb on the documented objects. */
static const uint8_t flush_req[] = {
        0x83, 0xa2, 0x69, 0x64, 0x04, 0xa2, 0x6f, 0x70, 0xa5, 0x66, 0x6c, 0x75,
        0x73, 0x68, 0xa4, 0x61, 0x72, 0x67, 0x73, 0x81, 0xaa, 0x74, 0x69, 0x6d,
        0x65, 0x6f, 0x75, 0x74, 0x5f, 0x6d, 0x73, 0xcd, 0x13, 0x88,
};
static const uint8_t flush_resp[] = {
        0x83, 0xa2, 0x69, 0x64, 0x04, 0xa2, 0x6f, 0x6b, 0xc3, 0xa6, 0x72, 0x65,
        0x73, 0x75, 0x6c, 0x74, 0x81, 0xad, 0x63, 0x6f, 0x6d, 0x6d, 0x69, 0x74,
        0x74, 0x65, 0x64, 0x5f, 0x6c, 0x73, 0x6e, 0xce, 0x00, 0x10, 0x00, 0x00,
};
static const uint8_t query_req[] = {
        0x83, 0xa2, 0x69, 0x64, 0x05, 0xa2, 0x6f, 0x70, 0xa5, 0x71, 0x75, 0x65,
        0x72, 0x79, 0xa4, 0x61, 0x72, 0x67, 0x73, 0x84, 0xa6, 0x6d, 0x65, 0x74,
        0x72, 0x69, 0x63, 0xa7, 0x76, 0x6d, 0x31, 0x2f, 0x63, 0x70, 0x75, 0xab,
        0x67, 0x72, 0x61, 0x6e, 0x75, 0x6c, 0x61, 0x72, 0x69, 0x74, 0x79, 0x3c,
        0xa6, 0x6d, 0x65, 0x74, 0x68, 0x6f, 0x64, 0xa4, 0x6d, 0x65, 0x61, 0x6e,
        0xa5, 0x73, 0x74, 0x61, 0x72, 0x74, 0xb4, 0x32, 0x30, 0x32, 0x36, 0x2d,
        0x31, 0x31, 0x2d, 0x32, 0x31, 0x54, 0x31, 0x32, 0x3a, 0x30, 0x30, 0x3a,
        0x30, 0x30, 0x5a,
};
static const uint8_t query_resp[] = {
        0x83, 0xa2, 0x69, 0x64, 0x05, 0xa2, 0x6f, 0x6b, 0xc3, 0xa6, 0x72, 0x65,
        0x73, 0x75, 0x6c, 0x74, 0x85, 0xa6, 0x6d, 0x65, 0x74, 0x72, 0x69, 0x63,
        0xa7, 0x76, 0x6d, 0x31, 0x2f, 0x63, 0x70, 0x75, 0xa6, 0x6d, 0x65, 0x74,
        0x68, 0x6f, 0x64, 0xa4, 0x6d, 0x65, 0x61, 0x6e, 0xae, 0x67, 0x72, 0x61,
        0x6e, 0x75, 0x6c, 0x61, 0x72, 0x69, 0x74, 0x79, 0x5f, 0x6e, 0x73, 0xcf,
        0x00, 0x00, 0x00, 0x0d, 0xf8, 0x47, 0x58, 0x00, 0xa4, 0x72, 0x6f, 0x77,
        0x73, 0x92, 0x92, 0xcf, 0x18, 0xea, 0x0d, 0xa4, 0x1e, 0x9d, 0x80, 0x00,
        0xcb, 0x40, 0x29, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x92, 0xcf, 0x18,
        0xea, 0x0d, 0xb2, 0x16, 0xe4, 0xd8, 0x00, 0xcb, 0x40, 0x2a, 0x80, 0x00,
        0x00, 0x00, 0x00, 0x00, 0xa4, 0x6e, 0x65, 0x78, 0x74, 0xc0,
};
static const uint8_t metrics_req[] = {
        0x83, 0xa2, 0x69, 0x64, 0x06, 0xa2, 0x6f, 0x70, 0xa7, 0x6d, 0x65, 0x74,
        0x72, 0x69, 0x63, 0x73, 0xa4, 0x61, 0x72, 0x67, 0x73, 0x81, 0xa6, 0x70,
        0x72, 0x65, 0x66, 0x69, 0x78, 0xa4, 0x76, 0x6d, 0x31, 0x2f,
};
static const uint8_t metrics_resp[] = {
        0x83, 0xa2, 0x69, 0x64, 0x06, 0xa2, 0x6f, 0x6b, 0xc3, 0xa6, 0x72, 0x65,
        0x73, 0x75, 0x6c, 0x74, 0x82, 0xa7, 0x6d, 0x65, 0x74, 0x72, 0x69, 0x63,
        0x73, 0x91, 0x83, 0xa4, 0x6e, 0x61, 0x6d, 0x65, 0xa7, 0x76, 0x6d, 0x31,
        0x2f, 0x63, 0x70, 0x75, 0xa6, 0x70, 0x6f, 0x6c, 0x69, 0x63, 0x79, 0xa3,
        0x6c, 0x6f, 0x77, 0xa6, 0x70, 0x6f, 0x69, 0x6e, 0x74, 0x73, 0xcd, 0x05,
        0xa0, 0xa4, 0x6e, 0x65, 0x78, 0x74, 0xc0,
};

#define T0 1795262400000000000LL         /* 2026-11-21T12:00:00Z */


static void test_flush_bytes(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    ctl_pack_request_head(p, 4, "flush", 1);
    msgpack_pack_map(p, 1);
    mp_pack_kv_uint(p, "timeout_ms", 5000);
    CHECK(same(b.sb.data, b.sb.size, flush_req, sizeof flush_req));
    msgpack_sbuffer_destroy(&b.sb);

    p = begin(&b);
    msgpack_pack_map(p, 1);
    mp_pack_kv_uint(p, "committed_lsn", 1048576);
    CHECK(response_is(4, &b, flush_resp, sizeof flush_resp));
}

static void test_query_bytes(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    ctl_pack_request_head(p, 5, "query", 1);
    msgpack_pack_map(p, 4);
    mp_pack_kv_str(p, "metric", "vm1/cpu");
    mp_pack_kv_uint(p, "granularity", 60);
    mp_pack_kv_str(p, "method", "mean");
    mp_pack_kv_str(p, "start", "2026-11-21T12:00:00Z");
    CHECK(same(b.sb.data, b.sb.size, query_req, sizeof query_req));
    msgpack_sbuffer_destroy(&b.sb);

    const struct pg_query_point rows[] = { { T0, 12.5 }, { T0 + 60000000000LL, 13.25 } };
    control_ops_query_pack_rows(begin(&b), "vm1/cpu", "mean", 60000000000LL, rows, 2, CONTROL_OPS_QUERY_MAX_ROWS);
    CHECK(response_is(5, &b, query_resp, sizeof query_resp));
}

static void test_metrics_bytes(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    ctl_pack_request_head(p, 6, "metrics", 1);
    msgpack_pack_map(p, 1);
    mp_pack_kv_str(p, "prefix", "vm1/");
    CHECK(same(b.sb.data, b.sb.size, metrics_req, sizeof metrics_req));
    msgpack_sbuffer_destroy(&b.sb);

    struct pg_query_metric m = { .id = 0, .name = "vm1/cpu", .policy = "low", .points = 1440 };
    const struct pg_query_metric *sel[] = { &m };
    CHECK_INT(control_ops_query_pack_metrics(begin(&b), sel, 1, CONTROL_OPS_QUERY_MAX_METRICS,
                                             CONTROL_OPS_QUERY_METRICS_BUDGET), 1);
    CHECK(response_is(6, &b, metrics_resp, sizeof metrics_resp));
}

/* Decode b and return the result map (zone kept in *z). */
static msgpack_object decode(struct buf *b, msgpack_zone *z)
{
    msgpack_object o;
    size_t off = 0;
    msgpack_zone_init(z, 4096);
    CHECK_INT(msgpack_unpack(b->sb.data, b->sb.size, &off, z, &o), MSGPACK_UNPACK_SUCCESS);
    CHECK_INT(off, b->sb.size);
    return o;
}

static void test_query_paging(void)
{
    struct pg_query_point rows[5];
    for (int i = 0; i < 5; i++)
        rows[i] = (struct pg_query_point){ T0 + i * 60000000000LL, i + 0.5 };
    struct buf b;
    msgpack_zone z;
    control_ops_query_pack_rows(begin(&b), "m", "max", 60000000000LL, rows, 5, 3);
    msgpack_object o = decode(&b, &z);
    const msgpack_object *r = mp_map_get(&o, "rows");
    CHECK(r && r->type == MSGPACK_OBJECT_ARRAY && r->via.array.size == 3);
    int64_t next = 0;
    CHECK_INT(mp_get_int(&o, "next", &next), 0);
    CHECK(next == rows[3].ts);                /* the first row left out */
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);

    control_ops_query_pack_rows(begin(&b), "m", "max", 60000000000LL, rows, 3, 3);   /* exactly limit: done */
    o = decode(&b, &z);
    CHECK_INT(mp_get_int(&o, "next", &next), GA_ENOENT);
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);

    control_ops_query_pack_rows(begin(&b), "m", "max", 60000000000LL, NULL, 0, 10);   /* empty */
    o = decode(&b, &z);
    r = mp_map_get(&o, "rows");
    CHECK(r && r->type == MSGPACK_OBJECT_ARRAY && r->via.array.size == 0);
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);
}

static void test_metrics_paging(void)
{
    char names[4][8];
    struct pg_query_metric m[4];
    const struct pg_query_metric *sel[4];
    for (int i = 0; i < 4; i++) {
        snprintf(names[i], sizeof names[i], "m%d", i);
        m[i] = (struct pg_query_metric){ .id = (uint32_t)i, .name = names[i], .policy = "low", .points = 1 };
        sel[i] = &m[i];
    }
    struct buf b;
    msgpack_zone z;
    CHECK_INT(control_ops_query_pack_metrics(begin(&b), sel, 4, 2, CONTROL_OPS_QUERY_METRICS_BUDGET), 2);   /* by limit */
    msgpack_object o = decode(&b, &z);
    const char *s;
    size_t n;
    CHECK_INT(mp_get_str(&o, "next", &s, &n), 0);
    CHECK(n == 2 && memcmp(s, "m1", 2) == 0);   /* the last one returned */
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);

    /* By bytes: one entry is 33 bytes here, a budget of 70 takes two. */
    CHECK_INT(control_ops_query_pack_metrics(begin(&b), sel, 4, 100, 70), 2);
    o = decode(&b, &z);
    const msgpack_object *list = mp_map_get(&o, "metrics");
    CHECK(list && list->via.array.size == 2);
    CHECK_INT(mp_get_str(&o, "next", &s, &n), 0);
    CHECK(n == 2 && memcmp(s, "m1", 2) == 0);
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);

    CHECK_INT(control_ops_query_pack_metrics(begin(&b), sel, 4, 4, CONTROL_OPS_QUERY_METRICS_BUDGET), 4);
    o = decode(&b, &z);
    CHECK_INT(mp_get_str(&o, "next", &s, &n), GA_ENOENT);
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);
}

void run_tests(void)
{
    RUN(test_flush_bytes);
    RUN(test_query_bytes);
    RUN(test_metrics_bytes);
    RUN(test_query_paging);
    RUN(test_metrics_paging);
}
