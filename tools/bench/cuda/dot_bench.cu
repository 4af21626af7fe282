// dot_bench.cu — ga_dot_bench_run: our dot against cuBLAS (cublasSdot /
// cublasDdot, loaded with dlopen so that nothing links against cuBLAS) and the
// device-to-device copy ceiling, all in one process on one device.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "gpu/cuda/cuda_check.cuh"
#include "tools/bench/cuda/bench_time.cuh"
#include "gpu/jobs/dot/dot.cuh"
#include "tools/bench/cuda/bench_hooks.h"

namespace {

// The few cuBLAS v2 entry points the benchmark calls (ABI: handle is a pointer,
// status an int; pointer mode DEVICE = 1).
typedef int (*create_fn)(void **);
typedef int (*destroy_fn)(void *);
typedef int (*setstream_fn)(void *, cudaStream_t);
typedef int (*setptr_fn)(void *, int);
typedef int (*sdot_fn)(void *, int, const float *, int, const float *, int, float *);
typedef int (*ddot_fn)(void *, int, const double *, int, const double *, int, double *);

struct Cublas {
    void *lib = nullptr, *h = nullptr;
    create_fn create;
    destroy_fn destroy;
    setstream_fn setstream;
    setptr_fn setptr;
    sdot_fn sdot;
    ddot_fn ddot;
};

bool cublas_open(Cublas *c, cudaStream_t s)
{
    const char *names[] = { "libcublas.so.13", "libcublas.so.12", "libcublas.so" };
    for (const char *n : names)
        if ((c->lib = dlopen(n, RTLD_NOW | RTLD_LOCAL)))
            break;
    if (!c->lib)
        return false;
    c->create = (create_fn)dlsym(c->lib, "cublasCreate_v2");
    c->destroy = (destroy_fn)dlsym(c->lib, "cublasDestroy_v2");
    c->setstream = (setstream_fn)dlsym(c->lib, "cublasSetStream_v2");
    c->setptr = (setptr_fn)dlsym(c->lib, "cublasSetPointerMode_v2");
    c->sdot = (sdot_fn)dlsym(c->lib, "cublasSdot_v2");
    c->ddot = (ddot_fn)dlsym(c->lib, "cublasDdot_v2");
    if (!c->create || !c->destroy || !c->setstream || !c->setptr || !c->sdot || !c->ddot)
        return false;
    if (c->create(&c->h) != 0)
        return false;
    return c->setstream(c->h, s) == 0 && c->setptr(c->h, 1) == 0;
}

__global__ void fill_kernel(float *f, double *d, int64_t n, uint64_t seed)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull + seed;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        double v = (double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;   // [-1, 1)
        if (f)
            f[i] = (float)v;
        else
            d[i] = v;
    }
}

struct Bufs {
    std::vector<void *> x, y;
    void *ws = nullptr, *out = nullptr, *cp = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    cudaStream_t s = nullptr;
    Cublas cb;
};

template <typename F>
int time_it(Bufs *b, int reps, int per_rep, F launch, double *ms)
{
    return ga_bench_time(b->s, b->e0, b->e1, 3, reps, per_rep, launch, ms);
}

int bench(Bufs *b, int device, int dtype, int64_t n, int reps, int block, ga_dot_bench *o, char *err, size_t errlen)
{
    const size_t es = ga_dot_elem_size(dtype), bytes = (size_t)n * es;
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&b->e0));
    CUDA_CHECK(cudaEventCreate(&b->e1));
    int l2 = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    // Rotate among enough vector pairs that one pass over all of them is >= 4x L2.
    int sets = (int)std::min<int64_t>(16, std::max<int64_t>(1, (4ll * l2 + 2 * bytes - 1) / (2 * bytes)));
    for (int i = 0; i < sets; i++) {
        void *x, *y;
        CUDA_CHECK(cudaMalloc(&x, bytes));
        b->x.push_back(x);
        CUDA_CHECK(cudaMalloc(&y, bytes));
        b->y.push_back(y);
        fill_kernel<<<1024, 256, 0, b->s>>>(dtype == GA_DOT_F32 ? (float *)x : nullptr, (double *)x, n, 2 * i + 1);
        fill_kernel<<<1024, 256, 0, b->s>>>(dtype == GA_DOT_F32 ? (float *)y : nullptr, (double *)y, n, 2 * i + 2);
        CUDA_CHECK(cudaGetLastError());
    }
    const size_t wsb = ga_dot_workspace_bytes(device);
    CUDA_CHECK(cudaMalloc(&b->ws, wsb));
    CUDA_CHECK(cudaMemsetAsync(b->ws, 0, wsb, b->s));
    CUDA_CHECK(cudaMalloc(&b->out, 16 * (size_t)sets));
    const int per_rep = std::max(sets, 8);
    o->block = block ? block : 256;
    int rc = time_it(b, reps, per_rep, [&](int i) -> int {
        return ga_dot_launch(dtype, b->x[i % sets], b->y[i % sets], n, block, b->ws, (double *)b->out + i % sets, b->s);
    }, &o->ours_ms);
    if (rc)
        return rc;
    CUDA_CHECK(cudaMemcpyAsync(&o->ours_val, b->out, 8, cudaMemcpyDeviceToHost, b->s));
    CUDA_CHECK(cudaStreamSynchronize(b->s));
    o->ours_gbs = 2.0 * bytes / (o->ours_ms * 1e6);

    o->cublas_ms = -1;
    o->cublas_gbs = 0;
    o->cublas_val = 0;
    if (cublas_open(&b->cb, b->s) && n <= 0x7fffffff) {
        rc = time_it(b, reps, per_rep, [&](int i) -> int {
            int st = dtype == GA_DOT_F32
                ? b->cb.sdot(b->cb.h, (int)n, (const float *)b->x[i % sets], 1, (const float *)b->y[i % sets], 1,
                             (float *)b->out + 2 * (i % sets))
                : b->cb.ddot(b->cb.h, (int)n, (const double *)b->x[i % sets], 1, (const double *)b->y[i % sets], 1,
                             (double *)b->out + i % sets);
            return st == 0 ? 0 : GA_ECUDA;
        }, &o->cublas_ms);
        if (rc)
            return rc;
        if (dtype == GA_DOT_F32) {
            float f;
            CUDA_CHECK(cudaMemcpyAsync(&f, b->out, 4, cudaMemcpyDeviceToHost, b->s));
            CUDA_CHECK(cudaStreamSynchronize(b->s));
            o->cublas_val = f;
        } else {
            CUDA_CHECK(cudaMemcpyAsync(&o->cublas_val, b->out, 8, cudaMemcpyDeviceToHost, b->s));
            CUDA_CHECK(cudaStreamSynchronize(b->s));
        }
        o->cublas_gbs = 2.0 * bytes / (o->cublas_ms * 1e6);
    }

    // Copy ceiling: x of set 0 (and y) -> a fresh buffer, as many bytes as the dot reads.
    CUDA_CHECK(cudaMalloc(&b->cp, bytes));
    rc = time_it(b, reps, per_rep, [&](int i) -> int {
        CUDA_CHECK(cudaMemcpyAsync(b->cp, b->x[i % sets], bytes, cudaMemcpyDeviceToDevice, b->s));
        return 0;
    }, &o->copy_ms);
    if (rc)
        return rc;
    o->copy_gbs = 2.0 * bytes / (o->copy_ms * 1e6);

    // CPU reference on set 0.
    void *hx = malloc(bytes), *hy = malloc(bytes);
    if (!hx || !hy) {
        free(hx);
        free(hy);
        return GA_ENOMEM;
    }
    rc = 0;
    if (cudaMemcpy(hx, b->x[0], bytes, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hy, b->y[0], bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        rc = GA_ECUDA;
    } else {
        ga_dot_params p = { dtype, n };
        rc = ga_dot_cpu(&p, hx, hy, &o->ref_val, nullptr, 0, err, errlen);
    }
    free(hx);
    free(hy);
    // Values of set 0 for ours and cuBLAS.
    CUDA_CHECK(cudaMemcpy(&o->ours_val, b->out, 8, cudaMemcpyDeviceToHost));
    return rc;
}

int cleanup(Bufs *b)
{
    int rc = 0;
    for (void *p : b->x)
        if (cudaFree(p) != cudaSuccess)
            rc = GA_ECUDA;
    for (void *p : b->y)
        if (cudaFree(p) != cudaSuccess)
            rc = GA_ECUDA;
    if (b->ws)
        CUDA_CHECK(cudaFree(b->ws));
    if (b->out)
        CUDA_CHECK(cudaFree(b->out));
    if (b->cp)
        CUDA_CHECK(cudaFree(b->cp));
    if (b->cb.h)
        b->cb.destroy(b->cb.h);
    if (b->e0)
        CUDA_CHECK(cudaEventDestroy(b->e0));
    if (b->e1)
        CUDA_CHECK(cudaEventDestroy(b->e1));
    if (b->s)
        CUDA_CHECK(cudaStreamDestroy(b->s));
    return rc;
}

}  // namespace

extern "C" int ga_dot_bench_run(int device, int dtype, int64_t n, int reps, int block, struct ga_dot_bench *out,
                                char *err, size_t errlen)
{
    ga_dot_params p = { dtype, n };
    int rc = ga_dot_validate(&p, err, errlen);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    Bufs b;
    rc = bench(&b, device, dtype, n, reps < 1 ? 1 : reps, block, out, err, errlen);
    int crc = cleanup(&b);
    if (!rc)
        rc = crc;
    if (rc == GA_ECUDA)
        snprintf(err, errlen, "a CUDA call failed (logged as cuda_error with file and line)");
    return rc;
}
