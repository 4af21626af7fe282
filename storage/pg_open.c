/* pg_open.c — open buckets packed into blocks (see pg_open.h,
 * docs/STORAGE.md "Open buckets"). */
#include "storage/pg_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/grow.h"
#include "proto/base/hash.h"
#include "proto/ga_err.h"
#include "storage/pg_util.h"

#define NO_ENT UINT32_MAX

static uint64_t pair_hash(uint32_t metric, int64_t g)
{
    return ga_hash_fmix64((uint64_t)g ^ ga_hash_fmix64((uint64_t)metric + 1));
}

static uint64_t metric_hash(uint32_t metric)
{
    return ga_hash_fmix64((uint64_t)metric);
}

static int vals_alloc(struct pg_open_vals *x, size_t n)
{
    x->v = malloc((n ? n : 1) * (sizeof *x->v + sizeof *x->m));
    if (!x->v)
        return GA_ENOMEM;
    x->m = (ga_method_t *)(x->v + n);
    x->n = (uint16_t)n;
    x->mset = -1;
    return 0;
}

static void vals_free(struct pg_open_vals *x)
{
    free(x->v);
    x->v = NULL;
    x->m = NULL;
    x->n = 0;
}

/* The values of a bucket's rows r[0..n) (methods ascending). */
static int vals_of_rows(struct pg_open_vals *x, const struct ga_agg *r, size_t n)
{
    if (vals_alloc(x, n) < 0)
        return GA_ENOMEM;
    for (size_t k = 0; k < n; k++)
        x->m[k] = r[k].method, x->v[k] = r[k].value;
    return 0;
}

/* x with rows r[0..n) merged in: the union of the methods, the rows'
 * values where both have one (as Gnocchi merges a rewritten split). */
static int vals_merge(struct pg_open_vals *x, const struct ga_agg *r, size_t n)
{
    size_t u = 0;
    for (size_t i = 0, k = 0; i < x->n || k < n; u++) {
        ga_method_t m = k == n || (i < x->n && x->m[i] < r[k].method) ? x->m[i] : r[k].method;
        i += i < x->n && x->m[i] == m;
        k += k < n && r[k].method == m;
    }
    struct pg_open_vals y;
    if (vals_alloc(&y, u) < 0)
        return GA_ENOMEM;
    u = 0;
    for (size_t i = 0, k = 0; i < x->n || k < n; u++) {
        ga_method_t m = k == n || (i < x->n && x->m[i] < r[k].method) ? x->m[i] : r[k].method;
        y.m[u] = m;
        if (k < n && r[k].method == m)
            y.v[u] = r[k].value;
        else
            y.v[u] = x->v[i];
        i += i < x->n && x->m[i] == m;
        k += k < n && r[k].method == m;
    }
    vals_free(x);
    *x = y;
    return 0;
}

static int vals_copy(struct pg_open_vals *y, const struct pg_open_vals *x)
{
    if (vals_alloc(y, x->n) < 0)
        return GA_ENOMEM;
    memcpy(y->v, x->v, x->n * sizeof *x->v);
    memcpy(y->m, x->m, x->n * sizeof *x->m);
    y->mset = x->mset;
    return 0;
}

int pg_open_init(struct pg_open *o, size_t max)
{
    memset(o, 0, sizeof *o);
    o->max = max;
    o->most_entries = 2;
    for (int p = 0; p < GA_PARTITIONS; p++)
        o->fill[p] = -1;
    return 0;
}

static void forget_all(struct pg_open *o)
{
    for (size_t i = 0; i < o->nent; i++)
        vals_free(&o->ent[i].cur);
    for (size_t i = 0; i < o->npend; i++)
        vals_free(&o->pend[i].val);
    for (size_t i = 0; i < o->nblk; i++)
        free(o->blk[i].ent);
    o->nent = o->nblk = o->npend = o->ndirty = o->nnewp = o->nplaced = 0;
    ga_hmap_clear(&o->pair_ix);
    ga_hmap_clear(&o->metric_ix);
    ga_hmap_clear(&o->new_ix);
    ga_hmap_clear(&o->newm_ix);
    for (int p = 0; p < GA_PARTITIONS; p++)
        o->fill[p] = -1, o->next_no[p] = 0;
}

void pg_open_free(struct pg_open *o)
{
    forget_all(o);
    free(o->ent);
    free(o->blk);
    free(o->pend);
    free(o->dirty);
    free(o->newp);
    free(o->placed);
    ga_hmap_free(&o->pair_ix);
    ga_hmap_free(&o->metric_ix);
    ga_hmap_free(&o->new_ix);
    ga_hmap_free(&o->newm_ix);
    memset(o, 0, sizeof *o);
}

static int64_t find_ent(const struct pg_open *o, uint32_t metric, int64_t g)
{
    struct ga_hmap_it it = ga_hmap_find(&o->pair_ix, pair_hash(metric, g));
    uint32_t v;
    while (ga_hmap_next(&it, &v))
        if (o->ent[v].metric == metric && o->ent[v].granularity_ns == g)
            return v;
    return -1;
}

int pg_open_has(const struct pg_open *o, uint32_t metric, int64_t granularity_ns)
{
    return o->nent && find_ent(o, metric, granularity_ns) >= 0;
}

/* The block of metric's committed entries, or -1. */
static int64_t metric_blk(const struct pg_open *o, uint32_t metric)
{
    struct ga_hmap_it it = ga_hmap_find(&o->metric_ix, metric_hash(metric));
    uint32_t v;
    while (ga_hmap_next(&it, &v)) {
        const struct pg_open_blk *b = &o->blk[v];
        for (uint32_t k = 0; k < b->n; k++)
            if (o->ent[b->ent[k]].metric == metric)
                return v;
    }
    return -1;
}

/* The block the pending batch placed metric in, or -1. */
static int64_t placed_blk(const struct pg_open *o, uint32_t metric)
{
    struct ga_hmap_it it = ga_hmap_find(&o->newm_ix, metric_hash(metric));
    uint32_t v;
    while (ga_hmap_next(&it, &v))
        if (o->placed[v].metric == metric)
            return o->placed[v].blk;
    return -1;
}

static int blk_reserve(struct pg_open_blk *b, uint32_t need)
{
    if (need <= b->cap)
        return 0;
    uint32_t cap = b->cap ? b->cap : 8;
    while (cap < need)
        cap *= 2;
    uint32_t *e = realloc(b->ent, cap * sizeof *e);
    if (!e)
        return GA_ENOMEM;
    b->ent = e;
    b->cap = cap;
    return 0;
}

/* ---- loading ------------------------------------------------------------- */

static const char load_sql[] =
    "SELECT o.id, u.metric, u.granularity, u.ts, u.mset, s.methods,\n"
    "       o.vals[u.off + 1 : coalesce(o.offs[(u.i + 1)::int], cardinality(o.vals))]\n"
    "  FROM open_blocks o\n"
    "  CROSS JOIN LATERAL unnest(o.metrics, o.msets, o.grans, o.tss, o.offs)\n"
    "       WITH ORDINALITY u(metric, mset, granularity, ts, off, i)\n"
    "  LEFT JOIN method_sets s ON s.id = u.mset\n"
    " WHERE o.id >= $1::int8 AND o.id < $2::int8\n"
    " ORDER BY o.id, u.i";

/* A one-dimensional binary array without NULLs of elen-byte elements of
 * type oid: its count and first element, or -1. */
static int arr_open(const char *p, int len, uint32_t oid, int elen, size_t *n, const char **first)
{
    if (len < 12)
        return -1;
    int32_t ndim = pg_util_get_i32(p);
    if (ndim == 0) {
        *n = 0;
        *first = p;
        return 0;
    }
    if (ndim != 1 || len < 20 || (uint32_t)pg_util_get_i32(p + 8) != oid)
        return -1;
    int32_t cnt = pg_util_get_i32(p + 12);
    if (cnt < 0 || (size_t)len != 20 + (size_t)cnt * (size_t)(4 + elen))
        return -1;
    *n = (size_t)cnt;
    *first = p + 20;
    return 0;
}

static int new_blk(struct pg_open *o, int64_t id, uint8_t stored)
{
    if (ga_grow((void **)&o->blk, &o->cap_blk, o->nblk + 1, sizeof *o->blk, 64) < 0)
        return GA_ENOMEM;
    o->blk[o->nblk] = (struct pg_open_blk){ .id = id, .stored = stored };
    return (int)o->nblk++;
}

/* Entry (metric, g, ts, val) appended to block bi; room reserved. */
static void add_ent(struct pg_open *o, uint32_t bi, uint32_t metric, int64_t g, int64_t ts,
                    struct pg_open_vals val)
{
    uint32_t e = (uint32_t)o->nent++;
    o->ent[e] = (struct pg_open_ent){ .metric = metric, .blk = bi, .granularity_ns = g, .ts = ts,
                                  .cur = val };
    ga_hmap_put(&o->pair_ix, NULL, pair_hash(metric, g), e);
    struct pg_open_blk *b = &o->blk[bi];
    b->ent[b->n++] = e;
    b->bytes += PG_OPEN_ENTRY_BYTES + 8u * val.n;
    uint32_t mine = 0;
    for (uint32_t k = 0; k < b->n; k++)
        mine += o->ent[b->ent[k]].metric == metric;
    if (mine > o->most_entries)
        o->most_entries = mine;
    if (val.n > o->most_vals)
        o->most_vals = val.n;
}

static int reserve_ents(struct pg_open *o, size_t more)
{
    if (ga_grow((void **)&o->ent, &o->cap_ent, o->nent + more, sizeof *o->ent, 1024) < 0 ||
        ga_hmap_reserve(&o->pair_ix, o->nent + more) < 0)
        return GA_ENOMEM;
    return 0;
}

static int load_part(struct pg_open *o, PGconn *c, int p, char *err, size_t errlen)
{
    char lo[24], hi[24];
    snprintf(lo, sizeof lo, "%lld", (long long)((int64_t)p << 32));
    snprintf(hi, sizeof hi, "%lld", (long long)((int64_t)(p + 1) << 32));
    const char *vals[2] = { lo, hi };
    PGresult *r = PQexecParams(c, load_sql, 2, NULL, vals, NULL, NULL, 1);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_util_result_error(err, errlen, c, r);
        rc = PQstatus(c) == CONNECTION_OK ? GA_EDB : GA_EIO;
        goto out;
    }
    int nr = PQntuples(r);
    if ((rc = reserve_ents(o, (size_t)nr)) < 0)
        goto nomem;
    int64_t last_id = -1;
    int bi = -1;
    for (int i = 0; i < nr; i++) {
        for (int col = 1; col < 7; col++) {
            /* arrays of unequal lengths (unnest pads them with NULLs), a
             * method set that is not there: a block this daemon did not
             * write */
            if (PQgetisnull(r, i, col)) {
                snprintf(err, errlen, "open block %lld is damaged: entry %d has no %s",
                         (long long)pg_util_get_i64(PQgetvalue(r, i, 0)), i,
                         col == 5 ? "registered method set" : "value in every array");
                rc = GA_EPROTO;
                goto out;
            }
        }
        int64_t id = pg_util_get_i64(PQgetvalue(r, i, 0));
        uint32_t metric = (uint32_t)pg_util_get_i32(PQgetvalue(r, i, 1));
        int64_t g = pg_util_get_i64(PQgetvalue(r, i, 2)), ts = pg_util_get_i64(PQgetvalue(r, i, 3));
        int32_t mset = pg_util_get_i32(PQgetvalue(r, i, 4));
        size_t nm = 0, nv = 0;
        const char *pm = NULL, *pv = NULL;
        if (arr_open(PQgetvalue(r, i, 5), PQgetlength(r, i, 5), PG_UTIL_INT2OID, 2, &nm, &pm) < 0 ||
            arr_open(PQgetvalue(r, i, 6), PQgetlength(r, i, 6), PG_UTIL_FLOAT8OID, 8, &nv, &pv) < 0 ||
            nm != nv || nm > GA_POLICY_MAX_METHODS || (id >> 32) != p) {
            snprintf(err, errlen, "open block %lld is damaged: entry of metric %u has %zu "
                     "methods and %zu values", (long long)id, metric, nm, nv);
            rc = GA_EPROTO;
            goto out;
        }
        if (id != last_id) {
            if ((bi = new_blk(o, id, 1)) < 0)
                goto nomem;
            last_id = id;
            uint32_t no = (uint32_t)id;
            if (no >= o->next_no[p])
                o->next_no[p] = no + 1;
            o->fill[p] = bi;
        }
        if (blk_reserve(&o->blk[bi], o->blk[bi].n + 1) < 0)
            goto nomem;
        struct pg_open_vals x;
        if (vals_alloc(&x, nm) < 0)
            goto nomem;
        for (size_t k = 0; k < nm; k++) {
            const unsigned char *q = (const unsigned char *)pm + k * 6 + 4;
            x.m[k] = (ga_method_t)(q[0] << 8 | q[1]);
            x.v[k] = pg_util_get_f64(pv + k * 12 + 4);
        }
        x.mset = mset;
        if (find_ent(o, metric, g) >= 0) {
            vals_free(&x);
            snprintf(err, errlen, "open block %lld: metric %u granularity %lld held twice",
                     (long long)id, metric, (long long)g);
            rc = GA_EPROTO;
            goto out;
        }
        if (metric_blk(o, metric) < 0 &&
            (rc = ga_hmap_put(&o->metric_ix, NULL, metric_hash(metric), (uint32_t)bi)) < 0) {
            vals_free(&x);
            goto nomem;
        }
        add_ent(o, (uint32_t)bi, metric, g, ts, x);
    }
    goto out;
nomem:
    snprintf(err, errlen, "out of memory loading open blocks");
    rc = GA_ENOMEM;
out:
    PQclear(r);
    return rc;
}

int pg_open_load(struct pg_open *o, PGconn *c, uint64_t parts, char *err, size_t errlen)
{
    forget_all(o);
    for (int p = 0; p < GA_PARTITIONS; p++) {
        if (parts && !(parts >> p & 1))
            continue;
        int rc = load_part(o, c, p, err, errlen);
        if (rc < 0) {
            forget_all(o);
            return rc;
        }
    }
    o->st.entries = o->nent;
    o->st.blocks = o->nblk;
    return 0;
}

/* ---- routing a batch ----------------------------------------------------- */

/* End of the bucket starting at a[i]: its rows are adjacent (pg_batch_sort). */
static size_t run_end(const struct ga_agg *a, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && a[j].metric == a[i].metric && a[j].ts == a[i].ts &&
           a[j].granularity_ns == a[i].granularity_ns)
        j++;
    return j;
}

static int64_t find_new(const struct pg_open *o, uint32_t metric, int64_t g)
{
    struct ga_hmap_it it = ga_hmap_find(&o->new_ix, pair_hash(metric, g));
    uint32_t v;
    while (ga_hmap_next(&it, &v))
        if (o->pend[v].metric == metric && o->pend[v].granularity_ns == g)
            return v;
    return -1;
}

struct rows_out {
    struct ga_agg *a;
    size_t n, cap;
};

static int out_rows(struct rows_out *r, const struct ga_agg *a, size_t n)
{
    if (ga_grow((void **)&r->a, &r->cap, r->n + n, sizeof *r->a, 1024) < 0)
        return GA_ENOMEM;
    for (size_t k = 0; k < n; k++) {
        r->a[r->n] = a[k];
        r->a[r->n++].aux = 0;
    }
    return 0;
}

/* The rows of a bucket that closed: it goes to `buckets`. */
static int out_closed(struct pg_open *o, struct rows_out *r, uint32_t metric, int64_t g, int64_t ts,
                      const struct pg_open_vals *x)
{
    if (ga_grow((void **)&r->a, &r->cap, r->n + x->n, sizeof *r->a, 1024) < 0)
        return GA_ENOMEM;
    for (size_t k = 0; k < x->n; k++)
        r->a[r->n++] = (struct ga_agg){ .metric = metric, .method = x->m[k],
                                        .granularity_ns = g, .ts = ts, .value = x->v[k] };
    o->pend_closed++;
    return 0;
}

static int mark_dirty(struct pg_open *o, uint32_t bi)
{
    if (o->blk[bi].dirty)
        return 0;
    if (ga_grow((void **)&o->dirty, &o->cap_dirty, o->ndirty + 1, sizeof *o->dirty, 256) < 0)
        return GA_ENOMEM;
    o->blk[bi].dirty = 1;
    o->dirty[o->ndirty++] = bi;
    return 0;
}

static int new_pend(struct pg_open *o, uint32_t ent, uint32_t metric, uint32_t blk, int64_t g)
{
    if (ga_grow((void **)&o->pend, &o->cap_pend, o->npend + 1, sizeof *o->pend, 1024) < 0)
        return GA_ENOMEM;
    o->pend[o->npend] = (struct pg_open_pend){ .ent = ent, .metric = metric, .blk = blk,
                                           .granularity_ns = g };
    return (int)o->npend++;
}

/* What a metric new to the blocks will take in its block: its policy's
 * archives and methods where b defines it, else as many open buckets as
 * any metric had and as many values as any bucket (at least this one's). */
static uint32_t metric_bytes(const struct pg_open *o, const struct pg_batch *b, uint32_t metric,
                             size_t nvals)
{
    const struct ga_policy *p = b->ndefs ? pg_batch_def_policy(b, metric) : NULL;
    uint32_t entries = p ? (uint32_t)p->ndefs : o->most_entries;
    size_t vals = p ? (size_t)p->nmethods : (nvals > o->most_vals ? nvals : o->most_vals);
    return entries * (uint32_t)(PG_OPEN_ENTRY_BYTES + 8 * vals);
}

/* The block a new pair of metric goes to (its metric's, or the
 * partition's filling one, or a new one), with room for it; -1 when out of
 * memory.  need: what a metric new to the blocks takes (metric_bytes),
 * counted in the block's bytes_new when it is placed, so that its other
 * open buckets, routed later in the batch, find their room kept. */
static int64_t place(struct pg_open *o, uint32_t metric, int part, uint32_t need)
{
    int64_t bi = metric_blk(o, metric);
    if (bi < 0)
        bi = placed_blk(o, metric);
    uint32_t add = 0;                     /* a metric's later buckets were counted in need */
    if (bi < 0) {
        add = need;
        int32_t f = o->fill[part];
        if (f >= 0) {
            const struct pg_open_blk *b = &o->blk[f];
            if (b->bytes + b->bytes_new + need > PG_OPEN_BLOCK_BYTES)
                f = -1;
        }
        if (f < 0) {
            int nb = new_blk(o, (int64_t)part << 32 | o->next_no[part], 0);
            if (nb < 0)
                return -1;
            o->next_no[part]++;
            o->fill[part] = f = nb;
        }
        if (ga_grow((void **)&o->placed, &o->cap_placed, o->nplaced + 1, sizeof *o->placed, 256) < 0 ||
            ga_hmap_put(&o->newm_ix, NULL, metric_hash(metric), (uint32_t)o->nplaced) < 0)
            return -1;
        o->placed[o->nplaced++] = (struct pg_open_place){ metric, (uint32_t)f };
        bi = f;
    }
    struct pg_open_blk *b = &o->blk[bi];
    if (blk_reserve(b, b->n + b->nnew + 1) < 0)
        return -1;
    b->nnew++;
    b->bytes_new += add;
    return bi;
}

/* Undo what routing the pending batch did to o. */
static void abort_pending(struct pg_open *o)
{
    for (size_t i = 0; i < o->npend; i++) {
        if (o->pend[i].ent != NO_ENT)
            o->ent[o->pend[i].ent].pend = 0;
        vals_free(&o->pend[i].val);
    }
    for (size_t i = 0; i < o->nblk; i++)
        o->blk[i].dirty = 0, o->blk[i].nnew = 0, o->blk[i].bytes_new = 0;
    for (size_t i = o->nblk_before; i < o->nblk; i++)
        free(o->blk[i].ent);
    o->nblk = o->nblk_before;
    memcpy(o->fill, o->fill_before, sizeof o->fill);
    memcpy(o->next_no, o->no_before, sizeof o->next_no);
    o->npend = o->ndirty = o->nplaced = o->nnewp = 0;
    o->pend_closed = 0;
    ga_hmap_clear(&o->new_ix);
    ga_hmap_clear(&o->newm_ix);
}

/* One bucket, rows r[0..n), of a pair o holds or the batch made new:
 * pending state p (-1: none yet) over entry e (-1: none).  Returns 1 when
 * the bucket is taken, 0 when it stays a row, GA_ENOMEM. */
static int route_held(struct pg_open *o, struct rows_out *out, int64_t e, int64_t p,
                      const struct ga_agg *r, size_t n)
{
    int64_t cur = p >= 0 ? o->pend[p].ts : o->ent[e].ts;
    if (r->ts < cur)
        return 0;                                   /* an older bucket: a row */
    if (p < 0) {
        struct pg_open_ent *x = &o->ent[e];
        if ((p = new_pend(o, (uint32_t)e, x->metric, x->blk, x->granularity_ns)) < 0)
            return GA_ENOMEM;
        struct pg_open_pend *q = &o->pend[p];
        q->ts = x->ts;
        if (vals_copy(&q->val, &x->cur) < 0) {
            o->npend--;
            return GA_ENOMEM;
        }
        x->pend = (uint32_t)p + 1;
    }
    struct pg_open_pend *q = &o->pend[p];
    if (r->ts == q->ts) {
        if (vals_merge(&q->val, r, n) < 0)
            return GA_ENOMEM;
    } else {
        struct pg_open_vals y;
        if (out_closed(o, out, q->metric, q->granularity_ns, q->ts, &q->val) < 0 ||
            vals_of_rows(&y, r, n) < 0)
            return GA_ENOMEM;
        vals_free(&q->val);
        q->val = y;
        q->ts = r->ts;
    }
    return mark_dirty(o, q->blk) < 0 ? GA_ENOMEM : 1;
}

/* A bucket of a pair neither held nor new in this batch: a new entry when
 * it may be one.  1 taken, 0 a row, GA_ENOMEM. */
static int route_new(struct pg_open *o, const struct pg_batch *b, const struct pg_fresh_map *hw,
                     const struct ga_agg *r, size_t n)
{
    if (!r->aux || r->aux > GA_PARTITIONS || !o->max || !hw || !pg_fresh_known(hw, r) ||
        !pg_fresh(hw, r))
        return 0;
    if (o->nent + o->nnewp >= o->max) {
        o->st.full++;
        return 0;
    }
    int64_t bi = place(o, r->metric, r->aux - 1, metric_bytes(o, b, r->metric, n));
    if (bi < 0)
        return GA_ENOMEM;
    int p = new_pend(o, NO_ENT, r->metric, (uint32_t)bi, r->granularity_ns);
    if (p < 0)
        return GA_ENOMEM;
    struct pg_open_pend *q = &o->pend[p];
    q->ts = r->ts;
    if (vals_of_rows(&q->val, r, n) < 0) {
        o->npend--;
        return GA_ENOMEM;
    }
    if (ga_hmap_put(&o->new_ix, NULL, pair_hash(r->metric, r->granularity_ns), (uint32_t)p) < 0)
        return GA_ENOMEM;
    o->nnewp++;
    return mark_dirty(o, (uint32_t)bi) < 0 ? GA_ENOMEM : 1;
}

static int u64_order(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

int pg_open_route(struct pg_open *o, struct pg_batch *b, const struct pg_fresh_map *hw)
{
    if (!o->max && !o->nent)
        return 0;
    if (o->npend)
        return GA_EINVAL;                           /* the last batch never committed */
    o->nnewp = 0;
    o->nblk_before = o->nblk;
    memcpy(o->fill_before, o->fill, sizeof o->fill);
    memcpy(o->no_before, o->next_no, sizeof o->next_no);
    struct rows_out out = { 0 };
    int rc = 0;
    for (size_t i = 0, j; i < b->naggs && rc >= 0; i = j) {
        const struct ga_agg *r = &b->aggs[i];
        j = run_end(b->aggs, b->naggs, i);
        int64_t e = o->nent ? find_ent(o, r->metric, r->granularity_ns) : -1, p = -1;
        if (e >= 0)
            p = (int64_t)o->ent[e].pend - 1;
        else if (o->npend)
            p = find_new(o, r->metric, r->granularity_ns);
        rc = e >= 0 || p >= 0 ? route_held(o, &out, e, p, r, j - i) : route_new(o, b, hw, r, j - i);
        if (rc == 0)
            rc = out_rows(&out, r, j - i);
    }
    /* room for what pg_open_commit adds, so that it cannot fail */
    size_t nnew = 0;
    for (size_t i = 0; i < o->npend; i++)
        nnew += o->pend[i].ent == NO_ENT;
    if (rc >= 0 && (reserve_ents(o, nnew) < 0 ||
                    ga_hmap_reserve(&o->metric_ix, o->metric_ix.n + o->nplaced) < 0 ||
                    ga_grow((void **)&o->newp, &o->cap_newp, nnew, sizeof *o->newp, 256) < 0))
        rc = GA_ENOMEM;
    if (rc < 0) {
        abort_pending(o);
        free(out.a);
        return GA_ENOMEM;
    }
    /* the new entries by block (then in routing order), for the images */
    o->nnewp = 0;
    for (size_t i = 0; i < o->npend; i++)
        if (o->pend[i].ent == NO_ENT)
            o->newp[o->nnewp++] = (uint64_t)o->pend[i].blk << 32 | i;
    if (o->nnewp)                      /* newp may be NULL when nothing is new */
        qsort(o->newp, o->nnewp, sizeof *o->newp, u64_order);
    for (size_t k = 0; k < o->nnewp; k++)
        if (!k || o->newp[k - 1] >> 32 != o->newp[k] >> 32)
            o->blk[o->newp[k] >> 32].newfirst = (uint32_t)k;
    free(b->aggs);
    b->aggs = out.a;
    b->naggs = out.n;
    b->cap_aggs = out.cap;
    pg_batch_sort(b);
    return 0;
}

int64_t pg_open_placed_block(const struct pg_open *o, uint32_t metric)
{
    int64_t bi = o->nplaced ? placed_blk(o, metric) : -1;
    return bi < 0 ? -1 : o->blk[bi].id;
}

int pg_open_pending(const struct pg_open *o)
{
    return o->ndirty > 0;
}

void pg_open_commit(struct pg_open *o)
{
    for (size_t i = 0; i < o->npend; i++) {
        struct pg_open_pend *q = &o->pend[i];
        if (q->ent != NO_ENT) {
            struct pg_open_ent *x = &o->ent[q->ent];
            o->blk[x->blk].bytes += 8u * q->val.n;
            o->blk[x->blk].bytes -= 8u * x->cur.n;
            vals_free(&x->cur);
            x->cur = q->val;
            if (x->cur.n > o->most_vals)
                o->most_vals = x->cur.n;
            x->ts = q->ts;
            x->pend = 0;
        }
    }
    for (size_t k = 0; k < o->nnewp; k++) {
        struct pg_open_pend *q = &o->pend[(uint32_t)o->newp[k]];
        add_ent(o, q->blk, q->metric, q->granularity_ns, q->ts, q->val);
    }
    for (size_t k = 0; k < o->nplaced; k++)
        ga_hmap_put(&o->metric_ix, NULL, metric_hash(o->placed[k].metric), o->placed[k].blk);
    for (size_t k = 0; k < o->ndirty; k++) {
        struct pg_open_blk *bl = &o->blk[o->dirty[k]];
        bl->stored = 1, bl->dirty = 0, bl->nnew = 0, bl->bytes_new = 0;
    }
    o->st.written += o->npend;
    o->st.blocks_written += o->ndirty;
    o->st.closed += o->pend_closed;
    o->st.entries = o->nent;
    o->st.blocks = o->nblk;
    o->npend = o->ndirty = o->nplaced = o->nnewp = 0;
    o->pend_closed = 0;
    o->nblk_before = o->nblk;
    ga_hmap_clear(&o->new_ix);
    ga_hmap_clear(&o->newm_ix);
}

uint32_t pg_open_block_len(const struct pg_open *o, uint32_t blk)
{
    return o->blk[blk].n + o->blk[blk].nnew;
}

void pg_open_block_entry(const struct pg_open *o, uint32_t blk, uint32_t k, uint32_t *metric,
                     int64_t *granularity_ns, int64_t *ts, struct pg_open_vals **val)
{
    const struct pg_open_blk *b = &o->blk[blk];
    if (k < b->n) {
        struct pg_open_ent *x = &o->ent[b->ent[k]];
        *metric = x->metric;
        *granularity_ns = x->granularity_ns;
        if (x->pend) {
            struct pg_open_pend *q = &o->pend[x->pend - 1];
            *ts = q->ts;
            *val = &q->val;
        } else {
            *ts = x->ts;
            *val = &x->cur;
        }
        return;
    }
    struct pg_open_pend *q = &o->pend[(uint32_t)o->newp[b->newfirst + (k - b->n)]];
    *metric = q->metric;
    *granularity_ns = q->granularity_ns;
    *ts = q->ts;
    *val = &q->val;
}
