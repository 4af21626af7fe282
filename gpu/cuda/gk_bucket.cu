// gk_bucket.cu — the bucket kernels (gk_bucket.cuh).
#include "gpu/cuda/gk_bucket.cuh"

#include <math.h>

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

// agg_kern_bucket over x(0..n), rows written from rows[0]; returns the count.
template <class X>
__host__ __device__ uint64_t bucket(X x, uint64_t n, int64_t min_pos, const ga_method_t *ms, int nm,
                                    unsigned need, const double *s, uint32_t metric, int64_t g,
                                    int64_t b, int allow_std, int allow_other, struct ga_agg *rows)
{
    double sum = 0.0, x0 = x(0), mn = x0, mx = x0;
    if (need & AGG_NEED_SUM)
        for (uint64_t i = 0; i < n; i++)
            sum = gk_add(sum, x(i));
    if (need & AGG_NEED_MINMAX) {
        for (uint64_t i = 1; i < n; i++) {
            double y = x(i);
            mn = y < mn ? y : mn;
            mx = y > mx ? y : mx;
        }
    }
    uint64_t nr = 0;
    for (int k = 0; k < nm; k++) {
        ga_method_t m = ms[k];
        int base = GA_M_BASE(m);
        double val;
        if (base == GA_M_STD) {
            if (n < 2 || !allow_std)
                continue;
            double mean = sum / (double)n, ss = 0.0;
            for (uint64_t i = 0; i < n; i++) {
                double d = x(i) - mean;
                ss = gk_add(ss, gk_mul(d, d));
            }
            val = sqrt(ss / (double)(n - 1));
        } else {
            if (!allow_other)
                continue;
            switch (base) {
            case GA_M_MEAN: val = sum / (double)n; break;
            case GA_M_SUM: val = sum; break;
            case GA_M_MIN: val = mn; break;
            case GA_M_MAX: val = mx; break;
            case GA_M_COUNT: val = (double)n; break;
            case GA_M_FIRST: val = x0; break;
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
        struct ga_agg *r = &rows[nr++];
        r->metric = metric;
        r->method = m;
        r->granularity_ns = g;
        r->ts = b;
        r->value = val;
    }
    return nr;
}

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
        uint64_t np, nr, dlo;
        gk_task_parts(v, tk, &np, &nr, &dlo);
        const double *val = v.m_val + v.m_off[tk.t];
        double *o = out + off[2 * i];
        for (uint64_t k = 0; k < np; k++)
            o[k] = val[tk.lo + k];
        o = out + off[2 * i + 1];
        for (uint64_t k = 0; k < nr; k++)
            o[k] = val[dlo + k] - val[dlo + k - 1];
    }
};

// Rows of task i; point j of the merged windows (absolute index into m_val)
// is base[j - base_lo].
struct rows_f {
    gk_view v;
    const gk_task *tasks;
    const uint64_t *off;
    const double *sorted;
    struct ga_agg *rows;
    __host__ __device__ void run(size_t i, const double *base, uint64_t base_lo) const
    {
        const gk_task &tk = tasks[i];
        uint32_t slot = v.tslot[tk.t];
        const struct agg_pol *pol = &v.pols[v.slot_pol[slot]];
        const gk_ctx &c = v.ctx[(size_t)tk.t * v.D + tk.d];
        int64_t g = pol->p.defs[tk.d].granularity_ns, span = pol->p.defs[tk.d].timespan_ns;
        uint64_t m0 = v.m_off[tk.t];   // indexes stay >= base_lo: no pointer leaves the buffer
        uint32_t metric = v.slot_id[slot];
        struct ga_agg *r = rows + tk.row_off;
        uint64_t nr = 0;
        if (tk.plain && pol->nplain)
            nr += bucket(plain_x{ base + (m0 + tk.lo - base_lo) }, tk.hi - tk.lo, (int64_t)tk.lo - c.base, pol->plain,
                         pol->nplain, pol->plain_need, sorted + off[2 * i], metric, g, tk.b,
                         gk_allowed(tk.b, c.last_std, span), gk_allowed(tk.b, c.last_plain, span), r);
        uint64_t dlo = tk.lo > (uint64_t)c.dfirst ? tk.lo : (uint64_t)c.dfirst;
        if (pol->nrate && dlo < tk.hi)
            bucket(rate_x{ base + (m0 + dlo - base_lo) }, tk.hi - dlo, (int64_t)dlo - c.fd, pol->rate, pol->nrate,
                   pol->rate_need, sorted + off[2 * i + 1], metric, g, tk.b,
                   gk_allowed(tk.b, c.last_rstd, span), gk_allowed(tk.b, c.last_rate, span), r + nr);
    }
    __host__ __device__ void operator()(size_t i) const { run(i, v.m_val, 0); }
};

// The GPU version: a block's 256 tasks usually cover one short stretch of
// the merged windows; the block loads that stretch once, coalesced, into
// shared memory, and each thread then reads its bucket from there (one
// thread a bucket keeps the CPU's left-to-right sums).  A stretch longer
// than the buffer (big buckets) is read from global memory directly.
#define STAGE_CAP 4096

__global__ void __launch_bounds__(GK_THREADS) rows_staged(rows_f fn, size_t t0, size_t t1)
{
    __shared__ double sv[STAGE_CAP];
    __shared__ unsigned long long lo_s, hi_s;
    size_t i = t0 + blockIdx.x * (size_t)GK_THREADS + threadIdx.x;
    if (threadIdx.x == 0) {
        lo_s = ~0ULL;
        hi_s = 0;
    }
    __syncthreads();
    if (i < t1) {
        const gk_task &tk = fn.tasks[i];
        uint64_t m0 = fn.v.m_off[tk.t];
        atomicMin(&lo_s, (unsigned long long)(m0 + (tk.lo ? tk.lo - 1 : 0)));
        atomicMax(&hi_s, (unsigned long long)(m0 + tk.hi));
    }
    __syncthreads();
    uint64_t lo = lo_s, hi = hi_s;
    int staged = hi > lo && hi - lo <= STAGE_CAP;
    if (staged)
        for (uint64_t k = threadIdx.x; k < hi - lo; k += GK_THREADS)
            sv[k] = fn.v.m_val[lo + k];
    __syncthreads();
    if (i < t1) {
        if (staged)
            fn.run(i, sv, lo);
        else
            fn.run(i, fn.v.m_val, 0);
    }
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

int gk_bucket_rows(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t t0, size_t t1,
                   const uint64_t *sortoff, const double *sorted, struct ga_agg *rows)
{
    rows_f fn{ *v, tasks, sortoff, sorted, rows };
    if (t1 <= t0)
        return 0;
    if (x->emu) {
        for (size_t i = t0; i < t1; i++)
            fn(i);
        return 0;
    }
    size_t blocks = (t1 - t0 + GK_THREADS - 1) / GK_THREADS;
    rows_staged<<<(unsigned)blocks, GK_THREADS, 0, x->s>>>(fn, t0, t1);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}
