// cuda_backend.cu — the CUDA backend (gpu/cuda.h): metric table, device
// memory, streams, and the feed, strung from the kernels of gk_feed.cu,
// gk_bucket.cu, gk_bucket_long.cu, gk_sort.cu and gk_prim.cu.  docs/GPU.md
// describes the design.
//
// State on the GPU: every metric's raw window, packed in one pool (ts and
// value arrays, metric after metric in slot order) with per-slot offset and
// length.  A feed never changes that state until its very end: it builds the
// next pool in a second buffer and swaps on success, so any failure leaves
// the backend as it was (engine.h).
//
// Streams: s_h2d uploads the batch chunk by chunk from a ring of pinned
// slots while s_comp classifies the chunks already there; s_d2h brings the
// late points back while s_comp sorts, merges and computes buckets (xr's
// stream rebuilding the pool beside the buckets), then the rows — after the
// feed's last count, in pieces ahead of
// the next feed's counts when feeds are pipelined (feed_start / feed_wait,
// struct inflight, pump).  A batch handed over ahead with prefetch goes up
// on s_h2d into the other of two input sets while the feed before it
// computes (struct prefetched).  Events order the streams; the host waits
// only where it needs a count to size the next step.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/cuda.h"
#include "gpu/cuda/gk_feed.cuh"
#include "gpu/cuda/gk_prim.cuh"
#include "gpu/cuda/gk_sort.cuh"

// Auto choice of rows kernel (docs/GPU.md "Rows kernel" has the figures):
// the tiled kernel, which stages rows and stores them coalesced, wins from
// about 3 rows a bucket, the warp kernel below and for wide records, which
// both kernels store from the thread.  So: warp when no policy writes 3
// rows a bucket besides its record, else per launch by its slots a bucket.
#define AUTO_TILED_ROWS 3
#define RING_MAX 8
#define ROW_CHUNKS 4
#define NMARKS 7
#define POOL_W 6                  // pin_scalar[6], [7]: a feed's pool size and wmax (settle)
// Rows of a feed in flight go to the host in pieces of at most this
// (ga_cuda_opts.piece_bytes), one piece before each count the next feed
// reads back: a count's copy queues behind the pieces already on the copy
// engine, so each waits for one piece, not for the whole of the rows
// (docs/GPU.md "What overlaps").
#define PIECE_BYTES ((size_t)16 << 20)

namespace {

struct dbuf {
    void *p;
    size_t cap;                   // bytes
};

// A feed whose rows are still on their way to the host (feed_start ..
// feed_wait): its device rows and late points, and their pinned staging,
// are the slot's, so the next feed computes into the other slot meanwhile.
struct inflight {
    struct ga_result *out;
    uint64_t R, L;                // slots and late points
    uint64_t rows;                // the rows the R slots unpack to (R without wide records)
    int direct;                   // rows DMA'd into out->aggs (else pin_rows[slot])
    int slot;
    double t0;                    // when its feed_start began
    char *dst;                    // the rows' way home: R rows from src to dst,
    const char *src;              // `sent` bytes of them on the copy engine so far
    size_t bytes, sent;
    int sent_all;                 // ev_done[slot] recorded after the last piece
};

// A batch whose upload prefetch started: its arrays (compared with the
// feed's, to know it), length, and the input set it went to.
struct prefetched {
    const void *metric, *ts, *value;
    const uint32_t *ts32;
    int64_t ts_base, ts_unit;
    size_t n;
    int set;
};

// The bytes of a point's ts as the batch carries it, and where point i's are.
static size_t ts_bytes(const struct ga_points *pts) { return pts->ts ? 8 : 4; }
static const void *ts_at(const struct ga_points *pts, size_t i)
{
    return pts->ts ? (const void *)(pts->ts + i) : (const void *)(pts->ts32 + i);
}

struct cuda_backend {
    struct ga_backend base;
    int dev, emu;
    gk_exec x;                    // x.s is s_comp
    gk_exec xr;                   // the next pool's rebuild, beside the bucket kernels
    gk_rows_cfg rows_cfg;         // which rows kernel (ga_cuda_opts.rows_kernel)
    int rows_auto;                // 1: per launch, tiled when >= AUTO_TILED_ROWS rows a bucket
    int wide;                     // this feed's out reads wide records (want_wide)
    gk_sort_cfg sort_cfg;         // median / Npct sort (ga_cuda_opts.sort_small)
    cudaStream_t s_h2d, s_d2h;
    cudaEvent_t ev_in[RING_MAX], ev_late, ev_done[2], ev_pre[2], ev_merged, ev_rebuilt;
    cudaEvent_t ev_mark[2][NMARKS];  // per slot: stage boundaries on the compute stream (timed)
    cudaEvent_t ev_rows[2];       // per slot: its rows written (their copy home waits for it)
    cudaEvent_t ev_in_free[2];    // per input set: the last feed's last read of it
    cudaEvent_t ev_pool;          // the last feed's pool size and wmax stored (POOL_W)
    size_t chunk;
    int ring;
    void *pin_in[RING_MAX];       // chunk * (4 + 8 + 8) bytes each
    dbuf pin_rows[2], pin_late[2];  // per slot; pinned (host memory in emulation)
    uint64_t *pin_scalar;         // 8 counters
    uint64_t *pin_hb;             // the bucket tasks' words (GK_TASK_WORDS: totals, chunks), read from twords
    int mapped;                   // counts stored into pin_scalar / pin_hb by a kernel
                                  // (both mapped), not copied (ga_cuda_opts.counts)
    uint64_t *map_scalar, *map_hb;  // their device addresses
    inflight fl[2];               // feeds in flight, oldest first
    size_t piece;                 // ga_cuda_opts.piece_bytes or PIECE_BYTES
    int nfl, slot;                // how many; the slot the next feed uses
    prefetched pre[2];            // uploads started ahead, oldest first
    int npre;
    int in_set;                   // the input set (in_metric[..] ...) the feed reads
    int idx_in_b;                 // the points' order is in idxb (slot sort alone), else idxa
    int u_alias;                  // every accepted point kept: u_* are the sorted s_*, key32b
    // host tables
    struct agg_pol *pols;
    int npols, cap_pols, D;
    int any_sort;                 // some policy has median / Npct (else no sort lengths)
    int narrow[2];                // the most rows (not records) a bucket writes, over the
                                  // policies: [0] without wide records, [1] with
    uint32_t *loc;                // id -> slot + 1
    size_t cap_local;
    uint32_t *slot_pol, *slot_id;
    uint8_t *slot_live;
    size_t nslots, cap_slots;
    uint32_t *free_slots;
    size_t nfree;
    uint32_t *resets;
    size_t nresets, cap_resets;
    int pols_dirty, tables_dirty;
    // device state
    dbuf d_pols, d_loc, d_slot_pol, d_slot_id, d_resets;
    dbuf d_w_off[2], d_w_n[2], d_pts[2], d_pval[2];
    int cur;
    uint64_t pool_n;
    uint64_t wmax;                // the device's wmax as last read (gk_feed.wmax)
    int pend, pend_slot;          // pool_n / wmax of the last feed still on their way (settle)
    size_t pool_peak;             // bytes: the largest pool half yet asked for (rebuild)
    // per-feed device buffers
    dbuf in_metric[2], in_ts[2], in_ts32[2], in_val[2], reason, slot_of, key64a, key64b, idxa, idxb, key32a, key32b;
    dbuf s_ts, s_val, fbt, d_wmax;
    dbuf late_idx, late[2], keep, keep_idx, u_slot, u_ts, u_val, head, seg32, seg, tslot, old_n, dup,
        dupx, rold, pos, m_n, m_off, o_off, m_ts, m_val, ctx, tcnt, toff, tasks, cut, slot_t, t_of, tmin, sortlen, sortoff, unsorted, sorted, rows[2], twords, long_list, mid_list, small;
    struct ga_cuda_feed_stats st;
};

double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// memcpy on several threads for big copies (pageable <-> pinned staging: one
// core copies slower than PCIe carries).
struct pc_arg {
    char *d;
    const char *s;
    size_t n;
};

void *pc_run(void *a)
{
    pc_arg *p = (pc_arg *)a;
    memcpy(p->d, p->s, p->n);
    return NULL;
}

#define PC_THREADS 8

void par_memcpy(void *dst, const void *src, size_t n)
{
    if (n < ((size_t)4 << 20)) {
        memcpy(dst, src, n);
        return;
    }
    pthread_t th[PC_THREADS];
    pc_arg a[PC_THREADS];
    int started[PC_THREADS];
    size_t per = (n / PC_THREADS + 4095) & ~(size_t)4095;
    for (int k = 0; k < PC_THREADS; k++) {
        size_t lo = per * k < n ? per * k : n, hi = per * (k + 1) < n ? per * (k + 1) : n;
        a[k] = pc_arg{ (char *)dst + lo, (const char *)src + lo, hi - lo };
        started[k] = k > 0 && pthread_create(&th[k], NULL, pc_run, &a[k]) == 0;
        if (k > 0 && !started[k])
            pc_run(&a[k]);
    }
    pc_run(&a[0]);
    for (int k = 1; k < PC_THREADS; k++)
        if (started[k])
            pthread_join(th[k], NULL);
}

int is_pinned(const void *p)
{
    cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return at.type == cudaMemoryTypeHost;
}

// Grow b to `bytes` (GPU memory, or host memory when emulating); keep the
// contents if keep.  Only grows, by half again, so steady state allocates
// nothing.
static int dres_grow(cuda_backend *cb, dbuf *b, size_t bytes, int keep)
{
    size_t cap = bytes + bytes / 2 + 256;
    if (cb->emu) {
        void *p = realloc(b->p, cap);
        if (!p)
            return GA_ENOMEM;
        b->p = p;
        b->cap = cap;
        return 0;
    }
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, cap));
    if (b->p) {
        cudaError_t e = cudaSuccess;
        if (keep)
            e = cudaMemcpyAsync(p, b->p, b->cap, cudaMemcpyDeviceToDevice, cb->x.s);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(cb->x.s);
        if (e != cudaSuccess) {
            cudaFree(p);
            CUDA_CHECK(e);
        }
        CUDA_CHECK(cudaFree(b->p));
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

// A growth that began at t0 and returned rc, counted and timed in cb->x
// (ga_cuda_feed_stats.allocs, alloc_s); pinned: page-locked host memory,
// counted apart too.
static int grown(cuda_backend *cb, double t0, int pinned, int rc)
{
    double s = now_s() - t0;
    cb->x.allocs++;
    cb->x.alloc_s += s;
    cb->x.pinned_allocs += pinned != 0;
    cb->x.pinned_alloc_s += pinned ? s : 0;
    return rc;
}

int dres(cuda_backend *cb, dbuf *b, size_t bytes, int keep)
{
    if (bytes <= b->cap)
        return 0;
    double t0 = now_s();
    return grown(cb, t0, 0, dres_grow(cb, b, bytes, keep));
}

static int pres_grow(cuda_backend *cb, dbuf *b, size_t bytes)
{
    size_t cap = bytes + bytes / 2 + 256;
    if (cb->emu) {
        free(b->p);
        b->p = malloc(cap);
        b->cap = b->p ? cap : 0;
        return b->p ? 0 : GA_ENOMEM;
    }
    if (b->p) {
        CUDA_CHECK(cudaFreeHost(b->p));
        b->p = NULL;
        b->cap = 0;
    }
    CUDA_CHECK(cudaHostAlloc(&b->p, cap, cudaHostAllocDefault));
    b->cap = cap;
    return 0;
}

// Pinned host buffer (plain host memory when emulating); contents dropped.
int pres(cuda_backend *cb, dbuf *b, size_t bytes)
{
    if (bytes <= b->cap)
        return 0;
    double t0 = now_s();
    return grown(cb, t0, 1, pres_grow(cb, b, bytes));
}

// Room in the caller's result; its growth (page-locked rows when the engine
// asks for them) counted with the backend's own.
static int out_reserve(cuda_backend *cb, struct ga_result *out, size_t R, size_t L)
{
    if (out->naggs + R <= out->cap_aggs && out->nlate + L <= out->cap_late)
        return 0;
    int pinned = out->want_pinned && out->naggs + R > out->cap_aggs;   // the rows grow
    double t0 = now_s();
    return grown(cb, t0, pinned, ga_result_reserve(out, R, L));
}

void dfree(cuda_backend *cb, dbuf *b)
{
    if (b->p) {
        if (cb->emu)
            free(b->p);
        else
            cudaFree(b->p);
    }
    b->p = NULL;
    b->cap = 0;
}

int cp(cuda_backend *cb, void *dst, const void *src, size_t bytes, cudaMemcpyKind k, cudaStream_t s)
{
    if (!bytes)
        return 0;
    if (cb->emu) {
        memmove(dst, src, bytes);
        return 0;
    }
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, k, s));
    return 0;
}

int zero_on(cuda_backend *cb, cudaStream_t s, void *p, size_t bytes)
{
    if (!bytes)
        return 0;
    if (cb->emu) {
        memset(p, 0, bytes);
        return 0;
    }
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, s));
    return 0;
}

int zero(cuda_backend *cb, void *p, size_t bytes)
{
    return zero_on(cb, cb->x.s, p, bytes);
}

int sync_stream(cuda_backend *cb, cudaStream_t s)
{
    if (!cb->emu)
        CUDA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

// Send up to `budget` more bytes of the in-flight feeds' rows, oldest
// first, on s_d2h; record a feed's ev_done once its last piece is queued.
int pump(cuda_backend *cb, size_t budget)
{
    for (int i = 0; i < cb->nfl; i++) {
        inflight *fl = &cb->fl[i];
        if (fl->sent == 0 && fl->bytes && budget && !cb->emu)   // its rows kernels may still run
            CUDA_CHECK(cudaStreamWaitEvent(cb->s_d2h, cb->ev_rows[fl->slot], 0));
        while (fl->sent < fl->bytes && budget) {
            size_t k = fl->bytes - fl->sent;
            k = k < budget ? k : budget;
            int rc = cp(cb, fl->dst + fl->sent, fl->src + fl->sent, k, cudaMemcpyDeviceToHost, cb->s_d2h);
            if (rc)
                return rc;
            fl->sent += k;
            budget -= k;
        }
        if (fl->sent == fl->bytes && !fl->sent_all) {
            if (!cb->emu)
                CUDA_CHECK(cudaEventRecord(cb->ev_done[fl->slot], cb->s_d2h));
            fl->sent_all = 1;
        }
        if (!fl->sent_all)
            break;                // budget spent
    }
    return 0;
}

// Copy n words from the device into mapped page-locked memory: a one-thread
// kernel's stores cross PCIe without the copy engine, so they do not queue
// behind rows on their way home.
struct words_f {
    uint64_t *dst;
    const uint64_t *src;
    size_t n;
    __host__ __device__ void operator()(size_t) const
    {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    }
};

struct copy_u64_f {
    uint64_t *dst;
    const uint64_t *src;
    __host__ __device__ void operator()(size_t i) const { dst[i] = src[i]; }
};

// Read k consecutive device words into pin (page-locked; map its device
// address) with one wait for the compute stream.  Mapped: a kernel stores
// them into host memory.  Copied: their copy queues behind the rows on their
// way home (one piece of them, sent first), and a feed's counts are all read
// before its own rows are sent.
int rd_into(cuda_backend *cb, uint64_t *pin, uint64_t *map, const uint64_t *d, size_t k, uint64_t *out)
{
    int rc;
    if (cb->mapped) {
        rc = gk_for(&cb->x, 1, words_f{ map, d, k });
    } else {
        rc = pump(cb, cb->piece);
        if (!rc)
            rc = cp(cb, pin, d, k * 8, cudaMemcpyDeviceToHost, cb->x.s);
    }
    if (!rc)
        rc = sync_stream(cb, cb->x.s);
    for (size_t i = 0; !rc && i < k; i++)
        out[i] = ((volatile uint64_t *)pin)[i];
    return rc;
}

// k (<= 6: pin_scalar's last two words are settle's) counters.
int rd_words(cuda_backend *cb, const uint64_t *d, size_t k, uint64_t *out)
{
    return rd_into(cb, cb->pin_scalar, cb->map_scalar, d, k, out);
}

int rd64(cuda_backend *cb, const uint64_t *d, uint64_t *out)
{
    return rd_words(cb, d, 1, out);
}

// Up to three counters into dst (c NULL: two).
struct three_f {
    uint64_t *dst;
    const uint64_t *a, *b, *c;
    __host__ __device__ void operator()(size_t) const
    {
        dst[0] = *a;
        dst[1] = *b;
        if (c)
            dst[2] = *c;
    }
};

// gk_bucket_sort's one count read (gk_sort_cfg.read64): rd64, pump first.
int sort_rd64(void *ctx, const uint64_t *d, uint64_t *out)
{
    return rd64((cuda_backend *)ctx, d, out);
}

int record(cuda_backend *cb, cudaEvent_t e, cudaStream_t s)
{
    if (!cb->emu)
        CUDA_CHECK(cudaEventRecord(e, s));
    return 0;
}

int wait_ev(cuda_backend *cb, cudaStream_t s, cudaEvent_t e)
{
    if (!cb->emu)
        CUDA_CHECK(cudaStreamWaitEvent(s, e, 0));
    return 0;
}

#define B(name, type) ((type *)cb->name.p)
#define RES(name, bytes, keep) do { int r_ = dres(cb, &cb->name, (bytes), (keep)); if (r_) return r_; } while (0)
#define TRY(call) do { int r_ = (call); if (r_) return r_; } while (0)

// ---- host tables -----------------------------------------------------------

int grow_h(void **p, size_t *cap, size_t need, size_t elem)
{
    return ga_grow_zero(p, cap, need, elem, 64);
}

int intern_policy(cuda_backend *cb, const struct ga_policy *p)
{
    struct agg_pol tmp;
    int rc = agg_pol_init(&tmp, p);
    if (rc)
        return rc;
    for (int i = 0; i < cb->npols; i++)
        if (memcmp(&cb->pols[i].p, &tmp.p, sizeof tmp.p) == 0)
            return i;
    size_t cap = (size_t)cb->cap_pols;
    if (grow_h((void **)&cb->pols, &cap, (size_t)cb->npols + 1, sizeof *cb->pols))
        return GA_ENOMEM;
    cb->cap_pols = (int)cap;
    cb->pols[cb->npols] = tmp;
    if (tmp.p.ndefs > cb->D)
        cb->D = tmp.p.ndefs;
    if ((tmp.plain_need | tmp.rate_need) & GA_NEED_SORT)
        cb->any_sort = 1;
    int rows = tmp.nplain + tmp.nrate, rest = rows - tmp.nwide;
    cb->narrow[0] = rows > cb->narrow[0] ? rows : cb->narrow[0];
    cb->narrow[1] = rest > cb->narrow[1] ? rest : cb->narrow[1];
    cb->pols_dirty = 1;
    return cb->npols++;
}

int push_reset(cuda_backend *cb, uint32_t slot)
{
    if (grow_h((void **)&cb->resets, &cb->cap_resets, cb->nresets + 1, sizeof *cb->resets))
        return GA_ENOMEM;
    cb->resets[cb->nresets++] = slot;
    return 0;
}

int32_t slot_of_id(const cuda_backend *cb, uint32_t id)
{
    return id < cb->cap_local && cb->loc[id] ? (int32_t)cb->loc[id] - 1 : -1;
}

// Bring the device tables up to date with the host's (after metric_add /
// metric_drop): policies, id -> slot, slot -> policy / id, and zero the
// windows of added or dropped slots.
int sync_tables(cuda_backend *cb)
{
    size_t S = cb->nslots ? cb->nslots : 1;
    if (cb->pols_dirty) {
        RES(d_pols, (size_t)cb->npols * sizeof *cb->pols, 0);
        TRY(cp(cb, cb->d_pols.p, cb->pols, (size_t)cb->npols * sizeof *cb->pols,
               cudaMemcpyHostToDevice, cb->x.s));
        cb->pols_dirty = 0;
    }
    RES(d_w_off[cb->cur], (S + 1) * 8, 1);
    RES(d_w_n[cb->cur], (S + 1) * 8, 1);
    if (cb->tables_dirty) {
        RES(d_loc, cb->cap_local * 4 + 4, 0);
        RES(d_slot_pol, S * 4, 0);
        RES(d_slot_id, S * 4, 0);
        TRY(cp(cb, cb->d_loc.p, cb->loc, cb->cap_local * 4, cudaMemcpyHostToDevice, cb->x.s));
        TRY(cp(cb, cb->d_slot_pol.p, cb->slot_pol, cb->nslots * 4, cudaMemcpyHostToDevice, cb->x.s));
        TRY(cp(cb, cb->d_slot_id.p, cb->slot_id, cb->nslots * 4, cudaMemcpyHostToDevice, cb->x.s));
        cb->tables_dirty = 0;
    }
    if (cb->nresets) {
        RES(d_resets, cb->nresets * 4, 0);
        TRY(cp(cb, cb->d_resets.p, cb->resets, cb->nresets * 4, cudaMemcpyHostToDevice, cb->x.s));
        TRY(gk_reset_slots(&cb->x, B(d_w_n[cb->cur], uint64_t), B(d_resets, uint32_t), cb->nresets));
        TRY(sync_stream(cb, cb->x.s));   // the host list may change before the copy ran
        cb->nresets = 0;
    }
    return 0;
}

// Pointers of every buffer, after any reservation.
void fill(cuda_backend *cb, gk_feed *f)
{
    int c = cb->cur, o = 1 - cb->cur;
    memset(f, 0, sizeof *f);
    f->loc = B(d_loc, uint32_t);
    f->cap_local = (uint32_t)cb->cap_local;
    f->nslots = (uint32_t)cb->nslots;
    f->pols = B(d_pols, struct agg_pol);
    f->slot_pol = B(d_slot_pol, uint32_t);
    f->slot_id = B(d_slot_id, uint32_t);
    f->w_off = B(d_w_off[c], uint64_t);
    f->w_n = B(d_w_n[c], uint64_t);
    f->p_ts = B(d_pts[c], int64_t);
    f->p_val = B(d_pval[c], double);
    f->metric = (uint32_t *)cb->in_metric[cb->in_set].p;
    f->ts = (int64_t *)cb->in_ts[cb->in_set].p;
    f->val = (double *)cb->in_val[cb->in_set].p;
    f->ts32 = NULL;               // upload_classify's, for the classify only
    f->ts_base = 0;
    f->ts_unit = 1;
    f->reason = B(reason, uint8_t);
    f->slot_of = B(slot_of, uint32_t);
    f->key64 = B(key64a, uint64_t);
    f->idx = B(idxa, uint32_t);
    f->tmin = B(tmin, int64_t);
    f->fbt = B(fbt, int64_t);
    f->s_ts = B(s_ts, int64_t);
    f->s_val = B(s_val, double);
    f->key32s = B(key32b, uint32_t);
    f->idx_s = cb->idx_in_b ? B(idxb, uint32_t) : B(idxa, uint32_t);
    f->keep = B(keep, uint8_t);
    f->keep_idx = B(keep_idx, uint32_t);
    f->u_slot = cb->u_alias ? B(key32b, uint32_t) : B(u_slot, uint32_t);
    f->u_ts = cb->u_alias ? B(s_ts, int64_t) : B(u_ts, int64_t);
    f->u_val = cb->u_alias ? B(s_val, double) : B(u_val, double);
    f->head = B(head, uint8_t);
    f->seg32 = B(seg32, uint32_t);
    f->seg = B(seg, uint64_t);
    f->tslot = B(tslot, uint32_t);
    f->old_n = B(old_n, uint64_t);
    f->dup = B(dup, uint64_t);
    f->dupx = B(dupx, uint64_t);
    f->rold = B(rold, uint64_t);
    f->pos = B(pos, uint64_t);
    f->m_n = B(m_n, uint64_t);
    f->m_off = B(m_off, uint64_t);
    f->o_off = B(o_off, uint64_t);
    f->m_ts = B(m_ts, int64_t);
    f->m_val = B(m_val, double);
    f->ctx = B(ctx, gk_ctx);
    f->D = cb->D ? cb->D : 1;
    f->wide = cb->wide;
    f->tasks = B(tasks, gk_task);
    f->wmax = B(d_wmax, uint64_t);
    f->cut = B(cut, uint64_t);
    f->new_n = B(d_w_n[o], uint64_t);
    f->slot_t = B(slot_t, uint32_t);
    f->t_of = B(t_of, uint32_t);
    f->new_off = B(d_w_off[o], uint64_t);
    f->p2_ts = B(d_pts[o], int64_t);
    f->p2_val = B(d_pval[o], double);
}

gk_view view_of(const gk_feed *f)
{
    gk_view v;
    v.pols = f->pols;
    v.slot_pol = f->slot_pol;
    v.slot_id = f->slot_id;
    v.tslot = f->tslot;
    v.m_off = f->m_off;
    v.m_n = f->m_n;
    v.m_ts = f->m_ts;
    v.m_val = f->m_val;
    v.ctx = f->ctx;
    v.D = f->D;
    v.wide = f->wide;
    return v;
}

struct fill_i64_f {
    int64_t *p;
    int64_t v;
    __host__ __device__ void operator()(size_t i) const { p[i] = v; }
};


// The next pool from the merged windows of T touched metrics (m_*, tslot,
// m_off, m_n set): truncate them, copy the untouched windows.  Writes the
// other half of the double buffer only.  Sized for at most `most` points,
// a bound the caller knows without a wait (the pool's pool_n plus the
// points merged in); the size itself stays on the device, at
// new_off[nslots] (pool_size reads it).  On x's stream: a feed runs it on
// xr's, beside its bucket stage (it only reads the merged windows).
int rebuild(cuda_backend *cb, gk_exec *x, size_t T, uint64_t most)
{
    size_t S = cb->nslots ? cb->nslots : 1;
    int o = 1 - cb->cur;
    RES(d_w_off[o], (S + 1) * 8, 0);
    RES(d_w_n[o], (S + 1) * 8, 0);
    RES(slot_t, S * 4, 0);
    RES(cut, (T + 1) * 8, 0);
    // Each half sized for the largest bound either has been given: the
    // halves take turns, and a half sized by its own turns alone would grow
    // late whenever the windows' peak happened to fall on the other's.
    cb->pool_peak = std::max(cb->pool_peak, (size_t)(most + 1) * 8);
    RES(d_pts[o], cb->pool_peak, 0);
    RES(d_pval[o], cb->pool_peak, 0);
    int fresh = !cb->d_wmax.p;
    RES(d_wmax, 8, 1);
    if (fresh)
        TRY(zero_on(cb, x->s, cb->d_wmax.p, 8));
    gk_feed f;
    fill(cb, &f);
    // A kernel, not a device-to-device cudaMemcpyAsync: that one goes to a
    // copy engine and waits behind the rows of the feed before on their way
    // home, and would hold the rebuild up behind them.
    TRY(gk_for(x, cb->nslots, copy_u64_f{ f.new_n, f.w_n }));
    TRY(zero_on(cb, x->s, f.new_n + cb->nslots, 8));
    TRY(zero_on(cb, x->s, f.slot_t, cb->nslots * 4));
    TRY(gk_rebuild_counts(x, &f, T));
    TRY(gk_scan_u64(x, f.new_n, (uint64_t *)f.new_off, cb->nslots + 1));
    return gk_rebuild_copy(x, &f, most);
}

// A feed does not wait for its own tail (the rows kernels, the rebuild):
// it queues the next pool's size and wmax home behind them, swaps the pool
// halves (the next feed's kernels queue behind the rebuild on the compute
// stream) and returns, so that the next feed's first kernels queue behind
// this one's last and the GPU does not idle between feeds while the host
// turns round.  pool_n and wmax are only needed once the next feed has
// read its first counts, a wait that covers them: settle() takes them in
// then, or wherever else the host needs them.  slot: the feed's, whose
// stage marks settle reads; -1 for none (window_put).
int pool_size_async(cuda_backend *cb, int slot)
{
    const uint64_t *a = B(d_w_off[1 - cb->cur], uint64_t) + cb->nslots, *b = B(d_wmax, uint64_t);
    if (cb->mapped) {
        TRY(gk_for(&cb->x, 1, three_f{ cb->map_scalar + POOL_W, a, b, NULL }));
    } else {
        TRY(cp(cb, cb->pin_scalar + POOL_W, a, 8, cudaMemcpyDeviceToHost, cb->x.s));
        TRY(cp(cb, cb->pin_scalar + POOL_W + 1, b, 8, cudaMemcpyDeviceToHost, cb->x.s));
    }
    TRY(record(cb, cb->ev_pool, cb->x.s));
    cb->cur = 1 - cb->cur;
    cb->pend = 1;
    cb->pend_slot = slot;
    return 0;
}

// Take in the last feed's pool size and wmax (a wait only if its tail still
// runs), and the stage times of its GPU timeline (ga_cuda_feed_stats: so
// they describe the last feed whose tail is known done).
int settle(cuda_backend *cb)
{
    if (!cb->pend)
        return 0;
    if (!cb->emu)
        CUDA_CHECK(cudaEventSynchronize(cb->ev_pool));
    cb->pool_n = ((volatile uint64_t *)cb->pin_scalar)[POOL_W];
    cb->wmax = ((volatile uint64_t *)cb->pin_scalar)[POOL_W + 1];
    cb->pend = 0;
    cb->st.pool_points = cb->pool_n;
    if (!cb->emu && cb->pend_slot >= 0) {
        double *g[] = { &cb->st.gpu_upload_s, &cb->st.gpu_sort_s, &cb->st.gpu_merge_s,
                        &cb->st.gpu_buckets_s, &cb->st.gpu_rows_s, &cb->st.gpu_rebuild_s };
        cudaEvent_t *m = cb->ev_mark[cb->pend_slot];
        for (int i = 0; i < NMARKS - 1; i++) {
            float ms = 0;
            CUDA_CHECK(cudaEventElapsedTime(&ms, m[i], m[i + 1]));
            *g[i] = ms * 1e-3;
        }
    }
    return 0;
}

// ---- ops -------------------------------------------------------------------

/* Make this backend's GPU current on the calling thread: the engine may
 * call a backend from any thread (one per GPU when it feeds them at the
 * same time), and a thread's current device starts as 0. */
static int use_device(const cuda_backend *cb)
{
    if (cb->emu)
        return 0;
    CUDA_CHECK(cudaSetDevice(cb->dev));
    return 0;
}

int cu_metric_add(struct ga_backend *b, uint32_t id, const struct ga_policy *p)
{
    cuda_backend *cb = (cuda_backend *)b;
    if (use_device(cb))
        return GA_ECUDA;
    struct ga_policy copy = *p;
    if (copy.ndefs < 0 || copy.ndefs > GA_POLICY_MAX_DEFS || copy.nmethods < 0 ||
        copy.nmethods > GA_POLICY_MAX_METHODS)
        return GA_EINVAL;
    memset(copy.defs + copy.ndefs, 0, sizeof copy.defs - (size_t)copy.ndefs * sizeof copy.defs[0]);
    memset(copy.methods + copy.nmethods, 0,
           sizeof copy.methods - (size_t)copy.nmethods * sizeof copy.methods[0]);
    int pi = intern_policy(cb, &copy);
    if (pi < 0)
        return pi;
    int32_t s = slot_of_id(cb, id);
    if (s >= 0) {
        cb->slot_pol[s] = (uint32_t)pi;
        cb->tables_dirty = 1;
        return 0;
    }
    if (grow_h((void **)&cb->loc, &cb->cap_local, (size_t)id + 1, sizeof *cb->loc))
        return GA_ENOMEM;
    int reuse = cb->nfree > 0;
    if (!reuse) {
        size_t c1 = cb->cap_slots, c2 = c1, c3 = c1, c4 = c1;
        if (grow_h((void **)&cb->slot_pol, &c1, cb->nslots + 1, 4) ||
            grow_h((void **)&cb->slot_id, &c2, cb->nslots + 1, 4) ||
            grow_h((void **)&cb->slot_live, &c3, cb->nslots + 1, 1) ||
            grow_h((void **)&cb->free_slots, &c4, cb->nslots + 1, 4))
            return GA_ENOMEM;    // the arrays that grew keep their (unused) room
        cb->cap_slots = c1;       // same growth rule for all four: c1 == c2 == c3 == c4
    }
    uint32_t li = reuse ? cb->free_slots[cb->nfree - 1] : (uint32_t)cb->nslots;
    if (push_reset(cb, li))
        return GA_ENOMEM;
    if (reuse)
        cb->nfree--;
    else
        cb->nslots++;
    cb->slot_pol[li] = (uint32_t)pi;
    cb->slot_id[li] = id;
    cb->slot_live[li] = 1;
    cb->loc[id] = li + 1;
    cb->tables_dirty = 1;
    return 0;
}

void cu_metric_drop(struct ga_backend *b, uint32_t id)
{
    cuda_backend *cb = (cuda_backend *)b;
    use_device(cb);
    int32_t s = slot_of_id(cb, id);
    if (s < 0)
        return;
    if (push_reset(cb, (uint32_t)s))
        return;                   // ENOMEM: keep the metric rather than leak a stale window
    cb->loc[id] = 0;
    cb->slot_live[s] = 0;
    cb->free_slots[cb->nfree++] = (uint32_t)s;   // cap_slots >= nslots
    cb->tables_dirty = 1;
}

int cu_window_get(struct ga_backend *b, uint32_t id, struct ga_window *out)
{
    cuda_backend *cb = (cuda_backend *)b;
    if (use_device(cb))
        return GA_ECUDA;
    int32_t s = slot_of_id(cb, id);
    if (s < 0)
        return GA_ENOENT;
    memset(out, 0, sizeof *out);
    int rc = settle(cb);
    if (!rc)
        rc = sync_tables(cb);
    uint64_t off = 0, n = 0;
    if (!rc)
        rc = rd64(cb, B(d_w_off[cb->cur], uint64_t) + s, &off);
    if (!rc)
        rc = rd64(cb, B(d_w_n[cb->cur], uint64_t) + s, &n);
    if (rc)
        return rc;
    out->ts = (int64_t *)malloc((n ? n : 1) * sizeof *out->ts);
    out->value = (double *)malloc((n ? n : 1) * sizeof *out->value);
    if (!out->ts || !out->value) {
        rc = GA_ENOMEM;
        goto fail;
    }
    rc = cp(cb, out->ts, B(d_pts[cb->cur], int64_t) + off, n * 8, cudaMemcpyDeviceToHost, cb->x.s);
    if (!rc)
        rc = cp(cb, out->value, B(d_pval[cb->cur], double) + off, n * 8, cudaMemcpyDeviceToHost, cb->x.s);
    if (!rc)
        rc = sync_stream(cb, cb->x.s);
    if (rc)
        goto fail;
    out->n = n;
    return 0;
fail:
    free(out->ts);
    free(out->value);
    out->ts = NULL;
    out->value = NULL;
    return rc;
}

// A window set in one go: the slots up, their lengths summed on the
// device, every window gathered into one buffer and copied home at once,
// then split into the windows the caller owns.
int cu_windows_get(struct ga_backend *b, const uint32_t *ids, size_t n, struct ga_window *out)
{
    cuda_backend *cb = (cuda_backend *)b;
    memset(out, 0, n * sizeof *out);
    if (!n)
        return 0;
    if (use_device(cb))
        return GA_ECUDA;
    uint32_t *slots = (uint32_t *)malloc(n * sizeof *slots);
    uint64_t *off = (uint64_t *)malloc((n + 1) * sizeof *off);
    int64_t *ts = NULL;
    double *val = NULL;
    uint64_t total = 0;
    size_t done = 0;
    int rc = slots && off ? 0 : GA_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int32_t s = slot_of_id(cb, ids[i]);
        if (s < 0)
            rc = GA_ENOENT;
        else
            slots[i] = (uint32_t)s;
    }
    if (!rc)
        rc = settle(cb);
    if (!rc)
        rc = sync_tables(cb);
    if (!rc)
        rc = dres(cb, &cb->tslot, n * 4, 0);
    if (!rc)
        rc = dres(cb, &cb->m_n, (n + 1) * 8, 0);
    if (!rc)
        rc = dres(cb, &cb->m_off, (n + 1) * 8, 0);
    if (!rc)
        rc = cp(cb, cb->tslot.p, slots, n * 4, cudaMemcpyHostToDevice, cb->x.s);
    if (!rc)
        rc = zero(cb, B(m_n, uint64_t) + n, 8);
    if (!rc)
        rc = gk_window_lengths(&cb->x, B(d_w_n[cb->cur], uint64_t), B(tslot, uint32_t), n,
                               B(m_n, uint64_t));
    if (!rc)
        rc = gk_scan_u64(&cb->x, B(m_n, uint64_t), B(m_off, uint64_t), n + 1);
    if (!rc)
        rc = rd64(cb, B(m_off, uint64_t) + n, &total);
    if (!rc)
        rc = dres(cb, &cb->m_ts, (total + 1) * 8, 0);
    if (!rc)
        rc = dres(cb, &cb->m_val, (total + 1) * 8, 0);
    if (!rc)
        rc = gk_window_gather(&cb->x, B(d_w_off[cb->cur], uint64_t), B(d_w_n[cb->cur], uint64_t),
                              B(d_pts[cb->cur], int64_t), B(d_pval[cb->cur], double),
                              B(tslot, uint32_t), B(m_off, uint64_t), n, B(m_ts, int64_t),
                              B(m_val, double));
    if (!rc) {
        ts = (int64_t *)malloc((total + 1) * sizeof *ts);
        val = (double *)malloc((total + 1) * sizeof *val);
        rc = ts && val ? 0 : GA_ENOMEM;
    }
    if (!rc)
        rc = cp(cb, off, cb->m_off.p, (n + 1) * 8, cudaMemcpyDeviceToHost, cb->x.s);
    if (!rc)
        rc = cp(cb, ts, cb->m_ts.p, total * 8, cudaMemcpyDeviceToHost, cb->x.s);
    if (!rc)
        rc = cp(cb, val, cb->m_val.p, total * 8, cudaMemcpyDeviceToHost, cb->x.s);
    if (!rc)
        rc = sync_stream(cb, cb->x.s);
    for (; rc == 0 && done < n; done++) {
        size_t k = (size_t)(off[done + 1] - off[done]);
        out[done].ts = (int64_t *)malloc((k ? k : 1) * sizeof *ts);
        out[done].value = (double *)malloc((k ? k : 1) * sizeof *val);
        if (!out[done].ts || !out[done].value) {
            free(out[done].ts);
            free(out[done].value);
            out[done].ts = NULL;
            out[done].value = NULL;
            rc = GA_ENOMEM;
            break;
        }
        memcpy(out[done].ts, ts + off[done], k * sizeof *ts);
        memcpy(out[done].value, val + off[done], k * sizeof *val);
        out[done].n = k;
    }
    if (rc) {
        for (size_t i = 0; i < done; i++) {
            free(out[i].ts);
            free(out[i].value);
        }
        memset(out, 0, n * sizeof *out);
    }
    free(slots);
    free(off);
    free(ts);
    free(val);
    return rc;
}

int cu_window_put(struct ga_backend *b, uint32_t id, const struct ga_policy *p,
                  const struct ga_window *win)
{
    cuda_backend *cb = (cuda_backend *)b;
    if (use_device(cb))
        return GA_ECUDA;
    if (win->has_prev)
        return GA_EINVAL;
    for (size_t i = 0; i < win->n; i++)
        if (!GA_TS_IN_RANGE(win->ts[i]) || !isfinite(win->value[i]) || (i && win->ts[i] <= win->ts[i - 1]))
            return GA_EINVAL;
    int rc = cu_metric_add(b, id, p);
    if (rc)
        return rc;
    int32_t s = slot_of_id(cb, id);
    size_t n = win->n;
    TRY(settle(cb));
    TRY(sync_tables(cb));
    RES(m_ts, (n + 1) * 8, 0);
    RES(m_val, (n + 1) * 8, 0);
    RES(tslot, 8, 0);
    RES(m_off, 16, 0);
    RES(m_n, 16, 0);
    uint64_t hdr[3] = { 0, n, 0 };
    uint32_t ts0 = (uint32_t)s;
    TRY(cp(cb, cb->m_ts.p, win->ts, n * 8, cudaMemcpyHostToDevice, cb->x.s));
    TRY(cp(cb, cb->m_val.p, win->value, n * 8, cudaMemcpyHostToDevice, cb->x.s));
    TRY(cp(cb, cb->tslot.p, &ts0, 4, cudaMemcpyHostToDevice, cb->x.s));
    TRY(cp(cb, cb->m_off.p, hdr, 16, cudaMemcpyHostToDevice, cb->x.s));
    TRY(cp(cb, cb->m_n.p, hdr + 1, 16, cudaMemcpyHostToDevice, cb->x.s));
    TRY(rebuild(cb, &cb->x, 1, cb->pool_n + n));
    TRY(pool_size_async(cb, -1));
    return settle(cb);               // waits: the host copies above are pageable
}

// Wait for the prefetched uploads still queued and forget them (their
// input sets may then be reused).
int drop_prefetch(cuda_backend *cb)
{
    for (int i = 0; i < cb->npre; i++)
        if (!cb->emu)
            CUDA_CHECK(cudaEventSynchronize(cb->ev_pre[cb->pre[i].set]));
    if (cb->npre)
        cb->st.prefetch_dropped += (uint64_t)cb->npre;
    cb->npre = 0;
    return 0;
}

// Pick the input set of a feed of pts: the oldest prefetched batch's if it
// is pts (1: already on its way up), else a set no prefetched batch holds
// (dropping them all when both hold one).  0 or 1; <0 on error.
int take_input(cuda_backend *cb, const struct ga_points *pts)
{
    const prefetched *p = &cb->pre[0];
    if (cb->npre && p->metric == pts->metric && p->ts == pts->ts && p->value == pts->value &&
        p->n == pts->n && p->ts32 == pts->ts32 &&
        (pts->ts || (p->ts_base == pts->ts_base && p->ts_unit == pts->ts_unit))) {
        cb->in_set = p->set;
        cb->pre[0] = cb->pre[1];
        cb->npre--;
        cb->st.prefetch_used++;
        return 1;
    }
    if (cb->npre == 2)
        TRY(drop_prefetch(cb));
    cb->in_set = cb->npre ? 1 - cb->pre[0].set : cb->in_set;
    return 0;
}

// Reserve input set `set` for n points.  Only ever grown while no copy into
// it is queued (its prefetch was waited for or consumed).
int reserve_input(cuda_backend *cb, int set, size_t n, int ts32)
{
    TRY(dres(cb, &cb->in_metric[set], n * 4, 0));
    TRY(dres(cb, &cb->in_ts[set], n * 8, 0));
    if (ts32)
        TRY(dres(cb, &cb->in_ts32[set], n * 4, 0));
    return dres(cb, &cb->in_val[set], n * 8, 0);
}

// Upload the batch chunk by chunk through the pinned ring and classify each
// chunk as soon as it is on the GPU; a prefetched batch is only classified,
// once its upload is done.
int upload_classify(cuda_backend *cb, const struct ga_points *pts, int prefetched_up)
{
    size_t n = pts->n, tb = ts_bytes(pts);
    gk_feed f;
    fill(cb, &f);
    if (!pts->ts) {               // 32-bit offsets: classify decodes them into in_ts
        f.ts32 = (const uint32_t *)cb->in_ts32[cb->in_set].p;
        f.ts_base = pts->ts_base;
        f.ts_unit = pts->ts_unit;
    }
    if (prefetched_up) {
        if (!cb->emu)
            CUDA_CHECK(cudaStreamWaitEvent(cb->x.s, cb->ev_pre[cb->in_set], 0));
        return gk_classify(&cb->x, &f, 0, n);
    }
    uint32_t *d_metric = (uint32_t *)cb->in_metric[cb->in_set].p;
    char *d_ts = (char *)(pts->ts ? cb->in_ts[cb->in_set].p : cb->in_ts32[cb->in_set].p);
    double *d_val = (double *)cb->in_val[cb->in_set].p;
    // Caller's arrays in page-locked memory (ga_cuda_host_alloc): DMA straight
    // from them, no staging copy.
    int pinned = !cb->emu && is_pinned(pts->metric) && is_pinned(ts_at(pts, 0)) && is_pinned(pts->value);
    TRY(wait_ev(cb, cb->s_h2d, cb->ev_in_free[cb->in_set]));
    for (size_t i0 = 0, c = 0; i0 < n; i0 += cb->chunk, c++) {
        size_t k = n - i0 < cb->chunk ? n - i0 : cb->chunk;
        int slot = (int)(c % (size_t)cb->ring);
        if (cb->emu) {
            memcpy(d_metric + i0, pts->metric + i0, k * 4);
            memcpy(d_ts + i0 * tb, ts_at(pts, i0), k * tb);
            memcpy(d_val + i0, pts->value + i0, k * 8);
        } else {
            const void *sm = pts->metric + i0, *st = ts_at(pts, i0), *sv = pts->value + i0;
            if (!pinned) {            // pack into the ring's slot, then DMA from there
                if (c >= (size_t)cb->ring)
                    CUDA_CHECK(cudaEventSynchronize(cb->ev_in[slot]));   // slot's last copy done
                char *pin = (char *)cb->pin_in[slot];
                par_memcpy(pin, sm, k * 4);
                par_memcpy(pin + cb->chunk * 4, st, k * tb);
                par_memcpy(pin + cb->chunk * 12, sv, k * 8);
                sm = pin;
                st = pin + cb->chunk * 4;
                sv = pin + cb->chunk * 12;
            }
            CUDA_CHECK(cudaMemcpyAsync(d_metric + i0, sm, k * 4, cudaMemcpyHostToDevice, cb->s_h2d));
            CUDA_CHECK(cudaMemcpyAsync(d_ts + i0 * tb, st, k * tb, cudaMemcpyHostToDevice, cb->s_h2d));
            CUDA_CHECK(cudaMemcpyAsync(d_val + i0, sv, k * 8, cudaMemcpyHostToDevice, cb->s_h2d));
            CUDA_CHECK(cudaEventRecord(cb->ev_in[slot], cb->s_h2d));
            CUDA_CHECK(cudaStreamWaitEvent(cb->x.s, cb->ev_in[slot], 0));
        }
        TRY(gk_classify(&cb->x, &f, i0, i0 + k));
    }
    return 0;
}

// The counts a feed reads in one wait once its points are in order: words
// of `small`, each a u32 count in a zeroed u64 (docs/GPU.md "How a feed
// runs": the host's waits).
enum { W_U, W_DISORDER, W_LATE, W_T, W_DROP, NW };

// Over the n points in the order in idxb (in_b) or idxa, the accepted ones
// first: gather them (s_*), dedupe them (the last of equal (slot, ts) kept;
// those not kept counted to W_DROP) and list the touched metrics' first
// points (seg32; count to W_T); W_DISORDER: some metric's ts go down in
// that order (docs/GPU.md, step 3).  Nothing read.
int order_counts(cuda_backend *cb, size_t n, int in_b)
{
    gk_feed f;
    cb->idx_in_b = in_b;
    fill(cb, &f);
    uint32_t *w = B(small, uint32_t);        // u32 view: word k at w[2 * k]
    TRY(zero(cb, w + 2 * W_DISORDER, 8));
    TRY(zero(cb, w + 2 * W_T, 8 * 2));        // W_T, W_DROP
    TRY(gk_gather_sorted(&cb->x, &f, n, w + 2 * W_LATE, w + 2 * W_DISORDER, w + 2 * W_DROP));
    return gk_select_idx(&cb->x, f.head, B(seg32, uint32_t), w + 2 * W_T, n);
}

// After the counts: with every accepted point kept (none dropped, the
// common case) the sorted points are the unique ones as they are
// (u_alias); else the kept ones are listed (keep_idx; count to W_U) and
// gathered, and their metrics' first points listed again (the same T
// metrics, at their places among the kept points).
int unique_points(cuda_backend *cb, size_t n, uint64_t dropped)
{
    cb->u_alias = dropped == 0;
    if (cb->u_alias)
        return 0;
    gk_feed f;
    fill(cb, &f);
    uint32_t *w = B(small, uint32_t);
    TRY(zero(cb, w + 2 * W_U, 8));
    TRY(gk_select_idx(&cb->x, f.keep, B(keep_idx, uint32_t), w + 2 * W_U, n));
    TRY(gk_gather_unique(&cb->x, &f, n, w + 2 * W_U));
    TRY(zero(cb, w + 2 * W_T, 8));
    return gk_select_idx(&cb->x, f.head, B(seg32, uint32_t), w + 2 * W_T, n);
}

int bits_for(uint64_t v)
{
    int b = 1;
    while (b < 64 && (v >> b))
        b++;
    return b;
}

// Everything of a feed but waiting for its rows and its tail: on return (0)
// the rows kernels and the next pool's build are queued, the pool halves
// swapped (pool_size_async; none when no point was kept), room for the rows
// reserved in fl->out and the late points on their way on s_d2h into fl's
// slot; pump sends the rows once they are written (ev_rows[slot]).  The
// rows land in out->aggs[out->naggs..] straight from the GPU when out keeps
// them in page-locked memory (fl->direct), else in pin_rows[slot].  On
// failure nothing visible has changed (the swap is its last step).
int feed_gpu(cuda_backend *cb, const struct ga_points *pts, inflight *fl)
{
    size_t n = pts->n, S = cb->nslots ? cb->nslots : 1, D = (size_t)(cb->D ? cb->D : 1);
    double t0 = now_s();
    int sl = fl->slot;
    cudaEvent_t *mark = cb->ev_mark[sl];
    TRY(record(cb, mark[0], cb->x.s));
    struct ga_result *out = fl->out;
    cb->wide = out->want_wide != 0;   // the basic methods as one record a bucket
    dbuf *late = &cb->late[sl], *pin_late = &cb->pin_late[sl];
    dbuf *rows = &cb->rows[sl], *pin_rows = &cb->pin_rows[sl];
    fl->R = fl->L = fl->rows = 0;
    TRY(sync_tables(cb));
    cb->idx_in_b = 0;
    cb->u_alias = 0;
    int up = take_input(cb, pts);
    if (up < 0)
        return up;
    TRY(reserve_input(cb, cb->in_set, n, !pts->ts));
    RES(reason, n, 0);
    RES(slot_of, n * 4, 0);
    RES(key64a, n * 8, 0);
    RES(key64b, n * 8, 0);
    RES(idxa, n * 4, 0);
    RES(idxb, n * 4, 0);
    RES(key32a, n * 4, 0);
    RES(key32b, n * 4, 0);
    RES(late_idx, n * 4, 0);
    RES(tmin, S * 8, 0);
    RES(fbt, S * 8, 0);
    RES(s_ts, n * 8, 0);
    RES(s_val, n * 8, 0);
    RES(small, 64, 0);
    gk_feed f;
    fill(cb, &f);
    TRY(gk_for(&cb->x, cb->nslots, fill_i64_f{ f.tmin, INT64_MAX }));
    TRY(gk_first_blocks(&cb->x, &f));
    TRY(upload_classify(cb, pts, up));

    // Late points: listed now (their count to W_LATE), gathered and sent
    // home once the counts are read, after the sort.
    uint32_t *w = B(small, uint32_t);
    TRY(zero(cb, w + 2 * W_LATE, 8));
    TRY(gk_select_idx(&cb->x, f.reason, B(late_idx, uint32_t), w + 2 * W_LATE, n));
    double t1 = now_s();
    TRY(record(cb, mark[1], cb->x.s));
    cb->st.upload_s = t1 - t0;

    // Order by (slot, ts, arrival), rejected points (slot = nslots) last.
    // Producers mostly send each metric's points in time order; then a stable
    // sort by slot alone (2 radix passes for 10^4 metrics) gives that order.
    // The dedupe pass checks it (disorder); only where it does not hold are
    // the points sorted by ts first (8 passes more), then by slot.
    // Sized for n (U <= A <= n): the counts are read once, at the end.
    int sb = bits_for(cb->nslots);
    uint64_t c[NW];
    RES(keep, n, 0);
    RES(keep_idx, n * 4, 0);
    RES(u_slot, n * 4, 0);
    RES(u_ts, n * 8, 0);
    RES(u_val, n * 8, 0);
    RES(head, n, 0);
    RES(seg32, n * 4, 0);
    fill(cb, &f);
    // classify left slot_of in arrival order and idxa = 0, 1, ...: the keys
    // as they are
    TRY(gk_sort_u32(&cb->x, B(slot_of, uint32_t), B(key32b, uint32_t), B(idxa, uint32_t),
                    B(idxb, uint32_t), n, sb));
    TRY(order_counts(cb, n, 1));
    TRY(rd_words(cb, B(small, uint64_t), NW, c));
    if (c[W_DISORDER]) {
        TRY(gk_ts_keys(&cb->x, &f, n));      // idxa is still classify's 0, 1, ...
        TRY(gk_sort_u64(&cb->x, B(key64a, uint64_t), B(key64b, uint64_t), B(idxa, uint32_t),
                        B(idxb, uint32_t), n, 64));
        TRY(gk_slot_keys(&cb->x, &f, B(idxb, uint32_t), B(key32a, uint32_t), n));
        TRY(gk_sort_u32(&cb->x, B(key32a, uint32_t), B(key32b, uint32_t), B(idxb, uint32_t),
                        B(idxa, uint32_t), n, sb));
        TRY(order_counts(cb, n, 0));
        TRY(rd_words(cb, B(small, uint64_t), NW, c));
        cb->st.order_sorted++;
    } else {
        cb->st.order_in_time++;
    }
    TRY(settle(cb));              // the last feed's tail: done by the wait above
    uint64_t L = c[W_LATE], U = n - L - c[W_DROP], T = c[W_T];
    TRY(unique_points(cb, n, c[W_DROP]));
    if (L) {
        TRY(dres(cb, late, L * sizeof(struct ga_late), 0));
        TRY(pres(cb, pin_late, L * sizeof(struct ga_late)));
        fill(cb, &f);
        TRY(gk_late_rows(&cb->x, &f, B(late_idx, uint32_t), L, (struct ga_late *)late->p));
        TRY(record(cb, cb->ev_late, cb->x.s));
        TRY(wait_ev(cb, cb->s_d2h, cb->ev_late));
        TRY(cp(cb, pin_late->p, late->p, L * sizeof(struct ga_late), cudaMemcpyDeviceToHost,
               cb->s_d2h));
    }
    fl->L = L;
    // The input set is read no more: a later upload into it waits for this.
    TRY(record(cb, cb->ev_in_free[cb->in_set], cb->x.s));
    if (!U)
        return out_reserve(cb, out, 0, L);      // no rows: fl->bytes 0
    double t2 = now_s();
    TRY(record(cb, mark[2], cb->x.s));
    cb->st.sort_s = t2 - t1;

    // Merge with the windows.
    RES(seg, (T + 1) * 8, 0);
    RES(t_of, S * 4, 0);
    RES(tslot, (T + 1) * 4, 0);
    RES(old_n, (T + 1) * 8, 0);
    RES(m_n, (T + 1) * 8, 0);
    RES(m_off, (T + 1) * 8, 0);
    RES(o_off, (T + 1) * 8, 0);
    RES(dup, (U + 1) * 8, 0);
    RES(dupx, (U + 1) * 8, 0);
    RES(rold, U * 8, 0);
    RES(pos, U * 8, 0);
    fill(cb, &f);
    TRY(gk_segments(&cb->x, &f, U, T));
    TRY(gk_merge_counts(&cb->x, &f, U, T));
    TRY(gk_scan_u64(&cb->x, f.dup, f.dupx, U + 1));
    TRY(gk_merge_lengths(&cb->x, &f, T));
    TRY(gk_scan_u64(&cb->x, f.m_n, (uint64_t *)f.m_off, T + 1));
    TRY(gk_scan_u64(&cb->x, f.old_n, (uint64_t *)f.o_off, T + 1));
    // Not read: the touched windows' old points O (o_off[T]) are at most
    // T windows of the longest length yet, and at most the pool; the merged
    // ones at most O + U.
    uint64_t O_max = cb->wmax && T > cb->pool_n / cb->wmax ? cb->pool_n : T * cb->wmax;
    uint64_t M_max = O_max + U;
    RES(m_ts, (M_max + 1) * 8, 0);
    RES(m_val, (M_max + 1) * 8, 0);
    RES(ctx, T * D * sizeof(gk_ctx), 0);
    fill(cb, &f);
    TRY(gk_merge_place(&cb->x, &f, U, T, O_max));
    TRY(gk_contexts(&cb->x, &f, T));
    double t3 = now_s();
    TRY(record(cb, mark[3], cb->x.s));
    cb->st.merge_s = t3 - t2;

    // The next pool needs only the merged windows: built on its own stream
    // while the bucket kernels run (and the host waits for their counts),
    // waited for before the pool's size is read.
    TRY(record(cb, cb->ev_merged, cb->x.s));
    TRY(wait_ev(cb, cb->xr.s, cb->ev_merged));
    TRY(rebuild(cb, &cb->xr, T, cb->pool_n + U));
    TRY(record(cb, cb->ev_rebuilt, cb->xr.s));

    // Bucket tasks (gk_tasks.cu): counted a tile of items at a time, the
    // tiles summed, the totals and the rows kernels' chunks read in one wait,
    // the tasks written.
    size_t ntiles = gk_task_tiles(U, (int)D);
    uint64_t tw[GK_TASK_WORDS(ROW_CHUNKS)];
    RES(tcnt, 3 * (ntiles + 1) * 8, 0);
    RES(toff, 3 * (ntiles + 1) * 8, 0);
    RES(twords, GK_TASK_WORDS(ROW_CHUNKS) * 8, 0);
    fill(cb, &f);
    TRY(gk_tasks_count(&cb->x, &f, U, B(tcnt, uint64_t)));
    TRY(gk_tasks_scan(&cb->x, B(tcnt, uint64_t), B(toff, uint64_t), ntiles, ROW_CHUNKS, B(twords, uint64_t)));
    TRY(rd_into(cb, cb->pin_hb, cb->map_hb, B(twords, uint64_t), GK_TASK_WORDS(ROW_CHUNKS), tw));
    uint64_t ntasks = tw[0], R = tw[1], NS = 0;
    fl->rows = tw[2];
    const uint64_t *tb = tw + 3, *hb = tw + 4 + ROW_CHUNKS;   // chunk k: tasks [tb[k], tb[k + 1]), rows from hb[k]
    RES(tasks, (ntasks + 1) * sizeof(gk_task), 0);
    fill(cb, &f);
    TRY(gk_tasks_emit(&cb->x, &f, U, B(toff, uint64_t)));
    gk_view v = view_of(&f);
    if (cb->any_sort) {
        RES(sortlen, (2 * ntasks + 1) * 8, 0);
        RES(sortoff, (2 * ntasks + 1) * 8, 0);
        TRY(gk_bucket_sortlen(&cb->x, &v, f.tasks, ntasks, B(sortlen, uint64_t)));
        TRY(zero(cb, B(sortlen, uint64_t) + 2 * ntasks, 8));
        TRY(gk_scan_u64(&cb->x, B(sortlen, uint64_t), B(sortoff, uint64_t), 2 * ntasks + 1));
        TRY(rd64(cb, B(sortoff, uint64_t) + 2 * ntasks, &NS));
    }                             // nothing to sort: no sortlen/sortoff, no sorted copy
    cb->st.sort_small_parts = cb->st.sort_big_parts = 0;
    if (NS) {
        // docs/GPU.md "Small-bucket sort": short parts sorted in shared memory
        // straight from the windows, long ones gathered and sorted by CUB;
        // sortlen, dead after the scan, is the split's scratch.
        RES(unsorted, NS * 8, 0);
        RES(sorted, NS * 8, 0);
        RES(sortlen, gk_sort_scratch_bytes(ntasks), 0);
        gk_sort_counts sc;
        TRY(gk_bucket_sort(&cb->x, &v, f.tasks, ntasks, B(sortoff, uint64_t), NS, B(unsorted, double),
                           B(sorted, double), cb->sortlen.p, &cb->sort_cfg, &sc));
        cb->st.sort_small_parts = sc.small_parts;
        cb->st.sort_big_parts = sc.big_parts;
    }
    const double *srt = NS ? B(sorted, double) : NULL;   // NULL: the rows kernels read no sortoff
    TRY(dres(cb, rows, (R + 1) * sizeof(struct ga_agg), 0));
    TRY(out_reserve(cb, out, R, L));
    fl->direct = out->aggs_pinned || cb->emu;   // emulation: any memory will do
    if (!fl->direct)
        TRY(pres(cb, pin_rows, (R + 1) * sizeof(struct ga_agg)));
    struct ga_agg *dst = fl->direct ? out->aggs + out->naggs : (struct ga_agg *)pin_rows->p;
    struct ga_agg *drows = (struct ga_agg *)rows->p;
    RES(long_list, (ntasks + 1) * 8, 0);      // the feed's long tasks (gk_bucket_rows)
    unsigned long long *llist = cb->rows_cfg.long_min == GK_ROWS_LONG_OFF ? NULL :
                                (unsigned long long *)cb->long_list.p;
    if (llist)
        TRY(gk_rows_long_reset(&cb->x, llist));
    RES(mid_list, (ntasks + 1) * 8, 0);       // the warp kernel's too long to stage
    unsigned long long *mlist = (unsigned long long *)cb->mid_list.p;
    TRY(gk_rows_long_reset(&cb->x, mlist));
    double t4 = now_s();
    TRY(record(cb, mark[4], cb->x.s));
    for (int k = 0; k < ROW_CHUNKS; k++) {
        size_t a = tb[k], z = tb[k + 1];
        gk_rows_cfg cfg = cb->rows_cfg;
        if (cb->rows_auto)              // docs/GPU.md "Rows kernel": which one wins
            cfg.warp = cb->narrow[cb->wide] < AUTO_TILED_ROWS ||
                       hb[k + 1] - hb[k] < AUTO_TILED_ROWS * (uint64_t)(z - a);
        TRY(gk_bucket_rows(&cb->x, &v, f.tasks, a, z, B(sortoff, uint64_t), srt, drows, &cfg, llist, mlist));
    }
    TRY(gk_rows_mid(&cb->x, &v, f.tasks, ntasks, B(sortoff, uint64_t), srt, drows, mlist));
    if (llist)
        TRY(gk_rows_long(&cb->x, &v, f.tasks, ntasks, B(sortoff, uint64_t), srt, drows, llist));
    TRY(record(cb, mark[5], cb->x.s));
    TRY(record(cb, cb->ev_rows[sl], cb->x.s));   // pump's copies of the rows wait for it
    TRY(wait_ev(cb, cb->x.s, cb->ev_rebuilt));
    TRY(record(cb, mark[6], cb->x.s));
    TRY(pool_size_async(cb, sl));
    double t5 = now_s();
    // The rows go home in pieces: before each count the next feed reads,
    // or all at once in feed_wait (pump).
    fl->R = R;
    fl->dst = (char *)dst;
    fl->src = (const char *)drows;
    fl->bytes = R * sizeof(struct ga_agg);
    cb->st.buckets_s = t4 - t3;
    cb->st.rebuild_s = t5 - t4;
    return 0;
}

// Leave no copy in flight into buffers a retry may reuse (after a failed
// feed_gpu; the feeds already in flight complete, and stay to be waited for).
void drain(cuda_backend *cb)
{
    if (!cb->emu) {
        cudaStreamSynchronize(cb->s_h2d);
        cudaStreamSynchronize(cb->s_d2h);
        cudaStreamSynchronize(cb->xr.s);
        cudaStreamSynchronize(cb->x.s);
    }
}

// Start the upload of a later batch now, into an input set no queued
// upload or running feed uses: the feed of the same arrays then only
// classifies it (engine.h prefetch).  Emulation copies at once, so the
// tests run the same bookkeeping.
int cu_prefetch(struct ga_backend *b, const struct ga_points *pts)
{
    cuda_backend *cb = (cuda_backend *)b;
    if (use_device(cb))
        return GA_ECUDA;
    if (cb->npre == 2)
        return GA_EBUSY;
    size_t n = pts->n;
    if (!n || n >= UINT32_MAX)
        return 0;
    if (!cb->emu && !(is_pinned(pts->metric) && is_pinned(ts_at(pts, 0)) && is_pinned(pts->value)))
        return 0;                 // pageable: the feed packs it through the ring
    int set = cb->npre ? 1 - cb->pre[0].set : 1 - cb->in_set;
    TRY(reserve_input(cb, set, n, !pts->ts));
    TRY(wait_ev(cb, cb->s_h2d, cb->ev_in_free[set]));   // the feed before may still read it
    void *dm = cb->in_metric[set].p, *dv = cb->in_val[set].p;
    void *dt = pts->ts ? cb->in_ts[set].p : cb->in_ts32[set].p;
    size_t tb = ts_bytes(pts);
    if (cb->emu) {
        memcpy(dm, pts->metric, n * 4);
        memcpy(dt, ts_at(pts, 0), n * tb);
        memcpy(dv, pts->value, n * 8);
    } else {
        CUDA_CHECK(cudaMemcpyAsync(dm, pts->metric, n * 4, cudaMemcpyHostToDevice, cb->s_h2d));
        CUDA_CHECK(cudaMemcpyAsync(dt, ts_at(pts, 0), n * tb, cudaMemcpyHostToDevice, cb->s_h2d));
        CUDA_CHECK(cudaMemcpyAsync(dv, pts->value, n * 8, cudaMemcpyHostToDevice, cb->s_h2d));
        CUDA_CHECK(cudaEventRecord(cb->ev_pre[set], cb->s_h2d));
    }
    cb->pre[cb->npre++] = prefetched{ pts->metric, pts->ts, pts->value, pts->ts32, pts->ts_base,
                                      pts->ts_unit, n, set };
    return 1;
}

int cu_feed_start(struct ga_backend *b, const struct ga_points *pts, struct ga_result *out)
{
    cuda_backend *cb = (cuda_backend *)b;
    if (cb->nfl == 2)
        return GA_EBUSY;
    if (use_device(cb))
        return GA_ECUDA;
    if (pts->n >= UINT32_MAX)
        return GA_ETOOBIG;
    if (cb->nfl && cb->fl[0].out == out)
        return GA_EINVAL;         // its rows are still coming into out's free room
    inflight *fl = &cb->fl[cb->nfl];
    *fl = inflight{ out, 0, 0, 0, 0, cb->slot, now_s(), NULL, NULL, 0, 0, 0 };
    if (pts->n == 0) {
        cb->nfl++;                // nothing to wait for, but waited for in order
        cb->slot = 1 - cb->slot;
        return 0;
    }
    int rc = feed_gpu(cb, pts, fl);
    if (rc) {
        drain(cb);
        return rc;
    }
    cb->nfl++;
    cb->slot = 1 - cb->slot;
    // Counts do not use the copy engine: all rows home now.  The batch is
    // applied, so a failed copy is not this call's failure: feed_wait sends
    // what is left and reports it.
    if (cb->mapped)
        (void)pump(cb, SIZE_MAX);
    cb->st.points = pts->n;
    cb->st.allocs = cb->x.allocs + cb->xr.allocs;          // xr: the rebuild's scan storage
    cb->st.alloc_s = cb->x.alloc_s + cb->xr.alloc_s;
    cb->st.pinned_allocs = cb->x.pinned_allocs;
    cb->st.pinned_alloc_s = cb->x.pinned_alloc_s;
    cb->x.allocs = cb->x.pinned_allocs = cb->xr.allocs = 0;
    cb->x.alloc_s = cb->x.pinned_alloc_s = cb->xr.alloc_s = 0;
    return 0;
}

int cu_feed_wait(struct ga_backend *b)
{
    cuda_backend *cb = (cuda_backend *)b;
    if (!cb->nfl)
        return GA_ENOENT;
    if (use_device(cb))
        return GA_ECUDA;
    double t0 = now_s();
    int rc = pump(cb, cb->fl[0].bytes - cb->fl[0].sent);     // the rest of its rows
    if (rc)
        return rc;
    inflight fl = cb->fl[0];
    if (!cb->emu)
        CUDA_CHECK(cudaEventSynchronize(cb->ev_done[fl.slot]));
    cb->fl[0] = cb->fl[1];
    cb->nfl--;
    struct ga_result *out = fl.out;
    if (fl.R && !fl.direct)
        par_memcpy(out->aggs + out->naggs, cb->pin_rows[fl.slot].p, fl.R * sizeof *out->aggs);
    out->naggs += fl.R;
    out->nrows += fl.rows;
    if (fl.L)
        memcpy(out->late + out->nlate, cb->pin_late[fl.slot].p, fl.L * sizeof *out->late);
    out->nlate += fl.L;
    cb->st.aggs = fl.rows;
    cb->st.late = fl.L;
    cb->st.download_s = now_s() - t0;
    cb->st.total_s = now_s() - fl.t0;
    return 0;
}

int cu_feed(struct ga_backend *b, const struct ga_points *pts, struct ga_result *out)
{
    cuda_backend *cb = (cuda_backend *)b;
    while (cb->nfl) {             // feeds started before: theirs first
        int rc = cu_feed_wait(b);
        if (rc)
            return rc;
    }
    int rc = cu_feed_start(b, pts, out);
    return rc ? rc : cu_feed_wait(b);
}

void cu_close(struct ga_backend *b)
{
    cuda_backend *cb = (cuda_backend *)b;
    if (!cb)
        return;
    if (!cb->emu)
        cudaSetDevice(cb->dev);
    dbuf *all[] = { &cb->d_pols, &cb->d_loc, &cb->d_slot_pol, &cb->d_slot_id, &cb->d_resets,
                    &cb->d_w_off[0], &cb->d_w_off[1], &cb->d_w_n[0], &cb->d_w_n[1], &cb->d_pts[0],
                    &cb->d_pts[1], &cb->d_pval[0], &cb->d_pval[1], &cb->in_metric[0],
                    &cb->in_metric[1], &cb->in_ts[0], &cb->in_ts[1], &cb->in_ts32[0], &cb->in_ts32[1],
                    &cb->in_val[0], &cb->in_val[1],
                    &cb->reason, &cb->slot_of, &cb->key64a, &cb->key64b, &cb->idxa,
                    &cb->idxb, &cb->key32a, &cb->key32b, &cb->late_idx, &cb->late[0], &cb->late[1], &cb->keep,
                    &cb->keep_idx, &cb->u_slot, &cb->u_ts, &cb->u_val, &cb->head, &cb->seg32,
                    &cb->seg, &cb->tslot, &cb->old_n, &cb->dup, &cb->dupx, &cb->rold, &cb->pos,
                    &cb->m_n, &cb->m_off, &cb->o_off, &cb->m_ts, &cb->m_val, &cb->ctx,
                    &cb->tcnt, &cb->toff, &cb->tasks, &cb->cut,
                    &cb->slot_t, &cb->t_of, &cb->tmin, &cb->sortlen, &cb->sortoff, &cb->unsorted, &cb->sorted,
                    &cb->rows[0], &cb->rows[1], &cb->twords, &cb->long_list, &cb->mid_list, &cb->small,
                    &cb->s_ts, &cb->s_val, &cb->fbt, &cb->d_wmax };
    if (!cb->emu)
        cudaDeviceSynchronize();
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dfree(cb, all[i]);
    if (cb->emu) {
        for (int i = 0; i < 2; i++) {
            free(cb->pin_rows[i].p);
            free(cb->pin_late[i].p);
        }
        free(cb->pin_scalar);
        free(cb->pin_hb);
    } else {
        if (cb->x.tmp)
            cudaFree(cb->x.tmp);
        if (cb->xr.tmp)
            cudaFree(cb->xr.tmp);
        for (int i = 0; i < RING_MAX; i++) {
            if (cb->pin_in[i])
                cudaFreeHost(cb->pin_in[i]);
            if (cb->ev_in[i])
                cudaEventDestroy(cb->ev_in[i]);
        }
        if (cb->ev_late)
            cudaEventDestroy(cb->ev_late);
        if (cb->ev_merged)
            cudaEventDestroy(cb->ev_merged);
        if (cb->ev_rebuilt)
            cudaEventDestroy(cb->ev_rebuilt);
        if (cb->ev_pool)
            cudaEventDestroy(cb->ev_pool);
        for (int i = 0; i < 2; i++) {
            for (int k = 0; k < NMARKS; k++)
                if (cb->ev_mark[i][k])
                    cudaEventDestroy(cb->ev_mark[i][k]);
            if (cb->ev_rows[i])
                cudaEventDestroy(cb->ev_rows[i]);
            if (cb->ev_in_free[i])
                cudaEventDestroy(cb->ev_in_free[i]);
            if (cb->ev_done[i])
                cudaEventDestroy(cb->ev_done[i]);
            if (cb->ev_pre[i])
                cudaEventDestroy(cb->ev_pre[i]);
            if (cb->pin_rows[i].p)
                cudaFreeHost(cb->pin_rows[i].p);
            if (cb->pin_late[i].p)
                cudaFreeHost(cb->pin_late[i].p);
        }
        if (cb->pin_scalar)
            cudaFreeHost(cb->pin_scalar);
        if (cb->pin_hb)
            cudaFreeHost(cb->pin_hb);
        if (cb->x.s)
            cudaStreamDestroy(cb->x.s);
        if (cb->xr.s)
            cudaStreamDestroy(cb->xr.s);
        if (cb->s_h2d)
            cudaStreamDestroy(cb->s_h2d);
        if (cb->s_d2h)
            cudaStreamDestroy(cb->s_d2h);
    }
    free(cb->pols);
    free(cb->loc);
    free(cb->slot_pol);
    free(cb->slot_id);
    free(cb->slot_live);
    free(cb->free_slots);
    free(cb->resets);
    free(cb);
}

const struct ga_backend_ops cuda_ops = {
    "cuda", cu_metric_add, cu_feed, cu_window_get, cu_window_put, cu_metric_drop, cu_close,
    cu_feed_start, cu_feed_wait, cu_prefetch, cu_windows_get,
};

int setup_gpu(cuda_backend *cb)
{
    CUDA_CHECK(cudaSetDevice(cb->dev));
    CUDA_CHECK(cudaStreamCreateWithFlags(&cb->x.s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&cb->xr.s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&cb->s_h2d, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&cb->s_d2h, cudaStreamNonBlocking));
    for (int i = 0; i < cb->ring; i++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_in[i], cudaEventDisableTiming));
        CUDA_CHECK(cudaHostAlloc(&cb->pin_in[i], cb->chunk * 20, cudaHostAllocDefault));
    }
    CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_late, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_merged, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_rebuilt, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_pool, cudaEventDisableTiming));
    for (int i = 0; i < 2; i++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_done[i], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_pre[i], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_rows[i], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&cb->ev_in_free[i], cudaEventDisableTiming));
        for (int k = 0; k < NMARKS; k++)
            CUDA_CHECK(cudaEventCreate(&cb->ev_mark[i][k]));
    }
    unsigned fl = cb->mapped ? cudaHostAllocMapped : cudaHostAllocDefault;
    CUDA_CHECK(cudaHostAlloc((void **)&cb->pin_scalar, 64, fl));
    CUDA_CHECK(cudaHostAlloc((void **)&cb->pin_hb, GK_TASK_WORDS(ROW_CHUNKS) * 8, fl));
    if (cb->mapped) {
        CUDA_CHECK(cudaHostGetDevicePointer((void **)&cb->map_scalar, cb->pin_scalar, 0));
        CUDA_CHECK(cudaHostGetDevicePointer((void **)&cb->map_hb, cb->pin_hb, 0));
    }
    return 0;
}

} // namespace

extern "C" int ga_cuda_backend_open(struct ga_backend **out, int device, const struct ga_cuda_opts *o)
{
    *out = NULL;
    struct ga_cuda_opts d;
    memset(&d, 0, sizeof d);
    if (!o)
        o = &d;
    if (o->ring < 0 || o->ring == 1 || o->ring > RING_MAX || device < 0 ||
        o->rows_kernel < GA_CUDA_ROWS_DEFAULT || o->rows_kernel > GA_CUDA_ROWS_WARP ||
        o->sort_small < -1 || o->sort_small > GA_CUDA_SORT_SMALL_MAX || o->rows_long < -1 ||
        o->counts < GA_CUDA_COUNTS_DEFAULT || o->counts > GA_CUDA_COUNTS_COPY)
        return GA_EINVAL;
    int counts = o->counts == GA_CUDA_COUNTS_DEFAULT ? GA_CUDA_COUNTS_MAPPED : o->counts;
    int rows_kernel = o->rows_kernel;             // GA_CUDA_ROWS_DEFAULT: auto, per launch
    if (!o->emulate) {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || device >= n)
            return GA_ENOGPU;
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, device) != cudaSuccess || p.major < 9)
            return GA_ENOGPU;
    }
    cuda_backend *cb = (cuda_backend *)calloc(1, sizeof *cb);
    if (!cb)
        return GA_ENOMEM;
    cb->base.ops = &cuda_ops;
    cb->dev = device;
    cb->emu = o->emulate != 0;
    cb->x.emu = cb->xr.emu = cb->emu;
    cb->rows_cfg.warp = rows_kernel == GA_CUDA_ROWS_WARP;
    cb->rows_auto = rows_kernel == GA_CUDA_ROWS_DEFAULT;
    cb->rows_cfg.smem = o->rows_smem;
    cb->rows_cfg.long_min = gk_rows_long_min(o->rows_long);
    cb->sort_cfg.small_max = gk_sort_small_max(o->sort_small);
    cb->sort_cfg.read64 = sort_rd64;
    cb->sort_cfg.ctx = cb;
    cb->chunk = o->chunk_points ? o->chunk_points : (size_t)1 << 20;
    cb->ring = o->ring ? o->ring : 3;
    cb->piece = o->piece_bytes ? o->piece_bytes : PIECE_BYTES;
    cb->mapped = counts == GA_CUDA_COUNTS_MAPPED;
    snprintf(cb->base.label, sizeof cb->base.label, cb->emu ? "cuda-emu" : "cuda:%d", device);
    int rc = 0;
    if (cb->emu) {
        cb->pin_scalar = (uint64_t *)calloc(8, sizeof *cb->pin_scalar);
        cb->pin_hb = (uint64_t *)calloc(GK_TASK_WORDS(ROW_CHUNKS), sizeof *cb->pin_hb);
        cb->map_scalar = cb->pin_scalar;      // emulation: the kernels are host loops
        cb->map_hb = cb->pin_hb;
        if (!cb->pin_scalar || !cb->pin_hb)
            rc = GA_ENOMEM;
    } else {
        rc = setup_gpu(cb);
    }
    if (rc) {
        cu_close(&cb->base);
        return rc;
    }
    *out = &cb->base;
    return 0;
}

extern "C" int ga_cuda_host_alloc(void **p, size_t bytes)
{
    *p = NULL;
    if (cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        *p = NULL;
        return GA_ENOMEM;
    }
    return 0;
}

extern "C" void ga_cuda_host_free(void *p)
{
    if (p)
        cudaFreeHost(p);
}

extern "C" int ga_cuda_backend_stats(const struct ga_backend *b, struct ga_cuda_feed_stats *st)
{
    if (!b || b->ops != &cuda_ops)
        return GA_EINVAL;
    *st = ((const cuda_backend *)b)->st;
    return 0;
}
