/* pystr.h — Python's str() and repr() of decoded msgpack values.
 *
 * Ceilometer signs a sample by hashing str(value) of each field
 * (proto/ceilometer.c); to check the signature we must produce those bytes
 * exactly.  A msgpack object stands for the Python value msgpack-python
 * (>= 1.0, raw=False) decodes it into:
 *   nil → None, bool → True/False, int → int, float32/64 → float,
 *   str → str, bin → bytes, array → list, map → dict.
 * ext has no fixed Python form here and is refused, as is a str that is not
 * valid UTF-8 (Python could not have decoded it), a map with duplicate keys
 * (a Python dict cannot hold them), and a str inside a container that has
 * non-ASCII characters and needs repr() (its escaping depends on Unicode
 * tables this file does not carry).
 *
 * Output goes to a growable buffer that the caller owns. */
#ifndef GA_PYSTR_H
#define GA_PYSTR_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

/* Render as str(ceilometer.publisher.utils.decode_unicode(v)): str and
 * bytes swap places (str → its UTF-8 bytes, bytes → UTF-8-decoded str) at
 * every level, and dict items are put in sorted key order. */
#define PYSTR_CEILO_DECODE 1u

/* Longest pystr_float_repr() result plus NUL ("-2.2250738585072014e-308"). */
#define PYSTR_FLOAT_MAX 32

struct pystr_buf {
    char *p;            /* len bytes of text, NUL-terminated when len > 0 */
    size_t len, cap;
    const char *why;    /* static text of the last failure, or NULL */
};

/* An empty buffer; needs no allocation until the first append. */
void pystr_buf_init(struct pystr_buf *b);
/* Free the buffer's storage; b is empty and reusable afterwards. */
void pystr_buf_free(struct pystr_buf *b);
/* Append n bytes.  Returns 0 or GA_ENOMEM. */
int pystr_append(struct pystr_buf *b, const void *s, size_t n);

/* Python's repr(float(d)) (== str()), e.g. 0.1 → "0.1", 1.0 → "1.0",
 * 1e16 → "1e+16", 1e-05 → "1e-05", inf → "inf", nan → "nan": the shortest
 * digits that read back to d, written in exponent form when the decimal
 * exponent is < -4 or >= 16.  Writes a NUL-terminated string to out and
 * returns its length. */
size_t pystr_float_repr(double d, char out[PYSTR_FLOAT_MAX]);

/* Append str(v) (pystr_str) or repr(v) (pystr_repr) of the Python value o
 * stands for; flags is 0 or PYSTR_CEILO_DECODE.  Returns 0, GA_EBADARG when
 * o cannot be rendered (b->why says why; b may hold a partial result), or
 * GA_ENOMEM. */
int pystr_str(struct pystr_buf *b, const msgpack_object *o, unsigned flags);
int pystr_repr(struct pystr_buf *b, const msgpack_object *o, unsigned flags);

/* The order in which Python's sorted(d.items()) visits the map m: keys are
 * all str (ordered by code point) or all bin (by byte).  On success *order
 * is a malloc'd array of m->via.map.size indexes into m->via.map.ptr (NULL
 * for an empty map), which the caller frees.  Returns 0, GA_EBADARG (keys of
 * another or of mixed type, duplicate keys, a str key that is not UTF-8;
 * *why set to static text) or GA_ENOMEM. */
int pystr_sorted_keys(const msgpack_object *m, uint32_t **order, const char **why);

/* 1 when s[0..n) is well-formed UTF-8 as Python's strict decoder sees it
 * (no overlong forms, no surrogates, nothing above U+10FFFF), else 0. */
int pystr_utf8_valid(const char *s, size_t n);

#endif
