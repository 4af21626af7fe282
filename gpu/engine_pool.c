/* engine_pool.c — persistent worker threads for the engine's split, feeds
 * and appends (engine_priv.h).  A batch stream allocates no thread: workers
 * start on first use and wait on their own condition variable between
 * tasks. */
#include "gpu/engine_priv.h"

#include <stdlib.h>

#include "proto/ga_err.h"

enum { W_IDLE, W_BUSY, W_QUIT };

static void *worker_main(void *arg)
{
    struct eng_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->state == W_IDLE)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->state == W_QUIT)
            break;
        pthread_mutex_unlock(&w->mu);
        w->fn(w->ctx, w->task);
        pthread_mutex_lock(&w->mu);
        w->state = W_IDLE;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int eng_pool_init(struct eng_pool *p, int cap)
{
    p->n = 0;
    p->cap = cap;
    p->w = calloc(cap > 0 ? (size_t)cap : 1, sizeof *p->w);
    return p->w ? 0 : GA_ENOMEM;
}

/* Start workers until there are `want` (or as many as could be started). */
static void pool_grow(struct eng_pool *p, int want)
{
    if (want > p->cap)
        want = p->cap;
    while (p->n < want) {
        struct eng_worker *w = &p->w[p->n];
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        w->state = W_IDLE;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
            pthread_cond_destroy(&w->cv);
            pthread_mutex_destroy(&w->mu);
            return;
        }
        pthread_setname_np(w->th, "ga-engine-pool");
        p->n++;
    }
}

void eng_pool_stop(struct eng_pool *p)
{
    for (int i = 0; i < p->n; i++) {
        struct eng_worker *w = &p->w[i];
        pthread_mutex_lock(&w->mu);
        w->state = W_QUIT;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->th, NULL);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
    }
    p->n = 0;
    free(p->w);
    p->w = NULL;
}

void eng_run(struct eng_pool *p, int n, void (*fn)(void *ctx, int task), void *ctx)
{
    if (n > 1)
        pool_grow(p, n - 1);
    int posted = n - 1 < p->n ? n - 1 : p->n;
    for (int t = 1; t <= posted; t++) {
        struct eng_worker *w = &p->w[t - 1];
        pthread_mutex_lock(&w->mu);
        w->fn = fn;
        w->ctx = ctx;
        w->task = t;
        w->state = W_BUSY;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    fn(ctx, 0);
    for (int t = posted + 1; t < n; t++)
        fn(ctx, t);
    for (int t = 1; t <= posted; t++) {
        struct eng_worker *w = &p->w[t - 1];
        pthread_mutex_lock(&w->mu);
        while (w->state == W_BUSY)
            pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
}
