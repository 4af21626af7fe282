/* ceilometer_tcp.h — framing of Ceilometer's tcp:// publisher.
 *
 * Ceilometer's TCPPublisher (ceilometer/publisher/tcp.py, Ceilometer 20
 * and later) writes each sample on one long-lived TCP connection as
 *   8 bytes    len(body), unsigned, little-endian
 *              (len(encoded_msg).to_bytes(8, 'little'))
 *   len bytes  msgpack.dumps(msg, use_bin_type=True): the same meter
 *              message map as one udp:// datagram (proto/ceilometer.h)
 * and nothing else: no handshake, no acknowledgement, no end marker.
 *
 * Example: a sample whose message is the 4-byte map {"a": 1}
 *   04 00 00 00 00 00 00 00   81 a1 61 01
 *
 * The body is decoded and verified with ceilo_decode(); this file only
 * cuts the stream into bodies and refuses what cannot be one. */
#ifndef GA_CEILOMETER_TCP_H
#define GA_CEILOMETER_TCP_H

#include <stddef.h>
#include <stdint.h>

#define CEILO_TCP_HDR 8                  /* bytes of the length prefix */

/* Find the first frame of the stream bytes buf[0..len).
 *   max_body   the largest body accepted (bytes)
 *   body_len   set to the body's length when 1 is returned; the body is
 *              buf[CEILO_TCP_HDR .. CEILO_TCP_HDR + *body_len)
 * Returns 1 when a whole frame is there, 0 when more bytes are needed, or
 *   GA_ETOOBIG  the length prefix is over max_body ("oversize"),
 *   GA_EPROTO   the length is 0, or the body does not start with a msgpack
 *               map (fixmap 0x80-0x8f, map16 0xde, map32 0xdf): the stream
 *               is not Ceilometer's framing or lost its place ("garbage").
 * Both errors are known as soon as the prefix (and the body's first byte)
 * arrived; the stream cannot be resynchronised after them. */
int ceilo_tcp_frame(const uint8_t *buf, size_t len, size_t max_body, size_t *body_len);

/* The length prefix the publisher writes before a body of n bytes.  For
 * tests and tools. */
void ceilo_tcp_put_header(uint8_t out[CEILO_TCP_HDR], uint64_t n);

#endif
