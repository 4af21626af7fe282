// blackscholes_gpu.cu — the Black-Scholes job on the GPU: 4 options per
// thread step with 16-byte streaming loads/stores, grid-stride.
#include <stdio.h>

#include "gpu/cuda/cuda_check.cuh"
#include "gpu/jobs/job_cuda.cuh"
#include "gpu/jobs/blackscholes/blackscholes.cuh"
#include "gpu/jobs/blackscholes/blackscholes_body.cuh"

namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock) bs_vec4(const float4 *__restrict__ S, const float4 *__restrict__ X,
                                                  const float4 *__restrict__ T, float4 *__restrict__ C,
                                                  float4 *__restrict__ P, int64_t n4, float R, float V)
{
    const int64_t stride = (int64_t)gridDim.x * kBlock;
    for (int64_t i = (int64_t)blockIdx.x * kBlock + threadIdx.x; i < n4; i += stride) {
        const float4 s = __ldcs(S + i), x = __ldcs(X + i), t = __ldcs(T + i);
        float4 c, p;
        ga_bs_body(c.x, p.x, s.x, x.x, t.x, R, V);
        ga_bs_body(c.y, p.y, s.y, x.y, t.y, R, V);
        ga_bs_body(c.z, p.z, s.z, x.z, t.z, R, V);
        ga_bs_body(c.w, p.w, s.w, x.w, t.w, R, V);
        __stcs(C + i, c);
        __stcs(P + i, p);
    }
}

__global__ void __launch_bounds__(kBlock) bs_scalar(const float *__restrict__ S, const float *__restrict__ X,
                                                    const float *__restrict__ T, float *__restrict__ C,
                                                    float *__restrict__ P, int64_t lo, int64_t n, float R, float V)
{
    const int64_t stride = (int64_t)gridDim.x * kBlock;
    for (int64_t i = lo + (int64_t)blockIdx.x * kBlock + threadIdx.x; i < n; i += stride)
        ga_bs_body(C[i], P[i], S[i], X[i], T[i], R, V);
}

__global__ void bs_gen(float *S, float *X, float *T, int64_t n, uint64_t seed)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        S[i] = ga_bs_gen(seed, i, 0, GA_BS_S_LO, GA_BS_S_HI);
        X[i] = ga_bs_gen(seed, i, 1, GA_BS_X_LO, GA_BS_X_HI);
        T[i] = ga_bs_gen(seed, i, 2, GA_BS_T_LO, GA_BS_T_HI);
    }
}

int grid_for(int64_t work, int *grid)
{
    int dev = 0, sms = 0, per_sm = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bs_vec4, kBlock, 0));
    int64_t g = (work + kBlock - 1) / kBlock, cap = (int64_t)sms * (per_sm > 0 ? per_sm : 1);
    *grid = (int)(g < cap ? (g > 0 ? g : 1) : cap);
    return 0;
}

bool aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

struct Run {
    float *in[3] = { nullptr, nullptr, nullptr }, *out[2] = { nullptr, nullptr };
    cudaStream_t s = nullptr;
};

int run_bs(Run *r, int device, const ga_bs_params *p, const float *const host_in[3], float *const host_out[2])
{
    const size_t bytes = (size_t)p->n * sizeof(float);
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking));
    const float *din[3];
    float *dout[2];
    int rc, isdev;
    if (!host_in[0]) {
        for (int k = 0; k < 3; k++) {
            CUDA_CHECK(cudaMalloc(&r->in[k], bytes));
            din[k] = r->in[k];
        }
        if ((rc = ga_bs_generate_launch(r->in[0], r->in[1], r->in[2], p->n, p->seed, r->s)))
            return rc;
    } else {
        for (int k = 0; k < 3; k++) {
            if ((rc = job_cuda_is_device_ptr(host_in[k], &isdev)))
                return rc;
            din[k] = host_in[k];
            if (!isdev) {
                CUDA_CHECK(cudaMalloc(&r->in[k], bytes));
                CUDA_CHECK(cudaMemcpyAsync(r->in[k], host_in[k], bytes, cudaMemcpyHostToDevice, r->s));
                din[k] = r->in[k];
            }
        }
    }
    for (int k = 0; k < 2; k++) {
        if ((rc = job_cuda_is_device_ptr(host_out[k], &isdev)))
            return rc;
        dout[k] = host_out[k];
        if (!isdev) {
            CUDA_CHECK(cudaMalloc(&r->out[k], bytes));
            dout[k] = r->out[k];
        }
    }
    if ((rc = ga_bs_launch(din[0], din[1], din[2], dout[0], dout[1], p->n, (float)p->riskfree,
                           (float)p->volatility, r->s)))
        return rc;
    for (int k = 0; k < 2; k++)
        if (r->out[k])
            CUDA_CHECK(cudaMemcpyAsync(host_out[k], r->out[k], bytes, cudaMemcpyDeviceToHost, r->s));
    CUDA_CHECK(cudaStreamSynchronize(r->s));
    return 0;
}

}  // namespace

extern "C" int ga_bs_generate_launch(float *dS, float *dX, float *dT, int64_t n, uint64_t seed, cudaStream_t s)
{
    if (n < 1 || !dS || !dX || !dT)
        return GA_EBADARG;
    int grid = 0;
    if (int rc = grid_for(n, &grid))
        return rc;
    bs_gen<<<grid, kBlock, 0, s>>>(dS, dX, dT, n, seed);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int ga_bs_launch(const float *dS, const float *dX, const float *dT, float *dCall, float *dPut, int64_t n,
                            float riskfree, float volatility, cudaStream_t s)
{
    if (n < 1 || !dS || !dX || !dT || !dCall || !dPut)
        return GA_EBADARG;
    int64_t lo = 0;
    int grid = 0;
    if (aligned16(dS) && aligned16(dX) && aligned16(dT) && aligned16(dCall) && aligned16(dPut)) {
        const int64_t n4 = n / 4;
        if (n4 > 0) {
            if (int rc = grid_for(n4, &grid))
                return rc;
            bs_vec4<<<grid, kBlock, 0, s>>>((const float4 *)dS, (const float4 *)dX, (const float4 *)dT,
                                            (float4 *)dCall, (float4 *)dPut, n4, riskfree, volatility);
            CUDA_CHECK(cudaGetLastError());
        }
        lo = n4 * 4;
    }
    if (lo < n) {
        if (int rc = grid_for(n - lo, &grid))
            return rc;
        bs_scalar<<<grid, kBlock, 0, s>>>(dS, dX, dT, dCall, dPut, lo, n, riskfree, volatility);
        CUDA_CHECK(cudaGetLastError());
    }
    return 0;
}

extern "C" int ga_bs_gpu(int device, const struct ga_bs_params *p, const float *S, const float *X, const float *T,
                         float *call, float *put, char *err, size_t errlen)
{
    int rc = ga_bs_validate(p, err, errlen);
    if (rc)
        return rc;
    if (!call || !put || !!S != !!X || !!S != !!T) {
        snprintf(err, errlen, "blackscholes: call and put must be given, and S, X, T all or none");
        return GA_EBADARG;
    }
    if ((rc = job_cuda_device_check(device, err, errlen)))
        return rc;
    Run r;
    const float *in[3] = { S, X, T };
    float *out[2] = { call, put };
    rc = run_bs(&r, device, p, in, out);
    int frc = 0;
    for (int k = 0; k < 3; k++)
        frc |= job_cuda_dfree(r.in[k]);
    for (int k = 0; k < 2; k++)
        frc |= job_cuda_dfree(r.out[k]);
    if (r.s && cudaStreamDestroy(r.s) != cudaSuccess)
        frc = GA_ECUDA;
    if (!rc && frc)
        rc = GA_ECUDA;
    if (rc == GA_ECUDA)
        snprintf(err, errlen, "a CUDA call failed (logged as cuda_error with file and line)");
    return rc;
}
