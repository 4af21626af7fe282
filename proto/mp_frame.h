/* mp_frame.h — find where one msgpack object ends, without decoding or
 * allocating.
 *
 * Control and ingest streams carry msgpack objects back to back with no
 * length prefix (proto/PROTOCOL.md).  The loop thread calls mp_frame_scan()
 * on its read buffer to learn whether a whole message has arrived and how
 * long it is; only then is the frame handed to msgpack_unpack() — which,
 * given a complete frame, can never be asked to allocate for elements that
 * are not there.
 *
 * The scan is one pass over the bytes with a fixed stack: O(len) time,
 * O(MP_FRAME_MAX_DEPTH) space, no allocation, no read at or past buf[len]. */
#ifndef GA_MP_FRAME_H
#define GA_MP_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* Deepest container nesting accepted.  Every array or map counts one level,
 * empty ones too; a scalar inside 64 nested arrays is fine, a 65th array is
 * not.  (msgpack-c 4's own unpacker stops at 32: frames nested 33..64 deep
 * pass the scan and then fail to decode.) */
#define MP_FRAME_MAX_DEPTH 32   /* = msgpack-c's MSGPACK_EMBED_STACK_SIZE: what scans, decodes */

/* Scan buf[0..len) for one complete msgpack object.
 *   buf, len   bytes received so far (buf may be NULL when len is 0)
 *   max_len    the largest frame the caller accepts
 *   frame_len  out: length of the first object, set only when 1 is returned
 * Returns
 *   1            buf starts with a complete object of *frame_len bytes
 *                (*frame_len <= len and <= max_len)
 *   0            the object is incomplete; call again with more bytes
 *   GA_EPROTO    a type byte is invalid (0xc1, the one unused code)
 *   GA_ETOOBIG   nesting exceeds MP_FRAME_MAX_DEPTH, or the object cannot
 *                fit in max_len bytes.  The size check is as early as the
 *                declared lengths allow: a str32/bin32/ext32 body length and
 *                every declared array/map element (each at least one byte)
 *                count before their bytes arrive, so a hostile array32 of
 *                4e9 elements fails at its 5-byte header.
 * Errors are final for the stream: resynchronising is impossible. */
int mp_frame_scan(const uint8_t *buf, size_t len, size_t max_len, size_t *frame_len);

/* The same scan, resumable: a reader that receives a frame in pieces keeps
 * one mp_scan per stream (zero-initialised) and calls this each time more
 * bytes of the same frame have arrived, buf always starting at the frame's
 * first byte.  Work is done once per byte instead of once per read, so a
 * large frame trickling in costs O(size), not O(size²).  Same returns as
 * mp_frame_scan; after 1 the state is reset for the next frame; after an
 * error it must be reset (zeroed) before reuse. */
struct mp_scan {
    size_t pos;                         /* bytes of the frame scanned */
    uint64_t owed;                      /* children still to start, all levels */
    int depth;
    uint64_t remain[MP_FRAME_MAX_DEPTH];
};
int mp_frame_scan_resume(struct mp_scan *st, const uint8_t *buf, size_t len, size_t max_len,
                         size_t *frame_len);

#endif
