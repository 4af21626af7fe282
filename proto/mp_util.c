/* mp_util.c — msgpack map getters, packing helpers, JSON output (see
 * mp_util.h). */
#include "proto/mp_util.h"

#include <math.h>
#include <stdlib.h>
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

/* ---- JSON ---- */

/* Write s[0..n) as the inside of a JSON string: escapes, and U+FFFD for each
 * maximal ill-formed UTF-8 subpart (Unicode 15, §3.9, Table 3-7). */
static void json_chars(const unsigned char *s, size_t n, FILE *out)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            switch (c) {
            case '"':  fputs("\\\"", out); break;
            case '\\': fputs("\\\\", out); break;
            case '\b': fputs("\\b", out); break;
            case '\f': fputs("\\f", out); break;
            case '\n': fputs("\\n", out); break;
            case '\r': fputs("\\r", out); break;
            case '\t': fputs("\\t", out); break;
            default:
                if (c < 0x20 || c == 0x7f)
                    fprintf(out, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
                else
                    fputc(c, out);
            }
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
        if (need && k == need + 1)
            fwrite(s + i, 1, k, out);
        else
            fputs("\xef\xbf\xbd", out);
        i += k;
    }
}

static void json_string(const char *s, size_t n, FILE *out)
{
    fputc('"', out);
    json_chars((const unsigned char *)s, n, out);
    fputc('"', out);
}

static void json_base64(const char *p, size_t n, FILE *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = (const unsigned char *)p;
    fputc('"', out);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n) v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n) v |= s[i + 2];
        fputc(tab[v >> 18], out);
        fputc(tab[(v >> 12) & 63], out);
        fputc(i + 1 < n ? tab[(v >> 6) & 63] : '=', out);
        fputc(i + 2 < n ? tab[v & 63] : '=', out);
    }
    fputc('"', out);
}

/* Shortest %g text that reads back to v (as a float when is_float32). */
static void json_number(double v, int is_float32, FILE *out)
{
    char buf[40];
    if (!isfinite(v)) {
        fputs("null", out);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (is_float32 ? (float)back == (float)v : back == v)
            break;
    }
    fputs(buf, out);
    if (!strpbrk(buf, ".eE"))
        fputs(".0", out);
}

static void newline_indent(FILE *out, int pretty, int indent)
{
    if (!pretty)
        return;
    fputc('\n', out);
    for (int i = 0; i < indent; i++)
        fputs("  ", out);
}

static int json_value(const msgpack_object *o, FILE *out, int pretty, int indent, int in_key);

/* A map key: str as is; bin as its base64; anything else as its compact JSON
 * text, quoted.  Inside such a text (in_key) an array or map key is "…":
 * every level of keys within keys would escape the one below again, and
 * the text would double with each level. */
static int json_key(const msgpack_object *k, FILE *out, int in_key)
{
    if (k->type == MSGPACK_OBJECT_STR) {
        json_string(k->via.str.ptr, k->via.str.size, out);
        return 0;
    }
    if (k->type == MSGPACK_OBJECT_BIN) {
        json_base64(k->via.bin.ptr, k->via.bin.size, out);
        return 0;
    }
    if (in_key && (k->type == MSGPACK_OBJECT_ARRAY || k->type == MSGPACK_OBJECT_MAP)) {
        json_string("\xe2\x80\xa6", 3, out);
        return 0;
    }
    char *text = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&text, &n);
    if (!mem)
        return GA_ENOMEM;
    int rc = json_value(k, mem, 0, 0, 1);
    if (fclose(mem) != 0 && rc == 0)
        rc = GA_ENOMEM;
    if (rc == 0)
        json_string(text, n, out);
    free(text);
    return rc;
}

static int json_value(const msgpack_object *o, FILE *out, int pretty, int indent, int in_key)
{
    int rc = 0;
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: fputs("null", out); break;
    case MSGPACK_OBJECT_BOOLEAN: fputs(o->via.boolean ? "true" : "false", out); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: fprintf(out, "%llu", (unsigned long long)o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: fprintf(out, "%lld", (long long)o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32: json_number(o->via.f64, 1, out); break;
    case MSGPACK_OBJECT_FLOAT64: json_number(o->via.f64, 0, out); break;
    case MSGPACK_OBJECT_STR: json_string(o->via.str.ptr, o->via.str.size, out); break;
    case MSGPACK_OBJECT_BIN: json_base64(o->via.bin.ptr, o->via.bin.size, out); break;
    case MSGPACK_OBJECT_EXT:
        fprintf(out, pretty ? "{\"ext\": %d, \"data\": " : "{\"ext\":%d,\"data\":", o->via.ext.type);
        json_base64(o->via.ext.ptr, o->via.ext.size, out);
        fputc('}', out);
        break;
    case MSGPACK_OBJECT_ARRAY:
        fputc('[', out);
        for (uint32_t i = 0; i < o->via.array.size && rc == 0; i++) {
            if (i)
                fputc(',', out);
            newline_indent(out, pretty, indent + 1);
            rc = json_value(&o->via.array.ptr[i], out, pretty, indent + 1, in_key);
        }
        if (o->via.array.size)
            newline_indent(out, pretty, indent);
        fputc(']', out);
        break;
    case MSGPACK_OBJECT_MAP:
        fputc('{', out);
        for (uint32_t i = 0; i < o->via.map.size && rc == 0; i++) {
            if (i)
                fputc(',', out);
            newline_indent(out, pretty, indent + 1);
            rc = json_key(&o->via.map.ptr[i].key, out, in_key);
            fputs(pretty ? ": " : ":", out);
            if (rc == 0)
                rc = json_value(&o->via.map.ptr[i].val, out, pretty, indent + 1, in_key);
        }
        if (o->via.map.size)
            newline_indent(out, pretty, indent);
        fputc('}', out);
        break;
    default:
        fputs("null", out);
    }
    return rc;
}

int mp_to_json(const msgpack_object *o, FILE *out, int pretty)
{
    int rc = json_value(o, out, pretty, 0, 0);
    if (rc == 0 && ferror(out))
        rc = GA_EIO;
    return rc;
}
