/* engine_split.c — a batch split per backend slot (engine_priv.h).
 *
 * A counting sort, both passes by ranges of the batch on the caller's
 * workers: count each range's points per slot, turn the counts into
 * cursors (slot by slot, range by range, so arrival order is kept within
 * a slot), scatter.  Points of unknown ids go last and become late points.
 * The sub arrays are page-locked when a backend is a CUDA one (it DMAs
 * straight from them, no staging copy of its own). */
#include "gpu/engine_priv.h"

#include <stdlib.h>
#include <string.h>

#include "gpu/cuda.h"
#include "proto/ga_err.h"

/* Ranges of at least this many points per thread, at most SPLIT_MAX_PARTS
 * ranges (and no more than the online cores); tools/bench/bench_engine_gpus
 * prints the split's time. */
#define SPLIT_PART_MIN ((size_t)1 << 16)

void eng_free_sub(struct eng_batch *b)
{
    if (b->sub_pinned)
        ga_cuda_host_free(b->sub_block);
    else
        free(b->sub_block);
    b->sub_block = NULL;
    b->sub_pinned = 0;
    b->sub_metric = NULL;
    b->sub_ts = NULL;
    b->sub_value = NULL;
    b->cap_sub = 0;
}

/* Room for n points in b's sub arrays (contents not kept: every batch is
 * split afresh).  Page-locked when a CUDA backend will read them, unless
 * that cannot be had. */
static int reserve_sub(struct ga_engine *e, struct eng_batch *b, size_t n)
{
    if (n <= b->cap_sub && (b->sub_pinned || !e->want_pinned))
        return 0;
    if (n > SIZE_MAX / 64)
        return GA_ETOOBIG;
    size_t c = n + n / 4 + 1024;
    if (c < b->cap_sub + b->cap_sub / 2)
        c = b->cap_sub + b->cap_sub / 2;
    eng_free_sub(b);
    size_t bytes = c * (sizeof *b->sub_ts + sizeof *b->sub_value + sizeof *b->sub_metric);
    void *p = NULL;
    if (e->want_pinned && ga_cuda_host_alloc(&p, bytes) == 0) {
        b->sub_pinned = 1;
    } else {
        if (e->want_pinned)
            ga_log(GA_LOG_WARN, "engine_split_pageable", "bytes=%zu reason=\"page-locked "
                   "memory refused; GPUs will stage each batch\"", bytes);
        e->want_pinned = 0;
        if (!(p = malloc(bytes)))
            return GA_ENOMEM;
    }
    b->sub_block = p;
    b->sub_ts = p;
    b->sub_value = (double *)(b->sub_ts + c);
    b->sub_metric = (uint32_t *)(b->sub_value + c);
    b->cap_sub = c;
    return 0;
}

struct split_ctx {
    struct ga_engine *e;
    struct eng_batch *b;
    int nparts, ns;               /* count index ns: unknown ids */
    int scatter;                  /* 0: count; 1: scatter with the counts as cursors */
};

/* One range of the batch: count its points per slot into its row of
 * e->cnt, or scatter them at the cursors of that row.  The cursors live
 * on the stack while the loop runs (rows of neighbouring ranges share
 * cache lines). */
static void split_task(void *arg, size_t item, int worker)
{
    int t = (int)item;
    struct split_ctx *c = arg;
    struct ga_engine *e = c->e;
    struct eng_batch *b = c->b;
    const struct ga_points *pts = &b->pts;
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
        uint32_t *sm = b->sub_metric;
        double *sv = b->sub_value;
        const double *v = pts->value;
        const int64_t *ts = pts->ts;      /* or the 32-bit offsets as they came (engine.h) */
        const uint32_t *t32 = pts->ts32;
        for (size_t i = lo; i < hi; i++) {
            unsigned s = mid[i] < cap ? so[mid[i]] : SLOT_NONE;
            size_t at = cur[s < ns ? s : ns]++;
            sm[at] = mid[i];
            if (ts)
                b->sub_ts[at] = ts[i];
            else
                ((uint32_t *)b->sub_ts)[at] = t32[i];
            sv[at] = v[i];
        }
        return;
    }
    if (cur != row)
        memcpy(row, cur, (ns + 1) * sizeof *cur);
}

struct ga_points eng_sub_points(const struct eng_batch *b, size_t lo, size_t hi)
{
    struct ga_points p = { .n = hi - lo, .metric = b->sub_metric + lo, .value = b->sub_value + lo };
    if (b->pts.ts) {
        p.ts = b->sub_ts + lo;
    } else {                      /* split as 32-bit offsets, the batch's base and unit */
        p.ts32 = (const uint32_t *)b->sub_ts + lo;
        p.ts_base = b->pts.ts_base;
        p.ts_unit = b->pts.ts_unit;
    }
    return p;
}

int eng_split(struct ga_engine *e, struct eng_batch *b)
{
    int rc = reserve_sub(e, b, b->pts.n);
    if (rc)
        return rc;
    /* pipelined, the feeder and its helpers (one per slot) want cores of
     * their own meanwhile: a GPU's feed thread waits on its GPU spinning */
    int ns = eng_nslots(e), cores = e->ncpu - (b->pipe ? ns + 1 : 0);
    int maxp = cores < 1 ? 1 : cores < SPLIT_MAX_PARTS ? cores : SPLIT_MAX_PARTS;
    size_t np = b->pts.n / SPLIT_PART_MIN;
    int nparts = np < 1 ? 1 : np > (size_t)maxp ? maxp : (int)np;
    struct split_ctx c = { e, b, nparts, ns, 0 };
    /* a failover on the feeder moves metrics between slots: not mid-split */
    pthread_rwlock_rdlock(&e->route);
    pool_run(e->split_pool, (size_t)nparts, split_task, &c);
    size_t *bs = b->bstart, at = 0, stride = (size_t)e->nb + 2;
    for (int s = 0; s <= ns; s++) {
        bs[s] = at;
        for (int t = 0; t < nparts; t++) {
            size_t n = e->cnt[(size_t)t * stride + (size_t)s];
            e->cnt[(size_t)t * stride + (size_t)s] = at;
            at += n;
        }
    }
    bs[ns + 1] = at;
    c.scatter = 1;
    pool_run(e->split_pool, (size_t)nparts, split_task, &c);
    pthread_rwlock_unlock(&e->route);
    size_t unknown = bs[ns + 1] - bs[ns];
    if (!unknown)
        return 0;
    struct ga_result *out = b->out;
    if ((rc = ga_result_reserve(out, 0, unknown)))
        return rc;
    struct ga_points all = eng_sub_points(b, 0, bs[ns + 1]);
    for (size_t i = bs[ns]; i < bs[ns + 1]; i++)
        out->late[out->nlate++] = (struct ga_late){ .metric = b->sub_metric[i],
            .reason = GA_LATE_UNKNOWN_METRIC, .ts = ga_points_ts(&all, i), .value = b->sub_value[i] };
    return 0;
}
