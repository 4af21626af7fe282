/* agg_cpu_pool.c — a persistent thread pool running one loop at a time.
 *
 * agg_pool_run() publishes a job (fn, ctx, n) under the mutex, bumps the
 * generation and wakes the workers; everyone, the caller included, takes
 * items from an atomic counter until none is left.  The caller waits until
 * every worker has left the job before returning.  One lock (p->mu); the
 * item counter is a lock-free atomic.  Every worker joins every job (and
 * reports back), so no worker can still be reading a job's fields when the
 * next one is published. */
#include "gpu/agg_cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "proto/ga_err.h"

struct agg_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;
    int nthreads;                 /* including the caller */
    int nstarted;
    uint64_t gen;                 /* job generation, under mu */
    int finished;                 /* workers done with the current job, under mu */
    int quit;
    void (*fn)(void *ctx, size_t item, int worker);
    void *ctx;
    size_t n;
    atomic_size_t next;
};

struct worker_arg {
    struct agg_pool *p;
    int index;
};

static void drain(struct agg_pool *p, int worker)
{
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= p->n)
            return;
        p->fn(p->ctx, i, worker);
    }
}

static void *worker_main(void *arg)
{
    struct worker_arg wa = *(struct worker_arg *)arg;
    free(arg);
    struct agg_pool *p = wa.p;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        drain(p, wa.index);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->nthreads - 1)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int agg_pool_open(struct agg_pool **out, int nthreads)
{
    int rc = GA_ENOMEM;
    struct agg_pool *p = calloc(1, sizeof *p);
    if (!p)
        return GA_ENOMEM;
    p->nthreads = nthreads < 1 ? 1 : nthreads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = calloc((size_t)p->nthreads, sizeof *p->threads);
    if (!p->threads)
        goto fail;
    for (int i = 1; i < p->nthreads; i++) {
        struct worker_arg *wa = malloc(sizeof *wa);
        if (!wa)
            goto fail;
        *wa = (struct worker_arg){ p, i };
        int e = pthread_create(&p->threads[i], NULL, worker_main, wa);
        if (e) {
            free(wa);
            rc = -e;
            goto fail;
        }
        pthread_setname_np(p->threads[i], "ga-cpu-agg");
        p->nstarted = i;
    }
    *out = p;
    return 0;
fail:
    agg_pool_close(p);
    return rc;
}

void agg_pool_close(struct agg_pool *p)
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

void agg_pool_run(struct agg_pool *p, size_t n, void (*fn)(void *ctx, size_t item, int worker),
                  void *ctx, int serial)
{
    if (serial || p->nthreads == 1 || n < 2) {
        for (size_t i = 0; i < n; i++)
            fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store(&p->next, 0);
    p->finished = 0;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->finished < p->nthreads - 1)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
