/* mp_json.c — a msgpack object as a jansson value, and its JSON text (see
 * mp_json.h). */
#include "tools/gpuaggctl/mp_json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/base64.h>

#include "proto/ga_err.h"

/* A NUL-terminated copy of s[0..n) with U+FFFD for each maximal ill-formed
 * UTF-8 subpart (Unicode 15, §3.9, Table 3-7), its length in *len (NUL bytes
 * of s are kept); NULL when out of memory.  The caller frees it. */
static char *utf8_repair(const char *str, size_t n, size_t *len)
{
    const unsigned char *s = (const unsigned char *)str;
    char *out = malloc(3 * n + 1);   /* one byte becomes at most 3 */
    if (!out)
        return NULL;
    size_t o = 0, i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            out[o++] = (char)c;
            i++;
            continue;
        }
        size_t need;                 /* continuation bytes */
        unsigned char lo = 0x80, hi = 0xbf;   /* range of the second byte */
        if (c >= 0xc2 && c <= 0xdf) need = 1;
        else if (c == 0xe0) { need = 2; lo = 0xa0; }
        else if (c >= 0xe1 && c <= 0xef) { need = 2; if (c == 0xed) hi = 0x9f; }
        else if (c == 0xf0) { need = 3; lo = 0x90; }
        else if (c >= 0xf1 && c <= 0xf4) { need = 3; if (c == 0xf4) hi = 0x8f; }
        else need = 0;               /* 0x80..0xc1, 0xf5..0xff: never valid */
        size_t k = 1;                /* bytes of a valid prefix */
        while (need && k <= need && i + k < n) {
            unsigned char d = s[i + k];
            if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xbf))
                break;
            k++;
        }
        if (need && k == need + 1) {
            memcpy(out + o, s + i, k);
            o += k;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
        }
        i += k;
    }
    out[o] = '\0';
    *len = o;
    return out;
}

static json_t *string_from(const char *s, size_t n)
{
    size_t len;
    char *text = utf8_repair(s, n, &len);
    if (!text)
        return NULL;
    json_t *j = json_stringn_nocheck(text, len);
    free(text);
    return j;
}

/* The base64 text (RFC 4648, padded) of p[0..n), NUL-terminated, by
 * nettle; NULL when out of memory.  The caller frees it. */
static char *base64(const char *p, size_t n)
{
    char *out = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);
    if (!out)
        return NULL;
    base64_encode_raw(out, n, (const uint8_t *)p);
    out[BASE64_ENCODE_RAW_LENGTH(n)] = '\0';
    return out;
}

static json_t *base64_from(const char *p, size_t n)
{
    char *text = base64(p, n);
    if (!text)
        return NULL;
    json_t *j = json_string_nocheck(text);
    free(text);
    return j;
}

static json_t *convert(const msgpack_object *o, int in_key);

/* The object key of k, malloc'ed and NUL-terminated, its length in *len
 * (str keys may hold NUL bytes): str as is, bin as its base64, anything
 * else as its compact JSON text.  Inside such a text (in_key) an array or
 * map key is "…": every level of keys within keys would escape the one
 * below again, and the text would double with each level.  NULL when out
 * of memory. */
static char *key_text(const msgpack_object *k, int in_key, size_t *len)
{
    char *text;
    if (k->type == MSGPACK_OBJECT_STR) {
        return utf8_repair(k->via.str.ptr, k->via.str.size, len);
    } else if (k->type == MSGPACK_OBJECT_BIN) {
        text = base64(k->via.bin.ptr, k->via.bin.size);
    } else if (in_key && (k->type == MSGPACK_OBJECT_ARRAY || k->type == MSGPACK_OBJECT_MAP)) {
        text = strdup("\xe2\x80\xa6");
    } else {
        json_t *j = convert(k, 1);
        text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
        json_decref(j);
    }
    if (text)
        *len = strlen(text);
    return text;
}

static json_t *object_from(const msgpack_object *o, int in_key)
{
    json_t *obj = json_object();
    for (uint32_t i = 0; obj && i < o->via.map.size; i++) {
        size_t klen = 0;
        char *key = key_text(&o->via.map.ptr[i].key, in_key, &klen);
        json_t *val = NULL;
        int rc = -1;
        if (key && json_object_getn(obj, key, klen))
            rc = 0;                  /* a key met again: the first one stays */
        else if (key && (val = convert(&o->via.map.ptr[i].val, in_key)))
            rc = json_object_setn_new_nocheck(obj, key, klen, val);
        free(key);
        if (rc != 0) {
            json_decref(obj);
            obj = NULL;
        }
    }
    return obj;
}

static json_t *convert(const msgpack_object *o, int in_key)
{
    json_t *j = NULL;
    switch (o->type) {
    case MSGPACK_OBJECT_BOOLEAN: return json_boolean(o->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 > (uint64_t)INT64_MAX)
            return json_real((double)o->via.u64);
        return json_integer((json_int_t)o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return json_integer((json_int_t)o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return isfinite(o->via.f64) ? json_real(o->via.f64) : json_null();
    case MSGPACK_OBJECT_STR: return string_from(o->via.str.ptr, o->via.str.size);
    case MSGPACK_OBJECT_BIN: return base64_from(o->via.bin.ptr, o->via.bin.size);
    case MSGPACK_OBJECT_EXT:
        j = json_object();
        if (j && (json_object_set_new_nocheck(j, "ext", json_integer(o->via.ext.type)) != 0 ||
                  json_object_set_new_nocheck(j, "data", base64_from(o->via.ext.ptr, o->via.ext.size)) != 0)) {
            json_decref(j);
            j = NULL;
        }
        return j;
    case MSGPACK_OBJECT_ARRAY:
        j = json_array();
        for (uint32_t i = 0; j && i < o->via.array.size; i++)
            if (json_array_append_new(j, convert(&o->via.array.ptr[i], in_key)) != 0) {
                json_decref(j);
                j = NULL;
            }
        return j;
    case MSGPACK_OBJECT_MAP: return object_from(o, in_key);
    default: return json_null();
    }
}

json_t *mp_json_from(const msgpack_object *o)
{
    return convert(o, 0);
}

int mp_json_write(const msgpack_object *o, FILE *out, int pretty)
{
    json_t *j = mp_json_from(o);
    if (!j)
        return GA_ENOMEM;
    size_t flags = JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
    int rc = json_dumpf(j, out, flags);
    json_decref(j);
    if (rc == 0 && ferror(out))
        rc = -1;
    return rc == 0 ? 0 : ferror(out) ? GA_EIO : GA_ENOMEM;
}
