/* test_ceilometer.c — Ceilometer datagrams (proto/ceilometer.c): every
 * reject reason, timestamps, and the vectors of
 * tests/ceilometer/data/samples.txt, made by Debian's real Ceilometer
 * (tests/ceilometer/gen_vectors.py): every datagram the real UDPPublisher
 * sent must verify and decode to the sample Python computed; flipping any
 * byte of a signed one, or verifying with another secret, must fail.
 * $GA_CEILO_VECTORS names another vector file (tests/ceilometer/
 * test_ceilometer_live.py uses it); the default is read from $GA_ROOT (or
 * the current directory). */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include <msgpack.h>

#include "proto/ceilometer.h"
#include "proto/ga_err.h"
#include "proto/ga_time.h"

/* ---- helpers ---- */


/* A map from fields; each value is msgpack bytes given in hex, or one of
 * the shorthands "s:text" (str), "i:N" (int), "d:X" (float64), "nil". */
struct field {
    const char *key, *val;
};

static void pack_val(msgpack_packer *pk, msgpack_sbuffer *sb, const char *v)
{
    if (strncmp(v, "s:", 2) == 0) {
        msgpack_pack_str_with_body(pk, v + 2, strlen(v + 2));
    } else if (strncmp(v, "i:", 2) == 0) {
        msgpack_pack_int64(pk, strtoll(v + 2, NULL, 10));
    } else if (strncmp(v, "d:", 2) == 0) {
        msgpack_pack_double(pk, strtod(v + 2, NULL));
    } else if (strcmp(v, "nil") == 0) {
        msgpack_pack_nil(pk);
    } else {
        size_t n;
        uint8_t *raw = harness_unhex(v, &n);
        msgpack_sbuffer_write(sb, (const char *)raw, n);
        free(raw);
    }
}

static const struct field BASE[] = {
    {"source", "s:openstack"},       {"counter_name", "s:cpu"},
    {"counter_type", "s:gauge"},     {"counter_unit", "s:%"},
    {"counter_volume", "d:42.5"},    {"user_id", "nil"},
    {"project_id", "s:p1"},          {"resource_id", "s:vm1"},
    {"timestamp", "s:2026-11-21T15:04:05.123456"},
    {"resource_metadata", "s:PLACEHOLDER"},
    {"message_id", "s:0f0e"},        {"monotonic_time", "nil"},
};
#define NBASE (sizeof BASE / sizeof BASE[0])

/* BASE with key `key` set to val (val NULL: removed; key absent from BASE:
 * added), and resource_metadata = md (hex msgpack; NULL: {}).  With a
 * non-NULL secret, message_signature is computed over the result with
 * ceilo_signature().  The caller frees sb. */
static void build(msgpack_sbuffer *sb, const char *key, const char *val, const char *md, const char *secret)
{
    struct field f[NBASE + 2];
    size_t n = 0;
    int found = 0;
    for (size_t i = 0; i < NBASE; i++) {
        f[n] = BASE[i];
        if (strcmp(f[n].key, "resource_metadata") == 0)
            f[n].val = md ? md : "80";
        if (key && strcmp(f[n].key, key) == 0) {
            found = 1;
            if (!val)
                continue;
            f[n].val = val;
        }
        n++;
    }
    if (key && !found && val)
        f[n++] = (struct field){key, val};
    char sig[72] = "s:";
    if (secret) {
        build(sb, key, val, md, NULL);
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        const char *why;
        if (msgpack_unpack_next(&u, sb->data, sb->size, NULL) != MSGPACK_UNPACK_SUCCESS ||
            ceilo_signature(&u.data, secret, strlen(secret), sig + 2, &why) != 0)
            strcpy(sig, "s:");
        msgpack_unpacked_destroy(&u);
        msgpack_sbuffer_destroy(sb);
        f[n++] = (struct field){"message_signature", sig};
    }
    msgpack_sbuffer_init(sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        msgpack_pack_str_with_body(&pk, f[i].key, strlen(f[i].key));
        pack_val(&pk, sb, f[i].val);
    }
}

/* ceilo_decode of build(key, val, md, sign_with) under secret. */
static int decode_with(const char *key, const char *val, const char *md, const char *sign_with,
                       const char *secret, struct ceilo_sample *s, char *err)
{
    msgpack_sbuffer sb;
    build(&sb, key, val, md, sign_with);
    uint8_t *copy = malloc(sb.size);                /* exact size for ASan */
    memcpy(copy, sb.data, sb.size);
    int r = ceilo_decode(copy, sb.size, secret, secret ? strlen(secret) : 0, s, err, 256);
    free(copy);
    msgpack_sbuffer_destroy(&sb);
    return r;
}

#define EXPECT(reason, key, val, md, sign_with, secret) do { \
    struct ceilo_sample _s; char _e[256]; const char *_k = (key), *_v = (val); \
    int _r = decode_with(_k, _v, md, sign_with, secret, &_s, _e); \
    if (_r != (reason)) harness_fail(__FILE__, __LINE__, "%s=%s: got %s (%s), expected %s", \
        _k ? _k : "-", _v ? _v : "(removed)", ceilo_reject_name(_r), _e, ceilo_reject_name(reason)); \
    else if (_r != CEILO_OK && !_e[0]) harness_fail(__FILE__, __LINE__, "no error text for %s", #reason); \
} while (0)

/* ---- tests: vectors from the real code ---- */

/* 1 when position p of buf may be inside a float64's payload (after an 0xcb
 * byte): a NaN's payload bits do not change str(nan), so a flip there may
 * rightly keep the signature valid. */
static int maybe_float_payload(const uint8_t *buf, size_t p)
{
    for (size_t q = p >= 8 ? p - 8 : 0; q < p; q++)
        if (buf[q] == 0xcb)
            return 1;
    return 0;
}

/* The length of the map at buf[q] if it holds no leaf at all (only maps
 * with fixstr keys, down to empty ones), else 0. */
static size_t empty_tree_len(const uint8_t *buf, size_t len, size_t q)
{
    if (q >= len || (buf[q] & 0xf0) != 0x80)
        return 0;
    size_t at = q + 1;
    for (int i = 0; i < (buf[q] & 0x0f); i++) {
        if (at >= len || (buf[at] & 0xe0) != 0xa0)
            return 0;
        at += 1 + (buf[at] & 0x1f);
        size_t sub = empty_tree_len(buf, len, at);
        if (!sub)
            return 0;
        at += sub;
    }
    return at - q;
}

/* 1 when position p of buf may be inside a fixstr key whose value is a map
 * without leaves ({}, {"a": {}}): recursive_keypairs() yields no pair for
 * it, so its key is not covered by Ceilometer's signature — renaming it
 * keeps the signature valid, in Python too. */
static int maybe_empty_map_key(const uint8_t *buf, size_t len, size_t p)
{
    for (size_t q = p + 1; q < len && q <= p + 33; q++) {
        if (!empty_tree_len(buf, len, q))
            continue;
        for (size_t h = q >= 32 ? q - 32 : 0; h <= p; h++)
            if ((buf[h] & 0xe0) == 0xa0 && h + 1 + (buf[h] & 0x1f) == q)
                return 1;
    }
    return 0;
}

static void check_vector(int lineno, const char *secret, size_t slen, const uint8_t *dg, size_t len,
                         const char *sig, const char *metric, const char *type, long long ns, double value)
{
    struct ceilo_sample s;
    char err[256];
    int want = strcmp(type, "-") == 0 ? CEILO_BAD_VALUE : CEILO_OK;
    /* the file holds what Ceilometer sent and meant; gpuagg takes only
     * timestamps up to GA_TS_MAX (the fixed 2262-04-11 sample is past it) */
    if (want == CEILO_OK && ns > GA_TS_MAX)
        want = CEILO_OUT_OF_RANGE;
    int signed_ = strcmp(sig, "-") != 0;
    uint8_t *copy = malloc(len);
    memcpy(copy, dg, len);

    /* the signature as Ceilometer computed it */
    if (signed_) {
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        char hex[65] = "";
        const char *why = NULL;
        if (msgpack_unpack_next(&u, (const char *)copy, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
            ceilo_signature(&u.data, secret, slen, hex, &why) == 0) {
            if (strcmp(hex, sig) != 0)
                harness_fail(__FILE__, __LINE__, "line %d: signature %s, Ceilometer's %s", lineno, hex, sig);
        } else {
            harness_fail(__FILE__, __LINE__, "line %d: ceilo_signature failed: %s", lineno, why ? why : "?");
        }
        msgpack_unpacked_destroy(&u);
    }
    /* verified (or not signed: no secret), then decoded */
    int r = ceilo_decode(copy, len, signed_ ? secret : NULL, signed_ ? slen : 0, &s, err, sizeof err);
    if (r != want) {
        harness_fail(__FILE__, __LINE__, "line %d: %s (%s), expected %s", lineno, ceilo_reject_name(r), err,
                     ceilo_reject_name(want));
    } else if (r == CEILO_OK) {
        if (strcmp(s.metric, metric) || strcmp(s.counter_type, type) || s.ts_ns != ns ||
            memcmp(&s.value, &value, sizeof value) != 0)
            harness_fail(__FILE__, __LINE__, "line %d: got %s %s %lld %.17g, expected %s %s %lld %.17g", lineno,
                         s.metric, s.counter_type, (long long)s.ts_ns, s.value, metric, type, ns, value);
    }
    /* no secret: the signature is not looked at */
    r = ceilo_decode(copy, len, NULL, 0, &s, err, sizeof err);
    if (r != want)
        harness_fail(__FILE__, __LINE__, "line %d without secret: %s", lineno, ceilo_reject_name(r));
    /* another secret */
    r = ceilo_decode(copy, len, "another secret", 14, &s, err, sizeof err);
    if (r != (signed_ ? CEILO_BAD_SIGNATURE : CEILO_UNSIGNED))
        harness_fail(__FILE__, __LINE__, "line %d with another secret: %s", lineno, ceilo_reject_name(r));
    /* every single-byte change of a signed datagram is refused */
    for (size_t p = 0; signed_ && p < len; p++) {
        if (maybe_float_payload(dg, p) || maybe_empty_map_key(dg, len, p))
            continue;
        copy[p] ^= (uint8_t)(p % 3 == 0 ? 0x80 : 1u << (p % 7));      /* vary the bit flipped */
        r = ceilo_decode(copy, len, secret, slen, &s, err, sizeof err);
        copy[p] = dg[p];
        if (r == CEILO_OK) {
            harness_fail(__FILE__, __LINE__, "line %d: byte %zu changed, still accepted", lineno, p);
            break;
        }
    }
    free(copy);
}

static void test_ceilometer_vectors(void)
{
    FILE *f = harness_open_data("GA_CEILO_VECTORS", "tests/ceilometer/data/samples.txt");
    if (!f)
        return;
    size_t cap = 1 << 20;
    char *line = malloc(cap);
    int lineno = 0, nsigned = 0, nok = 0, nlate = 0;
    while (fgets(line, (int)cap, f)) {
        lineno++;
        char *tok[7];
        int nt = 0;
        for (char *t = strtok(line, " \n"); t && nt < 7; t = strtok(NULL, " \n"))
            tok[nt++] = t;
        if (nt != 7) {
            harness_fail(__FILE__, __LINE__, "line %d: %d fields", lineno, nt);
            continue;
        }
        size_t slen, len, mlen;
        uint8_t *secret = harness_unhex(tok[0], &slen), *dg = harness_unhex(tok[1], &len), *metric = harness_unhex(tok[3], &mlen);
        check_vector(lineno, (char *)secret, slen, dg, len, tok[2], (char *)metric, tok[4], strtoll(tok[5], NULL, 10),
                     strtod(tok[6], NULL));
        nsigned += strcmp(tok[2], "-") != 0;
        nok += strcmp(tok[4], "-") != 0;
        nlate += strtoll(tok[5], NULL, 10) > GA_TS_MAX;
        free(secret);
        free(dg);
        free(metric);
    }
    free(line);
    fclose(f);
    CHECK(lineno >= 50);
    CHECK(nsigned >= 40);
    CHECK(nok >= 40);
    CHECK(nlate >= 1);          /* the signed 2262-04-11T23:47:16.854775 sample */
}

/* ---- tests: each reason ---- */

static void test_reject_names(void)
{
    CHECK_STR(ceilo_reject_name(CEILO_OK), "ok");
    CHECK_STR(ceilo_reject_name(CEILO_NOT_MSGPACK), "not_msgpack");
    CHECK_STR(ceilo_reject_name(CEILO_NOT_MAP), "not_map");
    CHECK_STR(ceilo_reject_name(CEILO_MISSING_FIELD), "missing_field");
    CHECK_STR(ceilo_reject_name(CEILO_BAD_FIELD), "bad_field");
    CHECK_STR(ceilo_reject_name(CEILO_UNSIGNED), "unsigned");
    CHECK_STR(ceilo_reject_name(CEILO_BAD_SIGNATURE), "bad_signature");
    CHECK_STR(ceilo_reject_name(CEILO_BAD_TIMESTAMP), "bad_timestamp");
    CHECK_STR(ceilo_reject_name(CEILO_OUT_OF_RANGE), "out_of_range");
    CHECK_STR(ceilo_reject_name(CEILO_BAD_VALUE), "bad_value");
    CHECK_STR(ceilo_reject_name(CEILO_FUTURE), "future");
    CHECK_STR(ceilo_reject_name(CEILO_NREASONS), "unknown");
    CHECK_STR(ceilo_reject_name(-1), "unknown");
}

static void test_good_sample(void)
{
    struct ceilo_sample s;
    char err[256];
    CHECK_INT(decode_with(NULL, NULL, NULL, NULL, NULL, &s, err), CEILO_OK);
    CHECK_STR(err, "");
    CHECK_STR(s.metric, "vm1/cpu");
    CHECK_STR(s.counter_type, "gauge");
    CHECK_INT(s.ts_ns, 1795273445123456000LL);
    CHECK(s.value == 42.5);
    CHECK_INT(decode_with("counter_volume", "i:-7", NULL, "k", "k", &s, err), CEILO_OK);
    CHECK(s.value == -7.0);
    CHECK_INT(decode_with("counter_volume", "cf8000000000000000", NULL, NULL, NULL, &s, err), CEILO_OK);
    CHECK(s.value == 9223372036854775808.0);                    /* uint64 2^63 */
    CHECK_INT(decode_with("counter_volume", "ca3fc00000", NULL, NULL, NULL, &s, err), CEILO_OK);
    CHECK(s.value == 1.5);                                      /* float32 */
    CHECK_INT(decode_with("counter_type", "s:cumulative", NULL, NULL, NULL, &s, err), CEILO_OK);
    CHECK_STR(s.counter_type, "cumulative");
    CHECK_INT(decode_with("counter_type", "s:delta", NULL, NULL, NULL, &s, err), CEILO_OK);
    CHECK_STR(s.counter_type, "delta");
}

static void test_not_msgpack(void)
{
    struct ceilo_sample s;
    char err[256];
    CHECK_INT(ceilo_decode("", 0, NULL, 0, &s, err, sizeof err), CEILO_NOT_MSGPACK);
    CHECK_INT(ceilo_decode("\xc1", 1, NULL, 0, &s, err, sizeof err), CEILO_NOT_MSGPACK);
    CHECK_INT(ceilo_decode("\x81\xa1", 2, NULL, 0, &s, err, sizeof err), CEILO_NOT_MSGPACK);
    CHECK_CONTAINS(err, "truncated");
    CHECK_INT(ceilo_decode("\x80\x80", 2, NULL, 0, &s, err, sizeof err), CEILO_NOT_MSGPACK);
    CHECK_CONTAINS(err, "after");
    CHECK_INT(ceilo_decode("\xdd\xff\xff\xff\xff", 5, NULL, 0, &s, err, sizeof err), CEILO_NOT_MSGPACK);
    uint8_t deep[40];                                           /* 33 nested arrays: msgpack-c's limit */
    memset(deep, 0x91, 33);
    deep[33] = 0xc0;
    CHECK_INT(ceilo_decode(deep, 34, NULL, 0, &s, err, sizeof err), CEILO_NOT_MSGPACK);
    CHECK_INT(ceilo_decode(NULL, 0, NULL, 0, &s, NULL, 0), CEILO_NOT_MSGPACK);
}

static void test_not_map(void)
{
    struct ceilo_sample s;
    char err[256];
    CHECK_INT(ceilo_decode("\x90", 1, NULL, 0, &s, err, sizeof err), CEILO_NOT_MAP);
    CHECK_INT(ceilo_decode("\x05", 1, "k", 1, &s, err, sizeof err), CEILO_NOT_MAP);
    CHECK_INT(ceilo_decode("\xa3" "abc", 4, NULL, 0, &s, err, sizeof err), CEILO_NOT_MAP);
}

static void test_missing_field(void)
{
    static const char *req[] = {"counter_name", "resource_id", "counter_type", "counter_volume", "timestamp"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        EXPECT(CEILO_MISSING_FIELD, req[i], NULL, NULL, NULL, NULL);
        EXPECT(CEILO_MISSING_FIELD, req[i], NULL, NULL, "k", "k");    /* signed, then missing */
        if (strcmp(req[i], "counter_volume") != 0)
            EXPECT(CEILO_MISSING_FIELD, req[i], "nil", NULL, NULL, NULL);
    }
    struct ceilo_sample s;
    char err[256];
    decode_with("timestamp", NULL, NULL, NULL, NULL, &s, err);
    CHECK_CONTAINS(err, "timestamp");
}

static void test_bad_field(void)
{
    char name[600];
    EXPECT(CEILO_BAD_FIELD, "counter_name", "i:5", NULL, NULL, NULL);
    EXPECT(CEILO_BAD_FIELD, "counter_name", "s:", NULL, NULL, NULL);
    EXPECT(CEILO_BAD_FIELD, "counter_name", "a3610062", NULL, NULL, NULL);     /* "a\0b" */
    EXPECT(CEILO_BAD_FIELD, "resource_id", "a2c328", NULL, NULL, NULL);        /* bad UTF-8 */
    EXPECT(CEILO_BAD_FIELD, "resource_id", "c403616263", NULL, NULL, NULL);    /* bin */
    /* names that would display as others (proto/name_check.h), the code
     * point named; other scripts pass */
    EXPECT(CEILO_BAD_FIELD, "resource_id", "s:vm\xe2\x80\xae" "1", NULL, NULL, NULL);
    EXPECT(CEILO_BAD_FIELD, "counter_name", "s:cpu\xe2\x80\x8b", NULL, NULL, NULL);
    EXPECT(CEILO_BAD_FIELD, "counter_name", "s:cpu\x1b[0m", NULL, NULL, NULL);
    EXPECT(CEILO_OK, "resource_id", "s:h\xc3\xa9llo-\xe6\xb8\xa9", NULL, NULL, NULL);
    {
        struct ceilo_sample s1;
        char e1[256];
        CHECK_INT(decode_with("resource_id", "s:vm\xe2\x80\xae" "1", NULL, NULL, NULL, &s1, e1),
                  CEILO_BAD_FIELD);
        CHECK_STR(e1, "resource_id contains U+202E (right-to-left override) at byte 2");
        CHECK_INT(decode_with("counter_name", "a3610062", NULL, NULL, NULL, &s1, e1), CEILO_BAD_FIELD);
        CHECK_STR(e1, "counter_name contains U+0000 (C0 control) at byte 1");
    }
    EXPECT(CEILO_BAD_FIELD, "counter_type", "s:rate", NULL, NULL, NULL);
    EXPECT(CEILO_BAD_FIELD, "counter_type", "s:gaug", NULL, NULL, NULL);
    EXPECT(CEILO_BAD_FIELD, "counter_type", "i:1", NULL, NULL, NULL);
    /* resource_id "/" counter_name: 511 bytes fit, 512 do not */
    memset(name, 'r', sizeof name);
    memcpy(name, "s:", 2);
    name[2 + 507] = '\0';                                                    /* 507 + "/cpu" = 511 */
    EXPECT(CEILO_OK, "resource_id", name, NULL, NULL, NULL);
    memset(name, 'r', sizeof name);
    memcpy(name, "s:", 2);
    name[2 + 508] = '\0';
    EXPECT(CEILO_BAD_FIELD, "resource_id", name, NULL, NULL, NULL);
    /* values the signature cannot be computed over */
    static const char *unsignable[] = {
        "81a178d40100",             /* ext */
        "81a17891c402c3a9",         /* bin "é" in a list: str repr of non-ASCII */
        "82a161c0c40162c0",         /* str and bin keys */
        "82a161c0a161c0",           /* duplicate nested key */
        "8101c0",                   /* int key */
        "81a178a2c328",             /* bad UTF-8 value */
    };
    for (size_t i = 0; i < sizeof unsignable / sizeof unsignable[0]; i++)
        EXPECT(CEILO_BAD_FIELD, "message_signature", "s:00", unsignable[i], NULL, "k");
    /* ... which matter only when verifying */
    EXPECT(CEILO_OK, NULL, NULL, "81a178d40100", NULL, NULL);
    /* a duplicate top-level key could be read two ways */
    struct ceilo_sample s;
    char err[256];
    CHECK_INT(ceilo_decode("\x82\xa1" "a\x01\xa1" "a\x02", 7, NULL, 0, &s, err, sizeof err), CEILO_BAD_FIELD);
    CHECK_CONTAINS(err, "duplicate");
    EXPECT(CEILO_OK, NULL, NULL, "81a17891c402c3a9", NULL, NULL);
}

static void test_unsigned(void)
{
    EXPECT(CEILO_UNSIGNED, NULL, NULL, NULL, NULL, "secret");
    EXPECT(CEILO_UNSIGNED, "message_signature", "s:", NULL, NULL, "secret");
    EXPECT(CEILO_UNSIGNED, "message_signature", "nil", NULL, NULL, "secret");
    EXPECT(CEILO_UNSIGNED, "message_signature", "c400", NULL, NULL, "secret");
    /* without a secret the signature does not matter */
    EXPECT(CEILO_OK, NULL, NULL, NULL, NULL, NULL);
    EXPECT(CEILO_OK, "message_signature", "s:bogus", NULL, NULL, NULL);
    EXPECT(CEILO_OK, "message_signature", "i:3", NULL, NULL, NULL);
    EXPECT(CEILO_OK, NULL, NULL, NULL, "secret", NULL);
}

static void test_bad_signature(void)
{
    EXPECT(CEILO_OK, NULL, NULL, NULL, "secret", "secret");
    EXPECT(CEILO_BAD_SIGNATURE, NULL, NULL, NULL, "secret", "secreT");
    EXPECT(CEILO_BAD_SIGNATURE, NULL, NULL, NULL, "secret", "secret ");
    EXPECT(CEILO_BAD_SIGNATURE, "message_signature", "i:3", NULL, NULL, "secret");
    EXPECT(CEILO_BAD_SIGNATURE, "message_signature", "s:00", NULL, NULL, "secret");
    /* the right digest in upper case, or as bin, as Python compares it */
    msgpack_sbuffer sb;
    build(&sb, NULL, NULL, NULL, "secret");
    char *p = memmem(sb.data, sb.size, "message_signature", 17);
    CHECK(p != NULL);
    if (!p) {
        msgpack_sbuffer_destroy(&sb);
        return;
    }
    char *hex = p + 17 + 2;                         /* after the str8 header d9 40 */
    struct ceilo_sample s;
    char err[256];
    CHECK_INT((uint8_t)p[17], 0xd9);
    CHECK_INT(ceilo_decode(sb.data, sb.size, "secret", 6, &s, err, sizeof err), CEILO_OK);
    p[17] = (char)0xc4;                             /* bin8: Python compares bytes too */
    CHECK_INT(ceilo_decode(sb.data, sb.size, "secret", 6, &s, err, sizeof err), CEILO_OK);
    p[17] = (char)0xd9;
    for (int i = 0; i < 64; i++)
        if (hex[i] >= 'a' && hex[i] <= 'f') {
            hex[i] = (char)(hex[i] - 'a' + 'A');
            break;
        }
    CHECK_INT(ceilo_decode(sb.data, sb.size, "secret", 6, &s, err, sizeof err), CEILO_BAD_SIGNATURE);
    CHECK_CONTAINS(err, "does not match");
    msgpack_sbuffer_destroy(&sb);
}

static void test_bad_timestamp(void)
{
    static const char *bad[] = {
        "s:", "s:2026-11-21", "s:2026-11-21T15:04", "s:2026-13-01T00:00:00", "s:2026-02-29T00:00:00",
        "s:2026-11-21T24:00:00", "s:2026-11-21T15:60:00", "s:2026-11-21T15:04:60", "s:2026-11-21T15:04:05.",
        "s:2026-11-21T15:04:05.1234567890", "s:2026-11-21T15:04:05+24:00", "s:2026-11-21T15:04:05+01:60",
        "s:2026-11-21T15:04:05+1", "s:2026-11-21T15:04:05 ", "s:2026-11-21T15:04:05ZZ", "s:2026/11/21T15:04:05",
        "s:1677-09-21T00:12:43.145224191", "s:0000-01-01T00:00:00",
        "s:+2026-11-21T15:04:05", "i:1795273445", "d:1795273445.5", "c3",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        EXPECT(CEILO_BAD_TIMESTAMP, "timestamp", bad[i], NULL, NULL, NULL);
}

/* Valid ISO 8601 but after GA_TS_MAX (2200-01-01T00:00:00Z): refused with
 * its own reason; the bound itself and anything before 1970 decode (the
 * engine reports the latter as before_epoch). */
static void test_out_of_range(void)
{
    static const char *late[] = {
        "s:2200-01-01T00:00:00.000000001", "s:2200-01-01T00:00:00.000001", "s:2262-04-11T23:47:16.854775",
        "s:2262-04-11T23:47:16.854775807", "s:2200-01-01T01:00:00+00:59", "s:2300-06-01T00:00:00Z",
        "s:2262-04-11T23:47:16.854775808", "s:9999-12-31T23:59:59",
    };
    for (size_t i = 0; i < sizeof late / sizeof late[0]; i++) {
        EXPECT(CEILO_OUT_OF_RANGE, "timestamp", late[i], NULL, NULL, NULL);
        EXPECT(CEILO_OUT_OF_RANGE, "timestamp", late[i], NULL, "k", "k");
    }
    static const char *ok[] = {
        "s:2200-01-01T00:00:00", "s:2199-12-31T23:59:59.999999999", "s:2200-01-01T01:00:00+01:00",
        "s:1970-01-01T00:00:00", "s:1969-12-31T23:59:59.999999999",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        EXPECT(CEILO_OK, "timestamp", ok[i], NULL, NULL, NULL);
    struct ceilo_sample s;
    char err[256];
    CHECK_INT(decode_with("timestamp", "s:2200-01-01T00:00:00Z", NULL, NULL, NULL, &s, err), CEILO_OK);
    CHECK_INT(s.ts_ns, GA_TS_MAX);
    CHECK_INT(decode_with("timestamp", "s:2262-04-11T23:47:16.854775", NULL, NULL, NULL, &s, err),
              CEILO_OUT_OF_RANGE);
    CHECK_CONTAINS(err, "timestamp after 2200-01-01T00:00:00Z");
}

static void test_bad_value(void)
{
    static const char *bad[] = {"nil", "s:1", "c3", "c2", "d:nan", "d:inf", "d:-inf", "90", "80", "c400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT(CEILO_BAD_VALUE, "counter_volume", bad[i], NULL, NULL, NULL);
        EXPECT(CEILO_BAD_VALUE, "counter_volume", bad[i], NULL, "k", "k");
    }
}

/* ---- tests: pieces ---- */

/* The worked example of proto/ceilometer.h: Ceilometer's compute_signature(
 * {'b': {'c': [1, 'x'], 'd': 0.1}, 'a': 1, 'e': None, 'f': b'\x00'}, 'k')
 * hashes a1b:c[1, b'x']b:d0.1eNonefb'\x00' and gives f447… */
static void test_signature_example(void)
{
    size_t n;
    uint8_t *raw = harness_unhex("84a16282a1639201a178a164cb3fb999999999999aa16101a165c0a166c40100", &n);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    char hex[65] = "";
    const char *why = NULL;
    CHECK(msgpack_unpack_next(&u, (const char *)raw, n, NULL) == MSGPACK_UNPACK_SUCCESS);
    CHECK_INT(ceilo_signature(&u.data, "k", 1, hex, &why), 0);
    CHECK_STR(hex, "f447730d10cba49dc98a54362edd4aa6bc5b763239d9adb41df1bb2646f94607");
    msgpack_object not_map = {.type = MSGPACK_OBJECT_NIL};
    CHECK_INT(ceilo_signature(&not_map, "k", 1, hex, &why), GA_EINVAL);
    msgpack_unpacked_destroy(&u);
    free(raw);
}

void run_tests(void)
{
    RUN(test_ceilometer_vectors);
    RUN(test_reject_names);
    RUN(test_good_sample);
    RUN(test_not_msgpack);
    RUN(test_not_map);
    RUN(test_missing_field);
    RUN(test_bad_field);
    RUN(test_unsigned);
    RUN(test_bad_signature);
    RUN(test_bad_timestamp);
    RUN(test_out_of_range);
    RUN(test_bad_value);
    RUN(test_signature_example);
}
