// blackscholes_bench.cu — ga_bs_bench_run: the job kernel against an SDK-style
// baseline (float, one option per thread, grid-stride, 128-thread blocks),
// same device, same data, same timing.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "gpu/cuda/cuda_check.cuh"
#include "tools/bench/cuda/bench_time.cuh"
#include "gpu/jobs/blackscholes/blackscholes.cuh"
#include "gpu/jobs/blackscholes/blackscholes_body.cuh"
#include "tools/bench/cuda/bench_hooks.h"

namespace {

__global__ void sdk_baseline(float *__restrict__ C, float *__restrict__ P, const float *__restrict__ S,
                             const float *__restrict__ X, const float *__restrict__ T, float R, float V, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x)
        ga_bs_body(C[i], P[i], S[i], X[i], T[i], R, V);
}

struct Set {
    float *a[5] = { nullptr, nullptr, nullptr, nullptr, nullptr };   // S X T call put
};

struct B {
    std::vector<Set> sets;
    cudaStream_t s = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
};

template <typename F>
int time_it(B *b, int reps, int per_rep, F launch, double *ms)
{
    return ga_bench_time(b->s, b->e0, b->e1, 1, reps, per_rep, launch, ms);
}

int l1_of(B *b, int64_t n, const double *rc, const double *rp, double *l1)
{
    std::vector<float> c(n), p(n);
    CUDA_CHECK(cudaMemcpy(c.data(), b->sets[0].a[3], n * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(p.data(), b->sets[0].a[4], n * 4, cudaMemcpyDeviceToHost));
    *l1 = ga_bs_l1_error(c.data(), p.data(), rc, rp, n);
    return 0;
}

int bench(B *b, int device, int64_t n, int reps, ga_bs_bench *o, char *err, size_t errlen)
{
    ga_bs_params p;
    ga_bs_params_default(&p);
    p.n = n;
    const float R = (float)p.riskfree, V = (float)p.volatility;
    const size_t bytes = (size_t)n * 4;
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&b->e0));
    CUDA_CHECK(cudaEventCreate(&b->e1));
    int l2 = 0, sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    int nsets = (int)std::min<int64_t>(8, std::max<int64_t>(2, (4ll * l2) / (5 * (int64_t)bytes) + 1));
    b->sets.resize(nsets);
    for (auto &st : b->sets) {
        for (int k = 0; k < 5; k++)
            CUDA_CHECK(cudaMalloc(&st.a[k], bytes));
        if (int rc = ga_bs_generate_launch(st.a[0], st.a[1], st.a[2], n, p.seed, b->s))
            return rc;
    }
    const int per_rep = std::max(nsets, 8);
    int rc = time_it(b, reps, per_rep, [&](int i) -> int {
        Set &st = b->sets[i % nsets];
        return ga_bs_launch(st.a[0], st.a[1], st.a[2], st.a[3], st.a[4], n, R, V, b->s);
    }, &o->ours_ms);
    if (rc)
        return rc;
    // CPU reference on the generated options.
    std::vector<float> S(n), X(n), T(n);
    std::vector<double> rcall(n), rput(n);
    ga_bs_generate(S.data(), X.data(), T.data(), n, p.seed);
    if ((rc = ga_bs_cpu(&p, S.data(), X.data(), T.data(), rcall.data(), rput.data(), 0, err, errlen)))
        return rc;
    CUDA_CHECK(cudaStreamSynchronize(b->s));
    if ((rc = l1_of(b, n, rcall.data(), rput.data(), &o->ours_l1)))
        return rc;
    const int grid = sms * 16;   // 128-thread blocks, grid-stride
    rc = time_it(b, reps, per_rep, [&](int i) -> int {
        Set &st = b->sets[i % nsets];
        sdk_baseline<<<grid, 128, 0, b->s>>>(st.a[3], st.a[4], st.a[0], st.a[1], st.a[2], R, V, n);
        CUDA_CHECK(cudaGetLastError());
        return 0;
    }, &o->sdk_ms);
    if (rc)
        return rc;
    CUDA_CHECK(cudaStreamSynchronize(b->s));
    if ((rc = l1_of(b, n, rcall.data(), rput.data(), &o->sdk_l1)))
        return rc;
    o->ours_gbs = 20.0 * n / (o->ours_ms * 1e6);
    o->sdk_gbs = 20.0 * n / (o->sdk_ms * 1e6);
    o->ours_gopts = n / (o->ours_ms * 1e6);
    o->sdk_gopts = n / (o->sdk_ms * 1e6);
    return 0;
}

int cleanup(B *b)
{
    int rc = 0;
    for (auto &st : b->sets)
        for (int k = 0; k < 5; k++)
            if (st.a[k] && cudaFree(st.a[k]) != cudaSuccess)
                rc = GA_ECUDA;
    if (b->e0)
        CUDA_CHECK(cudaEventDestroy(b->e0));
    if (b->e1)
        CUDA_CHECK(cudaEventDestroy(b->e1));
    if (b->s)
        CUDA_CHECK(cudaStreamDestroy(b->s));
    return rc;
}

}  // namespace

extern "C" int ga_bs_bench_run(int device, int64_t n, int reps, struct ga_bs_bench *out, char *err, size_t errlen)
{
    if (n < 1 || n > GA_BS_N_MAX) {
        snprintf(err, errlen, "n must be in 1..%lld, got %lld", (long long)GA_BS_N_MAX, (long long)n);
        return GA_EBADARG;
    }
    memset(out, 0, sizeof *out);
    B b;
    int rc = bench(&b, device, n, reps < 1 ? 1 : reps, out, err, errlen);
    int crc = cleanup(&b);
    if (!rc)
        rc = crc;
    if (rc == GA_ECUDA)
        snprintf(err, errlen, "a CUDA call failed (logged as cuda_error with file and line)");
    return rc;
}
