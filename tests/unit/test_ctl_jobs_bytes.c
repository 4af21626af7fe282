/* test_ctl_jobs_bytes.c — the job.* examples of proto/PROTOCOL.md ("Jobs"),
 * byte for byte, as the daemon's encoders write them; the chunked result
 * rules; and how job.submit's params map becomes key=value text. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include <msgpack.h>

#include "daemon/control/control_ops_jobs.h"
#include "daemon/control/control_priv.h"
#include "daemon/jobs/job_kinds.h"
#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tests/unit/ctl_bytes.h"

/* Generated with Python's msgpack.packb on the documented objects. */
static const uint8_t submit_req[] = {
        0x83, 0xa2, 0x69, 0x64, 0x0a, 0xa2, 0x6f, 0x70, 0xaa, 0x6a, 0x6f, 0x62,
        0x2e, 0x73, 0x75, 0x62, 0x6d, 0x69, 0x74, 0xa4, 0x61, 0x72, 0x67, 0x73,
        0x83, 0xa4, 0x6b, 0x69, 0x6e, 0x64, 0xa6, 0x6b, 0x6d, 0x65, 0x61, 0x6e,
        0x73, 0xa6, 0x70, 0x61, 0x72, 0x61, 0x6d, 0x73, 0x83, 0xa1, 0x6b, 0xa1,
        0x34, 0xa6, 0x63, 0x6f, 0x6f, 0x72, 0x64, 0x73, 0xa1, 0x32, 0xa2, 0x6d,
        0x62, 0xa1, 0x31, 0xa8, 0x70, 0x72, 0x69, 0x6f, 0x72, 0x69, 0x74, 0x79,
        0x05,
};

static const uint8_t submit_resp[] = {
        0x83, 0xa2, 0x69, 0x64, 0x0a, 0xa2, 0x6f, 0x6b, 0xc3, 0xa6, 0x72, 0x65,
        0x73, 0x75, 0x6c, 0x74, 0x81, 0xa2, 0x69, 0x64, 0x01,
};

static const uint8_t status_req[] = {
        0x83, 0xa2, 0x69, 0x64, 0x0b, 0xa2, 0x6f, 0x70, 0xaa, 0x6a, 0x6f, 0x62,
        0x2e, 0x73, 0x74, 0x61, 0x74, 0x75, 0x73, 0xa4, 0x61, 0x72, 0x67, 0x73,
        0x81, 0xa2, 0x69, 0x64, 0x01,
};

static const uint8_t status_resp[] = {
        0x83, 0xa2, 0x69, 0x64, 0x0b, 0xa2, 0x6f, 0x6b, 0xc3, 0xa6, 0x72, 0x65,
        0x73, 0x75, 0x6c, 0x74, 0x8e, 0xa2, 0x69, 0x64, 0x01, 0xa4, 0x6b, 0x69,
        0x6e, 0x64, 0xa6, 0x6b, 0x6d, 0x65, 0x61, 0x6e, 0x73, 0xa5, 0x73, 0x74,
        0x61, 0x74, 0x65, 0xa7, 0x72, 0x75, 0x6e, 0x6e, 0x69, 0x6e, 0x67, 0xa8,
        0x70, 0x72, 0x69, 0x6f, 0x72, 0x69, 0x74, 0x79, 0x05, 0xa8, 0x70, 0x72,
        0x6f, 0x67, 0x72, 0x65, 0x73, 0x73, 0xcb, 0x40, 0x44, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0xa9, 0x73, 0x75, 0x62, 0x6d, 0x69, 0x74, 0x74, 0x65,
        0x64, 0xbe, 0x32, 0x30, 0x32, 0x36, 0x2d, 0x31, 0x31, 0x2d, 0x32, 0x31,
        0x54, 0x31, 0x32, 0x3a, 0x30, 0x30, 0x3a, 0x30, 0x30, 0x2e, 0x30, 0x30,
        0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x5a, 0xa7, 0x73, 0x74, 0x61,
        0x72, 0x74, 0x65, 0x64, 0xbe, 0x32, 0x30, 0x32, 0x36, 0x2d, 0x31, 0x31,
        0x2d, 0x32, 0x31, 0x54, 0x31, 0x32, 0x3a, 0x30, 0x30, 0x3a, 0x30, 0x30,
        0x2e, 0x32, 0x35, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x5a, 0xa8,
        0x66, 0x69, 0x6e, 0x69, 0x73, 0x68, 0x65, 0x64, 0xc0, 0xac, 0x73, 0x75,
        0x62, 0x6d, 0x69, 0x74, 0x74, 0x65, 0x64, 0x5f, 0x6e, 0x73, 0xcf, 0x18,
        0xea, 0x0d, 0xa4, 0x1e, 0x9d, 0x80, 0x00, 0xaa, 0x73, 0x74, 0x61, 0x72,
        0x74, 0x65, 0x64, 0x5f, 0x6e, 0x73, 0xcf, 0x18, 0xea, 0x0d, 0xa4, 0x2d,
        0x84, 0x32, 0x80, 0xab, 0x66, 0x69, 0x6e, 0x69, 0x73, 0x68, 0x65, 0x64,
        0x5f, 0x6e, 0x73, 0xc0, 0xa6, 0x64, 0x65, 0x76, 0x69, 0x63, 0x65, 0xa3,
        0x63, 0x70, 0x75, 0xa5, 0x65, 0x72, 0x72, 0x6f, 0x72, 0xa0, 0xac, 0x72,
        0x65, 0x73, 0x75, 0x6c, 0x74, 0x5f, 0x62, 0x79, 0x74, 0x65, 0x73, 0x00,
};

static const uint8_t result_obj[] = {
        0x81, 0xa3, 0x64, 0x6f, 0x74, 0xcb, 0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00,
};

static const uint8_t chunk_req[] = {
        0x83, 0xa2, 0x69, 0x64, 0x0c, 0xa2, 0x6f, 0x70, 0xaa, 0x6a, 0x6f, 0x62,
        0x2e, 0x72, 0x65, 0x73, 0x75, 0x6c, 0x74, 0xa4, 0x61, 0x72, 0x67, 0x73,
        0x82, 0xa2, 0x69, 0x64, 0x02, 0xa6, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74,
        0x00,
};

static const uint8_t chunk_resp[] = {
        0x83, 0xa2, 0x69, 0x64, 0x0c, 0xa2, 0x6f, 0x6b, 0xc3, 0xa6, 0x72, 0x65,
        0x73, 0x75, 0x6c, 0x74, 0x84, 0xa5, 0x74, 0x6f, 0x74, 0x61, 0x6c, 0x0e,
        0xa6, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x00, 0xa4, 0x64, 0x61, 0x74,
        0x61, 0xc4, 0x0e, 0x81, 0xa3, 0x64, 0x6f, 0x74, 0xcb, 0x3f, 0xf8, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0xa4, 0x6e, 0x65, 0x78, 0x74, 0xc0,
};

static const uint8_t eagain_resp[] = {
        0x83, 0xa2, 0x69, 0x64, 0x0d, 0xa2, 0x6f, 0x6b, 0xc2, 0xa5, 0x65, 0x72,
        0x72, 0x6f, 0x72, 0x83, 0xa4, 0x63, 0x6f, 0x64, 0x65, 0xf5, 0xa4, 0x6e,
        0x61, 0x6d, 0x65, 0xa6, 0x45, 0x41, 0x47, 0x41, 0x49, 0x4e, 0xa7, 0x6d,
        0x65, 0x73, 0x73, 0x61, 0x67, 0x65, 0xd9, 0x25, 0x6a, 0x6f, 0x62, 0x20,
        0x31, 0x20, 0x69, 0x73, 0x20, 0x72, 0x75, 0x6e, 0x6e, 0x69, 0x6e, 0x67,
        0x20, 0x28, 0x34, 0x30, 0x25, 0x29, 0x3a, 0x20, 0x6e, 0x6f, 0x20, 0x72,
        0x65, 0x73, 0x75, 0x6c, 0x74, 0x20, 0x79, 0x65, 0x74,
};

#define T0 1795262400000000000LL         /* 2026-11-21T12:00:00Z */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    return harness_xorshift(&rng);
}


/* Decode bytes into o (zone in z). */
static void decode(const void *data, size_t len, msgpack_zone *z, msgpack_object *o)
{
    size_t off = 0;
    msgpack_zone_init(z, 4096);
    CHECK_INT(msgpack_unpack(data, len, &off, z, o), MSGPACK_UNPACK_SUCCESS);
    CHECK_INT(off, len);
}

static void test_submit_bytes(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    ctl_pack_request_head(p, 10, "job.submit", 1);
    msgpack_pack_map(p, 3);
    mp_pack_kv_str(p, "kind", "kmeans");
    mp_pack_cstr(p, "params");
    msgpack_pack_map(p, 3);
    mp_pack_kv_str(p, "k", "4");
    mp_pack_kv_str(p, "coords", "2");
    mp_pack_kv_str(p, "mb", "1");
    mp_pack_kv_int(p, "priority", 5);
    CHECK(same(b.sb.data, b.sb.size, submit_req, sizeof submit_req));
    msgpack_sbuffer_destroy(&b.sb);

    /* the daemon's reading of that request: params as key=value text */
    msgpack_zone z;
    msgpack_object o;
    uint64_t id;
    const char *op;
    size_t oplen;
    const msgpack_object *args;
    char err[256];
    decode(submit_req, sizeof submit_req, &z, &o);
    CHECK_INT(ctl_parse_request(&o, &id, &op, &oplen, &args, err, sizeof err), 0);
    CHECK_INT(id, 10);
    struct ga_job_params prm;
    CHECK_INT(control_ops_jobs_parse_params(args, &prm, err, sizeof err), 0);
    CHECK_INT(prm.n, 3);
    CHECK_STR(ga_job_param(&prm, "k"), "4");
    CHECK_STR(ga_job_param(&prm, "coords"), "2");
    CHECK_STR(ga_job_param(&prm, "mb"), "1");
    /* and the kmeans kind accepts them before queuing */
    const struct ga_job_kind *km = NULL;
    for (const struct ga_job_kind *const *k = ga_job_kinds; *k; k++)
        if (strcmp((*k)->name, "kmeans") == 0)
            km = *k;
    CHECK(km && km->validate(&prm, 0, err, sizeof err) == 0);
    msgpack_zone_destroy(&z);

    p = begin(&b);
    msgpack_pack_map(p, 1);
    mp_pack_kv_uint(p, "id", 1);
    CHECK(response_is(10, &b, submit_resp, sizeof submit_resp));
}

static void test_status_bytes(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    ctl_pack_request_head(p, 11, "job.status", 1);
    msgpack_pack_map(p, 1);
    mp_pack_kv_uint(p, "id", 1);
    CHECK(same(b.sb.data, b.sb.size, status_req, sizeof status_req));
    msgpack_sbuffer_destroy(&b.sb);

    struct ga_job_info i = { .id = 1, .kind = "kmeans", .priority = 5, .state = GA_JOB_RUNNING,
                             .progress = 40, .submitted_ns = T0, .started_ns = T0 + 250000000,
                             .device = -1 };
    control_ops_jobs_pack_info(begin(&b), &i);
    CHECK(response_is(11, &b, status_resp, sizeof status_resp));
}

static void test_result_bytes(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    ctl_pack_request_head(p, 12, "job.result", 1);
    msgpack_pack_map(p, 2);
    mp_pack_kv_uint(p, "id", 2);
    mp_pack_kv_uint(p, "offset", 0);
    CHECK(same(b.sb.data, b.sb.size, chunk_req, sizeof chunk_req));
    msgpack_sbuffer_destroy(&b.sb);

    control_ops_jobs_pack_chunk(begin(&b), result_obj, sizeof result_obj, 0, CONTROL_OPS_JOBS_CHUNK);
    CHECK(response_is(12, &b, chunk_resp, sizeof chunk_resp));

    size_t len = 0;
    char *data = ctl_pack_response(13, GA_EAGAIN, NULL, 0, "job 1 is running (40%): no result yet",
                                   &len);
    CHECK(same(data, len, eagain_resp, sizeof eagain_resp));
    free(data);
}

/* Chunks of random bytes and random sizes put back together equal them. */
static void test_chunks_reassemble(void)
{
    for (int round = 0; round < 20; round++) {
        size_t len = 1 + rnd() % 5000, max = 1 + rnd() % 700, got = 0;
        uint8_t *res = malloc(len), *back = malloc(len);
        for (size_t i = 0; i < len; i++)
            res[i] = (uint8_t)(1 + rnd() % 255);
        uint64_t off = 0;
        int chunks = 0, more = 1;
        while (more) {
            struct buf b;
            msgpack_zone z;
            msgpack_object o;
            control_ops_jobs_pack_chunk(begin(&b), res, len, off, max);
            decode(b.sb.data, b.sb.size, &z, &o);
            uint64_t total = 0, offset = 9, next = 0;
            CHECK_INT(mp_get_uint(&o, "total", &total), 0);
            CHECK_INT(total, len);
            CHECK_INT(mp_get_uint(&o, "offset", &offset), 0);
            CHECK_INT(offset, off);
            const msgpack_object *d = mp_map_get(&o, "data");
            CHECK(d && d->type == MSGPACK_OBJECT_BIN && d->via.bin.size <= max);
            if (d && d->type == MSGPACK_OBJECT_BIN && got + d->via.bin.size <= len) {
                memcpy(back + got, d->via.bin.ptr, d->via.bin.size);
                got += d->via.bin.size;
            }
            int rc = mp_get_uint(&o, "next", &next);
            more = rc == 0;
            if (more) {
                CHECK_INT(next, off + max);
                off = next;
            } else {
                CHECK_INT(rc, GA_ENOENT);        /* nil: the last chunk */
            }
            chunks++;
            msgpack_zone_destroy(&z);
            msgpack_sbuffer_destroy(&b.sb);
        }
        CHECK_INT(chunks, (int)((len + max - 1) / max));
        CHECK_INT(got, len);
        CHECK(memcmp(res, back, len) == 0);
        free(res);
        free(back);
    }
    /* an offset at the end: empty data, next nil */
    struct buf b;
    msgpack_zone z;
    msgpack_object o;
    uint64_t next;
    control_ops_jobs_pack_chunk(begin(&b), result_obj, sizeof result_obj, sizeof result_obj, 4);
    decode(b.sb.data, b.sb.size, &z, &o);
    CHECK(mp_map_get(&o, "data")->via.bin.size == 0);
    CHECK_INT(mp_get_uint(&o, "next", &next), GA_ENOENT);
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);
}

/* Parse {"params": <what p packed>}. */
static int parse_params(struct buf *b, struct ga_job_params *prm, char *err, size_t errlen)
{
    msgpack_zone z;
    msgpack_object o;
    decode(b->sb.data, b->sb.size, &z, &o);
    int rc = control_ops_jobs_parse_params(&o, prm, err, errlen);
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b->sb);
    return rc;
}

static void test_params_text(void)
{
    struct buf b;
    struct ga_job_params prm;
    char err[256] = "";
    int64_t iv = -(int64_t)(1 + rnd() % 1000000);
    double dv = (double)(1 + rnd() % 1000000) / 7.0;
    msgpack_packer *p = begin(&b);
    msgpack_pack_map(p, 1);
    mp_pack_cstr(p, "params");
    msgpack_pack_map(p, 5);
    mp_pack_kv_str(p, "s", "abc");
    mp_pack_kv_uint(p, "u", 18446744073709551615ULL);
    mp_pack_kv_int(p, "i", iv);
    mp_pack_kv_double(p, "d", dv);
    mp_pack_kv_bool(p, "b", 1);
    CHECK_INT(parse_params(&b, &prm, err, sizeof err), 0);
    char want[64];
    CHECK_STR(ga_job_param(&prm, "s"), "abc");
    CHECK_STR(ga_job_param(&prm, "u"), "18446744073709551615");
    snprintf(want, sizeof want, "%lld", (long long)iv);
    CHECK_STR(ga_job_param(&prm, "i"), want);
    CHECK(strtod(ga_job_param(&prm, "d"), NULL) == dv);     /* %.17g reads back exactly */
    CHECK_STR(ga_job_param(&prm, "b"), "1");

    /* absent or nil: no params */
    p = begin(&b);
    msgpack_pack_map(p, 1);
    mp_pack_cstr(p, "params");
    msgpack_pack_nil(p);
    CHECK_INT(parse_params(&b, &prm, err, sizeof err), 0);
    CHECK_INT(prm.n, 0);

    /* refusals, each naming what was wrong */
    struct { const char *key; int what; const char *needle; } bad[] = {
        { JOB_KIND_INPUT_PATH, 0, "reserved" },
        { "arr", 1, "param 'arr': the value must be" },
        { "dup", 2, "given twice" },
        { "", 0, "non-empty strings" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        p = begin(&b);
        msgpack_pack_map(p, 1);
        mp_pack_cstr(p, "params");
        msgpack_pack_map(p, bad[k].what == 2 ? 2 : 1);
        mp_pack_cstr(p, bad[k].key);
        if (bad[k].what == 1)
            msgpack_pack_array(p, 0);
        else
            mp_pack_cstr(p, "v");
        if (bad[k].what == 2)
            mp_pack_kv_str(p, bad[k].key, "w");
        CHECK_INT(parse_params(&b, &prm, err, sizeof err), GA_EBADARG);
        CHECK_CONTAINS(err, bad[k].needle);
    }
    p = begin(&b);
    msgpack_pack_map(p, 1);
    mp_pack_cstr(p, "params");
    msgpack_pack_map(p, GA_JOB_MAX_PARAMS);
    for (int i = 0; i < GA_JOB_MAX_PARAMS; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        mp_pack_kv_str(p, k, "1");
    }
    CHECK_INT(parse_params(&b, &prm, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "at most 31 parameters");
    p = begin(&b);
    msgpack_pack_map(p, 1);
    mp_pack_cstr(p, "params");
    mp_pack_cstr(p, "k=4");
    CHECK_INT(parse_params(&b, &prm, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "'params' must be a map");
}

/* A finished job's status: device and finish time filled, a queued one nil. */
static void test_info_states(void)
{
    struct ga_job_info i = { .id = 7, .kind = "dot", .state = GA_JOB_QUEUED, .device = -1,
                             .submitted_ns = T0 };
    struct buf b;
    msgpack_zone z;
    msgpack_object o;
    control_ops_jobs_pack_info(begin(&b), &i);
    decode(b.sb.data, b.sb.size, &z, &o);
    CHECK(mp_map_get(&o, "device")->type == MSGPACK_OBJECT_NIL);
    CHECK(mp_map_get(&o, "started")->type == MSGPACK_OBJECT_NIL);
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);
    i.state = GA_JOB_FAILED;
    i.device = 3;
    i.started_ns = T0 + 1;
    i.finished_ns = T0 + 1500000001;
    snprintf(i.error, sizeof i.error, "input: line 2: 1 fields, expected 2");
    control_ops_jobs_pack_info(begin(&b), &i);
    decode(b.sb.data, b.sb.size, &z, &o);
    const char *s;
    size_t n;
    CHECK_INT(mp_get_str(&o, "device", &s, &n), 0);
    CHECK(n == 6 && memcmp(s, "cuda:3", 6) == 0);
    CHECK_INT(mp_get_str(&o, "finished", &s, &n), 0);
    CHECK(n == 30 && memcmp(s, "2026-11-21T12:00:01.500000001Z", 30) == 0);
    CHECK_INT(mp_get_str(&o, "state", &s, &n), 0);
    CHECK(n == 6 && memcmp(s, "failed", 6) == 0);
    CHECK_INT(mp_get_str(&o, "error", &s, &n), 0);
    CHECK(n == strlen(i.error));
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&b.sb);
}

void run_tests(void)
{
    RUN(test_submit_bytes);
    RUN(test_status_bytes);
    RUN(test_result_bytes);
    RUN(test_chunks_reassemble);
    RUN(test_params_text);
    RUN(test_info_states);
}
