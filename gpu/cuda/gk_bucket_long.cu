// gk_bucket_long.cu — the long-task kernel (gk_bucket.cuh: gk_rows_long):
// a warp a task for the tasks of long_min points or more, which the rows
// kernels (gk_bucket.cu) list and skip.  The helpers both use (bucket_emit,
// rows_f, task_of, ...) are in gk_bucket_priv.cuh.
#include "gpu/cuda/gk_bucket.cuh"
#include "gpu/cuda/gk_bucket_priv.cuh"

#include <stdlib.h>
#include <string.h>

#include <vector>

namespace {

// ---- Long tasks (rows_long) -----------------------------------------------
//
// A task of long_min points or more (an hour's or a day's bucket of a busy
// metric) is a chain of thousands of dependent additions.  One thread
// reading it from global memory, as the tiled and warp kernels do with a
// task too long to stage, waits about a DRAM latency a point; with few such
// tasks in a feed nothing hides it (docs/GPU.md "Long buckets").  Here a
// warp takes each long task: its 32 lanes load the next LONG_CH values,
// coalesced, while lane 0 runs the CPU's chains over the LONG_CH before them
// from shared memory.  Every chain stays in one thread, in order: the same
// bits as bucket().
#define LONG_LU 8
#define LONG_CH (32 * LONG_LU)    // values a chunk
#define LONG_WARPS 8              // warps a block

// A chunk in shared memory as a value accessor.
struct buf_x {
    const double *b;
    __host__ __device__ double operator()(uint64_t k) const { return b[k]; }
};

// Lane 0's chains: bucket()'s accumulators (bacc, the same code), then the
// std chain.
struct long_acc {
    bacc acc;
    double ss, mean;
    unsigned need;
    // pass 0: sum and min/max over chunk buf[0..cnt) = x(c0..c0 + cnt);
    // pass 1: the std chain about mean
    __host__ __device__ void eat(int pass, const double *buf, uint64_t c0, uint64_t cnt)
    {
        if (pass == 1) {
            ss = ss_chain(buf_x{ buf }, 0, cnt, mean, ss);
            return;
        }
        if (c0 == 0)
            acc.start(buf[0], need);
        acc.eat<true>(buf_x{ buf }, c0 == 0 ? 1 : 0, cnt, need);
    }
};

struct ss_const {                 // bucket_emit's ss: the chain long_acc ran
    double ss;                    // about the same mean, sum / n
    __host__ __device__ double operator()(double) const { return ss; }
};

// A std row will be asked for (the second pass is needed).
__host__ __device__ inline bool long_needs_ss(const ga_method_t *ms, int nm, uint64_t n, int allow_std)
{
    if (n < 2 || !allow_std)
        return false;
    for (int k = 0; k < nm; k++)
        if (GA_M_BASE(ms[k]) == GA_M_STD)
            return true;
    return false;
}

// Lane `lane`'s values of the chunk at c0: x(c0 + u * 32 + lane).
template <class X>
__host__ __device__ inline void long_load(X x, uint64_t c0, uint64_t n, int lane, double *r)
{
    for (int u = 0; u < LONG_LU; u++) {
        uint64_t k = c0 + (uint64_t)u * 32 + (uint64_t)lane;
        r[u] = k < n ? x(k) : 0.0;
    }
}

// One pass of lane 0's chains over x(0..n), a chunk at a time through buf
// (2 * LONG_CH values): on the GPU the warp loads chunk c + 1 while lane 0
// eats chunk c; on the host the lanes in turn, then lane 0.
template <class X>
__host__ __device__ void long_pass(X x, uint64_t n, int pass, long_acc &a, double *buf, int lane)
{
    uint64_t nch = (n + LONG_CH - 1) / LONG_CH;
#ifdef __CUDA_ARCH__
    double r[LONG_LU];
    long_load(x, 0, n, lane, r);
#pragma unroll
    for (int u = 0; u < LONG_LU; u++)
        buf[u * 32 + lane] = r[u];
    __syncwarp();
    for (uint64_t c = 0; c < nch; c++) {
        uint64_t c0 = c * LONG_CH;
        if (c + 1 < nch)
            long_load(x, c0 + LONG_CH, n, lane, r);
        if (lane == 0)
            a.eat(pass, buf + (c & 1) * LONG_CH, c0, n - c0 < LONG_CH ? n - c0 : LONG_CH);
        if (c + 1 < nch) {        // into the other half, which lane 0 ate in round c - 1
            double *o = buf + ((c + 1) & 1) * LONG_CH;
#pragma unroll
            for (int u = 0; u < LONG_LU; u++)
                o[u * 32 + lane] = r[u];
        }
        __syncwarp();
    }
#else
    (void)lane;
    for (uint64_t c = 0; c < nch; c++) {
        uint64_t c0 = c * LONG_CH;
        double r[LONG_LU];
        for (int l = 0; l < 32; l++) {
            long_load(x, c0, n, l, r);
            for (int u = 0; u < LONG_LU; u++)
                buf[u * 32 + l] = r[u];
        }
        a.eat(pass, buf, c0, n - c0 < LONG_CH ? n - c0 : LONG_CH);
    }
#endif
}

// One part (plain or rate:) of a long task: the two passes, then lane 0
// writes its rows from k0 on; returns them (lane 0).
template <class X>
__host__ __device__ uint64_t long_part(X x, uint64_t n, int64_t min_pos, const ga_method_t *ms, int nm,
                                       unsigned need, const double *s, const tparts &p, int allow_std,
                                       int allow_other, uint64_t k0, const sink_wide<sink_direct> &out,
                                       double *buf, int lane)
{
    long_acc a = { bacc{ 0.0, 0.0, 0.0, 0.0 }, 0.0, 0.0, need };
    long_pass(x, n, 0, a, buf, lane);
    if (long_needs_ss(ms, nm, n, allow_std)) {
        a.mean = a.acc.sum / (double)n;         // bucket_emit's mean, the same bits
        long_pass(x, n, 1, a, buf, lane);
    }
    if (lane != 0)
        return 0;
    return bucket_emit(x, a.acc, ss_const{ a.ss }, n, min_pos, ms, nm, s, p.metric, p.g, p.b,
                       allow_std, allow_other, out, k0);
}

// Long task i by one warp (or the host as its lanes): task_run's parts.
__host__ __device__ void long_task(const rows_f &fn, size_t i, double *buf, int lane)
{
    tparts p = task_of(fn, i);
    struct ga_agg *rows = fn.rows + p.row_off;
    sink_wide<sink_direct> out = wide_sink(p, rows, sink_direct{ rows });   // lane 0 writes
    if (lane == 0)
        wide_head(rows, p.metric, p.g, p.b, p.pn, p.wmask, p.ws, p.wpk);
    uint64_t nr = 0;
    if (p.hasp)
        nr = long_part(plain_x{ fn.v.m_val + p.plo }, p.pn, p.pmin, p.pol->plain, p.pol->nplain,
                       p.pol->plain_need, task_sorted(fn, i, 0), p, p.pas, p.pao, 0, out, buf, lane);
    if (p.hasr)
        long_part(rate_x{ fn.v.m_val + p.rlo }, p.rn, p.rmin, p.pol->rate, p.pol->nrate,
                  p.pol->rate_need, task_sorted(fn, i, 1), p, p.ras, p.rao, nr, out, buf, lane);
}

// A warp a listed task (the rows kernel before it on the stream listed them).
__global__ void __launch_bounds__(LONG_WARPS * 32) rows_long(rows_f fn)
{
    __shared__ double buf[LONG_WARPS][2 * LONG_CH];
    int lane = (int)(threadIdx.x & 31), w = (int)(threadIdx.x >> 5);
    unsigned long long n = fn.long_list[0];
    for (unsigned long long k = (unsigned long long)blockIdx.x * LONG_WARPS + (unsigned)w; k < n;
         k += (unsigned long long)gridDim.x * LONG_WARPS)
        long_task(fn, (size_t)fn.long_list[1 + k], buf[w], lane);
}

} // namespace

unsigned gk_rows_long_min(int rows_long)
{
    if (rows_long)
        return rows_long < 0 ? GK_ROWS_LONG_OFF : (unsigned)rows_long;
    return 0;
}

int gk_rows_long_reset(gk_exec *x, unsigned long long *long_list)
{
    if (x->emu)
        long_list[0] = 0;
    else
        CUDA_CHECK(cudaMemsetAsync(long_list, 0, 8, x->s));
    return 0;
}

int gk_rows_long(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks,
                 const uint64_t *sortoff, const double *sorted, struct ga_agg *rows,
                 unsigned long long *long_list)
{
    rows_f fn{ *v, tasks, sortoff, sorted, rows, UINT64_MAX, long_list, NULL };
    if (x->emu) {
        std::vector<double> buf(2 * LONG_CH);
        for (unsigned long long k = 0; k < long_list[0]; k++)
            long_task(fn, (size_t)long_list[1 + k], buf.data(), 0);
        return 0;
    }
    // a warp a listed task; past 1024 blocks (about 8 an SM) the warps stride
    size_t most = (ntasks + LONG_WARPS - 1) / LONG_WARPS;
    if (most)
        rows_long<<<(unsigned)(most < 1024 ? most : 1024), LONG_WARPS * 32, 0, x->s>>>(fn);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}
