/* pg_isolate.c — find and take out the rows the database refuses (see
 * pg_isolate.h). */
#include "storage/pg_isolate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "storage/pg_util.h"

/* An item: every row of one kind (enum pg_batch_reject_kind) of one metric. */
struct item {
    uint32_t metric;
    uint32_t kind;
};

struct iso {
    struct pg_batch *b;
    struct item *items;
    size_t n;
    uint8_t *bad;                    /* per item: refused */
    uint32_t *why;                   /* per bad item: index into b->errors */
    struct pg_batch sub;            /* arrays owned here; names, snapshots borrowed */
    pg_isolate_probe_fn probe;
    void *ctx;
    int probes;
    char *err;
    size_t errlen;
};

static int item_cmp(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    if (a->metric != b->metric)
        return a->metric < b->metric ? -1 : 1;
    return (a->kind > b->kind) - (a->kind < b->kind);
}

/* Index of (metric, kind) among the items. */
static size_t item_ix(const struct iso *s, uint32_t metric, uint32_t kind)
{
    struct item k = { metric, kind };
    const struct item *f = bsearch(&k, s->items, s->n, sizeof k, item_cmp);
    return f ? (size_t)(f - s->items) : s->n;
}

static int collect(struct iso *s)
{
    const struct pg_batch *b = s->b;
    size_t cap = b->naggs + b->nlate + b->ndefs + b->ncounts + b->nwindows, n = 0;
    if (!(s->items = malloc((cap ? cap : 1) * sizeof *s->items)))
        return GA_ENOMEM;
    for (size_t i = 0; i < b->naggs; i++)
        if (!i || b->aggs[i].metric != b->aggs[i - 1].metric)
            s->items[n++] = (struct item){ b->aggs[i].metric, PG_BATCH_REJ_BUCKET };
    for (size_t i = 0; i < b->nlate; i++)
        s->items[n++] = (struct item){ b->late[i].metric, PG_BATCH_REJ_LATE };
    for (size_t i = 0; i < b->ndefs; i++)
        s->items[n++] = (struct item){ b->defs[i].id, PG_BATCH_REJ_DEF };
    for (size_t i = 0; i < b->ncounts; i++)
        s->items[n++] = (struct item){ b->counts[i].metric, PG_BATCH_REJ_WINDOW };
    for (size_t i = 0; i < b->nwindows; i++)
        s->items[n++] = (struct item){ b->windows[i].metric, PG_BATCH_REJ_WINDOW };
    qsort(s->items, n, sizeof *s->items, item_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || item_cmp(&s->items[u - 1], &s->items[i]) != 0)
            s->items[u++] = s->items[i];
    s->n = u;
    s->bad = calloc(u ? u : 1, 1);
    s->why = calloc(u ? u : 1, sizeof *s->why);
    struct pg_batch *t = &s->sub;
    t->aggs = malloc((b->naggs ? b->naggs : 1) * sizeof *t->aggs);
    t->late = malloc((b->nlate ? b->nlate : 1) * sizeof *t->late);
    t->defs = malloc((b->ndefs ? b->ndefs : 1) * sizeof *t->defs);
    t->counts = malloc((b->ncounts ? b->ncounts : 1) * sizeof *t->counts);
    t->windows = malloc((b->nwindows ? b->nwindows : 1) * sizeof *t->windows);
    if (!s->bad || !s->why || !t->aggs || !t->late || !t->defs || !t->counts || !t->windows)
        return GA_ENOMEM;
    return 0;
}

static int in(const struct iso *s, size_t ix, size_t lo, size_t hi)
{
    return ix >= lo && ix < hi;
}

/* The sub-batch of the items [lo, hi), with every policy and position. */
static void build(struct iso *s, size_t lo, size_t hi)
{
    const struct pg_batch *b = s->b;
    struct pg_batch *t = &s->sub;
    t->naggs = t->nlate = t->ndefs = t->ncounts = t->nwindows = 0;
    for (size_t i = 0; i < b->naggs; i++)
        if (in(s, item_ix(s, b->aggs[i].metric, PG_BATCH_REJ_BUCKET), lo, hi))
            t->aggs[t->naggs++] = b->aggs[i];
    for (size_t i = 0; i < b->nlate; i++)
        if (in(s, item_ix(s, b->late[i].metric, PG_BATCH_REJ_LATE), lo, hi))
            t->late[t->nlate++] = b->late[i];
    for (size_t i = 0; i < b->ndefs; i++)
        if (in(s, item_ix(s, b->defs[i].id, PG_BATCH_REJ_DEF), lo, hi))
            t->defs[t->ndefs++] = b->defs[i];
    for (size_t i = 0; i < b->ncounts; i++)
        if (in(s, item_ix(s, b->counts[i].metric, PG_BATCH_REJ_WINDOW), lo, hi))
            t->counts[t->ncounts++] = b->counts[i];
    for (size_t i = 0; i < b->nwindows; i++)
        if (in(s, item_ix(s, b->windows[i].metric, PG_BATCH_REJ_WINDOW), lo, hi))
            t->windows[t->nwindows++] = b->windows[i];
    t->policies = b->policies;
    t->npolicies = b->npolicies;
    memcpy(t->part_lsn, b->part_lsn, sizeof t->part_lsn);
    t->has_windows = b->has_windows;
    t->lsn = b->lsn;
}

/* Probe the items [lo, hi): 1 refused (data), 0 taken, < 0 another error
 * (in s->err). */
static int try_range(struct iso *s, size_t lo, size_t hi, char *why, size_t whylen)
{
    if (s->probes >= PG_ISOLATE_MAX_PROBES) {
        snprintf(s->err, s->errlen, "isolation gave up after %d probe transactions", s->probes);
        return GA_EDB;
    }
    s->probes++;
    build(s, lo, hi);
    int rc = s->probe(s->ctx, &s->sub, why, whylen);
    if (rc == 0)
        return 0;
    if (rc == GA_EDB && pg_util_data_error(why))
        return 1;
    snprintf(s->err, s->errlen, "%s", why);
    return rc;
}

/* [lo, hi) is refused (probed, or its parent was refused and its sibling
 * taken).  Mark its refused items; a single item is always probed alone,
 * for its own message. */
static int bisect(struct iso *s, size_t lo, size_t hi)
{
    char why[512];
    int rc;
    if (hi - lo == 1) {
        if ((rc = try_range(s, lo, hi, why, sizeof why)) < 0)
            return rc;
        if (rc == 1) {
            s->bad[lo] = 1;
            if (pg_batch_add_error(s->b, why, &s->why[lo]))
                return GA_ENOMEM;
        }
        return 0;
    }
    size_t mid = lo + (hi - lo) / 2;
    if ((rc = try_range(s, lo, mid, why, sizeof why)) < 0)
        return rc;
    if (rc == 1) {
        if ((rc = bisect(s, lo, mid)) < 0)
            return rc;
        /* the right half may be refused as well */
        if ((rc = try_range(s, mid, hi, why, sizeof why)) < 0)
            return rc;
        return rc == 1 ? bisect(s, mid, hi) : 0;
    }
    return bisect(s, mid, hi);
}

static int reject(struct iso *s, uint32_t metric, uint32_t kind, const struct pg_batch_reject *r)
{
    size_t ix = item_ix(s, metric, kind);
    if (ix >= s->n || !s->bad[ix])
        return 0;
    struct pg_batch_reject x = *r;
    x.metric = metric;
    x.kind = (uint8_t)kind;
    x.error = s->why[ix];
    return pg_batch_add_reject(s->b, &x) ? GA_ENOMEM : 1;
}

/* Move the rows of the bad items to b->rejects; compact b. */
static int take_out(struct iso *s, size_t *nrej)
{
    struct pg_batch *b = s->b;
    size_t before = b->nrejects, k;
    /* record everything first: on GA_ENOMEM b is left as it was */
    for (size_t i = 0; i < b->naggs; i++) {
        const struct ga_agg *a = &b->aggs[i];
        struct pg_batch_reject x = { .method = (int16_t)a->method, .granularity_ns = a->granularity_ns,
                                .ts = a->ts, .value = a->value, .has_value = 1 };
        if (reject(s, a->metric, PG_BATCH_REJ_BUCKET, &x) < 0)
            goto oom;
    }
    for (size_t i = 0; i < b->nlate; i++) {
        struct pg_batch_reject x = { .method = -1, .ts = b->late[i].ts, .value = b->late[i].value,
                                .has_value = 1 };
        if (reject(s, b->late[i].metric, PG_BATCH_REJ_LATE, &x) < 0)
            goto oom;
    }
    for (size_t i = 0; i < b->ndefs; i++) {
        struct pg_batch_reject x = { .method = -1 };
        if (reject(s, b->defs[i].id, PG_BATCH_REJ_DEF, &x) < 0)
            goto oom;
    }
    for (size_t i = 0; i < b->ncounts; i++) {
        struct pg_batch_reject x = { .method = -1, .value = (double)b->counts[i].points,
                                .has_value = 1 };
        if (reject(s, b->counts[i].metric, PG_BATCH_REJ_WINDOW, &x) < 0)
            goto oom;
    }
    for (size_t i = 0; i < b->nwindows; i++) {
        struct pg_batch_reject x = { .method = -1 };
        if (reject(s, b->windows[i].metric, PG_BATCH_REJ_WINDOW, &x) < 0)
            goto oom;
    }
#define BAD(m, kind) (s->bad[item_ix(s, (m), (kind))])
    k = 0;
    for (size_t i = 0; i < b->naggs; i++)
        if (!BAD(b->aggs[i].metric, PG_BATCH_REJ_BUCKET))
            b->aggs[k++] = b->aggs[i];
    b->naggs = k;
    k = 0;
    for (size_t i = 0; i < b->nlate; i++)
        if (!BAD(b->late[i].metric, PG_BATCH_REJ_LATE))
            b->late[k++] = b->late[i];
    b->nlate = k;
    k = 0;
    for (size_t i = 0; i < b->ndefs; i++) {
        if (BAD(b->defs[i].id, PG_BATCH_REJ_DEF))
            free(b->defs[i].name);
        else
            b->defs[k++] = b->defs[i];
    }
    b->ndefs = k;
    k = 0;
    for (size_t i = 0; i < b->ncounts; i++)
        if (!BAD(b->counts[i].metric, PG_BATCH_REJ_WINDOW))
            b->counts[k++] = b->counts[i];
    b->ncounts = k;
    k = 0;
    for (size_t i = 0; i < b->nwindows; i++) {
        if (BAD(b->windows[i].metric, PG_BATCH_REJ_WINDOW))
            free(b->windows[i].snap), free(b->windows[i].tail);
        else
            b->windows[k++] = b->windows[i];
    }
    b->nwindows = k;
#undef BAD
    *nrej = b->nrejects - before;
    return 0;
oom:
    b->nrejects = before;
    return GA_ENOMEM;
}

int pg_isolate(struct pg_batch *b, pg_isolate_probe_fn probe, void *ctx, struct pg_isolate_result *res,
                char *err, size_t errlen)
{
    struct iso s = { .b = b, .probe = probe, .ctx = ctx, .err = err, .errlen = errlen };
    struct pg_isolate_result r = { 0 };
    size_t nerrors = b->nerrors;
    char why[512];
    int rc = collect(&s);
    if (rc < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r.items = s.n;
    /* without any item (policies and positions only) it must pass */
    if ((rc = try_range(&s, 0, 0, why, sizeof why)) != 0) {
        if (rc == 1) {
            snprintf(err, errlen, "refused without any metric's rows: %s", why);
            rc = GA_EDB;
        }
        goto out;
    }
    if (s.n && (rc = bisect(&s, 0, s.n)) < 0)
        goto out;
    for (size_t i = 0; i < s.n; i++)
        if (s.bad[i] && !r.bad_items++)
            r.first_metric = s.items[i].metric;
    if (!r.bad_items) {
        snprintf(err, errlen, "every metric's rows pass alone");
        rc = GA_EDB;
        goto out;
    }
    if ((rc = take_out(&s, &r.rejected)) < 0)
        snprintf(err, errlen, "out of memory");
out:
    if (rc < 0)
        b->nerrors = nerrors;        /* the errors of a failed isolation */
    r.probes = s.probes;
    if (res)
        *res = r;
    free(s.items);
    free(s.bad);
    free(s.why);
    free(s.sub.aggs);
    free(s.sub.late);
    free(s.sub.defs);
    free(s.sub.counts);
    free(s.sub.windows);
    return rc;
}
