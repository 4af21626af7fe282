/* csv_points.c — reading and writing the resample CSV (see csv_points.h). */
#include "proto/csv_points.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/grow.h"
#include "proto/base/hash.h"
#include "proto/base/hmap.h"
#include "proto/ga_err.h"
#include "proto/ts_parse.h"

#define NS_PER_SEC 1000000000LL

static int fail(char *err, size_t errlen, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, size_t line, const char *fmt, ...)
{
    int k = snprintf(err, errlen, "line %zu: ", line);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < errlen)
        vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return GA_EINVAL;
}

int csv_parse_epoch(const char *s, size_t len, int64_t *ns)
{
    size_t i = 0;
    int neg = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    int64_t sec = 0, frac = 0;
    size_t nd = 0, nf = 0;
    for (; i < len && isdigit((unsigned char)s[i]); i++, nd++) {
        if (sec > (INT64_MAX / NS_PER_SEC))
            return GA_ERANGE;
        sec = sec * 10 + (s[i] - '0');
    }
    if (i < len && s[i] == '.') {
        for (i++; i < len && isdigit((unsigned char)s[i]); i++, nf++) {
            if (nf >= 9)
                return GA_EINVAL;
            frac = frac * 10 + (s[i] - '0');
        }
    }
    if (i != len || (nd == 0 && nf == 0))
        return GA_EINVAL;
    for (size_t k = nf; k < 9; k++)
        frac *= 10;
    if (sec > INT64_MAX / NS_PER_SEC - 1)
        return GA_ERANGE;
    int64_t v = sec * NS_PER_SEC + frac;
    *ns = neg ? -v : v;
    return 0;
}

static void trim(const char **s, size_t *len)
{
    while (*len && isspace((unsigned char)**s))
        (*s)++, (*len)--;
    while (*len && isspace((unsigned char)(*s)[*len - 1]))
        (*len)--;
}

/* Id of metric name s[0..len), adding it.  >= 0 or GA_ENOMEM. */
static int64_t metric_id(struct csv_input *in, const char *s, size_t len)
{
    uint64_t h = ga_hash_fmix64(ga_hash_fnv1a(s, len));
    struct ga_hmap_it it = ga_hmap_find(&in->ids, h);
    uint32_t v;
    while (ga_hmap_next(&it, &v)) {
        const char *nm = in->names[v];
        if (strlen(nm) == len && memcmp(nm, s, len) == 0)
            return v;
    }
    if (in->nnames >= GA_HMAP_VALUE_MAX ||
        ga_grow((void **)&in->names, &in->cap_names, in->nnames + 1, sizeof *in->names, 1024))
        return GA_ENOMEM;
    char *copy = malloc(len + 1);
    if (!copy)
        return GA_ENOMEM;
    memcpy(copy, s, len);
    copy[len] = 0;
    if (ga_hmap_put(&in->ids, &it, h, (uint32_t)in->nnames) < 0) {
        free(copy);
        return GA_ENOMEM;
    }
    in->names[in->nnames] = copy;
    return (int64_t)in->nnames++;
}

/* Room for need points in the four point columns. */
static int reserve_points(struct csv_input *in, size_t need)
{
    if (need <= in->cap)
        return 0;
    size_t c = in->cap ? in->cap * 2 : 1024;
    uint32_t *m = realloc(in->metric, c * sizeof *m);
    if (!m)
        return GA_ENOMEM;
    in->metric = m;
    int64_t *t = realloc(in->ts, c * sizeof *t);
    if (!t)
        return GA_ENOMEM;
    in->ts = t;
    double *v = realloc(in->value, c * sizeof *v);
    if (!v)
        return GA_ENOMEM;
    in->value = v;
    size_t *l = realloc(in->line, c * sizeof *l);
    if (!l)
        return GA_ENOMEM;
    in->line = l;
    in->cap = c;
    return 0;
}

/* Unquote a "..." field at s (len bytes of line); the name goes to buf.
 * Returns the length consumed (through the closing quote) or 0 if bad. */
static size_t unquote(const char *s, size_t len, char *buf, size_t *blen)
{
    size_t i = 1, o = 0;
    while (i < len) {
        if (s[i] == '"') {
            if (i + 1 < len && s[i + 1] == '"') {
                buf[o++] = '"';
                i += 2;
                continue;
            }
            *blen = o;
            return i + 1;
        }
        buf[o++] = s[i++];
    }
    return 0;
}

static int parse_line(struct csv_input *in, const char *s, size_t len, size_t lineno, char *err,
                      size_t errlen, char *namebuf)
{
    const char *name = s;
    size_t nlen;
    const char *rest;
    if (len && s[0] == '"') {
        size_t used = unquote(s, len, namebuf, &nlen);
        if (!used)
            return fail(err, errlen, lineno, "unterminated quoted metric name");
        if (used >= len || s[used] != ',')
            return fail(err, errlen, lineno, "expected ',' after the quoted metric name");
        name = namebuf;
        rest = s + used + 1;
    } else {
        const char *c2 = memrchr(s, ',', len);
        const char *c1 = c2 ? memrchr(s, ',', (size_t)(c2 - s)) : NULL;
        if (!c1)
            return fail(err, errlen, lineno, "expected 3 fields metric,timestamp,value (%zu bytes)",
                        len);
        nlen = (size_t)(c1 - s);
        rest = c1 + 1;
    }
    if (nlen == 0)
        return fail(err, errlen, lineno, "empty metric name");
    const char *comma = memchr(rest, ',', len - (size_t)(rest - s));
    if (!comma)
        return fail(err, errlen, lineno, "expected 3 fields metric,timestamp,value");
    const char *t = rest, *v = comma + 1;
    size_t tlen = (size_t)(comma - rest), vlen = len - (size_t)(v - s);
    trim(&t, &tlen);
    trim(&v, &vlen);
    int64_t ns;
    int rc;
    char why[128] = "";
    if (memchr(t, 'T', tlen) || memchr(t, 't', tlen) || memchr(t, ':', tlen))
        rc = ts_parse_rfc3339(t, tlen, &ns, why, sizeof why);
    else
        rc = csv_parse_epoch(t, tlen, &ns);
    if (rc == GA_ERANGE)
        return fail(err, errlen, lineno, "timestamp out of range");
    if (rc)
        return fail(err, errlen, lineno, "bad timestamp (%zu bytes; epoch seconds with up to 9 "
                    "decimals, or RFC 3339)", tlen);
    char vbuf[64];
    if (vlen == 0 || vlen >= sizeof vbuf)
        return fail(err, errlen, lineno, "bad value (%zu bytes; a number)", vlen);
    memcpy(vbuf, v, vlen);
    vbuf[vlen] = 0;
    char *end;
    errno = 0;
    double val = strtod(vbuf, &end);
    if (*end || end == vbuf)
        return fail(err, errlen, lineno, "bad value (%zu bytes; a number)", vlen);
    int64_t id = metric_id(in, name, nlen);
    if (id < 0)
        return (int)id;
    if (reserve_points(in, in->n + 1))
        return GA_ENOMEM;
    in->metric[in->n] = (uint32_t)id;
    in->ts[in->n] = ns;
    in->value[in->n] = val;
    in->line[in->n] = lineno;
    in->n++;
    return 0;
}

static int end_batch(struct csv_input *in)
{
    if (in->nbatches && in->batch_end[in->nbatches - 1] == in->n)
        return 0;                              /* empty batch */
    if (ga_grow((void **)&in->batch_end, &in->cap_batches, in->nbatches + 1, sizeof *in->batch_end, 1024))
        return GA_ENOMEM;
    in->batch_end[in->nbatches++] = in->n;
    return 0;
}

int csv_read_points(FILE *f, struct csv_input *in, char *err, size_t errlen)
{
    char *line = NULL, *namebuf = NULL;
    size_t cap = 0, namecap = 0, lineno = 0;
    int rc = 0, header = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        const char *s = line;
        size_t len = (size_t)got;
        while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
            len--;
        const char *t = s;
        size_t tlen = len;
        trim(&t, &tlen);
        if (tlen == 0)
            continue;
        if (tlen == 6 && memcmp(t, "#batch", 6) == 0) {
            if ((rc = end_batch(in)))
                goto out;
            continue;
        }
        if (t[0] == '#')
            continue;
        if (tlen == 22 && memcmp(t, "metric,timestamp,value", 22) == 0) {
            header = 1;
            continue;
        }
        if (!header) {
            rc = fail(err, errlen, lineno, "expected the header \"metric,timestamp,value\"");
            goto out;
        }
        if (namecap < len + 1) {
            free(namebuf);
            namecap = len + 1;
            namebuf = malloc(namecap);
            if (!namebuf) {
                rc = GA_ENOMEM;
                goto out;
            }
        }
        if ((rc = parse_line(in, s, len, lineno, err, errlen, namebuf)))
            goto out;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "read error after line %zu", lineno);
        rc = GA_EIO;
        goto out;
    }
    rc = end_batch(in);
out:
    free(line);
    free(namebuf);
    return rc;
}

void csv_input_free(struct csv_input *in)
{
    for (size_t i = 0; i < in->nnames; i++)
        free(in->names[i]);
    free(in->names);
    free(in->metric);
    free(in->ts);
    free(in->value);
    free(in->line);
    free(in->batch_end);
    ga_hmap_free(&in->ids);
    memset(in, 0, sizeof *in);
}

const char *csv_format_ns(int64_t ns, char *buf)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, 32, "%s%" PRIu64 ".%09" PRIu64, ns < 0 ? "-" : "", a / (uint64_t)NS_PER_SEC,
             a % (uint64_t)NS_PER_SEC);
    return buf;
}

const char *csv_format_seconds(int64_t ns, char *buf)
{
    csv_format_ns(ns, buf);
    size_t l = strlen(buf);
    while (buf[l - 1] == '0')
        buf[--l] = 0;
    if (buf[l - 1] == '.')
        buf[--l] = 0;
    return buf;
}

void csv_write_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void csv_write_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}
