/* job_par.h — the CPU references' parallel loop (apd, gf820, dot,
 * blackscholes; kmeans runs its loops on a pool of its own): threads over
 * independent items, dynamic scheduling, a progress/cancel callback between
 * rounds. */
#ifndef GA_JOB_PAR_H
#define GA_JOB_PAR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Progress/cancel callback of the job kernels: called between chunks of
 * work with the items done so far and the total; return nonzero to cancel
 * (the job then returns GA_ECANCELED). */
typedef int (*job_par_progress_fn)(void *ud, size_t done, size_t total);

/* Calls body(ctx, i, worker) once for every i in [0, n), on `threads`
 * workers (the calling thread is worker 0; worker < threads) of one
 * proto/base/pool.h pool, kept for the call: items handed out one at a time
 * in increasing order (a round of no more items than threads: one each), in
 * rounds of `round` items (0: all at once).  After each round cb(ud, done, n) when cb is non-NULL.
 * Returns 0, GA_ECANCELED when cb asked to stop (the rest is not run), or
 * GA_EINVAL for threads < 1.  If a thread cannot be started the round runs
 * on fewer workers. */
int job_par_for(size_t n, int threads, size_t round, void (*body)(void *ctx, size_t i, int worker),
                void *ctx, job_par_progress_fn cb, void *ud);

#ifdef __cplusplus
}
#endif

#endif
