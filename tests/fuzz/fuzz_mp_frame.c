/* fuzz_mp_frame.c — libFuzzer target for mp_frame_scan() (proto/mp_frame.c).
 *
 * Each input is scanned as a receive buffer under several limits.  Besides
 * the sanitizers' findings (an over-read past the input is caught by ASan:
 * libFuzzer hands over an exact-size heap copy), a broken promise aborts:
 *   - a return value other than 1, 0, GA_EPROTO, GA_ETOOBIG;
 *   - a frame longer than the buffer or the limit, or empty;
 *   - a complete frame whose proper prefixes are not "need more", or whose
 *     scan alone gives another length, or that passes with max_len = its
 *     length - 1;
 *   - disagreement with msgpack-c's unpacker: a complete frame it cannot
 *     decode to the same length, or an EPROTO it does not also reject
 *     (both stop at 32 nested containers).
 * msgpack-c is only consulted where the scanner bounded every declared
 * count by the input size, so it never attempts a hostile allocation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_complete(const uint8_t *data, size_t size, size_t max, size_t fl)
{
    size_t fl2 = 0;
    if (fl == 0 || fl > size || fl > max)
        abort();
    if (mp_frame_scan(data, fl, max, &fl2) != 1 || fl2 != fl)
        abort();
    if (mp_frame_scan(data, fl - 1, max, &fl2) != 0)
        abort();
    size_t k = size ? data[0] % fl : 0;             /* one more split point */
    if (mp_frame_scan(data, k, max, &fl2) != 0)
        abort();
    if (mp_frame_scan(data, fl, fl - 1, &fl2) != GA_ETOOBIG)
        abort();
}

static void check_msgpack_c(const uint8_t *data, size_t len, int scan_rc, size_t fl)
{
    msgpack_zone zone;
    msgpack_object obj;
    size_t off = 0;
    if (!msgpack_zone_init(&zone, 1024))
        return;
    int urc = msgpack_unpack((const char *)data, scan_rc == 1 ? fl : len, &off, &zone, &obj);
    msgpack_zone_destroy(&zone);
    if (urc == MSGPACK_UNPACK_NOMEM_ERROR)
        return;
    if (scan_rc == 1 && (urc != MSGPACK_UNPACK_SUCCESS || off != fl))
        abort();
    if (scan_rc == GA_EPROTO && urc != MSGPACK_UNPACK_PARSE_ERROR)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const size_t limits[] = { size, SIZE_MAX, CTL_MAX_FRAME, size ? data[size - 1] : 0 };
    int rc_at_size = 0;
    size_t fl_at_size = 0;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        size_t fl = 0;
        int rc = mp_frame_scan(data, size, limits[i], &fl);
        if (rc != 1 && rc != 0 && rc != GA_EPROTO && rc != GA_ETOOBIG)
            abort();
        if (rc == 1)
            check_complete(data, size, limits[i], fl);
        if (i == 0) {
            rc_at_size = rc;
            fl_at_size = fl;
        }
        if (i == 1 && rc_at_size == 1 && (rc != 1 || fl != fl_at_size))
            abort();                                /* a larger limit finds the same frame */
    }
    /* max_len = size bounds every declared count by the input: safe for msgpack-c */
    if (rc_at_size == 1 || rc_at_size == GA_EPROTO)
        check_msgpack_c(data, size, rc_at_size, fl_at_size);
    return 0;
}
