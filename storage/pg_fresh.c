/* pg_fresh.c — the writer's high-water map (pg_fresh.h): open addressing,
 * linear probing, keyed by (metric, granularity). */
#include "storage/pg_fresh.h"

#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

static size_t slot_of(uint32_t metric, int64_t g, size_t cap)
{
    uint64_t h = ((uint64_t)metric * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)g * 0xc2b2ae3d27d4eb4fULL);
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

static struct pgf_ent *find(const struct pgf_map *m, uint32_t metric, int64_t g)
{
    if (!m->cap)
        return NULL;
    for (size_t i = slot_of(metric, g, m->cap);; i = (i + 1) & (m->cap - 1)) {
        struct pgf_ent *e = &m->e[i];
        if (!e->used)
            return NULL;
        if (e->metric == metric && e->granularity_ns == g)
            return e;
    }
}

int pgf_fresh(const struct pgf_map *m, const struct ga_agg *a)
{
    const struct pgf_ent *e = find(m, a->metric, a->granularity_ns);
    return e && a->ts > e->hi;
}

int pgf_known(const struct pgf_map *m, const struct ga_agg *a)
{
    return find(m, a->metric, a->granularity_ns) != NULL;
}

static int grow(struct pgf_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 4096;
    struct pgf_ent *ne = calloc(cap, sizeof *ne);
    if (!ne)
        return GA_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        const struct pgf_ent *e = &m->e[i];
        if (!e->used)
            continue;
        size_t j = slot_of(e->metric, e->granularity_ns, cap);
        while (ne[j].used)
            j = (j + 1) & (cap - 1);
        ne[j] = *e;
    }
    free(m->e);
    m->e = ne;
    m->cap = cap;
    return 0;
}

int pgf_note(struct pgf_map *m, const struct ga_agg *aggs, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const struct ga_agg *a = &aggs[k];
        struct pgf_ent *e = find(m, a->metric, a->granularity_ns);
        if (e) {
            if (a->ts > e->hi) {
                e->hi = a->ts;
                e->mset = -1;
            }
            continue;
        }
        if (m->n >= PGF_MAX_PAIRS)
            pgf_clear(m);
        if ((m->n + 1) * 2 > m->cap && grow(m))
            return GA_ENOMEM;
        size_t i = slot_of(a->metric, a->granularity_ns, m->cap);
        while (m->e[i].used)
            i = (i + 1) & (m->cap - 1);
        m->e[i] = (struct pgf_ent){ .metric = a->metric, .used = 1,
                                    .granularity_ns = a->granularity_ns, .hi = a->ts,
                                    .mset = -1 };
        m->n++;
    }
    return 0;
}

int32_t pgf_mset(const struct pgf_map *m, const struct ga_agg *a)
{
    const struct pgf_ent *e = find(m, a->metric, a->granularity_ns);
    return e && e->hi == a->ts ? e->mset : -1;
}

void pgf_set_mset(struct pgf_map *m, const struct ga_agg *a, int32_t mset)
{
    struct pgf_ent *e = find(m, a->metric, a->granularity_ns);
    if (e && e->hi == a->ts)
        e->mset = mset;
}

void pgf_clear(struct pgf_map *m)
{
    if (m->e)
        memset(m->e, 0, m->cap * sizeof *m->e);
    m->n = 0;
}

void pgf_free(struct pgf_map *m)
{
    free(m->e);
    memset(m, 0, sizeof *m);
}
