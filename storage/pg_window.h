/* pg_window.h — the binary encoding of a metric's raw window snapshot, as
 * stored in metric_windows.snapshot (docs/STORAGE.md "Window snapshots").
 *
 *   byte 0      version, 1
 *   byte 1      flags: bit 0 = has_prev; other bits 0
 *   varint      n, the number of points
 *   if has_prev:
 *     zigzag varint prev_ts, then 8 bytes prev_value (IEEE-754 binary64,
 *     little-endian)
 *   if n > 0:
 *     zigzag varint ts[0], then n-1 unsigned varints ts[i] - ts[i-1] (>= 1:
 *     the window is sorted with unique timestamps)
 *     n x 8 bytes value[i] (IEEE-754 binary64, little-endian, bit-exact)
 *
 * varint = LEB128 (7 bits a byte, low first, high bit = more); zigzag maps a
 * signed s to (s << 1) ^ (s >> 63).  Nothing may follow the last value.
 *
 * A tail (metric_windows.tail, docs/STORAGE.md "Window snapshots") is what
 * changed since the window was saved, when it changed only at its ends:
 * zero or more records back to back, each
 *
 *   byte 0      2 (PG_WINDOW_TAIL)
 *   zigzag varint keep_from: the window's first timestamp now; the points
 *               before it were truncated
 *   varint      n, then the n points appended, laid out as above (ts[0]
 *               zigzag, deltas >= 1, n values), each after every point kept
 *
 * Pure functions, thread-safe. */
#ifndef GA_PG_WINDOW_H
#define GA_PG_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "proto/agg.h"

#define PG_WINDOW_VERSION 1
#define PG_WINDOW_TAIL 2

/* Encode w.  On success *out is a malloc'ed buffer of *len bytes owned by
 * the caller (free()).  Returns 0, GA_EINVAL when the timestamps are not
 * strictly increasing, or GA_ENOMEM. */
int pg_window_encode(const struct ga_window *w, uint8_t **out, size_t *len);

/* Upper bound of the encoding's size for n points (for buffer planning). */
size_t pg_window_encoded_max(size_t n);

/* Decode buf[len] into w (w->ts and w->value malloc'ed, owned by the
 * caller; both NULL when n == 0).  Returns 0, GA_ECORRUPT for a truncated,
 * overlong or malformed snapshot or an unknown version (w untouched), or
 * GA_ENOMEM. */
int pg_window_decode(const uint8_t *buf, size_t len, struct ga_window *w);

/* Encode one tail record: keep_from, then the points of w (strictly
 * increasing, no has_prev).  0, GA_EINVAL or GA_ENOMEM. */
int pg_window_encode_tail(int64_t keep_from, const struct ga_window *w, uint8_t **out, size_t *len);

/* Apply the tail records of buf[len] to w in order (each drops w's points
 * before its keep_from, then appends its points).  0 (w updated; its
 * arrays replaced), GA_ECORRUPT (a malformed record, or points not after
 * those kept: w untouched) or GA_ENOMEM. */
int pg_window_apply_tail(struct ga_window *w, const uint8_t *buf, size_t len);

/* The tail records in buf[len] and the points they hold together (what a
 * load stored for a window, before the truncations).  0, or GA_ECORRUPT for
 * a malformed record. */
int pg_window_tail_count(const uint8_t *buf, size_t len, size_t *records, size_t *points);

#endif
