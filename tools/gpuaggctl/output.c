/* output.c — human formatting of control results (see output.h). */
#include "tools/gpuaggctl/output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tools/gpuaggctl/mp_json.h"

static void out_text(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
}

static void out_double(FILE *f, double v)
{
    if (isnan(v)) {
        fputs("nan", f);
        return;
    }
    if (isinf(v)) {
        fputs(v < 0 ? "-inf" : "inf", f);
        return;
    }
    double a = fabs(v);
    if (a < 1e15 && v == floor(v)) {
        fprintf(f, "%.0f", v);
        return;
    }
    if (a < 0.001 || a >= 1e15) {
        fprintf(f, "%g", v);
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%.3f", v);
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '0')
        n--;
    if (n > 0 && buf[n - 1] == '.')
        n--;
    fwrite(buf, 1, n, f);
}

static int is_container(const msgpack_object *o)
{
    return o->type == MSGPACK_OBJECT_MAP || o->type == MSGPACK_OBJECT_ARRAY;
}

/* Fits on one line: not a non-empty map, not an array holding containers. */
static int is_inline(const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_MAP)
        return o->via.map.size == 0;
    if (o->type == MSGPACK_OBJECT_ARRAY)
        for (uint32_t i = 0; i < o->via.array.size; i++)
            if (is_container(&o->via.array.ptr[i]))
                return 0;
    return 1;
}

void out_scalar(FILE *f, const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: fputs("-", f); break;
    case MSGPACK_OBJECT_BOOLEAN: fputs(o->via.boolean ? "true" : "false", f); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: fprintf(f, "%llu", (unsigned long long)o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: fprintf(f, "%lld", (long long)o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: out_double(f, o->via.f64); break;
    case MSGPACK_OBJECT_STR:
        if (o->via.str.size == 0)
            fputs("\"\"", f);
        else
            out_text(f, o->via.str.ptr, o->via.str.size);
        break;
    case MSGPACK_OBJECT_BIN: fprintf(f, "<%u bytes>", o->via.bin.size); break;
    case MSGPACK_OBJECT_EXT: fprintf(f, "<ext %d, %u bytes>", o->via.ext.type, o->via.ext.size); break;
    case MSGPACK_OBJECT_ARRAY:
        if (!is_inline(o)) {
            fputs("[...]", f);
            break;
        }
        fputc('[', f);
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (i)
                fputs(", ", f);
            out_scalar(f, &o->via.array.ptr[i]);
        }
        fputc(']', f);
        break;
    case MSGPACK_OBJECT_MAP: fputs(o->via.map.size ? "{...}" : "{}", f); break;
    default: fputs("?", f);
    }
}

static void pad(FILE *f, int indent)
{
    for (int i = 0; i < indent; i++)
        fputs("  ", f);
}

static void tree(FILE *f, const msgpack_object *o, int indent, int first_padded);

/* "key: value" or "key:" + nested lines. */
static void tree_entry(FILE *f, const msgpack_object_kv *kv, int indent)
{
    out_scalar(f, &kv->key);
    if (is_inline(&kv->val)) {
        fputs(": ", f);
        out_scalar(f, &kv->val);
        fputc('\n', f);
    } else {
        fputs(":\n", f);
        tree(f, &kv->val, indent + 1, 0);
    }
}

/* Lines for a container at indent; first_padded: the caller already wrote
 * the first line's indentation (after "- "). */
static void tree(FILE *f, const msgpack_object *o, int indent, int first_padded)
{
    if (o->type == MSGPACK_OBJECT_MAP) {
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            if (i > 0 || !first_padded)
                pad(f, indent);
            tree_entry(f, &o->via.map.ptr[i], indent);
        }
        return;
    }
    for (uint32_t i = 0; i < o->via.array.size; i++) {
        const msgpack_object *it = &o->via.array.ptr[i];
        if (i > 0 || !first_padded)
            pad(f, indent);
        if (is_inline(it)) {
            fputs("- ", f);
            out_scalar(f, it);
            fputc('\n', f);
        } else if (it->type == MSGPACK_OBJECT_MAP) {
            fputs("- ", f);
            tree(f, it, indent + 1, 1);
        } else {
            fputs("-\n", f);
            tree(f, it, indent + 1, 0);
        }
    }
}

void out_tree(FILE *f, const msgpack_object *o)
{
    if (is_inline(o)) {
        out_scalar(f, o);
        fputc('\n', f);
        return;
    }
    tree(f, o, 0, 0);
}

struct row {
    char *key;
    const msgpack_object *val;
};

struct rows {
    struct row *v;
    size_t n, cap;
};

/* Collect leaf entries of map under prefix; returns 0 or GA_ENOMEM. */
static int flatten(struct rows *rs, const msgpack_object *map, const char *prefix)
{
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[i];
        char *key = NULL;
        size_t klen = 0;
        FILE *m = open_memstream(&key, &klen);
        if (!m)
            return GA_ENOMEM;
        if (prefix)
            fprintf(m, "%s.", prefix);
        out_scalar(m, &kv->key);
        if (fclose(m) != 0) {
            free(key);
            return GA_ENOMEM;
        }
        if (kv->val.type == MSGPACK_OBJECT_MAP && kv->val.via.map.size > 0) {
            int rc = flatten(rs, &kv->val, key);
            free(key);
            if (rc < 0)
                return rc;
            continue;
        }
        if (rs->n == rs->cap) {
            size_t ncap = rs->cap ? 2 * rs->cap : 32;
            struct row *nv = realloc(rs->v, ncap * sizeof *nv);
            if (!nv) {
                free(key);
                return GA_ENOMEM;
            }
            rs->v = nv;
            rs->cap = ncap;
        }
        rs->v[rs->n++] = (struct row){ key, &kv->val };
    }
    return 0;
}

static int row_cmp(const void *a, const void *b)
{
    return strcmp(((const struct row *)a)->key, ((const struct row *)b)->key);
}

void out_table(FILE *f, const msgpack_object *o)
{
    if (o->type != MSGPACK_OBJECT_MAP) {
        out_tree(f, o);
        return;
    }
    struct rows rs = { 0 };
    if (flatten(&rs, o, NULL) < 0) {
        fputs("gpuaggctl: out of memory\n", stderr);
    } else {
        qsort(rs.v, rs.n, sizeof *rs.v, row_cmp);
        size_t w = 0;
        for (size_t i = 0; i < rs.n; i++)
            if (strlen(rs.v[i].key) > w)
                w = strlen(rs.v[i].key);
        for (size_t i = 0; i < rs.n; i++) {
            fprintf(f, "%-*s  ", (int)w, rs.v[i].key);
            out_scalar(f, rs.v[i].val);
            fputc('\n', f);
        }
    }
    for (size_t i = 0; i < rs.n; i++)
        free(rs.v[i].key);
    free(rs.v);
}

int out_json(FILE *f, const msgpack_object *o)
{
    int rc = mp_json_write(o, f, 1);
    fputc('\n', f);
    if (rc == 0 && ferror(f))
        rc = GA_EIO;
    return rc;
}
