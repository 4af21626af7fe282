/* matrix.c — binary ("GAMX") and CSV matrix inputs (see matrix.h). */
#include "daemon/jobs/matrix.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jobs/kind.h"
#include "proto/ga_err.h"

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int parse_binary(const uint8_t *buf, size_t len, struct matrix *m, char *err,
                        size_t errlen)
{
    if (len < MATRIX_HEADER) {
        snprintf(err, errlen, "input: binary matrix header is %d bytes, got %zu",
                 MATRIX_HEADER, len);
        return GA_EINVAL;
    }
    uint32_t elem = le32(buf + 4);
    uint64_t rows = le64(buf + 8), cols = le64(buf + 16);
    if (elem != 4 && elem != 8) {
        snprintf(err, errlen, "input: binary matrix element size must be 4 (float32) or 8 "
                 "(float64), got %u", elem);
        return GA_EINVAL;
    }
    if (rows == 0 || cols == 0 || rows > ((uint64_t)1 << 40) || cols > ((uint64_t)1 << 40) ||
        rows > (((uint64_t)1 << 62) / elem) / cols) {
        snprintf(err, errlen, "input: binary matrix of %llu x %llu is empty or too large",
                 (unsigned long long)rows, (unsigned long long)cols);
        return GA_EINVAL;
    }
    uint64_t need = rows * cols * elem;
    if (len - MATRIX_HEADER != need) {
        snprintf(err, errlen, "input: binary matrix of %llu x %llu float%u needs %llu bytes after "
                 "the header, got %zu", (unsigned long long)rows, (unsigned long long)cols,
                 elem * 8, (unsigned long long)need, len - MATRIX_HEADER);
        return GA_EINVAL;
    }
    m->rows = (int64_t)rows;
    m->cols = (int64_t)cols;
    m->elem = (int)elem;
    const uint8_t *d = buf + MATRIX_HEADER;
    if (((uintptr_t)d % 8) == 0) {        /* little-endian host: use it in place */
        m->data = (void *)d;
        return 0;
    }
    if (!(m->data = malloc(need)))
        return GA_ENOMEM;
    memcpy(m->data, d, need);
    m->owned = 1;
    return 0;
}

/* Next line of buf from *pos: [*s, *s + *n) without the line end. */
static int next_line(const uint8_t *buf, size_t len, size_t *pos, const char **s, size_t *n)
{
    if (*pos >= len)
        return 0;
    const uint8_t *p = buf + *pos, *nl = memchr(p, '\n', len - *pos);
    size_t l = nl ? (size_t)(nl - p) : len - *pos;
    *pos += l + (nl != NULL);
    if (l && p[l - 1] == '\r')
        l--;
    *s = (const char *)p;
    *n = l;
    return 1;
}

/* Split one line into doubles (appended to *v); returns the field count,
 * or -1 with err naming the field (its 1-based index in *bad), -2 when out
 * of memory. */
static int64_t parse_fields(const char *s, size_t n, double **v, size_t *nv, size_t *cap,
                            size_t lineno, int64_t *bad, char *err, size_t errlen)
{
    char tmp[512];
    int64_t k = 0;
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        size_t fl = j - i;
        while (fl && (s[i] == ' ' || s[i] == '\t'))
            i++, fl--;
        while (fl && (s[i + fl - 1] == ' ' || s[i + fl - 1] == '\t'))
            fl--;
        char *end;
        double x = 0;
        int ok = fl > 0 && fl < sizeof tmp;
        if (ok) {
            memcpy(tmp, s + i, fl);
            tmp[fl] = '\0';
            errno = 0;
            x = strtod(tmp, &end);
            ok = end != tmp && *end == '\0';
        }
        if (!ok) {
            *bad = k + 1;
            /* the bytes are not quoted: they may be a file's the client
             * could not read itself */
            snprintf(err, errlen, "input: line %zu, field %lld is not a number (%zu bytes)",
                     lineno, (long long)k + 1, fl);
            return -1;
        }
        if (*nv == *cap) {
            size_t c = *cap ? *cap * 2 : 4096;
            double *q = realloc(*v, c * sizeof *q);
            if (!q) {
                snprintf(err, errlen, "input: out of memory");
                return -2;
            }
            *v = q;
            *cap = c;
        }
        (*v)[(*nv)++] = x;
        k++;
        if (j >= n)
            return k;
        i = j + 1;
    }
}

static int parse_csv(const uint8_t *buf, size_t len, struct matrix *m, char *err,
                     size_t errlen)
{
    double *v = NULL;
    size_t nv = 0, cap = 0, pos = 0, lineno = 0;
    int64_t cols = 0, rows = 0;
    const char *s;
    size_t n;
    while (next_line(buf, len, &pos, &s, &n)) {
        lineno++;
        size_t lead = 0;
        while (lead < n && (s[lead] == ' ' || s[lead] == '\t'))
            lead++;
        if (lead == n || s[lead] == '#')
            continue;
        size_t before = nv;
        int64_t bad = 0;
        int64_t k = parse_fields(s, n, &v, &nv, &cap, lineno, &bad, err, errlen);
        if (k == -1 && bad == 1 && rows == 0 && cols == 0) {   /* a header line */
            nv = before;
            cols = -1;
            continue;
        }
        if (k < 0) {
            free(v);
            return k == -2 ? GA_ENOMEM : GA_EINVAL;
        }
        if (cols <= 0)
            cols = k;
        else if (k != cols) {
            snprintf(err, errlen, "input: line %zu: %lld fields, expected %lld", lineno,
                     (long long)k, (long long)cols);
            free(v);
            return GA_EINVAL;
        }
        rows++;
    }
    if (rows == 0) {
        snprintf(err, errlen, "input: no rows (binary \"GAMX\" matrix or CSV of numbers "
                 "expected)");
        free(v);
        return GA_EINVAL;
    }
    m->rows = rows;
    m->cols = cols;
    m->elem = 8;
    m->data = v;
    m->owned = 1;
    m->csv = 1;
    return 0;
}

int matrix_parse(const uint8_t *buf, size_t len, struct matrix *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (len >= 4 && memcmp(buf, MATRIX_MAGIC, 4) == 0)
        return parse_binary(buf, len, m, err, errlen);
    return parse_csv(buf, len, m, err, errlen);
}

void matrix_free(struct matrix *m)
{
    if (m->owned)
        free(m->data);
    memset(m, 0, sizeof *m);
}

double matrix_at(const struct matrix *m, int64_t r, int64_t c)
{
    int64_t i = r * m->cols + c;
    return m->elem == 8 ? ((const double *)m->data)[i] : (double)((const float *)m->data)[i];
}

int matrix_load(struct ga_job_ctx *ctx, const struct ga_job_params *p, size_t max,
                struct matrix *m)
{
    const uint8_t *buf;
    size_t len;
    int owned, rc = job_kind_input_read(ctx, p, max, &buf, &len, &owned);
    if (rc)
        return rc;
    rc = matrix_parse(buf, len, m, ctx->err, sizeof ctx->err);
    if (!rc && owned && !m->owned) {        /* binary data in place: keep it past buf */
        size_t bytes = (size_t)(m->rows * m->cols * m->elem);
        void *copy = malloc(bytes);
        if (copy)
            memcpy(copy, m->data, bytes);
        m->data = copy;
        m->owned = 1;
        if (!copy) {
            snprintf(ctx->err, sizeof ctx->err, "out of memory for the input");
            rc = GA_ENOMEM;
        }
    }
    if (owned)
        free((void *)buf);
    return rc;
}
