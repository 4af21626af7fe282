/* ingest_reader.c — the bounds-checked msgpack pull reader used by the
 * ingest decoder (see ingest_priv.h), plus its small shared helpers: error
 * text, the reasons store and the rejection list. */
#include "proto/ingest_priv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/mp_frame.h"

int ing_fail(int code, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- reasons store: a list of chunks that never move ---- */

struct ing_text {
    struct ing_text *next;
    size_t used, cap;
    char buf[];
};

const char *ing_text_dup(struct ing_text **t, const char *s, size_t n)
{
    struct ing_text *c = *t;
    if (!c || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > 16384 ? n + 1 : 16384;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = *t;
        c->used = 0;
        c->cap = cap;
        *t = c;
    }
    char *d = c->buf + c->used;
    if (n)
        memcpy(d, s, n);
    d[n] = '\0';
    c->used += n + 1;
    return d;
}

void ing_text_free(struct ing_text **t)
{
    while (*t) {
        struct ing_text *next = (*t)->next;
        free(*t);
        *t = next;
    }
}

int ing_reject_push(struct ing_reject **v, size_t *n, size_t *cap, uint64_t index,
                    const char *reason)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct ing_reject *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return GA_ENOMEM;
        *v = nv;
        *cap = nc;
    }
    (*v)[*n].index = index;
    (*v)[*n].reason = reason;
    (*n)++;
    return 0;
}

/* ---- pull reader ---- */

static uint64_t load_be(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Read an n-byte big-endian field at r->p into *v. */
static int field(struct ing_rd *r, unsigned n, uint64_t *v)
{
    if ((size_t)(r->end - r->p) < n)
        return -1;
    *v = load_be(r->p, n);
    r->p += n;
    return 0;
}

/* Take a body of t->n bytes (after ext's type byte when ext). */
static int body(struct ing_rd *r, struct ing_tok *t, uint64_t n, int ext)
{
    if (ext) {
        if (r->p >= r->end)
            return -1;
        r->p++;
    }
    if ((uint64_t)(r->end - r->p) < n)
        return -1;
    t->n = (uint32_t)n;
    t->ptr = r->p;
    r->p += n;
    return 0;
}

int ing_rd_next(struct ing_rd *r, struct ing_tok *t)
{
    uint64_t v;
    if (r->p >= r->end)
        return -1;
    uint8_t b = *r->p++;
    if (b <= 0x7f) {
        t->kind = RK_UINT;
        t->u = b;
        return 0;
    }
    if (b >= 0xe0) {
        t->kind = RK_INT;
        t->i = (int8_t)b;
        return 0;
    }
    if (b <= 0x9f) {
        t->kind = b <= 0x8f ? RK_MAP : RK_ARRAY;
        t->n = b & 0x0f;
        return 0;
    }
    if (b <= 0xbf) {
        t->kind = RK_STR;
        return body(r, t, b & 0x1f, 0);
    }
    switch (b) {
    case 0xc0: t->kind = RK_NIL; return 0;
    case 0xc2: case 0xc3: t->kind = RK_BOOL; t->u = b & 1; return 0;
    case 0xc4: case 0xc5: case 0xc6:            /* bin 8/16/32 */
        t->kind = RK_BIN;
        return field(r, 1u << (b - 0xc4), &v) < 0 ? -1 : body(r, t, v, 0);
    case 0xc7: case 0xc8: case 0xc9:            /* ext 8/16/32 */
        t->kind = RK_EXT;
        return field(r, 1u << (b - 0xc7), &v) < 0 ? -1 : body(r, t, v, 1);
    case 0xca: {
        if (field(r, 4, &v) < 0)
            return -1;
        uint32_t u32 = (uint32_t)v;
        float f;
        memcpy(&f, &u32, 4);
        t->kind = RK_FLOAT;
        t->f = f;
        return 0;
    }
    case 0xcb:
        if (field(r, 8, &v) < 0)
            return -1;
        t->kind = RK_FLOAT;
        memcpy(&t->f, &v, 8);
        return 0;
    case 0xcc: case 0xcd: case 0xce: case 0xcf:  /* uint 8/16/32/64 */
        t->kind = RK_UINT;
        return field(r, 1u << (b - 0xcc), &t->u);
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {    /* int 8/16/32/64 */
        unsigned n = 1u << (b - 0xd0);
        if (field(r, n, &v) < 0)
            return -1;
        if (n < 8 && (v >> (8 * n - 1)))
            v |= ~(uint64_t)0 << (8 * n);           /* sign-extend */
        if ((int64_t)v >= 0) {
            t->kind = RK_UINT;
            t->u = v;
        } else {
            t->kind = RK_INT;
            t->i = (int64_t)v;
        }
        return 0;
    }
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:  /* fixext 1..16 */
        t->kind = RK_EXT;
        return body(r, t, 1u << (b - 0xd4), 1);
    case 0xd9: case 0xda: case 0xdb:            /* str 8/16/32 */
        t->kind = RK_STR;
        return field(r, 1u << (b - 0xd9), &v) < 0 ? -1 : body(r, t, v, 0);
    case 0xdc: case 0xdd:
        t->kind = RK_ARRAY;
        if (field(r, b == 0xdc ? 2 : 4, &v) < 0)
            return -1;
        t->n = (uint32_t)v;
        return 0;
    case 0xde: case 0xdf:
        t->kind = RK_MAP;
        if (field(r, b == 0xde ? 2 : 4, &v) < 0)
            return -1;
        t->n = (uint32_t)v;
        return 0;
    default:                                    /* 0xc1 */
        return -1;
    }
}

int ing_rd_skip(struct ing_rd *r)
{
    size_t n;
    if (mp_frame_scan(r->p, (size_t)(r->end - r->p), SIZE_MAX, &n) != 1)
        return -1;
    r->p += n;
    return 0;
}

int ing_tok_is(const struct ing_tok *t, const char *s)
{
    size_t n = strlen(s);
    return t->kind == RK_STR && t->n == n && memcmp(t->ptr, s, n) == 0;
}

int ing_rd_fields(struct ing_rd *r, uint32_t n, const char *const *keys, const uint8_t **vals,
                  size_t nkeys)
{
    for (uint32_t k = 0; k < n; k++) {
        const uint8_t *kp = r->p;
        struct ing_tok key;
        if (ing_rd_next(r, &key) < 0)
            return -1;
        if (key.kind == RK_ARRAY || key.kind == RK_MAP) {     /* odd key: skip it whole */
            r->p = kp;
            if (ing_rd_skip(r) < 0)
                return -1;
        }
        if (r->p >= r->end)
            return -1;
        if (key.kind == RK_STR && *r->p != 0xc0) {
            for (size_t j = 0; j < nkeys; j++) {
                if (!vals[j] && ing_tok_is(&key, keys[j])) {
                    vals[j] = r->p;
                    break;
                }
            }
        }
        if (ing_rd_skip(r) < 0)
            return -1;
    }
    return 0;
}
