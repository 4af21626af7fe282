/* pool.h — the one thread pool: persistent helper threads running one
 * parallel loop at a time (the CPU backend's phases, the engine's split,
 * feeds and appends, the job kernels' CPU references).
 *
 * pool_run(p, n, fn, ctx) calls fn(ctx, item, worker) once for every item
 * of [0, n).  The caller is worker 0 and takes items too; up to nthreads - 1
 * helpers (workers 1..nthreads-1, started on first need and kept) take the
 * others.  When there are no more items than workers, item i is worker i's
 * (item 0 the caller's: one task per thread, all at once, as the engine's
 * GPU feeds want); otherwise workers take them one at a time in increasing
 * order from one atomic counter.  It returns when every item is done.  A pool serves one caller at a time.
 * One lock (the pool's); every helper a run wakes takes part in that run
 * before the next one is published, so none still reads a run's fields when
 * the next begins. */
#ifndef GA_POOL_H
#define GA_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pool;

/* A pool of nthreads workers in all, the caller of pool_run included
 * (nthreads < 1 counts as 1); name: the helpers' thread name (at most 15
 * characters, a static string).  Starts no thread.  Returns 0 with *out
 * (freed by pool_close), or GA_ENOMEM. */
int pool_open(struct pool **out, int nthreads, const char *name);

/* Stop and join the helpers, free p.  NULL is a no-op. */
void pool_close(struct pool *p);

/* Run fn(ctx, item, worker) for every item in [0, n) (worker in
 * [0, nthreads)), on min(n, nthreads) workers; the helpers missing are
 * started first, and if one cannot be started the run goes on with fewer. */
void pool_run(struct pool *p, size_t n, void (*fn)(void *ctx, size_t item, int worker), void *ctx);

/* Helpers started so far (for tests). */
int pool_started(struct pool *p);

#ifdef __cplusplus
}
#endif

#endif
