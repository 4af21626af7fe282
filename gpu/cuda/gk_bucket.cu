// gk_bucket.cu — the bucket kernels (gk_bucket.cuh) but the long-task one
// (gk_bucket_long.cu); what both use is in gk_bucket_priv.cuh.
#include "gpu/cuda/gk_bucket.cuh"
#include "gpu/cuda/gk_bucket_priv.cuh"

#include <stddef.h>
#include <string.h>

#include <cuda_pipeline.h>

#include <atomic>
#include <vector>

namespace {

struct sortlen_f {
    gk_view v;
    const gk_task *tasks;
    uint64_t *len;
    __host__ __device__ void operator()(size_t i) const
    {
        uint64_t np, nr, dlo;
        gk_task_parts(v, tasks[i], &np, &nr, &dlo);
        len[2 * i] = np;
        len[2 * i + 1] = nr;
    }
};

struct gather_f {
    gk_view v;
    const gk_task *tasks;
    const uint64_t *off;
    double *out;
    __host__ __device__ void operator()(size_t i) const
    {
        const gk_task &tk = tasks[i];
        uint64_t np, nr, dlo;         // gk_part's parts 2i and 2i + 1, read once
        gk_task_parts(v, tk, &np, &nr, &dlo);
        uint64_t m0 = v.m_off[tk.t];
        double *o = out + off[2 * i];
        for (uint64_t k = 0; k < np; k++)
            o[k] = gk_part_value(v.m_val, m0 + tk.lo, 0, k);
        o = out + off[2 * i + 1];
        for (uint64_t k = 0; k < nr; k++)
            o[k] = gk_part_value(v.m_val, m0 + dlo, 1, k);
    }
};

// ---- The warp rows kernel (ga_cuda_opts.rows_kernel GA_CUDA_ROWS_WARP; auto's pick below 3
// rows a bucket) ----------------------------------------------------------
//
// One thread a task, as in the tiled kernel, but every warp on its own: no
// block barrier, so a warp computes while the others of its SM (16: two
// blocks of 8) stage.  A warp's 32 consecutive tasks
// usually read one short stretch of the merged windows; it stages that
// stretch into its own WARP_CAP values of shared memory with asynchronous
// copies (cp.async, nothing through registers), then each lane reads its
// bucket from there.  When the stretch does not fit, the warp goes in
// rounds: each stages from the lowest first point of the tasks still to do
// and runs the tasks that lie inside the staged stretch.  A task longer than
// WARP_CAP / WARP_DIRECT points (a round would run too few lanes) goes to
// the mid list for rows_mid (below; without a list it reads global memory
// directly after the rounds), and one whose methods read no point (count,
// median, Npct: the length and the sorted copy) reads after the rounds.  Each thread
// writes its rows (and a wide record) itself: few rows a bucket, or one
// record, are not worth a staged store.
//
// The same driver runs on the host in emulation, lane by lane between the
// warp's collective steps (warp_emulate below), so CI checks the rounds and
// the direct tasks of the kernel itself.
#define WARP_CAP 1024u            // values a warp stages (8 KB; tests ask for fewer: gk_rows_cfg)
#define WARP_CAP_MIN 32u
#define WARP_DIRECT 8u            // a task of more than cap / 8 points reads global memory
#define WARP_BLOCK_WARPS (GK_THREADS / 32)
#define WARP_SMEM (WARP_BLOCK_WARPS * WARP_CAP * 8u)

struct wlane {
    size_t i;
    int act;                      // a task of this kernel's (not long)
    int pend;                     // staged in a round still to come
    int direct;                   // reads global memory (long for a round, or no point)
    uint64_t start, end;          // the points it reads [start, end)
};

__host__ __device__ inline wlane wlane_of(const rows_f &fn, size_t i, int in_range, unsigned cap)
{
    wlane L{ i, 0, 0, 0, 0, 0 };
    if (!in_range)
        return L;
    if (fn.is_long(i)) {
        fn.put_long(i);
        return L;
    }
    L.act = 1;
    L.direct = 1;
    if (!fn.reads_values(i))
        return L;
    const gk_task &tk = fn.tasks[i];
    uint64_t m0 = fn.v.m_off[tk.t];
    L.start = m0 + (tk.lo ? tk.lo - 1 : 0);   // rate: reads lo - 1 (task_of's stretch)
    L.end = m0 + tk.hi;
    L.pend = L.end - L.start <= cap / WARP_DIRECT;
    L.direct = !L.pend;
    if (L.direct && fn.mid_list) {  // with its like in rows_mid, not among short ones here
        fn.put_mid(i);
        L.act = L.direct = 0;
    }
    return L;
}

// Task i's rows, point j (absolute) at base[j - base_lo]; rows and records
// straight to global memory.
__host__ __device__ inline void wlane_run(const rows_f &fn, size_t i, const double *base, uint64_t base_lo)
{
    tparts p = task_of(fn, i);
    struct ga_agg *r = fn.rows + p.row_off;
    task_run(fn, i, p, base, base_lo, task_sink(p, r, sink_direct{ r }));
}

// What a round stages: from s, the lowest first point of the tasks still to
// do; a pending task is in the round when it ends within s + cap.
__host__ __device__ inline int wlane_in_round(const wlane &L, uint64_t s, unsigned cap)
{
    return L.pend && L.end - s <= cap;
}

__device__ inline unsigned long long warp_min64(unsigned long long v)
{
    for (int o = 16; o; o >>= 1) {
        unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w < v ? w : v;
    }
    return v;
}
__device__ inline unsigned long long warp_max64(unsigned long long v)
{
    for (int o = 16; o; o >>= 1) {
        unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}

// Two blocks an SM at least: up to 128 registers, none spilled.  Three (24
// warps) hold the registers to 80 and spill, which measured slower
// (docs/GPU.md "Rows kernel").
__global__ void __launch_bounds__(GK_THREADS, 2) rows_warp(rows_f fn, size_t t0, size_t t1, unsigned cap)
{
    extern __shared__ double warp_dsm[];
#ifdef __CUDA_ARCH__
    unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    double *buf = warp_dsm + (size_t)w * WARP_CAP;
    size_t i = t0 + (size_t)blockIdx.x * GK_THREADS + threadIdx.x;
    wlane L = wlane_of(fn, i, i < t1, cap);
    for (;;) {
        unsigned long long s = warp_min64(L.pend ? L.start : ~0ULL);
        if (s == ~0ULL)
            break;
        int in = wlane_in_round(L, s, cap);
        unsigned long long e = warp_max64(in ? L.end : 0);
        const double *src = fn.v.m_val + s;
        for (unsigned long long k = lane; k < e - s; k += 32)
            __pipeline_memcpy_async(buf + k, src + k, 8);
        __pipeline_commit();
        __pipeline_wait_prior(0);
        __syncwarp();
        if (in) {
            wlane_run(fn, L.i, buf, s);
            L.pend = 0;
        }
        __syncwarp();             // the buffer is free for the next round
    }
    if (L.direct)
        wlane_run(fn, L.i, fn.v.m_val, 0);
#endif
}

// The warp kernel on the host: each warp's lanes step by step, the
// collective steps (min, max, the stage) between them.
void warp_emulate(const rows_f &fn, size_t t0, size_t t1, unsigned cap)
{
    std::vector<double> buf(WARP_CAP);
    wlane L[32];
    for (size_t w0 = t0; w0 < t1; w0 += 32) {
        for (int l = 0; l < 32; l++)
            L[l] = wlane_of(fn, w0 + l, w0 + l < t1, cap);
        for (;;) {
            uint64_t s = ~0ULL, e = 0;
            for (int l = 0; l < 32; l++)
                if (L[l].pend && L[l].start < s)
                    s = L[l].start;
            if (s == ~0ULL)
                break;
            for (int l = 0; l < 32; l++)
                if (wlane_in_round(L[l], s, cap) && L[l].end > e)
                    e = L[l].end;
            for (size_t k = 0; k < cap; k++)   // stale values where nothing is staged
                buf[k] = -1e300 * (double)(k + 1);
            memcpy(buf.data(), fn.v.m_val + s, (e - s) * 8);
            for (int l = 0; l < 32; l++)
                if (wlane_in_round(L[l], s, cap)) {
                    wlane_run(fn, L[l].i, buf.data(), s);
                    L[l].pend = 0;
                }
        }
        for (int l = 0; l < 32; l++)
            if (L[l].direct)
                wlane_run(fn, L[l].i, fn.v.m_val, 0);
    }
}

// ---- Tasks too long to stage (rows_mid) -----------------------------------
//
// The warp kernel lists the tasks it would read from global memory (more
// than cap / WARP_DIRECT points, fewer than long_min) instead of running
// each on its lane after the rounds: with one such task among a warp's 32
// (an hour's 360 points beside six-point minutes: one in 35 tasks of the
// pipeline's feed), the warp waits on that lane's chain (docs/GPU.md
// "Long buckets" has the measurement).  Here a thread a listed task, so a
// warp's lanes run chains of like lengths side by side.
__global__ void __launch_bounds__(GK_THREADS) rows_mid(rows_f fn)
{
    unsigned long long n = fn.mid_list[0];
    for (unsigned long long k = (unsigned long long)blockIdx.x * GK_THREADS + threadIdx.x; k < n;
         k += (unsigned long long)gridDim.x * GK_THREADS)
        wlane_run(fn, (size_t)fn.mid_list[1 + k], fn.v.m_val, 0);
}

// ---- The tiled rows kernel (the default) ---------------------------------
//
// Still one thread a task (a bucket), so every sum stays the CPU's left to
// right chain; what changes is how a block of 256 tasks moves its bytes:
//
//  * Values: the block stages the stretch of the merged windows its tasks
//    read into dynamic shared memory with coalesced loads (8 in flight a
//    thread), and each thread reads its bucket from there.  When the whole
//    stretch does not fit, the block splits its tasks into groups of g
//    consecutive tasks whose stretches fit and runs one round per group
//    (stage, barrier, the group's threads compute, barrier): with 360-point
//    buckets about 23 tasks a round.  Global memory is read directly, as
//    the warp kernel does, by a task longer than 1/TILE_GMIN of the buffer
//    (rounds of fewer than TILE_GMIN threads would serialize the sums), by
//    every task of a block whose groups would have fewer than TILE_GMIN
//    tasks, or whose groups would stage more than 4x the points its tasks
//    read (sparse buckets in long windows: staging would mostly move unused
//    points).
//  * Rows: a thread puts each row as 16 bytes {value, method, task index}
//    into shared memory at its place in the block's stretch of rows (row_off
//    ascending: the block's rows are one stretch [R0, R0 + NR)); after the
//    last round the block writes the stretch to global memory, 16 bytes a
//    thread, consecutive threads at consecutive addresses, composing the
//    32-byte ga_agg rows from the staged value and method and the task's
//    metric, granularity and bucket start (kept once a task).  A 16-byte pad
//    slot after every 8 row slots shifts each task's 8 rows ("basic") by one
//    bank group, so the threads of a quarter warp store to different banks.
//    Rows that do not fit (many methods) are written row by row.
//  * Sum and min/max are read in one pass (bucket<true>), std in a second.
//
// Shared memory and occupancy: a block asks for half an SM's shared memory
// (113 KB on an H100: (228 KB - 2 x 1 KB reserved) / 2), so two blocks (16
// warps) share an SM, and __launch_bounds__(256, 2) lets a thread have up to
// 128 registers.  Two blocks rather than three or four because "basic" at
// 30 points a bucket needs 256 x 30 x 8 = 60 KB of values plus 36 KB of
// staged rows to be done in one round; in 75 KB (three blocks an SM) it
// would take two rounds with half the threads idle in each.  The work per
// point is a few FP64 operations; what the kernel waits for is DRAM, and
// for that the bytes in flight (16 KB a block while staging, rows stored
// without waiting) matter more than more warps.
//
// The kernel is written as phases separated by block barriers (tile_drive);
// on the GPU each thread runs the driver and __syncthreads() ends each phase,
// in emulation the host runs each phase for the 256 threads in turn.  Every
// decision between phases (rounds, group size, staging or not) is computed
// from shared values read after a barrier, so it is the same in every thread
// and no barrier sits in divergent code.

#define TILE_T GK_THREADS
#define TILE_UNROLL 8
#define TILE_GMIN 8               // fewest tasks a round; longest staged task: buffer / TILE_GMIN
#define TILE_SMEM_EMU 115712u     // emulation default: what an H100 block gets (see above)

// The fixed part of the block's dynamic shared memory.
struct tile_fix {
    unsigned long long r0, r1;    // the block's rows [r0, r1)
    unsigned long long need;      // points its tasks read, summed
    unsigned long long worst;     // widest group stretch
    unsigned long long staged;    // group stretches, summed
    unsigned int ok;              // rows of consecutive tasks in order
    unsigned int pad_;
    long long g[TILE_T], b[TILE_T];                 // per task: granularity, bucket start
    unsigned long long lo[TILE_T], hi[TILE_T];      // per task its rows, then per group
                                                    // the points it stages [lo, hi)
    uint32_t metric[TILE_T], rowrel[TILE_T], rowcnt[TILE_T];   // per task: metric id,
                                                    // first row - r0, row count
    uint8_t wsl[TILE_T];                            // per task: its wide record's slots,
                                                    // written by the thread, not staged
};
#define TILE_FIX ((unsigned)((sizeof(tile_fix) + 15) & ~(size_t)15))
#define TILE_MIN (TILE_FIX + 1024u)

static_assert(sizeof(struct ga_agg) == 32 && offsetof(struct ga_agg, metric) == 0 &&
                  offsetof(struct ga_agg, method) == 4 && sizeof(ga_method_t) == 2 &&
                  offsetof(struct ga_agg, granularity_ns) == 8 && offsetof(struct ga_agg, ts) == 16 &&
                  offsetof(struct ga_agg, value) == 24,
              "the tiled kernel composes ga_agg rows as two 16-byte halves");

__host__ __device__ inline uint64_t dbits(double v)
{
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(v);
#else
    uint64_t u;
    memcpy(&u, &v, 8);
    return u;
#endif
}
__host__ __device__ inline void st16(void *p, uint4 v)
{
#ifdef __CUDA_ARCH__
    *(uint4 *)p = v;
#else
    memcpy(p, &v, 16);
#endif
}

// Slot of staged row r: one pad slot after every 8.
__host__ __device__ inline uint64_t tile_slot(uint64_t r) { return r + (r >> 3); }

// Rows of a task into the block's staged rows: row k at rel + k, as
// {value low, value high, method, task index}.  A row past cap (none when
// the row counts are right; cap 0 when the block does not stage its rows)
// goes to global memory directly.
struct sink_tile {
    uint4 *slot;
    uint64_t rel, cap;
    uint32_t tix;
    struct ga_agg *r;             // the task's first row in global memory
    __host__ __device__ void put(uint64_t k, uint32_t metric, ga_method_t m, int64_t g, int64_t b,
                                 double val) const
    {
        uint64_t q = rel + k;
        if (q < cap) {
            uint64_t u = dbits(val);
            slot[tile_slot(q)] = make_uint4((uint32_t)u, (uint32_t)(u >> 32), (uint32_t)m, tix);
        } else {
            sink_direct{ r }.put(k, metric, m, g, b, val);
        }
    }
};

// Rows (slots) task_run() writes (gk_tasks.cu's task_rows, which sized row_off).
__host__ __device__ inline uint64_t task_nrows(const tparts &p)
{
    uint64_t r = 0;
    if (p.hasp)
        r += gk_nrows(p.pn, p.pol->plain, p.pol->nplain, p.pas, p.pao) - p.wk + p.ws;
    if (p.hasr)
        r += gk_nrows(p.rn, p.pol->rate, p.pol->nrate, p.ras, p.rao);
    return r;
}

enum { P_RESET, P_TASK, P_CHECK, P_GRESET, P_GSPAN, P_GWORST, P_SYNC, P_STAGE, P_COMPUTE, P_COPY };

struct tile_thr {                 // what a thread keeps from phase to phase
    size_t i;
    int act, big, skip;           // skip: a long task (rows_long computes it)
    uint64_t start, end;
};

struct tile_blk {
    rows_f fn;
    size_t first;                 // the block's first task
    int nact;                     // its tasks: [first, first + nact), 1..TILE_T
    unsigned S;                   // shared memory bytes
    unsigned char *dsm;           // the GPU's dynamic shared memory; NULL in emulation
    tile_fix *fx;
    uint4 *rs;                    // staged rows
    double *vals;                 // staged values
    // Block-uniform, set by tile_drive from shared values read after a barrier.
    uint64_t R0, NR, vcap;
    int rows_on, g, use_stage;

    __host__ __device__ void setup(const rows_f &f, size_t t0, size_t t1, size_t blk, unsigned s,
                                   unsigned char *d, tile_fix *hfx, uint4 *hrs, double *hvals)
    {
        fn = f;
        first = t0 + blk * TILE_T;
        nact = t1 - first < TILE_T ? (int)(t1 - first) : TILE_T;
        S = s;
        dsm = d;
        fx = d ? (tile_fix *)d : hfx;
        rs = d ? (uint4 *)(d + TILE_FIX) : hrs;
        vals = hvals;
        R0 = NR = vcap = 0;
        rows_on = use_stage = 0;
        g = 1;
    }

    // The staged values start after the staged rows (the host has its own buffers).
    __host__ __device__ void regions(uint64_t rows_bytes)
    {
        if (dsm)
            vals = (double *)(dsm + TILE_FIX + rows_bytes);
        vcap = (S - TILE_FIX - rows_bytes) / 8;
    }

    __host__ __device__ void phase(int ph, int arg, tile_thr &t, int tid)
    {
        switch (ph) {
        case P_RESET:
            if (tid == 0) {
                fx->r0 = ~0ULL;
                fx->r1 = 0;
                fx->need = 0;
                fx->ok = 1;
            }
            break;
        case P_TASK: {            // the task's reach and rows; the block's rows
            t.i = first + (size_t)tid;
            t.act = tid < nact;
            t.big = 0;
            t.start = t.end = 0;
            t.skip = t.act && fn.is_long(t.i);
            if (t.skip)
                fn.put_long(t.i);
            red3 r = { ~0ULL, 0, 0 };
            if (t.act) {
                tparts p = task_of(fn, t.i);
                uint64_t n = task_nrows(p);
                t.start = p.start;
                t.end = p.end;
                fx->g[tid] = p.g;
                fx->b[tid] = p.b;
                fx->metric[tid] = p.metric;
                fx->lo[tid] = p.row_off;
                fx->hi[tid] = p.row_off + n;
                // a long task's rows are a gap here: none of its slots is copied
                fx->rowcnt[tid] = t.skip ? 0 : n < 0xffffffffULL ? (uint32_t)n : 0xffffffffu;
                fx->wsl[tid] = (uint8_t)p.ws;
                r = red3{ p.row_off, p.row_off + n, t.skip ? 0 : p.end - p.start };
            }
            if (warp_red(0, r) && r.mn != ~0ULL) {
                sh_min(&fx->r0, r.mn);
                sh_max(&fx->r1, r.mx);
                sh_add(&fx->need, r.sum);
            }
            break;
        }
        case P_CHECK:             // rows of task tid after those of task tid - 1
            if (!t.act)
                break;
            fx->rowrel[tid] = (uint32_t)(fx->lo[tid] - R0);   // used only when NR is small
            if (tid > 0 && fx->hi[tid - 1] > fx->lo[tid])
                sh_clear(&fx->ok);
            break;
        case P_GRESET: {          // arg = g: groups of g consecutive tasks
            int ng = (nact + arg - 1) / arg;
            if (tid < ng) {
                fx->lo[tid] = ~0ULL;
                fx->hi[tid] = 0;
            }
            if (tid == 0)
                fx->worst = fx->staged = 0;
            break;
        }
        case P_GSPAN: {           // arg = g: each group's stretch (long tasks left out)
            red3 r = { ~0ULL, 0, 0 };
            if (t.act && !t.skip) {
                t.big = t.end - t.start > vcap / TILE_GMIN;
                if (!t.big)
                    r = red3{ t.start, t.end, 0 };
            }
            if (warp_red((unsigned)(tid / arg), r) && r.mn != ~0ULL) {
                sh_min(&fx->lo[tid / arg], r.mn);
                sh_max(&fx->hi[tid / arg], r.mx);
            }
            break;
        }
        case P_GWORST: {          // the widest group stretch, and their sum
            int ng = (nact + arg - 1) / arg;
            red3 r = { ~0ULL, 0, 0 };
            if (tid < ng && fx->hi[tid] > fx->lo[tid])
                r.mx = r.sum = fx->hi[tid] - fx->lo[tid];
            if (warp_red(0, r) && r.mx) {
                sh_max(&fx->worst, r.mx);
                sh_add(&fx->staged, r.sum);
            }
            break;
        }
        case P_SYNC:
            break;
        case P_STAGE: {           // arg = group: its points into vals, coalesced
            uint64_t lo = fx->lo[arg], hi = fx->hi[arg];
            if (!use_stage || hi <= lo || hi - lo > vcap)
                break;
            const double *src = fn.v.m_val + lo;
            uint64_t n = hi - lo;
#ifdef __CUDA_ARCH__
            for (uint64_t k0 = (uint64_t)tid; k0 < n; k0 += (uint64_t)TILE_UNROLL * TILE_T) {
                double x[TILE_UNROLL];
#pragma unroll
                for (int u = 0; u < TILE_UNROLL; u++) {
                    uint64_t k = k0 + (uint64_t)u * TILE_T;
                    x[u] = k < n ? __ldg(src + k) : 0.0;
                }
#pragma unroll
                for (int u = 0; u < TILE_UNROLL; u++) {
                    uint64_t k = k0 + (uint64_t)u * TILE_T;
                    if (k < n)
                        vals[k] = x[u];
                }
            }
#else
            for (uint64_t k = (uint64_t)tid; k < n; k += TILE_T)
                vals[k] = src[k];
#endif
            break;
        }
        case P_COMPUTE: {         // arg = group: its tasks' rows
            if (!t.act || t.skip || tid / g != arg)
                break;
            uint64_t lo = fx->lo[arg], hi = fx->hi[arg];
            int stg = use_stage && !t.big && hi > lo && hi - lo <= vcap;
            tparts p = task_of(fn, t.i);
            struct ga_agg *r = fn.rows + p.row_off;   // a record goes there directly
            sink_wide<sink_tile> out = task_sink(p, r, sink_tile{ rs, (uint64_t)fx->rowrel[tid],
                                                                  rows_on ? NR : 0, (uint32_t)tid, r });
            if (stg)
                task_run(fn, t.i, p, vals, lo, out);
            else
                task_run(fn, t.i, p, fn.v.m_val, 0, out);
            break;
        }
        case P_COPY: {            // the staged rows out, 16 bytes a thread
            if (!rows_on)
                break;
            char *dst = (char *)(fn.rows + R0);
            for (uint64_t c = (uint64_t)tid; c < 2 * NR; c += TILE_T) {
                uint64_t r = c >> 1;
                uint4 q = rs[tile_slot(r)];
                uint32_t j = q.w;
                // A slot no task of this block wrote (a gap between tasks' rows,
                // or a wide record, which its thread wrote to global memory)
                // holds stale bytes: its task index or row range does not match.
                if (j >= (uint32_t)nact || r - fx->rowrel[j] >= fx->rowcnt[j] ||
                    r - fx->rowrel[j] < fx->wsl[j])
                    continue;
                uint4 o;
                if (c & 1) {
                    uint64_t b = (uint64_t)fx->b[j];
                    o = make_uint4((uint32_t)b, (uint32_t)(b >> 32), q.x, q.y);
                } else {
                    uint64_t g8 = (uint64_t)fx->g[j];
                    o = make_uint4(fx->metric[j], q.z, (uint32_t)g8, (uint32_t)(g8 >> 32));
                }
                st16(dst + 16 * c, o);
            }
            break;
        }
        }
    }
};

// Phase runners: on the GPU this thread's phase, then the block barrier;
// in emulation every thread's phase in turn.
struct tile_dev {
    tile_blk &b;
    tile_thr t;
    __host__ __device__ void step(int ph, int arg)
    {
#ifdef __CUDA_ARCH__
        b.phase(ph, arg, t, (int)threadIdx.x);
        __syncthreads();
#else
        (void)ph;                 // only ever run on the GPU
        (void)arg;
#endif
    }
};
struct tile_host {
    tile_blk &b;
    tile_thr t[TILE_T];
    __host__ __device__ void step(int ph, int arg)
    {
        for (int k = 0; k < TILE_T; k++)
            b.phase(ph, arg, t[k], k);
    }
};

template <class E>
__host__ __device__ void tile_drive(E &e, tile_blk &B)
{
    tile_fix *fx = B.fx;
    e.step(P_RESET, 0);
    e.step(P_TASK, 0);
    B.R0 = fx->r0;
    B.NR = fx->r1 > fx->r0 ? fx->r1 - fx->r0 : 0;
    e.step(P_CHECK, 0);
    // Rows staged when in order, aligned, and within 3/4 of the room.
    uint64_t room = B.S - TILE_FIX;
    uint64_t rows_bytes = (B.NR + (B.NR >> 3) + 1) * 16;
    B.rows_on = fx->ok && B.NR && rows_bytes <= room / 4 * 3 &&
                ((uintptr_t)(B.fn.rows + B.R0) & 15) == 0;
    B.regions(B.rows_on ? rows_bytes : 0);
    // Group size: all the block's tasks, else fewer until each group's
    // stretch fits (at most 4 tries; a group still too wide reads global).
    // Groups of fewer than TILE_GMIN tasks would run too few threads a
    // round: then no staging, one round, every task from global memory.
    int g = B.nact, stage = 1;
    for (int attempt = 0;; attempt++) {
        e.step(P_GRESET, g);
        e.step(P_GSPAN, g);
        e.step(P_GWORST, g);
        uint64_t worst = fx->worst;
        if (worst <= B.vcap || attempt == 3)
            break;
        uint64_t ng = (uint64_t)g * B.vcap / worst;   // < g, as worst > vcap
        if (ng < TILE_GMIN) {
            stage = 0;
            g = B.nact;
            break;
        }
        e.step(P_SYNC, 0);        // every thread has read worst before P_GRESET clears it
        g = (int)ng;
    }
    B.g = g;
    B.use_stage = stage && fx->staged <= 4 * fx->need;
    int ngroups = (B.nact + g - 1) / g;
    for (int r = 0; r < ngroups; r++) {
        e.step(P_STAGE, r);
        e.step(P_COMPUTE, r);
    }
    e.step(P_COPY, 0);
}

__global__ void __launch_bounds__(TILE_T, 2) rows_tiled(rows_f fn, size_t t0, size_t t1, unsigned S)
{
    extern __shared__ uint4 tile_dsm[];
    tile_blk B;
    B.setup(fn, t0, t1, blockIdx.x, S, (unsigned char *)tile_dsm, NULL, NULL, NULL);
    tile_dev e{ B, tile_thr{} };
    tile_drive(e, B);
}

// The tiled kernel on the host: block by block, phase by phase.  The staged
// rows are filled with stale-looking bytes before each block (any task
// index, any value), as a GPU's shared memory may hold: none may come out.
void tile_emulate(const rows_f &fn, size_t t0, size_t t1, unsigned S)
{
    std::vector<tile_fix> fx(1);
    std::vector<uint4> rs(S / 16 + 1);
    std::vector<double> vals(S / 8 + 1);
    std::vector<tile_thr> unused;
    size_t nb = (t1 - t0 + TILE_T - 1) / TILE_T;
    for (size_t blk = 0; blk < nb; blk++) {
        for (size_t k = 0; k < rs.size(); k++)
            rs[k] = make_uint4(0xdeadbeefu, 0x7ff4dead, (uint32_t)(k & 0xff), (uint32_t)((k * 37 + blk) % TILE_T));
        memset((void *)fx.data(), 0xa5, sizeof(tile_fix));
        tile_blk B;
        B.setup(fn, t0, t1, blk, S, NULL, fx.data(), rs.data(), vals.data());
        tile_host *e = new tile_host{ B, {} };
        tile_drive(*e, B);
        delete e;
    }
}

// Shared memory for the tiled kernel on the current device: want (clamped
// to what a block may have), or half an SM when want is 0.  *S = 0 when the
// device cannot give a useful tile (then the warp kernel runs).
int tile_smem(unsigned want, unsigned *S)
{
    static std::atomic<unsigned> def_[64], max_[64];   // per device, 0 = not asked yet
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    int cached = dev >= 0 && dev < 64;
    unsigned d = cached ? def_[dev].load() : 0, m = cached ? max_[dev].load() : 0;
    if (!m) {
        int optin = 0, per_sm = 0, reserved = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
        CUDA_CHECK(cudaFuncSetAttribute(rows_tiled, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
        CUDA_CHECK(cudaFuncSetAttribute(rows_tiled, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        (int)cudaSharedmemCarveoutMaxShared));
        long two = (long)per_sm / 2 - reserved;
        long dd = two < optin ? two : optin;
        d = dd > 0 ? (unsigned)dd & ~15u : 0;
        m = optin > 0 ? (unsigned)optin & ~15u : 0;
        if (cached && m) {
            def_[dev].store(d);
            max_[dev].store(m);
        }
    }
    unsigned s = want ? (want < TILE_MIN ? TILE_MIN : want) : d;
    if (s > m)
        s = m;
    *S = s >= TILE_MIN ? s : 0;
    return 0;
}

// The warp kernel's shared memory (64 KB a block: over the 48 KB a launch
// gets without asking), asked for once per device.
int warp_smem()
{
    static std::atomic<int> done_[64];
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= 0 && dev < 64 && done_[dev].load())
        return 0;
    CUDA_CHECK(cudaFuncSetAttribute(rows_warp, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)WARP_SMEM));
    if (dev >= 0 && dev < 64)
        done_[dev].store(1);
    return 0;
}

} // namespace

int gk_bucket_sortlen(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks,
                      uint64_t *sortlen)
{
    return gk_for(x, ntasks, sortlen_f{ *v, tasks, sortlen });
}

int gk_bucket_gather(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks,
                     const uint64_t *sortoff, double *unsorted)
{
    return gk_for(x, ntasks, gather_f{ *v, tasks, sortoff, unsorted });
}

int gk_rows_tiled_info(unsigned want, unsigned *smem, int *blocks_per_sm)
{
    *blocks_per_sm = 0;
    int rc = tile_smem(want, smem);
    if (!rc && *smem)
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, rows_tiled, TILE_T, *smem));
    return rc;
}

int gk_bucket_rows(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t t0, size_t t1,
                   const uint64_t *sortoff, const double *sorted, struct ga_agg *rows,
                   const gk_rows_cfg *cfg, unsigned long long *long_list, unsigned long long *mid_list)
{
    if (t1 <= t0)
        return 0;
    int warp = cfg && cfg->warp;
    unsigned want = cfg ? cfg->smem : 0;
    unsigned lm = cfg && cfg->long_min ? cfg->long_min : GK_ROWS_LONG_MIN;
    rows_f fn{ *v, tasks, sortoff, sorted, rows,
               lm == GK_ROWS_LONG_OFF || !long_list ? UINT64_MAX : (uint64_t)lm, long_list,
               warp ? mid_list : NULL };
    unsigned wcap = want ? want / 8 : WARP_CAP;   // the warp kernel's values a warp
    wcap = wcap < WARP_CAP_MIN ? WARP_CAP_MIN : wcap > WARP_CAP ? WARP_CAP : wcap;
    if (x->emu) {
        if (warp) {
            warp_emulate(fn, t0, t1, wcap);
        } else {
            unsigned S = want ? want : TILE_SMEM_EMU;
            tile_emulate(fn, t0, t1, S < TILE_MIN ? TILE_MIN : S);
        }
        return 0;
    }
    size_t blocks = (t1 - t0 + GK_THREADS - 1) / GK_THREADS;
    unsigned S = 0;
    int rc = warp ? 0 : tile_smem(want, &S);
    if (!rc && !S)
        rc = warp_smem();
    if (rc)
        return rc;
    if (S)
        rows_tiled<<<(unsigned)blocks, TILE_T, S, x->s>>>(fn, t0, t1, S);
    else
        rows_warp<<<(unsigned)blocks, GK_THREADS, WARP_SMEM, x->s>>>(fn, t0, t1, wcap);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

int gk_rows_mid(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks, const uint64_t *sortoff,
                const double *sorted, struct ga_agg *rows, unsigned long long *mid_list)
{
    rows_f fn{ *v, tasks, sortoff, sorted, rows, UINT64_MAX, NULL, mid_list };
    if (x->emu) {
        for (unsigned long long k = 0; k < mid_list[0]; k++)
            wlane_run(fn, (size_t)mid_list[1 + k], fn.v.m_val, 0);
        return 0;
    }
    // a thread a listed task; past ~8 blocks an SM the threads stride
    size_t most = (ntasks + GK_THREADS - 1) / GK_THREADS;
    if (most)
        rows_mid<<<(unsigned)(most < 132 * 8 ? most : 132 * 8), GK_THREADS, 0, x->s>>>(fn);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}
