/* engine_feed.c — feeding a batch to the backends (engine.h, engine_priv.h).
 *
 * A batch goes through three steps:
 *   1. split (engine_split.c), on the caller's thread — skipped when one
 *      backend serves every metric;
 *   2. feed: every slot with points fed at the same time, one per thread.
 *      The first such slot writes straight into the caller's result, the
 *      others into per-slot results.  A primary that failed with GA_ECUDA
 *      fails over afterwards and its share is fed to the fallback into the
 *      same place (a share split before its backend failed goes there too);
 *   3. append: one reservation of the caller's result for the other slots'
 *      rows, copied in on several threads.
 * ga_engine_feed runs 2 and 3 on the caller's thread.  ga_engine_feed_start
 * hands them to the feeder thread and returns, so that the caller splits
 * batch k + 1 while the backends feed batch k; ga_engine_feed_wait takes
 * the oldest batch's result.  Rows come out in slot order whatever the
 * timing, and the same batches give the same rows either way. */
#include "gpu/engine_priv.h"

#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

/* Appending: at least this many bytes per copying thread, at most
 * COPY_MAX_THREADS threads. */
#define COPY_PART_MIN ((size_t)2 << 20)

static void time_slot(struct eng_batch *bt, int s, double secs)
{
    if (s < GA_ENGINE_TIMED_SLOTS)
        bt->times.slot_s[s] += secs;
}

/* One backend serves the whole batch (no split): slot 0, or the fallback
 * once slot 0 has failed; a GA_ECUDA from slot 0 drops its partial output,
 * fails over and feeds the fallback instead. */
static int feed_one(struct ga_engine *e, struct eng_batch *bt)
{
    struct ga_result *out = bt->out;
    size_t naggs = out->naggs, nrows = out->nrows, nlate = out->nlate;
    int s = e->failed[0] ? e->nb : 0;
    double t0 = eng_now();
    int rc = e->b[s]->ops->feed(e->b[s], &bt->pts, out);
    time_slot(bt, s, eng_now() - t0);
    if (rc != GA_ECUDA || s == e->nb || !e->have_fallback)
        return rc;
    out->naggs = naggs;
    out->nrows = nrows;
    out->nlate = nlate;
    eng_fail_over(e, 0, rc);
    t0 = eng_now();
    rc = e->b[e->nb]->ops->feed(e->b[e->nb], &bt->pts, out);
    time_slot(bt, e->nb, eng_now() - t0);
    return rc;
}

static struct ga_points sub_of(const struct eng_batch *bt, int s)
{
    return eng_sub_points(bt, bt->bstart[s], bt->bstart[s + 1]);
}

struct feed_ctx {
    struct ga_engine *e;
    struct eng_batch *bt;
};

/* Task t feeds slot busy[t] into out (t = 0) or into part[busy[t]].  A
 * share split for a primary that has failed since is left to the fallback
 * (after the others: the fallback may be feeding its own share now). */
static void feed_task(void *arg, size_t item, int worker)
{
    int t = (int)item;
    struct feed_ctx *c = arg;
    struct ga_engine *e = c->e;
    struct eng_batch *bt = c->bt;
    int s = bt->busy[t];
    if (s < e->nb && e->failed[s]) {
        bt->frc[t] = GA_ECUDA;
        bt->fsecs[t] = 0;
        return;
    }
    struct ga_points sub = sub_of(bt, s);
    struct ga_result *dst = t == 0 ? bt->out : &bt->part[s];
    double t0 = eng_now();
    bt->frc[t] = e->b[s]->ops->feed(e->b[s], &sub, dst);
    bt->fsecs[t] = eng_now() - t0;
}

/* Appending: byte range t of T of the pieces laid end to end. */
struct copy_ctx {
    const struct copy_piece *pc;
    int npieces, nthreads;
    size_t total;
};

static void copy_task(void *arg, size_t item, int worker)
{
    int t = (int)item;
    const struct copy_ctx *c = arg;
    size_t lo = c->total / (size_t)c->nthreads * (size_t)t & ~(size_t)63;
    size_t hi = t + 1 == c->nthreads ? c->total
              : c->total / (size_t)c->nthreads * (size_t)(t + 1) & ~(size_t)63;
    size_t base = 0;
    for (int i = 0; i < c->npieces && base < hi; base += c->pc[i].bytes, i++) {
        size_t a = lo > base ? lo - base : 0;
        size_t z = hi - base < c->pc[i].bytes ? hi - base : c->pc[i].bytes;
        if (a < z)
            memcpy(c->pc[i].dst + a, c->pc[i].src + a, z - a);
    }
}

/* The other slots' output after the first's: one reservation, then copies
 * on several threads.  Output up to slot busy[upto] (excluded). */
static int append_parts(struct ga_engine *e, struct eng_batch *bt, int upto)
{
    struct ga_result *out = bt->out;
    size_t more_aggs = 0, more_late = 0;
    for (int t = 1; t < upto; t++) {
        more_aggs += bt->part[bt->busy[t]].naggs;
        more_late += bt->part[bt->busy[t]].nlate;
    }
    int rc = ga_result_reserve(out, more_aggs, more_late);
    if (rc)
        return rc;
    struct copy_piece *pc = bt->pieces;
    int np = 0;
    size_t total = 0;
    for (int t = 1; t < upto; t++) {          /* rows and late points: disjoint pieces */
        const struct ga_result *p = &bt->part[bt->busy[t]];
        if (p->naggs)
            pc[np++] = (struct copy_piece){ (char *)(out->aggs + out->naggs),
                                            (const char *)p->aggs, p->naggs * sizeof *p->aggs };
        if (p->nlate)
            pc[np++] = (struct copy_piece){ (char *)(out->late + out->nlate),
                                            (const char *)p->late, p->nlate * sizeof *p->late };
        out->naggs += p->naggs;
        out->nrows += p->nrows;
        out->nlate += p->nlate;
        total += p->naggs * sizeof *p->aggs + p->nlate * sizeof *p->late;
    }
    size_t nt = total / COPY_PART_MIN, maxt = (size_t)(e->ncpu < COPY_MAX_THREADS ? e->ncpu
                                                                                : COPY_MAX_THREADS);
    struct copy_ctx cc = { pc, np, nt < 1 ? 1 : nt > maxt ? (int)maxt : (int)nt, total };
    pool_run(e->feed_pool, (size_t)cc.nthreads, copy_task, &cc);
    return 0;
}

/* Feed every slot's share (split done); *t_fed gets the time the feeds
 * (and fail-overs) ended, before the append. */
static int feed_split(struct ga_engine *e, struct eng_batch *bt, double *t_fed)
{
    int ns = eng_nslots(e), n = 0, *busy = bt->busy, *frc = bt->frc;
    struct ga_result *out = bt->out;
    for (int s = 0; s < ns; s++)
        if (bt->bstart[s + 1] > bt->bstart[s])
            busy[n++] = s;
    size_t naggs0 = out->naggs, nrows0 = out->nrows, nlate0 = out->nlate;
    for (int t = 1; t < n; t++)
        ga_result_reset(&bt->part[busy[t]]);
    struct feed_ctx fc = { e, bt };
    pool_run(e->feed_pool, (size_t)n, feed_task, &fc);
    for (int t = 0; t < n; t++)
        time_slot(bt, busy[t], bt->fsecs[t]);
    /* GA_ECUDA: fail over in slot order, the share re-fed to the fallback
     * into the same place (the failed feed left the backend unchanged). */
    int upto = n, rc = 0;
    for (int t = 0; t < n; t++) {
        int s = busy[t];
        if (frc[t] == GA_ECUDA && s < e->nb && e->have_fallback) {
            struct ga_result *dst = t == 0 ? out : &bt->part[s];
            if (t == 0) {
                out->naggs = naggs0;
                out->nrows = nrows0;
                out->nlate = nlate0;
            } else {
                ga_result_reset(dst);
            }
            if (!e->failed[s])
                eng_fail_over(e, s, frc[t]);
            struct ga_points sub = sub_of(bt, s);
            double t0 = eng_now();
            frc[t] = e->b[e->nb]->ops->feed(e->b[e->nb], &sub, dst);
            time_slot(bt, e->nb, eng_now() - t0);
        }
        if (frc[t] && upto == n) {
            upto = t;                 /* output up to the first failure is kept */
            rc = frc[t];
        }
    }
    *t_fed = eng_now();
    if (upto == 0) {
        out->naggs = naggs0;
        out->nrows = nrows0;
        out->nlate = nlate0;
    }
    if (upto < 2)
        return rc;
    int r = append_parts(e, bt, upto);
    return rc ? rc : r;
}

/* Steps 2 and 3 of a split batch (or its one feed): the feeder's thread,
 * or the caller's in ga_engine_feed. */
static void run_batch(struct ga_engine *e, struct eng_batch *bt)
{
    double t0 = eng_now(), t_fed;
    if (bt->split) {
        bt->rc = feed_split(e, bt, &t_fed);
    } else {
        bt->rc = feed_one(e, bt);
        t_fed = eng_now();
    }
    double t_end = eng_now();
    bt->times.feed_s = t_fed - t0;
    bt->times.append_s = t_end - t_fed;
    bt->times.total_s = t_end - bt->t0;
}

/* ---- the feeder --------------------------------------------------------- */

/* The oldest batch queued for the feeder (queued 1), or in flight at all
 * (queued or done, not yet waited for); NULL: none.  Under mu. */
static struct eng_batch *oldest(struct ga_engine *e, int queued)
{
    struct eng_batch *o = NULL;
    for (int i = 0; i < ENG_INFLIGHT; i++) {
        struct eng_batch *bt = &e->batch[i];
        int match = queued ? bt->state == B_QUEUED : bt->state != B_FREE;
        if (match && (!o || bt->seq < o->seq))
            o = bt;
    }
    return o;
}

static void *feeder_main(void *arg)
{
    struct ga_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        struct eng_batch *bt = oldest(e, 1);
        if (!bt) {
            if (e->feeder_quit)
                break;
            pthread_cond_wait(&e->cv, &e->mu);
            continue;
        }
        pthread_mutex_unlock(&e->mu);
        run_batch(e, bt);
        pthread_mutex_lock(&e->mu);
        bt->state = B_DONE;
        pthread_cond_broadcast(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

void eng_drain(struct ga_engine *e)
{
    if (!e->feeder_on)
        return;
    pthread_mutex_lock(&e->mu);
    while (oldest(e, 1))
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

void eng_feeder_stop(struct ga_engine *e)
{
    if (!e->feeder_on)
        return;
    pthread_mutex_lock(&e->mu);
    e->feeder_quit = 1;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->feeder, NULL);
    e->feeder_on = 0;
}

int eng_batches_init(struct ga_engine *e)
{
    size_t ns = (size_t)e->nb + 1;
    for (int i = 0; i < ENG_INFLIGHT; i++) {
        struct eng_batch *bt = &e->batch[i];
        bt->bstart = calloc(ns + 2, sizeof *bt->bstart);
        bt->part = calloc(ns, sizeof *bt->part);
        bt->busy = calloc(ns, sizeof *bt->busy);
        bt->frc = calloc(ns, sizeof *bt->frc);
        bt->fsecs = calloc(ns, sizeof *bt->fsecs);
        bt->pieces = calloc(2 * ns, sizeof *bt->pieces);
        if (!bt->bstart || !bt->part || !bt->busy || !bt->frc || !bt->fsecs || !bt->pieces)
            return GA_ENOMEM;
        for (size_t s = 0; s < ns; s++)
            bt->part[s].want_pinned = e->has_cuda;
    }
    return 0;
}

void eng_batches_free(struct ga_engine *e)
{
    for (int i = 0; i < ENG_INFLIGHT; i++) {
        struct eng_batch *bt = &e->batch[i];
        eng_free_sub(bt);         /* page-locked: before the GPUs' backends go */
        if (bt->part)
            for (int s = 0; s <= e->nb; s++)
                ga_result_free(&bt->part[s]);
        free(bt->bstart);
        free(bt->part);
        free(bt->busy);
        free(bt->frc);
        free(bt->fsecs);
        free(bt->pieces);
        memset(bt, 0, sizeof *bt);
    }
}

/* ---- start, wait ---------------------------------------------------------- */

/* Statistics and late points of a finished batch (the caller's thread). */
static int finish(struct ga_engine *e, struct eng_batch *bt)
{
    const struct ga_result *out = bt->out;
    e->times = bt->times;
    e->stats.points_in += bt->pts.n;
    e->stats.aggs_out += out->nrows - bt->nrows0;
    eng_account_late(e, out, bt->nlate0);
    if (!bt->rc)
        e->stats.points_aggregated += bt->pts.n - (out->nlate - bt->nlate0);
    return bt->rc;
}

/* Take a free batch for pts → out and split it (step 1).  0 (the batch is
 * ready for step 2), GA_EBUSY, GA_EINVAL, or the split's error (the batch
 * is then finished: statistics counted, free again).  pipe: the feeds run
 * on the feeder, so even one backend's batch is "split" — copied into
 * page-locked memory by the caller's threads, a GPU then DMAs it with no
 * staging of its own — when the engine splits into page-locked memory. */
static int begin(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out, int pipe,
                 struct eng_batch **got)
{
    if (pts->n && !pts->ts && (!pts->ts32 || pts->ts_unit <= 0))
        return GA_EINVAL;             /* neither form of timestamps (engine.h) */
    struct eng_batch *bt = NULL;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < ENG_INFLIGHT; i++) {
        if (e->batch[i].state != B_FREE && e->batch[i].out == out) {
            pthread_mutex_unlock(&e->mu);
            return GA_EINVAL;
        }
        if (e->batch[i].state == B_FREE && !bt)
            bt = &e->batch[i];
    }
    pthread_mutex_unlock(&e->mu);
    if (!bt)
        return GA_EBUSY;
    bt->out = out;
    bt->pts = *pts;
    bt->naggs0 = out->naggs;
    bt->nrows0 = out->nrows;
    bt->nlate0 = out->nlate;
    bt->seq = e->next_seq++;
    bt->pipe = pipe;
    bt->times = (struct ga_engine_feed_times){ .nslots = eng_nslots(e) };
    bt->t0 = eng_now();
    if (e->has_cuda)
        out->want_pinned = 1;         /* the first GPU's rows land there straight from it */
    for (int s = 0; s <= e->nb; s++)  /* the others' rows come as the caller reads them */
        bt->part[s].want_wide = out->want_wide;
    pthread_rwlock_rdlock(&e->route);
    /* one backend serves every metric (the fallback none yet): no split */
    bt->split = !(e->nb == 1 && !e->failed[0]) || (pipe && e->want_pinned);
    pthread_rwlock_unlock(&e->route);
    bt->rc = bt->split ? eng_split(e, bt) : 0;
    bt->times.split_s = eng_now() - bt->t0;
    if (bt->rc) {
        bt->times.total_s = bt->times.split_s;
        return finish(e, bt);
    }
    *got = bt;
    return 0;
}

int ga_engine_feed(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out)
{
    pthread_mutex_lock(&e->mu);
    int busy = oldest(e, 0) != NULL;
    pthread_mutex_unlock(&e->mu);
    if (busy)
        return GA_EBUSY;
    struct eng_batch *bt;
    int rc = begin(e, pts, out, 0, &bt);
    if (rc)
        return rc;
    run_batch(e, bt);                 /* the feeder is idle: no batch in flight */
    return finish(e, bt);             /* bt stayed B_FREE: nobody else looks at it */
}

int ga_engine_feed_start(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out)
{
    if (!e->feeder_on) {
        if (pthread_create(&e->feeder, NULL, feeder_main, e) != 0)
            return GA_ENOMEM;
        pthread_setname_np(e->feeder, "ga-feeder");
        e->feeder_on = 1;
    }
    struct eng_batch *bt;
    int rc = begin(e, pts, out, 1, &bt);
    if (rc)
        return rc;
    pthread_mutex_lock(&e->mu);
    bt->state = B_QUEUED;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

int ga_engine_feed_wait(struct ga_engine *e)
{
    pthread_mutex_lock(&e->mu);
    struct eng_batch *bt = oldest(e, 0);
    while (bt && bt->state != B_DONE)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    if (!bt)
        return GA_ENOENT;
    int rc = finish(e, bt);
    pthread_mutex_lock(&e->mu);
    bt->state = B_FREE;
    pthread_mutex_unlock(&e->mu);
    return rc;
}
