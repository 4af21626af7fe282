/* pg_batch.c — the coalescing batch (see pg_batch.h). */
#include "storage/pg_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/grow.h"
#include "proto/base/hash.h"
#include "proto/ga_err.h"
#include "storage/pg_schema.h"
#include "storage/pg_window.h"

static uint64_t agg_hash(const struct ga_agg *a)
{
    uint64_t h = ga_hash_fmix64((uint64_t)a->ts ^ ((uint64_t)a->metric << 16 | a->method));
    return ga_hash_fmix64(h ^ (uint64_t)a->granularity_ns);
}

static int agg_same(const struct ga_agg *a, const struct ga_agg *b)
{
    return a->ts == b->ts && a->metric == b->metric && a->method == b->method &&
           a->granularity_ns == b->granularity_ns;
}

/* The hash of a uint32 key of def_ix, count_ix, window_ix. */
static uint64_t id_hash(uint32_t id)
{
    return ga_hash_fmix64(id);
}

int pg_batch_has_def(const struct pg_batch *b, uint32_t id)
{
    struct ga_hmap_it it = ga_hmap_find(&b->def_ix, id_hash(id));
    uint32_t v;
    while (ga_hmap_next(&it, &v))
        if (b->defs[v].id == id)
            return 1;
    return 0;
}

const struct ga_policy *pg_batch_def_policy(const struct pg_batch *b, uint32_t id)
{
    struct ga_hmap_it it = ga_hmap_find(&b->def_ix, id_hash(id));
    uint32_t v;
    while (ga_hmap_next(&it, &v)) {
        if (b->defs[v].id != id)
            continue;
        for (size_t i = 0; i < b->npolicies; i++)
            if (!strcmp(b->policies[i].name, b->defs[v].policy))
                return &b->policies[i];
        return NULL;
    }
    return NULL;
}

/* Room reserved by merge_aggs. */
static void merge_agg(struct pg_batch *b, const struct ga_agg *a)
{
    uint64_t h = agg_hash(a);
    struct ga_hmap_it it = ga_hmap_find(&b->ix, h);
    uint32_t v;
    while (ga_hmap_next(&it, &v)) {
        if (agg_same(&b->aggs[v], a)) {
            b->aggs[v].value = a->value;
            return;
        }
    }
    ga_hmap_put(&b->ix, &it, h, (uint32_t)b->naggs);
    b->aggs[b->naggs++] = *a;
}

/* n slots of rows and wide records (engine.h): the batch keeps rows, each
 * with aux = its metric's partition + 1 where part (per slot) says it. */
static int merge_aggs(struct pg_batch *b, const struct ga_agg *aggs, const uint8_t *part,
                      size_t n)
{
    size_t rows = ga_aggs_count(aggs, n);
    if (b->naggs + rows > GA_HMAP_VALUE_MAX ||
        ga_grow((void **)&b->aggs, &b->cap_aggs, b->naggs + rows, sizeof *b->aggs, 64) < 0 ||
        ga_hmap_reserve(&b->ix, b->naggs + rows) < 0)
        return GA_ENOMEM;
    for (size_t i = 0; i < n;) {
        size_t span = ga_agg_span(&aggs[i]);
        if (span > n - i)
            break;                /* cut short: ga_aggs_count did not count it either */
        struct ga_agg one[GA_WIDE_MAX];
        size_t k = ga_agg_unpack(&aggs[i], n - i, one);   /* a row: itself */
        for (size_t j = 0; j < k; j++) {
            one[j].aux = part && part[i] < GA_PARTITIONS ? (uint16_t)(part[i] + 1) : 0;
            merge_agg(b, &one[j]);
        }
        i += span;
    }
    return 0;
}

/* Room reserved by reserve_unit. */
static void merge_policy(struct pg_batch *b, const struct ga_policy *p)
{
    for (size_t i = 0; i < b->npolicies; i++) {
        if (strcmp(b->policies[i].name, p->name) == 0) {
            b->policies[i] = *p;
            return;
        }
    }
    b->policies[b->npolicies++] = *p;
}

/* Takes ownership of name; room reserved by reserve_unit. */
static void merge_def(struct pg_batch *b, const struct pg_writer_metric_def *d, char *name)
{
    merge_policy(b, d->policy);
    struct ga_hmap_it it = ga_hmap_find(&b->def_ix, id_hash(d->id));
    uint32_t v;
    struct pg_batch_def *e = NULL;
    while (!e && ga_hmap_next(&it, &v))
        if (b->defs[v].id == d->id)
            e = &b->defs[v];
    if (e) {
        free(e->name);
    } else {
        ga_hmap_put(&b->def_ix, &it, id_hash(d->id), (uint32_t)b->ndefs);
        e = &b->defs[b->ndefs++];
    }
    e->id = d->id;
    e->name = name;
    memcpy(e->policy, d->policy->name, sizeof e->policy);
    e->policy[sizeof e->policy - 1] = '\0';
}

/* Room reserved by reserve_unit. */
static void merge_count(struct pg_batch *b, const struct pg_writer_count *c)
{
    struct ga_hmap_it it = ga_hmap_find(&b->count_ix, id_hash(c->metric));
    uint32_t v;
    while (ga_hmap_next(&it, &v)) {
        if (b->counts[v].metric == c->metric) {
            b->counts[v].points += c->points;
            return;
        }
    }
    ga_hmap_put(&b->count_ix, &it, id_hash(c->metric), (uint32_t)b->ncounts);
    b->counts[b->ncounts++] = *c;
}

static struct pg_batch_window *find_window(struct pg_batch *b, uint32_t metric,
                                      struct ga_hmap_it *it)
{
    *it = ga_hmap_find(&b->window_ix, id_hash(metric));
    uint32_t v;
    while (ga_hmap_next(it, &v))
        if (b->windows[v].metric == metric)
            return &b->windows[v];
    return NULL;
}

/* Takes ownership of rec (a snapshot, or a tail record); room reserved by
 * reserve_unit (a tail's too).  A snapshot replaces what the batch held for
 * the metric; a tail record goes after it. */
static void merge_window(struct pg_batch *b, uint32_t metric, uint8_t *rec, size_t len,
                         uint64_t lsn)
{
    struct ga_hmap_it it;
    struct pg_batch_window *e = find_window(b, metric, &it);
    if (!e) {
        ga_hmap_put(&b->window_ix, &it, id_hash(metric), (uint32_t)b->nwindows);
        e = &b->windows[b->nwindows++];
        *e = (struct pg_batch_window){ .metric = metric };
    }
    if (len && rec[0] == PG_WINDOW_TAIL && e->tail) {
        memcpy(e->tail + e->tlen, rec, len);
        e->tlen += len;
        free(rec);
    } else if (len && rec[0] == PG_WINDOW_TAIL) {
        e->tail = rec;
        e->tlen = e->tcap = len;
    } else {
        free(e->snap);
        free(e->tail);
        *e = (struct pg_batch_window){ .metric = metric, .snap = rec, .len = len };
    }
    if (lsn > e->lsn)
        e->lsn = lsn;
}

/* 1 if s is well-formed UTF-8 (PostgreSQL would refuse it otherwise, and a
 * refused batch is retried forever). */
static int utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p >> 5) == 6 ? 1 : (*p >> 4) == 14 ? 2 : (*p >> 3) == 30 ? 3 : -1;
        if (n < 0 || (n == 1 && *p < 0xc2) || (n == 3 && *p > 0xf4))
            return 0;
        uint32_t cp = *p & (0x3f >> n);
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        p += n + 1;
    }
    return 1;
}

static int check_unit(const struct pg_writer_unit *u)
{
    for (size_t i = 0; i < u->ndefs; i++)
        if (!u->defs[i].name || !u->defs[i].policy || !u->defs[i].name[0] ||
            strlen(u->defs[i].name) > 255 || u->defs[i].id > INT32_MAX ||
            !utf8_ok(u->defs[i].name) || !utf8_ok(u->defs[i].policy->name))
            return GA_EINVAL;
    for (size_t i = 0; i < u->nwindows; i++)
        if (!u->windows[i].window)
            return GA_EINVAL;
    if (u->lsn > INT64_MAX || u->window_lsn > INT64_MAX)
        return GA_EINVAL;
    return 0;
}

void pg_batch_unit_free(struct pg_batch_unit *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->ndefs; i++)
        free(q->names[i]);
    for (size_t i = 0; i < q->nwindows; i++)
        free(q->snaps[i]);
    free(q->aggs);
    free(q->agg_part);
    free(q->late);
    free(q->defs);
    free(q->names);
    free(q->policies);
    free(q->counts);
    free(q->wmetric);
    free(q->snaps);
    free(q->lens);
    free(q);
}

static void *dup_mem(const void *p, size_t n, size_t sz, int *rc)
{
    if (!n)
        return NULL;
    void *d = malloc(n * sz);
    if (!d)
        *rc = GA_ENOMEM;
    else
        memcpy(d, p, n * sz);
    return d;
}

int pg_batch_copy(const struct pg_writer_unit *u, int skip_rows, int skip_windows, struct pg_batch_unit **out)
{
    *out = NULL;
    int rc = check_unit(u);
    if (rc < 0)
        return rc;
    struct pg_batch_unit *q = calloc(1, sizeof *q);
    if (!q)
        return GA_ENOMEM;
    /* counters travel with the window set they belong to, if any */
    int skip_counts = u->window_lsn ? skip_windows : skip_rows;
    q->skip_windows = skip_windows;
    q->lsn = u->lsn;
    q->window_lsn = u->window_lsn;
    q->window_parts = u->window_parts;
    if (!skip_rows) {
        q->aggs = dup_mem(u->aggs, q->naggs = u->naggs, sizeof *u->aggs, &rc);
        if (u->agg_part)
            q->agg_part = dup_mem(u->agg_part, u->naggs, 1, &rc);
        q->late = dup_mem(u->late, q->nlate = u->nlate, sizeof *u->late, &rc);
        q->rows = ga_aggs_count(u->aggs, u->naggs) + u->nlate;
    }
    if (!skip_counts)
        q->counts = dup_mem(u->counts, q->ncounts = u->ncounts, sizeof *u->counts, &rc);
    if (u->ndefs && rc == 0) {
        q->defs = calloc(u->ndefs, sizeof *q->defs);
        q->names = calloc(u->ndefs, sizeof *q->names);
        q->policies = calloc(u->ndefs, sizeof *q->policies);
        rc = q->defs && q->names && q->policies ? 0 : GA_ENOMEM;
        for (size_t i = 0; rc == 0 && i < u->ndefs; i++) {
            if (!(q->names[i] = strdup(u->defs[i].name))) {
                rc = GA_ENOMEM;
                break;
            }
            q->policies[i] = *u->defs[i].policy;
            q->defs[i] = (struct pg_writer_metric_def){ u->defs[i].id, q->names[i], &q->policies[i] };
            q->ndefs++;
        }
    }
    size_t nw = skip_windows ? 0 : u->nwindows;
    if (nw && rc == 0) {
        q->wmetric = calloc(nw, sizeof *q->wmetric);
        q->snaps = calloc(nw, sizeof *q->snaps);
        q->lens = calloc(nw, sizeof *q->lens);
        rc = q->wmetric && q->snaps && q->lens ? 0 : GA_ENOMEM;
        for (size_t i = 0; rc == 0 && i < nw; i++) {
            q->wmetric[i] = u->windows[i].metric;
            const struct pg_writer_window *pw = &u->windows[i];
            rc = pw->tail ? pg_window_encode_tail(pw->keep_from, pw->window, &q->snaps[i], &q->lens[i])
                          : pg_window_encode(pw->window, &q->snaps[i], &q->lens[i]);
            q->nwindows += rc == 0;
        }
        q->rows += q->nwindows;
    }
    if (rc < 0) {
        pg_batch_unit_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

/* Room for everything q adds, so that taking it cannot fail half way. */
static int reserve_unit(struct pg_batch *b, const struct pg_batch_unit *q)
{
    if (ga_grow((void **)&b->late, &b->cap_late, b->nlate + q->nlate, sizeof *b->late, 64) < 0 ||
        ga_grow((void **)&b->defs, &b->cap_defs, b->ndefs + q->ndefs, sizeof *b->defs, 64) < 0 ||
        ga_grow((void **)&b->policies, &b->cap_policies, b->npolicies + q->ndefs,
             sizeof *b->policies, 64) < 0 ||
        ga_grow((void **)&b->counts, &b->cap_counts, b->ncounts + q->ncounts, sizeof *b->counts, 64) < 0 ||
        ga_grow((void **)&b->windows, &b->cap_windows, b->nwindows + q->nwindows,
             sizeof *b->windows, 64) < 0 ||
        ga_hmap_reserve(&b->def_ix, b->ndefs + q->ndefs) < 0 ||
        ga_hmap_reserve(&b->count_ix, b->ncounts + q->ncounts) < 0 ||
        ga_hmap_reserve(&b->window_ix, b->nwindows + q->nwindows) < 0)
        return GA_ENOMEM;
    /* a tail record after a tail the batch holds: room for both */
    for (size_t i = 0; i < q->nwindows; i++) {
        struct ga_hmap_it it;
        struct pg_batch_window *e;
        if (!q->lens[i] || q->snaps[i][0] != PG_WINDOW_TAIL ||
            !(e = find_window(b, q->wmetric[i], &it)) || !e->tail || e->tlen + q->lens[i] <= e->tcap)
            continue;
        size_t cap = (e->tlen + q->lens[i]) * 2;
        uint8_t *t = realloc(e->tail, cap);
        if (!t)
            return GA_ENOMEM;
        e->tail = t;
        e->tcap = cap;
    }
    return 0;
}

int pg_batch_take(struct pg_batch *b, struct pg_batch_unit *q, uint64_t seq, int64_t now_mono_ns)
{
    int rc;
    if ((rc = reserve_unit(b, q)) < 0 || (rc = merge_aggs(b, q->aggs, q->agg_part, q->naggs)) < 0)
        return rc;
    /* Nothing below can fail. */
    for (size_t i = 0; i < q->ndefs; i++) {
        merge_def(b, &q->defs[i], q->names[i]);
        q->names[i] = NULL;
    }
    if (q->nlate)
        memcpy(b->late + b->nlate, q->late, q->nlate * sizeof *q->late);
    b->nlate += q->nlate;
    for (size_t i = 0; i < q->ncounts; i++)
        merge_count(b, &q->counts[i]);
    for (size_t i = 0; i < q->nwindows; i++) {
        merge_window(b, q->wmetric[i], q->snaps[i], q->lens[i],
                     q->skip_windows ? 0 : q->window_lsn);
        q->snaps[i] = NULL;
    }
    if (!q->skip_windows && q->window_lsn) {
        for (int p = 0; p < GA_PARTITIONS; p++)
            if ((!q->window_parts || (q->window_parts >> p & 1)) && q->window_lsn > b->part_lsn[p])
                b->part_lsn[p] = q->window_lsn;
        b->has_windows = 1;
    }
    if (q->lsn > b->lsn)
        b->lsn = q->lsn;
    if (!b->units)
        b->oldest_mono_ns = now_mono_ns;
    b->units++;
    b->last_seq = seq;
    pg_batch_unit_free(q);
    return 0;
}

int pg_batch_merge(struct pg_batch *b, const struct pg_writer_unit *u, int skip_rows, int skip_windows,
              uint64_t seq, int64_t now_mono_ns)
{
    struct pg_batch_unit *q;
    int rc = pg_batch_copy(u, skip_rows, skip_windows, &q);
    if (rc == 0 && (rc = pg_batch_take(b, q, seq, now_mono_ns)) < 0)
        pg_batch_unit_free(q);
    return rc;
}

int pg_batch_empty(const struct pg_batch *b)
{
    return !b->naggs && !b->nlate && !b->ndefs && !b->ncounts && !b->nwindows && !b->lsn &&
           !b->has_windows;
}

size_t pg_batch_rows(const struct pg_batch *b)
{
    return b->naggs + b->nlate + b->nwindows;
}

static int agg_order(const void *pa, const void *pb)
{
    const struct ga_agg *a = pa, *b = pb;
    if (a->granularity_ns != b->granularity_ns)
        return a->granularity_ns < b->granularity_ns ? -1 : 1;
    int64_t w = pg_schema_partition_width(a->granularity_ns), pa_ = a->ts / w, pb_ = b->ts / w;
    if (pa_ != pb_)
        return pa_ < pb_ ? -1 : 1;
    if (a->metric != b->metric)
        return a->metric < b->metric ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->method > b->method) - (a->method < b->method);
}

void pg_batch_sort(struct pg_batch *b)
{
    if (b->naggs > 1)
        qsort(b->aggs, b->naggs, sizeof *b->aggs, agg_order);
    ga_hmap_clear(&b->ix);
}

int pg_batch_add_reject(struct pg_batch *b, const struct pg_batch_reject *r)
{
    if (ga_grow((void **)&b->rejects, &b->cap_rejects, b->nrejects + 1, sizeof *b->rejects, 64))
        return GA_ENOMEM;
    b->rejects[b->nrejects++] = *r;
    return 0;
}

int pg_batch_add_error(struct pg_batch *b, const char *text, uint32_t *ix)
{
    if (ga_grow((void **)&b->errors, &b->cap_errors, b->nerrors + 1, sizeof *b->errors, 64))
        return GA_ENOMEM;
    snprintf(b->errors[b->nerrors].text, sizeof b->errors[b->nerrors].text, "%s", text);
    *ix = (uint32_t)b->nerrors++;
    return 0;
}

static size_t window_weight(const struct pg_batch_window *e)
{
    return e->len + e->tlen + PG_BATCH_WINDOW_ROW_BYTES;
}

size_t pg_batch_window_bytes(const struct pg_batch *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->nwindows; i++)
        n += window_weight(&b->windows[i]);
    return n;
}

/* Rebuild src's index of windows or counters after some were taken out. */
static int reindex(struct ga_hmap *ix, const void *items, size_t n, size_t size)
{
    ga_hmap_clear(ix);
    if (ga_hmap_reserve(ix, n) < 0)
        return GA_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        uint32_t metric;
        memcpy(&metric, (const char *)items + i * size, sizeof metric);  /* first member */
        struct ga_hmap_it it = ga_hmap_find(ix, id_hash(metric));
        ga_hmap_put(ix, &it, id_hash(metric), (uint32_t)i);
    }
    return 0;
}

int pg_batch_move_windows(struct pg_batch *dst, struct pg_batch *src, size_t max_bytes, int all)
{
    size_t have = pg_batch_window_bytes(dst), k = 0;
    /* the windows taken: from the end of src's, while they fit */
    while (k < src->nwindows) {
        size_t b = window_weight(&src->windows[src->nwindows - 1 - k]);
        if (k && !all && have + b > max_bytes)
            break;
        have += b;
        k++;
    }
    size_t nc = k == src->nwindows ? src->ncounts : k;
    if (ga_grow((void **)&dst->windows, &dst->cap_windows, dst->nwindows + k, sizeof *dst->windows,
                64) < 0 ||
        ga_grow((void **)&dst->counts, &dst->cap_counts, dst->ncounts + nc, sizeof *dst->counts,
                64) < 0 ||
        ga_hmap_reserve(&dst->window_ix, dst->nwindows + k) < 0 ||
        ga_hmap_reserve(&dst->count_ix, dst->ncounts + nc) < 0)
        return GA_ENOMEM;
    /* a tail after a tail dst holds: room for both (as reserve_unit) */
    for (size_t j = 0; j < k; j++) {
        const struct pg_batch_window *e = &src->windows[src->nwindows - 1 - j];
        struct ga_hmap_it it;
        struct pg_batch_window *d;
        if (e->snap || !e->tail || !(d = find_window(dst, e->metric, &it)) || !d->tail ||
            d->tlen + e->tlen <= d->tcap)
            continue;
        uint8_t *t = realloc(d->tail, (d->tlen + e->tlen) * 2);
        if (!t)
            return GA_ENOMEM;
        d->tail = t;
        d->tcap = (d->tlen + e->tlen) * 2;
    }
    /* Nothing below fails but the reindex (then src keeps no index). */
    for (size_t j = 0; j < k; j++) {
        struct pg_batch_window e = src->windows[--src->nwindows];
        uint32_t v;
        if (e.snap)
            merge_window(dst, e.metric, e.snap, e.len, e.lsn);
        if (e.tail)                             /* after a tail dst holds: room reserved above */
            merge_window(dst, e.metric, e.tail, e.tlen, e.lsn);
        /* its counter */
        struct ga_hmap_it it = ga_hmap_find(&src->count_ix, id_hash(e.metric));
        while (ga_hmap_next(&it, &v)) {
            if (src->counts[v].metric == e.metric) {
                merge_count(dst, &src->counts[v]);
                src->counts[v].points = 0;          /* taken; dropped below */
                break;
            }
        }
    }
    size_t m = 0;
    for (size_t i = 0; i < src->ncounts; i++) {
        if (!src->counts[i].points)
            continue;
        if (!src->nwindows)
            merge_count(dst, &src->counts[i]);
        else
            src->counts[m++] = src->counts[i];
    }
    src->ncounts = src->nwindows ? m : 0;
    if (!src->nwindows) {
        for (int p = 0; p < GA_PARTITIONS; p++)
            if (src->part_lsn[p] > dst->part_lsn[p])
                dst->part_lsn[p] = src->part_lsn[p];
        dst->has_windows |= src->has_windows;
        memset(src->part_lsn, 0, sizeof src->part_lsn);
        src->has_windows = 0;
    }
    if (reindex(&src->window_ix, src->windows, src->nwindows, sizeof *src->windows) < 0 ||
        reindex(&src->count_ix, src->counts, src->ncounts, sizeof *src->counts) < 0)
        return GA_ENOMEM;
    return 0;
}

void pg_batch_reset(struct pg_batch *b)
{
    for (size_t i = 0; i < b->ndefs; i++)
        free(b->defs[i].name);
    for (size_t i = 0; i < b->nwindows; i++)
        free(b->windows[i].snap), free(b->windows[i].tail);
    ga_hmap_clear(&b->ix);
    ga_hmap_clear(&b->def_ix);
    ga_hmap_clear(&b->count_ix);
    ga_hmap_clear(&b->window_ix);
    b->naggs = b->nlate = b->ndefs = b->npolicies = b->ncounts = b->nwindows = 0;
    b->nrejects = b->nerrors = 0;
    b->lsn = b->window_lsn = b->units = b->last_seq = 0;
    memset(b->part_lsn, 0, sizeof b->part_lsn);
    b->has_windows = 0;
    b->oldest_mono_ns = 0;
}

void pg_batch_free(struct pg_batch *b)
{
    pg_batch_reset(b);
    free(b->aggs);
    ga_hmap_free(&b->ix);
    free(b->late);
    free(b->defs);
    free(b->policies);
    free(b->counts);
    free(b->windows);
    free(b->rejects);
    free(b->errors);
    ga_hmap_free(&b->def_ix);
    ga_hmap_free(&b->count_ix);
    ga_hmap_free(&b->window_ix);
    memset(b, 0, sizeof *b);
}
