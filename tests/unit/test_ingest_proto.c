/* test_ingest_proto.c — ingest protocol v1: the C encoders against frames
 * packed by msgpack-python (the examples of proto/INGEST.md, embedded as
 * hex), decoding of every example, every per-point rejection reason with
 * its index, every frame-level error message, random batches in both forms
 * decoded to exactly what was encoded, a 1M-point columnar batch, and
 * mutated frames (no crash, no leak under ASan).  Frames are handed to the
 * decoder in exact-size malloc'd copies so the ASan build catches any
 * over-read. */
#include "tests/unit/harness.h"

#include <stdarg.h>
#include <stdlib.h>

#include <msgpack.h>

#include "proto/ga_err.h"
#include "proto/ga_time.h"
#include "proto/ingest_proto.h"
#include "proto/mp_frame.h"
#include "proto/ts_parse.h"

/* Generated with python3 and msgpack-python 1.x: msgpack.packb(example)
 * for the examples of proto/INGEST.md §9 (how: INGEST.md §9.9). */
static const char HEX_HELLO_CLIENT[] =
    "84a474797065a568656c6c6fa776657273696f6e01a6636c69656e74b26365696c6f6d657465722d6167656e742d31a5"
    "746f6b656ea6733363726574"
    ;
static const char HEX_HELLO_CLIENT_NOTOKEN[] =
    "83a474797065a568656c6c6fa776657273696f6e01a6636c69656e74ab6770756167672d6c6f6164"
    ;
static const char HEX_HELLO_SERVER[] =
    "85a474797065a568656c6c6fa776657273696f6e01a6736572766572ad6770756167676420302e312e30a96d61785f66"
    "72616d65ce01000000ac6d61785f696e666c6967687440"
    ;
static const char HEX_POINTS_FRIENDLY[] =
    "83a474797065a6706f696e7473a373657107a76d6574726963739282a66d6574726963a86370752e7574696ca6706f69"
    "6e74739292cf18ea17afc3467f15cb402900000000000092cf18ea17bdbb8dd715cb402a80000000000082a66d657472"
    "6963af6469736b2e726561642e6279746573a6706f696e74739192cf18ea17afc3467f15cb40b0000000000000"
    ;
static const char HEX_POINTS_FRIENDLY_RFC3339[] =
    "83a474797065a6706f696e7473a373657108a76d6574726963739182a66d6574726963a86370752e7574696ca6706f69"
    "6e74739192be323032362d31312d32315431353a30343a30352e3132333435363738395acb4029000000000000"
    ;
static const char HEX_POINTS_FRIENDLY_MIXED[] =
    "83a474797065a6706f696e7473a373657109a76d6574726963739282a66d6574726963a86370752e7574696ca6706f69"
    "6e74739592cb41dac06cb96000000c92b9323032362d31312d32315431373a30343a30352b30323a3030cbbff8000000"
    "00000092fbcb3ff000000000000092cf18ea17afc3467f15cb7ff800000000000092cf18ea17afc3467f15a468696768"
    "82a66d6574726963a0a6706f696e74739192cf18ea17afc3467f15cb3ff0000000000000"
    ;
static const char HEX_POINTS_COLUMNAR_INDEX[] =
    "86a474797065a6706f696e7473a37365710aa56e616d657392a86370752e7574696ca96d656d2e7573616765a5696e64"
    "6578c40c000000000100000000000000a27473c418157f46c3af17ea18157f46c3af17ea1815d78dbbbd17ea18a67661"
    "6c756573c4180000000000002940000000000000a0400000000000802a40"
    ;
static const char HEX_POINTS_COLUMNAR_COUNTS[] =
    "86a474797065a6706f696e7473a37365710ba56e616d657392a86370752e7574696ca96d656d2e7573616765a6636f75"
    "6e7473920201a27473c418157f46c3af17ea1815d78dbbbd17ea18157f46c3af17ea18a676616c756573c41800000000"
    "000029400000000000802a40000000000000a040"
    ;
static const char HEX_ACK[] =
    "84a474797065a361636ba373657107a8616363657074656403a872656a656374656490"
    ;
static const char HEX_ACK_REJECTED[] =
    "84a474797065a361636ba373657109a8616363657074656402a872656a65637465649482a5696e64657802a672656173"
    "6f6eb574696d657374616d70206265666f7265203139373082a5696e64657803a6726561736f6eac76616c7565206973"
    "204e614e82a5696e64657804a6726561736f6eb576616c7565206973206e6f742061206e756d62657282a5696e646578"
    "05a6726561736f6eb16d6574726963206e616d6520656d707479"
    ;
static const char HEX_ERROR[] =
    "85a474797065a56572726f72a4636f6465d1efffa46e616d65a64550524f544fa76d657373616765d930706f696e7473"
    "3a20277473272069732032342062797465732c206578706563746564203820c397203420706f696e7473a37365710c"
    ;
static const char HEX_ERROR_NOSEQ[] =
    "84a474797065a56572726f72a4636f6465d1eff6a46e616d65a54541555448a76d657373616765b068656c6c6f3a2062"
    "616420746f6b656e"
    ;

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* ---- frames ---- */

struct frame {
    uint8_t *p;
    size_t n;
};

static struct frame from_hex(const char *hex)
{
    struct frame f = { malloc(strlen(hex) / 2 + 1), strlen(hex) / 2 };
    for (size_t i = 0; i < f.n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        f.p[i] = (uint8_t)v;
    }
    return f;
}

struct pk {
    msgpack_sbuffer sb;
    msgpack_packer pk;
};

static msgpack_packer *pk_init(struct pk *b)
{
    msgpack_sbuffer_init(&b->sb);
    msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
    return &b->pk;
}

/* Take the packed bytes as an exact-size frame. */
static struct frame pk_take(struct pk *b)
{
    struct frame f = { malloc(b->sb.size ? b->sb.size : 1), b->sb.size };
    if (b->sb.size)
        memcpy(f.p, b->sb.data, b->sb.size);
    msgpack_sbuffer_destroy(&b->sb);
    return f;
}

/* Pack from a tiny format: space-separated items
 *   mN aN   map / array header of N     s  str (const char *)
 *   S       str (const char *, size_t)  u  uint64_t     i  int64_t
 *   d       double                      n  nil          T  true
 *   b       bin (const void *, size_t)  r  raw bytes (const void *, size_t) */
static struct frame build(const char *fmt, ...)
{
    struct pk b;
    msgpack_packer *pk = pk_init(&b);
    va_list ap;
    va_start(ap, fmt);
    for (const char *c = fmt; *c; c++) {
        const char *s;
        const void *p;
        size_t n;
        switch (*c) {
        case 'm': msgpack_pack_map(pk, (size_t)strtoul(c + 1, (char **)&c, 10)); c--; break;
        case 'a': msgpack_pack_array(pk, (size_t)strtoul(c + 1, (char **)&c, 10)); c--; break;
        case 's': s = va_arg(ap, const char *); msgpack_pack_str_with_body(pk, s, strlen(s)); break;
        case 'S': s = va_arg(ap, const char *); n = va_arg(ap, size_t);
                  msgpack_pack_str_with_body(pk, s, n); break;
        case 'u': msgpack_pack_uint64(pk, va_arg(ap, uint64_t)); break;
        case 'i': msgpack_pack_int64(pk, va_arg(ap, int64_t)); break;
        case 'd': msgpack_pack_double(pk, va_arg(ap, double)); break;
        case 'n': msgpack_pack_nil(pk); break;
        case 'T': msgpack_pack_true(pk); break;
        case 'b': p = va_arg(ap, const void *); n = va_arg(ap, size_t);
                  msgpack_pack_bin_with_body(pk, p, n); break;
        case 'r': p = va_arg(ap, const void *); n = va_arg(ap, size_t);
                  msgpack_sbuffer_write(&b.sb, p, n); break;
        default: break;
        }
    }
    va_end(ap);
    return pk_take(&b);
}

static int decode(struct frame f, const struct ing_limits *lim, struct ing_msg *m, char *err,
                  size_t errlen)
{
    err[0] = '\0';
    return ing_decode(f.p, f.n, lim, m, err, errlen);
}

static void frame_free(struct frame *f)
{
    free(f->p);
    f->p = NULL;
}

/* ---- encoders against msgpack-python ---- */

static void check_bytes(const char *what, struct pk *b, const char *hex)
{
    struct frame want = from_hex(hex), got = pk_take(b);
    if (got.n != want.n || memcmp(got.p, want.p, got.n) != 0) {
        size_t k = 0;
        while (k < got.n && k < want.n && got.p[k] == want.p[k])
            k++;
        harness_fail(__FILE__, __LINE__, "%s: %zu bytes, expected %zu; first difference at %zu",
                     what, got.n, want.n, k);
    }
    frame_free(&want);
    frame_free(&got);
}

#define TS0 1795273445123456789LL
#define MIN1 60000000000LL

static void test_encoders_match_python(void)
{
    struct pk b;
    ing_pack_hello_client(pk_init(&b), "ceilometer-agent-1", "s3cret");
    check_bytes("hello client", &b, HEX_HELLO_CLIENT);
    ing_pack_hello_client(pk_init(&b), "gpuagg-load", NULL);
    check_bytes("hello client, no token", &b, HEX_HELLO_CLIENT_NOTOKEN);
    ing_pack_hello_server(pk_init(&b), "gpuaggd 0.1.0", 16777216, 64);
    check_bytes("hello server", &b, HEX_HELLO_SERVER);

    const char *names2[] = { "cpu.util", "disk.read.bytes" };
    uint32_t counts[] = { 2, 1 };
    int64_t ts[] = { TS0, TS0 + MIN1, TS0 };
    double val[] = { 12.5, 13.25, 4096.0 };
    ing_pack_points_friendly(pk_init(&b), 7, 2, names2, counts, ts, val, ING_TS_NS);
    check_bytes("points friendly", &b, HEX_POINTS_FRIENDLY);
    uint32_t one = 1;
    ing_pack_points_friendly(pk_init(&b), 8, 1, names2, &one, ts, val, ING_TS_RFC3339);
    check_bytes("points friendly rfc3339", &b, HEX_POINTS_FRIENDLY_RFC3339);

    const char *names[] = { "cpu.util", "mem.usage" };
    uint32_t index[] = { 0, 1, 0 };
    int64_t its[] = { TS0, TS0, TS0 + MIN1 };
    double ival[] = { 12.5, 2048.0, 13.25 };
    ing_pack_points_columnar(pk_init(&b), 10, 2, names, index, NULL, 3, its, ival);
    check_bytes("points columnar index", &b, HEX_POINTS_COLUMNAR_INDEX);
    int64_t cts[] = { TS0, TS0 + MIN1, TS0 };
    double cval[] = { 12.5, 13.25, 2048.0 };
    ing_pack_points_columnar(pk_init(&b), 11, 2, names, NULL, counts, 3, cts, cval);
    check_bytes("points columnar counts", &b, HEX_POINTS_COLUMNAR_COUNTS);

    ing_pack_ack(pk_init(&b), 7, 3, 0, NULL);
    check_bytes("ack", &b, HEX_ACK);
    struct ing_reject rej[] = { { 2, "timestamp before 1970" }, { 3, "value is NaN" },
                                { 4, "value is not a number" }, { 5, "metric name empty" } };
    ing_pack_ack(pk_init(&b), 9, 2, 4, rej);
    check_bytes("ack with rejections", &b, HEX_ACK_REJECTED);

    ing_pack_error(pk_init(&b), GA_EPROTO, "points: 'ts' is 24 bytes, expected 8 × 4 points", 1, 12);
    check_bytes("error", &b, HEX_ERROR);
    ing_pack_error(pk_init(&b), GA_EAUTH, "hello: bad token", 0, 0);
    check_bytes("error, no seq", &b, HEX_ERROR_NOSEQ);
}

/* ---- decoding the examples ---- */

static int decode_hex(const char *hex, struct ing_msg *m, char *err, size_t errlen)
{
    struct frame f = from_hex(hex);
    int rc = decode(f, NULL, m, err, errlen);
    frame_free(&f);
    return rc;
}

static void test_decode_examples(void)
{
    struct ing_msg m;
    char err[256];

    CHECK_INT(decode_hex(HEX_HELLO_CLIENT, &m, err, sizeof err), ING_HELLO);
    CHECK(!m.u.hello.from_server);
    CHECK_INT(m.u.hello.version, 1);
    CHECK_STR(m.u.hello.client, "ceilometer-agent-1");
    CHECK(m.u.hello.has_token);
    CHECK_STR(m.u.hello.token, "s3cret");
    ing_msg_free(&m);
    CHECK_INT(decode_hex(HEX_HELLO_CLIENT_NOTOKEN, &m, err, sizeof err), ING_HELLO);
    CHECK(!m.u.hello.has_token);
    CHECK_STR(m.u.hello.client, "gpuagg-load");
    ing_msg_free(&m);
    CHECK_INT(decode_hex(HEX_HELLO_SERVER, &m, err, sizeof err), ING_HELLO);
    CHECK(m.u.hello.from_server);
    CHECK_STR(m.u.hello.server, "gpuaggd 0.1.0");
    CHECK_INT(m.u.hello.max_frame, 16777216);
    CHECK_INT(m.u.hello.max_inflight, 64);
    ing_msg_free(&m);

    CHECK_INT(decode_hex(HEX_POINTS_FRIENDLY, &m, err, sizeof err), ING_POINTS);
    struct ing_batch *b = &m.u.points;
    CHECK(m.has_seq && m.seq == 7 && b->seq == 7);
    CHECK_INT(b->nnames, 2);
    CHECK_STR(b->names[0], "cpu.util");
    CHECK_INT(b->name_len[1], 15);
    CHECK_STR(b->names[1], "disk.read.bytes");
    CHECK_INT(b->n, 3);
    CHECK_INT(b->nrejected, 0);
    CHECK(b->name_idx[0] == 0 && b->name_idx[1] == 0 && b->name_idx[2] == 1);
    CHECK(b->ts[0] == TS0 && b->ts[1] == TS0 + MIN1 && b->ts[2] == TS0);
    CHECK(b->value[0] == 12.5 && b->value[1] == 13.25 && b->value[2] == 4096.0);
    ing_msg_free(&m);

    CHECK_INT(decode_hex(HEX_POINTS_FRIENDLY_RFC3339, &m, err, sizeof err), ING_POINTS);
    CHECK(m.u.points.n == 1 && m.u.points.ts[0] == TS0 && m.u.points.value[0] == 12.5);
    ing_msg_free(&m);

    /* the mixed example: its ack is HEX_ACK_REJECTED */
    CHECK_INT(decode_hex(HEX_POINTS_FRIENDLY_MIXED, &m, err, sizeof err), ING_POINTS);
    CHECK_INT(b->seq, 9);
    CHECK_INT(b->n, 2);
    CHECK_INT(b->nnames, 1);                /* "" is left out */
    CHECK(b->ts[0] == 1795273445500000000LL && b->value[0] == 12.0);
    CHECK(b->ts[1] == 1795273445000000000LL && b->value[1] == -1.5);
    CHECK_INT(b->nrejected, 4);
    static const char *const why[] = { "timestamp before 1970", "value is NaN",
                                       "value is not a number", "metric name empty" };
    for (size_t i = 0; i < 4 && i < b->nrejected; i++) {
        CHECK_INT(b->rejected[i].index, 2 + i);
        CHECK_STR(b->rejected[i].reason, why[i]);
    }
    struct pk ack;
    ing_pack_ack(pk_init(&ack), b->seq, b->n, b->nrejected, b->rejected);
    check_bytes("ack of the mixed example", &ack, HEX_ACK_REJECTED);
    ing_msg_free(&m);

    static const char *const cols[] = { HEX_POINTS_COLUMNAR_INDEX, HEX_POINTS_COLUMNAR_COUNTS };
    for (int k = 0; k < 2; k++) {
        CHECK_INT(decode_hex(cols[k], &m, err, sizeof err), ING_POINTS);
        CHECK_INT(b->seq, 10 + k);
        CHECK_INT(b->n, 3);
        CHECK_INT(b->nnames, 2);
        CHECK_STR(b->names[1], "mem.usage");
        double sum = 0;
        for (size_t i = 0; i < b->n; i++)
            sum += b->value[i] * (b->name_idx[i] + 1);
        CHECK(sum == 12.5 + 13.25 + 2 * 2048.0);
        CHECK(b->ts[2] == (k ? TS0 : TS0 + MIN1));
        ing_msg_free(&m);
    }

    CHECK_INT(decode_hex(HEX_ACK, &m, err, sizeof err), ING_ACK);
    CHECK(m.u.ack.seq == 7 && m.u.ack.accepted == 3 && m.u.ack.nrejected == 0);
    ing_msg_free(&m);
    CHECK_INT(decode_hex(HEX_ACK_REJECTED, &m, err, sizeof err), ING_ACK);
    CHECK(m.u.ack.seq == 9 && m.u.ack.accepted == 2 && m.u.ack.nrejected == 4);
    CHECK_INT(m.u.ack.rejected[3].index, 5);
    CHECK_STR(m.u.ack.rejected[3].reason, "metric name empty");
    ing_msg_free(&m);

    CHECK_INT(decode_hex(HEX_ERROR, &m, err, sizeof err), ING_ERROR);
    CHECK_INT(m.u.error.code, GA_EPROTO);
    CHECK_STR(m.u.error.name, "EPROTO");
    CHECK_STR(m.u.error.message, "points: 'ts' is 24 bytes, expected 8 × 4 points");
    CHECK(m.u.error.has_seq && m.u.error.seq == 12);
    ing_msg_free(&m);
    CHECK_INT(decode_hex(HEX_ERROR_NOSEQ, &m, err, sizeof err), ING_ERROR);
    CHECK_INT(m.u.error.code, GA_EAUTH);
    CHECK(!m.u.error.has_seq && !m.has_seq);
    ing_msg_free(&m);
}

/* A batch of no points decodes to NULL arrays, and encodes again. */
static void test_empty_batch(void)
{
    struct frame f = build("m3 s s s u s a1 m2 s s s a0", "type", "points", "seq", (uint64_t)8,
                           "metrics", "metric", "cpu.util", "points");
    struct ing_msg m, m2;
    char err[128];
    CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_POINTS);
    struct ing_batch *b = &m.u.points;
    CHECK(b->n == 0 && !b->ts && !b->value && !b->name_idx && b->nnames == 1);
    struct pk p;
    ing_pack_points_columnar(pk_init(&p), b->seq, b->nnames, b->names, b->name_idx, NULL, b->n,
                             b->ts, b->value);
    struct frame g = pk_take(&p);
    CHECK_INT(decode(g, NULL, &m2, err, sizeof err), ING_POINTS);
    CHECK(m2.u.points.seq == 8 && m2.u.points.n == 0 && m2.u.points.nnames == 1);
    CHECK_STR(m2.u.points.names[0], "cpu.util");
    ing_msg_free(&m2);
    ing_msg_free(&m);
    frame_free(&g);
    frame_free(&f);
}

/* ---- per-point rejections ---- */

static void pack_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* [ts as int, value] */
static void pt_i(msgpack_packer *pk, int64_t ts, double v)
{
    msgpack_pack_array(pk, 2);
    msgpack_pack_int64(pk, ts);
    msgpack_pack_double(pk, v);
}

static void pt_s(msgpack_packer *pk, const char *ts, double v)
{
    msgpack_pack_array(pk, 2);
    pack_str(pk, ts);
    msgpack_pack_double(pk, v);
}

static void pt_f(msgpack_packer *pk, double ts, double v)
{
    msgpack_pack_array(pk, 2);
    msgpack_pack_double(pk, ts);
    msgpack_pack_double(pk, v);
}

static void entry(msgpack_packer *pk, const char *name, size_t namelen, uint32_t npoints)
{
    msgpack_pack_map(pk, 2);
    pack_str(pk, "metric");
    msgpack_pack_str_with_body(pk, name, namelen);
    pack_str(pk, "points");
    msgpack_pack_array(pk, npoints);
}

static void test_friendly_rejections(void)
{
    static const char *const expect[] = {
        NULL,
        "timestamp before 1970",
        "timestamp before 1970",
        "timestamp before 1970",
        "timestamp not RFC 3339: 2026-13-01T00:00:00Z",
        "value is NaN",
        "value is infinite",
        "value is infinite",
        "value is not a number",
        "value is not a number",
        "value is not a number",
        "value is not a number",
        "point is not a [timestamp, value] pair",
        "point is not a [timestamp, value] pair",
        "point is not a [timestamp, value] pair",
        "point is not a [timestamp, value] pair",
        "timestamp is not an integer, float or string",
        "timestamp is not an integer, float or string",
        "timestamp after 2200-01-01T00:00:00Z",
        "timestamp is not finite",
        "timestamp after 2200-01-01T00:00:00Z",
        "timestamp after 2200-01-01T00:00:00Z",
        NULL,
        NULL,
        "timestamp not RFC 3339: 0123456789012345678901234567890123456789abcdefgh...",
        "timestamp not RFC 3339: 2026-11-21T15:04:05Z?",
        "metric name empty",
        "metric name empty",
        "metric name longer than 255 bytes",
        "metric name not valid UTF-8 at byte 0",
        "metric name not valid UTF-8 at byte 0",
        "metric name not valid UTF-8 at byte 0",
        "metric name contains U+0009 (C0 control) at byte 1",
        "metric name contains U+0085 (C1 control) at byte 1",
        NULL,
        NULL,
        NULL,
    };
    char a256[257];
    memset(a256, 'a', 256);
    a256[256] = '\0';
    struct pk b;
    msgpack_packer *pk = pk_init(&b);
    msgpack_pack_map(pk, 3);
    pack_str(pk, "type"), pack_str(pk, "points");
    pack_str(pk, "seq"), msgpack_pack_uint64(pk, 424242);
    pack_str(pk, "metrics");
    msgpack_pack_array(pk, 12);
    entry(pk, "good", 4, 26);
    pt_i(pk, TS0, 1.5);                                         /* 0 */
    pt_i(pk, -5, 1.0);
    pt_f(pk, -0.5, 1.0);
    pt_s(pk, "1969-12-31T23:59:59Z", 1.0);
    pt_s(pk, "2026-13-01T00:00:00Z", 1.0);
    pt_i(pk, TS0, NAN);                                         /* 5 */
    pt_i(pk, TS0, INFINITY);
    pt_i(pk, TS0, -INFINITY);
    msgpack_pack_array(pk, 2), msgpack_pack_int64(pk, TS0), pack_str(pk, "x");
    msgpack_pack_array(pk, 2), msgpack_pack_int64(pk, TS0), msgpack_pack_nil(pk);
    msgpack_pack_array(pk, 2), msgpack_pack_int64(pk, TS0), msgpack_pack_true(pk);     /* 10 */
    msgpack_pack_array(pk, 2), msgpack_pack_int64(pk, TS0), msgpack_pack_array(pk, 1),
        msgpack_pack_int(pk, 1);
    msgpack_pack_array(pk, 1), msgpack_pack_int(pk, 1);
    msgpack_pack_array(pk, 3), msgpack_pack_int(pk, 1), msgpack_pack_int(pk, 2),
        msgpack_pack_int(pk, 3);
    msgpack_pack_int(pk, 5);
    msgpack_pack_map(pk, 1), pack_str(pk, "a"), msgpack_pack_array(pk, 2),     /* 15 */
        msgpack_pack_int(pk, 1), msgpack_pack_int(pk, 2);
    msgpack_pack_array(pk, 2), msgpack_pack_nil(pk), msgpack_pack_double(pk, 1.0);
    msgpack_pack_array(pk, 2), msgpack_pack_array(pk, 2), msgpack_pack_int(pk, 1),
        msgpack_pack_int(pk, 2), msgpack_pack_double(pk, 1.0);
    msgpack_pack_array(pk, 2), msgpack_pack_uint64(pk, (uint64_t)INT64_MAX + 1),
        msgpack_pack_double(pk, 1.0);
    pt_f(pk, NAN, 1.0);
    pt_f(pk, 1e300, 1.0);                                       /* 20 */
    pt_s(pk, "2300-01-01T00:00:00Z", 1.0);
    msgpack_pack_array(pk, 2), msgpack_pack_int(pk, 1), msgpack_pack_int(pk, 7);
    msgpack_pack_array(pk, 2), msgpack_pack_double(pk, 1795273445.25), msgpack_pack_int(pk, -3);
    pt_s(pk, "0123456789012345678901234567890123456789abcdefghijklmnopqrstuvwxyz", 1.0);
    pt_s(pk, "2026-11-21T15:04:05Z\x01", 1.0);                 /* 25 */
    entry(pk, "", 0, 2);
    pt_i(pk, 1, 1.0), pt_i(pk, 2, 2.0);                         /* 26, 27 */
    entry(pk, a256, 256, 1), pt_i(pk, 1, 1.0);                  /* 28 */
    entry(pk, "\xff", 1, 1), pt_i(pk, 1, 1.0);
    entry(pk, "\xe0\x80\x80", 3, 1), pt_i(pk, 1, 1.0);          /* 30: overlong */
    entry(pk, "\xed\xa0\x80", 3, 1), pt_i(pk, 1, 1.0);          /* surrogate */
    entry(pk, "a\tb", 3, 1), pt_i(pk, 1, 1.0);
    entry(pk, "x\xc2\x85", 3, 1), pt_i(pk, 1, 1.0);             /* C1 NEL */
    entry(pk, "ok2", 3, 1), pt_i(pk, 5, 5.0);                   /* 34 */
    entry(pk, "\xc3\xbcn\xc3\xaf.cpu\xf0\x9f\x94\xa5", 13, 1), pt_i(pk, 6, 6.0);
    entry(pk, a256, 255, 1), pt_i(pk, 7, 7.0);                  /* 36 */
    entry(pk, "empty", 5, 0);
    struct frame f = pk_take(&b);
    struct ing_msg m;
    char err[256];
    CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_POINTS);
    struct ing_batch *bt = &m.u.points;
    size_t nexp = sizeof expect / sizeof expect[0], r = 0;
    for (size_t i = 0; i < nexp; i++) {
        if (!expect[i])
            continue;
        if (r >= bt->nrejected) {
            harness_fail(__FILE__, __LINE__, "point %zu not rejected", i);
            break;
        }
        if (bt->rejected[r].index != i || strcmp(bt->rejected[r].reason, expect[i]) != 0)
            harness_fail(__FILE__, __LINE__, "rejection %zu: [%llu] \"%s\", expected [%zu] \"%s\"",
                         r, (unsigned long long)bt->rejected[r].index, bt->rejected[r].reason,
                         i, expect[i]);
        r++;
    }
    CHECK_INT(bt->nrejected, r);
    CHECK_INT(bt->n, 6);
    CHECK_INT(bt->nnames, 5);
    if (bt->n == 6 && bt->nnames == 5) {
        CHECK_STR(bt->names[0], "good");
        CHECK_STR(bt->names[1], "ok2");
        CHECK_STR(bt->names[2], "\xc3\xbcn\xc3\xaf.cpu\xf0\x9f\x94\xa5");
        CHECK_INT(bt->name_len[3], 255);
        CHECK_STR(bt->names[4], "empty");
        static const uint32_t ni[] = { 0, 0, 0, 1, 2, 3 };
        static const int64_t ts[] = { TS0, 1, 1795273445250000000LL, 5, 6, 7 };
        static const double v[] = { 1.5, 7, -3, 5, 6, 7 };
        for (int i = 0; i < 6; i++)
            if (bt->name_idx[i] != ni[i] || bt->ts[i] != ts[i] || bt->value[i] != v[i])
                harness_fail(__FILE__, __LINE__, "point %d: %u %lld %g", i, bt->name_idx[i],
                             (long long)bt->ts[i], bt->value[i]);
    }
    ing_msg_free(&m);
    frame_free(&f);
}

static void test_columnar_rejections(void)
{
    const char *names[] = { "a", "", "b", "\x01" };
    uint32_t index[] = { 0, 1, 2, 3, 7, 0, 2, 0, 2 };
    int64_t ts[] = { 1, 2, 3, 4, 5, -1, 6, 7, 8 };
    double v[] = { 1, 2, 3, 4, 5, 6, NAN, -INFINITY, 9 };
    struct pk b;
    ing_pack_points_columnar(pk_init(&b), 5, 4, names, index, NULL, 9, ts, v);
    struct frame f = pk_take(&b);
    struct ing_msg m;
    char err[256];
    CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_POINTS);
    struct ing_batch *bt = &m.u.points;
    static const struct { uint64_t i; const char *why; } rej[] = {
        { 1, "metric name empty" }, { 3, "metric name contains U+0001 (C0 control) at byte 0" },
        { 4, "metric index 7 out of range" }, { 5, "timestamp before 1970" },
        { 6, "value is NaN" }, { 7, "value is infinite" },
    };
    CHECK_INT(bt->nrejected, 6);
    for (size_t i = 0; i < 6 && i < bt->nrejected; i++) {
        CHECK_INT(bt->rejected[i].index, rej[i].i);
        CHECK_STR(bt->rejected[i].reason, rej[i].why);
    }
    CHECK_INT(bt->nnames, 2);
    CHECK_INT(bt->n, 3);
    if (bt->n == 3) {
        CHECK(bt->name_idx[0] == 0 && bt->ts[0] == 1 && bt->value[0] == 1);
        CHECK(bt->name_idx[1] == 1 && bt->ts[1] == 3 && bt->value[1] == 3);   /* "b" → 1 */
        CHECK(bt->name_idx[2] == 1 && bt->ts[2] == 8 && bt->value[2] == 9);
        CHECK_STR(bt->names[1], "b");
    }
    ing_msg_free(&m);
    frame_free(&f);

    /* counts form: the points of a bad name, and a bad point after good ones */
    uint32_t counts[] = { 2, 1, 2 };
    ing_pack_points_columnar(pk_init(&b), 6, 3, names, NULL, counts, 5, ts, v);
    f = pk_take(&b);
    CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_POINTS);
    CHECK_INT(bt->n, 4);
    CHECK_INT(bt->nrejected, 1);
    CHECK_INT(bt->rejected[0].index, 2);
    CHECK_STR(bt->rejected[0].reason, "metric name empty");
    CHECK(bt->name_idx[2] == 1 && bt->ts[2] == 4 && bt->name_idx[3] == 1 && bt->ts[3] == 5);
    ing_msg_free(&m);
    frame_free(&f);
}

/* ---- limits.max_future_s ---- */

#define NOW 1795273445000000000LL              /* 2026-11-21T15:04:05Z */
#define AHEAD (86400LL * 1000000000LL)
#define YEAR (365LL * 86400 * 1000000000LL)

/* The reasons of b's rejections, "index:reason;..." into out. */
static const char *reasons(const struct ing_batch *b, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < b->nrejected && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%llu:%s;", (unsigned long long)b->rejected[i].index,
                              b->rejected[i].reason);
    return out;
}

/* A point exactly max_future_s ahead of the clock is accepted, one
 * nanosecond later is refused with a reason naming the limit; in every
 * timestamp form, the fast path and the general one, both point forms. */
static void test_future_bound(void)
{
    struct ing_limits lim = ing_default_limits;
    lim.now_ns = NOW;
    lim.max_future_s = 86400;
    const char *name[] = { "m" };
    int64_t ts[] = { NOW + AHEAD, NOW + AHEAD + 1, NOW, NOW + YEAR, NOW + AHEAD + 500000000,
                     NOW - YEAR };
    double v[] = { 1, 2, 3, 4, 5, 6 };
    uint32_t counts[] = { 6 };
    const char *want =
        "1:timestamp 2026-11-22T15:04:05.000000001Z is more than limits.max_future_s = 86400 s ahead;"
        "3:timestamp 2027-11-21T15:04:05Z is more than limits.max_future_s = 86400 s ahead;"
        "4:timestamp 2026-11-22T15:04:05.5Z is more than limits.max_future_s = 86400 s ahead;";
    char got[1024], err[256];
    for (int form = 0; form < 4; form++) {
        struct pk b;
        msgpack_packer *pk = pk_init(&b);
        if (form < 3)
            ing_pack_points_friendly(pk, 1, 1, name, counts, ts, v, (enum ing_ts_form)form);
        else
            ing_pack_points_columnar(pk, 1, 1, name, NULL, counts, 6, ts, v);
        struct frame f = pk_take(&b);
        struct ing_msg m;
        CHECK_INT(decode(f, &lim, &m, err, sizeof err), ING_POINTS);
        const struct ing_batch *bt = &m.u.points;
        if (form == ING_TS_SECONDS) {
            /* float seconds round to the double: the 1 ns past the bound is
             * lost, so only the year and the half second are refused */
            CHECK_STR(reasons(bt, got, sizeof got), strstr(want, "3:"));
            CHECK_INT(bt->n, 4);
        } else {
            CHECK_STR(reasons(bt, got, sizeof got), want);
            CHECK_INT(bt->n, 3);
            if (bt->n == 3)
                CHECK(bt->ts[0] == NOW + AHEAD && bt->ts[1] == NOW && bt->ts[2] == NOW - YEAR);
        }
        for (size_t i = 0; i < bt->nrejected; i++) {
            CHECK(strlen(bt->rejected[i].reason) <= ING_REASON_MAX);
            CHECK(ing_reason_is_future(bt->rejected[i].reason));
        }
        ing_msg_free(&m);

        /* no bound: everything up to GA_TS_MAX goes */
        struct ing_limits off = lim;
        off.max_future_s = 0;
        CHECK_INT(decode(f, &off, &m, err, sizeof err), ING_POINTS);
        CHECK_INT(m.u.points.n, 6);
        CHECK_INT(m.u.points.nrejected, 0);
        ing_msg_free(&m);
        frame_free(&f);
    }

    /* the timestamp is checked before the value: a point both too far ahead
     * and NaN gets the timestamp's reason; other reasons are not "future" */
    int64_t ts2[] = { NOW + YEAR, NOW, GA_TS_MAX + 1 };
    double v2[] = { NAN, NAN, 1 };
    uint32_t counts2[] = { 3 };
    for (int form = 0; form < 2; form++) {
        struct pk b;
        msgpack_packer *pk = pk_init(&b);
        if (form == 0)
            ing_pack_points_friendly(pk, 2, 1, name, counts2, ts2, v2, ING_TS_NS);
        else
            ing_pack_points_columnar(pk, 2, 1, name, NULL, counts2, 3, ts2, v2);
        struct frame f = pk_take(&b);
        struct ing_msg m;
        CHECK_INT(decode(f, &lim, &m, err, sizeof err), ING_POINTS);
        CHECK_STR(reasons(&m.u.points, got, sizeof got),
                  "0:timestamp 2027-11-21T15:04:05Z is more than limits.max_future_s = 86400 s ahead;"
                  "1:value is NaN;2:timestamp after 2200-01-01T00:00:00Z;");
        if (m.u.points.nrejected == 3) {
            CHECK(!ing_reason_is_future(m.u.points.rejected[1].reason));
            CHECK(!ing_reason_is_future(m.u.points.rejected[2].reason));
        }
        ing_msg_free(&m);
        frame_free(&f);
    }

    /* the longest reason fits whole: 9 fraction digits, the largest limit */
    lim.max_future_s = 3650LL * 86400;
    int64_t ts3[] = { NOW + lim.max_future_s * 1000000000LL, NOW + lim.max_future_s * 1000000000LL + 1 };
    uint32_t counts3[] = { 2 };
    struct pk pb;
    ing_pack_points_columnar(pk_init(&pb), 3, 1, name, NULL, counts3, 2, ts3, v);
    struct frame f3 = pk_take(&pb);
    struct ing_msg m3;
    CHECK_INT(decode(f3, &lim, &m3, err, sizeof err), ING_POINTS);
    CHECK_INT(m3.u.points.n, 1);
    CHECK_STR(reasons(&m3.u.points, got, sizeof got),
              "1:timestamp 2036-11-18T15:04:05.000000001Z is more than limits.max_future_s = "
              "315360000 s ahead;");
    ing_msg_free(&m3);
    frame_free(&f3);

    /* any clock: no overflow, nothing before it is ever too far ahead */
    struct ing_limits odd = { .now_ns = INT64_MIN, .max_future_s = 1 };
    CHECK(ing_ts_too_far_ahead(&odd, 0));
    odd.now_ns = INT64_MAX;
    CHECK(!ing_ts_too_far_ahead(&odd, GA_TS_MAX));
    odd.now_ns = 0;
    odd.max_future_s = INT64_MAX;                  /* past int64 ns: no bound */
    CHECK(!ing_ts_too_far_ahead(&odd, GA_TS_MAX));
    odd.max_future_s = -5;
    CHECK(!ing_ts_too_far_ahead(&odd, GA_TS_MAX));
}

/* ---- frame-level errors ---- */

static void expect_fail(int line, struct frame f, const struct ing_limits *lim, int rc,
                        const char *msg)
{
    struct ing_msg m;
    char err[256];
    int got = decode(f, lim, &m, err, sizeof err);
    if (got != rc || strcmp(err, msg) != 0)
        harness_fail(__FILE__, line, "rc %d \"%s\", expected %d \"%s\"", got, err, rc, msg);
    ing_msg_free(&m);
    frame_free(&f);
}

#define FAIL(f, rc, msg) expect_fail(__LINE__, f, NULL, rc, msg)
#define FAIL_LIM(f, lim, rc, msg) expect_fail(__LINE__, f, lim, rc, msg)
#define PT "m3 s s s u "                    /* points head: type, seq, one more key */
#define PTS "type", "points", "seq", (uint64_t)3

/* ing_batch_drop_names (limits.max_metrics at the door): the points of the
 * dropped names become rejections at their flat index, among the others. */
static void test_drop_names(void)
{
    const char *names[] = { "a", "", "b", "\x01" };
    uint32_t index[] = { 0, 1, 2, 3, 7, 0, 2, 0, 2 };
    int64_t ts[] = { 1, 2, 3, 4, 5, -1, 6, 7, 8 };
    double v[] = { 1, 2, 3, 4, 5, 6, NAN, -INFINITY, 9 };
    for (int which = 0; which < 2; which++) {
        struct pk b;
        ing_pack_points_columnar(pk_init(&b), 5, 4, names, index, NULL, 9, ts, v);
        struct frame f = pk_take(&b);
        struct ing_msg m;
        char err[256];
        CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_POINTS);
        struct ing_batch *bt = &m.u.points;
        uint8_t drop[2] = { which == 0, which == 1 };          /* "a" or "b" */
        CHECK_INT(ing_batch_drop_names(bt, drop, "too many"), which == 0 ? 1 : 2);
        /* "a" held position 0; "b" positions 2 and 8 */
        static const uint64_t want_a[] = { 0, 1, 3, 4, 5, 6, 7 }, want_b[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
        const uint64_t *want = which == 0 ? want_a : want_b;
        size_t nwant = which == 0 ? 7 : 8;
        CHECK_INT(bt->nrejected, nwant);
        for (size_t i = 0; i < nwant && i < bt->nrejected; i++) {
            CHECK_INT(bt->rejected[i].index, want[i]);
            int mine = which == 0 ? want[i] == 0 : (want[i] == 2 || want[i] == 8);
            if (mine)
                CHECK_STR(bt->rejected[i].reason, "too many");
        }
        CHECK_INT(bt->nnames, 1);
        CHECK_STR(bt->names[0], which == 0 ? "b" : "a");
        CHECK_INT(bt->n, which == 0 ? 2 : 1);
        for (size_t k = 0; k < bt->n; k++)
            CHECK_INT(bt->name_idx[k], 0);
        if (which == 0 && bt->n == 2)
            CHECK(bt->ts[0] == 3 && bt->ts[1] == 8 && bt->value[1] == 9);
        if (which == 1 && bt->n == 1)
            CHECK(bt->ts[0] == 1 && bt->value[0] == 1);
        ing_msg_free(&m);
        frame_free(&f);
    }
}

static void test_frame_errors(void)
{
    int64_t ts4[4] = { 1, 2, 3, 4 };
    double v4[4] = { 1, 2, 3, 4 };
    uint32_t ix4[4] = { 0, 0, 0, 0 };
    const int P = GA_EPROTO;

    FAIL(build(""), P, "frame: truncated msgpack (0 bytes)");
    FAIL(build("m2 s s s", "type", "points", "seq"), P, "frame: truncated msgpack (17 bytes)");
    FAIL(build("r", "\xc1", (size_t)1), P, "frame: invalid msgpack (type byte 0xc1)");
    FAIL(build("m1 s s n", "type", "ack"), P, "frame: 1 bytes after the end of the message");
    FAIL(build("a1 s", "type"), P, "message: not a map");
    FAIL(build("u", (uint64_t)5), P, "message: not a map");
    FAIL(build("m1 s u", "seq", (uint64_t)1), P, "message: 'type' missing");
    FAIL(build("m1 s n", "type"), P, "message: 'type' missing");
    FAIL(build("m1 s u", "type", (uint64_t)1), P, "message: 'type' must be a string");
    FAIL(build("m1 s s", "type", "bogus\n"), P, "message: unknown type 'bogus?'");
    {
        uint8_t deep[MP_FRAME_MAX_DEPTH + 2];
        char msg[64];
        memset(deep, 0x91, MP_FRAME_MAX_DEPTH + 1);
        deep[MP_FRAME_MAX_DEPTH + 1] = 0x01;
        snprintf(msg, sizeof msg, "frame: nested deeper than %d levels", MP_FRAME_MAX_DEPTH);
        FAIL(build("r", deep, sizeof deep), GA_ETOOBIG, msg);
    }
    struct ing_limits tiny = { .max_points = 3, .max_names = 2, .max_frame = 47 };
    struct ing_limits small = { .max_points = 3, .max_names = 2, .max_frame = 1 << 20 };
    FAIL_LIM(build("m1 s S", "type", "0123456789012345678901234567890123456789", (size_t)40),
             &tiny, GA_ETOOBIG, "frame: 48 bytes, at most 47");

    /* points: envelope */
    FAIL(build("m1 s s", "type", "points"), P, "points: 'seq' missing");
    FAIL(build("m2 s s s i", "type", "points", "seq", (int64_t)-1), P,
         "points: 'seq' must be an unsigned integer");
    FAIL(build("m2 s s s s", "type", "points", "seq", "1"), P,
         "points: 'seq' must be an unsigned integer");
    FAIL(build("m2 s s s u", PTS), P, "points: 'metrics' or 'names' missing");
    FAIL(build("m4 s s s u s a0 s a0", PTS, "metrics", "names"), P,
         "points: both 'metrics' and 'names' given");
    /* points: friendly */
    FAIL(build(PT "s m0", PTS, "metrics"), P, "points: 'metrics' must be an array");
    FAIL(build(PT "s a1 a0", PTS, "metrics"), P, "points: 'metrics'[0] must be a map");
    FAIL(build(PT "s a1 m1 s a0", PTS, "metrics", "points"), P,
         "points: 'metrics'[0]: 'metric' missing");
    FAIL(build(PT "s a1 m2 s u s a0", PTS, "metrics", "metric", (uint64_t)1, "points"), P,
         "points: 'metrics'[0]: 'metric' must be a string");
    FAIL(build(PT "s a2 m2 s s s a0 m1 s s", PTS, "metrics", "metric", "a", "points", "metric",
               "b"), P, "points: 'metrics'[1]: 'points' missing");
    FAIL(build(PT "s a1 m2 s s s m0", PTS, "metrics", "metric", "a", "points"), P,
         "points: 'metrics'[0]: 'points' must be an array");
    FAIL_LIM(build(PT "s a3 m0 m0 m0", PTS, "metrics"), &small, GA_ETOOBIG,
             "points: 'metrics' has 3 entries, at most 2");
    FAIL_LIM(build(PT "s a2 m2 s s s a2 u u m2 s s s a2 u u", PTS, "metrics", "metric", "a",
                   "points", (uint64_t)1, (uint64_t)2, "metric", "b", "points", (uint64_t)1,
                   (uint64_t)2), &small, GA_ETOOBIG, "points: more than 3 points");
    /* points: columnar */
    FAIL(build(PT "s m0", PTS, "names"), P, "points: 'names' must be an array");
    FAIL(build(PT "s a2 s u", PTS, "names", "a", (uint64_t)1), P,
         "points: 'names'[1] must be a string");
    FAIL(build(PT "s a1 s", PTS, "names", "a"), P, "points: 'index' or 'counts' missing");
    FAIL(build("m5 s s s u s a1 s s b s a1 u", PTS, "names", "a", "index", "", (size_t)0,
               "counts", (uint64_t)0), P, "points: both 'index' and 'counts' given");
    FAIL(build("m4 s s s u s a1 s s a0", PTS, "names", "a", "index"), P,
         "points: 'index' must be bin");
    FAIL(build("m4 s s s u s a1 s s b", PTS, "names", "a", "index", "1234567", (size_t)7), P,
         "points: 'index' is 7 bytes, not a multiple of 4");
    FAIL(build("m4 s s s u s a1 s s b", PTS, "names", "a", "counts", "", (size_t)0), P,
         "points: 'counts' must be an array");
    FAIL(build("m4 s s s u s a1 s s a2 u u", PTS, "names", "a", "counts", (uint64_t)1,
               (uint64_t)1), P, "points: 'counts' has 2 entries, expected one per name (1)");
    FAIL(build("m4 s s s u s a1 s s a1 i", PTS, "names", "a", "counts", (int64_t)-1), P,
         "points: 'counts'[0] must be an unsigned integer");
    FAIL(build("m4 s s s u s a1 s s b", PTS, "names", "a", "index", ix4, (size_t)16), P,
         "points: 'ts' missing");
    FAIL(build("m5 s s s u s a1 s s b s a0", PTS, "names", "a", "index", ix4, (size_t)16, "ts"),
         P, "points: 'ts' must be bin");
    FAIL(build("m5 s s s u s a1 s s b s b", PTS, "names", "a", "index", ix4, (size_t)16, "ts",
               ts4, (size_t)24), P, "points: 'ts' is 24 bytes, expected 8 × 4 points");
    FAIL(build("m5 s s s u s a1 s s b s b", PTS, "names", "a", "index", ix4, (size_t)16, "ts",
               ts4, (size_t)32), P, "points: 'values' missing");
    FAIL(build("m6 s s s u s a1 s s b s b s b", PTS, "names", "a", "index", ix4, (size_t)16,
               "ts", ts4, (size_t)32, "values", v4, (size_t)31), P,
         "points: 'values' is 31 bytes, expected 8 × 4 points");
    FAIL(build("m6 s s s u s a1 s s a1 u s b s b", PTS, "names", "a", "counts", (uint64_t)3,
               "ts", ts4, (size_t)32, "values", v4, (size_t)32), P,
         "points: 'ts' is 32 bytes, expected 8 × 3 points");
    struct ing_limits lim4 = ing_default_limits;
    lim4.max_points = 3;
    FAIL_LIM(build("m6 s s s u s a1 s s b s b s b", PTS, "names", "a", "index", ix4,
                   (size_t)16, "ts", ts4, (size_t)32, "values", v4, (size_t)32), &lim4,
             GA_ETOOBIG, "points: 4 points, at most 3");
    FAIL_LIM(build("m4 s s s u s a1 s s a1 u", PTS, "names", "a", "counts",
                   (uint64_t)UINT32_MAX * 4), &lim4, GA_ETOOBIG, "points: more than 3 points");
    FAIL_LIM(build(PT "s a3 s s s", PTS, "names", "a", "b", "c"), &small, GA_ETOOBIG,
             "points: 'names' has 3 entries, at most 2");

    /* hello */
    FAIL(build("m2 s s s s", "type", "hello", "client", "x"), P, "hello: 'version' missing");
    FAIL(build("m3 s s s u s s", "type", "hello", "version", (uint64_t)2, "client", "x"), P,
         "hello: version 2 not supported (this end speaks 1)");
    FAIL(build("m2 s s s u", "type", "hello", "version", (uint64_t)1), P,
         "hello: 'client' missing");
    FAIL(build("m3 s s s u s u", "type", "hello", "version", (uint64_t)1, "client",
               (uint64_t)1), P, "hello: 'client' must be a string");
    char a256[257];
    memset(a256, 'a', 256);
    a256[256] = '\0';
    FAIL(build("m3 s s s u s s", "type", "hello", "version", (uint64_t)1, "client", a256), P,
         "hello: 'client' is 256 bytes, at most 255");
    FAIL(build("m3 s s s u s S", "type", "hello", "version", (uint64_t)1, "client", "a\0b",
               (size_t)3), P, "hello: 'client' contains a NUL byte");
    FAIL(build("m4 s s s u s s s u", "type", "hello", "version", (uint64_t)1, "client", "c",
               "token", (uint64_t)1), P, "hello: 'token' must be a string");
    FAIL(build("m3 s s s u s n", "type", "hello", "version", (uint64_t)1, "server"), P,
         "hello: 'client' missing");                    /* nil is absent */
    FAIL(build("m4 s s s u s s s u", "type", "hello", "version", (uint64_t)1, "server", "d",
               "max_frame", (uint64_t)1), P, "hello: 'max_inflight' missing");
    {
        static char big[70000];
        memset(big, 'x', sizeof big - 1);
        FAIL(build("m3 s s s u s s", "type", "hello", "version", (uint64_t)1, "client", big),
             GA_ETOOBIG, "hello: frame is 70032 bytes, at most 65536");
        /* the deepest frame that scans also decodes with msgpack-c: the map
         * and MP_FRAME_MAX_DEPTH - 1 arrays; one more and it does not scan */
        uint8_t deep[MP_FRAME_MAX_DEPTH + 1];
        char msg[64];
        memset(deep, 0x91, MP_FRAME_MAX_DEPTH);
        deep[MP_FRAME_MAX_DEPTH] = 0x01;
        struct frame f = build("m4 s s s u s s s r", "type", "hello", "version", (uint64_t)1,
                               "client", "c", "x", deep + 1, sizeof deep - 1);
        struct ing_msg m;
        char err[128];
        CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_HELLO);
        frame_free(&f);
        snprintf(msg, sizeof msg, "frame: nested deeper than %d levels", MP_FRAME_MAX_DEPTH);
        FAIL(build("m4 s s s u s s s r", "type", "hello", "version", (uint64_t)1, "client", "c",
                   "x", deep, sizeof deep), GA_ETOOBIG, msg);
    }
    /* ack */
    FAIL(build("m1 s s", "type", "ack"), P, "ack: 'seq' missing");
    FAIL(build("m2 s s s u", "type", "ack", "seq", (uint64_t)1), P, "ack: 'accepted' missing");
    FAIL(build("m3 s s s u s u", "type", "ack", "seq", (uint64_t)1, "accepted", (uint64_t)1), P,
         "ack: 'rejected' missing");
    FAIL(build("m4 s s s u s u s m0", "type", "ack", "seq", (uint64_t)1, "accepted",
               (uint64_t)1, "rejected"), P, "ack: 'rejected' must be an array");
    FAIL(build("m4 s s s u s u s a1 u", "type", "ack", "seq", (uint64_t)1, "accepted",
               (uint64_t)1, "rejected", (uint64_t)1), P, "ack: 'rejected'[0] must be a map");
    FAIL(build("m4 s s s u s u s a1 m1 s s", "type", "ack", "seq", (uint64_t)1, "accepted",
               (uint64_t)1, "rejected", "reason", "r"), P,
         "ack: 'rejected'[0]: 'index' must be an unsigned integer");
    FAIL(build("m4 s s s u s u s a1 m1 s u", "type", "ack", "seq", (uint64_t)1, "accepted",
               (uint64_t)1, "rejected", "index", (uint64_t)0), P,
         "ack: 'rejected'[0]: 'reason' must be a string");
    /* error */
    FAIL(build("m1 s s", "type", "error"), P, "error: 'code' missing");
    FAIL(build("m2 s s s u", "type", "error", "code", (uint64_t)1), P,
         "error: 'code' must be a negative 32-bit integer");
    FAIL(build("m2 s s s i", "type", "error", "code", (int64_t)INT32_MIN - 1), P,
         "error: 'code' must be a negative 32-bit integer");
    FAIL(build("m2 s s s i", "type", "error", "code", (int64_t)-1), P, "error: 'name' missing");
    FAIL(build("m3 s s s i s s", "type", "error", "code", (int64_t)-1, "name", "E"), P,
         "error: 'message' missing");
    FAIL(build("m4 s s s i s s s u", "type", "error", "code", (int64_t)-1, "name", "E",
               "message", (uint64_t)1), P, "error: 'message' must be a string");
    FAIL(build("m5 s s s i s s s s s s", "type", "error", "code", (int64_t)-1, "name", "E",
               "message", "m", "seq", "x"), P, "error: 'seq' must be an unsigned integer");

    /* a failed points frame still tells its seq */
    struct ing_msg m;
    char err[128];
    struct frame f = build("m3 s s s u s u", "type", "points", "seq", (uint64_t)77, "metrics",
                           (uint64_t)1);
    CHECK_INT(decode(f, NULL, &m, err, sizeof err), GA_EPROTO);
    CHECK(m.has_seq && m.seq == 77 && m.type == ING_POINTS);
    ing_msg_free(&m);
    frame_free(&f);
    /* a NULL err buffer is fine */
    f = build("u", (uint64_t)1);
    CHECK_INT(ing_decode(f.p, f.n, NULL, &m, NULL, 0), GA_EPROTO);
    frame_free(&f);
}

/* ---- random batches ---- */

struct rb {
    uint32_t nn;
    char **names;
    uint32_t *counts;   /* per name, for the grouped forms */
    size_t n;
    uint32_t *index;    /* per point, random, for the index form */
    int64_t *ts;
    double *v;
};

static double rnd_double(void)
{
    uint64_t bits = rnd();
    if (((bits >> 52) & 0x7ff) == 0x7ff)
        bits ^= 1ull << 62;                 /* never NaN or infinite */
    double d;
    memcpy(&d, &bits, 8);
    return d != 0 ? d : 1.0;
}

static void rb_make(struct rb *r, uint32_t nn, size_t n, int64_t ts_max)
{
    static const char *const utf8[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x94\xa5" };
    r->nn = nn;
    r->n = n;
    r->names = calloc(nn, sizeof *r->names);
    r->counts = calloc(nn ? nn : 1, sizeof *r->counts);
    r->index = malloc((n ? n : 1) * sizeof *r->index);
    r->ts = malloc((n ? n : 1) * sizeof *r->ts);
    r->v = malloc((n ? n : 1) * sizeof *r->v);
    for (uint32_t i = 0; i < nn; i++) {
        size_t len = 1 + rnd() % 60, k = 0;
        r->names[i] = malloc(len + 5);
        while (k < len) {
            if (rnd() % 8 == 0) {
                const char *u = utf8[rnd() % 3];
                memcpy(r->names[i] + k, u, strlen(u));
                k += strlen(u);
            } else {
                r->names[i][k++] = (char)(0x21 + rnd() % 94);
            }
        }
        r->names[i][k] = '\0';
    }
    for (size_t k = 0; k < n; k++) {
        r->index[k] = (uint32_t)(rnd() % nn);
        r->counts[r->index[k]]++;
        r->ts[k] = (int64_t)(1 + rnd() % (uint64_t)ts_max);
        r->v[k] = rnd_double();
    }
}

static void rb_free(struct rb *r)
{
    for (uint32_t i = 0; i < r->nn; i++)
        free(r->names[i]);
    free(r->names);
    free(r->counts);
    free(r->index);
    free(r->ts);
    free(r->v);
}

/* Decode f, also from an odd address; 1 if the batch is exactly r, with
 * name indexes from `idx` (per point) and timestamps from `ts`. */
static int batch_is(struct frame f, uint64_t seq, const struct rb *r, const uint32_t *idx,
                    const int64_t *ts)
{
    int ok = 1;
    for (int odd = 0; odd < 2; odd++) {
        uint8_t *buf = malloc(f.n + 1);
        memcpy(buf + odd, f.p, f.n);
        struct ing_msg m;
        char err[256] = "";
        int rc = ing_decode(buf + odd, f.n, NULL, &m, err, sizeof err);
        free(buf);
        struct ing_batch *b = &m.u.points;
        if (rc != ING_POINTS || b->seq != seq || b->n != r->n || b->nrejected || b->nnames != r->nn) {
            harness_fail(__FILE__, __LINE__, "rc %d (%s) seq %llu n %zu rejected %zu names %u", rc,
                         err, (unsigned long long)b->seq, b->n, b->nrejected, b->nnames);
            ing_msg_free(&m);
            return 0;
        }
        for (uint32_t i = 0; i < r->nn && ok; i++)
            ok = strcmp(b->names[i], r->names[i]) == 0 && b->name_len[i] == strlen(r->names[i]);
        for (size_t k = 0; k < r->n && ok; k++)
            ok = b->name_idx[k] == idx[k] && b->ts[k] == ts[k] &&
                 memcmp(&b->value[k], &r->v[k], 8) == 0;
        ing_msg_free(&m);
        if (!ok)
            harness_fail(__FILE__, __LINE__, "decoded batch differs (odd=%d)", odd);
    }
    return ok;
}

/* grouped order: points of name 0, then name 1, ... */
static void rb_grouped(const struct rb *r, uint32_t *idx, int64_t *ts, double *v)
{
    size_t k = 0;
    for (uint32_t i = 0; i < r->nn; i++)
        for (size_t p = 0; p < r->n; p++)
            if (r->index[p] == i) {
                idx[k] = i;
                ts[k] = r->ts[p];
                v[k++] = r->v[p];
            }
}

static void test_random_round_trips(void)
{
    for (int iter = 0; iter < 300; iter++) {
        struct rb r;
        uint32_t nn = 1 + (uint32_t)(rnd() % 20);
        size_t n = rnd() % 400;
        uint64_t seq = rnd() >> (rnd() % 64);
        int seconds = iter % 3 == 2;
        rb_make(&r, nn, n, seconds ? (int64_t)1 << 62 : GA_TS_MAX);
        struct pk b;

        ing_pack_points_columnar(pk_init(&b), seq, nn, (const char *const *)r.names, r.index, NULL,
                                 n, r.ts, r.v);
        struct frame f = pk_take(&b);
        int ok = batch_is(f, seq, &r, r.index, r.ts);
        frame_free(&f);

        uint32_t *idx = malloc((n ? n : 1) * 4);
        int64_t *ts = malloc((n ? n : 1) * 8), *want_ts = malloc((n ? n : 1) * 8);
        double *v = malloc((n ? n : 1) * 8);
        rb_grouped(&r, idx, ts, v);
        memcpy(r.v, v, n * 8);          /* r.v now in grouped order */
        ing_pack_points_columnar(pk_init(&b), seq, nn, (const char *const *)r.names, NULL,
                                 r.counts, n, ts, r.v);
        f = pk_take(&b);
        ok = ok && batch_is(f, seq, &r, idx, ts);
        frame_free(&f);

        enum ing_ts_form form = seconds ? ING_TS_SECONDS : iter % 3 ? ING_TS_RFC3339 : ING_TS_NS;
        for (size_t k = 0; k < n; k++) {
            want_ts[k] = ts[k];
            if (seconds)
                ts_from_seconds((double)ts[k] / 1e9, &want_ts[k]);
        }
        ing_pack_points_friendly(pk_init(&b), seq, nn, (const char *const *)r.names, r.counts, ts,
                                 r.v, form);
        f = pk_take(&b);
        ok = ok && batch_is(f, seq, &r, idx, want_ts);
        frame_free(&f);
        free(idx);
        free(ts);
        free(want_ts);
        free(v);
        rb_free(&r);
        if (!ok) {
            harness_fail(__FILE__, __LINE__, "iteration %d", iter);
            return;
        }
    }
}

/* A stream of frames back to back, split the way a socket might deliver
 * it, delimited with mp_frame_scan as the daemon does. */
static void test_stream(void)
{
    static const char *const hex[] = { HEX_HELLO_CLIENT, HEX_POINTS_FRIENDLY,
                                       HEX_POINTS_COLUMNAR_INDEX, HEX_POINTS_COLUMNAR_COUNTS,
                                       HEX_POINTS_FRIENDLY_MIXED };
    static const int type[] = { ING_HELLO, ING_POINTS, ING_POINTS, ING_POINTS, ING_POINTS };
    uint8_t stream[2048];
    size_t len = 0;
    for (int i = 0; i < 5; i++) {
        struct frame f = from_hex(hex[i]);
        memcpy(stream + len, f.p, f.n);
        len += f.n;
        frame_free(&f);
    }
    for (size_t chunk = 1; chunk <= 64; chunk *= 3) {
        size_t have = 0, start = 0;
        int got = 0;
        while (start < len) {
            size_t fl;
            int rc = mp_frame_scan(stream + start, have - start, 1 << 20, &fl);
            if (rc == 0) {
                if (have == len)
                    break;
                have = have + chunk < len ? have + chunk : len;
                continue;
            }
            CHECK_INT(rc, 1);
            struct ing_msg m;
            char err[128];
            CHECK_INT(ing_decode(stream + start, fl, NULL, &m, err, sizeof err), type[got]);
            ing_msg_free(&m);
            got++;
            start += fl;
        }
        CHECK_INT(got, 5);
    }
}

static void test_ack_round_trip(void)
{
    for (int iter = 0; iter < 50; iter++) {
        size_t nr = rnd() % 300;
        struct ing_reject *rej = malloc((nr ? nr : 1) * sizeof *rej);
        char (*txt)[40] = malloc((nr ? nr : 1) * sizeof *txt);
        for (size_t i = 0; i < nr; i++) {
            rej[i].index = rnd() >> (rnd() % 64);
            snprintf(txt[i], sizeof txt[i], "reason %llx", (unsigned long long)rnd());
            rej[i].reason = txt[i];
        }
        uint64_t seq = rnd(), acc = rnd() >> 3;
        struct pk b;
        ing_pack_ack(pk_init(&b), seq, acc, nr, rej);
        struct frame f = pk_take(&b);
        struct ing_msg m;
        char err[128];
        CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_ACK);
        CHECK(m.u.ack.seq == seq && m.u.ack.accepted == acc && m.u.ack.nrejected == nr);
        CHECK(m.has_seq && m.seq == seq);
        for (size_t i = 0; i < nr && i < m.u.ack.nrejected; i++)
            if (m.u.ack.rejected[i].index != rej[i].index ||
                strcmp(m.u.ack.rejected[i].reason, rej[i].reason) != 0)
                harness_fail(__FILE__, __LINE__, "rejection %zu differs", i);
        ing_msg_free(&m);
        frame_free(&f);
        free(rej);
        free(txt);
    }
}

/* 1M points, columnar (both forms) and friendly: decoded exactly. */
static void test_large(void)
{
    struct rb r;
    const size_t n = 1 << 20;
    rb_make(&r, 1000, n, GA_TS_MAX);
    struct pk b;
    ing_pack_points_columnar(pk_init(&b), 1, r.nn, (const char *const *)r.names, r.index, NULL, n,
                             r.ts, r.v);
    struct frame f = pk_take(&b);
    CHECK(f.n > 20 * n);
    struct ing_msg m;
    char err[128];
    CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_POINTS);
    CHECK_INT(m.u.points.n, n);
    CHECK(m.u.points.n == n && memcmp(m.u.points.ts, r.ts, n * 8) == 0 &&
          memcmp(m.u.points.value, r.v, n * 8) == 0 &&
          memcmp(m.u.points.name_idx, r.index, n * 4) == 0);
    ing_msg_free(&m);
    frame_free(&f);

    uint32_t *idx = malloc(n * 4);
    int64_t *ts = malloc(n * 8);
    double *v = malloc(n * 8);
    rb_grouped(&r, idx, ts, v);
    ing_pack_points_columnar(pk_init(&b), 2, r.nn, (const char *const *)r.names, NULL, r.counts, n,
                             ts, v);
    f = pk_take(&b);
    CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_POINTS);
    CHECK(m.u.points.n == n && memcmp(m.u.points.ts, ts, n * 8) == 0 &&
          memcmp(m.u.points.value, v, n * 8) == 0 && memcmp(m.u.points.name_idx, idx, n * 4) == 0);
    ing_msg_free(&m);
    frame_free(&f);

    ing_pack_points_friendly(pk_init(&b), 3, r.nn, (const char *const *)r.names, r.counts, ts, v,
                             ING_TS_NS);
    f = pk_take(&b);
    CHECK_INT(decode(f, NULL, &m, err, sizeof err), ING_POINTS);
    CHECK(m.u.points.n == n && memcmp(m.u.points.ts, ts, n * 8) == 0 &&
          memcmp(m.u.points.value, v, n * 8) == 0 && memcmp(m.u.points.name_idx, idx, n * 4) == 0);
    CHECK_INT(m.u.points.nnames, 1000);
    ing_msg_free(&m);
    frame_free(&f);
    free(idx);
    free(ts);
    free(v);
    rb_free(&r);
}

/* Mutated, truncated and extended frames: the decoder answers every one,
 * and whatever it accepts satisfies the batch invariants. */
static int batch_sane(const struct ing_batch *b)
{
    for (uint32_t i = 0; i < b->nnames; i++)
        if (b->name_len[i] == 0 || b->name_len[i] > 255 || strlen(b->names[i]) != b->name_len[i])
            return 0;
    for (size_t k = 0; k < b->n; k++)
        if (b->name_idx[k] >= b->nnames || b->ts[k] < 0 || !isfinite(b->value[k]))
            return 0;
    for (size_t i = 0; i < b->nrejected; i++)
        if (!b->rejected[i].reason[0] || strlen(b->rejected[i].reason) > ING_REASON_MAX ||
            (i && b->rejected[i].index <= b->rejected[i - 1].index))
            return 0;
    return 1;
}

static void test_mutations(void)
{
    static const char *const hex[] = {
        HEX_HELLO_CLIENT, HEX_HELLO_SERVER, HEX_POINTS_FRIENDLY, HEX_POINTS_FRIENDLY_MIXED,
        HEX_POINTS_COLUMNAR_INDEX, HEX_POINTS_COLUMNAR_COUNTS, HEX_ACK_REJECTED, HEX_ERROR,
    };
    struct ing_limits lim = { .max_points = 64, .max_names = 8, .max_frame = 4096 };
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 40000; iter++) {
        struct frame base = from_hex(hex[rnd() % 8]);
        size_t n = base.n;
        uint8_t *p = malloc(n + 8);
        memcpy(p, base.p, n);
        switch (rnd() % 4) {
        case 0:                                     /* truncate */
            n = rnd() % n;
            break;
        case 1:                                     /* append junk */
            for (int k = 0; k < 1 + (int)(rnd() % 8); k++)
                p[n++] = (uint8_t)rnd();
            break;
        default:                                    /* overwrite 1..4 bytes */
            for (int k = 0; k < 1 + (int)(rnd() % 4); k++)
                p[rnd() % n] = (uint8_t)rnd();
        }
        struct frame f = { malloc(n ? n : 1), n };
        memcpy(f.p, p, n);
        struct ing_msg m;
        char err[256] = "";
        int rc = ing_decode(f.p, f.n, &lim, &m, err, sizeof err);
        if (rc < 0) {
            refused++;
            if (!err[0])
                harness_fail(__FILE__, __LINE__, "rc %d without a reason", rc);
        } else {
            accepted++;
            if (rc == ING_POINTS && !batch_sane(&m.u.points))
                harness_fail(__FILE__, __LINE__, "accepted batch breaks an invariant");
        }
        ing_msg_free(&m);
        frame_free(&f);
        frame_free(&base);
        free(p);
    }
    CHECK(accepted > 1000 && refused > 1000);
}

void run_tests(void)
{
    RUN(test_encoders_match_python);
    RUN(test_decode_examples);
    RUN(test_empty_batch);
    RUN(test_friendly_rejections);
    RUN(test_columnar_rejections);
    RUN(test_future_bound);
    RUN(test_drop_names);
    RUN(test_frame_errors);
    RUN(test_random_round_trips);
    RUN(test_stream);
    RUN(test_ack_round_trip);
    RUN(test_large);
    RUN(test_mutations);
}
