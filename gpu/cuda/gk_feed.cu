// gk_feed.cu — the feed's element-wise kernels (gk_feed.cuh).
#include "gpu/cuda/gk_feed.cuh"

#include <math.h>

namespace {

// *p = min(*p, v).  On the GPU only values below what *p holds now go to
// the atomic: *p only goes down, so a value not below it cannot be the
// minimum.  Points mostly come in time order, and then nearly every atomic
// is skipped; without the test, a batch of one metric serialises millions
// of atomics on one word.
__host__ __device__ void min_i64(int64_t *p, int64_t v)
{
#ifdef __CUDA_ARCH__
    if (v < *(volatile int64_t *)p)
        atomicMin((long long *)p, (long long)v);
#else
    if (v < *p)
        *p = v;
#endif
}

// *p = max(*p, v), the atomic skipped when it would change nothing.
__host__ __device__ void max_u64(uint64_t *p, uint64_t v)
{
#ifdef __CUDA_ARCH__
    if (v > *(volatile uint64_t *)p)
        atomicMax((unsigned long long *)p, (unsigned long long)v);
#else
    if (v > *p)
        *p = v;
#endif
}

// A window's first block, once a slot rather than once a point.
struct first_block_f {
    gk_feed f;
    __host__ __device__ void operator()(size_t s) const
    {
        uint64_t n = f.w_n[s];
        int64_t b = INT64_MIN;    // an empty window (or a free slot) takes every point
        if (n) {
            const struct agg_pol *pol = &f.pols[f.slot_pol[s]];
            b = gk_first_block(f.p_ts[f.w_off[s] + n - 1], pol->block, pol->bw);
        }
        f.fbt[s] = b;
    }
};

// Step 1 and 2 of docs/SEMANTICS.md per point.
struct classify_f {
    gk_feed f;
    size_t i0;
    __host__ __device__ void operator()(size_t j) const
    {
        size_t i = i0 + j;
        uint32_t id = f.metric[i];
        uint32_t li = id < f.cap_local ? f.loc[id] : 0;
        int64_t t;
        if (f.ts32) {             // the batch's one decode: every later pass reads ts
            t = f.ts_base + (int64_t)f.ts32[i] * f.ts_unit;
            const_cast<int64_t *>(f.ts)[i] = t;
        } else {
            t = f.ts[i];
        }
        double v = f.val[i];
        uint8_t why = 0;
        uint32_t s = f.nslots;
        if (!li) {
            why = GA_LATE_UNKNOWN_METRIC;
        } else if (t < GA_TS_MIN) {
            why = GA_LATE_BEFORE_EPOCH;
        } else if (t > GA_TS_MAX) {
            why = GA_LATE_OUT_OF_RANGE;
        } else if (!isfinite(v)) {
            why = GA_LATE_NONFINITE;
        } else {
            s = li - 1;
            min_i64(&f.tmin[s], t);
            if (t < f.fbt[s])
                why = GA_LATE_WINDOW;
            if (why)
                s = f.nslots;
        }
        f.reason[i] = why;
        f.slot_of[i] = s;
        f.idx[i] = (uint32_t)i;
    }
};

struct late_f {
    gk_feed f;
    const uint32_t *late_idx;
    struct ga_late *out;
    __host__ __device__ void operator()(size_t j) const
    {
        uint32_t i = late_idx[j];
        struct ga_late *l = &out[j];
        l->metric = f.metric[i];
        l->reason = f.reason[i];
        l->ts = f.ts[i];
        l->value = f.val[i];
    }
};

struct slot_keys_f {
    gk_feed f;
    const uint32_t *idx1;
    uint32_t *key32;
    __host__ __device__ void operator()(size_t j) const { key32[j] = f.slot_of[idx1[j]]; }
};

// The points' ts and values in sorted order (the one scattered read of the
// ordering: arrival order interleaves the metrics), and which of them are
// kept: the last received of equal (slot, ts) (the sort is stable).  Also
// *disorder = 1 where a metric's next point is older (only possible when the
// points were sorted by slot alone, arrival order kept: then the feed sorts
// by ts as well and runs this again).  Over all n sorted points; the
// accepted ones, A = n - *late, come first (rejected points sort last), the
// rest are not kept: A stays on the device.  The next point's ts is read
// from the batch again (its own thread's load brought it near), which costs
// less than a second pass over the sorted copy.  head[j]: point j is its
// metric's first accepted one, which are also the first kept ones' places
// when every accepted point is kept (then the sorted copy is the unique one
// and the feed uses it as it is: no unique_f).
struct sorted_f {
    gk_feed f;
    size_t n;
    const uint32_t *late;
    uint32_t *disorder;
    uint32_t *dropped;            // += accepted points not kept (duplicates: rare)
    __host__ __device__ void operator()(size_t j) const
    {
        uint32_t i = f.idx_s[j];
        int64_t t = f.ts[i];
        f.s_ts[j] = t;
        f.s_val[j] = f.val[i];
        size_t A = n - *late;
        uint8_t k = j < A;
        f.head[j] = k && (j == 0 || f.key32s[j - 1] != f.key32s[j]);
        if (j + 1 < A && f.key32s[j + 1] == f.key32s[j]) {
            int64_t tn = f.ts[f.idx_s[j + 1]];
            if (tn < t)
                *disorder = 1;
            if (tn == t) {
                k = 0;
#ifdef __CUDA_ARCH__
                atomicAdd(dropped, 1u);
#else
                ++*dropped;
#endif
            }
        }
        f.keep[j] = k;
    }
};

// ts as 64-bit sort keys, for the sort by time (disordered batches only).
struct ts_keys_f {
    gk_feed f;
    __host__ __device__ void operator()(size_t i) const { f.key64[i] = (uint64_t)f.ts[i]; }
};

// Only when some accepted point was not kept (a duplicate): the kept ones
// gathered.  Over all n: the first *U are the kept points; head[k] = 0 past
// them, so that a selection over n finds the touched metrics.
struct unique_f {
    gk_feed f;
    const uint32_t *U;
    __host__ __device__ void operator()(size_t k) const
    {
        if (k >= *U) {
            f.head[k] = 0;
            return;
        }
        uint32_t j = f.keep_idx[k];
        f.u_slot[k] = f.key32s[j];
        f.u_ts[k] = f.s_ts[j];
        f.u_val[k] = f.s_val[j];
        f.head[k] = k == 0 || f.u_slot[k] != f.key32s[f.keep_idx[k - 1]];
    }
};

struct seg_f {
    gk_feed f;
    size_t U, T;
    __host__ __device__ void operator()(size_t t) const
    {
        if (t == T) {
            f.seg[T] = U;
            f.old_n[T] = 0;
            f.m_n[T] = 0;
            return;
        }
        uint32_t s = f.u_slot[f.seg32[t]];
        f.seg[t] = f.seg32[t];
        f.tslot[t] = s;
        f.t_of[s] = (uint32_t)t;
        f.old_n[t] = f.w_n[s];
    }
};

struct dup_f {
    gk_feed f;
    size_t U, T;
    __host__ __device__ void operator()(size_t k) const
    {
        if (k == U) {
            f.dup[U] = 0;
            return;
        }
        uint32_t s = f.u_slot[k];
        const int64_t *old = f.p_ts + f.w_off[s];
        uint64_t on = f.w_n[s];
        uint64_t r = gk_lower_bound_near(old, on, f.u_ts[k]);   // new points mostly follow
        f.rold[k] = r;
        f.dup[k] = r < on && old[r] == f.u_ts[k];
    }
};

struct mn_f {
    gk_feed f;
    __host__ __device__ void operator()(size_t t) const
    {
        uint64_t a = f.seg[t], b = f.seg[t + 1];
        f.m_n[t] = f.old_n[t] + (b - a) - (f.dupx[b] - f.dupx[a]);
    }
};

// Merged index of new point k: old points before it, less those it and
// earlier new points replace, plus the new points before it.
struct place_new_f {
    gk_feed f;
    size_t T;
    __host__ __device__ void operator()(size_t k) const
    {
        size_t t = f.t_of[f.u_slot[k]];
        uint64_t a = f.seg[t];
        uint64_t p = f.rold[k] + (k - a) - (f.dupx[k] - f.dupx[a]);
        f.pos[k] = p;
        f.m_ts[f.m_off[t] + p] = f.u_ts[k];
        f.m_val[f.m_off[t] + p] = f.u_val[k];
    }
};

// Over a bound on O, the old points of the touched windows (o_off[T]).
struct place_old_f {
    gk_feed f;
    size_t T;
    __host__ __device__ void operator()(size_t i) const
    {
        uint64_t O = f.o_off[T];
        if (i >= O)
            return;
        size_t t = gk_seg_of_near(f.o_off, T, i, (size_t)((uint64_t)i * T / O));
        uint64_t io = i - f.o_off[t];
        uint32_t s = f.tslot[t];
        int64_t ts = f.p_ts[f.w_off[s] + io];
        uint64_t a = f.seg[t], b = f.seg[t + 1];
        uint64_t r = gk_lower_bound_up(f.u_ts, a, b, ts);        // old points mostly precede
        if (r < b && f.u_ts[r] == ts)
            return;                               // replaced by a new point
        uint64_t p = io + (r - a) - (f.dupx[r] - f.dupx[a]);
        f.m_ts[f.m_off[t] + p] = ts;
        f.m_val[f.m_off[t] + p] = f.p_val[f.w_off[s] + io];
    }
};

// Newest bucket >= base of which a std-like method emits a value.
__host__ __device__ int64_t last_pair_bucket(const int64_t *ts, uint64_t n, uint64_t first, int64_t g)
{
    for (uint64_t i = n; i-- > first + 1;)
        if (gk_bucket(ts[i - 1], g) == gk_bucket(ts[i], g))
            return gk_bucket(ts[i], g);
    return -1;
}

struct ctx_f {
    gk_feed f;
    __host__ __device__ void operator()(size_t q) const
    {
        size_t t = q / f.D;
        int d = (int)(q % f.D);
        uint32_t s = f.tslot[t];
        const struct agg_pol *pol = &f.pols[f.slot_pol[s]];
        if (d >= pol->p.ndefs)
            return;
        const int64_t *ts = f.m_ts + f.m_off[t];
        uint64_t n = f.m_n[t];
        int64_t tmin = f.tmin[s];
        int64_t tstamp = ts[0] > tmin ? ts[0] : tmin;
        int64_t g = pol->p.defs[d].granularity_ns, span = pol->p.defs[d].timespan_ns;
        int64_t start = gk_bucket(tstamp, g);
        gk_ctx c;
        uint64_t base = gk_lower_bound(ts, 0, n, start);
        uint64_t dfirst = gk_lower_bound(ts, 0, base, start - g) + 1;
        uint64_t fd = base > dfirst ? base : dfirst;
        c.base = (int64_t)base;
        c.dfirst = (int64_t)dfirst;
        c.fd = (int64_t)fd;
        c.last_plain = c.last_std = c.last_rate = c.last_rstd = -1;
        if (span) {
            c.last_plain = gk_bucket(ts[n - 1], g);
            c.last_std = last_pair_bucket(ts, n, base, g);
            c.last_rate = n - 1 >= fd ? c.last_plain : -1;
            c.last_rstd = last_pair_bucket(ts, n, fd, g);
        }
        f.ctx[q] = c;
    }
};

struct rebuild_counts_f {
    gk_feed f;
    __host__ __device__ void operator()(size_t t) const
    {
        uint32_t s = f.tslot[t];
        const struct agg_pol *pol = &f.pols[f.slot_pol[s]];
        const int64_t *ts = f.m_ts + f.m_off[t];
        uint64_t n = f.m_n[t];
        uint64_t cut = n ? gk_lower_bound(ts, 0, n, gk_first_block(ts[n - 1], pol->block, pol->bw)) : 0;
        f.cut[t] = cut;
        f.new_n[s] = n - cut;
        max_u64(f.wmax, n - cut);
        f.slot_t[s] = (uint32_t)t + 1;
    }
};

// Over a bound on the new pool's size (new_off[nslots]).
struct rebuild_copy_f {
    gk_feed f;
    __host__ __device__ void operator()(size_t i) const
    {
        uint64_t total = f.new_off[f.nslots];
        if (i >= total)
            return;
        size_t s = gk_seg_of_near(f.new_off, f.nslots, i, (size_t)((uint64_t)i * f.nslots / total));
        uint64_t j = i - f.new_off[s];
        uint32_t t = f.slot_t[s];
        if (t) {
            uint64_t at = f.m_off[t - 1] + f.cut[t - 1] + j;
            f.p2_ts[i] = f.m_ts[at];
            f.p2_val[i] = f.m_val[at];
        } else {
            uint64_t at = f.w_off[s] + j;
            f.p2_ts[i] = f.p_ts[at];
            f.p2_val[i] = f.p_val[at];
        }
    }
};

struct reset_f {
    uint64_t *w_n;
    const uint32_t *slots;
    __host__ __device__ void operator()(size_t k) const { w_n[slots[k]] = 0; }
};

struct win_len_f {
    const uint64_t *w_n;
    const uint32_t *slots;
    uint64_t *len;
    __host__ __device__ void operator()(size_t k) const { len[k] = w_n[slots[k]]; }
};

// one window a thread: windows are tens to thousands of points, and a
// window set is read every few seconds, not per batch
struct win_gather_f {
    const uint64_t *w_off, *w_n;
    const int64_t *pts;
    const double *pval;
    const uint32_t *slots;
    const uint64_t *out_off;
    int64_t *ts;
    double *val;
    __host__ __device__ void operator()(size_t k) const
    {
        uint64_t s = slots[k], o = w_off[s], n = w_n[s], d = out_off[k];
        for (uint64_t j = 0; j < n; j++) {
            ts[d + j] = pts[o + j];
            val[d + j] = pval[o + j];
        }
    }
};

} // namespace

int gk_first_blocks(gk_exec *x, const gk_feed *f)
{
    return gk_for(x, f->nslots, first_block_f{ *f });
}

int gk_gather_sorted(gk_exec *x, const gk_feed *f, size_t n, const uint32_t *late, uint32_t *disorder,
                     uint32_t *dropped)
{
    return gk_for(x, n, sorted_f{ *f, n, late, disorder, dropped });
}

int gk_ts_keys(gk_exec *x, const gk_feed *f, size_t n)
{
    return gk_for(x, n, ts_keys_f{ *f });
}

int gk_classify(gk_exec *x, const gk_feed *f, size_t i0, size_t i1)
{
    return gk_for(x, i1 - i0, classify_f{ *f, i0 });
}

int gk_late_rows(gk_exec *x, const gk_feed *f, const uint32_t *late_idx, size_t L, struct ga_late *out)
{
    return gk_for(x, L, late_f{ *f, late_idx, out });
}

int gk_slot_keys(gk_exec *x, const gk_feed *f, const uint32_t *idx1, uint32_t *key32, size_t n)
{
    return gk_for(x, n, slot_keys_f{ *f, idx1, key32 });
}

int gk_gather_unique(gk_exec *x, const gk_feed *f, size_t n, const uint32_t *U)
{
    return gk_for(x, n, unique_f{ *f, U });
}

int gk_segments(gk_exec *x, const gk_feed *f, size_t U, size_t T)
{
    return gk_for(x, T + 1, seg_f{ *f, U, T });
}

int gk_merge_counts(gk_exec *x, const gk_feed *f, size_t U, size_t T)
{
    return gk_for(x, U + 1, dup_f{ *f, U, T });
}

int gk_merge_lengths(gk_exec *x, const gk_feed *f, size_t T)
{
    return gk_for(x, T, mn_f{ *f });
}

int gk_merge_place(gk_exec *x, const gk_feed *f, size_t U, size_t T, size_t O_max)
{
    int rc = gk_for(x, U, place_new_f{ *f, T });
    if (!rc)
        rc = gk_for(x, O_max, place_old_f{ *f, T });
    return rc;
}

int gk_contexts(gk_exec *x, const gk_feed *f, size_t T)
{
    return gk_for(x, T * (size_t)f->D, ctx_f{ *f });
}

int gk_rebuild_counts(gk_exec *x, const gk_feed *f, size_t T)
{
    return gk_for(x, T, rebuild_counts_f{ *f });
}

int gk_rebuild_copy(gk_exec *x, const gk_feed *f, size_t total_max)
{
    return gk_for(x, total_max, rebuild_copy_f{ *f });
}

int gk_reset_slots(gk_exec *x, uint64_t *w_n, const uint32_t *slots, size_t k)
{
    return gk_for(x, k, reset_f{ w_n, slots });
}

int gk_window_lengths(gk_exec *x, const uint64_t *w_n, const uint32_t *slots, size_t k, uint64_t *len)
{
    return gk_for(x, k, win_len_f{ w_n, slots, len });
}

int gk_window_gather(gk_exec *x, const uint64_t *w_off, const uint64_t *w_n, const int64_t *pts,
                     const double *pval, const uint32_t *slots, const uint64_t *out_off, size_t k,
                     int64_t *ts, double *val)
{
    return gk_for(x, k, win_gather_f{ w_off, w_n, pts, pval, slots, out_off, ts, val });
}
