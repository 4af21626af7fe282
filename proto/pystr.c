/* pystr.c — Python str()/repr() of decoded msgpack values (see pystr.h).
 *
 * The rules follow CPython 3: Objects/floatobject.c float_repr (with
 * Python/pystrtod.c format_float_short, mode 'r'), Objects/bytesobject.c
 * PyBytes_Repr, Objects/unicodeobject.c unicode_repr, list_repr, dict_repr. */
#include "proto/pystr.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

void pystr_buf_init(struct pystr_buf *b)
{
    memset(b, 0, sizeof *b);
}

void pystr_buf_free(struct pystr_buf *b)
{
    free(b->p);
    pystr_buf_init(b);
}

int pystr_append(struct pystr_buf *b, const void *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return GA_ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static int append_cstr(struct pystr_buf *b, const char *s)
{
    return pystr_append(b, s, strlen(s));
}

static int fail(struct pystr_buf *b, const char *why)
{
    b->why = why;
    return GA_EBADARG;
}

/* ---- floats ---- */

/* The p-digit neighbour of "D.DDDe±XX" in tmp, one unit of the last digit
 * up (dir 1) or down (-1), written back to tmp; 0 when it would change the
 * digit count. */
static int neighbour(char *tmp, size_t size, int p, int dir)
{
    char *e = strchr(tmp, 'e');
    uint64_t m = 0, lim = 1;
    for (const char *s = tmp; s < e; s++)
        if (*s != '.')
            m = m * 10 + (uint64_t)(*s - '0');
    for (int i = 1; i < p; i++)
        lim *= 10;                              /* 10^(p-1) */
    m += (uint64_t)(int64_t)dir;
    if (m < lim || m >= lim * 10)
        return 0;
    char digs[24], exp[8];
    snprintf(exp, sizeof exp, "%s", e);
    snprintf(digs, sizeof digs, "%" PRIu64, m);
    snprintf(tmp, size, "%c%s%s%s", digs[0], p > 1 ? "." : "", digs + 1, exp);
    return 1;
}

/* The shortest decimal digits of x > 0 (finite) that read back to x:
 * x ≈ 0.D1D2…Dn × 10^decpt.  For p = 1..17 digits, tries the correctly
 * rounded p-digit string (printf), and, where x sits at a power of two and
 * its rounding interval is lopsided, the p-digit strings either side of it
 * — as David Gay's dtoa mode 0 (Python's repr) finds them.  17 digits always
 * round-trip. */
static int shortest_digits(double x, char dig[20], int *decpt)
{
    char tmp[40], near[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, x);
        if (strtod(tmp, NULL) == x)
            break;
        memcpy(near, tmp, sizeof near);
        if (neighbour(tmp, sizeof tmp, p, 1) && strtod(tmp, NULL) == x)
            break;
        memcpy(tmp, near, sizeof tmp);
        if (neighbour(tmp, sizeof tmp, p, -1) && strtod(tmp, NULL) == x)
            break;
        memcpy(tmp, near, sizeof tmp);
    }
    /* tmp is "D[.DDD]e±XX" */
    int n = 0;
    const char *s = tmp;
    for (; *s != 'e'; s++)
        if (*s != '.')
            dig[n++] = *s;
    while (n > 1 && dig[n - 1] == '0')
        n--;
    dig[n] = '\0';
    *decpt = atoi(s + 1) + 1;
    return n;
}

size_t pystr_float_repr(double d, char out[PYSTR_FLOAT_MAX])
{
    if (isnan(d))
        return (size_t)snprintf(out, PYSTR_FLOAT_MAX, "nan");
    if (isinf(d))
        return (size_t)snprintf(out, PYSTR_FLOAT_MAX, d < 0 ? "-inf" : "inf");
    char *o = out;
    if (signbit(d))
        *o++ = '-';
    if (d == 0) {
        strcpy(o, "0.0");
        return (size_t)(o - out) + 3;
    }
    char dig[20];
    int decpt, n = shortest_digits(fabs(d), dig, &decpt);
    if (decpt <= -4 || decpt > 16) {            /* exponent form: 1e-05, 1.5e+16 */
        *o++ = dig[0];
        if (n > 1) {
            *o++ = '.';
            memcpy(o, dig + 1, (size_t)n - 1);
            o += n - 1;
        }
        int e = decpt - 1;
        o += sprintf(o, "e%c%02d", e < 0 ? '-' : '+', abs(e));
    } else if (decpt <= 0) {                    /* 0.000123 */
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -decpt; i++)
            *o++ = '0';
        memcpy(o, dig, (size_t)n);
        o += n;
    } else if (decpt < n) {                     /* 12.5 */
        memcpy(o, dig, (size_t)decpt);
        o += decpt;
        *o++ = '.';
        memcpy(o, dig + decpt, (size_t)(n - decpt));
        o += n - decpt;
    } else {                                    /* 1200.0 */
        memcpy(o, dig, (size_t)n);
        o += n;
        for (int i = n; i < decpt; i++)
            *o++ = '0';
        *o++ = '.';
        *o++ = '0';
    }
    *o = '\0';
    return (size_t)(o - out);
}

/* ---- text ---- */

int pystr_utf8_valid(const char *str, size_t n)
{
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xbf;           /* bounds of the 2nd byte */
        if (c >= 0xc2 && c <= 0xdf)
            need = 1;
        else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            if (c == 0xe0)
                lo = 0xa0;                      /* overlong */
            else if (c == 0xed)
                hi = 0x9f;                      /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;                      /* above U+10FFFF */
        } else
            return 0;
        if (n - i <= need || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
        i += need + 1;
    }
    return 1;
}

/* repr() of bytes (is_str 0) or of an ASCII str (is_str 1): quotes chosen
 * and characters escaped as PyBytes_Repr / unicode_repr do. */
static int quote_repr(struct pystr_buf *b, const char *s, size_t n, int is_str)
{
    int sq = n && memchr(s, '\'', n), dq = n && memchr(s, '"', n);
    char quote = sq && !dq ? '"' : '\'';
    int rc = is_str ? 0 : pystr_append(b, "b", 1);
    if (rc == 0)
        rc = pystr_append(b, &quote, 1);
    for (size_t i = 0; i < n && rc == 0; i++) {
        uint8_t c = (uint8_t)s[i];
        char esc[5];
        if (is_str && c >= 0x80)
            return fail(b, "non-ASCII text in a container: its Python repr() is not reproduced");
        if (c == (uint8_t)quote || c == '\\')
            rc = pystr_append(b, (char[]){'\\', (char)c}, 2);
        else if (c == '\t')
            rc = pystr_append(b, "\\t", 2);
        else if (c == '\n')
            rc = pystr_append(b, "\\n", 2);
        else if (c == '\r')
            rc = pystr_append(b, "\\r", 2);
        else if (c < 0x20 || c >= 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            rc = pystr_append(b, esc, 4);
        } else
            rc = pystr_append(b, &s[i], 1);
    }
    return rc ? rc : pystr_append(b, &quote, 1);
}

/* ---- containers ---- */

struct key_ref {
    const char *p;
    uint32_t len, idx;
};

static int cmp_key(const void *a, const void *b)
{
    const struct key_ref *x = a, *y = b;
    uint32_t m = x->len < y->len ? x->len : y->len;
    int c = m ? memcmp(x->p, y->p, m) : 0;
    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

int pystr_sorted_keys(const msgpack_object *m, uint32_t **order, const char **why)
{
    uint32_t n = m->via.map.size;
    struct key_ref *refs = NULL;
    int rc = 0;
    *order = NULL;
    if (n == 0)
        return 0;
    msgpack_object_type kind = m->via.map.ptr[0].key.type;
    refs = malloc(n * sizeof *refs);
    *order = malloc(n * sizeof **order);
    if (!refs || !*order) {
        rc = GA_ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *k = &m->via.map.ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR && k->type != MSGPACK_OBJECT_BIN) {
            *why = "a map key is neither str nor bin";
            rc = GA_EBADARG;
            goto out;
        }
        if (k->type != kind) {
            *why = "a map mixes str and bin keys (Python cannot sort them)";
            rc = GA_EBADARG;
            goto out;
        }
        if (kind == MSGPACK_OBJECT_STR && !pystr_utf8_valid(k->via.str.ptr, k->via.str.size)) {
            *why = "a map key is not valid UTF-8";
            rc = GA_EBADARG;
            goto out;
        }
        /* str and bin share one layout in msgpack_object_union */
        refs[i] = (struct key_ref){k->via.bin.ptr, k->via.bin.size, i};
    }
    qsort(refs, n, sizeof *refs, cmp_key);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0 && cmp_key(&refs[i - 1], &refs[i]) == 0) {
            *why = "a map has a duplicate key";
            rc = GA_EBADARG;
            goto out;
        }
        (*order)[i] = refs[i].idx;
    }
out:
    free(refs);
    if (rc) {
        free(*order);
        *order = NULL;
    }
    return rc;
}

static int repr_map(struct pystr_buf *b, const msgpack_object *o, unsigned flags)
{
    uint32_t *order = NULL;
    const char *why = NULL;
    int rc = pystr_sorted_keys(o, &order, &why);   /* also rejects duplicates */
    if (rc == GA_EBADARG)
        return fail(b, why);
    if (rc == 0)
        rc = pystr_append(b, "{", 1);
    for (uint32_t i = 0; i < o->via.map.size && rc == 0; i++) {
        /* a dict from msgpack keeps wire order; decode_unicode's is sorted */
        const msgpack_object_kv *kv = &o->via.map.ptr[flags & PYSTR_CEILO_DECODE ? order[i] : i];
        if (i > 0)
            rc = pystr_append(b, ", ", 2);
        if (rc == 0)
            rc = pystr_repr(b, &kv->key, flags);
        if (rc == 0)
            rc = pystr_append(b, ": ", 2);
        if (rc == 0)
            rc = pystr_repr(b, &kv->val, flags);
    }
    if (rc == 0)
        rc = pystr_append(b, "}", 1);
    free(order);
    return rc;
}

static int repr_array(struct pystr_buf *b, const msgpack_object *o, unsigned flags)
{
    int rc = pystr_append(b, "[", 1);
    for (uint32_t i = 0; i < o->via.array.size && rc == 0; i++) {
        if (i > 0)
            rc = pystr_append(b, ", ", 2);
        if (rc == 0)
            rc = pystr_repr(b, &o->via.array.ptr[i], flags);
    }
    return rc ? rc : pystr_append(b, "]", 1);
}

/* ---- str() and repr() ---- */

/* Both functions; as_repr selects repr() where the two differ (str). */
static int render(struct pystr_buf *b, const msgpack_object *o, unsigned flags, int as_repr)
{
    char num[PYSTR_FLOAT_MAX];
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return append_cstr(b, "None");
    case MSGPACK_OBJECT_BOOLEAN:
        return append_cstr(b, o->via.boolean ? "True" : "False");
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(num, sizeof num, "%" PRIu64, o->via.u64);
        return append_cstr(b, num);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(num, sizeof num, "%" PRId64, o->via.i64);
        return append_cstr(b, num);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        pystr_float_repr(o->via.f64, num);
        return append_cstr(b, num);
    case MSGPACK_OBJECT_STR:
    case MSGPACK_OBJECT_BIN: {
        /* a Python str, or bytes; decode_unicode swaps the two */
        int is_str = (o->type == MSGPACK_OBJECT_STR) != !!(flags & PYSTR_CEILO_DECODE);
        const char *s = o->via.bin.ptr;
        size_t n = o->via.bin.size;
        if ((o->type == MSGPACK_OBJECT_STR || is_str) && !pystr_utf8_valid(s, n))
            return fail(b, "text is not valid UTF-8");
        if (is_str && !as_repr)
            return pystr_append(b, s, n);
        return quote_repr(b, s, n, is_str);
    }
    case MSGPACK_OBJECT_ARRAY:
        return repr_array(b, o, flags);
    case MSGPACK_OBJECT_MAP:
        return repr_map(b, o, flags);
    default:
        return fail(b, "msgpack ext types have no Python str() here");
    }
}

int pystr_str(struct pystr_buf *b, const msgpack_object *o, unsigned flags)
{
    return render(b, o, flags, 0);
}

int pystr_repr(struct pystr_buf *b, const msgpack_object *o, unsigned flags)
{
    return render(b, o, flags, 1);
}
