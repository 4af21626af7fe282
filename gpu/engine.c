/* engine.c — the engine: metric table, routing of batches to backends, late
 * point accounting (see engine.h).
 *
 * A metric lives on backend hash(id) % nb — or on the fallback backend
 * once that one has failed (engine.h "Failover").  The fallback is b[nb];
 * "slots" are the primaries and the fallback.  With one backend and no
 * failover a batch goes through untouched.  Otherwise, per batch:
 *
 *   1. split: a counting sort (count, then scatter, both by ranges of the
 *      batch on the engine's workers) into one columnar sub-batch per slot,
 *      arrival order kept, points of unknown ids last; those become late
 *      points.  The sub-batch arrays are page-locked when a backend is a
 *      CUDA one (it DMAs straight from them, no staging copy of its own).
 *   2. feed: every slot with points is fed at the same time, one per thread
 *      (the caller's and persistent workers).  The first such slot writes
 *      straight into the caller's result, the others into per-slot results.
 *      A primary that failed with GA_ECUDA fails over afterwards, on the
 *      caller's thread, and its share is fed to the fallback into the same
 *      place.
 *   3. append: one reservation of the caller's result for the other slots'
 *      rows, copied in on several threads.
 *
 * Rows come out in slot order whatever the timing.  Every buffer (sub-batch,
 * per-slot results, counts, workers) is kept from batch to batch, so a
 * steady stream of batches allocates nothing. */
#include "gpu/engine.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"
#include "gpu/cuda.h"
#include "proto/ga_err.h"

#define LATE_LOG_INTERVAL_NS (10 * 1000000000LL)
#define SLOT_NONE UINT16_MAX              /* slot_of: id not added (or dropped) */

/* Splitting: ranges of at least this many points per thread, at most
 * SPLIT_MAX_PARTS ranges (and no more than the online cores).  On the
 * 32-core host of two H200s, 32 threads split 100 M points in 0.054 s, 16
 * in 0.068 s (docs/PERFORMANCE.md). */
#define SPLIT_PART_MIN ((size_t)1 << 16)
#define SPLIT_MAX_PARTS 64
/* Appending: at least this many bytes per copying thread, at most
 * COPY_MAX_THREADS threads. */
#define COPY_PART_MIN ((size_t)2 << 20)
#define COPY_MAX_THREADS 8

struct eng_metric {
    const struct ga_policy *policy;   /* the caller's, kept alive by it (the registry) */
    struct ga_metric_stats st;
};

struct copy_piece {
    char *dst;
    const char *src;
    size_t bytes;
};

/* A persistent worker thread running one task at a time (eng_run). */
struct eng_worker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void *ctx, int task);
    void *ctx;
    int task;
    int state;                        /* W_IDLE, W_BUSY, W_QUIT; under mu */
};
enum { W_IDLE, W_BUSY, W_QUIT };

struct ga_engine {
    struct ga_backend **b;            /* nb primaries, then the fallback (if any) */
    int nb;
    int have_fallback;
    uint8_t *failed;                  /* per primary */
    uint64_t *nmetrics;               /* per backend, fallback last */
    struct ga_engine_failover_stats fo;
    struct eng_metric *m;             /* by id, cap_m */
    uint16_t *slot_of;                /* by id, cap_m: the metric's slot, or SLOT_NONE */
    size_t cap_m;
    struct ga_engine_stats stats;
    struct ga_ratelimit rl;
    int ncpu;                         /* online cores, for the split and append threads */
    /* per batch when split, reused */
    void *sub_block;                  /* ts, then value, then metric, cap_sub each */
    int sub_pinned;                   /* sub_block from ga_cuda_host_alloc */
    int want_pinned;                  /* a CUDA backend: split into page-locked memory */
    int has_cuda;                     /* results in page-locked memory (ga_result.want_pinned) */
    uint32_t *sub_metric;
    int64_t *sub_ts;
    double *sub_value;
    size_t cap_sub;
    size_t *bstart;                   /* ns + 2: slot starts, unknown ids, end */
    size_t *cnt;                      /* SPLIT_MAX_PARTS x (nb + 2) split counts */
    struct ga_result *part;           /* per slot output, when slots run concurrently */
    int *busy, *frc;                  /* per slot: slots with points, their feeds' rc */
    double *fsecs;                    /* and times */
    struct copy_piece *pieces;        /* 2 per slot: rows, late points */
    struct eng_worker *w;             /* cap_w, of which the first nw are started */
    int nw, cap_w;
    struct ga_engine_feed_times times;   /* of the last feed */
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void time_slot(struct ga_engine *e, int b, double s)
{
    if (b < GA_ENGINE_TIMED_SLOTS)
        e->times.slot_s[b] += s;
}

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

static int backend_of(const struct ga_engine *e, uint32_t id)
{
    int b = e->nb == 1 ? 0 : (int)(hash32(id) % (uint32_t)e->nb);
    return e->failed[b] ? e->nb : b;  /* failed: the fallback */
}

/* Backends a batch can be split over: the primaries, and the fallback. */
static int nslots(const struct ga_engine *e)
{
    return e->nb + e->have_fallback;
}

static struct eng_metric *metric_at(const struct ga_engine *e, uint32_t id)
{
    return id < e->cap_m && e->slot_of[id] != SLOT_NONE ? &e->m[id] : NULL;
}

/* ---- workers ----------------------------------------------------------- */

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

/* Start workers until there are `want` (or as many as could be started);
 * e->w has room for every worker a feed can use (ga_engine_open). */
static void workers_grow(struct ga_engine *e, int want)
{
    if (want > e->cap_w)
        want = e->cap_w;
    while (e->nw < want) {
        struct eng_worker *w = &e->w[e->nw];
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        w->state = W_IDLE;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
            pthread_cond_destroy(&w->cv);
            pthread_mutex_destroy(&w->mu);
            return;
        }
        e->nw++;
    }
}

static void workers_stop(struct ga_engine *e)
{
    for (int i = 0; i < e->nw; i++) {
        struct eng_worker *w = &e->w[i];
        pthread_mutex_lock(&w->mu);
        w->state = W_QUIT;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->th, NULL);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
    }
    e->nw = 0;
}

/* Run fn(ctx, t) for t in [0, n), each task on its own thread: task 0 on
 * the caller, task t on worker t - 1 (tasks no worker could take run on
 * the caller after task 0).  Returns when all are done. */
static void eng_run(struct ga_engine *e, int n, void (*fn)(void *ctx, int task), void *ctx)
{
    if (n > 1)
        workers_grow(e, n - 1);
    int posted = n - 1 < e->nw ? n - 1 : e->nw;
    for (int t = 1; t <= posted; t++) {
        struct eng_worker *w = &e->w[t - 1];
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
        struct eng_worker *w = &e->w[t - 1];
        pthread_mutex_lock(&w->mu);
        while (w->state == W_BUSY)
            pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
}

/* ---- open, close, metrics ----------------------------------------------- */

/* The engine's own memory (not its backends, results or workers); NULL ok. */
static void free_engine(struct ga_engine *e)
{
    if (!e)
        return;
    free(e->b);
    free(e->bstart);
    free(e->cnt);
    free(e->failed);
    free(e->nmetrics);
    free(e->m);
    free(e->slot_of);
    free(e->part);
    free(e->busy);
    free(e->frc);
    free(e->fsecs);
    free(e->pieces);
    free(e->w);
    free(e);
}

int ga_engine_open(struct ga_engine **out, struct ga_backend **backends, int nb)
{
    int rc = GA_EINVAL;
    struct ga_engine *e = NULL;
    if (nb < 1 || nb >= SLOT_NONE)
        goto fail;
    rc = GA_ENOMEM;
    e = calloc(1, sizeof *e);
    if (!e)
        goto fail;
    e->b = calloc((size_t)nb + 1, sizeof *e->b);
    e->bstart = calloc((size_t)nb + 3, sizeof *e->bstart);
    e->cnt = calloc((size_t)SPLIT_MAX_PARTS * ((size_t)nb + 2), sizeof *e->cnt);
    e->failed = calloc((size_t)nb, 1);
    e->nmetrics = calloc((size_t)nb + 1, sizeof *e->nmetrics);
    e->part = calloc((size_t)nb + 1, sizeof *e->part);
    e->busy = calloc((size_t)nb + 1, sizeof *e->busy);
    e->frc = calloc((size_t)nb + 1, sizeof *e->frc);
    e->fsecs = calloc((size_t)nb + 1, sizeof *e->fsecs);
    e->pieces = calloc(2 * ((size_t)nb + 1), sizeof *e->pieces);
    /* workers: one per slot but the caller's, or per split range but the caller's */
    e->cap_w = nb > SPLIT_MAX_PARTS - 1 ? nb : SPLIT_MAX_PARTS - 1;
    e->w = calloc((size_t)e->cap_w, sizeof *e->w);
    if (!e->b || !e->bstart || !e->cnt || !e->failed || !e->nmetrics || !e->part || !e->busy ||
        !e->frc || !e->fsecs || !e->pieces || !e->w)
        goto fail;
    memcpy(e->b, backends, (size_t)nb * sizeof *e->b);
    e->nb = nb;
    for (int i = 0; i < nb; i++)
        if (strcmp(backends[i]->ops->name, "cuda") == 0)
            e->want_pinned = e->has_cuda = 1;
    for (int i = 0; i <= nb; i++)
        e->part[i].want_pinned = e->has_cuda;
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    e->ncpu = nc > 0 ? (int)nc : 1;
    e->rl = (struct ga_ratelimit)GA_RATELIMIT_INIT(LATE_LOG_INTERVAL_NS);
    *out = e;
    return 0;
fail:
    free_engine(e);
    for (int i = 0; i < nb; i++)
        if (backends[i])
            backends[i]->ops->close(backends[i]);
    return rc;
}

static void free_sub(struct ga_engine *e)
{
    if (e->sub_pinned)
        ga_cuda_host_free(e->sub_block);
    else
        free(e->sub_block);
    e->sub_block = NULL;
    e->sub_pinned = 0;
    e->sub_metric = NULL;
    e->sub_ts = NULL;
    e->sub_value = NULL;
    e->cap_sub = 0;
}

void ga_engine_close(struct ga_engine *e)
{
    if (!e)
        return;
    workers_stop(e);
    free_sub(e);                      /* page-locked: before the GPUs' backends go */
    for (int i = 0; i < nslots(e); i++)
        e->b[i]->ops->close(e->b[i]);
    for (int i = 0; i <= e->nb; i++)
        ga_result_free(&e->part[i]);
    free_engine(e);
}

void ga_engine_set_pinned_split(struct ga_engine *e, int on)
{
    if (!on && e->sub_pinned)
        free_sub(e);
    e->want_pinned = on;
}

int ga_engine_metric_add(struct ga_engine *e, uint32_t id, const struct ga_policy *p)
{
    if (id >= e->cap_m) {
        size_t c = e->cap_m ? e->cap_m : 1024;
        while (c <= id)
            c *= 2;
        struct eng_metric *m = realloc(e->m, c * sizeof *m);
        if (!m)
            return GA_ENOMEM;
        memset(m + e->cap_m, 0, (c - e->cap_m) * sizeof *m);
        e->m = m;                     /* bigger than cap_m says: harmless */
        uint16_t *so = realloc(e->slot_of, c * sizeof *so);
        if (!so)
            return GA_ENOMEM;
        for (size_t i = e->cap_m; i < c; i++)
            so[i] = SLOT_NONE;
        e->slot_of = so;
        e->cap_m = c;
    }
    int live = e->slot_of[id] != SLOT_NONE;
    int bi = live ? e->slot_of[id] : backend_of(e, id);
    int rc = e->b[bi]->ops->metric_add(e->b[bi], id, p);
    if (rc)
        return rc;
    if (!live) {
        e->m[id] = (struct eng_metric){ 0 };
        e->slot_of[id] = (uint16_t)bi;
        e->stats.metrics++;
        e->nmetrics[bi]++;
    }
    e->m[id].policy = p;
    return 0;
}

void ga_engine_metric_drop(struct ga_engine *e, uint32_t id)
{
    struct eng_metric *m = metric_at(e, id);
    if (!m)
        return;
    int bi = e->slot_of[id];
    e->b[bi]->ops->metric_drop(e->b[bi], id);
    e->nmetrics[bi]--;
    *m = (struct eng_metric){ 0 };
    e->slot_of[id] = SLOT_NONE;
    e->stats.metrics--;
}

int ga_engine_metric_stats(const struct ga_engine *e, uint32_t id, struct ga_metric_stats *st)
{
    const struct eng_metric *m = metric_at(e, id);
    if (!m)
        return GA_ENOENT;
    *st = m->st;
    return 0;
}

int ga_engine_window_get(struct ga_engine *e, uint32_t id, struct ga_window *w)
{
    if (!metric_at(e, id))
        return GA_ENOENT;
    struct ga_backend *b = e->b[e->slot_of[id]];
    return b->ops->window_get(b, id, w);
}

int ga_engine_window_put(struct ga_engine *e, uint32_t id, const struct ga_policy *p,
                         const struct ga_window *w)
{
    int rc = ga_engine_metric_add(e, id, p);
    if (rc)
        return rc;
    int bi = e->slot_of[id];
    return e->b[bi]->ops->window_put(e->b[bi], id, p, w);
}

/* Count and log the late points out->late[from..]. */
static void account_late(struct ga_engine *e, const struct ga_result *out, size_t from)
{
    uint64_t by[5] = { 0 };
    for (size_t i = from; i < out->nlate; i++) {
        const struct ga_late *l = &out->late[i];
        struct eng_metric *m = metric_at(e, l->metric);
        switch (l->reason) {
        case GA_LATE_WINDOW:
            e->stats.late_window++;
            if (m)
                m->st.late_window++;
            break;
        case GA_LATE_BEFORE_EPOCH:
            e->stats.late_before_epoch++;
            if (m)
                m->st.late_before_epoch++;
            break;
        case GA_LATE_NONFINITE:
            e->stats.late_nonfinite++;
            if (m)
                m->st.late_nonfinite++;
            break;
        default:
            e->stats.late_unknown++;
            break;
        }
        by[l->reason < 5 ? l->reason : 0]++;
    }
    uint64_t suppressed;
    if (out->nlate > from && ga_ratelimit_ok(&e->rl, &suppressed)) {
        const struct ga_late *l = &out->late[from];
        ga_log(GA_LOG_WARN, "late_points",
               "count=%zu window=%" PRIu64 " before_epoch=%" PRIu64 " nonfinite=%" PRIu64
               " unknown_metric=%" PRIu64 " first_metric=%" PRIu32 " first_ts=%" PRId64
               " first_reason=%s suppressed=%" PRIu64,
               out->nlate - from, by[GA_LATE_WINDOW], by[GA_LATE_BEFORE_EPOCH],
               by[GA_LATE_NONFINITE], by[GA_LATE_UNKNOWN_METRIC], l->metric, l->ts,
               ga_late_reason_name(l->reason), suppressed);
    }
}

/* ---- split -------------------------------------------------------------- */

/* Room for n points in the sub-batch arrays (contents not kept: every
 * batch is split afresh).  Page-locked when a CUDA backend will read them,
 * unless that cannot be had. */
static int reserve_sub(struct ga_engine *e, size_t n)
{
    if (n <= e->cap_sub)
        return 0;
    if (n > SIZE_MAX / 64)
        return GA_ETOOBIG;
    size_t c = n + n / 4 + 1024;
    if (c < e->cap_sub + e->cap_sub / 2)
        c = e->cap_sub + e->cap_sub / 2;
    free_sub(e);
    size_t bytes = c * (sizeof *e->sub_ts + sizeof *e->sub_value + sizeof *e->sub_metric);
    void *p = NULL;
    if (e->want_pinned && ga_cuda_host_alloc(&p, bytes) == 0) {
        e->sub_pinned = 1;
    } else {
        if (e->want_pinned)
            ga_log(GA_LOG_WARN, "engine_split_pageable", "bytes=%zu reason=\"page-locked "
                   "memory refused; GPUs will stage each batch\"", bytes);
        e->want_pinned = 0;
        if (!(p = malloc(bytes)))
            return GA_ENOMEM;
    }
    e->sub_block = p;
    e->sub_ts = p;
    e->sub_value = (double *)(e->sub_ts + c);
    e->sub_metric = (uint32_t *)(e->sub_value + c);
    e->cap_sub = c;
    return 0;
}

struct split_ctx {
    struct ga_engine *e;
    const struct ga_points *pts;
    int nparts, ns;               /* count index ns: unknown ids */
    int scatter;                  /* 0: count; 1: scatter with the counts as cursors */
};

/* One range of the batch: count its points per slot into its row of
 * e->cnt, or scatter them at the cursors of that row.  The cursors live
 * on the stack while the loop runs (rows of neighbouring ranges share
 * cache lines). */
static void split_task(void *arg, int t)
{
    struct split_ctx *c = arg;
    struct ga_engine *e = c->e;
    const struct ga_points *pts = c->pts;
    size_t lo = pts->n * (size_t)t / (size_t)c->nparts;
    size_t hi = pts->n * (size_t)(t + 1) / (size_t)c->nparts;
    size_t *row = e->cnt + (size_t)t * ((size_t)e->nb + 2), local[64];
    unsigned ns = (unsigned)c->ns;
    size_t *cur = ns + 1 <= 64 ? local : row;
    const uint16_t *so = e->slot_of;
    size_t cap = e->cap_m;
    const uint32_t *mid = pts->metric;
    if (!c->scatter) {
        memset(cur, 0, (ns + 1) * sizeof *cur);
        for (size_t i = lo; i < hi; i++) {
            unsigned s = mid[i] < cap ? so[mid[i]] : SLOT_NONE;
            cur[s < ns ? s : ns]++;
        }
    } else {
        if (cur != row)
            memcpy(cur, row, (ns + 1) * sizeof *cur);
        uint32_t *sm = e->sub_metric;
        int64_t *st = e->sub_ts;
        double *sv = e->sub_value;
        const int64_t *ts = pts->ts;
        const double *v = pts->value;
        for (size_t i = lo; i < hi; i++) {
            unsigned s = mid[i] < cap ? so[mid[i]] : SLOT_NONE;
            size_t at = cur[s < ns ? s : ns]++;
            sm[at] = mid[i];
            st[at] = ts[i];
            sv[at] = v[i];
        }
        return;
    }
    if (cur != row)
        memcpy(row, cur, (ns + 1) * sizeof *cur);
}

/* Split pts per slot into the sub arrays: slot b's share at
 * [bstart[b], bstart[b+1]), arrival order kept; points of unknown ids at
 * [bstart[ns], bstart[ns+1]) go to out->late. */
static int split(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out)
{
    int rc = reserve_sub(e, pts->n);
    if (rc)
        return rc;
    int ns = nslots(e), maxp = e->ncpu < SPLIT_MAX_PARTS ? e->ncpu : SPLIT_MAX_PARTS;
    size_t np = pts->n / SPLIT_PART_MIN;
    int nparts = np < 1 ? 1 : np > (size_t)maxp ? maxp : (int)np;
    struct split_ctx c = { e, pts, nparts, ns, 0 };
    eng_run(e, nparts, split_task, &c);
    /* Cursors: slot by slot, range by range, so order within a slot is kept. */
    size_t *bs = e->bstart, at = 0, stride = (size_t)e->nb + 2;
    for (int b = 0; b <= ns; b++) {
        bs[b] = at;
        for (int t = 0; t < nparts; t++) {
            size_t n = e->cnt[(size_t)t * stride + (size_t)b];
            e->cnt[(size_t)t * stride + (size_t)b] = at;
            at += n;
        }
    }
    bs[ns + 1] = at;
    c.scatter = 1;
    eng_run(e, nparts, split_task, &c);
    size_t unknown = bs[ns + 1] - bs[ns];
    if (!unknown)
        return 0;
    if ((rc = ga_result_reserve(out, 0, unknown)))
        return rc;
    for (size_t i = bs[ns]; i < bs[ns + 1]; i++)
        out->late[out->nlate++] = (struct ga_late){ .metric = e->sub_metric[i],
            .reason = GA_LATE_UNKNOWN_METRIC, .ts = e->sub_ts[i], .value = e->sub_value[i] };
    return 0;
}

/* ---- feed ----------------------------------------------------------------- */

/* Move every metric of failed primary b to the fallback. */
static void fail_over(struct ga_engine *e, int b, int why)
{
    struct ga_backend *from = e->b[b], *to = e->b[e->nb];
    uint64_t moved = 0, lost = 0;
    e->failed[b] = 1;
    e->fo.failovers++;
    for (size_t id = 0; id < e->cap_m; id++) {
        if (e->slot_of[id] != b)
            continue;
        struct eng_metric *m = &e->m[id];
        struct ga_window w = { 0 };
        int rc = from->ops->window_get(from, (uint32_t)id, &w);
        int ok = to->ops->metric_add(to, (uint32_t)id, m->policy) == 0;
        if (ok && rc == 0)
            ok = to->ops->window_put(to, (uint32_t)id, m->policy, &w) == 0;
        if (rc != 0 || !ok)
            lost++;
        free(w.ts);
        free(w.value);
        e->slot_of[id] = (uint16_t)e->nb;
        e->nmetrics[b]--;
        e->nmetrics[e->nb]++;
        moved++;
    }
    e->fo.metrics_moved += moved;
    e->fo.windows_lost += lost;
    ga_log(GA_LOG_ERROR, "backend_failover", "backend=%s error=\"%s\" metrics_moved=%" PRIu64
           " windows_lost=%" PRIu64 " to=%s", from->label, ga_strerror(why), moved, lost,
           to->label);
}

/* Feed backend slot b its points, appending to dst; a primary failing with
 * GA_ECUDA while there is a fallback: drop its partial output (dst back to
 * naggs, nlate), fail over, feed the fallback instead. */
static int feed_one(struct ga_engine *e, int b, const struct ga_points *pts, struct ga_result *dst)
{
    size_t naggs = dst->naggs, nlate = dst->nlate;
    double t0 = now_s();
    int rc = e->b[b]->ops->feed(e->b[b], pts, dst);
    time_slot(e, b, now_s() - t0);
    if (rc != GA_ECUDA || b == e->nb || !e->have_fallback)
        return rc;
    dst->naggs = naggs;
    dst->nlate = nlate;
    fail_over(e, b, rc);
    t0 = now_s();
    rc = e->b[e->nb]->ops->feed(e->b[e->nb], pts, dst);
    time_slot(e, e->nb, now_s() - t0);
    return rc;
}

static struct ga_points sub_of(const struct ga_engine *e, int b)
{
    size_t lo = e->bstart[b];
    return (struct ga_points){ .n = e->bstart[b + 1] - lo, .metric = e->sub_metric + lo,
                               .ts = e->sub_ts + lo, .value = e->sub_value + lo };
}

/* The slots with points, fed at the same time: task t feeds slot busy[t]
 * into out (t = 0) or into part[busy[t]]. */
struct feed_ctx {
    struct ga_engine *e;
    struct ga_result *out;
    int *busy, *rc;
    double *secs;
};

static void feed_task(void *arg, int t)
{
    struct feed_ctx *c = arg;
    struct ga_engine *e = c->e;
    int b = c->busy[t];
    struct ga_points sub = sub_of(e, b);
    struct ga_result *dst = t == 0 ? c->out : &e->part[b];
    double t0 = now_s();
    c->rc[t] = e->b[b]->ops->feed(e->b[b], &sub, dst);
    c->secs[t] = now_s() - t0;
}

/* Appending: byte range t of T of the pieces laid end to end. */
struct copy_ctx {
    const struct copy_piece *pc;
    int npieces, nthreads;
    size_t total;
};

static void copy_task(void *arg, int t)
{
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

/* Feed every slot's share (split() done); *t_fed gets the time the feeds
 * (and fail-overs) ended, before the append. */
static int feed_split(struct ga_engine *e, struct ga_result *out, double *t_fed)
{
    int ns = nslots(e), n = 0, *busy = e->busy, *frc = e->frc;
    double *secs = e->fsecs;
    for (int b = 0; b < ns; b++)
        if (e->bstart[b + 1] > e->bstart[b])
            busy[n++] = b;
    size_t naggs0 = out->naggs, nlate0 = out->nlate;
    for (int t = 1; t < n; t++)
        ga_result_reset(&e->part[busy[t]]);
    struct feed_ctx fc = { e, out, busy, frc, secs };
    eng_run(e, n, feed_task, &fc);
    for (int t = 0; t < n; t++)
        time_slot(e, busy[t], secs[t]);
    /* GA_ECUDA: fail over in slot order, the share re-fed to the fallback
     * into the same place (the failed feed left the backend unchanged). */
    int upto = n, rc = 0;
    for (int t = 0; t < n; t++) {
        int b = busy[t];
        if (frc[t] == GA_ECUDA && b < e->nb && e->have_fallback) {
            struct ga_result *dst = t == 0 ? out : &e->part[b];
            if (t == 0) {
                out->naggs = naggs0;
                out->nlate = nlate0;
            } else {
                ga_result_reset(dst);
            }
            fail_over(e, b, frc[t]);
            struct ga_points sub = sub_of(e, b);
            double t0 = now_s();
            frc[t] = e->b[e->nb]->ops->feed(e->b[e->nb], &sub, dst);
            time_slot(e, e->nb, now_s() - t0);
        }
        if (frc[t] && upto == n) {
            upto = t;                 /* output up to the first failure is kept */
            rc = frc[t];
        }
    }
    *t_fed = now_s();
    if (upto == 0) {
        out->naggs = naggs0;
        out->nlate = nlate0;
    }
    if (upto < 2)
        return rc;
    /* One reservation for the other slots' output, then the copies. */
    size_t more_aggs = 0, more_late = 0;
    for (int t = 1; t < upto; t++) {
        more_aggs += e->part[busy[t]].naggs;
        more_late += e->part[busy[t]].nlate;
    }
    int r = ga_result_reserve(out, more_aggs, more_late);
    if (r)
        return rc ? rc : r;
    struct copy_piece *pc = e->pieces;
    int np = 0;
    size_t total = 0;
    for (int t = 1; t < upto; t++) {          /* rows and late points: disjoint pieces */
        const struct ga_result *p = &e->part[busy[t]];
        if (p->naggs)
            pc[np++] = (struct copy_piece){ (char *)(out->aggs + out->naggs),
                                            (const char *)p->aggs, p->naggs * sizeof *p->aggs };
        if (p->nlate)
            pc[np++] = (struct copy_piece){ (char *)(out->late + out->nlate),
                                            (const char *)p->late, p->nlate * sizeof *p->late };
        out->naggs += p->naggs;
        out->nlate += p->nlate;
        total += p->naggs * sizeof *p->aggs + p->nlate * sizeof *p->late;
    }
    size_t nt = total / COPY_PART_MIN, maxt = (size_t)(e->ncpu < COPY_MAX_THREADS ? e->ncpu
                                                                                : COPY_MAX_THREADS);
    struct copy_ctx cc = { pc, np, nt < 1 ? 1 : nt > maxt ? (int)maxt : (int)nt, total };
    eng_run(e, cc.nthreads, copy_task, &cc);
    return rc;
}

int ga_engine_feed(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out)
{
    size_t naggs0 = out->naggs, nlate0 = out->nlate;
    int rc = 0;
    double t0 = now_s(), t_split = t0, t_fed;
    e->times = (struct ga_engine_feed_times){ .nslots = nslots(e) };
    if (e->has_cuda)
        out->want_pinned = 1;         /* the first GPU's rows land there straight from it */
    if (e->nb == 1 && !e->failed[0]) {
        /* one backend serves every metric (the fallback none yet): no split */
        rc = feed_one(e, 0, pts, out);
        t_fed = now_s();
    } else {
        rc = split(e, pts, out);
        t_split = t_fed = now_s();
        if (!rc)
            rc = feed_split(e, out, &t_fed);
    }
    double t_end = now_s();
    e->times.split_s = t_split - t0;
    e->times.feed_s = t_fed - t_split;
    e->times.append_s = t_end - t_fed;
    e->times.total_s = t_end - t0;
    e->stats.points_in += pts->n;
    e->stats.aggs_out += out->naggs - naggs0;
    account_late(e, out, nlate0);
    if (!rc)
        e->stats.points_aggregated += pts->n - (out->nlate - nlate0);
    return rc;
}

void ga_engine_feed_times(const struct ga_engine *e, struct ga_engine_feed_times *t)
{
    *t = e->times;
}

int ga_engine_set_fallback(struct ga_engine *e, struct ga_backend *fallback)
{
    if (e->have_fallback)
        return GA_EEXIST;
    e->b[e->nb] = fallback;
    e->have_fallback = 1;
    return 0;
}

int ga_engine_backend_failed(const struct ga_engine *e, int i)
{
    return i >= 0 && i < e->nb ? e->failed[i] : 0;
}

void ga_engine_failover_stats(const struct ga_engine *e, struct ga_engine_failover_stats *st)
{
    *st = e->fo;
}

uint64_t ga_engine_backend_metrics(const struct ga_engine *e, int i)
{
    if (i < 0)
        return e->have_fallback ? e->nmetrics[e->nb] : 0;
    return i < e->nb ? e->nmetrics[i] : 0;
}

void ga_engine_get_stats(const struct ga_engine *e, struct ga_engine_stats *st)
{
    *st = e->stats;
}

int ga_engine_nbackends(const struct ga_engine *e)
{
    return e->nb;
}

const struct ga_backend *ga_engine_backend(const struct ga_engine *e, int i)
{
    return i >= 0 && i < e->nb ? e->b[i] : NULL;
}
