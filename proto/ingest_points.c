/* ingest_points.c — decode a points message (proto/INGEST.md §3–§7): the
 * batch-building helpers shared with ingest_columnar.c, the friendly form,
 * and the choice between the two forms.
 *
 * Frame-level problems fail the whole batch with a message naming the
 * field; per-point problems reject that point only.  The friendly form is
 * walked twice with the pull reader: once to validate the structure and
 * size the output (remembering where each entry's name and points are),
 * once to fill it. */
#include "proto/ingest_priv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/name_check.h"
#include "proto/ts_parse.h"

#define BAD(...) ing_fail(GA_EPROTO, err, errlen, __VA_ARGS__)
#define TRUNCATED() BAD("points: malformed msgpack")

#define R_BEFORE ING_R_BEFORE
#define R_AFTER ING_R_AFTER
static const char R_TS_NOT_FINITE[] = "timestamp is not finite";
static const char R_TS_TYPE[] = "timestamp is not an integer, float or string";
#define R_NAN ING_R_NAN
#define R_INF ING_R_INF
static const char R_VALUE_TYPE[] = "value is not a number";
static const char R_PAIR[] = "point is not a [timestamp, value] pair";

/* ---- metric names ---- */

int ing_name_problem(struct ing_batch *b, const uint8_t *s, uint32_t n, const char **why)
{
    char buf[ING_REASON_MAX + 1];
    *why = NULL;
    if (n == 0)
        *why = "metric name empty";
    else if (n > ING_NAME_MAX)
        *why = "metric name longer than 255 bytes";
    else if (name_check_reason("metric name", s, n, buf, sizeof buf) &&
             !(*why = ing_text_dup(&b->text, buf, strlen(buf))))
        return GA_ENOMEM;
    return 0;
}

/* ---- timestamps ahead of the clock ---- */

int ing_ts_too_far_ahead(const struct ing_limits *lim, int64_t ts)
{
    if (lim->max_future_s <= 0 || lim->max_future_s > INT64_MAX / GA_NS_PER_SEC || ts <= lim->now_ns)
        return 0;
    return (uint64_t)ts - (uint64_t)lim->now_ns > (uint64_t)(lim->max_future_s * GA_NS_PER_SEC);
}

/* "timestamp 2026-11-22T15:04:05.5Z is more than limits.max_future_s =
 * 86400 s ahead": the fraction without its trailing zeros, none when the
 * timestamp is a whole second; at most 93 bytes (ING_REASON_MAX). */
int ing_reject_future(struct ing_batch *b, uint64_t index, int64_t ts,
                      const struct ing_limits *lim)
{
    char t[TS_RFC3339_LEN + 1];
    ts_format_rfc3339_short(ts, t, sizeof t);
    return ing_reject_fmt(b, index, "timestamp %s" ING_R_FUTURE_MID "%lld s ahead", t,
                          (long long)lim->max_future_s);
}

int ing_reason_is_future(const char *reason)
{
    return strncmp(reason, "timestamp ", 10) == 0 && strstr(reason, ING_R_FUTURE_MID) != NULL;
}

/* The name table is one block: max pointers, max lengths, the characters. */
int ing_names_alloc(struct ing_batch *b, size_t max, size_t bytes, char **chars)
{
    size_t sz = max * (sizeof(char *) + sizeof(uint32_t) + 1) + bytes;
    void *m = malloc(sz ? sz : 1);
    if (!m)
        return GA_ENOMEM;
    b->names = m;
    b->name_len = (uint32_t *)(b->names + max);
    *chars = (char *)(b->name_len + max);
    return 0;
}

void ing_names_push(struct ing_batch *b, char **chars, const uint8_t *s, uint32_t n)
{
    memcpy(*chars, s, n);
    (*chars)[n] = '\0';
    b->names[b->nnames] = *chars;
    b->name_len[b->nnames++] = n;
    *chars += n + 1;
}

/* One block for ts, value, name_idx (b->ts is its base). */
int ing_points_alloc(struct ing_batch *b, size_t n)
{
    if (n == 0)
        return 0;
    void *m = malloc(n * (sizeof(int64_t) + sizeof(double) + sizeof(uint32_t)));
    if (!m)
        return GA_ENOMEM;
    b->ts = m;
    b->value = (double *)(b->ts + n);
    b->name_idx = (uint32_t *)(b->value + n);
    return 0;
}

int ing_reject(struct ing_batch *b, uint64_t index, const char *why)
{
    return ing_reject_push(&b->rejected, &b->nrejected, &b->rej_cap, index, why);
}

long ing_batch_drop_names(struct ing_batch *b, const uint8_t *drop, const char *reason)
{
    size_t ndrop = 0;
    for (size_t k = 0; k < b->n; k++)
        ndrop += drop[b->name_idx[k]] != 0;
    if (!ndrop)
        return 0;
    const char *why = ing_text_dup(&b->text, reason, strlen(reason));
    struct ing_reject *rej = why ? malloc((b->nrejected + ndrop) * sizeof *rej) : NULL;
    uint32_t *remap = rej ? malloc((b->nnames ? b->nnames : 1) * sizeof *remap) : NULL;
    if (!remap) {
        free(rej);
        return GA_ENOMEM;
    }
    /* flat positions are either rejected already (in b->rejected, ascending)
     * or the accepted points in order */
    size_t r = 0, k = 0, out = 0, nr = 0;
    for (uint64_t pos = 0; k < b->n || r < b->nrejected; pos++) {
        if (r < b->nrejected && b->rejected[r].index == pos) {
            rej[nr++] = b->rejected[r++];
        } else if (k < b->n) {
            if (drop[b->name_idx[k]]) {
                rej[nr++] = (struct ing_reject){ pos, why };
            } else {
                b->ts[out] = b->ts[k];
                b->value[out] = b->value[k];
                b->name_idx[out] = b->name_idx[k];
                out++;
            }
            k++;
        } else {                     /* a rejection out of order: keep it as it was */
            rej[nr++] = b->rejected[r++];
        }
    }
    uint32_t nn = 0;
    for (uint32_t i = 0; i < b->nnames; i++) {
        remap[i] = nn;
        if (!drop[i]) {
            b->names[nn] = b->names[i];
            b->name_len[nn] = b->name_len[i];
            nn++;
        }
    }
    for (size_t i = 0; i < out; i++)
        b->name_idx[i] = remap[b->name_idx[i]];
    free(remap);
    free(b->rejected);
    b->rejected = rej;
    b->nrejected = b->rej_cap = nr;
    b->n = out;
    b->nnames = nn;
    return (long)ndrop;
}

int ing_reject_fmt(struct ing_batch *b, uint64_t index, const char *fmt, ...)
{
    char buf[ING_REASON_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const char *s = ing_text_dup(&b->text, buf, strlen(buf));
    return s ? ing_reject(b, index, s) : GA_ENOMEM;
}

/* ---- friendly form ---- */

/* Timestamp token → ns, or the reason it is refused (*dyn set for an RFC
 * 3339 syntax error, whose reason quotes the text). */
static const char *ts_of(const struct ing_tok *t, int64_t *ns, int *dyn)
{
    int rc;
    switch (t->kind) {
    case RK_UINT:
        if (t->u > (uint64_t)GA_TS_MAX)
            return R_AFTER;
        *ns = (int64_t)t->u;
        return NULL;
    case RK_INT:
        return R_BEFORE;
    case RK_FLOAT:
        rc = ts_from_seconds(t->f, ns);
        if (rc == GA_EINVAL)
            return R_TS_NOT_FINITE;
        break;
    case RK_STR:
        rc = ts_parse_rfc3339((const char *)t->ptr, t->n, ns, NULL, 0);
        if (rc == GA_EINVAL) {
            *dyn = 1;
            return "";
        }
        break;
    default:
        return R_TS_TYPE;
    }
    if (*ns < GA_TS_MIN)
        return R_BEFORE;
    return rc == GA_ERANGE || *ns > GA_TS_MAX ? R_AFTER : NULL;
}

static const char *value_of(const struct ing_tok *t, double *v)
{
    switch (t->kind) {
    case RK_UINT: *v = (double)t->u; return NULL;
    case RK_INT: *v = (double)t->i; return NULL;
    case RK_FLOAT:
        *v = t->f;
        return isnan(t->f) ? R_NAN : isinf(t->f) ? R_INF : NULL;
    default:
        return R_VALUE_TYPE;
    }
}

/* "timestamp not RFC 3339: <text>", the text printable ASCII, shortened. */
static int reject_rfc3339(struct ing_batch *b, uint64_t index, const struct ing_tok *t)
{
    char txt[52];
    size_t k = 0;
    for (; k < t->n && k < 48; k++)
        txt[k] = t->ptr[k] >= 0x20 && t->ptr[k] < 0x7f ? (char)t->ptr[k] : '?';
    if (t->n > 48)
        memcpy(txt + k, "...", 3), k += 3;
    txt[k] = '\0';
    return ing_reject_fmt(b, index, "timestamp not RFC 3339: %s", txt);
}

static int is_container(const struct ing_tok *t)
{
    return t->kind == RK_ARRAY || t->kind == RK_MAP;
}

static uint64_t be64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The common shape, as the encoders write it: fixarray 2, uint64 ns or
 * float64 seconds, float64 value — all good.  1 if taken, else 0 (the
 * general path decides). */
static int fast_point(struct ing_rd *r, struct ing_batch *b, uint32_t ni,
                      const struct ing_limits *lim)
{
    const uint8_t *q = r->p;
    if (r->end - q < 19 || q[0] != 0x92 || q[10] != 0xcb || (q[1] != 0xcf && q[1] != 0xcb))
        return 0;
    uint64_t tb = be64(q + 2), vb = be64(q + 11);
    double v, sec;
    int64_t ns;
    memcpy(&v, &vb, 8);
    if (q[1] == 0xcf) {
        if (tb > (uint64_t)GA_TS_MAX)
            return 0;
        ns = (int64_t)tb;
    } else {
        memcpy(&sec, &tb, 8);
        if (ts_from_seconds(sec, &ns) != 0 || !GA_TS_IN_RANGE(ns))
            return 0;
    }
    if (!isfinite(v) || ing_ts_too_far_ahead(lim, ns))
        return 0;
    b->name_idx[b->n] = ni;
    b->ts[b->n] = ns;
    b->value[b->n] = v;
    b->n++;
    r->p = q + 19;
    return 1;
}

/* Decode point `index` at r for name ni.  0, -1 (malformed), GA_ENOMEM. */
static int decode_point(struct ing_rd *r, struct ing_batch *b, uint32_t ni, uint64_t index,
                        const struct ing_limits *lim)
{
    const uint8_t *start = r->p;
    if (fast_point(r, b, ni, lim))
        return 0;
    struct ing_tok p, tt, vt;
    const char *why = NULL;
    int resync = 0, dyn = 0, ahead = 0;
    int64_t ns = 0;
    double v = 0;

    if (ing_rd_next(r, &p) < 0)
        return -1;
    if (p.kind != RK_ARRAY || p.n != 2) {
        why = R_PAIR;
        resync = is_container(&p);
    } else if (ing_rd_next(r, &tt) < 0) {
        return -1;
    } else if (is_container(&tt)) {
        why = R_TS_TYPE;
        resync = 1;
    } else if (ing_rd_next(r, &vt) < 0) {
        return -1;
    } else {                            /* the timestamp first, then the value */
        resync = is_container(&vt);
        why = ts_of(&tt, &ns, &dyn);
        if (!why)
            ahead = ing_ts_too_far_ahead(lim, ns);
        if (!why && !ahead)
            why = resync ? R_VALUE_TYPE : value_of(&vt, &v);
    }
    if (resync) {
        r->p = start;
        if (ing_rd_skip(r) < 0)
            return -1;
    }
    if (dyn)
        return reject_rfc3339(b, index, &tt);
    if (ahead)
        return ing_reject_future(b, index, ns, lim);
    if (why)
        return ing_reject(b, index, why);
    b->name_idx[b->n] = ni;
    b->ts[b->n] = ns;
    b->value[b->n] = v;
    b->n++;
    return 0;
}

/* Read entry i of 'metrics' at r: the name token and the points header,
 * with r->p left after the entry and *pts at the first point. */
static int read_entry(struct ing_rd *r, const uint8_t *end, uint32_t i, struct ing_tok *name,
                      struct ing_tok *pts, struct ing_rd *pr, char *err, size_t errlen)
{
    static const char *const keys[] = { "metric", "points" };
    const uint8_t *vals[2] = { NULL, NULL };
    struct ing_tok t;
    if (ing_rd_next(r, &t) < 0)
        return TRUNCATED();
    if (t.kind != RK_MAP)
        return BAD("points: 'metrics'[%u] must be a map", i);
    if (ing_rd_fields(r, t.n, keys, vals, 2) < 0)
        return TRUNCATED();
    if (!vals[0])
        return BAD("points: 'metrics'[%u]: 'metric' missing", i);
    struct ing_rd nr = { vals[0], end };
    if (ing_rd_next(&nr, name) < 0 || name->kind != RK_STR)
        return BAD("points: 'metrics'[%u]: 'metric' must be a string", i);
    if (!vals[1])
        return BAD("points: 'metrics'[%u]: 'points' missing", i);
    *pr = (struct ing_rd){ vals[1], end };
    if (ing_rd_next(pr, pts) < 0 || pts->kind != RK_ARRAY)
        return BAD("points: 'metrics'[%u]: 'points' must be an array", i);
    return 0;
}

/* Where pass 1 found entry i's name and first point. */
struct entry {
    const uint8_t *name, *pts;
    uint32_t name_n, npts;
};

static int decode_friendly(const uint8_t *metrics, const uint8_t *end,
                           const struct ing_limits *lim, struct ing_batch *b, char *err,
                           size_t errlen)
{
    struct ing_rd r = { metrics, end }, pr;
    struct ing_tok t, name, pts;
    struct entry *ent = NULL;
    size_t total = 0, bytes = 0;
    char *chars;
    int rc = 0;

    if (ing_rd_next(&r, &t) < 0 || t.kind != RK_ARRAY)
        return BAD("points: 'metrics' must be an array");
    uint32_t nent = t.n;
    if (nent > lim->max_names)
        return ing_fail(GA_ETOOBIG, err, errlen, "points: 'metrics' has %u entries, at most %zu",
                        nent, lim->max_names);
    /* each entry takes >= 1 byte of the frame, so nent is bounded by it */
    if (!(ent = malloc((nent ? nent : 1) * sizeof *ent)))
        return GA_ENOMEM;
    for (uint32_t i = 0; i < nent; i++) {           /* pass 1: structure and sizes */
        if ((rc = read_entry(&r, end, i, &name, &pts, &pr, err, errlen)) < 0)
            goto out;
        ent[i] = (struct entry){ name.ptr, pr.p, name.n, pts.n };
        bytes += name.n;
        total += pts.n;
        if (total > lim->max_points) {
            rc = ing_fail(GA_ETOOBIG, err, errlen, "points: more than %zu points",
                          lim->max_points);
            goto out;
        }
    }
    if ((rc = ing_names_alloc(b, nent, bytes, &chars)) < 0 || (rc = ing_points_alloc(b, total)) < 0)
        goto out;
    uint64_t index = 0;
    for (uint32_t i = 0; i < nent; i++) {           /* pass 2: fill */
        const char *why;
        if ((rc = ing_name_problem(b, ent[i].name, ent[i].name_n, &why)) < 0)
            goto out;
        if (why) {
            for (uint32_t j = 0; j < ent[i].npts; j++)
                if ((rc = ing_reject(b, index++, why)) < 0)
                    goto out;
            continue;
        }
        uint32_t ni = b->nnames;
        ing_names_push(b, &chars, ent[i].name, ent[i].name_n);
        pr = (struct ing_rd){ ent[i].pts, end };
        for (uint32_t j = 0; j < ent[i].npts; j++) {
            rc = decode_point(&pr, b, ni, index++, lim);
            if (rc == -1)
                rc = TRUNCATED();
            if (rc < 0)
                goto out;
        }
    }
out:
    free(ent);
    return rc;
}

int ing_decode_points(const struct ing_fields *f, const uint8_t *end, const struct ing_limits *lim,
                      struct ing_batch *b, char *err, size_t errlen)
{
    int rc;
    if (f->metrics && f->names)
        rc = BAD("points: both 'metrics' and 'names' given");
    else if (f->metrics)
        rc = decode_friendly(f->metrics, end, lim, b, err, errlen);
    else if (f->names)
        rc = ing_decode_columnar(f, end, lim, b, err, errlen);
    else
        rc = BAD("points: 'metrics' or 'names' missing");
    if (rc < 0)
        ing_batch_free(b);
    return rc;
}
