/* agg_cpu_regroup.c — regrouping a batch per metric (counting sort).
 *
 * The CPU backend's feed first copies each metric's points of the batch,
 * in arrival order, into one contiguous slice of the stage, and makes one
 * agg_job per metric.  Small batches do it on the calling thread; big ones
 * over comparatively few metrics count and scatter per chunk on all workers
 * (chunk c's points of a metric go after chunk c-1's, so arrival order
 * holds). */
#include "gpu/agg_cpu.h"

#include <string.h>

/* Regrouping runs on all workers from this many points on. */
#define RG_MIN_POINTS 65536
#define RG_MAX_CHUNKS 64

uint32_t agg_local_of(const struct cpu_backend *cb, uint32_t id)
{
    return id < cb->cap_local ? cb->local[id] : 0;
}

/* Regroup the batch per metric into the stage and fill cb->jobs.  Returns
 * the number of jobs; *nunknown gets the points of unknown metrics. */
static size_t regroup_serial(struct cpu_backend *cb, const struct ga_points *pts, size_t *nunknown)
{
    size_t nt = 0, unk = 0;
    for (size_t i = 0; i < pts->n; i++) {
        uint32_t li = agg_local_of(cb, pts->metric[i]);
        if (!li) {
            unk++;
            continue;
        }
        if (cb->cnt[li - 1]++ == 0)
            cb->touched[nt++] = li - 1;
    }
    size_t off = 0;
    for (size_t t = 0; t < nt; t++) {
        uint32_t li = cb->touched[t];
        struct agg_win *w = &cb->wins[li];
        cb->jobs[t] = (struct agg_job){ .w = w, .pol = cb->pols[w->pol], .off = off,
                                        .k = cb->cnt[li] };
        off += cb->cnt[li];
        cb->cnt[li] = (uint32_t)cb->jobs[t].off;   /* now the write cursor */
    }
    for (size_t i = 0; i < pts->n; i++) {
        uint32_t li = agg_local_of(cb, pts->metric[i]);
        if (!li)
            continue;
        uint32_t at = cb->cnt[li - 1]++;
        cb->st.ts[at] = ga_points_ts(pts, i);
        cb->st.val[at] = pts->value[i];
    }
    for (size_t t = 0; t < nt; t++)
        cb->cnt[cb->touched[t]] = 0;
    *nunknown = unk;
    return nt;
}

struct rg_ctx {
    struct cpu_backend *cb;
    const struct ga_points *pts;
    size_t nchunks;
    size_t unk[RG_MAX_CHUNKS];
};

static void rg_range(const struct rg_ctx *rc, size_t c, size_t *lo, size_t *hi)
{
    *lo = rc->pts->n * c / rc->nchunks;
    *hi = rc->pts->n * (c + 1) / rc->nchunks;
}

static void rg_count(void *ctx, size_t c, int worker)
{
    struct rg_ctx *rc = ctx;
    uint32_t *cnt = rc->cb->ccnt + c * rc->cb->nwins;
    size_t lo, hi, unk = 0;
    rg_range(rc, c, &lo, &hi);
    memset(cnt, 0, rc->cb->nwins * sizeof *cnt);
    for (size_t i = lo; i < hi; i++) {
        uint32_t li = agg_local_of(rc->cb, rc->pts->metric[i]);
        if (li)
            cnt[li - 1]++;
        else
            unk++;
    }
    rc->unk[c] = unk;
}

static void rg_scatter(void *ctx, size_t c, int worker)
{
    struct rg_ctx *rc = ctx;
    struct cpu_backend *cb = rc->cb;
    uint32_t *cur = cb->ccnt + c * cb->nwins;
    size_t lo, hi;
    rg_range(rc, c, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        uint32_t li = agg_local_of(cb, rc->pts->metric[i]);
        if (!li)
            continue;
        uint32_t at = cur[li - 1]++;
        cb->st.ts[at] = ga_points_ts(rc->pts, i);
        cb->st.val[at] = rc->pts->value[i];
    }
}

/* regroup() on all workers: for big batches over comparatively few metrics.
 * Jobs come in local index order. */
static size_t regroup_parallel(struct cpu_backend *cb, const struct ga_points *pts,
                               size_t *nunknown)
{
    struct rg_ctx rc = { .cb = cb, .pts = pts };
    rc.nchunks = (size_t)cb->nthreads < RG_MAX_CHUNKS ? (size_t)cb->nthreads : RG_MAX_CHUNKS;
    pool_run(cb->pool, rc.nchunks, rg_count, &rc);
    size_t off = 0, nt = 0, nw = cb->nwins;
    for (size_t li = 0; li < nw; li++) {
        size_t k = 0;
        for (size_t c = 0; c < rc.nchunks; c++) {
            uint32_t n = cb->ccnt[c * nw + li];
            cb->ccnt[c * nw + li] = (uint32_t)(off + k);   /* chunk c's cursor */
            k += n;
        }
        if (!k)
            continue;
        struct agg_win *w = &cb->wins[li];
        cb->jobs[nt++] = (struct agg_job){ .w = w, .pol = cb->pols[w->pol], .off = off, .k = k };
        off += k;
    }
    pool_run(cb->pool, rc.nchunks, rg_scatter, &rc);
    *nunknown = 0;
    for (size_t c = 0; c < rc.nchunks; c++)
        *nunknown += rc.unk[c];
    return nt;
}

size_t agg_regroup(struct cpu_backend *cb, const struct ga_points *pts, size_t *nunknown)
{
    size_t nchunks = (size_t)cb->nthreads < RG_MAX_CHUNKS ? (size_t)cb->nthreads : RG_MAX_CHUNKS;
    if (cb->nthreads > 1 && pts->n >= RG_MIN_POINTS && cb->nwins * nchunks <= pts->n / 2 &&
        ga_grow_zero((void **)&cb->ccnt, &cb->cap_ccnt, cb->nwins * nchunks, sizeof *cb->ccnt, 64) == 0)
        return regroup_parallel(cb, pts, nunknown);
    return regroup_serial(cb, pts, nunknown);
}
