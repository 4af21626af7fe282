// gk_bucket_priv.cuh — what the two files of the bucket kernels share
// (internal, not part of gk_bucket.cuh's interface): gk_bucket.cu (the
// rows kernels, tiled and warp, the sort lengths and the gather) and
// gk_bucket_long.cu (the long-task kernel).  The value accessors, bucket()
// and bucket_emit (agg_kern_bucket's arithmetic), the rows functor rows_f
// and task_of.  All in an anonymous namespace (templates, inline or
// internal-linkage functions): each .cu gets its own copy, as the build uses
// no relocatable device code.
#pragma once

#include "gpu/cuda/gk_bucket.cuh"

#include <math.h>
#include <stdint.h>
#include <string.h>

namespace {

struct plain_x {
    const double *v;
    __host__ __device__ double operator()(uint64_t i) const { return v[i]; }
};
struct rate_x {                   // v points at the first point with a difference
    const double *v;
    __host__ __device__ double operator()(uint64_t i) const { return v[i] - v[(int64_t)i - 1]; }
};

__host__ __device__ double quantile(const double *s, uint64_t n, int64_t min_pos, int pct)
{
    double q = (double)pct / 100.0;
    double real_pos = gk_add((double)min_pos, gk_mul((double)(int64_t)(n - 1), q));
    double fl = floor(real_pos), ce = ceil(real_pos);
    int64_t f = (int64_t)fl, c = (int64_t)ce;
    if (f == c)
        return s[f - min_pos];
    double wf = (double)c - real_pos, wc = real_pos - (double)f;
    double a = gk_mul(s[f - min_pos], wf);
    double b = gk_mul(s[c - min_pos], wc);
    return gk_add(a, b);
}

// Where bucket() puts the row k of its task: straight into the rows in
// global memory, field by field (the warp kernel, the long one, fallbacks).
struct sink_direct {
    struct ga_agg *r;             // the task's first row
    __host__ __device__ void put(uint64_t k, uint32_t metric, ga_method_t m, int64_t g, int64_t b,
                                 double val) const
    {
        struct ga_agg *o = &r[k];
        o->metric = metric;
        o->method = m;
        o->granularity_ns = g;
        o->ts = b;
        o->value = val;
    }
};

// An 8-byte value into a wide record's slots (a double among ga_agg bytes).
__host__ __device__ inline void wide_st8(void *p, double v)
{
#ifdef __CUDA_ARCH__
    *(double *)p = v;
#else
    memcpy(p, &v, 8);
#endif
}

// Wide records (engine.h): row k of a task's output, as bucket_emit counts
// them, is a value of the record at rec when k < wk (the record's basic
// methods come first: pol->plain[0..nwide)), else row ws + k - wk of the
// task's slots (after the record's ws slots) through the sink S.  The
// record stores the methods in keep (all of its mask for a wide record, the
// kept ones for a packed one), in method order from byte off0 on.  wk = ws
// = 0: no record, every row through S.
template <class S>
struct sink_wide {
    S base;
    struct ga_agg *rec;           // the task's first slot
    uint64_t wk, ws;
    unsigned keep;
    uint32_t off0;
    __host__ __device__ void put(uint64_t k, uint32_t metric, ga_method_t m, int64_t g, int64_t b,
                                 double val) const
    {
        if (k < wk) {
            unsigned bit = 1u << (GA_M_BASE(m) - GA_M_MEAN);
            if (keep & bit)
                wide_st8((char *)rec + off0 + 8 * gk_wide_count(keep & (bit - 1)), val);
        } else {
            base.put(ws + k - wk, metric, m, g, b, val);
        }
    }
};

// 16 bytes, in two 8-byte words.
__host__ __device__ inline void wide_st16(void *p, uint64_t lo, uint64_t hi)
{
#ifdef __CUDA_ARCH__
    *(ulonglong2 *)p = make_ulonglong2(lo, hi);
#else
    memcpy(p, &lo, 8);
    memcpy((char *)p + 8, &hi, 8);
#endif
}

// A record's header (its padding bytes 0), and 0 in the unused values of
// its last slot: packed (pk; n points, engine.h) or wide.
__host__ __device__ inline void wide_head(struct ga_agg *rec, uint32_t metric, int64_t g, int64_t b,
                                          uint64_t n, unsigned mask, uint64_t ws, int pk)
{
    if (!ws)
        return;
    uint64_t k0;                  // the first unused value, from byte 16
    if (pk) {
        uint64_t tag = (uint64_t)(GA_M_PACKED | mask) | n << 16;
        wide_st16(rec, (uint64_t)metric | tag << 32,
                  (uint64_t)(g / 1000000000) | (uint64_t)(b / 1000000000) << 32);
        k0 = gk_wide_count(gk_packed_kept(mask));
    } else {
        double m = (double)mask;
        uint64_t mb;
        memcpy(&mb, &m, 8);
        wide_st16(rec, (uint64_t)metric | (uint64_t)GA_M_WIDE << 32, (uint64_t)g);
        wide_st16((char *)rec + 16, (uint64_t)b, mb);
        k0 = 2 + gk_wide_count(mask);
    }
    for (uint64_t k = k0; k < 4 * ws - 2; k++)
        wide_st8((char *)rec + 16 + 8 * k, 0.0);
}

// The std chain about `mean` (the CPU's: d = x - mean, ss += d * d left to
// right, no FMA), carried on from ss over x(j..n).
template <class X>
__host__ __device__ inline double ss_chain(X x, uint64_t j, uint64_t n, double mean, double ss)
{
    for (; j < n; j++) {
        double d = x(j) - mean;
        ss = gk_add(ss, gk_mul(d, d));
    }
    return ss;
}

// The std chain over x(0..n).
template <class X>
__host__ __device__ double bucket_ss(X x, uint64_t n, double mean)
{
    return ss_chain(x, 0, n, mean, 0.0);
}

// A bucket's accumulators, as agg_kern_bucket keeps them: sum from 0.0
// adding x(0), x(1), ... (0.0 when no method needs it), min/max from x(0)
// comparing x(1), x(2), ... (x(0) when none needs them).
struct bacc {
    double sum, x0, mn, mx;
    // Start them at x0 = x(0) (sum: 0.0 + x0, the CPU's first addition).
    __host__ __device__ void start(double x, unsigned need)
    {
        x0 = mn = mx = x;
        sum = (need & GA_NEED_SUM) ? gk_add(0.0, x) : 0.0;
    }
    // Carry them on over x(j..n), j >= 1.  FUSE: sum and min/max in one
    // pass when both are needed, else one pass each; every accumulator sees
    // the same operations in the same order either way (the same bits).
    template <bool FUSE, class X>
    __host__ __device__ void eat(X x, uint64_t j, uint64_t n, unsigned need)
    {
        if (FUSE && (need & GA_NEED_SUM) && (need & GA_NEED_MINMAX)) {
            for (; j < n; j++) {
                double y = x(j);
                sum = gk_add(sum, y);
                mn = y < mn ? y : mn;
                mx = y > mx ? y : mx;
            }
            return;
        }
        if (need & GA_NEED_SUM)
            for (uint64_t i = j; i < n; i++)
                sum = gk_add(sum, x(i));
        if (need & GA_NEED_MINMAX)
            for (uint64_t i = j; i < n; i++) {
                double y = x(i);
                mn = y < mn ? y : mn;
                mx = y > mx ? y : mx;
            }
    }
};

// agg_kern_bucket's rows over x(0..n) from its accumulators a, row j written
// as out.put(k0 + j, ...); returns the count.  ss(mean) gives the std chain
// (bucket_ss, or the long-task kernel's), asked only for a std row.
template <class X, class SS, class S>
__host__ __device__ uint64_t bucket_emit(X x, const bacc &a, const SS &ss, uint64_t n, int64_t min_pos,
                                         const ga_method_t *ms, int nm, const double *s, uint32_t metric,
                                         int64_t g, int64_t b, int allow_std, int allow_other,
                                         const S &out, uint64_t k0)
{
    uint64_t nr = 0;
    for (int k = 0; k < nm; k++) {
        ga_method_t m = ms[k];
        int base = GA_M_BASE(m);
        double val;
        if (base == GA_M_STD) {
            if (n < 2 || !allow_std)
                continue;
            val = sqrt(ss(a.sum / (double)n) / (double)(n - 1));
        } else {
            if (!allow_other)
                continue;
            switch (base) {
            case GA_M_MEAN: val = a.sum / (double)n; break;
            case GA_M_SUM: val = a.sum; break;
            case GA_M_MIN: val = a.mn; break;
            case GA_M_MAX: val = a.mx; break;
            case GA_M_COUNT: val = (double)n; break;
            case GA_M_FIRST: val = a.x0; break;
            case GA_M_LAST: val = x(n - 1); break;
            case GA_M_MEDIAN: {
                uint64_t f = (n - 1) - n / 2, c = f + ((n % 2) + 1) % 2;
                val = (s[f] + s[c]) / 2.0;
                break;
            }
            default:
                val = quantile(s, n, min_pos, GA_M_PCT_N(m));
                break;
            }
        }
        out.put(k0 + nr++, metric, m, g, b, val);
    }
    return nr;
}

template <class X>
struct ss_of {                    // bucket_emit's ss: the chain over x
    X x;
    uint64_t n;
    __host__ __device__ double operator()(double mean) const { return bucket_ss(x, n, mean); }
};

// agg_kern_bucket over x(0..n), row j written as out.put(k0 + j, ...);
// returns the count.  FUSE: bacc::eat's one pass for sum and min/max.
template <bool FUSE, class X, class S>
__host__ __device__ uint64_t bucket(X x, uint64_t n, int64_t min_pos, const ga_method_t *ms, int nm,
                                    unsigned need, const double *s, uint32_t metric, int64_t g,
                                    int64_t b, int allow_std, int allow_other, const S &out,
                                    uint64_t k0)
{
    bacc a;
    a.start((need & GA_NEED_VALUES) ? x(0) : 0.0, need);   // count, median, Npct: no point read
    a.template eat<FUSE>(x, 1, n, need);
    return bucket_emit(x, a, ss_of<X>{ x, n }, n, min_pos, ms, nm, s, metric, g, b, allow_std,
                       allow_other, out, k0);
}

// What the rows kernels share about the tasks: each runs a task through
// task_of() below and gk_bucket.cu's task_run() (a task's row count is
// known before its rows are written).
struct rows_f {
    gk_view v;
    const gk_task *tasks;
    const uint64_t *off;
    const double *sorted;
    struct ga_agg *rows;
    uint64_t long_min;            // tasks of at least this many points: rows_long's
    unsigned long long *long_list;   // [0] count, then those tasks (any order)
    unsigned long long *mid_list;    // the warp kernel's tasks too long to stage (NULL: run
                                     // where they fall): [0] count, then the tasks (rows_mid)
    // Task i is the long-task kernel's (rows_long), not this kernel's.
    __host__ __device__ bool is_long(size_t i) const { return tasks[i].hi - tasks[i].lo >= long_min; }
    // List task i for rows_long, or for rows_mid.
    __host__ __device__ void put_long(size_t i) const { list_put(long_list, i); }
    __host__ __device__ void put_mid(size_t i) const { list_put(mid_list, i); }
    __host__ __device__ static void list_put(unsigned long long *list, size_t i)
    {
#ifdef __CUDA_ARCH__
        unsigned long long k = atomicAdd(&list[0], 1ULL);
#else
        unsigned long long k = list[0]++;
#endif
        list[1 + k] = i;
    }
    // Task i reads points of the merged windows: a method other than count,
    // median and Npct (those read the length and the sorted copy only).
    __host__ __device__ bool reads_values(size_t i) const
    {
        const gk_task &tk = tasks[i];
        const struct agg_pol *pol = &v.pols[v.slot_pol[v.tslot[tk.t]]];
        return (tk.plain && pol->nplain && (pol->plain_need & GA_NEED_VALUES)) ||
               (pol->nrate && (pol->rate_need & GA_NEED_VALUES));
    }
};

// A task, step by step: its policy, bucket, parts and output.
struct tparts {
    const struct agg_pol *pol;
    uint32_t metric;
    int64_t g, b;
    uint64_t row_off;
    uint64_t start, end;          // points [start, end) of m_val the task reads
    uint64_t plo, pn, rlo, rn;    // plain / rate part: first point (absolute), count
    int64_t pmin, rmin;
    int hasp, pas, pao, hasr, ras, rao;
    unsigned wmask;               // the wide record of the plain part (0: none)
    uint32_t wk, ws;              // its values and slots (gk_wide_slots)
    int wpk;                      // packed (engine.h)
};

__host__ __device__ inline tparts task_of(const rows_f &fn, size_t i)
{
    const gk_task &tk = fn.tasks[i];
    const gk_view &v = fn.v;
    tparts p;
    uint32_t slot = v.tslot[tk.t];
    p.pol = &v.pols[v.slot_pol[slot]];
    const gk_ctx &c = v.ctx[(size_t)tk.t * v.D + tk.d];
    int64_t span = p.pol->p.defs[tk.d].timespan_ns;
    p.g = p.pol->p.defs[tk.d].granularity_ns;
    p.b = tk.b;
    p.metric = v.slot_id[slot];
    p.row_off = tk.row_off;
    uint64_t m0 = v.m_off[tk.t];
    p.start = m0 + (tk.lo ? tk.lo - 1 : 0);   // the stretch it reads: rate: reads lo - 1
    p.end = m0 + tk.hi;
    p.hasp = tk.plain && p.pol->nplain;
    p.plo = m0 + tk.lo;
    p.pn = tk.hi - tk.lo;
    p.pmin = (int64_t)tk.lo - c.base;
    p.pas = gk_allowed(tk.b, c.last_std, span);
    p.pao = gk_allowed(tk.b, c.last_plain, span);
    uint64_t dlo = tk.lo > (uint64_t)c.dfirst ? tk.lo : (uint64_t)c.dfirst;   // dfirst >= 1
    p.hasr = p.pol->nrate && dlo < tk.hi;
    p.rlo = m0 + dlo;
    p.rn = tk.hi - dlo;
    p.rmin = (int64_t)dlo - c.fd;
    p.ras = gk_allowed(tk.b, c.last_rstd, span);
    p.rao = gk_allowed(tk.b, c.last_rate, span);
    p.wmask = p.hasp ? gk_wide_mask(p.pol, v.wide, p.pn, p.pas, p.pao) : 0;
    p.wk = gk_wide_count(p.wmask);
    p.wpk = gk_wide_packs(p.pn, p.g, p.b);
    p.ws = gk_wide_slots(p.wmask, p.wpk);
    return p;
}

// Part q (0 plain, 1 rate:) of task i's sorted copy; NULL when the kernel
// was given none (no method of the launch sorts: sortoff is then not read).
__host__ __device__ inline const double *task_sorted(const rows_f &fn, size_t i, int q)
{
    return fn.sorted ? fn.sorted + fn.off[2 * i + q] : NULL;
}

// The task's output as bucket_emit's rows see it, over the sink S of its
// plain rows; task_sink also writes the record's header (when it has one).
template <class S>
__host__ __device__ inline sink_wide<S> wide_sink(const tparts &p, struct ga_agg *rec, const S &base)
{
    return sink_wide<S>{ base, rec, p.wk, p.ws, p.wpk ? gk_packed_kept(p.wmask) : p.wmask,
                         p.wpk ? 16u : 32u };
}
template <class S>
__host__ __device__ inline sink_wide<S> task_sink(const tparts &p, struct ga_agg *rec, const S &base)
{
    wide_head(rec, p.metric, p.g, p.b, p.pn, p.wmask, p.ws, p.wpk);
    return wide_sink(p, rec, base);
}

// Task i's rows through the sink out; point j (absolute) is base[j -
// base_lo].  Sum and min/max in one pass (bucket<true>).
template <class S>
__host__ __device__ inline void task_run(const rows_f &fn, size_t i, const tparts &p, const double *base,
                                         uint64_t base_lo, const S &out)
{
    uint64_t nr = 0;
    if (p.hasp)
        nr = bucket<true>(plain_x{ base + (p.plo - base_lo) }, p.pn, p.pmin, p.pol->plain,
                          p.pol->nplain, p.pol->plain_need, task_sorted(fn, i, 0), p.metric,
                          p.g, p.b, p.pas, p.pao, out, 0);
    if (p.hasr)
        bucket<true>(rate_x{ base + (p.rlo - base_lo) }, p.rn, p.rmin, p.pol->rate, p.pol->nrate,
                     p.pol->rate_need, task_sorted(fn, i, 1), p.metric, p.g, p.b, p.ras,
                     p.rao, out, nr);
}

} // namespace
