// gk_sort.cu — gk_bucket_sort (gk_sort.cuh): small parts sorted in shared
// memory straight from the merged windows, long ones gathered and sorted by
// CUB's segmented sort.
#include "gpu/cuda/gk_sort.cuh"

#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <vector>

#include "gpu/cuda/gk_prim.cuh"

namespace {

// ---- The shared-memory sort of small parts (ssort) ------------------------
//
// A block of SS_T threads takes SS_T consecutive parts, thread t part
// p0 + t; their values go to sorted[sortoff[p0] ..], each part's at its
// sortoff (positions below are relative to sortoff[p0]).  The block keeps
// the parts of 1..small_max values ("small") and runs rounds over them; a
// round takes the small parts starting in [w, w + win) (w: the first small
// part not done yet), at most win + small_max values:
//
//  * load: each position of the round's stretch finds its part (binary
//    search over the block's part starts) and, when the part is one of the
//    round's, reads its value from the merged window (gk_part_value: the
//    gather's own expression) into shared memory, 8 loads in flight a thread;
//  * rank: each value is ranked within its chunk (the part's values in
//    runs of SS_CHUNK from the part's start) by comparing it with every
//    other value of the chunk — rank = values below it + equal values before
//    it, so equal values keep their order (-0.0 and +0.0 compare equal: CUB's
//    radix order) — and stored at that rank: the chunks are now sorted;
//  * merge (only when a part has more than SS_CHUNK values): sorted runs
//    merged pairwise, level by level (runs of 32, then 64, ... until one run
//    holds the block's longest part), between tmp and vals: each value's
//    place is its index in its run plus how many values of the sibling run
//    come before it (binary search: <= for an earlier sibling, < for a
//    later one, which keeps the order of equal values);
//  * out: the round's sorted values to global memory, consecutive threads at
//    consecutive addresses.
//
// Rank is O(n) a value up to SS_CHUNK and the merge O(log^2 n), so a
// 30-value part costs 30 compares a value and a 360-value part 32 + 5 + 6
// + 7 + 8 (its rank, then four levels; merging each chunk with all the
// others, the way before, took 32 + 11 * 5 divergent loads).  Positions
// whose part is long (CUB sorts it), in another round, or another block's
// are left alone.
//
// Like the tiled rows kernel, it is written as phases between block
// barriers (ss_drive): on the GPU each thread runs the driver and
// __syncthreads() ends each phase; in emulation the host runs each phase for
// the SS_T threads in turn, so CI checks this code without a GPU.  Every
// decision between phases is taken from shared values read after a barrier.

#define SS_T 256                  // threads a block, and parts a block
#define SS_CHUNK 32               // values ranked directly against each other
#define SS_UNROLL 8               // loads in flight a thread
#define SS_NONE 0xffffu           // position no part of the round owns
#define SS_RATE 0x80000000u       // in ss_fix.n: a rate: part

struct ss_fix {
    unsigned long long st[SS_T];  // part t's first position; ~0 past the last part
    unsigned long long src[SS_T]; // small part: its first point in m_val
    unsigned int n[SS_T];         // small part: its length | SS_RATE if rate:; else 0
    unsigned long long w[2];      // start of round r in w[r & 1]; ~0: no more
    unsigned long long end;       // end of the block's last small part
    unsigned long long maxn;      // the longest small part past SS_CHUNK (merge runs); 0: none
};
#define SS_FIX ((unsigned)((sizeof(ss_fix) + 15) & ~(size_t)15))

struct ss_args {
    gk_view v;
    const gk_task *tasks;
    const uint64_t *off;          // sortoff
    double *sorted;
    size_t nparts;
    unsigned small_max;
    unsigned win;                 // a round: small parts starting in [w, w + win)
    unsigned wcap;                // win + small_max: the most a round holds
};

// Rounds of win positions; shorter when small_max is large, so that the
// shared memory (18 bytes a position) stays at two blocks an SM or more.
__host__ __device__ inline unsigned ss_win(unsigned small_max) { return small_max <= 1024 ? 2048 : 1024; }

__host__ __device__ inline unsigned ss_smem(unsigned small_max)
{
    unsigned wcap = ss_win(small_max) + small_max;
    return (SS_FIX + wcap * 18u + 15u) & ~15u;
}

enum { S_INIT, S_PART, S_LOAD, S_RANK, S_MERGE, S_OUT };

struct ss_blk {
    ss_args a;
    size_t p0;                    // the block's first part
    uint64_t base;                // sortoff[p0]
    ss_fix *fx;
    double *vals, *tmp;           // [wcap] each
    uint16_t *own;                // [wcap]: the position's part (thread), or SS_NONE
    // Block-uniform, set by ss_drive from shared values read after a barrier.
    int r, nlev, lev;             // round; merge levels (0: none), the one running
    uint64_t w, ext;              // the round's first position and its stretch

    __host__ __device__ void setup(const ss_args &args, size_t blk, unsigned char *dsm, ss_fix *hfx,
                                   double *hvals, double *htmp, uint16_t *hown)
    {
        a = args;
        p0 = blk * SS_T;
        base = a.off[p0];
        if (dsm) {
            fx = (ss_fix *)dsm;
            vals = (double *)(dsm + SS_FIX);
            tmp = vals + a.wcap;
            own = (uint16_t *)(tmp + a.wcap);
        } else {
            fx = hfx;
            vals = hvals;
            tmp = htmp;
            own = hown;
        }
        r = nlev = lev = 0;
        w = ext = 0;
    }

    // Part (thread) owning position P: the last one starting at or before it.
    __host__ __device__ unsigned owner(uint64_t P) const
    {
        unsigned o = 0;           // st[0] = 0 <= P
        for (unsigned s = SS_T / 2; s; s >>= 1)
            if (fx->st[o + s] <= P)
                o += s;
        return o;
    }

    // Position q of the round: its part's start a (round-relative), length n
    // and chunk [c0, c1).
    __host__ __device__ void chunk(unsigned o, unsigned q, unsigned *pa, unsigned *pn, unsigned *c0,
                                   unsigned *c1) const
    {
        unsigned st = (unsigned)(fx->st[o] - w), n = fx->n[o] & ~SS_RATE;
        unsigned c = st + ((q - st) & ~(unsigned)(SS_CHUNK - 1));
        *pa = st;
        *pn = n;
        *c0 = c;
        *c1 = c + SS_CHUNK < st + n ? c + SS_CHUNK : st + n;
    }

    __host__ __device__ void phase(int ph, int tid)
    {
        switch (ph) {
        case S_INIT:
            if (tid == 0) {
                fx->w[0] = ~0ULL;
                fx->end = 0;
                fx->maxn = 0;
            }
            break;
        case S_PART: {            // thread tid's part: small or not, where, from where
            size_t p = p0 + (size_t)tid;
            unsigned long long st = ~0ULL;
            unsigned n = 0;
            red3 rd = { ~0ULL, 0, 0 };
            if (p < a.nparts) {
                uint64_t s0 = a.off[p], len = a.off[p + 1] - s0;
                st = s0 - base;
                if (len >= 1 && len <= a.small_max) {
                    uint64_t lo, n2;
                    gk_part(a.v, a.tasks, p, &lo, &n2);   // n2 == len
                    fx->src[tid] = lo;
                    n = (unsigned)len | ((p & 1) ? SS_RATE : 0u);
                    rd = red3{ st, st + len, 0 };
                    if (len > SS_CHUNK)
                        sh_max(&fx->maxn, len);
                }
            }
            fx->st[tid] = st;
            fx->n[tid] = n;
            if (warp_red(0, rd) && rd.mn != ~0ULL) {
                sh_min(&fx->w[0], rd.mn);
                sh_max(&fx->end, rd.mx);
            }
            break;
        }
        case S_LOAD: {            // the round's values into vals, their parts into own
            if (tid == 0)
                fx->w[(r + 1) & 1] = ~0ULL;   // found in S_RANK
            for (uint64_t q0 = (uint64_t)tid; q0 < ext; q0 += (uint64_t)SS_UNROLL * SS_T) {
                unsigned o[SS_UNROLL];
                uint64_t k[SS_UNROLL];
                double x[SS_UNROLL];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
                for (int u = 0; u < SS_UNROLL; u++) {
                    uint64_t q = q0 + (uint64_t)u * SS_T, P = w + q;
                    o[u] = SS_NONE;
                    k[u] = 0;
                    if (q < ext) {
                        unsigned t = owner(P);
                        uint64_t st = fx->st[t], n = fx->n[t] & ~SS_RATE;
                        if (n && st >= w && st - w < a.win && P - st < n) {
                            o[u] = t;
                            k[u] = P - st;
                        }
                    }
                }
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
                for (int u = 0; u < SS_UNROLL; u++)
                    x[u] = o[u] != SS_NONE ? gk_part_value(a.v.m_val, fx->src[o[u]],
                                                           (fx->n[o[u]] & SS_RATE) != 0, k[u])
                                           : 0.0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
                for (int u = 0; u < SS_UNROLL; u++) {
                    uint64_t q = q0 + (uint64_t)u * SS_T;
                    if (q < ext) {
                        own[q] = (uint16_t)o[u];
                        if (o[u] != SS_NONE)
                            vals[q] = x[u];
                    }
                }
            }
            break;
        }
        case S_RANK: {            // each chunk sorted into tmp; the next round's start
            red3 rd = { ~0ULL, 0, 0 };
            if ((fx->n[tid] & ~SS_RATE) && fx->st[tid] >= w + a.win)
                rd.mn = fx->st[tid];
            if (warp_red(0, rd) && rd.mn != ~0ULL)
                sh_min(&fx->w[(r + 1) & 1], rd.mn);
            for (unsigned q = (unsigned)tid; q < ext; q += SS_T) {
                unsigned o = own[q];
                if (o == SS_NONE)
                    continue;
                unsigned pa, pn, c0, c1;
                chunk(o, q, &pa, &pn, &c0, &c1);
                double x = vals[q];
                unsigned rank = 0;
                for (unsigned j = c0; j < c1; j++) {
                    double y = vals[j];
                    rank += (unsigned)(y < x) | ((unsigned)(y == x) & (unsigned)(j < q));
                }
                tmp[c0 + rank] = x;
            }
            break;
        }
        case S_MERGE: {           // level lev: runs of SS_CHUNK << lev merged in pairs
            const double *src = lev & 1 ? vals : tmp;
            double *dst = lev & 1 ? tmp : vals;
            unsigned R = (unsigned)SS_CHUNK << lev;
            for (unsigned q = (unsigned)tid; q < ext; q += SS_T) {
                unsigned o = own[q];
                if (o == SS_NONE)
                    continue;
                unsigned pa = (unsigned)(fx->st[o] - w), pn = fx->n[o] & ~SS_RATE;
                unsigned i = q - pa, run = i / R, r0 = run * R, s0 = (run ^ 1u) * R;
                double x = src[q];
                unsigned rank = i - r0;
                if (s0 < pn) {    // the sibling run: [s0, s1) of the part
                    unsigned s1 = s0 + R < pn ? s0 + R : pn, lo = pa + s0, hi = pa + s1;
                    if (s0 < r0) {    // earlier: its values <= x come first
                        while (lo < hi) {
                            unsigned mid = (lo + hi) >> 1;
                            if (src[mid] <= x)
                                lo = mid + 1;
                            else
                                hi = mid;
                        }
                    } else {          // later: its values < x
                        while (lo < hi) {
                            unsigned mid = (lo + hi) >> 1;
                            if (src[mid] < x)
                                lo = mid + 1;
                            else
                                hi = mid;
                        }
                    }
                    rank += lo - (pa + s0);
                }
                dst[pa + (r0 < s0 ? r0 : s0) + rank] = x;
            }
            break;
        }
        case S_OUT: {             // the round's sorted values out, coalesced
            const double *src = nlev & 1 ? vals : tmp;
            double *dst = a.sorted + base + w;
            for (unsigned q = (unsigned)tid; q < ext; q += SS_T)
                if (own[q] != SS_NONE)
                    dst[q] = src[q];
            break;
        }
        }
    }
};

// Phase runners: on the GPU this thread's phase, then the block barrier;
// in emulation every thread's phase in turn.
struct ss_dev {
    ss_blk &b;
    __host__ __device__ void step(int ph)
    {
#ifdef __CUDA_ARCH__
        b.phase(ph, (int)threadIdx.x);
        __syncthreads();
#else
        (void)ph;                 // only ever run on the GPU
#endif
    }
};
struct ss_host {
    ss_blk &b;
    __host__ __device__ void step(int ph)
    {
        for (int t = 0; t < SS_T; t++)
            b.phase(ph, t);
    }
};

template <class E>
__host__ __device__ void ss_drive(E &e, ss_blk &B)
{
    ss_fix *fx = B.fx;
    e.step(S_INIT);
    e.step(S_PART);
    uint64_t end = fx->end;
    B.nlev = 0;                   // levels until one run holds the longest part
    while (((uint64_t)SS_CHUNK << B.nlev) < fx->maxn)
        B.nlev++;
    for (int r = 0;; r++) {
        uint64_t w = fx->w[r & 1];
        if (w == ~0ULL)
            break;
        B.r = r;
        B.w = w;
        B.ext = end - w < B.a.wcap ? end - w : B.a.wcap;
        e.step(S_LOAD);
        e.step(S_RANK);
        for (B.lev = 0; B.lev < B.nlev; B.lev++)
            e.step(S_MERGE);
        e.step(S_OUT);
    }
}

__global__ void __launch_bounds__(SS_T) ssort_kernel(ss_args a)
{
    extern __shared__ uint4 ss_dsm[];
    ss_blk B;
    B.setup(a, blockIdx.x, (unsigned char *)ss_dsm, NULL, NULL, NULL, NULL);
    ss_dev e{ B };
    ss_drive(e, B);
}

// The kernel on the host: block by block, phase by phase, over shared
// memory filled with stale-looking bytes first (as a GPU's may hold): no
// result may depend on them.
void ssort_emulate(const ss_args &a)
{
    std::vector<ss_fix> fx(1);
    std::vector<double> vals(a.wcap), tmp(a.wcap);
    std::vector<uint16_t> own(a.wcap);
    size_t nb = (a.nparts + SS_T - 1) / SS_T;
    for (size_t blk = 0; blk < nb; blk++) {
        memset((void *)fx.data(), 0xa5, sizeof(ss_fix));
        for (unsigned k = 0; k < a.wcap; k++) {
            vals[k] = tmp[k] = -1e300 * (double)(k % 7);
            own[k] = (uint16_t)(k * 37 + blk);
        }
        ss_blk B;
        B.setup(a, blk, NULL, fx.data(), vals.data(), tmp.data(), own.data());
        ss_host e{ B };
        ss_drive(e, B);
    }
}

// Dynamic shared memory above 48 KB must be allowed once per device.
int ssort_allow(unsigned S)
{
    static std::atomic<unsigned> allowed_[64];
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= 0 && dev < 64 && allowed_[dev].load() >= S)
        return 0;
    int optin = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if ((unsigned)optin < S)
        return GA_ENOMEM;         // not on sm_90 (>= 227 KB): ss_smem() stays below 100 KB
    CUDA_CHECK(cudaFuncSetAttribute(ssort_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    if (dev >= 0 && dev < 64)
        allowed_[dev].store((unsigned)optin);
    return 0;
}

// Long parts into unsorted[sortoff[p] ..]: GK_THREADS threads a part (gk_for
// runs blocks of GK_THREADS, so a block takes one part at a time), each
// value through gk_part_value as in the gather.
struct gather_big_f {
    gk_view v;
    const gk_task *tasks;
    const uint64_t *off;
    const uint32_t *big;
    double *out;
    __host__ __device__ void operator()(size_t i) const
    {
        size_t p = big[i / GK_THREADS];
        uint64_t lane = i % GK_THREADS, lo, n;
        gk_part(v, tasks, p, &lo, &n);
        double *o = out + off[p];
        for (uint64_t k = lane; k < n; k += GK_THREADS)
            o[k] = gk_part_value(v.m_val, lo, (int)(p & 1), k);
    }
};

} // namespace

#define TRY(call) do { int r_ = (call); if (r_) return r_; } while (0)

int gk_bucket_sort(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks,
                   const uint64_t *sortoff, uint64_t nvalues, double *unsorted, double *sorted,
                   void *scratch, const gk_sort_cfg *cfg, gk_sort_counts *counts)
{
    size_t nparts = 2 * ntasks;
    unsigned small_max = cfg ? cfg->small_max : GK_SORT_SMALL_AUTO;
    if (small_max > GK_SORT_SMALL_MAX)
        small_max = GK_SORT_SMALL_MAX;
    if (counts)
        *counts = gk_sort_counts{ 0, 0 };
    if (!nvalues || !nparts)
        return 0;
    if (!small_max || nparts >= UINT32_MAX) {
        // Every part gathered, CUB sorts them all (empty ones included).
        TRY(gk_bucket_gather(x, v, tasks, ntasks, sortoff, unsorted));
        TRY(gk_segsort_f64(x, unsorted, sorted, nvalues, sortoff, nparts));
        if (counts)
            counts->big_parts = nparts;
        return 0;
    }
    // Which parts go where: the long ones listed, both counted (two u32 in
    // one 8-byte word).  The host needs the long ones' count for CUB's call.
    uint32_t *d_cnt = (uint32_t *)scratch, h_cnt[2];
    uint32_t *big = d_cnt + 2;
    TRY(gk_parts_split(x, sortoff, nparts, small_max, big, d_cnt));
    uint64_t word = 0;
    if (cfg && cfg->read64) {
        TRY(cfg->read64(cfg->ctx, (const uint64_t *)d_cnt, &word));
    } else if (x->emu) {
        memcpy(&word, d_cnt, 8);
    } else {
        CUDA_CHECK(cudaMemcpyAsync(&word, d_cnt, 8, cudaMemcpyDeviceToHost, x->s));
        CUDA_CHECK(cudaStreamSynchronize(x->s));
    }
    memcpy(h_cnt, &word, 8);
    if (counts)
        *counts = gk_sort_counts{ h_cnt[1], h_cnt[0] };
    if (h_cnt[1]) {
        unsigned win = ss_win(small_max);
        ss_args a{ *v, tasks, sortoff, sorted, nparts, small_max, win, win + small_max };
        if (x->emu) {
            ssort_emulate(a);
        } else {
            unsigned S = ss_smem(small_max);
            TRY(ssort_allow(S));
            unsigned blocks = (unsigned)((nparts + SS_T - 1) / SS_T);
            ssort_kernel<<<blocks, SS_T, S, x->s>>>(a);
            CUDA_CHECK(cudaGetLastError());
        }
    }
    if (h_cnt[0]) {
        TRY(gk_for(x, (size_t)h_cnt[0] * GK_THREADS, gather_big_f{ *v, tasks, sortoff, big, unsorted }));
        TRY(gk_segsort_f64_idx(x, unsorted, sorted, nvalues, sortoff, big, (size_t)h_cnt[0]));
    }
    return 0;
}

unsigned gk_sort_small_max(int opt)
{
    if (opt > 0)
        return (unsigned)opt < GK_SORT_SMALL_MAX ? (unsigned)opt : GK_SORT_SMALL_MAX;
    if (opt < 0)
        return 0;
    return GK_SORT_SMALL_AUTO;
}
