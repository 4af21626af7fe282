/* agg_cpu.c — the CPU reference backend: metric table and the feed.
 *
 * feed(): the batch is regrouped per metric with a counting sort into the
 * stage (arrival order kept inside each metric), then
 *   phase 1, in parallel over metrics: classify, sort, dedupe, reserve;
 *   between: reserve the caller's result and the workers' scratch;
 *   phase 2, in parallel over metrics: merge, compute, truncate;
 *   after: compact the rows and copy the late points into the result.
 * Nothing that can fail runs after the first window is modified, so a failed
 * feed leaves every window as it was (engine.h). */
#include "gpu/agg_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/ga_err.h"

/* Below this many points a feed runs on the calling thread only. */
#define SERIAL_POINTS 4096


/* ---- small helpers -------------------------------------------------------- */

int agg_scratch_reserve_pairs(struct agg_scratch *s, size_t n)
{
    if (n <= s->cap_pairs)
        return 0;
    size_t c = n + n / 2 + 64;
    int64_t *t = realloc(s->ts, c * sizeof *t);
    if (!t)
        return GA_ENOMEM;
    s->ts = t;
    double *v = realloc(s->val, c * sizeof *v);
    if (!v)
        return GA_ENOMEM;
    s->val = v;
    s->cap_pairs = c;
    return 0;
}

int agg_scratch_reserve_bufs(struct agg_scratch *s, size_t n)
{
    if (n <= s->cap_buf)
        return 0;
    size_t c = n + n / 2 + 64;
    double *a = realloc(s->sortbuf, c * sizeof *a);
    if (!a)
        return GA_ENOMEM;
    s->sortbuf = a;
    double *b = realloc(s->diff, c * sizeof *b);
    if (!b)
        return GA_ENOMEM;
    s->diff = b;
    s->cap_buf = c;
    return 0;
}

void agg_scratch_free(struct agg_scratch *s)
{
    free(s->ts);
    free(s->val);
    free(s->sortbuf);
    free(s->diff);
    memset(s, 0, sizeof *s);
}

/* Index of an interned copy of p, adding one.  >= 0 or GA_E*. */
static int intern_policy(struct cpu_backend *cb, const struct ga_policy *p)
{
    struct agg_pol tmp;
    int rc = agg_pol_init(&tmp, p);
    if (rc)
        return rc;
    for (int i = 0; i < cb->npols; i++)
        if (memcmp(&cb->pols[i]->p, &tmp.p, sizeof tmp.p) == 0)
            return i;
    size_t cap = (size_t)cb->cap_pols;
    if (ga_grow_zero((void **)&cb->pols, &cap, (size_t)cb->npols + 1, sizeof *cb->pols, 64))
        return GA_ENOMEM;
    cb->cap_pols = (int)cap;
    struct agg_pol *np = malloc(sizeof *np);
    if (!np)
        return GA_ENOMEM;
    *np = tmp;
    cb->pols[cb->npols] = np;
    return cb->npols++;
}

static struct agg_win *win_of(struct cpu_backend *cb, uint32_t id)
{
    if (id >= cb->cap_local || !cb->local[id])
        return NULL;
    return &cb->wins[cb->local[id] - 1];
}

/* ---- ops ------------------------------------------------------------------ */

static int cpu_metric_add(struct ga_backend *b, uint32_t id, const struct ga_policy *p)
{
    struct cpu_backend *cb = (struct cpu_backend *)b;
    struct ga_policy copy = *p;
    /* normalise the unused tails so memcmp interning works */
    memset(copy.defs + copy.ndefs, 0,
           sizeof copy.defs - (size_t)(copy.ndefs > 0 ? copy.ndefs : 0) * sizeof copy.defs[0]);
    memset(copy.methods + copy.nmethods, 0,
           sizeof copy.methods - (size_t)(copy.nmethods > 0 ? copy.nmethods : 0) * sizeof copy.methods[0]);
    if (copy.ndefs < 0 || copy.ndefs > GA_POLICY_MAX_DEFS || copy.nmethods < 0 ||
        copy.nmethods > GA_POLICY_MAX_METHODS)
        return GA_EINVAL;
    int pi = intern_policy(cb, &copy);
    if (pi < 0)
        return pi;
    struct agg_win *w = win_of(cb, id);
    if (w) {                                   /* re-add: new policy, same window */
        w->pol = (uint32_t)pi;
        return 0;
    }
    if (ga_grow_zero((void **)&cb->local, &cb->cap_local, (size_t)id + 1, sizeof *cb->local, 64))
        return GA_ENOMEM;
    uint32_t li;
    if (cb->nfree) {
        li = cb->free_slots[--cb->nfree];
    } else {
        if (ga_grow_zero((void **)&cb->wins, &cb->cap_wins, cb->nwins + 1, sizeof *cb->wins, 64) ||
            ga_grow_zero((void **)&cb->cnt, &cb->cap_cnt, cb->nwins + 1, sizeof *cb->cnt, 64) ||
            ga_grow_zero((void **)&cb->free_slots, &cb->cap_free, cb->nwins + 1, sizeof *cb->free_slots, 64))
            return GA_ENOMEM;
        li = (uint32_t)cb->nwins++;
    }
    cb->wins[li] = (struct agg_win){ .id = id, .pol = (uint32_t)pi, .live = 1 };
    cb->local[id] = li + 1;
    return 0;
}

static void cpu_metric_drop(struct ga_backend *b, uint32_t id)
{
    struct cpu_backend *cb = (struct cpu_backend *)b;
    struct agg_win *w = win_of(cb, id);
    if (!w)
        return;
    uint32_t li = cb->local[id] - 1;
    free(w->ts);
    free(w->val);
    *w = (struct agg_win){ 0 };
    cb->free_slots[cb->nfree++] = li;         /* cap_free >= nwins */
    cb->local[id] = 0;
}

static int cpu_window_get(struct ga_backend *b, uint32_t id, struct ga_window *out)
{
    struct cpu_backend *cb = (struct cpu_backend *)b;
    struct agg_win *w = win_of(cb, id);
    if (!w)
        return GA_ENOENT;
    memset(out, 0, sizeof *out);
    size_t n = w->n ? w->n : 1;
    out->ts = malloc(n * sizeof *out->ts);
    out->value = malloc(n * sizeof *out->value);
    if (!out->ts || !out->value) {
        free(out->ts);
        free(out->value);
        out->ts = NULL;
        out->value = NULL;
        return GA_ENOMEM;
    }
    if (w->n) {
        memcpy(out->ts, w->ts, w->n * sizeof *w->ts);
        memcpy(out->value, w->val, w->n * sizeof *w->val);
    }
    out->n = w->n;
    return 0;
}

static int cpu_window_put(struct ga_backend *b, uint32_t id, const struct ga_policy *p,
                          const struct ga_window *win)
{
    struct cpu_backend *cb = (struct cpu_backend *)b;
    if (win->has_prev)
        return GA_EINVAL;                      /* carbonara keeps no point before the window */
    for (size_t i = 0; i < win->n; i++)
        if (!GA_TS_IN_RANGE(win->ts[i]) || !isfinite(win->value[i]) || (i && win->ts[i] <= win->ts[i - 1]))
            return GA_EINVAL;
    int rc = cpu_metric_add(b, id, p);
    if (rc)
        return rc;
    struct agg_win *w = win_of(cb, id);
    rc = agg_win_reserve(w, win->n);
    if (rc)
        return rc;
    if (win->n) {
        memcpy(w->ts, win->ts, win->n * sizeof *w->ts);
        memcpy(w->val, win->value, win->n * sizeof *w->val);
    }
    w->n = win->n;
    agg_win_truncate(w, cb->pols[w->pol]);
    return 0;
}

/* ---- feed ----------------------------------------------------------------- */

struct feed_ctx {
    struct cpu_backend *cb;
    struct ga_agg *rows;
};

static void phase1(void *ctx, size_t i, int worker)
{
    struct feed_ctx *fc = ctx;
    agg_job_stage(&fc->cb->jobs[i], &fc->cb->st, &fc->cb->scratch[worker]);
}

static void phase2(void *ctx, size_t i, int worker)
{
    struct feed_ctx *fc = ctx;
    struct agg_job *j = &fc->cb->jobs[i];
    agg_job_apply(j, &fc->cb->st, &fc->cb->scratch[worker], fc->rows + j->agg_off);
}

static int stage_reserve(struct agg_stage *st, size_t n)
{
    if (n <= st->cap)
        return 0;
    size_t c = n + n / 4 + 1024;
    int64_t *ts = realloc(st->ts, c * sizeof *ts);
    if (!ts)
        return GA_ENOMEM;
    st->ts = ts;
    double *val = realloc(st->val, c * sizeof *val);
    if (!val)
        return GA_ENOMEM;
    st->val = val;
    uint32_t *pos = realloc(st->pos, c * sizeof *pos);
    if (!pos)
        return GA_ENOMEM;
    st->pos = pos;
    uint8_t *reason = realloc(st->reason, c);
    if (!reason)
        return GA_ENOMEM;
    st->reason = reason;
    st->cap = c;
    return 0;
}

/* A phase over the pool, or on the caller alone (serial: a small batch). */
static void run(struct cpu_backend *cb, size_t n, void (*fn)(void *ctx, size_t item, int worker),
                void *ctx, int serial)
{
    if (!serial) {
        pool_run(cb->pool, n, fn, ctx);
        return;
    }
    for (size_t i = 0; i < n; i++)
        fn(ctx, i, 0);
}

static int cpu_feed(struct ga_backend *b, const struct ga_points *pts, struct ga_result *out)
{
    struct cpu_backend *cb = (struct cpu_backend *)b;
    if (pts->n == 0)
        return 0;
    if (pts->n >= UINT32_MAX)
        return GA_ETOOBIG;
    if (stage_reserve(&cb->st, pts->n) ||
        ga_grow_zero((void **)&cb->touched, &cb->cap_touched, cb->nwins, sizeof *cb->touched, 64) ||
        ga_grow_zero((void **)&cb->jobs, &cb->cap_jobs, cb->nwins, sizeof *cb->jobs, 64))
        return GA_ENOMEM;

    size_t nunknown;
    size_t nj = agg_regroup(cb, pts, &nunknown);
    int serial = pts->n < SERIAL_POINTS;
    struct feed_ctx fc = { .cb = cb };
    run(cb, nj, phase1, &fc, serial);

    size_t bound = 0, nlate = nunknown, need_buf = 0;
    for (size_t t = 0; t < nj; t++) {
        struct agg_job *j = &cb->jobs[t];
        if (j->err)
            return j->err;
        j->agg_off = bound;
        bound += j->agg_bound;
        nlate += j->nlate;
        need_buf = j->need_buf > need_buf ? j->need_buf : need_buf;
    }
    int rc = ga_result_reserve(out, bound, nlate);
    for (int w = 0; w < cb->nthreads && !rc; w++)
        rc = agg_scratch_reserve_bufs(&cb->scratch[w], need_buf);
    if (rc)
        return rc;

    /* From here on nothing fails. */
    fc.rows = out->aggs + out->naggs;
    run(cb, nj, phase2, &fc, serial);

    size_t wr = out->naggs;
    for (size_t t = 0; t < nj; t++) {
        struct agg_job *j = &cb->jobs[t];
        if (j->naggs && wr != out->naggs + j->agg_off)
            memmove(out->aggs + wr, fc.rows + j->agg_off, j->naggs * sizeof *out->aggs);
        wr += j->naggs;
        for (size_t q = 0; q < j->nlate; q++) {
            size_t at = j->late_at + q;
            out->late[out->nlate++] = (struct ga_late){ .metric = j->w->id,
                .reason = cb->st.reason[at], .ts = cb->st.ts[at], .value = cb->st.val[at] };
        }
    }
    out->nrows += wr - out->naggs;   /* rows only */
    out->naggs = wr;
    for (size_t i = 0; nunknown && i < pts->n; i++) {
        if (agg_local_of(cb, pts->metric[i]))
            continue;
        out->late[out->nlate++] = (struct ga_late){ .metric = pts->metric[i],
            .reason = GA_LATE_UNKNOWN_METRIC, .ts = ga_points_ts(pts, i), .value = pts->value[i] };
    }
    return 0;
}

static void cpu_close(struct ga_backend *b)
{
    struct cpu_backend *cb = (struct cpu_backend *)b;
    if (!cb)
        return;
    pool_close(cb->pool);
    for (int w = 0; cb->scratch && w < cb->nthreads; w++)
        agg_scratch_free(&cb->scratch[w]);
    free(cb->scratch);
    for (int i = 0; i < cb->npols; i++)
        free(cb->pols[i]);
    free(cb->pols);
    for (size_t i = 0; i < cb->nwins; i++) {
        free(cb->wins[i].ts);
        free(cb->wins[i].val);
    }
    free(cb->wins);
    free(cb->free_slots);
    free(cb->local);
    free(cb->cnt);
    free(cb->touched);
    free(cb->ccnt);
    free(cb->jobs);
    free(cb->st.ts);
    free(cb->st.val);
    free(cb->st.pos);
    free(cb->st.reason);
    free(cb);
}

static const struct ga_backend_ops cpu_ops = {
    .name = "cpu",
    .metric_add = cpu_metric_add,
    .feed = cpu_feed,
    .window_get = cpu_window_get,
    .window_put = cpu_window_put,
    .metric_drop = cpu_metric_drop,
    .close = cpu_close,
};

int ga_cpu_backend_open(struct ga_backend **out, int threads)
{
    int rc = GA_ENOMEM;
    if (threads <= 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        threads = nc > 0 ? (int)nc : 1;
    }
    struct cpu_backend *cb = calloc(1, sizeof *cb);
    if (!cb)
        return GA_ENOMEM;
    cb->base.ops = &cpu_ops;
    snprintf(cb->base.label, sizeof cb->base.label, "cpu");
    cb->nthreads = threads;
    cb->scratch = calloc((size_t)threads, sizeof *cb->scratch);
    if (!cb->scratch)
        goto fail;
    rc = pool_open(&cb->pool, threads, "ga-cpu-agg");
    if (rc)
        goto fail;
    *out = &cb->base;
    return 0;
fail:
    cpu_close(&cb->base);
    return rc;
}
