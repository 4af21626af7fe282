/* test_mp_frame.c — mp_frame_scan(): every type and length form, every split
 * point, concatenation, invalid bytes, depth and size limits, hostile
 * declared lengths, and a cross-check against msgpack-c's own unpacker on
 * random objects and random bytes.  Buffers handed to the scanner are
 * malloc'd to their exact length so the ASan build catches any over-read. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include <msgpack.h>

#include "proto/ga_err.h"
#include "proto/mp_frame.h"

#define BIG ((size_t)1 << 30)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* scan a private exact-size copy of buf[0..len) */
static int scan(const void *buf, size_t len, size_t max_len, size_t *frame_len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (len)
        memcpy(copy, buf, len);
    int rc = mp_frame_scan(copy, len, max_len, frame_len);
    free(copy);
    return rc;
}

/* buf[0..len) is exactly one object: every proper prefix needs more bytes,
 * the whole is complete, trailing bytes are not part of it, and max_len is
 * honoured to the byte.  Returns the number of CHECKs that failed (0 = ok). */
static int check_object(const uint8_t *buf, size_t len)
{
    int bad = 0;
    size_t fl = 12345;
    for (size_t k = 0; k < len; k++) {
        int rc = scan(buf, k, BIG, &fl);
        if (rc != 0) {
            harness_fail(__FILE__, __LINE__, "prefix %zu of %zu: rc %d, expected 0", k, len, rc);
            bad++;
            break;
        }
    }
    fl = 0;
    if (scan(buf, len, BIG, &fl) != 1 || fl != len) {
        harness_fail(__FILE__, __LINE__, "whole object of %zu: frame_len %zu", len, fl);
        bad++;
    }
    uint8_t *more = malloc(len + 3);
    memcpy(more, buf, len);
    memcpy(more + len, "\x01\xc1\xdd", 3);      /* junk after the frame is not looked at */
    fl = 0;
    if (mp_frame_scan(more, len + 3, BIG, &fl) != 1 || fl != len) {
        harness_fail(__FILE__, __LINE__, "object of %zu with trailing bytes: frame_len %zu", len, fl);
        bad++;
    }
    free(more);
    if (scan(buf, len, len, &fl) != 1) {
        harness_fail(__FILE__, __LINE__, "object of %zu rejected with max_len == len", len);
        bad++;
    }
    if (scan(buf, len, len - 1, &fl) != GA_ETOOBIG) {
        harness_fail(__FILE__, __LINE__, "object of %zu accepted with max_len == len-1", len);
        bad++;
    }
    return bad;
}

#define OBJ(...) do { static const uint8_t b_[] = { __VA_ARGS__ }; CHECK_INT(check_object(b_, sizeof b_), 0); } while (0)

static void test_scalars(void)
{
    OBJ(0x00);                                  /* positive fixint */
    OBJ(0x7f);
    OBJ(0xe0);                                  /* negative fixint */
    OBJ(0xff);
    OBJ(0xc0);                                  /* nil, false, true */
    OBJ(0xc2);
    OBJ(0xc3);
    OBJ(0xcc, 0xff);                            /* uint 8/16/32/64 */
    OBJ(0xcd, 0xff, 0xff);
    OBJ(0xce, 1, 2, 3, 4);
    OBJ(0xcf, 1, 2, 3, 4, 5, 6, 7, 8);
    OBJ(0xd0, 0x80);                            /* int 8/16/32/64 */
    OBJ(0xd1, 0x80, 0);
    OBJ(0xd2, 0x80, 0, 0, 0);
    OBJ(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0);
    OBJ(0xca, 0x3f, 0x80, 0, 0);                /* float 32 = 1.0 */
    OBJ(0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0);    /* float 64 = 1.0 */
}

static void test_strings_bins_exts(void)
{
    OBJ(0xa0);                                  /* fixstr "" */
    OBJ(0xa3, 'a', 'b', 'c');
    OBJ(0xd9, 0);                               /* str 8 / 16 / 32 */
    OBJ(0xd9, 2, 'h', 'i');
    OBJ(0xda, 0, 3, 'x', 'y', 'z');
    OBJ(0xdb, 0, 0, 0, 1, 'q');
    OBJ(0xc4, 0);                               /* bin 8 / 16 / 32 */
    OBJ(0xc4, 2, 0xc1, 0xc1);                   /* body bytes are not type bytes */
    OBJ(0xc5, 0, 1, 0xff);
    OBJ(0xc6, 0, 0, 0, 2, 0xdd, 0xdf);
    OBJ(0xd4, 1, 0xaa);                         /* fixext 1/2/4/8/16 */
    OBJ(0xd5, 1, 0xaa, 0xbb);
    OBJ(0xd6, 0xff, 1, 2, 3, 4);                /* timestamp 32 */
    OBJ(0xd7, 0xff, 1, 2, 3, 4, 5, 6, 7, 8);
    OBJ(0xd8, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    OBJ(0xc7, 0, 7);                            /* ext 8 / 16 / 32 */
    OBJ(0xc7, 3, 7, 0xc1, 0xc1, 0xc1);
    OBJ(0xc8, 0, 2, 0x80, 1, 2);
    OBJ(0xc9, 0, 0, 0, 1, 0xff, 0x00);

    /* a str8 of 255 and a str16 of 300 bytes */
    uint8_t s[3 + 300];
    s[0] = 0xd9; s[1] = 255; memset(s + 2, 'a', 255);
    CHECK_INT(check_object(s, 2 + 255), 0);
    s[0] = 0xda; s[1] = 300 >> 8; s[2] = 300 & 0xff; memset(s + 3, 'b', 300);
    CHECK_INT(check_object(s, 3 + 300), 0);
}

static void test_containers(void)
{
    OBJ(0x90);                                  /* fixarray [] */
    OBJ(0x80);                                  /* fixmap {} */
    OBJ(0x92, 0x01, 0xa1, 'x');
    OBJ(0x81, 0xa1, 'k', 0xc3);
    OBJ(0xdc, 0, 0);                            /* array 16 / 32 */
    OBJ(0xdc, 0, 2, 0xc0, 0xcc, 9);
    OBJ(0xdd, 0, 0, 0, 1, 0x90);
    OBJ(0xde, 0, 0);                            /* map 16 / 32 */
    OBJ(0xde, 0, 1, 0x01, 0x02);
    OBJ(0xdf, 0, 0, 0, 1, 0xa0, 0x80);
    /* {"a": [1, {"b": [[], {}]}], "c": 0x0102 as bin} */
    OBJ(0x82, 0xa1, 'a', 0x92, 0x01, 0x81, 0xa1, 'b', 0x92, 0x90, 0x80,
        0xa1, 'c', 0xc4, 2, 1, 2);
    /* containers closing together at the end: [[[[1]]]] */
    OBJ(0x91, 0x91, 0x91, 0x91, 0x01);
    /* a fixarray of 15 and a fixmap of 15 */
    uint8_t b[1 + 30];
    b[0] = 0x9f; memset(b + 1, 0xc0, 15);
    CHECK_INT(check_object(b, 16), 0);
    b[0] = 0x8f; memset(b + 1, 0x05, 30);
    CHECK_INT(check_object(b, 31), 0);
}

static void test_concatenated(void)
{
    static const uint8_t s[] = { 0x81, 0xa2, 'i', 'd', 0x01,     /* {"id":1} */
                                 0xc3,                           /* true */
                                 0xd9, 1, 'z',                   /* "z" */
                                 0x92, 0x90, 0x90 };             /* [[],[]] */
    static const size_t lens[] = { 5, 1, 3, 3 };
    size_t off = 0, fl;
    for (size_t i = 0; i < 4; i++) {
        CHECK_INT(scan(s + off, sizeof s - off, BIG, &fl), 1);
        CHECK_INT(fl, lens[i]);
        off += fl;
    }
    CHECK_INT(off, sizeof s);
    CHECK_INT(scan(s + off, 0, BIG, &fl), 0);
    CHECK_INT(mp_frame_scan(NULL, 0, BIG, &fl), 0);
}

static void test_invalid_byte(void)
{
    size_t fl = 77;
    CHECK_INT(scan("\xc1", 1, BIG, &fl), GA_EPROTO);
    CHECK_INT(scan("\x93\x01\x02\xc1", 4, BIG, &fl), GA_EPROTO);
    CHECK_INT(scan("\x81\xc1\x01", 3, BIG, &fl), GA_EPROTO);          /* as a key */
    CHECK_INT(scan("\x81\xa1k\xc1", 4, BIG, &fl), GA_EPROTO);         /* as a value */
    CHECK_INT(scan("\x93\x01\x02", 3, BIG, &fl), 0);                  /* not yet seen */
    CHECK_INT(fl, 77);                                                /* untouched on != 1 */
}

static void test_depth_limit(void)
{
    uint8_t b[MP_FRAME_MAX_DEPTH + 2];
    size_t fl;
    memset(b, 0x91, MP_FRAME_MAX_DEPTH);        /* MAX_DEPTH nested one-element arrays */
    b[MP_FRAME_MAX_DEPTH] = 0x07;
    CHECK_INT(scan(b, MP_FRAME_MAX_DEPTH + 1, BIG, &fl), 1);
    CHECK_INT(fl, MP_FRAME_MAX_DEPTH + 1);
    b[MP_FRAME_MAX_DEPTH - 1] = 0x90;           /* MAX_DEPTH-1 arrays around an empty one */
    CHECK_INT(scan(b, MP_FRAME_MAX_DEPTH, BIG, &fl), 1);
    b[MP_FRAME_MAX_DEPTH - 1] = 0x91;
    b[MP_FRAME_MAX_DEPTH] = 0x90;               /* one level too deep, even empty */
    CHECK_INT(scan(b, MP_FRAME_MAX_DEPTH + 1, BIG, &fl), GA_ETOOBIG);
    b[MP_FRAME_MAX_DEPTH] = 0x81;               /* too deep as a map, before its contents arrive */
    CHECK_INT(scan(b, MP_FRAME_MAX_DEPTH + 1, BIG, &fl), GA_ETOOBIG);
    /* depth goes back down: [[..64..], [..64..]] is fine — siblings do not add up */
    uint8_t c[2 * MP_FRAME_MAX_DEPTH + 1];
    c[0] = 0x92;
    memset(c + 1, 0x91, MP_FRAME_MAX_DEPTH - 2);
    c[MP_FRAME_MAX_DEPTH - 1] = 0x90;
    memcpy(c + MP_FRAME_MAX_DEPTH, c + 1, MP_FRAME_MAX_DEPTH - 1);
    CHECK_INT(scan(c, 2 * MP_FRAME_MAX_DEPTH - 1, BIG, &fl), 1);
    CHECK_INT(fl, 2 * MP_FRAME_MAX_DEPTH - 1);
    /* maps nest too: {"k": {"k": ... }} 65 deep */
    uint8_t m[3 * (MP_FRAME_MAX_DEPTH + 1) + 1];
    for (int i = 0; i <= MP_FRAME_MAX_DEPTH; i++) {
        m[3 * i] = 0x81; m[3 * i + 1] = 0xa1; m[3 * i + 2] = 'k';
    }
    m[3 * (MP_FRAME_MAX_DEPTH + 1)] = 0xc0;
    CHECK_INT(scan(m, sizeof m, BIG, &fl), GA_ETOOBIG);
    CHECK_INT(scan(m + 3, sizeof m - 3, BIG, &fl), 1);
}

static void test_hostile_lengths(void)
{
    size_t fl;
    size_t max = 1u << 20;
    /* declared counts and lengths fail at their header, before any body */
    CHECK_INT(scan("\xdd\xff\xff\xff\xff", 5, max, &fl), GA_ETOOBIG);  /* array32 4e9 */
    CHECK_INT(scan("\xdf\xff\xff\xff\xff", 5, max, &fl), GA_ETOOBIG);  /* map32 */
    CHECK_INT(scan("\xdb\xff\xff\xff\xff", 5, max, &fl), GA_ETOOBIG);  /* str32 */
    CHECK_INT(scan("\xc6\xee\x6b\x28\x00", 5, max, &fl), GA_ETOOBIG);  /* bin32 4e9 */
    CHECK_INT(scan("\xc9\xff\xff\xff\xff\x01", 6, max, &fl), GA_ETOOBIG);  /* ext32 */
    /* a count of 2^20 one-byte elements cannot fit in 2^20 bytes with its header */
    CHECK_INT(scan("\xdd\x00\x10\x00\x00", 5, max, &fl), GA_ETOOBIG);
    CHECK_INT(scan("\xdd\x00\x0f\xff\xfb", 5, max, &fl), 0);           /* 2^20-5: fits */
    CHECK_INT(scan("\xdd\x00\x0f\xff\xfc", 5, max, &fl), GA_ETOOBIG);
    /* a map of 2^19 pairs needs 2^20 element bytes */
    CHECK_INT(scan("\xdf\x00\x08\x00\x00", 5, max, &fl), GA_ETOOBIG);
    /* counts owed by outer containers add to inner sizes */
    CHECK_INT(scan("\xdc\xff\xff\xdb\x00\x0f\x00\x00", 8, max, &fl), GA_ETOOBIG);
    CHECK_INT(scan("\xdc\x00\x02\xdb\x00\x0f\x00\x00", 8, max, &fl), 0);
    /* partial headers: what is known so far already counts */
    CHECK_INT(scan("\xdd", 1, max, &fl), 0);
    CHECK_INT(scan("\xdd\xff", 2, max, &fl), 0);
    CHECK_INT(scan("\xdd", 1, 4, &fl), GA_ETOOBIG);                    /* header alone is 5 */
    /* with no limit the scanner just waits — and still reads nothing past len */
    CHECK_INT(scan("\xdd\xff\xff\xff\xff", 5, SIZE_MAX, &fl), 0);
    CHECK_INT(scan("\xdf\xff\xff\xff\xff\xdf\xff\xff\xff\xff", 10, SIZE_MAX, &fl), 0);
    CHECK_INT(scan("\xdb\xff\xff\xff\xff", 5, SIZE_MAX, &fl), 0);
    /* nested hostile maps under SIZE_MAX: the owed sum must not overflow */
    uint8_t h[5 * MP_FRAME_MAX_DEPTH];
    for (int i = 0; i < MP_FRAME_MAX_DEPTH; i++)
        memcpy(h + 5 * i, "\xdf\xff\xff\xff\xff", 5);
    CHECK_INT(scan(h, sizeof h, SIZE_MAX, &fl), 0);
    CHECK_INT(scan(h, sizeof h, max, &fl), GA_ETOOBIG);
    CHECK_INT(scan("", 0, 0, &fl), GA_ETOOBIG);                         /* nothing fits in 0 */
}

static void test_large_frame_linear(void)
{
    /* array32 of 4M nils (4 MiB + 5): one pass; a quadratic scanner would crawl */
    size_t n = (size_t)4 << 20, fl = 0;
    uint8_t *b = malloc(n + 5);
    b[0] = 0xdd; b[1] = (uint8_t)(n >> 24); b[2] = (uint8_t)(n >> 16); b[3] = (uint8_t)(n >> 8); b[4] = (uint8_t)n;
    memset(b + 5, 0xc0, n);
    CHECK_INT(mp_frame_scan(b, n + 5, n + 5, &fl), 1);
    CHECK_INT(fl, n + 5);
    CHECK_INT(mp_frame_scan(b, n + 4, n + 5, &fl), 0);
    CHECK_INT(mp_frame_scan(b, n + 4, n + 4, &fl), GA_ETOOBIG);
    free(b);
}

/* ---- cross-check with msgpack-c ---- */

static int node_budget;    /* objects left for the current random frame */

static void pack_random(msgpack_packer *pk, int depth)
{
    static const char text[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    int pick = (int)(rnd() % (depth < 30 && node_budget > 0 ? 14 : 10));
    node_budget--;
    switch (pick) {
    case 0: msgpack_pack_nil(pk); break;
    case 1: (rnd() & 1) ? msgpack_pack_true(pk) : msgpack_pack_false(pk); break;
    case 2: msgpack_pack_uint64(pk, rnd() >> (rnd() % 64)); break;
    case 3: msgpack_pack_int64(pk, -(int64_t)(rnd() >> (1 + rnd() % 63))); break;
    case 4: msgpack_pack_float(pk, (float)(rnd() % 1000) / 7.0f); break;
    case 5: msgpack_pack_double(pk, (double)rnd() / 3.0); break;
    case 6: case 7: {                       /* str of 0..40, sometimes 40000 */
        size_t n = (rnd() % 16 == 0) ? 300 + rnd() % 40000 : rnd() % 40;
        char *s = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            s[i] = text[rnd() % (sizeof text - 1)];
        msgpack_pack_str_with_body(pk, s, n);
        free(s);
        break;
    }
    case 8: {
        uint8_t b[300];
        size_t n = rnd() % sizeof b;
        for (size_t i = 0; i < n; i++)
            b[i] = (uint8_t)rnd();
        msgpack_pack_bin_with_body(pk, b, n);
        break;
    }
    case 9: {
        static const size_t sizes[] = { 1, 2, 4, 8, 16, 0, 3, 17, 255, 256, 1000 };
        uint8_t b[1000];
        size_t n = sizes[rnd() % (sizeof sizes / sizeof sizes[0])];
        for (size_t i = 0; i < n; i++)
            b[i] = (uint8_t)rnd();
        msgpack_pack_ext_with_body(pk, b, n, (int8_t)(rnd() % 128));
        break;
    }
    case 10: case 11: {
        size_t n = (rnd() % 8 == 0) ? 16 + rnd() % 20 : rnd() % 5;
        msgpack_pack_array(pk, n);
        for (size_t i = 0; i < n; i++)
            pack_random(pk, depth + 1);
        break;
    }
    default: {
        size_t n = (rnd() % 8 == 0) ? 16 + rnd() % 20 : rnd() % 5;
        msgpack_pack_map(pk, n);
        for (size_t i = 0; i < 2 * n; i++)
            pack_random(pk, depth + 1);
        break;
    }
    }
}

static void test_random_objects_vs_msgpack_c(void)
{
    int mismatches = 0;
    for (int iter = 0; iter < 400 && mismatches < 5; iter++) {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        int nobj = 1 + (int)(rnd() % 3);
        for (int i = 0; i < nobj; i++) {
            node_budget = 1 + (int)(rnd() % 300);
            pack_random(&pk, 0);
        }
        const uint8_t *d = (const uint8_t *)sb.data;

        /* frame by frame: scanner length == unpacker offset */
        size_t off = 0;
        for (int i = 0; i < nobj; i++) {
            size_t fl = 0, uoff = off;
            msgpack_zone zone;
            msgpack_object obj;
            msgpack_zone_init(&zone, 2048);
            int urc = msgpack_unpack(sb.data, sb.size, &uoff, &zone, &obj);
            int src = scan(d + off, sb.size - off, BIG, &fl);
            msgpack_zone_destroy(&zone);
            if (urc < 0 || src != 1 || fl != uoff - off) {
                harness_fail(__FILE__, __LINE__, "iter %d obj %d: unpack rc %d off %zu, scan rc %d len %zu",
                             iter, i, urc, uoff - off, src, fl);
                mismatches++;
                break;
            }
            /* every prefix of a small frame: both say "incomplete" */
            if (i == 0 && fl < 4096) {
                for (size_t k = 0; k < fl; k++) {
                    size_t o2 = 0, fl2;
                    msgpack_zone_init(&zone, 2048);
                    int u2 = msgpack_unpack(sb.data, k, &o2, &zone, &obj);
                    msgpack_zone_destroy(&zone);
                    int s2 = scan(d, k, BIG, &fl2);
                    if (s2 != 0 || u2 != MSGPACK_UNPACK_CONTINUE) {
                        harness_fail(__FILE__, __LINE__, "iter %d prefix %zu/%zu: scan %d unpack %d",
                                     iter, k, fl, s2, u2);
                        mismatches++;
                        break;
                    }
                }
            }
            off += fl;
        }
        if (mismatches == 0)
            CHECK_INT(off, sb.size);
        msgpack_sbuffer_destroy(&sb);
    }
    CHECK_INT(mismatches, 0);
}

/* The resumable scan, fed random objects in random pieces, finds the same
 * frame boundaries as the one-shot scan, and scans each byte about once. */
static void test_resumable_scan(void)
{
    int bad = 0;
    for (int iter = 0; iter < 300 && !bad; iter++) {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        int nobj = 1 + (int)(rnd() % 4);
        for (int i = 0; i < nobj; i++) {
            node_budget = 1 + (int)(rnd() % 300);
            pack_random(&pk, 0);
        }
        const uint8_t *d = (const uint8_t *)sb.data;
        struct mp_scan st = { 0 };
        size_t start = 0, have = 0;
        int frames = 0;
        while (start < sb.size && !bad) {
            have += 1 + rnd() % 700;                  /* the next read */
            if (have > sb.size)
                have = sb.size;
            size_t fl = 0, want = 0;
            int r = mp_frame_scan_resume(&st, d + start, have - start, sb.size, &fl);
            int r1 = mp_frame_scan(d + start, have - start, sb.size, &want);
            if (r != r1 || (r == 1 && fl != want))
                bad = 1;
            if (r == 1) {
                start += fl;
                frames++;
            }
            if (have == sb.size && r == 0)
                bad = 1;
        }
        bad |= frames != nobj;
        msgpack_sbuffer_destroy(&sb);
    }
    CHECK(!bad);
    /* A 4 MiB frame arriving 1 KiB at a time: linear, not quadratic. */
    size_t n = (size_t)4 << 20, fl = 0;
    uint8_t *b = malloc(n + 5);
    b[0] = 0xdd; b[1] = (uint8_t)(n >> 24); b[2] = (uint8_t)(n >> 16); b[3] = (uint8_t)(n >> 8); b[4] = (uint8_t)n;
    memset(b + 5, 0xc0, n);
    struct mp_scan st = { 0 };
    int r = 0;
    for (size_t have = 1024; r == 0; have += 1024)
        r = mp_frame_scan_resume(&st, b, have < n + 5 ? have : n + 5, n + 5, &fl);
    CHECK_INT(r, 1);
    CHECK_INT(fl, n + 5);
    free(b);
}

static void test_random_bytes_vs_msgpack_c(void)
{
    /* random bytes, biased towards small declared lengths; max_len = len keeps
     * msgpack-c's allocations bounded, so it is only asked about frames the
     * scanner calls complete or invalid */
    static const uint8_t pool[] = { 0x00, 0x7f, 0xe0, 0xc0, 0xc2, 0xc3, 0x91, 0x92, 0x81, 0x90, 0x80,
                                    0xa1, 0xa3, 0xcc, 0xcd, 0xd0, 0xca, 0xcb, 0xd4, 0xd6, 0xd8, 0xc4,
                                    0xc7, 0xd9, 0xdc, 0xde, 0xc1, 0x01, 0x02, 0x03 };
    int agree = 0, checked = 0, mism = 0;
    for (int iter = 0; iter < 100000 && mism < 5; iter++) {
        uint8_t b[24];
        size_t len = 1 + rnd() % sizeof b, fl = 0;
        for (size_t i = 0; i < len; i++)
            b[i] = (rnd() % 4) ? pool[rnd() % sizeof pool] : (uint8_t)rnd();
        int src = scan(b, len, len, &fl);
        if (src != 1 && src != GA_EPROTO)
            continue;
        msgpack_zone zone;
        msgpack_object obj;
        size_t off = 0;
        msgpack_zone_init(&zone, 1024);
        int urc = msgpack_unpack((const char *)b, src == 1 ? fl : len, &off, &zone, &obj);
        msgpack_zone_destroy(&zone);
        checked++;
        if ((src == 1 && urc == MSGPACK_UNPACK_SUCCESS && off == fl) ||
            (src == GA_EPROTO && urc == MSGPACK_UNPACK_PARSE_ERROR)) {
            agree++;
        } else {
            harness_fail(__FILE__, __LINE__, "bytes of len %zu: scan %d (%zu), unpack %d (%zu)", len, src, fl, urc, off);
            mism++;
        }
    }
    CHECK(checked > 10000);
    CHECK_INT(agree, checked);
}

void run_tests(void)
{
    RUN(test_scalars);
    RUN(test_strings_bins_exts);
    RUN(test_containers);
    RUN(test_concatenated);
    RUN(test_invalid_byte);
    RUN(test_depth_limit);
    RUN(test_hostile_lengths);
    RUN(test_large_frame_linear);
    RUN(test_random_objects_vs_msgpack_c);
    RUN(test_resumable_scan);
    RUN(test_random_bytes_vs_msgpack_c);
}
