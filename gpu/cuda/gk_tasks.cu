// gk_tasks.cu — a feed's bucket tasks (gk_feed.cuh): which items (touched
// metric t, granularity d, new point k) start a bucket, the tasks each makes
// (the bucket's points in the merged window; for rate: methods maybe the
// bucket after too), their rows, and the tasks written in item order.
//
// Items are numbered q in [0, U * D), by t, then d, then k: the CPU's row
// order within a metric.  Two passes over tiles of GK_TASK_TILE items, and
// a scan of the tiles between:
//   count: each tile's tasks and rows (tcnt);
//   scan:  the tiles' exclusive sums (toff), and the totals and the rows
//          kernels' chunk bounds as words the host reads in one wait;
//   emit:  each tile's tasks from its place on.
// On the GPU a tile is a block: its threads walk GK_TASK_ITEMS items each
// and list the heads in shared memory, then take a head each for the
// searches.  No list of heads in global memory, no per-head arrays, and one
// wait for the host where the head flags, a select of them, per-head count
// and copy passes and their scans had three (docs/PERFORMANCE.md).
#include "gpu/cuda/gk_feed.cuh"

#include <stdlib.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

namespace {

// Rows (slots) a task part emits (gk_nrows with the timespan rules; a wide
// record's slots for its basic methods).
__host__ __device__ uint64_t task_rows(const struct agg_pol *pol, int wide, const gk_ctx &c, int64_t g,
                                       int64_t span, int plain, int64_t b, uint64_t lo, uint64_t hi)
{
    uint64_t r = 0;
    if (plain && pol->nplain)
        r += gk_plain_rows(pol, wide, hi - lo, gk_allowed(b, c.last_std, span),
                           gk_allowed(b, c.last_plain, span), g, b);
    uint64_t dlo = lo > (uint64_t)c.dfirst ? lo : (uint64_t)c.dfirst;
    if (pol->nrate && dlo < hi)
        r += gk_nrows(hi - dlo, pol->rate, pol->nrate, gk_allowed(b, c.last_rstd, span),
                      gk_allowed(b, c.last_rate, span));
    return r;
}

// Item q: touched metric t, its new points [a, a + L), granularity d, point
// k.  Divisions are 32-bit when U * D fits (narrow; 64-bit ones are a long
// software routine on the GPU); a point's touched metric comes through its
// slot.
struct qpos {
    size_t t;
    uint64_t a, L, k;
    int d;
};

__host__ __device__ qpos decode_q(const gk_feed &f, size_t q, int narrow)
{
    qpos p;
    uint32_t D = (uint32_t)f.D;
    size_t k0 = narrow ? (uint32_t)q / D : q / D;
    p.t = f.t_of[f.u_slot[k0]];
    p.a = f.seg[p.t];
    p.L = f.seg[p.t + 1] - p.a;
    uint64_t qq = q - p.a * D;
    if (narrow) {
        p.d = (int)((uint32_t)qq / (uint32_t)p.L);
        p.k = p.a + (uint32_t)qq % (uint32_t)p.L;
    } else {
        p.d = (int)(qq / p.L);
        p.k = p.a + qq % p.L;
    }
    return p;
}

// The item after p (which must exist).  1 when it starts a new (t, d).
__host__ __device__ int next_q(const gk_feed &f, qpos &p)
{
    if (++p.k < p.a + p.L)
        return 0;
    p.k = p.a;
    if (++p.d < f.D)
        return 1;
    p.d = 0;
    p.t++;
    p.a += p.L;
    p.k = p.a;
    p.L = f.seg[p.t + 1] - p.a;
    return 1;
}

// What a head item makes: one or two tasks (row_off relative to the item's
// first row), their rows, and with wide the rows those unpack to.
struct made {
    int n;
    gk_task tk[2];
    uint64_t rows, lrows;
};

// The tasks of head item (t, d, k) of bucket b, whose bucket's new points
// end at k2 (the next head of the same t and d, else a + L; NO_K2: not
// known, searched): the bucket's points in the merged window, found from
// the new points' places in it (pos), and for rate: methods the bucket after
// when no new point starts it (its first point's difference needs this
// bucket's last point).
#define NO_K2 UINT64_MAX

__host__ __device__ made head_tasks(const gk_feed &f, size_t t, int d, uint64_t k, uint64_t k2,
                                    const struct agg_pol *pol, int64_t b)
{
    uint64_t end = f.seg[t + 1];
    int64_t g = pol->p.defs[d].granularity_ns, span = pol->p.defs[d].timespan_ns;
    const gk_ctx &c = f.ctx[t * f.D + d];
    const int64_t *ts = f.m_ts + f.m_off[t];
    uint64_t n = f.m_n[t];
    made m;
    // all near k: searches gallop from there (gk.cuh)
    if (k2 == NO_K2)
        k2 = gk_bucket_end_near(f.u_ts, k + 1, end, b, g);
    uint64_t lo = gk_lower_bound_near(ts, f.pos[k], b);
    uint64_t hi = gk_bucket_end_near(ts, f.pos[k2 - 1] + 1, n, b, g);
    uint64_t r1 = task_rows(pol, f.wide, c, g, span, 1, b, lo, hi);
    m.tk[0] = gk_task{ (uint32_t)t, (uint16_t)d, 1, b, lo, hi, 0 };
    m.n = 1;
    m.rows = r1;
    m.lrows = f.wide ? task_rows(pol, 0, c, g, span, 1, b, lo, hi) : r1;
    if (pol->nrate && hi < n && hi == f.pos[k2 - 1] + 1) {
        int64_t sb = gk_bucket(ts[hi], g);
        if (k2 >= end || gk_bucket(f.u_ts[k2], g) != sb) {
            uint64_t shi = gk_bucket_end_near(ts, hi + 1, n, sb, g);
            m.tk[1] = gk_task{ (uint32_t)t, (uint16_t)d, 0, sb, hi, shi, r1 };
            m.n = 2;
            uint64_t r2 = task_rows(pol, f.wide, c, g, span, 0, sb, hi, shi);
            m.rows += r2;
            m.lrows += r2;        // a rate:-only task writes no record
        }
    }
    return m;
}

// A tile's heads, in shared memory on the GPU: their item offsets in the
// tile, in order (hq), and at each head's item offset its metric, point and
// granularity index, so the second step starts its searches without the
// chain of loads that decodes an item.
struct tile_list {
    uint16_t hq[GK_TASK_TILE];
    uint32_t t[GK_TASK_TILE], k[GK_TASK_TILE];
    uint8_t d[GK_TASK_TILE];
};

// Step 1, thread `thr` of tile `tile`: its GK_TASK_ITEMS items, the heads
// among them recorded in L at their offsets; a bit each (bit j: item
// thr * GK_TASK_ITEMS + j of the tile).  An item heads a bucket when it is
// its metric's first new point or the new point before it is in an older
// bucket; a bucket start is computed only where an item leaves the bucket of
// the item before, about once a bucket rather than once an item.
__host__ __device__ unsigned find_heads(const gk_feed &f, size_t UD, int narrow, size_t tile, unsigned thr,
                                        tile_list &L)
{
    unsigned o0 = thr * GK_TASK_ITEMS;
    size_t q0 = tile * GK_TASK_TILE + o0;
    if (q0 >= UD)
        return 0;
    size_t q1 = q0 + GK_TASK_ITEMS < UD ? q0 + GK_TASK_ITEMS : UD;
    qpos p = decode_q(f, q0, narrow);
    uint32_t pi = 0;
    int64_t g = 0, lb = 0;        // lb: the bucket of the item before, when `run`
    int run = 0, live = 0;        // live: d is one of the metric's granularities
    unsigned mask = 0;
    for (size_t q = q0; q < q1; q++) {
        if (q > q0 && next_q(f, p))
            run = 0;
        if (!run) {
            pi = f.slot_pol[f.tslot[p.t]];
            live = p.d < f.pols[pi].p.ndefs;
            g = live ? f.pols[pi].p.defs[p.d].granularity_ns : 0;
        }
        if (!live)
            continue;
        int64_t x = f.u_ts[p.k];  // accepted points have ts >= 0: gk_bucket floors
        if (run && x - lb < g)
            continue;             // the item before's bucket
        int64_t b = gk_bucket(x, g);
        int head = run || p.k == p.a || f.u_ts[p.k - 1] < b;
        lb = b;
        run = 1;
        if (head) {
            unsigned o = (unsigned)(q - q0) + o0;
            mask |= 1u << (q - q0);
            L.t[o] = (uint32_t)p.t;
            L.k[o] = (uint32_t)p.k;   // k < U <= a batch's points < 2^32
            L.d[o] = (uint8_t)p.d;
        }
    }
    return mask;
}

// Step 2: head h of the nh in L, its tasks.  Its bucket's new points end
// at the next head's point when that head is of the same metric and
// granularity, else at the metric's last new point when the tile holds the
// rest of that run of items; else (the run goes on in the next tile) a
// search finds the end.
__host__ __device__ made tile_head(const gk_feed &f, const tile_list &L, uint32_t nh, uint32_t h)
{
    unsigned o = L.hq[h];
    size_t t = L.t[o];
    uint64_t k = L.k[o], k2 = NO_K2;
    int d = L.d[o];
    if (h + 1 < nh && L.t[L.hq[h + 1]] == t && L.d[L.hq[h + 1]] == d) {
        k2 = L.k[L.hq[h + 1]];
    } else {
        uint64_t end = f.seg[t + 1];
        if (o + (end - 1 - k) < GK_TASK_TILE)   // the run's last item is in this tile
            k2 = end;
    }
    const struct agg_pol *pol = &f.pols[f.slot_pol[f.tslot[t]]];
    return head_tasks(f, t, d, k, k2, pol, gk_bucket(f.u_ts[k], pol->p.defs[d].granularity_ns));
}

struct tile_cnt {
    uint64_t t, r, l;             // tasks, rows, rows unpacked (wide; else rows)
};

struct cnt_sum {
    __host__ __device__ tile_cnt operator()(const tile_cnt &a, const tile_cnt &b) const
    {
        return tile_cnt{ a.t + b.t, a.r + b.r, a.l + b.l };
    }
};

// ---- On the GPU a tile is a block: its threads find the heads, the list
// is compacted by a block scan, then a head a thread (the searches in full
// warps: walking the items, a thread meets a head one item in six for a
// 60 s bucket of 10 s samples, and a warp that ran each thread's searches
// in place ran them with a few lanes at a time).

using blk_scan32 = cub::BlockScan<uint32_t, GK_TASK_THREADS>;
using blk_scan64 = cub::BlockScan<uint64_t, GK_TASK_THREADS>;
using blk_red = cub::BlockReduce<tile_cnt, GK_TASK_THREADS>;

struct tile_smem {
    tile_list L;
    union {
        typename blk_scan32::TempStorage s32;
        typename blk_scan64::TempStorage s64;
        typename blk_red::TempStorage red;
    } tmp;
};

// The heads of this block's tile into sm.L; their number.
__device__ uint32_t list_heads(const gk_feed &f, size_t UD, int narrow, tile_smem &sm)
{
    unsigned mask = find_heads(f, UD, narrow, blockIdx.x, threadIdx.x, sm.L);
    uint32_t off, nh;
    blk_scan32(sm.tmp.s32).ExclusiveSum((uint32_t)__popc(mask), off, nh);
    while (mask) {
        sm.L.hq[off++] = (uint16_t)(threadIdx.x * GK_TASK_ITEMS + (unsigned)(__ffs(mask) - 1));
        mask &= mask - 1;
    }
    __syncthreads();              // the list complete; tmp free again
    return nh;
}

__global__ void __launch_bounds__(GK_TASK_THREADS) count_k(gk_feed f, size_t UD, int narrow, uint64_t *tcnt,
                                                          size_t ntiles)
{
    __shared__ tile_smem sm;
    uint32_t nh = list_heads(f, UD, narrow, sm);
    tile_cnt c = { 0, 0, 0 };
    for (uint32_t h = threadIdx.x; h < nh; h += GK_TASK_THREADS) {
        made m = tile_head(f, sm.L, nh, h);
        c = cnt_sum()(c, tile_cnt{ (uint64_t)m.n, m.rows, m.lrows });
    }
    tile_cnt s = blk_red(sm.tmp.red).Reduce(c, cnt_sum());
    if (threadIdx.x == 0) {
        tcnt[blockIdx.x] = s.t;
        tcnt[ntiles + 1 + blockIdx.x] = s.r;
        tcnt[2 * (ntiles + 1) + blockIdx.x] = s.l;
    }
}

// One block: the three arrays of tcnt scanned into toff (exclusive, the
// total at [ntiles]), then the words the host reads (gk_tasks_scan).
#define SCAN_T 512
#define SCAN_I 4

__global__ void __launch_bounds__(SCAN_T) scan_k(const uint64_t *tcnt, uint64_t *toff, size_t ntiles,
                                                 int nchunks, uint64_t *words)
{
    using scan = cub::BlockScan<uint64_t, SCAN_T>;
    __shared__ typename scan::TempStorage tmp;
    for (int a = 0; a < 3; a++) {
        const uint64_t *in = tcnt + a * (ntiles + 1);
        uint64_t *out = toff + a * (ntiles + 1), carry = 0;
        for (size_t base = 0; base < ntiles; base += SCAN_T * SCAN_I) {
            uint64_t v[SCAN_I], o[SCAN_I], agg;
            size_t i0 = base + threadIdx.x * SCAN_I;
#pragma unroll
            for (int j = 0; j < SCAN_I; j++)
                v[j] = i0 + j < ntiles ? in[i0 + j] : 0;
            scan(tmp).ExclusiveSum(v, o, agg);
#pragma unroll
            for (int j = 0; j < SCAN_I; j++)
                if (i0 + j < ntiles)
                    out[i0 + j] = carry + o[j];
            carry += agg;
            __syncthreads();      // tmp is used again
        }
        if (threadIdx.x == 0)
            out[ntiles] = carry;
    }
    __syncthreads();
    if (threadIdx.x <= (unsigned)nchunks) {
        size_t tile = ntiles * threadIdx.x / (size_t)nchunks;
        words[3 + threadIdx.x] = toff[tile];
        words[4 + nchunks + threadIdx.x] = toff[ntiles + 1 + tile];
    }
    if (threadIdx.x < 3)
        words[threadIdx.x] = toff[threadIdx.x * (ntiles + 1) + ntiles];
}

// The tile's heads a round of GK_TASK_THREADS at a time: each round's
// places from a block scan of (tasks, rows), packed as tasks << 40 | rows (a
// round makes at most 2 GK_TASK_THREADS tasks and far fewer than 2^40 rows).
__global__ void __launch_bounds__(GK_TASK_THREADS) emit_k(gk_feed f, size_t UD, int narrow,
                                                         const uint64_t *toff, size_t ntiles)
{
    __shared__ tile_smem sm;
    const uint64_t low = ((uint64_t)1 << 40) - 1;
    uint32_t nh = list_heads(f, UD, narrow, sm);
    uint64_t to = toff[blockIdx.x], ro = toff[ntiles + 1 + blockIdx.x];
    for (uint32_t h0 = 0; h0 < nh; h0 += GK_TASK_THREADS) {
        uint32_t h = h0 + threadIdx.x;
        made m;
        uint64_t pk = 0, o, agg;
        if (h < nh) {
            m = tile_head(f, sm.L, nh, h);
            pk = (uint64_t)m.n << 40 | m.rows;
        }
        blk_scan64(sm.tmp.s64).ExclusiveSum(pk, o, agg);
        if (h < nh) {
            uint64_t k = to + (o >> 40), r = ro + (o & low);
            gk_task tk = m.tk[0];     // (no loop over m.tk: it would live in local memory)
            tk.row_off += r;
            f.tasks[k] = tk;
            if (m.n == 2) {
                tk = m.tk[1];
                tk.row_off += r;
                f.tasks[k + 1] = tk;
            }
        }
        to += agg >> 40;
        ro += agg & low;
        __syncthreads();          // tmp is used again
    }
}

// ---- In emulation: the same two steps, thread by thread, head by head.

uint32_t list_heads_emu(const gk_feed &f, size_t UD, int narrow, size_t tile, tile_list &L)
{
    uint32_t nh = 0;
    for (unsigned thr = 0; thr < GK_TASK_THREADS; thr++) {
        unsigned mask = find_heads(f, UD, narrow, tile, thr, L);
        for (unsigned j = 0; j < GK_TASK_ITEMS; j++)
            if (mask >> j & 1)
                L.hq[nh++] = (uint16_t)(thr * GK_TASK_ITEMS + j);
    }
    return nh;
}

// fn(tile, made) for every head of every tile, in order.  0 or GA_ENOMEM.
template <class F>
int emu_tiles(const gk_feed &f, size_t UD, int narrow, size_t ntiles, F &&fn)
{
    tile_list *L = (tile_list *)malloc(sizeof *L);
    if (!L)
        return GA_ENOMEM;
    for (size_t tl = 0; tl < ntiles; tl++) {
        uint32_t nh = list_heads_emu(f, UD, narrow, tl, *L);
        for (uint32_t h = 0; h < nh; h++)
            fn(tl, tile_head(f, *L, nh, h));
    }
    free(L);
    return 0;
}

} // namespace

size_t gk_task_tiles(size_t U, int D)
{
    size_t UD = U * (size_t)D;
    return (UD + GK_TASK_TILE - 1) / GK_TASK_TILE;
}

int gk_tasks_count(gk_exec *x, const gk_feed *f, size_t U, uint64_t *tcnt)
{
    size_t UD = U * (size_t)f->D, ntiles = gk_task_tiles(U, f->D);
    int narrow = UD < ((size_t)1 << 32);
    if (!ntiles)
        return 0;
    if (x->emu) {
        for (size_t tl = 0; tl < ntiles; tl++)
            tcnt[tl] = tcnt[ntiles + 1 + tl] = tcnt[2 * (ntiles + 1) + tl] = 0;
        return emu_tiles(*f, UD, narrow, ntiles, [&](size_t tl, const made &m) {
            tcnt[tl] += (uint64_t)m.n;
            tcnt[ntiles + 1 + tl] += m.rows;
            tcnt[2 * (ntiles + 1) + tl] += m.lrows;
        });
    }
    count_k<<<(unsigned)ntiles, GK_TASK_THREADS, 0, x->s>>>(*f, UD, narrow, tcnt, ntiles);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

int gk_tasks_scan(gk_exec *x, const uint64_t *tcnt, uint64_t *toff, size_t ntiles, int nchunks,
                  uint64_t *words)
{
    if (x->emu) {
        for (int a = 0; a < 3; a++) {
            uint64_t carry = 0;
            for (size_t i = 0; i < ntiles; i++) {
                toff[a * (ntiles + 1) + i] = carry;
                carry += tcnt[a * (ntiles + 1) + i];
            }
            toff[a * (ntiles + 1) + ntiles] = carry;
        }
        for (int c = 0; c <= nchunks; c++) {
            size_t tile = ntiles * (size_t)c / (size_t)nchunks;
            words[3 + c] = toff[tile];
            words[4 + nchunks + c] = toff[ntiles + 1 + tile];
        }
        for (int a = 0; a < 3; a++)
            words[a] = toff[a * (ntiles + 1) + ntiles];
        return 0;
    }
    scan_k<<<1, SCAN_T, 0, x->s>>>(tcnt, toff, ntiles, nchunks, words);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

int gk_tasks_emit(gk_exec *x, const gk_feed *f, size_t U, const uint64_t *toff)
{
    size_t UD = U * (size_t)f->D, ntiles = gk_task_tiles(U, f->D);
    int narrow = UD < ((size_t)1 << 32);
    if (!ntiles)
        return 0;
    if (x->emu) {
        size_t cur = SIZE_MAX;        // the tile `to` and `ro` are in
        uint64_t to = 0, ro = 0;
        return emu_tiles(*f, UD, narrow, ntiles, [&](size_t tl, const made &m) {
            if (tl != cur) {
                cur = tl;
                to = toff[tl];
                ro = toff[ntiles + 1 + tl];
            }
            for (int i = 0; i < m.n; i++) {
                gk_task tk = m.tk[i];
                tk.row_off += ro;
                f->tasks[to++] = tk;
            }
            ro += m.rows;
        });
    }
    emit_k<<<(unsigned)ntiles, GK_TASK_THREADS, 0, x->s>>>(*f, UD, narrow, toff, ntiles);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}
