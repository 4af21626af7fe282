/* test_crc32c.c — CRC-32C: the RFC 3720 / iSCSI check vectors, then the
 * slice-by-8 and SSE4.2 implementations against a bit-at-a-time reference
 * on random buffers at every alignment, and chaining equal to one pass. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "storage/crc32c.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* The definition, one bit at a time. */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t len)
{
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void check_vectors(crc_fn f)
{
    uint8_t b[32];
    CHECK_INT(f(0, "123456789", 9), 0xE3069283u);
    CHECK_INT(f(0, NULL, 0), 0);
    CHECK_INT(f(0, "a", 1), 0xC1D04330u);
    memset(b, 0, sizeof b);
    CHECK_INT(f(0, b, 32), 0x8A9136AAu);
    memset(b, 0xff, sizeof b);
    CHECK_INT(f(0, b, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    CHECK_INT(f(0, b, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    CHECK_INT(f(0, b, 32), 0x113FDB5Cu);
}

static void test_vectors(void)
{
    check_vectors(crc32c_sw);
    check_vectors(crc32c_hw);
    check_vectors(crc32c);
}

static void test_random_against_reference(void)
{
    enum { N = 4096 + 16 };
    uint8_t *buf = malloc(N);
    for (size_t i = 0; i < N; i++)
        buf[i] = (uint8_t)rnd();
    int bad = 0;
    for (int iter = 0; iter < 2000 && bad < 5; iter++) {
        size_t off = rnd() % 16;
        size_t len = iter < 200 ? (size_t)iter : rnd() % (N - off);
        uint32_t seed = iter & 1 ? (uint32_t)rnd() : 0;
        uint32_t want = crc_ref(seed, buf + off, len);
        uint32_t sw = crc32c_sw(seed, buf + off, len), hw = crc32c_hw(seed, buf + off, len);
        uint32_t any = crc32c(seed, buf + off, len);
        if (sw != want || hw != want || any != want) {
            harness_fail(__FILE__, __LINE__, "off %zu len %zu: ref %08x sw %08x hw %08x crc32c %08x",
                         off, len, want, sw, hw, any);
            bad++;
        }
    }
    free(buf);
}

static void test_chaining(void)
{
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rnd();
    uint32_t whole = crc32c(0, buf, sizeof buf);
    CHECK(whole != 0);
    for (int iter = 0; iter < 200; iter++) {
        size_t a = rnd() % sizeof buf, b = a + rnd() % (sizeof buf - a + 1);
        uint32_t c = crc32c_sw(0, buf, a);
        c = crc32c_hw(c, buf + a, b - a);
        c = crc32c(c, buf + b, sizeof buf - b);
        CHECK_INT(c, whole);
    }
    /* a single flipped bit always changes it */
    for (int iter = 0; iter < 200; iter++) {
        size_t i = rnd() % sizeof buf;
        uint8_t bit = (uint8_t)(1u << (rnd() % 8));
        buf[i] ^= bit;
        CHECK(crc32c(0, buf, sizeof buf) != whole);
        buf[i] ^= bit;
    }
}

void run_tests(void)
{
    RUN(test_vectors);
    RUN(test_random_against_reference);
    RUN(test_chaining);
}
