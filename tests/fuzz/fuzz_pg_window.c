/* fuzz_pg_window.c — libFuzzer target for the window snapshot and tail
 * decoders (pg_window_decode, pg_window_apply_tail, pg_window_tail_count:
 * storage/pg_window.c, the bytes the load reads back from metric_windows
 * and metric_window_tails).
 *
 * fuzz-sources: storage/pg_window.c
 *
 * Input: [split u16 LE][bytes...]: bytes[0..split) is decoded as a
 * snapshot (an empty window when it does not decode), bytes[split..) is
 * applied to it as tail records.  A broken promise aborts:
 *   - a decoder returns anything but 0 or GA_ECORRUPT;
 *   - tail records that apply and do not count (pg_window_tail_count);
 *   - a window (decoded, or after its tail) whose timestamps are not
 *     strictly increasing, or with points and no arrays;
 *   - a failed apply that changed the window;
 *   - a decoded snapshot that does not encode (canonically: in no more
 *     bytes) and decode back to the same window;
 *   - the same bytes giving another window a second time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "storage/pg_window.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_window(const struct ga_window *w)
{
    if (w->n && (!w->ts || !w->value))
        abort();
    for (size_t i = 1; i < w->n; i++)
        if (w->ts[i] <= w->ts[i - 1])
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t split = (size_t)(data[0] | data[1] << 8);
    data += 2;
    size -= 2;
    if (split > size)
        split = size;
    struct ga_window w = { 0 };
    int rc = pg_window_decode(data, split, &w);
    if (rc != 0 && rc != GA_ECORRUPT)
        abort();
    if (rc == 0) {
        check_window(&w);
        uint8_t *enc;
        size_t len;
        struct ga_window back;
        if (pg_window_encode(&w, &enc, &len) != 0 || len > split || pg_window_decode(enc, len, &back) != 0 ||
            back.n != w.n || back.has_prev != w.has_prev ||
            (w.n && (memcmp(back.ts, w.ts, w.n * sizeof *w.ts) != 0 ||
                     memcmp(back.value, w.value, w.n * sizeof *w.value) != 0)))
            abort();
        free(back.ts);
        free(back.value);
        free(enc);
    } else {
        w = (struct ga_window){ 0 };
    }
    size_t n0 = w.n;
    int64_t last0 = n0 ? w.ts[n0 - 1] : 0;
    rc = pg_window_apply_tail(&w, data + split, size - split);
    if (rc != 0 && rc != GA_ECORRUPT)
        abort();
    /* records that apply can be counted */
    size_t recs, pts;
    int crc = pg_window_tail_count(data + split, size - split, &recs, &pts);
    if ((crc != 0 && crc != GA_ECORRUPT) || (rc == 0 && crc != 0))
        abort();
    if (rc != 0 && (w.n != n0 || (n0 && w.ts[n0 - 1] != last0)))
        abort();
    check_window(&w);
    /* the same bytes give the same window */
    if (rc == 0) {
        struct ga_window a = { 0 };
        if (pg_window_decode(data, split, &a) != 0)
            a = (struct ga_window){ 0 };
        if (pg_window_apply_tail(&a, data + split, size - split) != 0 || a.n != w.n ||
            (a.n && (memcmp(a.ts, w.ts, a.n * sizeof *a.ts) != 0 ||
                     memcmp(a.value, w.value, a.n * sizeof *a.value) != 0)))
            abort();
        free(a.ts);
        free(a.value);
    }
    free(w.ts);
    free(w.value);
    return 0;
}
