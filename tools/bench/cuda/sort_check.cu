// sort_check.cu — ga_cuda_sort_check (gpu/cuda.h): the median / Npct sort's
// two ways (gk_sort.cu: the shared-memory kernel for small parts + CUB for
// long ones, and CUB alone) on the same random tasks, value for value.
//
// The data is made to hit the kernel's edges: parts of 1..8 values, about
// one chunk (32), multiples of 32 and one off, around small_max and past
// it (CUB's side), rate: parts (differences, with their own start) and
// plain parts switched off; values with many ties, -0.0 and +0.0.
#include <string.h>

#include <vector>

#include "gpu/cuda.h"
#include "gpu/cuda/gk_prim.cuh"
#include "gpu/cuda/gk_sort.cuh"
#include "tools/bench/cuda/bench_hooks.h"

namespace {

struct rng_t {
    uint64_t s;
    uint64_t next()
    {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    uint64_t in(uint64_t lo, uint64_t hi) { return lo + next() % (hi - lo + 1); }
};

double value(rng_t &r)
{
    switch (r.next() % 8) {
    case 0: return r.next() % 2 ? 0.0 : -0.0;
    case 1:
    case 2: return (double)((int64_t)r.in(0, 6) - 3);      // ties, and 0.0 (+)
    case 3: return -(double)r.in(0, 2);                      // -0.0, -1, -2
    default: return ((double)(r.next() >> 11) - 4503599627370496.0) * 1e-9 * (double)r.in(1, 1000);
    }
}

uint64_t part_len(rng_t &r, unsigned sm)
{
    switch (r.next() % 10) {
    case 0: case 1: case 2: case 3: return r.in(1, 8);
    case 4: case 5: return r.in(9, 40);
    case 6: return 32 * r.in(1, sm / 32 + 2) + r.in(0, 2) - 1;   // chunk multiples, one off
    case 7: case 8: return sm > 2 ? r.in(sm - 2, sm + 2) : r.in(1, 4);
    default: return r.in((uint64_t)sm + 3, 3 * (uint64_t)sm + 40);
    }
}

struct host_data {
    struct agg_pol pol;
    std::vector<uint32_t> zero32, tslot;
    std::vector<uint64_t> m_off, m_n;
    std::vector<double> val;
    std::vector<gk_ctx> ctx;
    std::vector<gk_task> tasks;
};

int make(host_data &h, const struct ga_cuda_sort_check *c)
{
    struct ga_policy p;
    memset(&p, 0, sizeof p);
    static const char *const ms[] = { "median", "rate:90pct" };
    int rc = ga_policy_add_def(&p, 1000000000LL, 0, 0, NULL);
    if (!rc)
        rc = ga_policy_methods_from_list(&p, ms, 2, NULL);
    if (!rc)
        rc = agg_pol_init(&h.pol, &p);
    if (rc)
        return rc;
    rng_t r{ c->seed * 0x9E3779B97F4A7C15ULL + 1 };
    unsigned sm = c->small_max ? c->small_max : GK_SORT_SMALL_AUTO;
    uint64_t total = c->points ? c->points : 200000;
    for (uint32_t t = 0; h.val.size() < total; t++) {
        uint64_t want = r.in(1, total / 8 + 2), lo = 0;
        h.m_off.push_back(h.val.size());
        h.tslot.push_back(t);
        h.zero32.push_back(0);
        h.ctx.push_back(gk_ctx{ 0, (int64_t)r.in(1, 3), 1, -1, -1, -1, -1 });
        while (lo < want) {
            uint64_t hi = lo + part_len(r, sm);
            h.tasks.push_back(gk_task{ t, 0, (uint16_t)(r.next() % 6 != 0), (int64_t)h.tasks.size(), lo,
                                       hi, 0 });
            lo = hi;
        }
        for (uint64_t k = 0; k < lo; k++)
            h.val.push_back(value(r));
        h.m_n.push_back(lo);
    }
    return 0;
}

// Device (or, emulating, host) copies of everything, and the two runs.
struct dev_mem {
    int emu;
    cudaStream_t s;               // the executor's (non-blocking) stream
    std::vector<void *> all;
    int get(void **p, size_t bytes)
    {
        bytes = bytes ? bytes : 8;
        if (emu) {
            *p = calloc(1, bytes);
            if (!*p)
                return GA_ENOMEM;
        } else {
            CUDA_CHECK(cudaMalloc(p, bytes));
            CUDA_CHECK(cudaMemset(*p, 0, bytes));
        }
        all.push_back(*p);
        return 0;
    }
    template <class T> int put(T **p, const T *src, size_t n)
    {
        int rc = get((void **)p, n * sizeof(T));
        if (rc || !n)
            return rc;
        if (emu)
            memcpy(*p, src, n * sizeof(T));
        else
            CUDA_CHECK(cudaMemcpy(*p, src, n * sizeof(T), cudaMemcpyHostToDevice));
        return 0;
    }
    int read(void *dst, const void *src, size_t bytes)   // after the stream's work
    {
        if (emu) {
            memcpy(dst, src, bytes);
            return 0;
        }
        CUDA_CHECK(cudaStreamSynchronize(s));
        CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
        return 0;
    }
    ~dev_mem()
    {
        if (!emu)
            cudaStreamSynchronize(s);
        for (void *p : all)
            emu ? free(p) : (void)cudaFree(p);
    }
};

#define TRY(call) do { int r_ = (call); if (r_) return r_; } while (0)

int run(struct ga_cuda_sort_check *c, gk_exec *x, const host_data &h)
{
    dev_mem d{ x->emu, x->s, {} };
    size_t M = h.m_off.size(), nt = h.tasks.size();
    struct agg_pol *pol;
    uint32_t *zero32, *tslot;
    uint64_t *m_off, *m_n, *sortlen, *sortoff;
    double *val, *unsorted, *sorted_a, *sorted_b;
    gk_ctx *ctx;
    gk_task *tasks;
    unsigned long long *cnt;
    TRY(d.put(&pol, &h.pol, 1));
    TRY(d.put(&zero32, h.zero32.data(), M));
    TRY(d.put(&tslot, h.tslot.data(), M));
    TRY(d.put(&m_off, h.m_off.data(), M));
    TRY(d.put(&m_n, h.m_n.data(), M));
    TRY(d.put(&val, h.val.data(), h.val.size()));
    TRY(d.put(&ctx, h.ctx.data(), M));
    TRY(d.put(&tasks, h.tasks.data(), nt));
    TRY(d.get((void **)&sortlen, (2 * nt + 1) * 8));
    TRY(d.get((void **)&sortoff, (2 * nt + 1) * 8));
    TRY(d.get((void **)&cnt, 16));
    gk_view v;
    memset(&v, 0, sizeof v);
    v.pols = pol;
    v.slot_pol = zero32;
    v.slot_id = zero32;
    v.tslot = tslot;
    v.m_off = m_off;
    v.m_n = m_n;
    v.m_val = val;
    v.ctx = ctx;
    v.D = 1;
    v.wide = 0;
    TRY(gk_bucket_sortlen(x, &v, tasks, nt, sortlen));   // sortlen[2 nt] stays 0
    TRY(gk_scan_u64(x, sortlen, sortoff, 2 * nt + 1));
    uint64_t NS = 0;
    TRY(d.read(&NS, sortoff + 2 * nt, 8));
    TRY(d.get((void **)&unsorted, NS * 8));
    TRY(d.get((void **)&sorted_a, NS * 8));
    TRY(d.get((void **)&sorted_b, NS * 8));
    gk_sort_cfg split = { c->small_max ? c->small_max : GK_SORT_SMALL_AUTO, NULL, NULL };
    gk_sort_cfg cub = { 0, NULL, NULL };
    gk_sort_counts n;
    TRY(gk_bucket_sort(x, &v, tasks, nt, sortoff, NS, unsorted, sorted_a, sortlen, &split, &n));
    TRY(gk_bucket_sort(x, &v, tasks, nt, sortoff, NS, unsorted, sorted_b, sortlen, &cub, NULL));
    TRY(gk_for(x, NS, gk_bits_differ_f{ sorted_a, sorted_b, cnt }));
    unsigned long long hc[2];
    TRY(d.read(hc, cnt, 16));
    c->values = NS;
    c->small_parts = n.small_parts;
    c->big_parts = n.big_parts;
    c->differ = hc[0];
    c->zero_swaps = hc[1];
    return 0;
}

} // namespace

extern "C" int ga_cuda_sort_check(int device, struct ga_cuda_sort_check *c)
{
    if (c->small_max > GA_CUDA_SORT_SMALL_MAX)
        return GA_EINVAL;
    if (!c->emulate) {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n)
            return GA_ENOGPU;
    }
    host_data h;
    int rc = make(h, c);
    if (rc)
        return rc;
    gk_exec x;
    memset(&x, 0, sizeof x);
    x.emu = c->emulate != 0;
    if (!x.emu) {
        CUDA_CHECK(cudaSetDevice(device));
        CUDA_CHECK(cudaStreamCreateWithFlags(&x.s, cudaStreamNonBlocking));
    }
    rc = run(c, &x, h);
    if (!x.emu) {
        cudaStreamSynchronize(x.s);
        if (x.tmp)
            cudaFree(x.tmp);
        cudaStreamDestroy(x.s);
    }
    return rc;
}
