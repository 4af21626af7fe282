/* admit.c — the live-metric bound at the door (see admit.h). */
#include "daemon/ingest/admit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/grow.h"
#include "proto/base/hash.h"
#include "proto/base/hmap.h"
#include "proto/ga_err.h"

struct ga_admit {
    pthread_mutex_t mu;
    char *arena;                     /* the set's names: [u32 len][bytes]..., 4-aligned */
    size_t used, cap, n;
    struct ga_hmap ix;               /* hash(name) → offset of its entry in arena */
    uint64_t max, refused;
};

static uint64_t hash(const char *s, size_t n)
{
    return ga_hash_fmix64(ga_hash_fnv1a(s, n));
}

int ga_admit_open(struct ga_admit **out, uint64_t max)
{
    struct ga_admit *a = calloc(1, sizeof *a);
    if (!a)
        return GA_ENOMEM;
    a->max = max;
    pthread_mutex_init(&a->mu, NULL);
    *out = a;
    return 0;
}

void ga_admit_close(struct ga_admit *a)
{
    if (!a)
        return;
    free(a->arena);
    ga_hmap_free(&a->ix);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void ga_admit_set_max(struct ga_admit *a, uint64_t max)
{
    pthread_mutex_lock(&a->mu);
    a->max = max;
    pthread_mutex_unlock(&a->mu);
}

/* Under mu: 1 if s[0..n) is in the set; else 0, *it resting where it goes. */
static int known(const struct ga_admit *a, uint64_t h, const char *s, size_t n, struct ga_hmap_it *it)
{
    *it = ga_hmap_find(&a->ix, h);
    uint32_t v;
    while (ga_hmap_next(it, &v)) {
        uint32_t len;
        memcpy(&len, a->arena + v, 4);
        if (len == n && memcmp(a->arena + v + 4, s, n) == 0)
            return 1;
    }
    return 0;
}

/* Under mu: add s[0..n), not in the set (known() left it).  0, or GA_ENOMEM
 * (also when the names would pass 4 GiB). */
static int insert(struct ga_admit *a, const struct ga_hmap_it *it, uint64_t h, const char *s,
                  size_t n)
{
    size_t need = a->used + ((4 + n + 3) & ~(size_t)3);
    if (need > GA_HMAP_VALUE_MAX ||
        ga_grow((void **)&a->arena, &a->cap, need, 1, 65536) < 0 ||
        ga_hmap_put(&a->ix, it, h, (uint32_t)a->used) < 0)
        return GA_ENOMEM;
    uint32_t len = (uint32_t)n;
    memcpy(a->arena + a->used, &len, 4);
    memcpy(a->arena + a->used + 4, s, n);
    a->used = need;
    a->n++;
    return 0;
}

int ga_admit_add(struct ga_admit *a, const char *name, size_t len)
{
    uint64_t h = hash(name, len);
    int rc = 0;
    struct ga_hmap_it it;
    pthread_mutex_lock(&a->mu);
    if (!known(a, h, name, len, &it))
        rc = insert(a, &it, h, name, len);
    pthread_mutex_unlock(&a->mu);
    return rc;
}

long ga_admit_batch(struct ga_admit *a, struct ing_batch *b)
{
    if (!b->nnames)
        return 0;
    uint8_t *drop = calloc(b->nnames, 1);
    if (!drop)
        return GA_ENOMEM;
    size_t ndrop = 0;
    int rc = 0;
    pthread_mutex_lock(&a->mu);
    uint64_t max = a->max;
    for (uint32_t i = 0; i < b->nnames && rc == 0; i++) {
        uint64_t h = hash(b->names[i], b->name_len[i]);
        struct ga_hmap_it it;
        if (known(a, h, b->names[i], b->name_len[i], &it))
            continue;
        if (a->n >= max) {
            drop[i] = 1;
            ndrop++;
        } else {
            rc = insert(a, &it, h, b->names[i], b->name_len[i]);
        }
    }
    pthread_mutex_unlock(&a->mu);
    long out = rc;
    if (rc == 0 && ndrop) {
        char why[96];
        snprintf(why, sizeof why, "too many metrics (limits.max_metrics = %llu): new metric "
                 "refused", (unsigned long long)max);
        out = ing_batch_drop_names(b, drop, why);
        if (out > 0) {
            pthread_mutex_lock(&a->mu);
            a->refused += (uint64_t)out;
            pthread_mutex_unlock(&a->mu);
        }
    }
    free(drop);
    return out;
}

uint64_t ga_admit_count(struct ga_admit *a)
{
    pthread_mutex_lock(&a->mu);
    uint64_t n = a->n;
    pthread_mutex_unlock(&a->mu);
    return n;
}

uint64_t ga_admit_refused(struct ga_admit *a)
{
    pthread_mutex_lock(&a->mu);
    uint64_t n = a->refused;
    pthread_mutex_unlock(&a->mu);
    return n;
}
