/* job_par.c — see job_par.h. */
#include "gpu/jobs/job_par.h"

#include <stdlib.h>

#include "proto/base/pool.h"
#include "proto/ga_err.h"

/* One round: items [begin, end) of the loop. */
struct job_par_round {
    void (*body)(void *ctx, size_t i, int worker);
    void *ctx;
    size_t begin;
};

static void round_item(void *arg, size_t i, int worker)
{
    struct job_par_round *r = arg;
    r->body(r->ctx, r->begin + i, worker);
}

int job_par_for(size_t n, int threads, size_t round, void (*body)(void *ctx, size_t i, int worker),
                void *ctx, job_par_progress_fn cb, void *ud)
{
    if (threads < 1)
        return GA_EINVAL;
    if (round == 0)
        round = n;
    struct pool *p = NULL;
    if (pool_open(&p, threads, NULL) != 0)
        p = NULL;                      /* no memory for bookkeeping: run alone */
    int rc = 0;
    for (size_t begin = 0; begin < n; begin += round) {
        size_t end = begin + round < n ? begin + round : n;
        struct job_par_round r = { body, ctx, begin };
        if (p) {
            pool_run(p, end - begin, round_item, &r);
        } else {
            for (size_t i = begin; i < end; i++)
                body(ctx, i, 0);
        }
        if (cb && cb(ud, end, n) != 0) {
            rc = end < n ? GA_ECANCELED : 0;
            break;
        }
    }
    pool_close(p);
    return rc;
}
