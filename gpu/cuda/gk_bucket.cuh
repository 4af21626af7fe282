// gk_bucket.cuh — the bucket kernels: every method of a policy over the
// buckets a feed touched (gk_bucket.cu; the long-task kernel, gk_rows_long,
// in gk_bucket_long.cu; what the two share in gk_bucket_priv.cuh).  One
// task is one bucket of one granularity of one metric; its values are the
// merged window's points [lo, hi) (plain methods) and their differences
// (rate: methods).  Arithmetic is gpu/agg_cpu_kernels.c's, operation for
// operation (sums left to right, no FMA), so the rows are bit-identical to
// the CPU backend's.
#pragma once

#include "gpu/cuda/gk.cuh"

// Per (touched metric, granularity): where carbonara's recomputation starts
// and the newest bucket of each method kind (timespan), as in
// gpu/agg_cpu_window.c's gran_ctx.
struct gk_ctx {
    int64_t base, dfirst, fd;
    int64_t last_plain, last_std, last_rate, last_rstd;
};

struct gk_task {
    uint32_t t;                   // touched-metric index
    uint16_t d;                   // granularity index in the policy
    uint16_t plain;               // 1: plain and rate: methods; 0: rate: only
    int64_t b;                    // bucket start, ns
    uint64_t lo, hi;              // points [lo, hi) of the metric's merged window
    uint64_t row_off;             // first output row
};

// What the bucket kernels read: the merged windows of the touched metrics.
struct gk_view {
    const struct agg_pol *pols;
    const uint32_t *slot_pol, *slot_id;
    const uint32_t *tslot;        // touched index -> slot
    const uint64_t *m_off;        // touched index -> first point in m_ts/m_val
    const uint64_t *m_n;          // touched index -> merged window length
    const int64_t *m_ts;
    const double *m_val;
    const gk_ctx *ctx;            // [t * D + d]
    int D;
    int wide;                     // basic methods as wide records (engine.h)
};

__host__ __device__ static inline int gk_allowed(int64_t b, int64_t last, int64_t timespan)
{
    if (!timespan)
        return 1;
    return last >= 0 && b > last - timespan;
}

// Rows methods ms[0..nm) emit over n values (the CPU's agg_kern_bucket count).
__host__ __device__ static inline uint64_t gk_nrows(uint64_t n, const ga_method_t *ms, int nm,
                                                    int allow_std, int allow_other)
{
    uint64_t r = 0;
    for (int k = 0; k < nm; k++) {
        if (GA_M_BASE(ms[k]) == GA_M_STD)
            r += n >= 2 && allow_std;
        else
            r += allow_other != 0;
    }
    return r;
}

// Wide records (engine.h, want_wide).  The mask of the record a plain part
// of n values writes: a bit for each of pol->plain[0..nwide) it emits (the
// gk_nrows rules); 0 when wide is off or none is emitted (no record).
__host__ __device__ static inline unsigned gk_wide_mask(const struct agg_pol *pol, int wide,
                                                        uint64_t n, int allow_std, int allow_other)
{
    unsigned m = 0;
    if (!wide)
        return 0;
    for (int k = 0; k < pol->nwide; k++) {
        ga_method_t x = pol->plain[k];
        if (x == GA_M_STD ? n >= 2 && allow_std : allow_other != 0)
            m |= 1u << (x - GA_M_MEAN);
    }
    return m;
}
__host__ __device__ static inline uint32_t gk_wide_count(unsigned m)
{
#ifdef __CUDA_ARCH__
    return (uint32_t)__popc(m);
#else
    return (uint32_t)__builtin_popcount(m);
#endif
}
// Packed records (engine.h): whether a bucket of n points at b, granularity
// g, fits a packed record's header (counts, seconds: divisions by constants).
__host__ __device__ static inline int gk_wide_packs(uint64_t n, int64_t g, int64_t b)
{
    const int64_t lim = (int64_t)UINT32_MAX * 1000000000;
    return n <= 0xffff && g % 1000000000 == 0 && g <= lim && b >= 0 && b <= lim;
}
// The values a packed record of mask m stores: all but count, and mean when
// sum is there (mean = sum / n).
__host__ __device__ static inline unsigned gk_packed_kept(unsigned m)
{
    unsigned drop = 1u << (GA_M_COUNT - GA_M_MEAN);
    if (m & (1u << (GA_M_SUM - GA_M_MEAN)))
        drop |= 1u << (GA_M_MEAN - GA_M_MEAN);
    return m & ~drop;
}
// Slots the record of mask m takes (0 for none): packed (pk), 1 for up to 2
// stored values, else 2; wide, a header then 4 values a slot.
__host__ __device__ static inline uint32_t gk_wide_slots(unsigned m, int pk)
{
    if (!m)
        return 0;
    if (pk)
        return gk_wide_count(gk_packed_kept(m)) > 2 ? 2 : 1;
    return 1 + (gk_wide_count(m) + 3) / 4;
}
// Slots a plain part of n values in bucket b (granularity g) writes: its
// rows, the record's in one record.
__host__ __device__ static inline uint64_t gk_plain_rows(const struct agg_pol *pol, int wide, uint64_t n,
                                                         int allow_std, int allow_other, int64_t g,
                                                         int64_t b)
{
    unsigned m = gk_wide_mask(pol, wide, n, allow_std, allow_other);
    return gk_nrows(n, pol->plain, pol->nplain, allow_std, allow_other) - gk_wide_count(m) +
           gk_wide_slots(m, gk_wide_packs(n, g, b));
}

// Values to sort for a task's plain part and rate part (0 when the part has
// no median / Npct), and the rate part's first point.
__host__ __device__ static inline void gk_task_parts(const gk_view &v, const gk_task &tk,
                                                     uint64_t *np, uint64_t *nr, uint64_t *dlo)
{
    const struct agg_pol *pol = &v.pols[v.slot_pol[v.tslot[tk.t]]];
    const gk_ctx &c = v.ctx[(size_t)tk.t * v.D + tk.d];
    uint64_t lo = tk.lo > (uint64_t)c.dfirst ? tk.lo : (uint64_t)c.dfirst;
    *dlo = lo;
    *np = tk.plain && pol->nplain && (pol->plain_need & GA_NEED_SORT) ? tk.hi - tk.lo : 0;
    *nr = pol->nrate && (pol->rate_need & GA_NEED_SORT) && lo < tk.hi ? tk.hi - lo : 0;
}

// The values of part p of the tasks (p = 2 * task + 0 for the plain part, + 1
// for the rate: part; the order of sortoff): value k < *n is
// gk_part_value(m_val, *lo, p & 1, k), *lo absolute in m_val.  The gather
// and the shared-memory sort (gk_sort.cu) both read values through these
// two, so both sorts see the same bits.
__host__ __device__ static inline void gk_part(const gk_view &v, const gk_task *tasks, size_t p,
                                               uint64_t *lo, uint64_t *n)
{
    const gk_task &tk = tasks[p >> 1];
    uint64_t np, nr, dlo;
    gk_task_parts(v, tk, &np, &nr, &dlo);
    *lo = v.m_off[tk.t] + ((p & 1) ? dlo : tk.lo);
    *n = (p & 1) ? nr : np;
}
// A point (plain) or its difference from the point before (rate:).
__host__ __device__ static inline double gk_part_value(const double *m_val, uint64_t lo, int rate,
                                                       uint64_t k)
{
    return rate ? m_val[lo + k] - m_val[lo + k - 1] : m_val[lo + k];
}

// Launchers.  0 or GA_ECUDA.
// sortlen[2 * i], sortlen[2 * i + 1] = values task i sorts (plain, rate).
int gk_bucket_sortlen(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks,
                      uint64_t *sortlen);
// Copy each task part's values into unsorted[sortoff[part]..] (one thread a
// task; gk_bucket_sort in gk_sort.cuh runs it, or its own gather).
int gk_bucket_gather(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks,
                     const uint64_t *sortoff, double *unsorted);

// Which rows kernel gk_bucket_rows runs (docs/GPU.md "Rows kernel").
struct gk_rows_cfg {
    int warp;                     // 1: the warp kernel (rows_warp: one thread a task, each
                                  // warp stages its tasks' points on its own, rows written
                                  // by each thread); 0: the tiled kernel (rows_tiled)
    unsigned smem;                // tiled: dynamic shared memory a block, bytes; 0 = two
                                  // blocks an SM (113 KB on an H100).  warp: bytes a warp
                                  // stages, 256..8192; 0 = 8192.  Tests set small values
                                  // to drive the rounds and fallbacks.
    unsigned long_min;            // tasks of at least this many points go to the
                                  // long-task kernel (a warp a task) instead, with either
                                  // variant; 0 = GK_ROWS_LONG_MIN, GK_ROWS_LONG_OFF = none
};
#define GK_ROWS_LONG_MIN 1024u
#define GK_ROWS_LONG_OFF 0xffffffffu
// gk_rows_cfg.long_min for ga_cuda_opts.rows_long: n > 0 itself, -1 none,
// 0 the default (0: GK_ROWS_LONG_MIN).
unsigned gk_rows_long_min(int rows_long);

// Rows of tasks [t0, t1) into rows[task.row_off ..], reading sorted copies
// from sorted[sortoff[part]..] (sorted NULL: no method sorts, and sortoff
// is not read).  The rows of task i + 1 follow task i's
// (row_off ascending, as gk_tasks writes them): the tiled kernel relies on
// it to store a block's rows as one stretch (it checks it within a block and
// writes row by row where it does not hold).  cfg NULL = tiled, default size.
// In emulation both variants run on the host, each the kernel's own code:
// warp by warp, lane by lane between the warp's collective steps; tiled
// block by block, phase by phase.
// long_list: device scratch, [0] a count (gk_rows_long_reset) and room for
// every task, where the rows kernel lists the long tasks (cfg->long_min) it
// leaves to gk_rows_long (one launch after every rows launch of the feed);
// NULL = no long tasks, every task by the rows kernel.
// mid_list: the same for the warp kernel's tasks too long for it to stage
// (it would read them from global memory on their lanes while the warp
// waited), left to gk_rows_mid; NULL, or the tiled kernel: run in place.
int gk_bucket_rows(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t t0, size_t t1,
                   const uint64_t *sortoff, const double *sorted, struct ga_agg *rows,
                   const gk_rows_cfg *cfg, unsigned long long *long_list, unsigned long long *mid_list);
// A list's count to 0 (long_list or mid_list).
int gk_rows_long_reset(gk_exec *x, unsigned long long *long_list);
// The tasks in mid_list, a thread a task (ntasks: the tasks the list may hold).
int gk_rows_mid(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks, const uint64_t *sortoff,
                const double *sorted, struct ga_agg *rows, unsigned long long *mid_list);
// The listed tasks' rows, a warp a task (ntasks: the tasks the list may hold).
int gk_rows_long(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks,
                 const uint64_t *sortoff, const double *sorted, struct ga_agg *rows,
                 unsigned long long *long_list);
// The tiled kernel on the current device: shared memory a block for `want`
// (0 = default; 0 out when the warp kernel would run instead) and the
// blocks an SM then holds.  0 or GA_ECUDA.
int gk_rows_tiled_info(unsigned want, unsigned *smem, int *blocks_per_sm);
