/* admit.c — the live-metric bound at the door (see admit.h). */
#include "daemon/ingest/admit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

struct slot {
    uint64_t h;
    char *name;                      /* NULL: empty */
    uint32_t len;
};

struct ga_admit {
    pthread_mutex_t mu;
    struct slot *slots;
    size_t cap, n;
    uint64_t max, refused;
};

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;           /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return h ? h : 1;
}

int ga_admit_open(struct ga_admit **out, uint64_t max)
{
    struct ga_admit *a = calloc(1, sizeof *a);
    if (!a || !(a->slots = calloc(1024, sizeof *a->slots))) {
        free(a);
        return GA_ENOMEM;
    }
    a->cap = 1024;
    a->max = max;
    pthread_mutex_init(&a->mu, NULL);
    *out = a;
    return 0;
}

void ga_admit_close(struct ga_admit *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->cap; i++)
        free(a->slots[i].name);
    free(a->slots);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void ga_admit_set_max(struct ga_admit *a, uint64_t max)
{
    pthread_mutex_lock(&a->mu);
    a->max = max;
    pthread_mutex_unlock(&a->mu);
}

/* Under mu: the slot of name, or the empty one where it would go. */
static struct slot *find(struct ga_admit *a, uint64_t h, const char *s, size_t n)
{
    size_t i = h & (a->cap - 1);
    while (a->slots[i].name &&
           !(a->slots[i].h == h && a->slots[i].len == n && memcmp(a->slots[i].name, s, n) == 0))
        i = (i + 1) & (a->cap - 1);
    return &a->slots[i];
}

/* Under mu: insert at the empty slot e; grows first at half full. */
static int insert(struct ga_admit *a, struct slot *e, uint64_t h, const char *s, size_t n)
{
    char *copy = malloc(n + 1);
    if (!copy)
        return GA_ENOMEM;
    memcpy(copy, s, n);
    copy[n] = '\0';
    if ((a->n + 1) * 2 > a->cap) {
        struct slot *ns = calloc(a->cap * 2, sizeof *ns);
        if (!ns) {
            free(copy);
            return GA_ENOMEM;
        }
        struct slot *old = a->slots;
        size_t oc = a->cap;
        a->slots = ns;
        a->cap *= 2;
        for (size_t i = 0; i < oc; i++)
            if (old[i].name)
                *find(a, old[i].h, old[i].name, old[i].len) = old[i];
        free(old);
        e = find(a, h, s, n);
    }
    *e = (struct slot){ h, copy, (uint32_t)n };
    a->n++;
    return 0;
}

int ga_admit_add(struct ga_admit *a, const char *name, size_t len)
{
    uint64_t h = hash(name, len);
    int rc = 0;
    pthread_mutex_lock(&a->mu);
    struct slot *e = find(a, h, name, len);
    if (!e->name)
        rc = insert(a, e, h, name, len);
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
        struct slot *e = find(a, h, b->names[i], b->name_len[i]);
        if (e->name)
            continue;
        if (a->n >= max) {
            drop[i] = 1;
            ndrop++;
        } else {
            rc = insert(a, e, h, b->names[i], b->name_len[i]);
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
