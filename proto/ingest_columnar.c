/* ingest_columnar.c — decode the columnar form of a points message
 * (proto/INGEST.md §3): check the small map and the lengths, memcpy the
 * ts/values bins into the batch, then one validation pass that compacts
 * rejected points away (nothing moves when all are good). */
#include "proto/ingest_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

#define BAD(...) ing_fail(GA_EPROTO, err, errlen, __VA_ARGS__)

static void copy_le(void *dst, const uint8_t *src, size_t n, size_t width)
{
    if (n == 0)
        return;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(dst, src, n * width);
#else
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (size_t k = width; k-- > 0;)
            v = (v << 8) | src[i * width + k];
        if (width == 8)
            ((uint64_t *)dst)[i] = v;
        else
            ((uint32_t *)dst)[i] = (uint32_t)v;
    }
#endif
}

/* The bin value of field `key` at `at` (NULL: absent). */
static int bin_field(const uint8_t *at, const uint8_t *end, const char *key, struct ing_tok *t,
                     char *err, size_t errlen)
{
    struct ing_rd r = { at, end };
    if (!at)
        return BAD("points: '%s' missing", key);
    if (ing_rd_next(&r, t) < 0 || t->kind != RK_BIN)
        return BAD("points: '%s' must be bin", key);
    return 0;
}

static int point_ok(int64_t ts, double v, const struct ing_limits *lim)
{
    return GA_TS_IN_RANGE(ts) && isfinite(v) && !ing_ts_too_far_ahead(lim, ts);
}

int ing_decode_columnar(const struct ing_fields *f, const uint8_t *end,
                           const struct ing_limits *lim, struct ing_batch *b, char *err,
                           size_t errlen)
{
    struct ing_rd r = { f->names, end };
    struct ing_tok t, idx, tst, vst;
    uint32_t *remap = NULL;
    const char **why = NULL;
    size_t n = 0, bytes = 0;
    int rc = 0, any_bad = 0;
    char *chars;

    if (ing_rd_next(&r, &t) < 0 || t.kind != RK_ARRAY)
        return BAD("points: 'names' must be an array");
    uint32_t nn = t.n;
    if (nn > lim->max_names)
        return ing_fail(GA_ETOOBIG, err, errlen, "points: 'names' has %u entries, at most %zu", nn,
                        lim->max_names);
    const uint8_t *first = r.p;
    for (uint32_t i = 0; i < nn; i++) {
        if (ing_rd_next(&r, &t) < 0 || t.kind != RK_STR)
            return BAD("points: 'names'[%u] must be a string", i);
        bytes += t.n;
    }
    if (f->index && f->counts)
        return BAD("points: both 'index' and 'counts' given");
    if (f->index) {
        if ((rc = bin_field(f->index, end, "index", &idx, err, errlen)) < 0)
            return rc;
        if (idx.n % 4)
            return BAD("points: 'index' is %u bytes, not a multiple of 4", idx.n);
        n = idx.n / 4;
    } else if (f->counts) {
        r = (struct ing_rd){ f->counts, end };
        if (ing_rd_next(&r, &t) < 0 || t.kind != RK_ARRAY)
            return BAD("points: 'counts' must be an array");
        if (t.n != nn)
            return BAD("points: 'counts' has %u entries, expected one per name (%u)", t.n, nn);
        for (uint32_t i = 0; i < nn; i++) {
            if (ing_rd_next(&r, &t) < 0 || t.kind != RK_UINT)
                return BAD("points: 'counts'[%u] must be an unsigned integer", i);
            if (t.u > lim->max_points - n)
                return ing_fail(GA_ETOOBIG, err, errlen, "points: more than %zu points",
                                lim->max_points);
            n += t.u;
        }
    } else {
        return BAD("points: 'index' or 'counts' missing");
    }
    if (n > lim->max_points)
        return ing_fail(GA_ETOOBIG, err, errlen, "points: %zu points, at most %zu", n,
                        lim->max_points);
    if ((rc = bin_field(f->ts, end, "ts", &tst, err, errlen)) < 0)
        return rc;
    if (tst.n != 8 * n)
        return BAD("points: 'ts' is %u bytes, expected 8 × %zu points", tst.n, n);
    if ((rc = bin_field(f->values, end, "values", &vst, err, errlen)) < 0)
        return rc;
    if (vst.n != 8 * n)
        return BAD("points: 'values' is %u bytes, expected 8 × %zu points", vst.n, n);

    /* the frame is valid: build the name table and the points */
    if ((rc = ing_names_alloc(b, nn, bytes, &chars)) < 0 || (rc = ing_points_alloc(b, n)) < 0)
        goto out;
    remap = malloc((nn ? nn : 1) * sizeof *remap);
    why = malloc((nn ? nn : 1) * sizeof *why);
    if (!remap || !why) {
        rc = GA_ENOMEM;
        goto out;
    }
    r.p = first;
    for (uint32_t i = 0; i < nn; i++) {
        ing_rd_next(&r, &t);
        if ((rc = ing_name_problem(b, t.ptr, t.n, &why[i])) < 0)
            goto out;
        remap[i] = why[i] ? UINT32_MAX : b->nnames;
        if (why[i])
            any_bad = 1;
        else
            ing_names_push(b, &chars, t.ptr, t.n);
    }
    copy_le(b->ts, tst.ptr, n, 8);
    copy_le(b->value, vst.ptr, n, 8);
    if (f->index) {
        copy_le(b->name_idx, idx.ptr, n, 4);
    } else {
        size_t k = 0;
        r = (struct ing_rd){ f->counts, end };
        ing_rd_next(&r, &t);
        for (uint32_t i = 0; i < nn; i++) {
            ing_rd_next(&r, &t);
            for (uint64_t j = 0; j < t.u; j++)
                b->name_idx[k++] = i;
        }
    }

    /* validate; compact from the first rejected point on */
    size_t k = 0;
    if (!any_bad)
        while (k < n && b->name_idx[k] < nn && point_ok(b->ts[k], b->value[k], lim))
            k++;
    size_t w = k;
    for (; k < n; k++) {
        uint32_t ix = b->name_idx[k];
        int64_t ts = b->ts[k];
        double v = b->value[k];
        const char *bad = NULL;
        if (ix >= nn) {
            if ((rc = ing_reject_fmt(b, k, "metric index %u out of range", ix)) < 0)
                goto out;
            continue;
        }
        if (why[ix])
            bad = why[ix];
        else if (ts < GA_TS_MIN)
            bad = ING_R_BEFORE;
        else if (ts > GA_TS_MAX)
            bad = ING_R_AFTER;
        else if (ing_ts_too_far_ahead(lim, ts)) {
            if ((rc = ing_reject_future(b, k, ts, lim)) < 0)
                goto out;
            continue;
        } else if (isnan(v))
            bad = ING_R_NAN;
        else if (isinf(v))
            bad = ING_R_INF;
        if (bad) {
            if ((rc = ing_reject(b, k, bad)) < 0)
                goto out;
            continue;
        }
        b->name_idx[w] = remap[ix];
        b->ts[w] = ts;
        b->value[w] = v;
        w++;
    }
    b->n = w;
out:
    free(remap);
    free(why);
    return rc;
}
