/* agg_cpu.h — internals of the CPU reference backend (gpu/agg_cpu*.c).
 *
 * Not a public API: the engine and the daemon see only gpu/engine.h.
 *
 *   agg_cpu.c          backend ops, metric table, the two-phase feed
 *   agg_cpu_window.c   one metric's raw window: stage a batch, apply it
 *   agg_cpu_kernels.c  per-bucket methods, sorts (the reference kernels)
 *   agg_cpu_regroup.c  the batch regrouped per metric (counting sort)
 *
 * A feed runs in two phases so that a failure leaves every window as it was:
 * phase 1 (agg_job_stage) only reads the windows and may fail (ENOMEM while
 * reserving); phase 2 (agg_job_apply) mutates them and cannot fail. */
#ifndef GA_AGG_CPU_H
#define GA_AGG_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/engine.h"
#include "gpu/pol.h"
#include "proto/base/grow.h"
#include "proto/base/pool.h"

/* One metric's raw window: sorted by ts, unique ts, all ts >= first block. */
struct agg_win {
    int64_t *ts;
    double *val;
    size_t n, cap;
    uint32_t id;                  /* engine metric id */
    uint32_t pol;                 /* index in the backend's policy table */
    int live;
};

/* Grow w to hold n points (contents kept).  0 or GA_ENOMEM. */
int agg_win_reserve(struct agg_win *w, size_t n);
/* Drop the points before the first block of w (carbonara's _truncate). */
void agg_win_truncate(struct agg_win *w, const struct agg_pol *pol);

/* Per-worker scratch, reused across feeds. */
struct agg_scratch {
    int64_t *ts;                  /* pair sort / late staging, cap_pairs */
    double *val;
    size_t cap_pairs;
    double *sortbuf, *diff;       /* bucket sort copy, rate differences */
    size_t cap_buf;
};
int agg_scratch_reserve_pairs(struct agg_scratch *s, size_t n);
int agg_scratch_reserve_bufs(struct agg_scratch *s, size_t n);
void agg_scratch_free(struct agg_scratch *s);

/* The batch, regrouped per metric: slice [off, off+k) of each array. */
struct agg_stage {
    int64_t *ts;
    double *val;
    uint32_t *pos;                /* phase 2: merged index of each new point */
    uint8_t *reason;              /* enum ga_late_reason of late points */
    size_t cap;
};

/* A metric's share of one feed. */
struct agg_job {
    struct agg_win *w;
    const struct agg_pol *pol;
    size_t off, k;                /* slice of the stage, arrival order */
    size_t nacc;                  /* accepted unique points at [off, off+nacc) */
    size_t late_at, nlate;        /* late points at [late_at, late_at+nlate) */
    int64_t tmin;                 /* min ts of points with ts >= 0 and finite value */
    size_t agg_bound;             /* rows reserved for phase 2 */
    size_t agg_off;               /* first reserved row (relative) */
    size_t naggs;                 /* rows written by phase 2 */
    size_t need_buf;              /* scratch bufs phase 2 needs */
    int err;
};

/* Phase 1: classify (late / accepted), sort and dedupe the accepted points
 * in the stage, reserve the window, compute agg_bound and need_buf.  Reads
 * the window only.  Sets j->err on failure. */
void agg_job_stage(struct agg_job *j, struct agg_stage *st, struct agg_scratch *s);

/* Phase 2: merge into the window, write the changed buckets to
 * rows[0..agg_bound), set j->naggs, truncate the window.  Cannot fail. */
void agg_job_apply(struct agg_job *j, struct agg_stage *st, struct agg_scratch *s,
                   struct ga_agg *rows);

/* ---- the backend (agg_cpu.c) --------------------------------------------- */

/* One CPU backend; driven by one thread at a time (engine.h). */
struct cpu_backend {
    struct ga_backend base;
    struct pool *pool;
    int nthreads;
    struct agg_scratch *scratch;          /* one per worker */
    struct agg_pol **pols;                /* interned policies */
    int npols, cap_pols;
    struct agg_win *wins;                 /* by local index */
    size_t nwins, cap_wins;
    uint32_t *free_slots;                 /* dropped local indexes */
    size_t nfree, cap_free;
    uint32_t *local;                      /* id -> local index + 1 */
    size_t cap_local;
    /* per feed, reused */
    uint32_t *cnt;                        /* per local index; 0 between feeds */
    size_t cap_cnt;
    uint32_t *touched;
    size_t cap_touched;
    uint32_t *ccnt;                       /* parallel regroup: chunk x local counts */
    size_t cap_ccnt;
    struct agg_job *jobs;
    size_t cap_jobs;
    struct agg_stage st;
};

/* Local index + 1 of engine metric id, 0 if the backend does not have it. */
uint32_t agg_local_of(const struct cpu_backend *cb, uint32_t id);
/* Regroup pts per metric into cb->st and fill cb->jobs (agg_cpu_regroup.c).
 * Needs cb->st, cb->touched and cb->jobs sized for the batch.  Returns the
 * number of jobs; *nunknown gets the count of points of unknown ids. */
size_t agg_regroup(struct cpu_backend *cb, const struct ga_points *pts, size_t *nunknown);

/* ---- kernels (agg_cpu_kernels.c) ----------------------------------------- */

/* Where a bucket's rows go and which of them the timespan lets through. */
struct agg_emit {
    uint32_t metric;
    int64_t g, b;                 /* granularity and bucket start, ns */
    int allow_std, allow_other;   /* timespan: std-like / other methods */
};

/* Compute methods ms[0..nm) (their base method; the rate bit is copied into
 * the rows) over x[0..n), n >= 1.  min_pos is the bucket's offset in the
 * grouped series carbonara would build (it enters Npct rounding).  sortbuf
 * holds n doubles.  Writes the rows to rows[], returns how many. */
size_t agg_kern_bucket(const double *x, size_t n, int64_t min_pos, const ga_method_t *ms,
                       int nm, unsigned need, double *sortbuf, const struct agg_emit *e,
                       struct ga_agg *rows);

/* Stable sort of (ts, val) pairs by ts; tts/tval are scratch of n each. */
void agg_sort_pairs(int64_t *ts, double *val, size_t n, int64_t *tts, double *tval);
/* Ascending sort of doubles (no NaN). */
void agg_sort_doubles(double *x, size_t n);

#endif
