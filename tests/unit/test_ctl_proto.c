/* test_ctl_proto.c — control protocol envelope: pack → bytes (as documented in
 * proto/PROTOCOL.md) → unpack → parse round trips, and every malformed
 * request/response with its error message. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include <msgpack.h>

#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_frame.h"
#include "proto/mp_util.h"

struct buf {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_zone zone;
    msgpack_object obj;
};

static msgpack_packer *begin(struct buf *b)
{
    msgpack_sbuffer_init(&b->sb);
    msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
    msgpack_zone_init(&b->zone, 1024);
    return &b->pk;
}

/* Frame with mp_frame_scan, then decode, as the daemon and CLI do. */
static const msgpack_object *decode(struct buf *b)
{
    size_t fl = 0, off = 0;
    CHECK_INT(mp_frame_scan((const uint8_t *)b->sb.data, b->sb.size, CTL_MAX_FRAME, &fl), 1);
    CHECK_INT(fl, b->sb.size);
    CHECK_INT(msgpack_unpack(b->sb.data, fl, &off, &b->zone, &b->obj), MSGPACK_UNPACK_SUCCESS);
    return &b->obj;
}

static void end(struct buf *b)
{
    msgpack_zone_destroy(&b->zone);
    msgpack_sbuffer_destroy(&b->sb);
}

static int bytes_are(const struct buf *b, const uint8_t *want, size_t n)
{
    return b->sb.size == n && memcmp(b->sb.data, want, n) == 0;
}

/* The hex dumps in proto/PROTOCOL.md, byte for byte. */
static void test_documented_bytes(void)
{
    struct buf b;
    ctl_pack_request_head(begin(&b), 1, "ping", 0);
    static const uint8_t ping[] = { 0x82, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p', 0xa4, 'p', 'i', 'n', 'g' };
    CHECK(bytes_are(&b, ping, sizeof ping));
    end(&b);

    msgpack_packer *p = begin(&b);
    ctl_pack_ok_head(p, 1);
    msgpack_pack_map(p, 2);
    mp_pack_kv_bool(p, "pong", 1);
    mp_pack_kv_str(p, "version", "0.1.0");
    static const uint8_t pong[] = { 0x83, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'k', 0xc3,
        0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x82, 0xa4, 'p', 'o', 'n', 'g', 0xc3,
        0xa7, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0xa5, '0', '.', '1', '.', '0' };
    CHECK(bytes_are(&b, pong, sizeof pong));
    end(&b);

    p = begin(&b);
    ctl_pack_request_head(p, 2, "status", 1);
    msgpack_pack_map(p, 0);
    static const uint8_t status[] = { 0x83, 0xa2, 'i', 'd', 0x02, 0xa2, 'o', 'p',
        0xa6, 's', 't', 'a', 't', 'u', 's', 0xa4, 'a', 'r', 'g', 's', 0x80 };
    CHECK(bytes_are(&b, status, sizeof status));
    end(&b);

    ctl_pack_error(begin(&b), 3, GA_EBADOP, "unknown op 'frob'");
    static const uint8_t error[] = { 0x83, 0xa2, 'i', 'd', 0x03, 0xa2, 'o', 'k', 0xc2,
        0xa5, 'e', 'r', 'r', 'o', 'r', 0x83,
        0xa4, 'c', 'o', 'd', 'e', 0xd1, 0xef, 0xfe,                  /* -4098 as int16 */
        0xa4, 'n', 'a', 'm', 'e', 0xa6, 'E', 'B', 'A', 'D', 'O', 'P',
        0xa7, 'm', 'e', 's', 's', 'a', 'g', 'e', 0xb1,
        'u', 'n', 'k', 'n', 'o', 'w', 'n', ' ', 'o', 'p', ' ', '\'', 'f', 'r', 'o', 'b', '\'' };
    CHECK(bytes_are(&b, error, sizeof error));
    end(&b);
}

static void test_request_round_trip(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    ctl_pack_request_head(p, UINT64_MAX, "config.get", 1);
    msgpack_pack_map(p, 1);
    mp_pack_kv_str(p, "section", "storage");
    uint64_t id = 0;
    const char *op = NULL;
    size_t oplen = 0;
    const msgpack_object *args = NULL;
    char err[128] = "";
    CHECK_INT(ctl_parse_request(decode(&b), &id, &op, &oplen, &args, err, sizeof err), 0);
    CHECK(id == UINT64_MAX);
    CHECK_INT(oplen, 10);
    CHECK(op && memcmp(op, "config.get", 10) == 0);
    CHECK(args != NULL);
    CHECK(mp_str_eq(mp_map_get(args, "section"), "storage"));
    CHECK_STR(err, "");
    end(&b);

    ctl_pack_request_head(begin(&b), 9, "ping", 0);
    CHECK_INT(ctl_parse_request(decode(&b), &id, &op, &oplen, &args, err, sizeof err), 0);
    CHECK_INT(id, 9);
    CHECK(args == NULL);
    end(&b);
}

static void test_response_round_trip(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    ctl_pack_ok_head(p, 42);
    msgpack_pack_array(p, 1);
    msgpack_pack_int(p, 5);
    uint64_t id = 7;
    int ok = -1;
    const msgpack_object *result = NULL;
    int64_t code = 0;
    const char *msg = NULL;
    size_t msglen = 0;
    char err[128] = "";
    CHECK_INT(ctl_parse_response(decode(&b), &id, &ok, &result, &code, &msg, &msglen, err, sizeof err), 0);
    CHECK_INT(id, 42);
    CHECK_INT(ok, 1);
    CHECK(result && result->type == MSGPACK_OBJECT_ARRAY && result->via.array.size == 1);
    CHECK(msg == NULL);
    end(&b);

    p = begin(&b);                                  /* nil result is a result */
    ctl_pack_ok_head(p, 1);
    msgpack_pack_nil(p);
    CHECK_INT(ctl_parse_response(decode(&b), &id, &ok, &result, &code, &msg, &msglen, err, sizeof err), 0);
    CHECK(result && result->type == MSGPACK_OBJECT_NIL);
    end(&b);

    ctl_pack_error(begin(&b), 5, GA_ECONFIG, "gpuaggd.yaml:3: storage.conninfo: must not be empty");
    const msgpack_object *o = decode(&b);
    CHECK_INT(ctl_parse_response(o, &id, &ok, &result, &code, &msg, &msglen, err, sizeof err), 0);
    CHECK_INT(id, 5);
    CHECK_INT(ok, 0);
    CHECK_INT(code, GA_ECONFIG);
    CHECK_INT(msglen, strlen("gpuaggd.yaml:3: storage.conninfo: must not be empty"));
    CHECK(msg && memcmp(msg, "gpuaggd.yaml:3:", 15) == 0);
    size_t nlen = 0;
    const char *name = ctl_response_error_name(o, &nlen);
    CHECK(name && nlen == 7 && memcmp(name, "ECONFIG", 7) == 0);
    end(&b);

    ctl_pack_error(begin(&b), 0, GA_ETOOBIG, NULL);     /* NULL message → ga_strerror */
    CHECK_INT(ctl_parse_response(decode(&b), &id, &ok, &result, &code, &msg, &msglen, err, sizeof err), 0);
    CHECK_INT(id, 0);
    CHECK_INT(code, GA_ETOOBIG);
    CHECK(msglen == strlen(ga_strerror(GA_ETOOBIG)) && memcmp(msg, ga_strerror(GA_ETOOBIG), msglen) == 0);
    end(&b);
}

/* Build a map from alternating key/value "specs": "s:text" str, "u:N" uint,
 * "i:N" int, "b:1" bool, "n" nil, "m" empty map, "a" empty array, "M:k=v" map
 * with one str entry. */
static void pack_spec(msgpack_packer *p, const char *spec)
{
    switch (spec[0]) {
    case 's': mp_pack_cstr(p, spec + 2); break;
    case 'u': msgpack_pack_uint64(p, strtoull(spec + 2, NULL, 10)); break;
    case 'i': msgpack_pack_int64(p, strtoll(spec + 2, NULL, 10)); break;
    case 'b': spec[2] == '1' ? msgpack_pack_true(p) : msgpack_pack_false(p); break;
    case 'n': msgpack_pack_nil(p); break;
    case 'm': msgpack_pack_map(p, 0); break;
    case 'a': msgpack_pack_array(p, 0); break;
    case 'f': msgpack_pack_double(p, 1.5); break;
    }
}

struct bad_case {
    const char *kv[8];      /* key spec, value spec, ...; NULL-terminated */
    int rc;
    const char *err;
    uint64_t id;
};

static const msgpack_object *build(struct buf *b, const char *const *kv)
{
    msgpack_packer *p = begin(b);
    size_t n = 0;
    while (kv[n])
        n++;
    msgpack_pack_map(p, n / 2);
    for (size_t i = 0; i < n; i++)
        pack_spec(p, kv[i]);
    return decode(b);
}

static void test_malformed_requests(void)
{
    static const struct bad_case cases[] = {
        { { "s:op", "s:ping", NULL }, GA_EPROTO, "request: 'id' missing", 0 },
        { { "s:id", "i:-1", "s:op", "s:ping", NULL }, GA_EPROTO, "request: 'id' must be an unsigned integer", 0 },
        { { "s:id", "s:1", "s:op", "s:ping", NULL }, GA_EPROTO, "request: 'id' must be an unsigned integer", 0 },
        { { "s:id", "f", "s:op", "s:ping", NULL }, GA_EPROTO, "request: 'id' must be an unsigned integer", 0 },
        { { "s:id", "n", "s:op", "s:ping", NULL }, GA_EPROTO, "request: 'id' missing", 0 },
        { { "s:id", "u:4", NULL }, GA_EPROTO, "request: 'op' missing", 4 },
        { { "s:id", "u:4", "s:op", "u:1", NULL }, GA_EPROTO, "request: 'op' must be a string", 4 },
        { { "s:id", "u:4", "s:op", "s:", NULL }, GA_EPROTO, "request: 'op' is empty", 4 },
        { { "s:id", "u:5", "s:op", "s:stats", "s:args", "a", NULL }, GA_EBADARG, "request: 'args' must be a map", 5 },
        { { "s:id", "u:5", "s:op", "s:stats", "s:args", "s:x", NULL }, GA_EBADARG, "request: 'args' must be a map", 5 },
        { { "s:ID", "u:5", "s:OP", "s:stats", NULL }, GA_EPROTO, "request: 'id' missing", 0 },   /* keys are case-sensitive */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf b;
        uint64_t id = 777;
        const char *op = "keep";
        size_t oplen = 4;
        const msgpack_object *args = NULL;
        char err[128] = "";
        int rc = ctl_parse_request(build(&b, cases[i].kv), &id, &op, &oplen, &args, err, sizeof err);
        if (rc != cases[i].rc || strcmp(err, cases[i].err) != 0 || id != cases[i].id)
            harness_fail(__FILE__, __LINE__, "request case %zu: rc %d err \"%s\" id %llu", i, rc, err,
                         (unsigned long long)id);
        CHECK_STR(op, "keep");                      /* outputs untouched on failure */
        end(&b);
    }

    /* not a map at all; extra keys are fine; nil args means none */
    struct buf b;
    uint64_t id = 3;
    const char *op;
    size_t oplen;
    const msgpack_object *args = (const msgpack_object *)&id;
    char err[128];
    msgpack_pack_array(begin(&b), 0);
    CHECK_INT(ctl_parse_request(decode(&b), &id, &op, &oplen, &args, err, sizeof err), GA_EPROTO);
    CHECK_STR(err, "request: not a map");
    CHECK_INT(id, 0);
    CHECK_INT(ctl_parse_request(NULL, &id, &op, &oplen, &args, NULL, 0), GA_EPROTO);   /* no err buffer */
    end(&b);
    static const char *const extra[] = { "s:id", "u:8", "s:op", "s:ping", "s:future", "b:1", "s:args", "n", NULL };
    CHECK_INT(ctl_parse_request(build(&b, extra), &id, &op, &oplen, &args, err, sizeof err), 0);
    CHECK_INT(id, 8);
    CHECK(args == NULL);
    end(&b);
    /* a short error buffer truncates, never overflows */
    char small[8];
    msgpack_pack_array(begin(&b), 0);
    CHECK_INT(ctl_parse_request(decode(&b), &id, &op, &oplen, &args, small, sizeof small), GA_EPROTO);
    CHECK_STR(small, "request");
    end(&b);
}

static void test_malformed_responses(void)
{
    static const struct bad_case cases[] = {
        { { "s:ok", "b:1", "s:result", "n", NULL }, GA_EPROTO, "response: 'id' missing", 0 },
        { { "s:id", "i:-3", "s:ok", "b:1", "s:result", "n", NULL }, GA_EPROTO,
          "response: 'id' must be an unsigned integer", 0 },
        { { "s:id", "u:2", "s:result", "n", NULL }, GA_EPROTO, "response: 'ok' missing", 2 },
        { { "s:id", "u:2", "s:ok", "u:1", NULL }, GA_EPROTO, "response: 'ok' must be a boolean", 2 },
        { { "s:id", "u:2", "s:ok", "b:1", NULL }, GA_EPROTO, "response: 'result' missing", 2 },
        { { "s:id", "u:2", "s:ok", "b:0", NULL }, GA_EPROTO, "response: 'error' missing", 2 },
        { { "s:id", "u:2", "s:ok", "b:0", "s:error", "s:bad", NULL }, GA_EPROTO, "response: 'error' must be a map", 2 },
        { { "s:id", "u:2", "s:ok", "b:0", "s:error", "m", NULL }, GA_EPROTO, "response: 'error.code' missing", 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf b;
        uint64_t id = 777;
        int ok = -1;
        const msgpack_object *result = NULL;
        int64_t code = 0;
        const char *msg = NULL;
        size_t msglen = 0;
        char err[128] = "";
        int rc = ctl_parse_response(build(&b, cases[i].kv), &id, &ok, &result, &code, &msg, &msglen, err, sizeof err);
        if (rc != cases[i].rc || strcmp(err, cases[i].err) != 0 || id != cases[i].id)
            harness_fail(__FILE__, __LINE__, "response case %zu: rc %d err \"%s\" id %llu", i, rc, err,
                         (unsigned long long)id);
        CHECK_INT(ok, -1);
        end(&b);
    }

    /* the error map's own fields */
    static const struct { int64_t code; int with_code, with_msg; const char *msg_spec, *err; } ecases[] = {
        { 5, 1, 1, "s:x", "response: 'error.code' must be a negative integer" },
        { -4098, 1, 0, NULL, "response: 'error.message' missing" },
        { -4098, 1, 1, "u:1", "response: 'error.message' must be a string" },
    };
    for (size_t i = 0; i < sizeof ecases / sizeof ecases[0]; i++) {
        struct buf b;
        msgpack_packer *p = begin(&b);
        msgpack_pack_map(p, 3);
        mp_pack_kv_uint(p, "id", 6);
        mp_pack_kv_bool(p, "ok", 0);
        mp_pack_cstr(p, "error");
        msgpack_pack_map(p, (uint32_t)(ecases[i].with_code + ecases[i].with_msg));
        if (ecases[i].with_code)
            mp_pack_kv_int(p, "code", ecases[i].code);
        if (ecases[i].with_msg) {
            mp_pack_cstr(p, "message");
            pack_spec(p, ecases[i].msg_spec);
        }
        uint64_t id;
        int ok = -1;
        const msgpack_object *result;
        int64_t code = 0;
        const char *msg;
        size_t msglen;
        char err[128] = "";
        CHECK_INT(ctl_parse_response(decode(&b), &id, &ok, &result, &code, &msg, &msglen, err, sizeof err), GA_EPROTO);
        CHECK_STR(err, ecases[i].err);
        CHECK_INT(code, 0);
        end(&b);
    }

    struct buf b;
    uint64_t id;
    int ok;
    const msgpack_object *result;
    int64_t code;
    const char *msg;
    size_t msglen, nlen = 5;
    char err[128];
    mp_pack_cstr(begin(&b), "hello");
    const msgpack_object *o = decode(&b);
    CHECK_INT(ctl_parse_response(o, &id, &ok, &result, &code, &msg, &msglen, err, sizeof err), GA_EPROTO);
    CHECK_STR(err, "response: not a map");
    CHECK(ctl_response_error_name(o, &nlen) == NULL);
    CHECK_INT(nlen, 0);
    end(&b);
}

/* Pipelined requests in one buffer: frame, parse, and answer each in order. */
static void test_pipelined_stream(void)
{
    struct buf b;
    msgpack_packer *p = begin(&b);
    static const char *const ops[] = { "ping", "status", "stats", "config.get", "reload", "shutdown" };
    for (uint64_t i = 0; i < 6; i++)
        ctl_pack_request_head(p, i + 1, ops[i], 0);
    size_t off = 0;
    for (uint64_t i = 0; i < 6; i++) {
        size_t fl = 0, uoff = 0;
        msgpack_object o;
        CHECK_INT(mp_frame_scan((const uint8_t *)b.sb.data + off, b.sb.size - off, CTL_MAX_FRAME, &fl), 1);
        CHECK_INT(msgpack_unpack(b.sb.data + off, fl, &uoff, &b.zone, &o), MSGPACK_UNPACK_SUCCESS);
        uint64_t id;
        const char *op;
        size_t oplen;
        const msgpack_object *args;
        CHECK_INT(ctl_parse_request(&o, &id, &op, &oplen, &args, NULL, 0), 0);
        CHECK_INT(id, i + 1);
        CHECK(oplen == strlen(ops[i]) && memcmp(op, ops[i], oplen) == 0);
        off += fl;
    }
    CHECK_INT(off, b.sb.size);
    end(&b);
}

void run_tests(void)
{
    RUN(test_documented_bytes);
    RUN(test_request_round_trip);
    RUN(test_response_round_trip);
    RUN(test_malformed_requests);
    RUN(test_malformed_responses);
    RUN(test_pipelined_stream);
}
