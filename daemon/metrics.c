/* metrics.c — metric registry: names → dense ids through the hash map
 * (proto/base/hmap.h), keyed by the name's hash, valued by the id. */
#include "daemon/metrics.h"

#include <stdlib.h>
#include <string.h>

#include "proto/base/hash.h"
#include "proto/base/hmap.h"
#include "proto/ga_err.h"

struct ga_metrics {
    struct ga_metric_info *info;   /* by id; a hole (id never given) has name NULL */
    uint32_t count, cap;
    uint32_t named;                /* ids that are not holes */
    struct ga_hmap ids;            /* hash_name(name) → id */
    struct ga_policy **policies;   /* distinct policies, owned */
    int npolicies;
};

/* FNV-1a, then a final mix (the map's slots only). */
static uint64_t hash_name(const char *s, size_t len)
{
    return ga_hash_fmix64(ga_hash_fnv1a(s, len));
}

int ga_metrics_open(struct ga_metrics **out)
{
    struct ga_metrics *m = calloc(1, sizeof *m);
    if (!m || ga_hmap_reserve(&m->ids, 768) < 0) {
        free(m);
        return GA_ENOMEM;
    }
    *out = m;
    return 0;
}

void ga_metrics_close(struct ga_metrics *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->count; i++)
        free((char *)m->info[i].name);
    for (int i = 0; i < m->npolicies; i++)
        free(m->policies[i]);
    free(m->policies);
    free(m->info);
    ga_hmap_free(&m->ids);
    free(m);
}

/* The id of name, or GA_ENOENT with *it resting where it goes. */
static int lookup(const struct ga_metrics *m, const char *name, size_t len, uint64_t h,
                  struct ga_hmap_it *it, uint32_t *id)
{
    *it = ga_hmap_find(&m->ids, h);
    uint32_t v;
    while (ga_hmap_next(it, &v)) {
        const struct ga_metric_info *mi = &m->info[v];
        if (mi->len == len && memcmp(mi->name, name, len) == 0) {
            *id = v;
            return 0;
        }
    }
    return GA_ENOENT;
}

int ga_metrics_find(const struct ga_metrics *m, const char *name, size_t len, uint32_t *id)
{
    struct ga_hmap_it it;
    return lookup(m, name, len, hash_name(name, len), &it, id);
}

/* The registry's copy of policy p (shared between metrics of equal policy). */
static const struct ga_policy *keep_policy(struct ga_metrics *m, const struct ga_policy *p)
{
    for (int i = 0; i < m->npolicies; i++)
        if (memcmp(m->policies[i], p, sizeof *p) == 0)
            return m->policies[i];
    struct ga_policy **np = realloc(m->policies, (size_t)(m->npolicies + 1) * sizeof *np);
    if (!np)
        return NULL;
    m->policies = np;
    struct ga_policy *copy = malloc(sizeof *copy);
    if (!copy)
        return NULL;
    *copy = *p;
    m->policies[m->npolicies++] = copy;
    return copy;
}

/* Add name (hash h, not in the registry: the lookup it ended there) at id
 * want: a hole, or >= count (the ids in between become holes). */
static int add(struct ga_metrics *m, const char *name, size_t len, uint64_t h,
               const struct ga_hmap_it *it, const struct ga_policy *p, uint32_t want, uint32_t *id)
{
    if (want >= GA_HMAP_VALUE_MAX || (want < m->count && m->info[want].name))
        return GA_EINVAL;
    if (ga_hmap_reserve(&m->ids, m->named + 1) < 0)
        return GA_ENOMEM;
    if (want >= m->cap) {
        uint32_t ncap = m->cap ? m->cap : 256;
        while (ncap <= want)
            ncap = ncap > UINT32_MAX / 2 ? UINT32_MAX : ncap * 2;
        struct ga_metric_info *ni = realloc(m->info, ncap * sizeof *ni);
        if (!ni)
            return GA_ENOMEM;
        m->info = ni;
        m->cap = ncap;
    }
    const struct ga_policy *kept = keep_policy(m, p);
    char *copy = malloc(len + 1);
    if (!kept || !copy) {
        free(copy);
        return GA_ENOMEM;
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    if (want >= m->count) {
        memset(m->info + m->count, 0, (size_t)(want - m->count) * sizeof *m->info);
        m->count = want + 1;
    }
    struct ga_metric_info *mi = &m->info[want];
    *mi = (struct ga_metric_info){ .name = copy, .len = (uint32_t)len, .policy = kept };
    ga_hmap_put(&m->ids, it, h, want);       /* room reserved: cannot fail */
    m->named++;
    *id = want;
    return 0;
}

int ga_metrics_intern(struct ga_metrics *m, const char *name, size_t len,
                      const struct ga_config *cfg, uint32_t *id, int *created)
{
    if (created)
        *created = 0;
    if (len == 0 || len > GA_METRIC_NAME_MAX)
        return GA_EINVAL;
    uint64_t h = hash_name(name, len);
    struct ga_hmap_it it;
    if (lookup(m, name, len, h, &it, id) == 0)
        return 0;
    char tmp[GA_METRIC_NAME_MAX + 1];
    memcpy(tmp, name, len);
    tmp[len] = '\0';
    const struct ga_policy *p = ga_config_policy_for(cfg, tmp);
    if (!p)
        return GA_ENOENT;
    int rc = add(m, name, len, h, &it, p, m->count, id);
    if (rc == 0 && created)
        *created = 1;
    return rc;
}

int ga_metrics_restore(struct ga_metrics *m, const char *name, size_t len, uint32_t id,
                       const struct ga_policy *p)
{
    uint32_t have;
    uint64_t h = hash_name(name, len);
    struct ga_hmap_it it;
    if (lookup(m, name, len, h, &it, &have) == 0)
        return have == id ? 0 : GA_EEXIST;
    return add(m, name, len, h, &it, p, id, &have);   /* GA_EINVAL: the id is taken */
}

uint32_t ga_metrics_count(const struct ga_metrics *m)
{
    return m->count;
}

uint32_t ga_metrics_named(const struct ga_metrics *m)
{
    return m->named;
}

struct ga_metric_info *ga_metrics_get(struct ga_metrics *m, uint32_t id)
{
    return id < m->count && m->info[id].name ? &m->info[id] : NULL;
}
