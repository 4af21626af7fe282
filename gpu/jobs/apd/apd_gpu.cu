// apd_gpu.cu — APD fit on the GPU (see apd.h, apd.cuh).
//
// One block per window.  The block loads the window into shared memory and
// sorts it (bitonic, padded with +inf to a power of two), then its threads
// share the work items (θ rank i, chunk of C consecutive grid λs): for each
// other point k, d = |x_k - θ|, ld = ln d, p = exp(λ_j0 ld), r = exp(Δ ld),
// and the C powers d^λ_j0, d^λ_j0+1, ... by p *= r, summed into X⁻ (k < i)
// or X⁺ (k > i).  Consecutive threads take consecutive i of one chunk, so a
// warp reads the same x_k (a shared-memory broadcast).  Each thread keeps its
// best (ℓ, j, i); a block reduction picks the winner with the CPU's order,
// and thread 0 recomputes it exactly (apd_finish, the CPU's code).
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cuda_check.cuh"
#include "gpu/jobs/apd/apd.cuh"
#include "gpu/jobs/job_cuda.cuh"
#include "gpu/jobs/apd/apd_priv.h"

#define APD_THREADS 256
#define APD_CHUNK_WINDOWS 8192   // windows per launch (progress granularity)

static int next_pow2(int n)
{
    int p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

template <int C>
__global__ void __launch_bounds__(APD_THREADS)
apd_fit_kernel(struct apd_params p, int npow2, double dlam, const double *series, const struct apd_lam *tab,
               size_t w_first, struct apd_fit *out)
{
    extern __shared__ double xs[];
    __shared__ double s_ll[APD_THREADS / 32];
    __shared__ int s_j[APD_THREADS / 32], s_i[APD_THREADS / 32];
    const int W = (int)p.window, L = p.n_lambda, tid = threadIdx.x;
    const double *src = series + (w_first + blockIdx.x) * p.stride;
    for (int k = tid; k < npow2; k += blockDim.x)
        xs[k] = k < W ? src[k] : INFINITY;
    __syncthreads();
    for (int size = 2; size <= npow2; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int t = tid; t < npow2; t += blockDim.x) {
                int u = t ^ stride;
                if (u > t) {
                    double a = xs[t], b = xs[u];
                    bool up = (t & size) == 0;
                    if ((a > b) == up) {
                        xs[t] = b;
                        xs[u] = a;
                    }
                }
            }
            __syncthreads();
        }
    }

    double bll = -INFINITY;
    int bj = INT_MAX, bi = INT_MAX;
    const int nchunks = (L + C - 1) / C;
    const int items = W * nchunks;
    for (int it = tid; it < items; it += blockDim.x) {
        const int c = it / W, i = it - c * W, j0 = c * C;
        const double theta = xs[i], lam0 = tab[j0].lam;
        double am[C], ap[C];
#pragma unroll
        for (int m = 0; m < C; m++)
            am[m] = ap[m] = 0.0;
        for (int k = 0; k < i; k++) {
            double d = theta - xs[k];
            if (d > 0.0) {
                double ld = log(d), pw = exp(lam0 * ld), r = exp(dlam * ld);
#pragma unroll
                for (int m = 0; m < C; m++) {
                    am[m] += pw;
                    pw *= r;
                }
            }
        }
        for (int k = i + 1; k < W; k++) {
            double d = xs[k] - theta;
            if (d > 0.0) {
                double ld = log(d), pw = exp(lam0 * ld), r = exp(dlam * ld);
#pragma unroll
                for (int m = 0; m < C; m++) {
                    ap[m] += pw;
                    pw *= r;
                }
            }
        }
#pragma unroll
        for (int m = 0; m < C; m++) {
            int j = j0 + m;
            if (j < L) {
                double ll = apd_candidate_ll(am[m], ap[m], &tab[j]);
                if (apd_better(ll, j, i, bll, bj, bi)) {
                    bll = ll;
                    bj = j;
                    bi = i;
                }
            }
        }
    }
    // block argmax with the CPU's order (larger ℓ, smaller j, smaller i)
    for (int off = 16; off > 0; off >>= 1) {
        double oll = __shfl_down_sync(0xffffffffu, bll, off);
        int oj = __shfl_down_sync(0xffffffffu, bj, off);
        int oi = __shfl_down_sync(0xffffffffu, bi, off);
        if (apd_better(oll, oj, oi, bll, bj, bi)) {
            bll = oll;
            bj = oj;
            bi = oi;
        }
    }
    if ((tid & 31) == 0) {
        s_ll[tid >> 5] = bll;
        s_j[tid >> 5] = bj;
        s_i[tid >> 5] = bi;
    }
    __syncthreads();
    if (tid == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
            if (apd_better(s_ll[w], s_j[w], s_i[w], bll, bj, bi)) {
                bll = s_ll[w];
                bj = s_j[w];
                bi = s_i[w];
            }
        }
        int ok = isfinite(bll);
        apd_finish(xs, W, ok ? bi : -1, ok ? bj : -1, tab, p.n_quantiles, p.quantiles, &out[blockIdx.x]);
    }
}

int apd_fit_launch(const struct apd_params *p, const double *d_series, const struct apd_lam *d_tab,
                   size_t w_first, size_t w_count, struct apd_fit *d_out, cudaStream_t stream)
{
    if (w_count == 0)
        return 0;
    if (w_count > 0x7fffffff)
        return GA_EINVAL;
    int npow2 = next_pow2((int)p->window);
    size_t smem = (size_t)npow2 * sizeof(double);
    double dlam = p->n_lambda > 1 ? (p->lambda_hi - p->lambda_lo) / (p->n_lambda - 1) : 0.0;
    dim3 grid((unsigned)w_count);
    switch (p->gpu_chunk) {
    case 8:
        apd_fit_kernel<8><<<grid, APD_THREADS, smem, stream>>>(*p, npow2, dlam, d_series, d_tab, w_first, d_out);
        break;
    case 16:
        apd_fit_kernel<16><<<grid, APD_THREADS, smem, stream>>>(*p, npow2, dlam, d_series, d_tab, w_first, d_out);
        break;
    default:   // 20: the fastest measured (docs/PERFORMANCE.md), though ptxas spills a little
        apd_fit_kernel<20><<<grid, APD_THREADS, smem, stream>>>(*p, npow2, dlam, d_series, d_tab, w_first, d_out);
        break;
    }
    CUDA_CHECK(cudaGetLastError());
    return 0;
}

static int apd_run(int device, const struct apd_params *p, const double *series, size_t n, struct apd_fit *out,
                   size_t nw, const struct apd_lam *htab, job_par_progress_fn cb, void *ud)
{
    int rc = 0;
    cudaStream_t stream = NULL;
    double *d_series = NULL;
    struct apd_lam *d_tab = NULL;
    struct apd_fit *d_out = NULL;
    size_t chunk = nw < APD_CHUNK_WINDOWS ? nw : APD_CHUNK_WINDOWS;
#define GO(call) do { rc = (call); if (rc) goto out; } while (0)
    GO([&]() -> int {
        CUDA_CHECK(cudaSetDevice(device));
        CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        CUDA_CHECK(cudaMalloc(&d_series, n * sizeof *d_series));
        CUDA_CHECK(cudaMalloc(&d_tab, (size_t)p->n_lambda * sizeof *d_tab));
        CUDA_CHECK(cudaMalloc(&d_out, chunk * sizeof *d_out));
        CUDA_CHECK(cudaMemcpyAsync(d_series, series, n * sizeof *d_series, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaMemcpyAsync(d_tab, htab, (size_t)p->n_lambda * sizeof *d_tab, cudaMemcpyHostToDevice, stream));
        return 0;
    }());
    for (size_t first = 0; first < nw; first += chunk) {
        size_t cnt = nw - first < chunk ? nw - first : chunk;
        GO(apd_fit_launch(p, d_series, d_tab, first, cnt, d_out, stream));
        GO([&]() -> int {
            CUDA_CHECK(cudaMemcpyAsync(out + first, d_out, cnt * sizeof *d_out, cudaMemcpyDeviceToHost, stream));
            CUDA_CHECK(cudaStreamSynchronize(stream));
            return 0;
        }());
        if (cb && cb(ud, first + cnt, nw) != 0 && first + cnt < nw) {
            rc = GA_ECANCELED;
            goto out;
        }
    }
#undef GO
out:
    if (stream)
        cudaStreamSynchronize(stream);
    cudaFree(d_series);
    cudaFree(d_tab);
    cudaFree(d_out);
    if (stream)
        cudaStreamDestroy(stream);
    return rc;
}

extern "C" int apd_fit_gpu(int device, const struct apd_params *p, const double *series, size_t n,
                           struct apd_fit *out, job_par_progress_fn cb, void *ud, char *err, size_t errlen)
{
    int rc = apd_check_input(p, series, n, err, errlen);
    if (rc)
        return rc;
    if ((rc = job_cuda_device_check(device, err, errlen)))
        return rc;
    struct apd_lam *tab = (struct apd_lam *)malloc((size_t)p->n_lambda * sizeof *tab);
    if (!tab)
        return GA_ENOMEM;
    apd_lambda_table(p, tab);
    rc = apd_run(device, p, series, n, out, apd_window_count(p, n), tab, cb, ud);
    if (rc == GA_ECUDA && err && errlen)
        snprintf(err, errlen, "a CUDA call failed (see the cuda_error log line)");
    free(tab);
    return rc;
}
