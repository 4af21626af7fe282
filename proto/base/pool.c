/* pool.c — the one thread pool (see pool.h). */
#include "proto/base/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto/ga_err.h"

struct pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;           /* [1..nstarted] */
    const char *name;
    int nthreads;                 /* including the caller */
    int nstarted;                 /* helpers started; the caller's alone */
    uint64_t gen;                 /* run generation, under mu */
    int want;                     /* helpers taking part in the current run, under mu */
    int finished;                 /* of those, done with it, under mu */
    int quit;
    void (*fn)(void *ctx, size_t item, int worker);
    void *ctx;
    size_t n;
    int one_each;                 /* n == want + 1: item i is worker i's */
    atomic_size_t next;
};

struct helper_arg {
    struct pool *p;
    int index;
    uint64_t seen;                /* the generation when it was started */
};

static void drain(struct pool *p, int worker)
{
    if (p->one_each) {
        p->fn(p->ctx, (size_t)worker, worker);
        return;
    }
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= p->n)
            return;
        p->fn(p->ctx, i, worker);
    }
}

static void *helper_main(void *arg)
{
    struct helper_arg ha = *(struct helper_arg *)arg;
    free(arg);
    struct pool *p = ha.p;
    uint64_t seen = ha.seen;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        if (ha.index > p->want)
            continue;                 /* not in this run */
        pthread_mutex_unlock(&p->mu);
        drain(p, ha.index);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->want)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int pool_open(struct pool **out, int nthreads, const char *name)
{
    struct pool *p = calloc(1, sizeof *p);
    if (!p)
        return GA_ENOMEM;
    p->nthreads = nthreads < 1 ? 1 : nthreads;
    p->name = name;
    p->threads = calloc((size_t)p->nthreads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return GA_ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    *out = p;
    return 0;
}

void pool_close(struct pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i <= p->nstarted; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

/* Start helpers until there are `want` (or as many as could be started). */
static void grow(struct pool *p, int want)
{
    while (p->nstarted < want) {
        struct helper_arg *ha = malloc(sizeof *ha);
        if (!ha)
            return;
        int i = p->nstarted + 1;
        *ha = (struct helper_arg){ p, i, p->gen };   /* gen changes only in pool_run */
        if (pthread_create(&p->threads[i], NULL, helper_main, ha) != 0) {
            free(ha);
            return;
        }
        if (p->name)
            pthread_setname_np(p->threads[i], p->name);
        p->nstarted = i;
    }
}

void pool_run(struct pool *p, size_t n, void (*fn)(void *ctx, size_t item, int worker), void *ctx)
{
    int want = p->nthreads - 1;
    if (n < (size_t)want + 1)
        want = (int)n - 1;
    if (want > p->nstarted)
        grow(p, want);
    if (want > p->nstarted)
        want = p->nstarted;
    if (want <= 0) {
        for (size_t i = 0; i < n; i++)
            fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->one_each = n == (size_t)want + 1;
    atomic_store(&p->next, 0);
    p->want = want;
    p->finished = 0;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->finished < p->want)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

int pool_started(struct pool *p)
{
    return p->nstarted;
}
