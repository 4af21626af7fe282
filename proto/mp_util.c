/* mp_util.c — msgpack map getters and packing helpers (see mp_util.h). */
#include "proto/mp_util.h"

#include <string.h>

#include "proto/ga_err.h"

/* ---- getters ---- */

const msgpack_object *mp_map_get(const msgpack_object *map, const char *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP || !key)
        return NULL;
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[i];
        if (mp_str_eq(&kv->key, key))
            return &kv->val;
    }
    return NULL;
}

/* The value under key, or NULL when absent or nil. */
static const msgpack_object *get_present(const msgpack_object *map, const char *key)
{
    const msgpack_object *v = mp_map_get(map, key);
    return v && v->type != MSGPACK_OBJECT_NIL ? v : NULL;
}

int mp_get_str(const msgpack_object *map, const char *key, const char **s, size_t *len)
{
    const msgpack_object *v = get_present(map, key);
    if (!v)
        return GA_ENOENT;
    if (v->type != MSGPACK_OBJECT_STR)
        return GA_EBADARG;
    *s = v->via.str.ptr;
    *len = v->via.str.size;
    return 0;
}

int mp_get_int(const msgpack_object *map, const char *key, int64_t *v)
{
    const msgpack_object *o = get_present(map, key);
    if (!o)
        return GA_ENOENT;
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *v = o->via.i64;
        return 0;
    }
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return GA_EBADARG;
    if (o->via.u64 > (uint64_t)INT64_MAX)
        return GA_ERANGE;
    *v = (int64_t)o->via.u64;
    return 0;
}

int mp_get_uint(const msgpack_object *map, const char *key, uint64_t *v)
{
    const msgpack_object *o = get_present(map, key);
    if (!o)
        return GA_ENOENT;
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        return GA_ERANGE;
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return GA_EBADARG;
    *v = o->via.u64;
    return 0;
}

int mp_get_double(const msgpack_object *map, const char *key, double *v)
{
    const msgpack_object *o = get_present(map, key);
    if (!o)
        return GA_ENOENT;
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *v = o->via.f64; return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *v = (double)o->via.u64; return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *v = (double)o->via.i64; return 0;
    default: return GA_EBADARG;
    }
}

int mp_get_bool(const msgpack_object *map, const char *key, int *v)
{
    const msgpack_object *o = get_present(map, key);
    if (!o)
        return GA_ENOENT;
    if (o->type != MSGPACK_OBJECT_BOOLEAN)
        return GA_EBADARG;
    *v = o->via.boolean ? 1 : 0;
    return 0;
}

int mp_str_eq(const msgpack_object *o, const char *s)
{
    if (!o || !s || o->type != MSGPACK_OBJECT_STR)
        return 0;
    size_t n = strlen(s);
    return o->via.str.size == n && (n == 0 || memcmp(o->via.str.ptr, s, n) == 0);
}

/* ---- packing ---- */

void mp_pack_cstr(msgpack_packer *pk, const char *s)
{
    if (s)
        msgpack_pack_str_with_body(pk, s, strlen(s));
    else
        msgpack_pack_nil(pk);
}

void mp_pack_kv_str(msgpack_packer *pk, const char *k, const char *v)
{
    mp_pack_cstr(pk, k);
    mp_pack_cstr(pk, v);
}

void mp_pack_kv_int(msgpack_packer *pk, const char *k, int64_t v)
{
    mp_pack_cstr(pk, k);
    msgpack_pack_int64(pk, v);
}

void mp_pack_kv_uint(msgpack_packer *pk, const char *k, uint64_t v)
{
    mp_pack_cstr(pk, k);
    msgpack_pack_uint64(pk, v);
}

void mp_pack_kv_double(msgpack_packer *pk, const char *k, double v)
{
    mp_pack_cstr(pk, k);
    msgpack_pack_double(pk, v);
}

void mp_pack_kv_bool(msgpack_packer *pk, const char *k, int v)
{
    mp_pack_cstr(pk, k);
    if (v)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
}
