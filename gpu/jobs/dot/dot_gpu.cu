// dot_gpu.cu — the dot job on the GPU: one pass, grid-stride 16-byte loads,
// products accumulated in double, warp-shuffle block reduction, last block
// adds the per-block partials in a fixed order (deterministic).
#include <stdio.h>

#include "gpu/cuda/cuda_check.cuh"
#include "gpu/jobs/job_cuda.cuh"
#include "gpu/jobs/dot/dot.cuh"

namespace {

constexpr int kMaxBlocksPerSm = 8;    // partials in the workspace: SMs * this
constexpr int kUnroll = 4;            // independent 16-byte loads per array in flight

struct Ws {
    unsigned int ticket;
    unsigned int pad_[3];
    double partial[1];                // [grid]
};

__device__ __forceinline__ double warp_sum(double v)
{
    // Adjacent pairwise: lane 0 ends with ((v0+v1)+(v2+v3))+...
#pragma unroll
    for (int off = 1; off < 32; off <<= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

template <int BLOCK>
__device__ __forceinline__ double block_sum(double v, double *sh)
{
    constexpr int W = BLOCK / 32;
    v = warp_sum(v);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    double r = 0.0;
    if (warp == 0) {
        r = lane < W ? sh[lane] : 0.0;
        r = warp_sum(r);
    }
    __syncthreads();
    return r;   // valid in thread 0
}

__device__ __forceinline__ double prod(float a, float b) { return (double)a * (double)b; }
__device__ __forceinline__ double prod(double a, double b) { return a * b; }
__device__ __forceinline__ double prod4(float4 a, float4 b)
{
    return ((prod(a.x, b.x) + prod(a.y, b.y)) + (prod(a.z, b.z) + prod(a.w, b.w)));
}
__device__ __forceinline__ double prod4(double2 a, double2 b) { return prod(a.x, b.x) + prod(a.y, b.y); }

template <typename T> struct Vec;
template <> struct Vec<float> { using type = float4; static constexpr int W = 4; };
template <> struct Vec<double> { using type = double2; static constexpr int W = 2; };

template <int BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) dot_kernel(const T *__restrict__ x, const T *__restrict__ y,
                                                    int64_t n, int vec_ok, Ws *ws, double *out)
{
    using V = typename Vec<T>::type;
    constexpr int W = Vec<T>::W;
    __shared__ double sh[BLOCK / 32];
    __shared__ bool last;
    const int64_t stride = (int64_t)gridDim.x * BLOCK;
    const int64_t tid = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
    double acc = 0.0;
    if (vec_ok) {
        const V *xv = reinterpret_cast<const V *>(x);
        const V *yv = reinterpret_cast<const V *>(y);
        const int64_t nv = n / W;
        int64_t i = tid;
        for (; i + (kUnroll - 1) * stride < nv; i += kUnroll * stride) {
            V a[kUnroll], b[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                a[u] = __ldcs(xv + i + u * stride);
                b[u] = __ldcs(yv + i + u * stride);
            }
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                acc += prod4(a[u], b[u]);
        }
        for (; i < nv; i += stride)
            acc += prod4(__ldcs(xv + i), __ldcs(yv + i));
        for (int64_t j = nv * W + tid; j < n; j += stride)
            acc += prod(x[j], y[j]);
    } else {
        for (int64_t j = tid; j < n; j += stride)
            acc += prod(x[j], y[j]);
    }
    double b = block_sum<BLOCK>(acc, sh);
    if (threadIdx.x == 0) {
        ws->partial[blockIdx.x] = b;
        __threadfence();
        last = atomicAdd(&ws->ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    double s = 0.0;
    for (unsigned k = threadIdx.x; k < gridDim.x; k += BLOCK)
        s += __ldcg(&ws->partial[k]);
    s = block_sum<BLOCK>(s, sh);
    if (threadIdx.x == 0) {
        *out = s;
        ws->ticket = 0;
    }
}

struct DevInfo {
    int sms;
};

int dev_sms(int *sms)
{
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
    return 0;
}

template <int BLOCK, typename T>
int launch_t(const T *x, const T *y, int64_t n, Ws *ws, double *out, cudaStream_t s)
{
    int sms = 0, per_sm = 0;
    int rc = dev_sms(&sms);
    if (rc)
        return rc;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dot_kernel<BLOCK, T>, BLOCK, 0));
    if (per_sm > kMaxBlocksPerSm)
        per_sm = kMaxBlocksPerSm;
    if (per_sm < 1)
        per_sm = 1;
    const int vec_ok = ((uintptr_t)x % 16 == 0) && ((uintptr_t)y % 16 == 0);
    const int64_t per_block = (int64_t)BLOCK * Vec<T>::W;
    int64_t grid = (n + per_block - 1) / per_block;
    if (grid > (int64_t)sms * per_sm)
        grid = (int64_t)sms * per_sm;
    if (grid < 1)
        grid = 1;
    dot_kernel<BLOCK, T><<<(unsigned)grid, BLOCK, 0, s>>>(x, y, n, vec_ok, ws, out);
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

template <typename T>
int launch_b(int block, const T *x, const T *y, int64_t n, Ws *ws, double *out, cudaStream_t s)
{
    switch (block) {
    case 128: return launch_t<128, T>(x, y, n, ws, out, s);
    case 0:
    case 256: return launch_t<256, T>(x, y, n, ws, out, s);
    case 512: return launch_t<512, T>(x, y, n, ws, out, s);
    case 1024: return launch_t<1024, T>(x, y, n, ws, out, s);
    default: return GA_EBADARG;
    }
}

struct Run {
    void *dx = nullptr, *dy = nullptr, *ws = nullptr;
    double *dout = nullptr;
    cudaStream_t s = nullptr;
};

int run_dot(Run *r, int device, const ga_dot_params *p, const void *x, const void *y, double *out)
{
    const size_t bytes = (size_t)p->n * ga_dot_elem_size(p->dtype);
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking));
    int xdev = 0, ydev = 0, rc;
    if ((rc = job_cuda_is_device_ptr(x, &xdev)) || (rc = job_cuda_is_device_ptr(y, &ydev)))
        return rc;
    const void *ux = x, *uy = y;
    if (!xdev) {
        CUDA_CHECK(cudaMalloc(&r->dx, bytes));
        CUDA_CHECK(cudaMemcpyAsync(r->dx, x, bytes, cudaMemcpyHostToDevice, r->s));
        ux = r->dx;
    }
    if (!ydev) {
        CUDA_CHECK(cudaMalloc(&r->dy, bytes));
        CUDA_CHECK(cudaMemcpyAsync(r->dy, y, bytes, cudaMemcpyHostToDevice, r->s));
        uy = r->dy;
    }
    const size_t wsb = ga_dot_workspace_bytes(device);
    CUDA_CHECK(cudaMalloc(&r->ws, wsb));
    CUDA_CHECK(cudaMalloc(&r->dout, sizeof(double)));
    CUDA_CHECK(cudaMemsetAsync(r->ws, 0, wsb, r->s));
    if ((rc = ga_dot_launch(p->dtype, ux, uy, p->n, 256, r->ws, r->dout, r->s)))
        return rc;
    CUDA_CHECK(cudaMemcpyAsync(out, r->dout, sizeof(double), cudaMemcpyDeviceToHost, r->s));
    CUDA_CHECK(cudaStreamSynchronize(r->s));
    return 0;
}

}  // namespace

extern "C" size_t ga_dot_workspace_bytes(int device)
{
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms < 1)
        sms = 256;
    return sizeof(Ws) + sizeof(double) * (size_t)sms * kMaxBlocksPerSm;
}

extern "C" int ga_dot_launch(int dtype, const void *dx, const void *dy, int64_t n, int block, void *workspace,
                             double *d_out, cudaStream_t stream)
{
    if (n < 1 || !dx || !dy || !workspace || !d_out)
        return GA_EBADARG;
    Ws *ws = static_cast<Ws *>(workspace);
    if (dtype == GA_DOT_F32)
        return launch_b<float>(block, (const float *)dx, (const float *)dy, n, ws, d_out, stream);
    if (dtype == GA_DOT_F64)
        return launch_b<double>(block, (const double *)dx, (const double *)dy, n, ws, d_out, stream);
    return GA_EBADARG;
}

extern "C" int ga_dot_gpu(int device, const struct ga_dot_params *p, const void *x, const void *y, double *out,
                          char *err, size_t errlen)
{
    int rc = ga_dot_validate(p, err, errlen);
    if (rc)
        return rc;
    if (!x || !y || !out) {
        snprintf(err, errlen, "dot: x, y and out must not be NULL");
        return GA_EBADARG;
    }
    if ((rc = job_cuda_device_check(device, err, errlen)))
        return rc;
    Run r;
    rc = run_dot(&r, device, p, x, y, out);
    int frc = job_cuda_dfree(r.dx) | job_cuda_dfree(r.dy) | job_cuda_dfree(r.ws) | job_cuda_dfree(r.dout);
    if (r.s && cudaStreamDestroy(r.s) != cudaSuccess)
        frc = GA_ECUDA;
    if (!rc && frc)
        rc = GA_ECUDA;
    if (rc == GA_ECUDA)
        snprintf(err, errlen, "a CUDA call failed (logged as cuda_error with file and line)");
    else if (rc == GA_EBADARG)
        snprintf(err, errlen, "dot: bad launch arguments");
    return rc;
}
