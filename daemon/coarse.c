/* coarse.c — coarse archives' buckets held back a bounded time (see
 * coarse.h). */
#include "daemon/coarse.h"

#include <stdlib.h>
#include <string.h>

#include "gpu/engine.h"
#include "proto/base/grow.h"
#include "proto/ga_err.h"
#include "proto/policy.h"

/* Rows one bucket unpacks to, at most: every method, and a record's rows
 * past the last. */
#define SCRATCH_ROWS (GA_POLICY_MAX_METHODS + GA_WIDE_MAX)

static int out_add(struct coarse *c, const struct ga_agg *s, size_t len)
{
    if (ga_grow((void **)&c->out, &c->cap_out, c->nout + len, sizeof *c->out, 4096) < 0)
        return GA_ENOMEM;
    memcpy(c->out + c->nout, s, len * sizeof *s);
    c->nout += len;
    c->out_rows += ga_aggs_count(s, len);
    c->released++;
    return 0;
}

static struct coarse_ent *find(struct coarse *c, struct coarse_part *cp, uint32_t metric, int64_t g)
{
    if (metric >= c->head_cap)
        return NULL;
    for (uint32_t i = c->head[metric]; i; i = cp->e[i - 1].next)
        if (cp->e[i - 1].granularity_ns == g)
            return &cp->e[i - 1];
    return NULL;
}

/* Slots a[0..an) and b[0..bn) hold the same methods in the same form
 * (the same rows, or records of the same masks): the newer can replace
 * the older as it is. */
static int same_shape(const struct ga_agg *a, size_t an, const struct ga_agg *b, size_t bn)
{
    if (an != bn)
        return 0;
    for (size_t i = 0; i < an; i += ga_agg_span(&a[i]))
        if (a[i].method != b[i].method || (a[i].method == GA_M_WIDE && a[i].value != b[i].value) ||
            ga_agg_span(&a[i]) != ga_agg_span(&b[i]))
            return 0;
    return 1;
}

/* Unpack slots s[0..n) into rows at out (room for GA_POLICY_MAX_METHODS
 * + GA_WIDE_MAX); their count. */
static size_t rows_of(const struct ga_agg *s, size_t n, struct ga_agg *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i += ga_agg_span(&s[i]))
        k += ga_agg_unpack(&s[i], n - i, out + k);
    return k;
}

/* A bucket's methods can come apart: a late point that changes a bucket's
 * last value changes the next bucket's rate: methods, which then come
 * alone.  The newer values of the methods a run brings, the held ones of
 * the others; the merged rows go to c->scratch; their count. */
static size_t merge(struct coarse *c, const struct coarse_part *cp, const struct coarse_ent *e,
                    const struct ga_agg *s, size_t len)
{
    struct ga_agg *old = c->scratch, *add = c->scratch + SCRATCH_ROWS;
    size_t no = rows_of(cp->pool + e->off, e->len, old), na = rows_of(s, len, add), k = 0;
    for (size_t i = 0; i < no; i++) {
        size_t j = 0;
        while (j < na && add[j].method != old[i].method)
            j++;
        if (j == na)
            old[k++] = old[i];            /* a method the newer run does not bring */
    }
    memmove(old + k, add, na * sizeof *add);
    return k + na;
}

/* Hold the bucket of slots s[0..len): replace the held one of its bucket
 * (merged where the two carry other methods), displace an older one to
 * out, or go to out itself when older than the one held.  Room in the
 * entries and the pool is made beforehand (coarse_take) but for a merge;
 * 0 when out cannot grow: the bucket stays with the feed's rows (written
 * with them, which is as right, only sooner).  1 when taken; GA_ENOMEM
 * when a merge found no room. */
static int hold(struct coarse *c, const struct ga_agg *s, size_t len, int64_t g, int64_t ts,
                int part)
{
    struct coarse_part *cp = &c->part[part];
    struct coarse_ent *e = find(c, cp, s->metric, g);
    if (e && ts < e->ts)
        return out_add(c, s, len) == 0;          /* a late point's bucket: not the newest */
    if (e && ts > e->ts) {
        if (out_add(c, cp->pool + e->off, e->len) < 0)
            return 0;
    } else if (e) {
        c->replaced++;
        if (!same_shape(cp->pool + e->off, e->len, s, len)) {
            size_t n = merge(c, cp, e, s, len);
            if (ga_grow((void **)&cp->pool, &cp->cap_pool, cp->npool + n, sizeof *cp->pool, 1024) < 0)
                return GA_ENOMEM;
            e->off = (uint32_t)cp->npool;
            cp->npool += n;
            e->len = (uint32_t)n;
            memcpy(cp->pool + e->off, c->scratch, n * sizeof *s);
            return 1;
        }
    }
    if (!e) {
        if (ga_grow((void **)&cp->e, &cp->cap, cp->n + 1, sizeof *cp->e, 256) < 0)
            return GA_ENOMEM;
        e = &cp->e[cp->n++];
        *e = (struct coarse_ent){ .metric = s->metric, .next = c->head[s->metric], .granularity_ns = g };
        c->head[s->metric] = (uint32_t)cp->n;
        c->held++;
    }
    if (!(e->len == len && e->ts == ts)) {       /* a new place in the pool */
        if (ga_grow((void **)&cp->pool, &cp->cap_pool, cp->npool + len, sizeof *cp->pool, 1024) < 0)
            return GA_ENOMEM;
        e->off = (uint32_t)cp->npool;
        cp->npool += len;
    }
    e->ts = ts;
    e->len = (uint32_t)len;
    memcpy(cp->pool + e->off, s, len * sizeof *s);
    return 1;
}

int coarse_take(struct coarse *c, struct ga_result *r, const struct coarse_src *src)
{
    /* the metrics' heads first; entries and slots grow as they come, and a
     * bucket that finds no room fails the take (GA_ENOMEM) */
    uint32_t top = 0;
    for (size_t i = 0; i < r->naggs; i += ga_agg_span(&r->aggs[i]))
        top = r->aggs[i].metric > top ? r->aggs[i].metric : top;
    if (r->naggs &&
        ga_grow_zero((void **)&c->head, &c->head_cap, (size_t)top + 1, sizeof *c->head, 4096) < 0)
        return GA_ENOMEM;
    if (!c->scratch && !(c->scratch = malloc(2 * SCRATCH_ROWS * sizeof *c->scratch)))
        return GA_ENOMEM;
    size_t k = 0, rows_moved = 0;
    uint32_t last_metric = UINT32_MAX;
    int64_t finest = 0;
    int part = 0;
    for (size_t i = 0; i < r->naggs;) {
        /* a bucket's run: its row or record and the rows of its other
         * methods, which follow it (engine.h) */
        const struct ga_agg *a = &r->aggs[i];
        int64_t g, ts;
        ga_agg_bucket(a, &g, &ts);
        size_t j = i + ga_agg_span(a);
        for (; j < r->naggs && r->aggs[j].metric == a->metric; j += ga_agg_span(&r->aggs[j])) {
            int64_t g2, ts2;
            ga_agg_bucket(&r->aggs[j], &g2, &ts2);
            if (g2 != g || ts2 != ts)
                break;
        }
        j = j > r->naggs ? r->naggs : j;
        if (a->metric != last_metric) {
            last_metric = a->metric;
            finest = src->finest_ns(src->ctx, a->metric);
            part = src->part(src->ctx, a->metric);
        }
        int held = g > finest ? hold(c, a, j - i, g, ts, part) : 0;
        if (held < 0)
            return GA_ENOMEM;
        if (held) {
            rows_moved += ga_aggs_count(a, j - i);
        } else {
            if (k != i)
                memmove(&r->aggs[k], a, (j - i) * sizeof *a);
            k += j - i;
        }
        i = j;
    }
    r->naggs = k;
    r->nrows = r->nrows >= rows_moved ? r->nrows - rows_moved : 0;
    return 0;
}

int coarse_drain(struct coarse *c, uint64_t mask)
{
    size_t need = 0;
    for (int p = 0; p < GA_PARTITIONS; p++)
        if (!mask || (mask >> p & 1))
            need += c->part[p].npool;
    if (!need)
        return 0;
    if (ga_grow((void **)&c->out, &c->cap_out, c->nout + need, sizeof *c->out, 4096) < 0)
        return GA_ENOMEM;
    for (int p = 0; p < GA_PARTITIONS; p++) {
        struct coarse_part *cp = &c->part[p];
        if ((mask && !(mask >> p & 1)) || !cp->n)
            continue;
        for (size_t i = 0; i < cp->n; i++) {
            out_add(c, cp->pool + cp->e[i].off, cp->e[i].len);   /* room made above */
            c->head[cp->e[i].metric] = 0;
        }
        c->held -= cp->n;
        cp->n = cp->npool = 0;
    }
    return 0;
}

void coarse_out_clear(struct coarse *c)
{
    c->nout = 0;
    c->out_rows = 0;
}

void coarse_free(struct coarse *c)
{
    for (int p = 0; p < GA_PARTITIONS; p++) {
        free(c->part[p].e);
        free(c->part[p].pool);
    }
    free(c->head);
    free(c->out);
    free(c->scratch);
    memset(c, 0, sizeof *c);
}
