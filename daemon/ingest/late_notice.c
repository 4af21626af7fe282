/* late_notice.c — the door's table of window floors (late_notice.h). */
#include "daemon/ingest/late_notice.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "proto/base/hash.h"
#include "proto/ga_err.h"

#define PROBES 8
#define MASK (GA_LATE_NOTICE_ENTRIES - 1)

struct slot {
    _Atomic uint64_t key;              /* the name's hash with bit 0 set; 0: free */
    _Atomic int64_t floor;
};

struct ga_late_notice {
    pthread_mutex_t mu;                /* posters */
    _Atomic uint64_t used, posted;
    struct slot s[GA_LATE_NOTICE_ENTRIES];
};

static uint64_t key_of(const char *name, size_t len)
{
    return ga_hash_fmix64(ga_hash_fnv1a(name, len)) | 1;
}

int ga_late_notice_open(struct ga_late_notice **out)
{
    struct ga_late_notice *n = calloc(1, sizeof *n);
    if (!n)
        return GA_ENOMEM;
    pthread_mutex_init(&n->mu, NULL);
    *out = n;
    return 0;
}

void ga_late_notice_close(struct ga_late_notice *n)
{
    if (!n)
        return;
    pthread_mutex_destroy(&n->mu);
    free(n);
}

void ga_late_notice_post(struct ga_late_notice *n, const char *name, size_t len, int64_t floor)
{
    uint64_t k = key_of(name, len);
    pthread_mutex_lock(&n->mu);
    struct slot *free_slot = NULL;
    for (int i = 0; i < PROBES; i++) {
        struct slot *s = &n->s[(k + (uint64_t)i) & MASK];
        uint64_t have = atomic_load_explicit(&s->key, memory_order_relaxed);
        if (have == k) {                /* its own entry: the floor moves */
            atomic_store_explicit(&s->floor, floor, memory_order_relaxed);
            goto out;
        }
        if (!have && !free_slot)
            free_slot = s;
    }
    struct slot *s = free_slot ? free_slot : &n->s[k & MASK];
    /* another metric's entry or a free one: a reader that read the old key
     * reads it again after the floor and sees the change */
    if (!free_slot)
        atomic_store_explicit(&s->key, 0, memory_order_release);
    else
        atomic_fetch_add_explicit(&n->used, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->floor, floor, memory_order_relaxed);
    atomic_store_explicit(&s->key, k, memory_order_release);
out:
    atomic_fetch_add_explicit(&n->posted, 1, memory_order_relaxed);
    pthread_mutex_unlock(&n->mu);
}

int ga_late_notice_floor(const struct ga_late_notice *n, const char *name, size_t len,
                         int64_t *floor)
{
    if (!atomic_load_explicit(&n->used, memory_order_relaxed))
        return 0;
    uint64_t k = key_of(name, len);
    for (int i = 0; i < PROBES; i++) {
        const struct slot *s = &n->s[(k + (uint64_t)i) & MASK];
        if (atomic_load_explicit(&s->key, memory_order_acquire) != k)
            continue;
        int64_t f = atomic_load_explicit(&s->floor, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->key, memory_order_relaxed) != k)
            return 0;                   /* taken by another metric meanwhile */
        *floor = f;
        return 1;
    }
    return 0;
}

uint64_t ga_late_notice_posted(const struct ga_late_notice *n)
{
    return atomic_load_explicit(&n->posted, memory_order_relaxed);
}
