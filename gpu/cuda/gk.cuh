// gk.cuh — what the CUDA backend's kernel families share: the executor (a
// stream, or the host when emulating), the element-wise launcher, and the
// int64 bucket arithmetic of docs/SEMANTICS.md as __host__ __device__ code.
//
// Every kernel of the backend is an element-wise functor run by gk_for():
// on the GPU a grid-stride kernel on the executor's stream, in emulation a
// plain loop on the calling thread.  So the whole feed can run (slowly) on a
// host without a GPU, which is how tests/unit/test_cuda_backend.c checks the
// algorithm where CI has no GPU; on the device the same functors run.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gpu/bucket_div.h"
#include "gpu/cuda/cuda_check.cuh"

extern "C" {
#include "gpu/engine.h"
#include "gpu/pol.h"
#include "proto/base/grow.h"
}

struct gk_exec {
    int emu;                      // 1: host loops, host memory
    cudaStream_t s;               // compute stream (GPU)
    void *tmp;                    // CUB temporary storage (GPU), grown by gk_prim
    size_t tmp_cap;
    // buffers grown since the backend last zeroed these (each feed), and the
    // host seconds it took (allocation, copy of kept contents, the old freed)
    unsigned allocs;
    double alloc_s;
    unsigned pinned_allocs;       // of those, page-locked host memory (cudaHostAlloc)
    double pinned_alloc_s;
};

#define GK_THREADS 256

template <class F>
__global__ void __launch_bounds__(GK_THREADS) gk_for_kernel(size_t n, F f)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        f(i);
}

// Run f(i) for i in [0, n).  0 or GA_ECUDA.
template <class F>
static inline int gk_for(const gk_exec *x, size_t n, F f)
{
    if (!n)
        return 0;
    if (x->emu) {
        for (size_t i = 0; i < n; i++)
            f(i);
        return 0;
    }
    size_t blocks = (n + GK_THREADS - 1) / GK_THREADS;
    if (blocks > 132 * 64)
        blocks = 132 * 64;        // grid-stride beyond ~64 blocks per SM
    gk_for_kernel<<<(unsigned)blocks, GK_THREADS, 0, x->s>>>(n, f);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

// ---- bucket arithmetic (docs/SEMANTICS.md), identical to gpu/agg_cpu_window.c

__host__ __device__ static inline int64_t gk_bucket(int64_t ts, int64_t g)
{
    return ga_bucket_start(ts, g); // ts >= 0: floor; no 64-bit division (gpu/bucket_div.h)
}

// First block timestamp of a window whose newest point is last.
__host__ __device__ static inline int64_t gk_first_block(int64_t last, int64_t block, int64_t bw)
{
    if (bw > 0 && block > INT64_MAX / bw)
        return INT64_MIN;         // the CPU's __builtin_mul_overflow case
    return gk_bucket(last, block) - block * bw;
}

// First i in [lo, hi) with ts[i] >= key, hi if none.
__host__ __device__ static inline size_t gk_lower_bound(const int64_t *ts, size_t lo, size_t hi,
                                                        int64_t key)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// First i in [lo, hi) past bucket b (ts[i] - b >= g).
__host__ __device__ static inline size_t gk_bucket_end(const int64_t *ts, size_t lo, size_t hi,
                                                       int64_t b, int64_t g)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] - b < g)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// The same as gk_bucket_end, found by galloping up from lo (1, 2, 4, ...
// steps, then a binary search in the last one): a few loads when the end
// is near lo, as a short bucket's is, instead of log2(hi - lo) in a row.
__host__ __device__ static inline size_t gk_bucket_end_near(const int64_t *ts, size_t lo, size_t hi,
                                                            int64_t b, int64_t g)
{
    size_t step = 1;
    while (lo < hi) {
        size_t p = hi - lo > step ? lo + step : hi;      // probe ts[p - 1]
        if (ts[p - 1] - b >= g)
            return gk_bucket_end(ts, lo, p - 1, b, g);
        lo = p;
        step *= 2;
    }
    return lo;
}

// First i in [0, at] with ts[i] >= key, given ts[at] >= key (at == n: as
// if ts[n] were +inf; ts[at] is never read): galloping down from at — a
// bucket's first point from one of its points, or where a new point goes
// in a window it usually follows.
__host__ __device__ static inline size_t gk_lower_bound_near(const int64_t *ts, size_t at, int64_t key)
{
    size_t hi = at, step = 1;     // ts[hi] >= key
    while (hi > 0) {
        size_t p = hi > step ? hi - step : 0;
        if (ts[p] < key)
            return gk_lower_bound(ts, p + 1, hi, key);
        hi = p;
        step *= 2;
    }
    return 0;
}

// First i in [lo, hi) with ts[i] >= key, galloping up from lo (where an old
// point goes among the new points, which usually all follow it).
__host__ __device__ static inline size_t gk_lower_bound_up(const int64_t *ts, size_t lo, size_t hi,
                                                           int64_t key)
{
    size_t step = 1;
    while (lo < hi) {
        size_t p = hi - lo > step ? lo + step : hi;      // probe ts[p - 1]
        if (ts[p - 1] >= key)
            return gk_lower_bound(ts, lo, p - 1, key);
        lo = p;
        step *= 2;
    }
    return lo;
}

// Last i in [0, n) with off[i] <= key (off ascending, off[0] <= key).
__host__ __device__ static inline size_t gk_seg_of(const uint64_t *off, size_t n, uint64_t key)
{
    size_t lo = 0, hi = n;        // first with off > key
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (off[mid] <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

// gk_seg_of (off[0] <= key < off[n]), searched out from a guess g of the
// answer: where segments of like sizes put it, a probe or two instead of
// log2(n) dependent loads.
__host__ __device__ static inline size_t gk_seg_of_near(const uint64_t *off, size_t n, uint64_t key,
                                                        size_t g)
{
    size_t lo, hi, step = 1;      // off[lo] <= key, off[hi] > key (hi == n: off[n] > key)
    g = g < n ? g : n - 1;
    if (off[g] <= key) {
        lo = g;
        hi = g + 1;
        while (hi < n && off[hi] <= key) {
            lo = hi;
            step *= 2;
            hi = lo + step < n ? lo + step : n;
        }
    } else {
        hi = g;
        lo = g - 1;               // g > 0: off[0] <= key
        while (off[lo] > key) {
            hi = lo;
            step *= 2;
            lo = hi > step ? hi - step : 0;
        }
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (off[mid] <= key)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// Round-to-nearest multiply/add that nvcc may not fuse into an FMA (the CPU
// reference is built without contraction; an FMA would change the bits).
__host__ __device__ static inline double gk_mul(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}
__host__ __device__ static inline double gk_add(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

// ---- block helpers of the phase-by-phase kernels (gk_bucket.cu's tiled rows
// kernel, gk_sort.cu's small-part sort): shared-memory atomics that are plain
// stores in emulation (where one host thread runs a phase for every thread
// of the block in turn), and a warp reduction ahead of them.

__host__ __device__ static inline void sh_min(unsigned long long *p, unsigned long long v)
{
#ifdef __CUDA_ARCH__
    atomicMin(p, v);
#else
    if (v < *p)
        *p = v;
#endif
}
__host__ __device__ static inline void sh_max(unsigned long long *p, unsigned long long v)
{
#ifdef __CUDA_ARCH__
    atomicMax(p, v);
#else
    if (v > *p)
        *p = v;
#endif
}
__host__ __device__ static inline void sh_add(unsigned long long *p, unsigned long long v)
{
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v;
#endif
}
__host__ __device__ static inline void sh_clear(unsigned int *p)
{
#ifdef __CUDA_ARCH__
    atomicAnd(p, 0u);
#else
    *p = 0;
#endif
}
// Min, max and sum of one value a thread over the threads of a warp with
// the same key (keys ascend with the lane, so equal keys are neighbours);
// true in the first of them, which then holds the result and does the one
// shared atomic for all.  Every thread of the warp calls it (identity values
// where it has none: ~0, 0, 0).  Same-address shared atomics from 256
// threads would serialize; this leaves at most a few a warp.  In emulation
// every thread is its own group.
struct red3 {
    unsigned long long mn, mx, sum;
};
__host__ __device__ static inline bool warp_red(unsigned key, red3 &r)
{
#ifdef __CUDA_ARCH__
    unsigned lane = threadIdx.x & 31;
    unsigned m = __match_any_sync(0xffffffffu, key);
    unsigned last = 31 - __clz(m), first = __ffs(m) - 1;
    for (unsigned o = 1; o < 32; o <<= 1) {
        unsigned long long a = __shfl_down_sync(0xffffffffu, r.mn, o);
        unsigned long long b = __shfl_down_sync(0xffffffffu, r.mx, o);
        unsigned long long c = __shfl_down_sync(0xffffffffu, r.sum, o);
        if (lane + o <= last) {   // lane + o is in this group: lanes [lane, lane + 2o) so far
            r.mn = a < r.mn ? a : r.mn;
            r.mx = b > r.mx ? b : r.mx;
            r.sum += c;
        }
    }
    return lane == first;
#else
    (void)key;
    (void)r;
    return true;
#endif
}
