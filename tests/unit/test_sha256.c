/* test_sha256.c — nettle's SHA-256 and HMAC-SHA256 as gpuagg calls them
 * (the Ceilometer message signature, proto/ceilometer.c: hex digest through
 * base16_encode_update, comparison through memeql_sec): SHA-256 against the
 * FIPS 180-4 example messages (and the NIST CAVS empty and 896-bit ones),
 * HMAC-SHA256 against RFC 4231 test cases 1-7, every split of the input
 * across update() calls, and the constant-time comparison. */
#include "tests/unit/harness.h"

#include <nettle/base16.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>

static void hex(const uint8_t d[SHA256_DIGEST_SIZE], char out[65])
{
    base16_encode_update(out, SHA256_DIGEST_SIZE, d);
    out[2 * SHA256_DIGEST_SIZE] = '\0';
}

static void sha256_of(const void *p, size_t len, uint8_t d[SHA256_DIGEST_SIZE])
{
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, len, p);
    sha256_digest(&c, SHA256_DIGEST_SIZE, d);
}

static void hex_of(const void *p, size_t len, char out[65])
{
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_of(p, len, d);
    hex(d, out);
}

static void hmac_hex(const void *key, size_t klen, const void *msg, size_t mlen, char out[65])
{
    struct hmac_sha256_ctx c;
    uint8_t d[SHA256_DIGEST_SIZE];
    hmac_sha256_set_key(&c, klen, key);
    hmac_sha256_update(&c, mlen, msg);
    hmac_sha256_digest(&c, SHA256_DIGEST_SIZE, d);
    hex(d, out);
}

/* equal lengths and bytes, as proto/ceilometer.c and the ingest token check
 * compare */
static int ct_equal(const void *a, size_t alen, const void *b, size_t blen)
{
    return alen == blen && memeql_sec(a, b, alen);
}

static void test_fips_examples(void)
{
    char h[65];
    hex_of("abc", 3, h);
    CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(m2, strlen(m2), h);
    CHECK_STR(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    hex_of("", 0, h);
    CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m4 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                     "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    hex_of(m4, strlen(m4), h);
    CHECK_STR(h, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_million_a(void)
{
    struct sha256_ctx c;
    uint8_t d[SHA256_DIGEST_SIZE];
    char h[65], a[1000];
    memset(a, 'a', sizeof a);
    sha256_init(&c);
    for (int i = 0; i < 1000; i++)
        sha256_update(&c, sizeof a, (const uint8_t *)a);
    sha256_digest(&c, SHA256_DIGEST_SIZE, d);
    hex(d, h);
    CHECK_STR(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Lengths 0..200 around every padding boundary, each split at every point,
 * must agree with the one-shot digest; the 1000-byte pattern checks against
 * Python's hashlib. */
static void test_splits(void)
{
    uint8_t msg[1000];
    for (int i = 0; i < 1000; i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    char h[65];
    hex_of(msg, sizeof msg, h);
    CHECK_STR(h, "1e9bc38cbf860b9ec31918b065f9b52476c549a782e0e7990bed8ce3868d2371");
    int bad = 0;
    for (size_t len = 0; len <= 200 && !bad; len++) {
        uint8_t one[SHA256_DIGEST_SIZE];
        sha256_of(msg, len, one);
        for (size_t cut = 0; cut <= len; cut++) {
            struct sha256_ctx c;
            uint8_t two[SHA256_DIGEST_SIZE];
            sha256_init(&c);
            sha256_update(&c, cut, msg);
            sha256_update(&c, 0, msg);
            sha256_update(&c, len - cut, msg + cut);
            sha256_digest(&c, SHA256_DIGEST_SIZE, two);
            if (memcmp(one, two, sizeof one) != 0) {
                harness_fail(__FILE__, __LINE__, "len %zu split at %zu differs", len, cut);
                bad = 1;
                break;
            }
        }
    }
}

static void test_rfc4231(void)
{
    uint8_t k20b[20], kaa20[20], dd50[50], k25[25], cd50[50], k0c[20], kaa131[131];
    memset(k20b, 0x0b, 20);
    memset(kaa20, 0xaa, 20);
    memset(dd50, 0xdd, 50);
    for (int i = 0; i < 25; i++)
        k25[i] = (uint8_t)(i + 1);
    memset(cd50, 0xcd, 50);
    memset(k0c, 0x0c, 20);
    memset(kaa131, 0xaa, 131);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    const char *m7 = "This is a test using a larger than block-size key and a larger than block-size data."
                     " The key needs to be hashed before being used by the HMAC algorithm.";
    char h[65];
    hmac_hex(k20b, 20, "Hi There", 8, h);
    CHECK_STR(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    hmac_hex("Jefe", 4, "what do ya want for nothing?", 28, h);
    CHECK_STR(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    hmac_hex(kaa20, 20, dd50, 50, h);
    CHECK_STR(h, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    hmac_hex(k25, 25, cd50, 50, h);
    CHECK_STR(h, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    hmac_hex(k0c, 20, "Test With Truncation", 20, h);
    h[32] = '\0';                                   /* case 5: 128-bit truncation */
    CHECK_STR(h, "a3b6167473100ee06e0c796c2955552b");
    hmac_hex(kaa131, 131, m6, strlen(m6), h);
    CHECK_STR(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    hmac_hex(kaa131, 131, m7, strlen(m7), h);
    CHECK_STR(h, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* A 64-byte key is used as is; a 65-byte one is hashed first: the MAC with
 * the 65-byte key equals the MAC keyed with its SHA-256. */
static void test_hmac_key_lengths(void)
{
    uint8_t k65[65], hk[SHA256_DIGEST_SIZE];
    for (int i = 0; i < 65; i++)
        k65[i] = (uint8_t)(0x40 + i);
    sha256_of(k65, 65, hk);
    char a[65], b[65], c[65];
    hmac_hex(k65, 65, "msg", 3, a);
    hmac_hex(hk, sizeof hk, "msg", 3, b);
    CHECK_STR(a, b);
    hmac_hex(k65, 64, "msg", 3, c);
    CHECK(strcmp(a, c) != 0);
    hmac_hex("", 0, "", 0, a);                      /* Python hmac.new(b'', b'', sha256) */
    CHECK_STR(a, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

static void test_ct_equal(void)
{
    CHECK_INT(ct_equal("abcd", 4, "abcd", 4), 1);
    CHECK_INT(ct_equal("abcd", 4, "abce", 4), 0);
    CHECK_INT(ct_equal("abcd", 4, "Abcd", 4), 0);
    CHECK_INT(ct_equal("abcd", 4, "abc", 3), 0);
    CHECK_INT(ct_equal("", 0, "", 0), 1);
}

void run_tests(void)
{
    RUN(test_fips_examples);
    RUN(test_million_a);
    RUN(test_splits);
    RUN(test_rfc4231);
    RUN(test_hmac_key_lengths);
    RUN(test_ct_equal);
}
