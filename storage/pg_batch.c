/* pg_batch.c — the coalescing batch (see pg_batch.h). */
#include "storage/pg_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "storage/pg_schema.h"
#include "storage/pg_window.h"

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t agg_hash(const struct ga_agg *a)
{
    uint64_t h = mix64((uint64_t)a->ts ^ ((uint64_t)a->metric << 16 | a->method));
    return mix64(h ^ (uint64_t)a->granularity_ns);
}

static int agg_same(const struct ga_agg *a, const struct ga_agg *b)
{
    return a->ts == b->ts && a->metric == b->metric && a->method == b->method &&
           a->granularity_ns == b->granularity_ns;
}

/* Grow arr (elements of size sz) to hold want; 0 or GA_ENOMEM. */
static int grow(void **arr, size_t *cap, size_t want, size_t sz)
{
    if (want <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < want)
        c *= 2;
    void *p = realloc(*arr, c * sz);
    if (!p)
        return GA_ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

static int rehash_aggs(struct pgb_batch *b, size_t nslots)
{
    uint32_t *s = calloc(nslots, sizeof *s);
    if (!s)
        return GA_ENOMEM;
    for (size_t i = 0; i < b->naggs; i++) {
        size_t h = agg_hash(&b->aggs[i]) & (nslots - 1);
        while (s[h])
            h = (h + 1) & (nslots - 1);
        s[h] = (uint32_t)(i + 1);
    }
    free(b->slots);
    b->slots = s;
    b->nslots = nslots;
    return 0;
}

/* Find key in m; returns its index or -1; *slot gets where it is or would go. */
static long map_find(const struct pgb_map *m, uint32_t key, size_t *slot)
{
    size_t h = mix64(key) & (m->cap - 1);
    while (m->vals[h]) {
        if (m->keys[h] == key) {
            *slot = h;
            return (long)m->vals[h] - 1;
        }
        h = (h + 1) & (m->cap - 1);
    }
    *slot = h;
    return -1;
}

/* Make room for `more` keys (load <= 1/2).  0 or GA_ENOMEM. */
static int map_reserve(struct pgb_map *m, size_t more)
{
    if (m->cap && (m->n + more) * 2 <= m->cap)
        return 0;
    size_t cap = m->cap ? m->cap * 2 : 64;
    while ((m->n + more) * 2 > cap)
        cap *= 2;
    struct pgb_map nm = { calloc(cap, 4), calloc(cap, 4), cap, m->n };
    if (!nm.keys || !nm.vals) {
        free(nm.keys);
        free(nm.vals);
        return GA_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->vals[i])
            continue;
        size_t s;
        map_find(&nm, m->keys[i], &s);
        nm.keys[s] = m->keys[i];
        nm.vals[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    *m = nm;
    return 0;
}

static void map_put(struct pgb_map *m, size_t slot, uint32_t key, size_t index)
{
    m->keys[slot] = key;
    m->vals[slot] = (uint32_t)(index + 1);
    m->n++;
}

static void map_clear(struct pgb_map *m)
{
    if (m->cap)
        memset(m->vals, 0, m->cap * sizeof *m->vals);
    m->n = 0;
}

static void merge_agg(struct pgb_batch *b, const struct ga_agg *a)
{
    size_t h = agg_hash(a) & (b->nslots - 1);
    for (;;) {
        uint32_t s = b->slots[h];
        if (!s) {
            b->aggs[b->naggs] = *a;
            b->slots[h] = (uint32_t)++b->naggs;
            return;
        }
        if (agg_same(&b->aggs[s - 1], a)) {
            b->aggs[s - 1].value = a->value;
            return;
        }
        h = (h + 1) & (b->nslots - 1);
    }
}

/* n slots of rows and wide records (engine.h): the batch keeps rows. */
static int merge_aggs(struct pgb_batch *b, const struct ga_agg *aggs, size_t n)
{
    size_t rows = ga_aggs_count(aggs, n);
    if (grow((void **)&b->aggs, &b->cap_aggs, b->naggs + rows, sizeof *b->aggs) < 0)
        return GA_ENOMEM;
    if ((b->naggs + rows) * 2 > b->nslots) {
        size_t ns = b->nslots ? b->nslots : 1024;
        while ((b->naggs + rows) * 2 > ns)
            ns *= 2;
        if (rehash_aggs(b, ns) < 0)
            return GA_ENOMEM;
    }
    for (size_t i = 0; i < n;) {
        size_t span = ga_agg_span(&aggs[i]);
        if (span > n - i)
            break;                /* cut short: ga_aggs_count did not count it either */
        struct ga_agg one[GA_WIDE_MAX];
        size_t k = ga_agg_unpack(&aggs[i], n - i, one);   /* a row: itself */
        for (size_t j = 0; j < k; j++)
            merge_agg(b, &one[j]);
        i += span;
    }
    return 0;
}

/* Room reserved by reserve_unit. */
static void merge_policy(struct pgb_batch *b, const struct ga_policy *p)
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
static void merge_def(struct pgb_batch *b, const struct pgw_metric_def *d, char *name)
{
    size_t slot;
    merge_policy(b, d->policy);
    long ix = map_find(&b->def_ix, d->id, &slot);
    struct pgb_def *e;
    if (ix >= 0) {
        e = &b->defs[ix];
        free(e->name);
    } else {
        map_put(&b->def_ix, slot, d->id, b->ndefs);
        e = &b->defs[b->ndefs++];
    }
    e->id = d->id;
    e->name = name;
    memcpy(e->policy, d->policy->name, sizeof e->policy);
    e->policy[sizeof e->policy - 1] = '\0';
}

static void merge_count(struct pgb_batch *b, const struct pgw_count *c)
{
    size_t slot;
    long ix = map_find(&b->count_ix, c->metric, &slot);
    if (ix >= 0) {
        b->counts[ix].points += c->points;
    } else {
        map_put(&b->count_ix, slot, c->metric, b->ncounts);
        b->counts[b->ncounts++] = *c;
    }
}

/* Takes ownership of snap; room reserved by reserve_unit. */
static void merge_window(struct pgb_batch *b, uint32_t metric, uint8_t *snap, size_t len)
{
    size_t slot;
    long ix = map_find(&b->window_ix, metric, &slot);
    struct pgb_window *e;
    if (ix >= 0) {
        e = &b->windows[ix];
        free(e->snap);
    } else {
        map_put(&b->window_ix, slot, metric, b->nwindows);
        e = &b->windows[b->nwindows++];
    }
    e->metric = metric;
    e->snap = snap;
    e->len = len;
}

/* Reserve room for everything u can add, so that merging cannot fail half
 * way.  0 or GA_ENOMEM. */
static int reserve_unit(struct pgb_batch *b, const struct pgw_unit *u, int skip_rows,
                        int skip_counts, size_t nw)
{
    size_t nl = skip_rows ? 0 : u->nlate, nc = skip_counts ? 0 : u->ncounts;
    if (grow((void **)&b->late, &b->cap_late, b->nlate + nl, sizeof *b->late) < 0 ||
        grow((void **)&b->defs, &b->cap_defs, b->ndefs + u->ndefs, sizeof *b->defs) < 0 ||
        grow((void **)&b->policies, &b->cap_policies, b->npolicies + u->ndefs,
             sizeof *b->policies) < 0 ||
        grow((void **)&b->counts, &b->cap_counts, b->ncounts + nc, sizeof *b->counts) < 0 ||
        grow((void **)&b->windows, &b->cap_windows, b->nwindows + nw, sizeof *b->windows) < 0 ||
        map_reserve(&b->def_ix, u->ndefs) < 0 || map_reserve(&b->count_ix, nc) < 0 ||
        map_reserve(&b->window_ix, nw) < 0)
        return GA_ENOMEM;
    return 0;
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

static int check_unit(const struct pgw_unit *u)
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

int pgb_merge(struct pgb_batch *b, const struct pgw_unit *u, int skip_rows, int skip_windows,
              uint64_t seq, int64_t now_mono_ns)
{
    int rc = check_unit(u);
    if (rc < 0)
        return rc;
    /* Encode windows, copy names and reserve memory first, so that a
     * failure leaves b unchanged (but for spare capacity). */
    size_t nw = skip_windows ? 0 : u->nwindows;
    uint8_t **snaps = nw ? calloc(nw, sizeof *snaps) : NULL;
    size_t *lens = nw ? calloc(nw, sizeof *lens) : NULL;
    char **names = u->ndefs ? calloc(u->ndefs, sizeof *names) : NULL;
    if ((nw && (!snaps || !lens)) || (u->ndefs && !names)) {
        rc = GA_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nw; i++)
        if ((rc = pgwin_encode(u->windows[i].window, &snaps[i], &lens[i])) < 0)
            goto out;
    for (size_t i = 0; i < u->ndefs; i++)
        if (!(names[i] = strdup(u->defs[i].name))) {
            rc = GA_ENOMEM;
            goto out;
        }
    /* counters travel with the window set they belong to, if any */
    int skip_counts = u->window_lsn ? skip_windows : skip_rows;
    if ((rc = reserve_unit(b, u, skip_rows, skip_counts, nw)) < 0)
        goto out;
    if (!skip_rows && (rc = merge_aggs(b, u->aggs, u->naggs)) < 0)
        goto out;
    /* Nothing below can fail. */
    for (size_t i = 0; i < u->ndefs; i++) {
        merge_def(b, &u->defs[i], names[i]);
        names[i] = NULL;
    }
    if (!skip_rows) {
        if (u->nlate)
            memcpy(b->late + b->nlate, u->late, u->nlate * sizeof *u->late);
        b->nlate += u->nlate;
    }
    if (!skip_counts)
        for (size_t i = 0; i < u->ncounts; i++)
            merge_count(b, &u->counts[i]);
    for (size_t i = 0; i < nw; i++) {
        merge_window(b, u->windows[i].metric, snaps[i], lens[i]);
        snaps[i] = NULL;
    }
    if (!skip_windows && u->window_lsn) {
        for (int p = 0; p < GA_PARTITIONS; p++)
            if ((!u->window_parts || (u->window_parts >> p & 1)) && u->window_lsn > b->part_lsn[p])
                b->part_lsn[p] = u->window_lsn;
        b->has_windows = 1;
    }
    if (u->lsn > b->lsn)
        b->lsn = u->lsn;
    if (!b->units)
        b->oldest_mono_ns = now_mono_ns;
    b->units++;
    b->last_seq = seq;
out:
    for (size_t i = 0; snaps && i < nw; i++)
        free(snaps[i]);
    for (size_t i = 0; names && i < u->ndefs; i++)
        free(names[i]);
    free(snaps);
    free(lens);
    free(names);
    return rc;
}

int pgb_empty(const struct pgb_batch *b)
{
    return !b->naggs && !b->nlate && !b->ndefs && !b->ncounts && !b->nwindows && !b->lsn &&
           !b->has_windows;
}

size_t pgb_rows(const struct pgb_batch *b)
{
    return b->naggs + b->nlate + b->nwindows;
}

static int agg_order(const void *pa, const void *pb)
{
    const struct ga_agg *a = pa, *b = pb;
    if (a->granularity_ns != b->granularity_ns)
        return a->granularity_ns < b->granularity_ns ? -1 : 1;
    int64_t w = pgs_partition_width(a->granularity_ns), pa_ = a->ts / w, pb_ = b->ts / w;
    if (pa_ != pb_)
        return pa_ < pb_ ? -1 : 1;
    if (a->metric != b->metric)
        return a->metric < b->metric ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->method > b->method) - (a->method < b->method);
}

void pgb_sort(struct pgb_batch *b)
{
    if (b->naggs > 1)
        qsort(b->aggs, b->naggs, sizeof *b->aggs, agg_order);
    if (b->nslots)
        memset(b->slots, 0, b->nslots * sizeof *b->slots);
}

int pgb_add_reject(struct pgb_batch *b, const struct pgb_reject *r)
{
    if (grow((void **)&b->rejects, &b->cap_rejects, b->nrejects + 1, sizeof *b->rejects))
        return GA_ENOMEM;
    b->rejects[b->nrejects++] = *r;
    return 0;
}

int pgb_add_error(struct pgb_batch *b, const char *text, uint32_t *ix)
{
    if (grow((void **)&b->errors, &b->cap_errors, b->nerrors + 1, sizeof *b->errors))
        return GA_ENOMEM;
    snprintf(b->errors[b->nerrors].text, sizeof b->errors[b->nerrors].text, "%s", text);
    *ix = (uint32_t)b->nerrors++;
    return 0;
}

void pgb_reset(struct pgb_batch *b)
{
    for (size_t i = 0; i < b->ndefs; i++)
        free(b->defs[i].name);
    for (size_t i = 0; i < b->nwindows; i++)
        free(b->windows[i].snap);
    if (b->nslots)
        memset(b->slots, 0, b->nslots * sizeof *b->slots);
    map_clear(&b->def_ix);
    map_clear(&b->count_ix);
    map_clear(&b->window_ix);
    b->naggs = b->nlate = b->ndefs = b->npolicies = b->ncounts = b->nwindows = 0;
    b->nrejects = b->nerrors = 0;
    b->lsn = b->window_lsn = b->units = b->last_seq = 0;
    memset(b->part_lsn, 0, sizeof b->part_lsn);
    b->has_windows = 0;
    b->oldest_mono_ns = 0;
}

void pgb_free(struct pgb_batch *b)
{
    pgb_reset(b);
    free(b->aggs);
    free(b->slots);
    free(b->late);
    free(b->defs);
    free(b->policies);
    free(b->counts);
    free(b->windows);
    free(b->rejects);
    free(b->errors);
    struct pgb_map *maps[] = { &b->def_ix, &b->count_ix, &b->window_ix };
    for (int i = 0; i < 3; i++) {
        free(maps[i]->keys);
        free(maps[i]->vals);
    }
    memset(b, 0, sizeof *b);
}
