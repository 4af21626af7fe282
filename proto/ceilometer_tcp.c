/* ceilometer_tcp.c — framing of Ceilometer's tcp:// publisher (see
 * ceilometer_tcp.h). */
#include "proto/ceilometer_tcp.h"

#include "proto/ga_err.h"

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = CEILO_TCP_HDR - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void ceilo_tcp_put_header(uint8_t out[CEILO_TCP_HDR], uint64_t n)
{
    for (int i = 0; i < CEILO_TCP_HDR; i++, n >>= 8)
        out[i] = (uint8_t)(n & 0xff);
}

static int is_map_marker(uint8_t b)
{
    return (b & 0xf0) == 0x80 || b == 0xde || b == 0xdf;
}

int ceilo_tcp_frame(const uint8_t *buf, size_t len, size_t max_body, size_t *body_len)
{
    if (len < CEILO_TCP_HDR)
        return 0;
    uint64_t n = get_le64(buf);
    if (n > (uint64_t)max_body)
        return GA_ETOOBIG;
    if (n == 0)
        return GA_EPROTO;
    if (len > CEILO_TCP_HDR && !is_map_marker(buf[CEILO_TCP_HDR]))
        return GA_EPROTO;
    if (len - CEILO_TCP_HDR < n)
        return 0;
    *body_len = (size_t)n;
    return 1;
}
