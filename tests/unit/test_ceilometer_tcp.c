/* test_ceilometer_tcp.c — proto/ceilometer_tcp.c: cutting Ceilometer's
 * tcp:// stream (8-byte little-endian length + msgpack map) into bodies. */
#include <string.h>

#include "proto/ceilometer_tcp.h"
#include "proto/ga_err.h"
#include "tests/unit/harness.h"

static void test_header_example(void)
{
    /* the example of ceilometer_tcp.h: {"a": 1} */
    static const uint8_t f[] = { 4, 0, 0, 0, 0, 0, 0, 0, 0x81, 0xa1, 0x61, 0x01 };
    uint8_t hdr[CEILO_TCP_HDR];
    ceilo_tcp_put_header(hdr, 4);
    CHECK(memcmp(hdr, f, CEILO_TCP_HDR) == 0);
    size_t n = 0;
    CHECK_INT(ceilo_tcp_frame(f, sizeof f, 1024, &n), 1);
    CHECK_INT(n, 4);
    /* every shorter prefix asks for more */
    for (size_t k = 0; k < sizeof f; k++)
        CHECK_INT(ceilo_tcp_frame(f, k, 1024, &n), 0);
    /* a frame followed by the next one's first bytes: still the first */
    uint8_t two[sizeof f + 5];
    memcpy(two, f, sizeof f);
    memcpy(two + sizeof f, f, 5);
    CHECK_INT(ceilo_tcp_frame(two, sizeof two, 1024, &n), 1);
    CHECK_INT(n, 4);
}

static void test_bad(void)
{
    uint8_t f[16] = { 0 };
    size_t n;
    ceilo_tcp_put_header(f, 1025);
    CHECK_INT(ceilo_tcp_frame(f, 8, 1024, &n), GA_ETOOBIG);       /* known from the prefix */
    ceilo_tcp_put_header(f, 1024);
    f[8] = 0x80;
    CHECK_INT(ceilo_tcp_frame(f, 9, 1024, &n), 0);
    ceilo_tcp_put_header(f, 0x0100000000000000ull);               /* high byte: garbage text */
    CHECK_INT(ceilo_tcp_frame(f, 8, 1024, &n), GA_ETOOBIG);
    ceilo_tcp_put_header(f, 0);
    CHECK_INT(ceilo_tcp_frame(f, 8, 1024, &n), GA_EPROTO);
    ceilo_tcp_put_header(f, 4);
    f[8] = 0x93;                                                  /* an array, not a map */
    CHECK_INT(ceilo_tcp_frame(f, 9, 1024, &n), GA_EPROTO);
    f[8] = 0xde;                                                  /* map16 */
    CHECK_INT(ceilo_tcp_frame(f, 12, 1024, &n), 1);
    f[8] = 0xdf;                                                  /* map32 */
    CHECK_INT(ceilo_tcp_frame(f, 12, 1024, &n), 1);
    f[8] = 0x8f;
    CHECK_INT(ceilo_tcp_frame(f, 12, 1024, &n), 1);
}

void run_tests(void)
{
    RUN(test_header_example);
    RUN(test_bad);
}
