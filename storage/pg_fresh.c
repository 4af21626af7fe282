/* pg_fresh.c — the writer's high-water map (pg_fresh.h): the pairs in an
 * array, found through the hash map (proto/base/hmap.h) keyed by
 * (metric, granularity). */
#include "storage/pg_fresh.h"

#include <stdlib.h>
#include <string.h>

#include "proto/base/grow.h"
#include "proto/base/hash.h"
#include "proto/ga_err.h"

static uint64_t pair_hash(uint32_t metric, int64_t g)
{
    return ga_hash_fmix64(((uint64_t)g * 0x9e3779b97f4a7c15ULL) ^ metric);
}

/* The pair's entry, or NULL with *it resting where it goes. */
static struct pg_fresh_ent *lookup(const struct pg_fresh_map *m, uint32_t metric, int64_t g,
                              struct ga_hmap_it *it)
{
    *it = ga_hmap_find(&m->ix, pair_hash(metric, g));
    uint32_t v;
    while (ga_hmap_next(it, &v))
        if (m->e[v].metric == metric && m->e[v].granularity_ns == g)
            return &m->e[v];
    return NULL;
}

static struct pg_fresh_ent *find(const struct pg_fresh_map *m, uint32_t metric, int64_t g)
{
    struct ga_hmap_it it;
    return lookup(m, metric, g, &it);
}

int pg_fresh(const struct pg_fresh_map *m, const struct ga_agg *a)
{
    const struct pg_fresh_ent *e = find(m, a->metric, a->granularity_ns);
    return e && a->ts > e->hi;
}

int pg_fresh_known(const struct pg_fresh_map *m, const struct ga_agg *a)
{
    return find(m, a->metric, a->granularity_ns) != NULL;
}

int pg_fresh_note(struct pg_fresh_map *m, const struct ga_agg *aggs, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const struct ga_agg *a = &aggs[k];
        struct ga_hmap_it it;
        struct pg_fresh_ent *e = lookup(m, a->metric, a->granularity_ns, &it);
        if (e) {
            if (a->ts > e->hi) {
                e->hi = a->ts;
                e->mset = -1;
            }
            continue;
        }
        int cleared = m->n >= PG_FRESH_MAX_PAIRS;
        if (cleared)
            pg_fresh_clear(m);
        if (ga_grow((void **)&m->e, &m->cap, m->n + 1, sizeof *m->e, 4096) < 0 ||
            ga_hmap_put(&m->ix, cleared ? NULL : &it, pair_hash(a->metric, a->granularity_ns),
                        (uint32_t)m->n) < 0)
            return GA_ENOMEM;
        m->e[m->n++] = (struct pg_fresh_ent){ .granularity_ns = a->granularity_ns, .hi = a->ts,
                                         .metric = a->metric, .mset = -1 };
    }
    return 0;
}

int32_t pg_fresh_mset(const struct pg_fresh_map *m, const struct ga_agg *a)
{
    const struct pg_fresh_ent *e = find(m, a->metric, a->granularity_ns);
    return e && e->hi == a->ts ? e->mset : -1;
}

void pg_fresh_set_mset(struct pg_fresh_map *m, const struct ga_agg *a, int32_t mset)
{
    struct pg_fresh_ent *e = find(m, a->metric, a->granularity_ns);
    if (e && e->hi == a->ts)
        e->mset = mset;
}

void pg_fresh_clear(struct pg_fresh_map *m)
{
    ga_hmap_clear(&m->ix);
    m->n = 0;
}

void pg_fresh_free(struct pg_fresh_map *m)
{
    free(m->e);
    ga_hmap_free(&m->ix);
    memset(m, 0, sizeof *m);
}
