// cuda_bench.cu — kernel-only timings for tools/bench/bench_gpu.c
// (ga_cuda_kernel_bench in gpu/cuda.h), and the two ceilings they are
// compared with (device-to-device copy, pinned host-to-device copy).
//
// "Kernel only" runs the feed's own bucket kernels (gk_bucket.cu,
// gk_bucket_long.cu) over series already on the GPU, sorted: bucket keys and
// one task per bucket in two passes and a scan (kt_mark, kt_emit below; the
// one-pass and three-pass ways before it are kept, timed and compared with
// it), then the fused methods
// kernel writing ga_agg rows; for median / Npct also the sort
// (gk_bucket_sort: the shared-memory kernel for short buckets, gather + CUB
// segmented sort for long ones).  Each method set runs with both rows
// kernels (tiled and warp), same data, same run; the rows kernel alone is timed
// too (events around it), and the "basic" rows of the two kernels are
// compared byte for byte on the GPU.  Median + 90pct also runs with each
// sort (CUB alone, and the shared-memory kernel + CUB), the sort alone timed
// too, and the two sorted arrays are compared bit for bit.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "gpu/cuda.h"
#include "gpu/cuda/gk_bucket.cuh"
#include "gpu/cuda/gk_prim.cuh"
#include "gpu/cuda/gk_sort.cuh"
#include "tools/bench/cuda/bench_hooks.h"

#include <cub/block/block_scan.cuh>
#include <cub/agent/single_pass_scan_operators.cuh>
#include <cuda/std/functional>

namespace {

constexpr int64_t BENCH_T0 = 1700000000LL * 1000000000LL;   // the series' start (2023)

struct gen_f {                    // nm series of P points, sorted, step apart with jitter
    int64_t *ts;
    double *val;
    int64_t P, step;
    __host__ __device__ void operator()(size_t i) const
    {
        uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ULL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        int64_t j = (int64_t)(i % (size_t)P);
        ts[i] = BENCH_T0 + j * step + (int64_t)(z % (uint64_t)(step / 2 + 1));
        val[i] = (double)(z >> 11) * (1.0 / 9007199254740992.0) * 100.0 - 50.0;
    }
};

struct head_f {
    const int64_t *ts;
    int64_t P, g;
    uint8_t *head;
    __host__ __device__ void operator()(size_t i) const
    {
        // the series index by 32-bit arithmetic (the bench's N < 2^32),
        // like the feed's per-metric offsets; 64-bit `%` is a slow routine
        head[i] = (uint32_t)i % (uint32_t)P == 0 || gk_bucket(ts[i], g) != gk_bucket(ts[i - 1], g);
    }
};

struct task_f {                   // bucket k = [start[k], start[k + 1])
    const uint32_t *start;
    const int64_t *ts;
    uint64_t nb, total;
    int64_t P, g;
    int rows_per;
    gk_task *tasks;
    __host__ __device__ void operator()(size_t k) const
    {
        uint64_t a = start[k];
        uint64_t t = (uint32_t)a / (uint32_t)P;
        uint64_t z = k + 1 < nb ? start[k + 1] : total;
        if (z > (t + 1) * (uint64_t)P)
            z = (t + 1) * (uint64_t)P;
        uint64_t base = t * (uint64_t)P;
        tasks[k] = gk_task{ (uint32_t)t, 0, 1, gk_bucket(ts[a], g), a - base, z - base,
                            (uint64_t)k * (uint64_t)rows_per };
    }
};

// ---- Bucket keys and tasks ------------------------------------------------
//
// Over the sorted series: a block takes a tile of KT_TILE points (and the
// point before), computes each point's bucket once and flags the heads (a
// series' first point, or a bucket unlike the point before's); head k is
// task k.  Two ways: one pass numbering the heads with a block scan chained
// to the tiles before it (keys_tasks, CUB's decoupled look-back), and two
// passes and a scan with no wait between tiles (kt_mark, kt_emit: what the
// bench's passes run).  Both give the same tasks as the three passes before
// them (head flags, CUB select, a task a start: keys_old below), compared
// task by task in each run (tasks_differ).
#define KT_T 256
#define KT_I 8                    // points a thread (16: 0.47 vs 0.43 ms)
#define KT_TILE (KT_T * KT_I)
#define KT_PAD(k) ((k) + ((k) >> 3))
using kt_state = cub::ScanTileState<uint32_t>;
using kt_plus = ::cuda::std::plus<uint32_t>;
using kt_prefix = cub::TilePrefixCallbackOp<uint32_t, kt_plus, kt_state>;
using kt_scan = cub::BlockScan<uint32_t, KT_T>;

static_assert(offsetof(gk_task, t) == 0 && offsetof(gk_task, d) == 4 && offsetof(gk_task, plain) == 6 &&
                  offsetof(gk_task, b) == 8,
              "keys_tasks stores a task's t, d and plain as one 8-byte word");

__global__ void kt_init(kt_state st, int ntiles)
{
    st.InitializeStatus(ntiles);
}

// A tile's points into shared memory (sts[KT_PAD(k)] = ts[base + k - 1]:
// a pad word every 8, so the 8 points of a thread start 9 words after its
// neighbour's, no bank conflict) and this thread's 8 points' heads, bit j
// for point i0 + j; b[j] each point's bucket.
//
// A bucket start is computed (gk_bucket) only where a point leaves the
// bucket of the point before: about once a bucket, not once a point.  The
// flags are the same: point i is a head when it starts a series or its
// bucket is not the point before's.
//
// SAVE: b[j] also over the thread's own point j in sts for j < KT_I - 1 (its
// last point is the next thread's point before), for a caller that needs
// the buckets after a block scan without holding them in registers.
template <bool SAVE>
__device__ __forceinline__ unsigned kt_heads(const int64_t *ts, uint32_t N, uint32_t P, int64_t g,
                                             int64_t *sts, int64_t (&b)[KT_I])
{
    uint32_t base = blockIdx.x * KT_TILE;
    int64_t v[KT_I];              // all of a thread's loads in flight at once
#pragma unroll
    for (int j = 0; j < KT_I; j++) {
        uint32_t i = base + j * KT_T + threadIdx.x;
        v[j] = i < N ? __ldg(ts + i) : 0;
    }
#pragma unroll
    for (int j = 0; j < KT_I; j++)
        sts[KT_PAD(j * KT_T + threadIdx.x + 1)] = v[j];
    if (threadIdx.x == 0)
        sts[0] = base ? __ldg(ts + base - 1) : 0;
    __syncthreads();
    uint32_t i0 = base + threadIdx.x * KT_I;
    int64_t *my = sts + KT_PAD(threadIdx.x * KT_I);   // MY(j + 1) = ts[i0 + j]
#define MY(m) my[(m) + ((m) >> 3)]               // KT_PAD relative to a multiple of 8
    uint32_t r = i0 % P;          // i0's place in its series, then each point's
    int64_t cb = r ? gk_bucket(MY(0), g) : 0;    // MY(0): the point before
    unsigned heads = 0;
#pragma unroll
    for (int j = 0; j < KT_I; j++) {
        int64_t x = MY(j + 1);
        if (r == 0 || x < cb || x - cb >= g) {
            int64_t nb = gk_bucket(x, g);
            if (i0 + j < N && (r == 0 || nb != cb))
                heads |= 1u << j;
            cb = nb;
        }
        b[j] = cb;
        if (SAVE && j < KT_I - 1)
            MY(j + 1) = cb;
        r = r + 1 == P ? 0 : r + 1;
    }
#undef MY
    return heads;
}

__global__ void __launch_bounds__(KT_T) keys_tasks(const int64_t *ts, uint32_t N, uint32_t P, int64_t g,
                                                   uint32_t rows_per, kt_state st, gk_task *tasks,
                                                   uint32_t *nb)
{
    __shared__ int64_t sts[KT_PAD(KT_TILE) + 1];
    __shared__ typename kt_scan::TempStorage scan;
    __shared__ typename kt_prefix::TempStorage pre;
    int64_t b[KT_I];
    unsigned heads = kt_heads<false>(ts, N, P, g, sts, b);
    uint32_t cnt = (uint32_t)__popc(heads), off;
    if (blockIdx.x == 0) {
        uint32_t total;
        kt_scan(scan).ExclusiveSum(cnt, off, total);
        if (threadIdx.x == 0)
            st.SetInclusive(0, total);
    } else {
        kt_prefix prefix(st, pre, kt_plus(), (int)blockIdx.x);
        kt_scan(scan).ExclusiveSum(cnt, off, prefix);
    }
    // Head k (point i, bucket b) writes task k but its end; the end of task
    // k - 1 is head k's point (the series' end when head k starts a series),
    // so head k writes that too, and the thread holding the last point ends
    // the last task.
    uint32_t i0 = blockIdx.x * KT_TILE + threadIdx.x * KT_I, k = off;
#pragma unroll
    for (int j = 0; j < KT_I; j++) {
        if (!(heads >> j & 1))
            continue;
        uint32_t i = i0 + j, t = i / P, lo = i - t * P;
        gk_task *tk = tasks + k;                  // every field but hi (head k + 1's)
        *(uint64_t *)tk = (uint64_t)t | (uint64_t)1 << 48;   // t, d = 0, plain = 1
        tk->b = b[j];
        tk->lo = lo;
        tk->row_off = (uint64_t)k * rows_per;
        if (k)
            tasks[k - 1].hi = lo ? lo : P;
        k++;
    }
    if (i0 <= N - 1 && N - 1 < i0 + KT_I) {       // the last point: the last task's end
        tasks[k - 1].hi = (N - 1) % P + 1;
        *nb = k;
    }
}

// ---- The same tasks in two passes, no look-back ---------------------------
//
// keys_tasks' blocks wait: seven warps at a barrier while warp 0 looks back
// through the tiles before (ncu).  Here the first pass
// (kt_mark) reads the tile the same way and writes its head flags as bits
// (a byte a thread, 1/64 of the timestamps' bytes), its head count, and its
// heads' bucket starts in order at the tile's place in `bslot` (8 bytes a
// head); a scan of the counts (CUB, one word a tile) gives each tile its
// first task; the second pass (kt_emit) reads the bits and the bucket
// starts back and writes the same tasks as keys_tasks.
//
// kt_mark keeps its heads' bucket starts in shared memory across the scan
// (kt_heads<true>), not in registers, and runs 8 blocks an SM at 32
// registers, no spill: 198 us on the H100.  Holding them in registers took
// 40 (6 blocks an SM, 203 us); the same code at 42 registers, 5 blocks,
// 214 us.
__global__ void __launch_bounds__(KT_T, 8) kt_mark(const int64_t *ts, uint32_t N, uint32_t P, int64_t g,
                                                uint8_t *mask, uint64_t *tcnt, int64_t *bslot)
{
    __shared__ int64_t sts[KT_PAD(KT_TILE) + 1];
    __shared__ typename kt_scan::TempStorage scan;
    int64_t b[KT_I];
    unsigned heads = kt_heads<true>(ts, N, P, g, sts, b);
    int64_t blast = b[KT_I - 1];
    mask[blockIdx.x * KT_T + threadIdx.x] = (uint8_t)heads;
    uint32_t off, cnt;
    kt_scan(scan).ExclusiveSum((uint32_t)__popc(heads), off, cnt);
    // the tile's heads' bucket starts, in order, from shared memory (b[j]
    // for j < KT_I - 1; the last one kept in a register)
    int64_t *o = bslot + (size_t)blockIdx.x * KT_TILE + off;
    const int64_t *my = sts + KT_PAD(threadIdx.x * KT_I);
#pragma unroll
    for (int j = 0; j < KT_I; j++)
        if (heads >> j & 1)
            *o++ = j < KT_I - 1 ? my[j + 1 + ((j + 1) >> 3)] : blast;
    if (threadIdx.x == 0)
        tcnt[blockIdx.x] = cnt;
    if (threadIdx.x == 0 && blockIdx.x + 1 == gridDim.x)
        tcnt[gridDim.x] = 0;      // the scan's last word: its total
}

// kt_emit: a thread takes 32 points' head bits (one 32-bit word of the
// mask), a block KE_TILE points (KE_TILE / KT_TILE of kt_mark's tiles).  The
// block lists its heads in shared memory, then, KE_CH heads at a time,
// reads their bucket starts (a few loads a thread, all in flight), builds
// their tasks in shared memory, a head a thread, and copies them out as one
// run of 8-byte words, a word a thread: whole sectors, where a thread
// writing its own task's fields stores 8 bytes every 40 bytes.
#define KE_TILE (KT_T * 32)
#define KE_TILES (KE_TILE / KT_TILE)
#define KE_CH 512
static_assert(sizeof(gk_task) == 40 && offsetof(gk_task, lo) == 16 && offsetof(gk_task, hi) == 24 &&
                  offsetof(gk_task, row_off) == 32,
              "kt_emit writes a task as 5 words: t|d|plain, b, lo, hi, row_off");

__global__ void __launch_bounds__(KT_T) kt_emit(uint32_t N, uint32_t P, uint32_t rows_per,
                                                const uint32_t *mask, const uint64_t *toff,
                                                uint32_t ntiles, const int64_t *bslot, gk_task *tasks)
{
    __shared__ typename kt_scan::TempStorage scan;
    __shared__ uint16_t pos[KE_TILE];            // the block's heads, in order, from base
    __shared__ uint64_t tw[KE_CH * 5];           // a chunk's tasks, 5 words each
    __shared__ uint32_t tfirst[KE_TILES];        // kt_mark's tiles' first tasks
    uint32_t base = blockIdx.x * KE_TILE, i0 = base + threadIdx.x * 32;
    uint32_t w = mask[blockIdx.x * KT_T + threadIdx.x];   // bit m: point i0 + m
    if (i0 >= N)                  // no points past N (the mask's tail is not kt_mark's this run)
        w = 0;
    else if (N - i0 < 32)
        w &= (1u << (N - i0)) - 1;
    uint32_t first = (uint32_t)toff[blockIdx.x * KE_TILES];   // the block's first task
    uint32_t c, cnt;
    if (threadIdx.x < KE_TILES && blockIdx.x * KE_TILES + threadIdx.x < ntiles)
        tfirst[threadIdx.x] = (uint32_t)toff[blockIdx.x * KE_TILES + threadIdx.x];
    kt_scan(scan).ExclusiveSum((uint32_t)__popc(w), c, cnt);
    while (w) {
        pos[c++] = (uint16_t)(threadIdx.x * 32 + (uint32_t)(__ffs(w) - 1));
        w &= w - 1;
    }
    __syncthreads();
    // Task first - 1 (an earlier block's last) ends at this block's first
    // head, and the last point ends the last task: these ends are written
    // here; a block's last task's end is not written below.
    if (threadIdx.x == 0 && cnt && first) {
        uint32_t lo = (base + pos[0]) % P;
        tasks[first - 1].hi = lo ? lo : P;
    }
    if (i0 <= N - 1 && N - 1 < i0 + 32)
        tasks[first + cnt - 1].hi = (N - 1) % P + 1;
    for (uint32_t q0 = 0; q0 < cnt; q0 += KE_CH) {
        uint32_t n = cnt - q0 < KE_CH ? cnt - q0 : KE_CH;
        int64_t x[KE_CH / KT_T];
#pragma unroll
        for (int u = 0; u < KE_CH / KT_T; u++) {  // the bucket starts first, all in flight
            uint32_t q = u * KT_T + threadIdx.x;
            if (q < n) {          // head k = first + q0 + q of tile tt: its place in the tile's list
                uint32_t tt = pos[q0 + q] / KT_TILE, k = first + q0 + q;
                x[u] = __ldg(bslot + (size_t)(blockIdx.x * KE_TILES + tt) * KT_TILE + (k - tfirst[tt]));
            }
        }
#pragma unroll
        for (int u = 0; u < KE_CH / KT_T; u++) {  // then each task's words, a head a thread
            uint32_t q = u * KT_T + threadIdx.x;
            if (q >= n)
                continue;
            uint32_t i = base + pos[q0 + q], t = i / P, lo = i - t * P;
            uint64_t *o = tw + 5 * q;
            o[0] = (uint64_t)t | (uint64_t)1 << 48;   // t, d = 0, plain = 1
            o[1] = (uint64_t)x[u];
            o[2] = lo;
            if (q0 + q + 1 < cnt) {
                uint32_t lo2 = (base + pos[q0 + q + 1]) % P;   // 0: the next head starts a series
                o[3] = lo2 ? lo2 : P;
            }
            o[4] = (uint64_t)(first + q0 + q) * rows_per;
        }
        __syncthreads();
        // copied out a word a thread, but the block's last task's end
        uint64_t *out = (uint64_t *)(tasks + first + q0);
        uint32_t skip = q0 + n == cnt ? 5 * (n - 1) + 3 : ~0u;
        for (uint32_t wd = threadIdx.x; wd < n * 5; wd += KT_T)
            if (wd != skip)
                out[wd] = tw[wd];
        __syncthreads();          // tw is the next chunk's
    }
}

struct tslot_f {
    uint32_t *tslot;
    uint64_t *m_off, *m_n;
    gk_ctx *ctx;
    int64_t P;
    __host__ __device__ void operator()(size_t t) const
    {
        tslot[t] = 0;
        m_off[t] = t * (uint64_t)P;
        m_n[t] = (uint64_t)P;
        ctx[t] = gk_ctx{ 0, 1, 1, -1, -1, -1, -1 };
    }
};

// Rows i of a and b differ (gaps of the bench's row layout are zero in both).
struct rowcmp_f {
    const struct ga_agg *a, *b;
    unsigned long long *cnt;
    __host__ __device__ void operator()(size_t i) const
    {
        const struct ga_agg &x = a[i], &y = b[i];
        uint64_t vx, vy;
        memcpy(&vx, &x.value, 8);
        memcpy(&vy, &y.value, 8);
        if (x.metric != y.metric || x.method != y.method || x.granularity_ns != y.granularity_ns ||
            x.ts != y.ts || vx != vy) {
#ifdef __CUDA_ARCH__
            atomicAdd(cnt, 1ULL);
#else
            ++*cnt;
#endif
        }
    }
};

// Bucket i's record (packed: at i * 2 slots, engine.h) is not its 8 rows (at
// i * 8, the narrow pass's, std absent below 2 points) packed: header, mask,
// count, values (mean = sum / count).
struct widecmp_f {
    const struct ga_agg *w, *r;
    unsigned long long *cnt;
    __host__ __device__ void operator()(size_t i) const
    {
        const struct ga_agg *h = w + 2 * i, *n = r + 8 * i;
        unsigned mask = n[7].method == GA_M_STD ? 0xffu : 0x7fu;
        uint32_t gs[2];
        memcpy(gs, &h->granularity_ns, 8);
        double cnt_v = (double)h->aux;
        bool bad = h->metric != n[0].metric || h->method != (GA_M_PACKED | mask) ||
                   (int64_t)gs[0] * 1000000000 != n[0].granularity_ns ||
                   (int64_t)gs[1] * 1000000000 != n[0].ts || cnt_v != n[4].value;
        const double *v = (const double *)((const char *)h + 16);   // sum min max first last std
        const int at[8] = { -1, 0, 1, 2, -1, 3, 4, 5 };
        for (int k = 0; k < 8; k++) {
            if (!(mask >> k & 1))
                continue;
            double want = k == 0 ? v[0] / cnt_v : k == 4 ? cnt_v : v[at[k]];
            uint64_t x, y;
            memcpy(&x, &want, 8);
            memcpy(&y, &n[k].value, 8);
            bad = bad || n[k].method != GA_M_MEAN + k || x != y;
        }
        if (bad) {
#ifdef __CUDA_ARCH__
            atomicAdd(cnt, 1ULL);
#else
            ++*cnt;
#endif
        }
    }
};

int median_of(std::vector<float> &v, double *out)
{
    std::sort(v.begin(), v.end());
    *out = v[v.size() / 2] * 1e-3;
    return 0;
}

struct kb_state {
    gk_exec x;
    int64_t *ts;
    double *val;
    uint8_t *head;
    uint32_t *start, *cnt, *slot_pol, *slot_id, *tslot;
    uint64_t *m_off, *m_n, *sortlen, *sortoff;
    gk_ctx *ctx;
    gk_task *tasks, *tasks2;      // tasks2: keys_old's, to compare
    kt_state kst;                 // keys_tasks' tile states
    void *kst_mem;
    uint8_t *mask;                // kt_mark's head bits, a byte a thread
    uint64_t *tcnt, *toff;        // heads a tile (and a zero), their scan
    int64_t *bslot;               // kt_mark's heads' bucket starts, a tile's at its points' place
    struct agg_pol *pol;
    double *unsorted, *sorted, *sorted2;   // sorted2: the other sort's values, to compare
    struct ga_agg *rows, *rows2;  // rows2: the other kernel's "basic" rows, to compare
    unsigned long long *ndiff;
    unsigned long long *long_list;   // the rows kernel's long tasks (gk_bucket_rows)
    unsigned long long *mid_list;    // the warp kernel's tasks too long to stage
    size_t rows_cap, sort_cap;
    uint64_t ns;                  // values the last pass sorted
    gk_sort_counts sc;            // and which way
};

// Events a pass records on the stream: just before the rows kernel, and
// around the sort (after the sortlen scan's total is read).
struct pass_ev {
    cudaEvent_t rows, sort0, sort1;
};

// Bucket keys and tasks, two passes and a scan (kt_mark, kt_emit); *nb the
// buckets.
int keys_two(kb_state *s, const struct ga_cuda_kbench *kb, int rows_per, uint64_t *nb)
{
    uint64_t N = (uint64_t)(kb->nmetrics * kb->npoints_per_metric);
    unsigned ntiles = (unsigned)((N + KT_TILE - 1) / KT_TILE);
    uint32_t P = (uint32_t)kb->npoints_per_metric;
    kt_mark<<<ntiles, KT_T, 0, s->x.s>>>(s->ts, (uint32_t)N, P, kb->gran_ns, s->mask, s->tcnt, s->bslot);
    CUDA_CHECK(cudaGetLastError());
    int rc = gk_scan_u64(&s->x, s->tcnt, s->toff, ntiles + 1);   // toff[ntiles]: the tasks
    if (rc)
        return rc;
    unsigned eblocks = (unsigned)((N + KE_TILE - 1) / KE_TILE);
    kt_emit<<<eblocks, KT_T, 0, s->x.s>>>((uint32_t)N, P, (uint32_t)rows_per, (const uint32_t *)s->mask,
                                          s->toff, ntiles, s->bslot, s->tasks);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpyAsync(nb, s->toff + ntiles, 8, cudaMemcpyDeviceToHost, s->x.s));
    CUDA_CHECK(cudaStreamSynchronize(s->x.s));
    return 0;
}

// The same in one pass (keys_tasks, decoupled look-back), into `tasks`.
int keys_lookback(kb_state *s, const struct ga_cuda_kbench *kb, int rows_per, gk_task *tasks,
                  uint64_t *nb)
{
    uint64_t N = (uint64_t)(kb->nmetrics * kb->npoints_per_metric);
    unsigned ntiles = (unsigned)((N + KT_TILE - 1) / KT_TILE);
    kt_init<<<(ntiles + 255) / 256, 256, 0, s->x.s>>>(s->kst, (int)ntiles);
    keys_tasks<<<ntiles, KT_T, 0, s->x.s>>>(s->ts, (uint32_t)N, (uint32_t)kb->npoints_per_metric,
                                            kb->gran_ns, (uint32_t)rows_per, s->kst, tasks, s->cnt);
    CUDA_CHECK(cudaGetLastError());
    uint32_t nb32 = 0;
    CUDA_CHECK(cudaMemcpyAsync(&nb32, s->cnt, 4, cudaMemcpyDeviceToHost, s->x.s));
    CUDA_CHECK(cudaStreamSynchronize(s->x.s));
    *nb = nb32;
    return 0;
}

// The same in three passes (head flags, CUB select, a task a start), into
// `tasks`: what the bench ran before keys_tasks, kept to check it and to
// time both.
int keys_old(kb_state *s, const struct ga_cuda_kbench *kb, int rows_per, gk_task *tasks, uint64_t *nb)
{
    uint64_t N = (uint64_t)(kb->nmetrics * kb->npoints_per_metric);
    int rc = gk_for(&s->x, N, head_f{ s->ts, kb->npoints_per_metric, kb->gran_ns, s->head });
    if (!rc)
        rc = gk_select_idx(&s->x, s->head, s->start, s->cnt, N);
    if (rc)
        return rc;
    uint32_t nb32 = 0;
    CUDA_CHECK(cudaMemcpyAsync(&nb32, s->cnt, 4, cudaMemcpyDeviceToHost, s->x.s));
    CUDA_CHECK(cudaStreamSynchronize(s->x.s));
    *nb = nb32;
    return gk_for(&s->x, *nb, task_f{ s->start, s->ts, *nb, N, kb->npoints_per_metric, kb->gran_ns,
                                      rows_per, tasks });
}

struct taskcmp_f {
    const gk_task *a, *b;
    unsigned long long *cnt;
    __host__ __device__ void operator()(size_t i) const
    {
        const gk_task &x = a[i], &y = b[i];
        if (x.t != y.t || x.d != y.d || x.plain != y.plain || x.b != y.b || x.lo != y.lo || x.hi != y.hi ||
            x.row_off != y.row_off) {
#ifdef __CUDA_ARCH__
            atomicAdd(cnt, 1ULL);
#else
            ++*cnt;
#endif
        }
    }
};

// One pass over the resident series for a method list; returns buckets.
// scfg: the sort (NULL: auto, the feed's default).
int pass(kb_state *s, const struct ga_cuda_kbench *kb, const struct agg_pol *hp, uint64_t *nb_out,
         int sort_needed, const gk_rows_cfg *cfg, const gk_sort_cfg *scfg, const pass_ev &ev, int wide)
{
    // slots a bucket: every method's row, or a wide record for the basic ones
    // (packed: the series start in 2023, a few hundred points a bucket)
    int64_t g = hp->p.defs[0].granularity_ns;
    int rows_per = (int)gk_plain_rows(hp, wide, 2, 1, 1, g, gk_bucket(BENCH_T0, g)) + hp->nrate;
    uint64_t nb = 0;
    int rc = keys_two(s, kb, rows_per, &nb);
    if (rc)
        return rc;
    *nb_out = nb;
    gk_view v;
    v.pols = s->pol;
    v.slot_pol = s->slot_pol;
    v.slot_id = s->slot_id;
    v.tslot = s->tslot;
    v.m_off = s->m_off;
    v.m_n = s->m_n;
    v.m_ts = s->ts;
    v.m_val = s->val;
    v.ctx = s->ctx;
    v.D = 1;
    v.wide = wide;
    const double *sorted = NULL;
    if (sort_needed) {
        rc = gk_bucket_sortlen(&s->x, &v, s->tasks, nb, s->sortlen);
        if (!rc)
            CUDA_CHECK(cudaMemsetAsync(s->sortlen + 2 * nb, 0, 8, s->x.s));
        if (!rc)
            rc = gk_scan_u64(&s->x, s->sortlen, s->sortoff, 2 * nb + 1);
        uint64_t ns = 0;
        if (!rc) {
            CUDA_CHECK(cudaMemcpyAsync(&ns, s->sortoff + 2 * nb, 8, cudaMemcpyDeviceToHost, s->x.s));
            CUDA_CHECK(cudaStreamSynchronize(s->x.s));
            if (ns > s->sort_cap)
                return GA_ERANGE;
            CUDA_CHECK(cudaEventRecord(ev.sort0, s->x.s));
            // sortlen, dead after the scan, is the split's scratch (2 * maxb + 1 words)
            rc = gk_bucket_sort(&s->x, &v, s->tasks, nb, s->sortoff, ns, s->unsorted, s->sorted,
                                s->sortlen, scfg, &s->sc);
        }
        if (!rc)
            CUDA_CHECK(cudaEventRecord(ev.sort1, s->x.s));
        s->ns = ns;
        sorted = s->sorted;
    } else {                      // no sort: the rows kernels read no sortoff
        CUDA_CHECK(cudaEventRecord(ev.sort0, s->x.s));
        CUDA_CHECK(cudaEventRecord(ev.sort1, s->x.s));
    }
    if (!rc)
        CUDA_CHECK(cudaEventRecord(ev.rows, s->x.s));
    if (!rc)
        rc = gk_rows_long_reset(&s->x, s->long_list);
    if (!rc)
        rc = gk_rows_long_reset(&s->x, s->mid_list);
    if (!rc)
        rc = gk_bucket_rows(&s->x, &v, s->tasks, 0, nb, s->sortoff, sorted, s->rows, cfg, s->long_list,
                            s->mid_list);
    if (!rc)
        rc = gk_rows_mid(&s->x, &v, s->tasks, nb, s->sortoff, sorted, s->rows, s->mid_list);
    if (!rc && cfg->long_min != GK_ROWS_LONG_OFF)
        rc = gk_rows_long(&s->x, &v, s->tasks, nb, s->sortoff, sorted, s->rows, s->long_list);
    return rc;
}

int make_pol(struct agg_pol *out, int64_t g, const char *const *ms, int nm)
{
    struct ga_policy p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "kbench");
    int rc = ga_policy_add_def(&p, g, 0, 0, NULL);
    if (!rc)
        rc = ga_policy_methods_from_list(&p, ms, nm, NULL);
    if (!rc)
        rc = agg_pol_init(out, &p);
    return rc;
}

// Median seconds of `repeat` passes after a warm-up: the whole pass, the
// rows kernel alone and (sort_sec not NULL) the sort alone.
int time_pass(kb_state *s, const struct ga_cuda_kbench *kb, const char *const *ms, int nm,
              const gk_rows_cfg *cfg, double *sec, double *rows_sec, uint64_t *nb,
              const gk_sort_cfg *scfg = NULL, double *sort_sec = NULL, int wide = 0)
{
    struct agg_pol hp;
    int rc = make_pol(&hp, kb->gran_ns, ms, nm);
    if (rc)
        return rc;
    CUDA_CHECK(cudaMemcpy(s->pol, &hp, sizeof hp, cudaMemcpyHostToDevice));
    int sort_needed = ((hp.plain_need | hp.rate_need) & GA_NEED_SORT) != 0;
    cudaEvent_t a, b;
    pass_ev ev;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    CUDA_CHECK(cudaEventCreate(&ev.rows));
    CUDA_CHECK(cudaEventCreate(&ev.sort0));
    CUDA_CHECK(cudaEventCreate(&ev.sort1));
    std::vector<float> ms_t, ms_r, ms_s;
    for (int r = 0; r < kb->repeat + 1 && !rc; r++) {
        CUDA_CHECK(cudaEventRecord(a, s->x.s));
        rc = pass(s, kb, &hp, nb, sort_needed, cfg, scfg, ev, wide);
        CUDA_CHECK(cudaEventRecord(b, s->x.s));
        CUDA_CHECK(cudaEventSynchronize(b));
        float t = 0, tr = 0, ts = 0;
        CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
        CUDA_CHECK(cudaEventElapsedTime(&tr, ev.rows, b));
        CUDA_CHECK(cudaEventElapsedTime(&ts, ev.sort0, ev.sort1));
        if (r) {                  // the first is the warm-up
            ms_t.push_back(t);
            ms_r.push_back(tr);
            ms_s.push_back(ts);
        }
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaEventDestroy(ev.rows);
    cudaEventDestroy(ev.sort0);
    cudaEventDestroy(ev.sort1);
    if (!rc) {
        median_of(ms_t, sec);
        median_of(ms_r, rows_sec);
        if (sort_sec)
            median_of(ms_s, sort_sec);
    }
    return rc;
}

// Median + 90pct with CUB alone, then with the shared-memory kernel + CUB,
// the warp rows kernel (auto's pick for 2 rows a bucket) in both; the two
// sorted arrays compared bit for bit.
int sort_pair(kb_state *s, struct ga_cuda_kbench *kb)
{
    static const char *const srt[] = { "median", "90pct" };
    const gk_rows_cfg warp = { 1, 0, gk_rows_long_min(0) };
    gk_sort_cfg cub = { 0, NULL, NULL };
    gk_sort_cfg small = { kb->sort_small ? kb->sort_small : GK_SORT_SMALL_AUTO, NULL, NULL };
    if (small.small_max > GK_SORT_SMALL_MAX)
        small.small_max = GK_SORT_SMALL_MAX;
    kb->sort_small = small.small_max;
    double rows_sec = 0;
    uint64_t nb = 0;
    int rc = time_pass(s, kb, srt, 2, &warp, &kb->sort_cub_s, &rows_sec, &nb, &cub, &kb->sort_cub_sort_s);
    if (rc)
        return rc;
    uint64_t ns = s->ns;
    CUDA_CHECK(cudaMemcpyAsync(s->sorted2, s->sorted, ns * 8, cudaMemcpyDeviceToDevice, s->x.s));
    CUDA_CHECK(cudaMemsetAsync(s->sorted, 0, ns * 8, s->x.s));
    rc = time_pass(s, kb, srt, 2, &warp, &kb->sort_small_s, &rows_sec, &nb, &small, &kb->sort_small_sort_s);
    if (rc)
        return rc;
    kb->sort_small_parts = s->sc.small_parts;
    kb->sort_big_parts = s->sc.big_parts;
    unsigned long long nd = 0;
    CUDA_CHECK(cudaMemsetAsync(s->ndiff, 0, 16, s->x.s));
    rc = gk_for(&s->x, (size_t)ns, gk_bits_differ_f{ s->sorted, s->sorted2, s->ndiff });
    if (!rc) {
        CUDA_CHECK(cudaMemcpyAsync(&nd, s->ndiff, 8, cudaMemcpyDeviceToHost, s->x.s));
        CUDA_CHECK(cudaStreamSynchronize(s->x.s));
        kb->sorted_differ = s->ns == ns ? (int64_t)nd : -1;
    }
    return rc;
}

// Host check of a few buckets of the last "basic" pass: every value, with
// the CPU's arithmetic (host code: no FMA contraction).
int check_sample(kb_state *s, const struct ga_cuda_kbench *kb, uint64_t nb)
{
    int ok = 1;
    for (uint64_t k = 0; k < nb && ok; k += nb / 7 + 1) {
        gk_task tk;
        struct ga_agg rows[8];
        CUDA_CHECK(cudaMemcpy(&tk, s->tasks + k, sizeof tk, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(rows, s->rows + tk.row_off, sizeof rows, cudaMemcpyDeviceToHost));
        uint64_t n = tk.hi - tk.lo;
        std::vector<double> v(n);
        CUDA_CHECK(cudaMemcpy(v.data(), s->val + tk.t * kb->npoints_per_metric + tk.lo, n * 8,
                              cudaMemcpyDeviceToHost));
        double sum = 0.0, mn = v[0], mx = v[0], ss = 0.0;
        for (uint64_t i = 0; i < n; i++)
            sum += v[i];
        for (uint64_t i = 1; i < n; i++) {
            mn = v[i] < mn ? v[i] : mn;
            mx = v[i] > mx ? v[i] : mx;
        }
        double mean = sum / (double)n;
        for (uint64_t i = 0; i < n; i++) {
            double d = v[i] - mean;
            ss += d * d;
        }
        // rows in method order: mean sum min max count first last std
        ok = rows[0].value == mean && rows[1].value == sum && rows[2].value == mn &&
             rows[3].value == mx && rows[4].value == (double)n && rows[5].value == v[0] &&
             rows[6].value == v[n - 1] && (n < 2 || rows[7].value == sqrt(ss / (double)(n - 1))) &&
             rows[0].ts == tk.b;
    }
    return ok;
}

// Median ms of 10 timed runs (after one warm-up) of `copy`, events on st.
template <class F>
int time_copies(cudaStream_t st, F copy, double *ms)
{
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    std::vector<float> t;
    int rc = 0;
    for (int r = 0; r < 11 && !rc; r++) {
        float x = 0;
        CUDA_CHECK(cudaEventRecord(a, st));
        rc = copy();
        CUDA_CHECK(cudaEventRecord(b, st));
        CUDA_CHECK(cudaEventSynchronize(b));
        CUDA_CHECK(cudaEventElapsedTime(&x, a, b));
        if (r)
            t.push_back(x);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (!rc)
        median_of(t, ms);         // seconds (median_of scales by 1e-3)
    return rc;
}

// The three ways of making the tasks, timed (median of 10 after a warm-up,
// each to its bucket count on the host), and the one-pass and two-pass
// tasks each compared with the three passes'.  Then the same comparison,
// untimed, over a shape no tile size divides (a series 13 points shorter,
// one series fewer: the bench's own sizes are powers of two).
int keys_pair(kb_state *s, struct ga_cuda_kbench *kb)
{
    struct ga_cuda_kbench odd = *kb;
    if (odd.npoints_per_metric > 64)
        odd.npoints_per_metric -= 13;
    if (odd.nmetrics > 1)
        odd.nmetrics -= 1;
    int rc = 0;
    kb->tasks_differ = 0;
    for (int shape = 0; shape < 2 && !rc; shape++) {
        const struct ga_cuda_kbench *k = shape ? &odd : kb;
        uint64_t nb[3] = { 0, 0, 0 };
        for (int way = 2; way >= 0 && !rc; way--) {
            auto keys = [&]() -> int {
                return way == 2 ? keys_old(s, k, 3, s->tasks2, &nb[2])
                     : way == 1 ? keys_lookback(s, k, 3, s->tasks, &nb[1])
                                : keys_two(s, k, 3, &nb[0]);
            };
            rc = shape ? keys() : time_copies(s->x.s, keys, &kb->keys_s[way]);
            if (rc || way == 2)
                continue;
            unsigned long long nd = 0;
            CUDA_CHECK(cudaMemset(s->ndiff, 0, 8));
            rc = gk_for(&s->x, (size_t)nb[way], taskcmp_f{ s->tasks, s->tasks2, s->ndiff });
            if (!rc)
                CUDA_CHECK(cudaMemcpy(&nd, s->ndiff, 8, cudaMemcpyDeviceToHost));
            if (kb->tasks_differ >= 0)
                kb->tasks_differ = nb[way] == nb[2] ? kb->tasks_differ + (int64_t)nd : -1;
        }
    }
    return rc;
}

// The ceilings: device copy, pinned H2D, pinned D2H, and H2D with D2H at
// once (the pipeline moves its points in and its rows out together; a
// PCIe link does not give both directions their full rate at once).
int bandwidth(struct ga_cuda_kbench *kb, cudaStream_t st)
{
    size_t bytes = (size_t)1 << 30, half = bytes / 2;
    void *d1 = NULL, *d2 = NULL, *h = NULL, *h2 = NULL;
    cudaStream_t st2 = NULL;
    cudaEvent_t fork = NULL, join = NULL;
    CUDA_CHECK(cudaMalloc(&d1, bytes));
    CUDA_CHECK(cudaMalloc(&d2, bytes));
    CUDA_CHECK(cudaHostAlloc(&h, half, cudaHostAllocDefault));
    CUDA_CHECK(cudaHostAlloc(&h2, half, cudaHostAllocDefault));
    CUDA_CHECK(cudaStreamCreateWithFlags(&st2, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    memset(h, 1, half);
    memset(h2, 2, half);
    CUDA_CHECK(cudaMemset(d1, 1, bytes));
    double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    int rc = time_copies(st, [&]() -> int {
        CUDA_CHECK(cudaMemcpyAsync(d2, d1, bytes, cudaMemcpyDeviceToDevice, st));
        return 0;
    }, &s1);
    if (!rc)
        rc = time_copies(st, [&]() -> int {
            CUDA_CHECK(cudaMemcpyAsync(d2, h, half, cudaMemcpyHostToDevice, st));
            return 0;
        }, &s2);
    if (!rc)
        rc = time_copies(st, [&]() -> int {
            CUDA_CHECK(cudaMemcpyAsync(h2, d1, half, cudaMemcpyDeviceToHost, st));
            return 0;
        }, &s3);
    if (!rc)                      // both at once: st2 forks from st and joins it
        rc = time_copies(st, [&]() -> int {
            CUDA_CHECK(cudaEventRecord(fork, st));
            CUDA_CHECK(cudaStreamWaitEvent(st2, fork, 0));
            CUDA_CHECK(cudaMemcpyAsync(d2, h, half, cudaMemcpyHostToDevice, st));
            CUDA_CHECK(cudaMemcpyAsync(h2, (char *)d1 + half, half, cudaMemcpyDeviceToHost, st2));
            CUDA_CHECK(cudaEventRecord(join, st2));
            CUDA_CHECK(cudaStreamWaitEvent(st, join, 0));
            return 0;
        }, &s4);
    if (!rc) {
        kb->d2d_gbps = 2.0 * (double)bytes / s1 / 1e9;
        kb->h2d_gbps = (double)half / s2 / 1e9;
        kb->d2h_gbps = (double)half / s3 / 1e9;
        kb->duplex_gbps = 2.0 * (double)half / s4 / 1e9;
    }
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaStreamDestroy(st2);
    cudaFree(d1);
    cudaFree(d2);
    cudaFreeHost(h);
    cudaFreeHost(h2);
    return rc;
}

#define DM(p, n) CUDA_CHECK(cudaMalloc((void **)&(p), (size_t)(n)))

int run(int device, struct ga_cuda_kbench *kb, kb_state *s)
{
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s->x.s, cudaStreamNonBlocking));
    int rc = bandwidth(kb, s->x.s);
    if (rc)
        return rc;
    uint64_t N = (uint64_t)(kb->nmetrics * kb->npoints_per_metric);
    uint64_t maxb = N;            // at most one bucket per point
    DM(s->ts, N * 8);
    DM(s->val, N * 8);
    DM(s->head, N);
    DM(s->start, N * 4);
    DM(s->cnt, 4);
    DM(s->slot_pol, 4);
    DM(s->slot_id, 4);
    DM(s->pol, sizeof(struct agg_pol));
    DM(s->tslot, kb->nmetrics * 4);
    DM(s->m_off, kb->nmetrics * 8);
    DM(s->m_n, kb->nmetrics * 8);
    DM(s->ctx, kb->nmetrics * sizeof(gk_ctx));
    DM(s->tasks, maxb * sizeof(gk_task));
    DM(s->tasks2, maxb * sizeof(gk_task));
    {
        size_t kb_bytes = 0;
        int ntiles = (int)((N + KT_TILE - 1) / KT_TILE);
        CUDA_CHECK(kt_state::AllocationSize(ntiles, kb_bytes));
        DM(s->kst_mem, kb_bytes);
        CUDA_CHECK(s->kst.Init(ntiles, s->kst_mem, kb_bytes));
        size_t mbytes = (N + KE_TILE - 1) / KE_TILE * (KE_TILE / 8);   // kt_emit's words, zero past N
        DM(s->mask, mbytes);
        CUDA_CHECK(cudaMemset(s->mask, 0, mbytes));
        DM(s->tcnt, ((size_t)ntiles + 1) * 8);
        DM(s->toff, ((size_t)ntiles + 1) * 8);
        DM(s->bslot, N * 8);
    }
    DM(s->long_list, (maxb + 1) * 8);
    DM(s->mid_list, (maxb + 1) * 8);
    DM(s->sortlen, (2 * maxb + 1) * 8);
    DM(s->sortoff, (2 * maxb + 1) * 8);
    s->sort_cap = 2 * N;
    DM(s->unsorted, s->sort_cap * 8);
    DM(s->sorted, s->sort_cap * 8);
    int sorts = !kb->basic_only || kb->sort_both;
    if (sorts)
        DM(s->sorted2, s->sort_cap * 8);
    // rows: up to 8 a bucket; buckets <= N / (g / step) + nmetrics
    uint64_t per = (uint64_t)(kb->gran_ns / kb->step_ns);
    uint64_t estb = N / (per ? per : 1) + 4 * (uint64_t)kb->nmetrics + 1024;
    if (estb > maxb)
        estb = maxb;
    s->rows_cap = estb * 8;
    DM(s->rows, s->rows_cap * sizeof(struct ga_agg));
    DM(s->rows2, s->rows_cap * sizeof(struct ga_agg));
    DM(s->ndiff, 16);             // two counters (gk_bits_differ_f)
    CUDA_CHECK(cudaMemset(s->slot_pol, 0, 4));
    CUDA_CHECK(cudaMemset(s->slot_id, 0, 4));
    rc = gk_for(&s->x, N, gen_f{ s->ts, s->val, kb->npoints_per_metric, kb->step_ns });
    if (!rc)
        rc = gk_for(&s->x, (size_t)kb->nmetrics, tslot_f{ s->tslot, s->m_off, s->m_n, s->ctx,
                                                           kb->npoints_per_metric });
    if (rc)
        return rc;
    CUDA_CHECK(cudaStreamSynchronize(s->x.s));
    static const char *const basic[] = { "mean", "sum", "min", "max", "count", "first", "last", "std" };
    static const char *const sum[] = { "sum" };
    static const char *const srt[] = { "median", "90pct" };
    static const char *const rate[] = { "rate:mean", "rate:sum", "rate:std", "rate:max" };
    // long buckets' kernel as the backend opens it by default
    const gk_rows_cfg tiled = { 0, 0, gk_rows_long_min(0) }, warp = { 1, 0, gk_rows_long_min(0) };
    rc = gk_rows_tiled_info(0, &kb->tiled_smem, &kb->tiled_blocks_per_sm);
    if (rc)
        return rc;
    uint64_t nb = 0;
    size_t rbytes = s->rows_cap * sizeof(struct ga_agg);
    // basic, warp kernel first, its rows kept aside; then tiled, compared.
    CUDA_CHECK(cudaMemset(s->rows, 0, rbytes));
    rc = time_pass(s, kb, basic, 8, &warp, &kb->warp_s[0], &kb->warp_rows_s[0], &nb);
    if (!rc && nb * 8 > s->rows_cap)
        return GA_ERANGE;
    int ok_warp = rc ? 0 : check_sample(s, kb, nb);
    if (!rc) {
        CUDA_CHECK(cudaMemcpy(s->rows2, s->rows, rbytes, cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaMemset(s->rows, 0, rbytes));
        rc = time_pass(s, kb, basic, 8, &tiled, &kb->basic_s, &kb->rows_s[0], &nb);
    }
    if (!rc) {
        kb->checked = ok_warp && check_sample(s, kb, nb);
        unsigned long long nd = 0;
        CUDA_CHECK(cudaMemset(s->ndiff, 0, 8));
        rc = gk_for(&s->x, (size_t)(nb * 8), rowcmp_f{ s->rows, s->rows2, s->ndiff });
        if (!rc)
            CUDA_CHECK(cudaMemcpy(&nd, s->ndiff, 8, cudaMemcpyDeviceToHost));
        kb->rows_differ = (int64_t)nd;
    }
    // basic as wide records, each kernel, each compared with the tiled rows
    // (kept in rows2); the rows buffer is zeroed first (gaps compare equal)
    kb->wide_differ = rc ? -1 : 0;
    for (int w = 0; w < 2 && !rc; w++) {
        if (w == 0)
            CUDA_CHECK(cudaMemcpy(s->rows2, s->rows, rbytes, cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaMemset(s->rows, 0, rbytes));
        uint64_t nbw = 0;
        rc = time_pass(s, kb, basic, 8, w ? &warp : &tiled, &kb->wide_s[w], &kb->wide_rows_s[w], &nbw,
                       NULL, NULL, 1);
        unsigned long long nd = 0;
        CUDA_CHECK(cudaMemset(s->ndiff, 0, 8));
        if (!rc)
            rc = gk_for(&s->x, (size_t)nb, widecmp_f{ s->rows, s->rows2, s->ndiff });
        if (!rc)
            CUDA_CHECK(cudaMemcpy(&nd, s->ndiff, 8, cudaMemcpyDeviceToHost));
        kb->wide_differ += nbw == nb ? (int64_t)nd : (int64_t)nb;
    }
    kb->buckets = nb;
    if (!rc)
        rc = keys_pair(s, kb);
    if (!rc)
        rc = time_pass(s, kb, sum, 1, &tiled, &kb->sum_s, &kb->rows_s[1], &nb);
    if (!rc)
        rc = time_pass(s, kb, sum, 1, &warp, &kb->warp_s[1], &kb->warp_rows_s[1], &nb);
    if (!rc && sorts)
        rc = sort_pair(s, kb);
    if (kb->basic_only)
        return rc;
    if (!rc)
        rc = time_pass(s, kb, srt, 2, &tiled, &kb->sort_s, &kb->rows_s[2], &nb);
    if (!rc)
        rc = time_pass(s, kb, srt, 2, &warp, &kb->warp_s[2], &kb->warp_rows_s[2], &nb);
    if (!rc)
        rc = time_pass(s, kb, rate, 4, &tiled, &kb->rate_s, &kb->rows_s[3], &nb);
    if (!rc)
        rc = time_pass(s, kb, rate, 4, &warp, &kb->warp_s[3], &kb->warp_rows_s[3], &nb);
    return rc;
}

} // namespace

extern "C" int ga_cuda_kernel_bench(int device, struct ga_cuda_kbench *kb)
{
    if (kb->nmetrics <= 0 || kb->npoints_per_metric <= 0 || kb->step_ns <= 0 || kb->gran_ns <= 0 ||
        kb->repeat <= 0 || kb->nmetrics * kb->npoints_per_metric >= (int64_t)UINT32_MAX)
        return GA_EINVAL;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || device >= n)
        return GA_ENOGPU;
    kb->rows_differ = -1;
    kb->tasks_differ = -1;
    kb->sorted_differ = -1;
    kb_state s;
    memset((void *)&s, 0, sizeof s);   // kst: plain pointers, zero until Init
    int rc = run(device, kb, &s);
    cudaDeviceSynchronize();
    void *bufs[] = { s.ts, s.val, s.head, s.start, s.cnt, s.slot_pol, s.slot_id, s.tslot, s.m_off,
                     s.m_n, s.sortlen, s.sortoff, s.ctx, s.tasks, s.pol, s.unsorted, s.sorted,
                     s.sorted2, s.rows, s.rows2, s.ndiff, s.long_list, s.mid_list, s.x.tmp, s.tasks2, s.kst_mem,
                     s.mask, s.tcnt, s.toff, s.bslot };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            cudaFree(bufs[i]);
    if (s.x.s)
        cudaStreamDestroy(s.x.s);
    return rc;
}
