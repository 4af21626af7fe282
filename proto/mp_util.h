/* mp_util.h — typed access to decoded msgpack_object maps and packing
 * helpers, shared by the daemon and gpuaggctl (whose JSON output is
 * tools/gpuaggctl/mp_json.h).
 *
 * Getters look a string key up in a map object (linear scan; protocol maps
 * are small) and check the value's type.  They never allocate: strings point
 * into the decoded object (valid as long as its msgpack_zone), and are not
 * NUL-terminated.  A key whose value is nil counts as absent (GA_ENOENT), so
 * a sender may write an optional field as nil or leave it out. */
#ifndef GA_MP_UTIL_H
#define GA_MP_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

/* The value stored under the string key `key` in `map`, or NULL when map is
 * NULL, not a map, or has no such key (the first match wins on duplicates).
 * The result points into map. */
const msgpack_object *mp_map_get(const msgpack_object *map, const char *key);

/* Typed getters.  Each returns 0 and sets its out argument(s), GA_ENOENT if
 * the key is absent or nil (map NULL or not a map counts as absent), or
 * GA_EBADARG if the value is of another type; out arguments are untouched on
 * error.
 *   mp_get_str     str only; *s points into map, *len bytes, no NUL
 *   mp_get_int     positive or negative int; a uint > INT64_MAX is GA_ERANGE
 *   mp_get_uint    non-negative int; a negative int is GA_ERANGE
 *   mp_get_double  float32, float64, or any int (converted)
 *   mp_get_bool    boolean only; *v is 0 or 1 */
int mp_get_str(const msgpack_object *map, const char *key, const char **s, size_t *len);
int mp_get_int(const msgpack_object *map, const char *key, int64_t *v);
int mp_get_uint(const msgpack_object *map, const char *key, uint64_t *v);
int mp_get_double(const msgpack_object *map, const char *key, double *v);
int mp_get_bool(const msgpack_object *map, const char *key, int *v);

/* 1 when o is non-NULL, a str, and byte-equal to the C string s; else 0. */
int mp_str_eq(const msgpack_object *o, const char *s);

/* Pack a C string as str; NULL packs nil. */
void mp_pack_cstr(msgpack_packer *pk, const char *s);
/* Pack one map entry: the key as str, then the value.  The caller has packed
 * the map header with the right count.  mp_pack_kv_str packs nil for v NULL;
 * mp_pack_kv_bool packs true for any non-zero v. */
void mp_pack_kv_str(msgpack_packer *pk, const char *k, const char *v);
void mp_pack_kv_int(msgpack_packer *pk, const char *k, int64_t v);
void mp_pack_kv_uint(msgpack_packer *pk, const char *k, uint64_t v);
void mp_pack_kv_double(msgpack_packer *pk, const char *k, double v);
void mp_pack_kv_bool(msgpack_packer *pk, const char *k, int v);

#endif
