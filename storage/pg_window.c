/* pg_window.c — window snapshot encoding (see pg_window.h). */
#include "storage/pg_window.h"

#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

#define FLAG_HAS_PREV 0x01

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static uint64_t zigzag(int64_t s)
{
    return ((uint64_t)s << 1) ^ (uint64_t)(s >> 63);
}

static int64_t unzigzag(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static void put_f64(uint8_t *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(bits >> (8 * i));
}

static double get_f64(const uint8_t *p)
{
    uint64_t bits = 0;
    for (int i = 7; i >= 0; i--)
        bits = bits << 8 | p[i];
    double v;
    memcpy(&v, &bits, 8);
    return v;
}

size_t pg_window_encoded_max(size_t n)
{
    return 2 + 10 + (10 + 8) + n * (10 + 8);
}

/* The points after n (the part both records share); returns its size. */
static size_t put_points(uint8_t *buf, const struct ga_window *w)
{
    size_t o = 0;
    if (w->n) {
        o += put_varint(buf + o, zigzag(w->ts[0]));
        for (size_t i = 1; i < w->n; i++)
            o += put_varint(buf + o, (uint64_t)w->ts[i] - (uint64_t)w->ts[i - 1]);
        for (size_t i = 0; i < w->n; i++, o += 8)
            put_f64(buf + o, w->value[i]);
    }
    return o;
}

static int increasing(const struct ga_window *w)
{
    for (size_t i = 1; i < w->n; i++)
        if (w->ts[i] <= w->ts[i - 1])
            return 0;
    return 1;
}

int pg_window_encode(const struct ga_window *w, uint8_t **out, size_t *len)
{
    if (!increasing(w))
        return GA_EINVAL;
    uint8_t *buf = malloc(pg_window_encoded_max(w->n));
    if (!buf)
        return GA_ENOMEM;
    size_t o = 0;
    buf[o++] = PG_WINDOW_VERSION;
    buf[o++] = w->has_prev ? FLAG_HAS_PREV : 0;
    o += put_varint(buf + o, w->n);
    if (w->has_prev) {
        o += put_varint(buf + o, zigzag(w->prev_ts));
        put_f64(buf + o, w->prev_value);
        o += 8;
    }
    o += put_points(buf + o, w);
    *out = buf;
    *len = o;
    return 0;
}

int pg_window_encode_tail(int64_t keep_from, const struct ga_window *w, uint8_t **out, size_t *len)
{
    if (!increasing(w) || w->has_prev)
        return GA_EINVAL;
    uint8_t *buf = malloc(pg_window_encoded_max(w->n));
    if (!buf)
        return GA_ENOMEM;
    size_t o = 0;
    buf[o++] = PG_WINDOW_TAIL;
    o += put_varint(buf + o, zigzag(keep_from));
    o += put_varint(buf + o, w->n);
    o += put_points(buf + o, w);
    *out = buf;
    *len = o;
    return 0;
}

/* Read one varint at *o; 0 or GA_ECORRUPT (truncated or over 64 bits). */
static int get_varint(const uint8_t *buf, size_t len, size_t *o, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*o >= len)
            return GA_ECORRUPT;
        uint8_t b = buf[(*o)++];
        if (shift == 63 && b > 1)
            return GA_ECORRUPT;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return GA_ECORRUPT;
}

/* n points at *o into ts[], value[]; 0 or GA_ECORRUPT. */
static int get_points(const uint8_t *buf, size_t len, size_t *o, size_t n, int64_t *ts, double *value)
{
    uint64_t u;
    if (!n)
        return 0;
    if (get_varint(buf, len, o, &u) < 0)
        return GA_ECORRUPT;
    ts[0] = unzigzag(u);
    for (size_t i = 1; i < n; i++) {
        if (get_varint(buf, len, o, &u) < 0 || u == 0 || u > (uint64_t)INT64_MAX ||
            ts[i - 1] > INT64_MAX - (int64_t)u)
            return GA_ECORRUPT;
        ts[i] = ts[i - 1] + (int64_t)u;
    }
    if ((len - *o) / 8 < n)
        return GA_ECORRUPT;
    for (size_t i = 0; i < n; i++, *o += 8)
        value[i] = get_f64(buf + *o);
    return 0;
}

int pg_window_tail_count(const uint8_t *buf, size_t len, size_t *records, size_t *points)
{
    size_t o = 0;
    uint64_t u, n;
    *records = *points = 0;
    while (o < len) {
        if (buf[o++] != PG_WINDOW_TAIL || get_varint(buf, len, &o, &u) < 0 ||
            get_varint(buf, len, &o, &n) < 0 || n > (len - o) / 9)
            return GA_ECORRUPT;
        for (uint64_t i = 0; i < n; i++)
            if (get_varint(buf, len, &o, &u) < 0)
                return GA_ECORRUPT;
        if ((len - o) / 8 < n)
            return GA_ECORRUPT;
        o += 8 * n;
        (*records)++;
        *points += (size_t)n;
    }
    return 0;
}

int pg_window_decode(const uint8_t *buf, size_t len, struct ga_window *w)
{
    size_t o = 2;
    uint64_t n, u;
    struct ga_window r = { 0 };
    int rc = GA_ECORRUPT;
    if (len < 3 || buf[0] != PG_WINDOW_VERSION || (buf[1] & ~FLAG_HAS_PREV))
        return GA_ECORRUPT;
    if (get_varint(buf, len, &o, &n) < 0)
        return GA_ECORRUPT;
    /* every point needs at least 9 bytes: cheap bound before allocating */
    if (n > (len - o) / 9)
        return GA_ECORRUPT;
    r.n = (size_t)n;
    r.has_prev = buf[1] & FLAG_HAS_PREV;
    if (r.has_prev) {
        if (get_varint(buf, len, &o, &u) < 0 || len - o < 8)
            return GA_ECORRUPT;
        r.prev_ts = unzigzag(u);
        r.prev_value = get_f64(buf + o);
        o += 8;
    }
    if (r.n) {
        r.ts = malloc(r.n * sizeof *r.ts);
        r.value = malloc(r.n * sizeof *r.value);
        if (!r.ts || !r.value) {
            rc = GA_ENOMEM;
            goto fail;
        }
        if (get_points(buf, len, &o, r.n, r.ts, r.value) < 0)
            goto fail;
    }
    if (o != len)
        goto fail;
    *w = r;
    return 0;
fail:
    free(r.ts);
    free(r.value);
    return rc;
}

int pg_window_apply_tail(struct ga_window *w, const uint8_t *buf, size_t len)
{
    struct ga_window r = *w;
    size_t cap = w->n;
    r.ts = cap ? malloc(cap * sizeof *r.ts) : NULL;
    r.value = cap ? malloc(cap * sizeof *r.value) : NULL;
    if (cap && (!r.ts || !r.value)) {
        free(r.ts);
        free(r.value);
        return GA_ENOMEM;
    }
    if (cap) {
        memcpy(r.ts, w->ts, cap * sizeof *r.ts);
        memcpy(r.value, w->value, cap * sizeof *r.value);
    }
    size_t o = 0;
    int rc = 0;
    while (rc == 0 && o < len) {
        uint64_t u, n;
        if (buf[o++] != PG_WINDOW_TAIL || get_varint(buf, len, &o, &u) < 0 ||
            get_varint(buf, len, &o, &n) < 0 || n > (len - o) / 9) {
            rc = GA_ECORRUPT;
            break;
        }
        int64_t keep = unzigzag(u);
        size_t d = 0;                  /* what the truncation dropped since */
        while (d < r.n && r.ts[d] < keep)
            d++;
        if (d) {
            memmove(r.ts, r.ts + d, (r.n - d) * sizeof *r.ts);
            memmove(r.value, r.value + d, (r.n - d) * sizeof *r.value);
            r.n -= d;
        }
        if (r.n + n > cap) {
            size_t nc = (r.n + n) * 2;
            int64_t *t = realloc(r.ts, nc * sizeof *t);
            double *v = t ? realloc(r.value, nc * sizeof *v) : NULL;
            r.ts = t ? t : r.ts;
            if (!v) {
                rc = GA_ENOMEM;
                break;
            }
            r.value = v;
            cap = nc;
        }
        rc = n ? get_points(buf, len, &o, (size_t)n, r.ts + r.n, r.value + r.n) : 0;
        /* the points come after every point kept */
        if (rc == 0 && n && r.n && r.ts[r.n] <= r.ts[r.n - 1])
            rc = GA_ECORRUPT;
        r.n += rc == 0 ? (size_t)n : 0;
    }
    if (rc < 0) {
        free(r.ts);
        free(r.value);
        return rc;
    }
    free(w->ts);
    free(w->value);
    if (!r.n) {
        free(r.ts);
        free(r.value);
        r.ts = NULL;
        r.value = NULL;
    }
    *w = r;
    return 0;
}
