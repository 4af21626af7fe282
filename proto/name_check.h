/* name_check.h — the characters a metric name or a resource id may hold,
 * checked at the door by every listener (proto/INGEST.md §5).
 *
 * A name must be well-formed UTF-8 (no overlong forms, no surrogates,
 * nothing above U+10FFFF) and hold none of the code points of
 * name_check_refused[]: the C0 controls, DEL and the C1 controls, the
 * bidirectional marks, embeddings, overrides and isolates, and the
 * zero-width and byte-order characters.  Such characters make a name
 * display as another (U+202E turns "cpu.util" into what reads as
 * something else) or not at all, in dashboards and logs.  Every other
 * character is allowed: "cpu.util/héllo", "温度", emoji.
 *
 * Emptiness and length are each caller's (the ingest protocol: 1..255
 * bytes; Ceilometer: a non-empty resource_id and counter_name). */
#ifndef GA_NAME_CHECK_H
#define GA_NAME_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* One refused range of code points, lo..hi inclusive, and what they are. */
struct name_check_range {
    uint32_t lo, hi;
    const char *what;           /* "right-to-left override" */
};

/* The refused ranges, in increasing order. */
extern const struct name_check_range name_check_refused[];
extern const size_t name_check_nrefused;

enum name_check_rc {
    NAME_CHECK_OK = 0,
    NAME_CHECK_UTF8,            /* not well-formed UTF-8 */
    NAME_CHECK_CHAR,            /* a refused code point */
};

/* Check s[0..n).
 *   cp   out (may be NULL): the refused code point (NAME_CHECK_CHAR)
 *   at   out (may be NULL): the byte offset, from 0, of the first refused
 *        character or of the first byte of the first ill-formed sequence
 * Returns NAME_CHECK_OK, NAME_CHECK_UTF8 or NAME_CHECK_CHAR; the first
 * problem from the start of s decides. */
enum name_check_rc name_check(const void *s, size_t n, uint32_t *cp, size_t *at);

/* What cp is when refused ("C1 control", "zero width space"), else NULL.
 * Static storage. */
const char *name_check_what(uint32_t cp);

/* Why s[0..n) is refused, as one line naming the field `what`:
 *   "<what> not valid UTF-8 at byte 3"
 *   "<what> contains U+202E (right-to-left override) at byte 7"
 * written into buf (len bytes, NUL-terminated, cut if short).  Returns 0
 * when s is acceptable (buf untouched), 1 when refused. */
int name_check_reason(const char *what, const void *s, size_t n, char *buf, size_t len);

#endif
