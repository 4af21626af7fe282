// kmeans_gpu.cu — the k-means kernel on the GPU.  Per iteration two kernels:
// assign (nearest centre, membership, per-tile partial sums in the fixed
// order of docs/JOBS.md) and finalize (one block per cluster: tile partials
// in the fixed order, new centre; the last block computes delta and sets the
// convergence flag).  The host enqueues iterations without waiting.
//
// Assign kernels (kmeans.h, GA_KMEANS_KERNEL_*): assign_lane (small k*coords:
// each lane's sums in shared memory, only the winning cluster's touched),
// assign_reg (small k*coords: sums in registers, a select-add per cluster; the
// first version, kept to compare), assign_generic (any k, coords).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda/cuda_check.cuh"
#include "gpu/jobs/job_cuda.cuh"
#include "gpu/jobs/kmeans/kmeans.cuh"
#include "gpu/jobs/kmeans/kmeans_model.h"

namespace {

constexpr int kLanes = GA_KMEANS_LANES;   // threads per block
constexpr int kRows = GA_KMEANS_ROWS;
constexpr int kTile = GA_KMEANS_TILE;
constexpr uint16_t kUnset = 0xffff;

struct KmState {
    unsigned long long changed;
    unsigned int ticket;
    int loops, done, max_loops;
    double threshold, delta;
};

__device__ __forceinline__ double warp_sum_h(double v)
{
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1)
        v = __dadd_rn(v, __shfl_down_sync(0xffffffffu, v, off));
    return v;
}

template <typename T>
__device__ __forceinline__ T warp_sum_int(T v)
{
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

// The 8 warp sums, halving (off 4, 2, 1), as tree256 in kmeans.c.
__device__ __forceinline__ double tree8(const double *w0, int stride)
{
    double w[8];
#pragma unroll
    for (int g = 0; g < 8; g++)
        w[g] = w0[g * stride];
#pragma unroll
    for (int off = 4; off >= 1; off >>= 1)
#pragma unroll
        for (int l = 0; l < off; l++)
            w[l] = __dadd_rn(w[l], w[l + off]);
    return w[0];
}

// Block sum in the tree256 order; result valid in thread 0.
__device__ double block_sum_h(double v, double *red)
{
    v = warp_sum_h(v);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    double r = 0.0;
    if (threadIdx.x == 0)
        r = tree8(red, 1);
    __syncthreads();
    return r;
}

template <typename T>
__device__ T block_sum_int(T v, T *red)
{
    v = warp_sum_int(v);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    T r = 0;
    if (threadIdx.x == 0)
        for (int g = 0; g < 8; g++)
            r += red[g];
    __syncthreads();
    return r;
}

// Left to right from the first term (kmeans_model.h, ga_km_sq).
template <int C>
__device__ __forceinline__ double dist(const double (&x)[C], const double *c)
{
    double d = ga_km_sq(GA_KM_SUB(x[0], c[0]));
#pragma unroll
    for (int j = 1; j < C; j++)
        d = GA_KM_ADD(d, ga_km_sq(GA_KM_SUB(x[j], c[j])));
    return d;
}

// Shared memory of assign_lane: k*C rows of 256 lane sums (double), then k
// rows of 256 lane counts (uint8: at most kRows = 64 members per lane).
__host__ __device__ constexpr size_t lane_smem(int k, int C)
{
    return (size_t)k * C * kLanes * sizeof(double) + (size_t)k * kLanes;
}

// Per-lane sums in shared memory: row q = c*C + j, column = lane.  Only lane t
// touches column t while assigning, so the object loop needs no barrier, and
// an object adds to its own cluster's sums alone (2 adds for C = 2, not one
// select-add per cluster).  Adding only members equals the register kernel's
// "add x or 0.0" bit for bit: a sum that starts at +0.0 is never -0.0, and
// s + 0.0 == s for any other s.  Objects are read U rows at a time, the next
// U rows loaded before the current ones are used.
template <int KMAX, int C, int U>
__global__ void __launch_bounds__(kLanes, 3) assign_lane(const double *__restrict__ X, int64_t n, int k,
                                                         const double *__restrict__ centres,
                                                         uint16_t *__restrict__ member, double *__restrict__ psum,
                                                         int *__restrict__ pcount, int64_t B, KmState *st)
{
    static_assert(kRows % U == 0, "rows by U");
    if (st->done)
        return;
    extern __shared__ __align__(16) unsigned char lane_dyn[];
    double *ls = reinterpret_cast<double *>(lane_dyn);
    uint8_t *lc = lane_dyn + (size_t)k * C * kLanes * sizeof(double);
    __shared__ __align__(16) double cs[KMAX * C];
    __shared__ int shch[8];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    // Clusters k..KMAX-1 get centre +inf: their distance is +inf (or NaN),
    // never < bd, so the cluster loop runs to KMAX without a test.
    for (int q = t; q < KMAX * C; q += kLanes)
        cs[q] = q < k * C ? centres[q] : __longlong_as_double(0x7ff0000000000000ll);
    for (int q = 0; q < k * C; q++)
        ls[q * kLanes + t] = 0.0;
    for (int c = 0; c < k; c++)
        lc[c * kLanes + t] = 0;
    __syncthreads();

    const int64_t base = (int64_t)blockIdx.x * kTile + t;
    double xn[U][C];
    uint16_t on[U];
    auto load = [&](int r0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = base + (int64_t)(r0 + u) * kLanes;
            const bool ok = i < n;
#pragma unroll
            for (int j = 0; j < C; j++)
                xn[u][j] = ok ? __ldcs(X + (int64_t)j * n + i) : 0.0;
            on[u] = ok ? member[i] : kUnset;
        }
    };
    load(0);
    int changed = 0;
#pragma unroll 1
    for (int r0 = 0; r0 < kRows; r0 += U) {
        double x[U][C];
        uint16_t old[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            old[u] = on[u];
#pragma unroll
            for (int j = 0; j < C; j++)
                x[u][j] = xn[u][j];
        }
        if (r0 + U < kRows)
            load(r0 + U);
        double bd[U];
        int best[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            bd[u] = dist<C>(x[u], cs);
            best[u] = 0;
        }
#pragma unroll
        for (int c = 1; c < KMAX; c++) {
            double cc[C];
#pragma unroll
            for (int j = 0; j < C; j++)
                cc[j] = cs[c * C + j];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const double d = dist<C>(x[u], cc);
                if (d < bd[u]) {
                    bd[u] = d;
                    best[u] = c;
                }
            }
        }
        // In row order: lane t's sums take its members row by row.
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = base + (int64_t)(r0 + u) * kLanes;
            if (i < n) {
                if (old[u] != best[u]) {
                    member[i] = (uint16_t)best[u];
                    changed++;
                }
                double *row = ls + best[u] * (C * kLanes) + t;
#pragma unroll
                for (int j = 0; j < C; j++)
                    row[j * kLanes] = __dadd_rn(row[j * kLanes], x[u][j]);
                lc[best[u] * kLanes + t] += 1;
            }
        }
    }

    // Tile partials.  Warp w holds lanes 32w..32w+31: for each row q, the
    // warp's tree (v[l] += v[l+off], off = 16..1) in place, the 32 lanes
    // sharing the q*off additions of each level.
    const int ch = warp_sum_int(changed);
    if (lane == 0)
        shch[warp] = ch;
    __syncwarp();
    const int KC = k * C;
    double *wb = ls + warp * 32;
#pragma unroll
    for (int sh = 4; sh >= 0; sh--) {
        const int off = 1 << sh;
        for (int q = lane; q < (KC << sh); q += 32) {
            double *v = wb + (q >> sh) * kLanes + (q & (off - 1));
            v[0] = __dadd_rn(v[0], v[off]);
        }
        __syncwarp();
    }
    __syncthreads();
    // The 8 warp sums of row q (at lanes 0, 32, ..., 224): tree8.
    for (int q = t; q < KC; q += kLanes)
        psum[(int64_t)q * B + blockIdx.x] = tree8(ls + q * kLanes, 32);
    // Counts: 16 threads per cluster, 16 lane counts each (one 16-byte load).
    for (int c0 = 0; c0 < k; c0 += kLanes / 16) {
        const int c = c0 + (t >> 4);
        int v = 0;
        if (c < k) {
            const uint4 w = reinterpret_cast<const uint4 *>(lc + c * kLanes)[t & 15];
            v = __dp4a(w.x, 0x01010101u, 0u) + __dp4a(w.y, 0x01010101u, 0u) + __dp4a(w.z, 0x01010101u, 0u) +
                __dp4a(w.w, 0x01010101u, 0u);
        }
#pragma unroll
        for (int off = 8; off >= 1; off >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, off);
        if (c < k && (t & 15) == 0)
            pcount[(int64_t)c * B + blockIdx.x] = v;
    }
    if (t == 0) {
        int s2 = 0;
        for (int g = 0; g < 8; g++)
            s2 += shch[g];
        if (s2)
            atomicAdd(&st->changed, (unsigned long long)s2);
    }
}

// Register accumulators: KMAX*C sums and KMAX counts per thread.
template <int KMAX, int C>
__global__ void __launch_bounds__(kLanes) assign_reg(const double *__restrict__ X, int64_t n, int k,
                                                      const double *__restrict__ centres,
                                                      uint16_t *__restrict__ member, double *__restrict__ psum,
                                                      int *__restrict__ pcount, int64_t B, KmState *st)
{
    if (st->done)
        return;
    __shared__ double cs[KMAX * C];
    __shared__ double shs[8][KMAX * C];
    __shared__ int shc[8][KMAX];
    __shared__ int shch[8];
    for (int q = threadIdx.x; q < KMAX * C; q += kLanes)
        cs[q] = q < k * C ? centres[q] : 0.0;
    __syncthreads();
    double sum[KMAX][C];
    int cnt[KMAX];
#pragma unroll
    for (int c = 0; c < KMAX; c++) {
        cnt[c] = 0;
#pragma unroll
        for (int j = 0; j < C; j++)
            sum[c][j] = 0.0;
    }
    int changed = 0;
    const int64_t base = (int64_t)blockIdx.x * kTile + threadIdx.x;
    constexpr int U = 4;
    for (int r0 = 0; r0 < kRows; r0 += U) {
        double x[U][C];
        uint16_t old[U];
        bool ok[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = base + (int64_t)(r0 + u) * kLanes;
            ok[u] = i < n;
#pragma unroll
            for (int j = 0; j < C; j++)
                x[u][j] = ok[u] ? __ldcs(X + (int64_t)j * n + i) : 0.0;
            old[u] = ok[u] ? member[i] : kUnset;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (!ok[u])
                continue;
            int best = 0;
            double bd = dist<C>(x[u], cs);
#pragma unroll
            for (int c = 1; c < KMAX; c++) {
                if (c < k) {
                    double d = dist<C>(x[u], cs + c * C);
                    if (d < bd) {
                        bd = d;
                        best = c;
                    }
                }
            }
            if (old[u] != best) {
                member[base + (int64_t)(r0 + u) * kLanes] = (uint16_t)best;
                changed++;
            }
#pragma unroll
            for (int c = 0; c < KMAX; c++) {
                const bool m = best == c;
#pragma unroll
                for (int j = 0; j < C; j++)
                    sum[c][j] = __dadd_rn(sum[c][j], m ? x[u][j] : 0.0);
                cnt[c] += m;
            }
        }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int c = 0; c < KMAX; c++) {
#pragma unroll
        for (int j = 0; j < C; j++) {
            double v = warp_sum_h(sum[c][j]);
            if (lane == 0)
                shs[warp][c * C + j] = v;
        }
        int v = warp_sum_int(cnt[c]);
        if (lane == 0)
            shc[warp][c] = v;
    }
    int ch = warp_sum_int(changed);
    if (lane == 0)
        shch[warp] = ch;
    __syncthreads();
    for (int q = threadIdx.x; q < k * C; q += kLanes)
        psum[(int64_t)q * B + blockIdx.x] = tree8(&shs[0][q], KMAX * C);
    for (int q = threadIdx.x; q < k; q += kLanes) {
        int s = 0;
        for (int g = 0; g < 8; g++)
            s += shc[g][q];
        pcount[(int64_t)q * B + blockIdx.x] = s;
    }
    if (threadIdx.x == 0) {
        int s = 0;
        for (int g = 0; g < 8; g++)
            s += shch[g];
        if (s)
            atomicAdd(&st->changed, (unsigned long long)s);
    }
}

// Any k and coords: centres read through the cache, one cluster at a time.
__global__ void __launch_bounds__(kLanes) assign_generic(const double *__restrict__ X, int64_t n, int k, int C,
                                                         const double *__restrict__ centres,
                                                         uint16_t *__restrict__ member, double *__restrict__ psum,
                                                         int *__restrict__ pcount, int64_t B, KmState *st)
{
    if (st->done)
        return;
    __shared__ uint16_t mem_s[kTile];
    __shared__ double red[8];
    __shared__ int redi[8];
    const int t = threadIdx.x;
    const int64_t base = (int64_t)blockIdx.x * kTile + t;
    int changed = 0;
    for (int r = 0; r < kRows; r++) {
        const int64_t i = base + (int64_t)r * kLanes;
        uint16_t best = kUnset;
        if (i < n) {
            double bd = 0.0;
            for (int c = 0; c < k; c++) {
                double d = 0.0;
                for (int j = 0; j < C; j++) {
                    double diff = GA_KM_SUB(X[(int64_t)j * n + i], __ldg(centres + (int64_t)c * C + j));
                    d = GA_KM_ADD(d, GA_KM_MUL(diff, diff));
                }
                if (c == 0 || d < bd) {
                    bd = d;
                    best = (uint16_t)c;
                }
            }
            if (member[i] != best) {
                member[i] = best;
                changed++;
            }
        }
        mem_s[r * kLanes + t] = best;   // each thread reads back only its own slots
    }
    int ch = block_sum_int(changed, redi);
    if (t == 0 && ch)
        atomicAdd(&st->changed, (unsigned long long)ch);
    for (int c = 0; c < k; c++) {
        int mine = 0;
        for (int r = 0; r < kRows; r++)
            mine += mem_s[r * kLanes + t] == c;
        int total = block_sum_int(mine, redi);
        if (t == 0)
            pcount[(int64_t)c * B + blockIdx.x] = total;
        if (__syncthreads_or(total > 0) == 0) {
            for (int j = t; j < C; j += kLanes)
                psum[((int64_t)c * C + j) * B + blockIdx.x] = 0.0;
            continue;
        }
        for (int j = 0; j < C; j++) {
            double s = 0.0;
            if (mine)
                for (int r = 0; r < kRows; r++)
                    if (mem_s[r * kLanes + t] == c)
                        s = GA_KM_ADD(s, X[(int64_t)j * n + base + (int64_t)r * kLanes]);
            double v = block_sum_h(s, red);
            if (t == 0)
                psum[((int64_t)c * C + j) * B + blockIdx.x] = v;
        }
    }
}

__global__ void __launch_bounds__(kLanes) km_finalize(double *__restrict__ centres, const double *__restrict__ psum,
                                                      const int *__restrict__ pcount, int64_t B, int C, int64_t n,
                                                      KmState *st, double *hist)
{
    if (st->done)
        return;
    __shared__ double red[8];
    __shared__ long long redl[8];
    __shared__ bool last;
    const int c = blockIdx.x, t = threadIdx.x;
    long long cnt = 0;
    for (int64_t b = t; b < B; b += kLanes)
        cnt += pcount[(int64_t)c * B + b];
    cnt = block_sum_int(cnt, redl);
    __shared__ long long cnt_s;
    if (t == 0)
        cnt_s = cnt;
    __syncthreads();
    cnt = cnt_s;
    for (int j = 0; j < C; j++) {
        const double *ps = psum + ((int64_t)c * C + j) * B;
        double s = 0.0;
        for (int64_t b = t; b < B; b += kLanes)
            s = GA_KM_ADD(s, ps[b]);
        s = block_sum_h(s, red);
        if (t == 0 && cnt > 0)
            centres[(int64_t)c * C + j] = __ddiv_rn(s, (double)cnt);
    }
    if (t == 0) {
        __threadfence();
        last = atomicAdd(&st->ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && t == 0) {
        __threadfence();
        const unsigned long long changed = atomicAdd(&st->changed, 0ull);
        const int loops = st->loops + 1;
        const double delta = (double)changed / (double)n;
        hist[loops - 1] = delta;
        st->delta = delta;
        st->loops = loops;
        if (delta <= st->threshold || loops >= st->max_loops)
            st->done = 1;
        st->changed = 0;
        st->ticket = 0;
        __threadfence();
    }
}

__global__ void km_generate(double *X, int64_t n, int C)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        unsigned int seed = (unsigned int)i;
        for (int j = 0; j < C; j++)
            X[(int64_t)j * n + i] = ga_km_lab_value(&seed);
    }
}

__global__ void km_transpose(double *__restrict__ X, const double *__restrict__ rm, int64_t n, int C)
{
    const int64_t total = n * C;
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < total; q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = q / C;
        const int j = (int)(q - i * C);
        X[(int64_t)j * n + i] = rm[q];
    }
}

__global__ void km_start(const double *X, int64_t n, int k, int C, double *centres, uint16_t *member, KmState *st,
                         int max_loops, double threshold)
{
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t q = tid; q < (int64_t)k * C; q += stride) {
        const int64_t c = q / C;
        centres[q] = X[(q - c * C) * n + c];
    }
    for (int64_t i = tid; i < n; i += stride)
        member[i] = kUnset;
    if (tid == 0) {
        st->changed = 0;
        st->ticket = 0;
        st->loops = 0;
        st->done = 0;
        st->max_loops = max_loops;
        st->threshold = threshold;
        st->delta = 0.0;
    }
}

__global__ void km_widen(const uint16_t *m, int32_t *out, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = m[i];
}

typedef void (*AssignFn)(const double *, int64_t, int, const double *, uint16_t *, double *, int *, int64_t,
                         KmState *);

// The small (k, coords) of ga_kmeans_kernel_small, by template.
template <template <int, int> class P>
AssignFn pick_small(int k, int C)
{
    switch (C) {
    case 1:
        return k <= 8 ? P<8, 1>::fn : k <= 16 ? P<16, 1>::fn : k <= 32 ? P<32, 1>::fn : nullptr;
    case 2:
        return k <= 8 ? P<8, 2>::fn : k <= 16 ? P<16, 2>::fn : k <= 32 ? P<32, 2>::fn : nullptr;
    case 3:
        return k <= 8 ? P<8, 3>::fn : k <= 16 ? P<16, 3>::fn : nullptr;
    case 4:
        return k <= 8 ? P<8, 4>::fn : k <= 16 ? P<16, 4>::fn : nullptr;
    default:
        return nullptr;
    }
}
template <int KMAX, int C>
struct LaneK {
    static constexpr AssignFn fn = assign_lane<KMAX, C, (C <= 2 ? 4 : 2)>;
};
template <int KMAX, int C>
struct RegK {
    static constexpr AssignFn fn = assign_reg<KMAX, C>;
};

int grid_of(int64_t work)
{
    int64_t g = (work + 255) / 256;
    return (int)(g < 1 ? 1 : g > 132 * 32 ? 132 * 32 : g);
}

}  // namespace

struct ga_kmeans_dev {
    int device;
    ga_kmeans_params p;
    int64_t B;
    double *X, *centres, *psum, *hist;
    uint16_t *member;
    int *pcount;
    KmState *st;
    int kernel;       // GA_KMEANS_KERNEL_LANE, _REG or _GENERIC
    AssignFn assign;  // LANE, REG; nullptr for GENERIC
    size_t smem;      // dynamic shared memory of `assign`
};

static int dev_alloc(ga_kmeans_dev *d)
{
    const int64_t n = d->p.nobjs, kc = (int64_t)d->p.k * d->p.coords;
    CUDA_CHECK(cudaSetDevice(d->device));
    CUDA_CHECK(cudaMalloc(&d->X, sizeof(double) * n * d->p.coords));
    CUDA_CHECK(cudaMalloc(&d->member, sizeof(uint16_t) * n));
    CUDA_CHECK(cudaMalloc(&d->centres, sizeof(double) * kc));
    CUDA_CHECK(cudaMalloc(&d->psum, sizeof(double) * kc * d->B));
    CUDA_CHECK(cudaMalloc(&d->pcount, sizeof(int) * d->p.k * d->B));
    CUDA_CHECK(cudaMalloc(&d->st, sizeof(KmState)));
    CUDA_CHECK(cudaMalloc(&d->hist, sizeof(double) * d->p.max_loops));
    CUDA_CHECK(cudaMemset(d->st, 0, sizeof(KmState)));
    return 0;
}

// Up to 136 KB (k 32, coords 2): above the 48 KB default.  The largest
// shared-memory carveout lets 3 blocks of 69 KB (k 16, coords 2) share an SM.
static int set_smem(ga_kmeans_dev *d)
{
    if (!d->smem)
        return 0;
    CUDA_CHECK(cudaFuncSetAttribute((const void *)d->assign, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)d->smem));
    CUDA_CHECK(cudaFuncSetAttribute((const void *)d->assign, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    (int)cudaSharedmemCarveoutMaxShared));
    return 0;
}

extern "C" int ga_kmeans_dev_destroy(struct ga_kmeans_dev *d)
{
    if (!d)
        return 0;
    int rc = job_cuda_dfree(d->X) | job_cuda_dfree(d->member) | job_cuda_dfree(d->centres) |
             job_cuda_dfree(d->psum) | job_cuda_dfree(d->pcount) | job_cuda_dfree(d->st) |
             job_cuda_dfree(d->hist);
    free(d);
    return rc ? GA_ECUDA : 0;
}

extern "C" int ga_kmeans_dev_create(int device, const struct ga_kmeans_params *p, struct ga_kmeans_dev **out)
{
    char err[160];
    *out = nullptr;
    if (ga_kmeans_validate(p, err, sizeof err))
        return GA_EBADARG;
    ga_kmeans_dev *d = (ga_kmeans_dev *)calloc(1, sizeof *d);
    if (!d)
        return GA_ENOMEM;
    d->device = device;
    d->p = *p;
    d->B = (p->nobjs + kTile - 1) / kTile;
    d->kernel = p->kernel != GA_KMEANS_KERNEL_AUTO ? p->kernel
                : ga_kmeans_kernel_small(p->k, p->coords) ? GA_KMEANS_KERNEL_LANE
                                                          : GA_KMEANS_KERNEL_GENERIC;
    if (d->kernel == GA_KMEANS_KERNEL_LANE) {
        d->assign = pick_small<LaneK>(p->k, p->coords);
        d->smem = lane_smem(p->k, p->coords);
    } else if (d->kernel == GA_KMEANS_KERNEL_REG) {
        d->assign = pick_small<RegK>(p->k, p->coords);
    }
    int rc = d->kernel != GA_KMEANS_KERNEL_GENERIC && !d->assign ? GA_EBADARG : 0;
    if (!rc)
        rc = dev_alloc(d);
    if (!rc)
        rc = set_smem(d);
    if (rc) {
        ga_kmeans_dev_destroy(d);
        return rc;
    }
    *out = d;
    return 0;
}

extern "C" double *ga_kmeans_dev_objects(struct ga_kmeans_dev *d) { return d->X; }
extern "C" int ga_kmeans_dev_kernel(const struct ga_kmeans_dev *d) { return d->kernel; }

extern "C" int ga_kmeans_dev_generate(struct ga_kmeans_dev *d, cudaStream_t s)
{
    km_generate<<<grid_of(d->p.nobjs), 256, 0, s>>>(d->X, d->p.nobjs, d->p.coords);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int ga_kmeans_dev_load(struct ga_kmeans_dev *d, const double *rowmajor, cudaStream_t s)
{
    const size_t bytes = sizeof(double) * d->p.nobjs * d->p.coords;
    cudaPointerAttributes a;
    CUDA_CHECK(cudaPointerGetAttributes(&a, rowmajor));
    const bool dev = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
    if (d->p.coords == 1) {
        CUDA_CHECK(cudaMemcpyAsync(d->X, rowmajor, bytes, cudaMemcpyDefault, s));
        return 0;
    }
    double *tmp = nullptr;
    const double *src = rowmajor;
    if (!dev) {
        CUDA_CHECK(cudaMallocAsync(&tmp, bytes, s));
        CUDA_CHECK(cudaMemcpyAsync(tmp, rowmajor, bytes, cudaMemcpyHostToDevice, s));
        src = tmp;
    }
    km_transpose<<<grid_of(d->p.nobjs * d->p.coords), 256, 0, s>>>(d->X, src, d->p.nobjs, d->p.coords);
    CUDA_CHECK(cudaGetLastError());
    if (tmp)
        CUDA_CHECK(cudaFreeAsync(tmp, s));
    return 0;
}

extern "C" int ga_kmeans_dev_start(struct ga_kmeans_dev *d, cudaStream_t s)
{
    km_start<<<grid_of(d->p.nobjs), 256, 0, s>>>(d->X, d->p.nobjs, d->p.k, d->p.coords, d->centres, d->member, d->st,
                                                 d->p.max_loops, d->p.threshold);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int ga_kmeans_launch(struct ga_kmeans_dev *d, int nloops, cudaStream_t s)
{
    const ga_kmeans_params &p = d->p;
    for (int it = 0; it < nloops; it++) {
        if (d->assign)
            d->assign<<<(unsigned)d->B, kLanes, d->smem, s>>>(d->X, p.nobjs, p.k, d->centres, d->member, d->psum,
                                                              d->pcount, d->B, d->st);
        else
            assign_generic<<<(unsigned)d->B, kLanes, 0, s>>>(d->X, p.nobjs, p.k, p.coords, d->centres, d->member,
                                                             d->psum, d->pcount, d->B, d->st);
        CUDA_CHECK(cudaGetLastError());
        km_finalize<<<p.k, kLanes, 0, s>>>(d->centres, d->psum, d->pcount, d->B, p.coords, p.nobjs, d->st, d->hist);
        CUDA_CHECK(cudaGetLastError());
    }
    return 0;
}

extern "C" int ga_kmeans_dev_status(struct ga_kmeans_dev *d, cudaStream_t s, int *loops, int *done, double *delta,
                                    int from, double *hist)
{
    KmState st;
    CUDA_CHECK(cudaMemcpyAsync(&st, d->st, sizeof st, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    *loops = st.loops;
    *done = st.done;
    *delta = st.delta;
    if (hist && st.loops > from)
        CUDA_CHECK(cudaMemcpy(hist, d->hist + from, sizeof(double) * (st.loops - from), cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" int ga_kmeans_dev_results(struct ga_kmeans_dev *d, cudaStream_t s, double *centres, int32_t *membership)
{
    CUDA_CHECK(cudaMemcpyAsync(centres, d->centres, sizeof(double) * d->p.k * d->p.coords, cudaMemcpyDeviceToHost, s));
    if (membership) {
        int32_t *w = nullptr;
        CUDA_CHECK(cudaMallocAsync(&w, sizeof(int32_t) * d->p.nobjs, s));
        km_widen<<<grid_of(d->p.nobjs), 256, 0, s>>>(d->member, w, d->p.nobjs);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpyAsync(membership, w, sizeof(int32_t) * d->p.nobjs, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaFreeAsync(w, s));
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

static int run_km(ga_kmeans_dev *d, cudaStream_t s, const double *objs, ga_kmeans_result *res,
                  ga_kmeans_progress_fn fn, void *arg)
{
    int rc = objs ? ga_kmeans_dev_load(d, objs, s) : ga_kmeans_dev_generate(d, s);
    if (rc || (rc = ga_kmeans_dev_start(d, s)))
        return rc;
    const int every = d->p.sync_every > 0 ? d->p.sync_every : 64;
    double *hist = (double *)malloc(sizeof(double) * d->p.max_loops);
    if (!hist)
        return GA_ENOMEM;
    int enq = 0, seen = 0, loops = 0, done = 0;
    double delta = 0.0;
    while (!done && enq < d->p.max_loops) {
        int chunk = d->p.max_loops - enq < every ? d->p.max_loops - enq : every;
        if ((rc = ga_kmeans_launch(d, chunk, s)))
            break;
        enq += chunk;
        if ((rc = ga_kmeans_dev_status(d, s, &loops, &done, &delta, seen, hist + seen)))
            break;
        for (; seen < loops && !rc; seen++)
            if (fn && fn(arg, seen + 1, hist[seen]))
                rc = GA_ECANCELED;
        if (rc)
            break;
    }
    free(hist);
    res->loops = loops;
    res->delta = delta;
    int rrc = ga_kmeans_dev_results(d, s, res->centres, res->membership);
    return rc ? rc : rrc;
}

extern "C" int ga_kmeans_gpu(int device, const struct ga_kmeans_params *p, const double *objs,
                             struct ga_kmeans_result *res, ga_kmeans_progress_fn fn, void *arg, char *err,
                             size_t errlen)
{
    int rc = ga_kmeans_validate(p, err, errlen);
    if (rc)
        return rc;
    if (!res || !res->centres) {
        snprintf(err, errlen, "kmeans: result centres must not be NULL");
        return GA_EBADARG;
    }
    if ((rc = job_cuda_device_check(device, err, errlen)))
        return rc;
    ga_kmeans_dev *d = nullptr;
    cudaStream_t s = nullptr;
    if ((rc = ga_kmeans_dev_create(device, p, &d)))
        goto out;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        rc = GA_ECUDA;
        goto out;
    }
    rc = run_km(d, s, objs, res, fn, arg);
out:
    if (s && cudaStreamDestroy(s) != cudaSuccess && !rc)
        rc = GA_ECUDA;
    {
        int drc = ga_kmeans_dev_destroy(d);
        if (!rc)
            rc = drc;
    }
    if (rc == GA_ECUDA)
        snprintf(err, errlen, "a CUDA call failed (logged as cuda_error with file and line)");
    else if (rc == GA_ECANCELED)
        snprintf(err, errlen, "kmeans: cancelled after %d loops", res->loops);
    return rc;
}
