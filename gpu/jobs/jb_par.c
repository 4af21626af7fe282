/* jb_par.c — see jb_par.h. */
#include "gpu/jobs/jb_par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "proto/ga_err.h"

struct jb_round {
    void (*body)(void *ctx, size_t i, int worker);
    void *ctx;
    atomic_size_t next;
    size_t end;
};

struct jb_worker {
    struct jb_round *r;
    int id;
};

static void run_worker(struct jb_round *r, int id)
{
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (i >= r->end)
            return;
        r->body(r->ctx, i, id);
    }
}

static void *worker_main(void *arg)
{
    struct jb_worker *w = arg;
    run_worker(w->r, w->id);
    return NULL;
}

int jb_parallel_for(size_t n, int threads, size_t round, void (*body)(void *ctx, size_t i, int worker),
                    void *ctx, jb_progress_fn cb, void *ud)
{
    if (threads < 1)
        return GA_EINVAL;
    if (round == 0)
        round = n;
    pthread_t *tid = NULL;
    struct jb_worker *ws = NULL;
    if (threads > 1) {
        tid = calloc((size_t)threads, sizeof *tid);
        ws = calloc((size_t)threads, sizeof *ws);
        if (!tid || !ws)
            threads = 1;               /* no memory for bookkeeping: run alone */
    }
    int rc = 0;
    for (size_t begin = 0; begin < n; begin += round) {
        struct jb_round r = { .body = body, .ctx = ctx, .end = begin + round < n ? begin + round : n };
        atomic_init(&r.next, begin);
        int started = 0;
        for (int t = 1; t < threads; t++) {
            ws[t].r = &r;
            ws[t].id = t;
            if (pthread_create(&tid[t], NULL, worker_main, &ws[t]) != 0)
                break;
            started = t;
        }
        run_worker(&r, 0);
        for (int t = 1; t <= started; t++)
            pthread_join(tid[t], NULL);
        if (cb && cb(ud, r.end, n) != 0) {
            rc = r.end < n ? GA_ECANCELED : 0;
            break;
        }
    }
    free(tid);
    free(ws);
    return rc;
}
