/* test_uuid.c — MD5 and SHA-1 against RFC 1321 / FIPS 180-4 examples and
 * every padding boundary (55, 56, 63, 64, 65 bytes, values from Python's
 * hashlib), the digests over split input, and name-based UUIDs against
 * Python's uuid.uuid3/uuid5, metric ids included. */
#include "tests/unit/harness.h"

#include <stdio.h>
#include <string.h>

#include "proto/uuid.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void md5_hex(const char *s, size_t len, char out[33])
{
    uint8_t d[16];
    struct ga_uuid_part p = { s, len };
    ga_md5(&p, 1, d);
    hex(d, 16, out);
}

static void sha1_hex(const char *s, size_t len, char out[41])
{
    uint8_t d[20];
    struct ga_uuid_part p = { s, len };
    ga_sha1(&p, 1, d);
    hex(d, 20, out);
}

static void test_md5_vectors(void)
{
    char h[33];
    md5_hex("", 0, h);
    CHECK_STR(h, "d41d8cd98f00b204e9800998ecf8427e");
    md5_hex("abc", 3, h);
    CHECK_STR(h, "900150983cd24fb0d6963f7d28e17f72");
    md5_hex("message digest", 14, h);
    CHECK_STR(h, "f96b697d7cb7938d525a2f31aaf161d0");
    const char *m = "12345678901234567890123456789012345678901234567890123456789012345678901234567890";
    md5_hex(m, strlen(m), h);
    CHECK_STR(h, "57edf4a22be3c955ac49da2e2107b67a");
}

static void test_sha1_vectors(void)
{
    char h[41];
    sha1_hex("abc", 3, h);
    CHECK_STR(h, "a9993e364706816aba3e25717850c26c9cd0d89d");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha1_hex(m, strlen(m), h);
    CHECK_STR(h, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    sha1_hex("", 0, h);
    CHECK_STR(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

/* the lengths around the padding block: 'a' * n */
static void test_padding_boundaries(void)
{
    static const struct {
        size_t n;
        const char *md5, *sha1;
    } v[] = {
        { 55, "ef1772b6dff9a122358552954ad0df65", "c1c8bbdc22796e28c0e15163d20899b65621d65a" },
        { 56, "3b0c8ac703f828b04c6c197006d17218", "c2db330f6083854c99d4b5bfb6e8f29f201be699" },
        { 63, "b06521f39153d618550606be297466d5", "03f09f5b158a7a8cdad920bddc29b81c18a551f5" },
        { 64, "014842d480b571495a4a0363793f7367", "0098ba824b5c16427bd7a1122a5a442a25ec644d" },
        { 65, "c743a45e0d2e6a95cb859adae0248435", "11655326c708d70319be2610e8a57d9a5b959d3b" },
    };
    char a[80], h[41];
    memset(a, 'a', sizeof a);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        md5_hex(a, v[i].n, h);
        CHECK_STR(h, v[i].md5);
        sha1_hex(a, v[i].n, h);
        CHECK_STR(h, v[i].sha1);
    }
}

/* the digest of pieces is the digest of their concatenation, at every split */
static void test_splits(void)
{
    const char *m = "12345678901234567890123456789012345678901234567890123456789012345678901234567890";
    size_t len = strlen(m);
    uint8_t whole5[16], whole1[20], d[20];
    struct ga_uuid_part one = { m, len };
    ga_md5(&one, 1, whole5);
    ga_sha1(&one, 1, whole1);
    for (size_t k = 0; k <= len; k++) {
        struct ga_uuid_part two[2] = { { m, k }, { m + k, len - k } };
        ga_md5(two, 2, d);
        CHECK(memcmp(d, whole5, 16) == 0);
        ga_sha1(two, 2, d);
        CHECK(memcmp(d, whole1, 20) == 0);
    }
}

static void test_named_uuids(void)
{
    /* uuid.NAMESPACE_DNS */
    static const uint8_t dns[16] = { 0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1,
                                     0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8 };
    struct ga_uuid_part p = { "python.org", 10 };
    uint8_t u[16];
    char s[GA_UUID_STR];
    ga_uuid_named(3, dns, &p, 1, u);
    ga_uuid_format(u, s);
    CHECK_STR(s, "6fa459ea-ee8a-3ca4-894e-db77e160355e");
    ga_uuid_named(5, dns, &p, 1, u);
    ga_uuid_format(u, s);
    CHECK_STR(s, "886313e1-3b8a-5372-9b90-0c9aee199e5d");
}

/* uuid.uuid3(uuid.UUID(GA_METRIC_NS), name) */
static void test_metric_ids(void)
{
    static const struct {
        const char *name, *id;
    } v[] = {
        { "cpu.util", "185243d1-7e66-37d7-af73-799196d3195f" },
        { "host-0000001.cpu.util", "56c544ae-a003-3310-8493-5edd4429b1db" },
        { "m\xc3\xbcnchen.temp", "1230374f-96d0-3302-b78b-966ba39beabf" },
        { "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
          "xxxxxxxxxxxxxxxxxxx", "82aad069-b85b-3f08-a630-76f3306b358d" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t u[16];
        char s[GA_UUID_STR];
        ga_metric_uuid(v[i].name, strlen(v[i].name), u);
        ga_uuid_format(u, s);
        CHECK_STR(s, v[i].id);
    }
}

void run_tests(void)
{
    RUN(test_md5_vectors);
    RUN(test_sha1_vectors);
    RUN(test_padding_boundaries);
    RUN(test_splits);
    RUN(test_named_uuids);
    RUN(test_metric_ids);
}
