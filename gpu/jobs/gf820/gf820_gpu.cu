// gf820_gpu.cu — GF820 on the GPU (see gf820.h, gf820.cuh).  Arithmetic in
// gf820_impl.h, shared with the CPU reference.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda/cuda_check.cuh"
#include "gpu/jobs/gf820/gf820.cuh"
#include "gpu/jobs/job_cuda.cuh"
#include "gpu/jobs/gf820/gf820_impl.h"

#define GF_INNER_THREADS 128
#define GF_CHUNK_T 4096          // outer times per launch (progress granularity)

// One thread per (outer time, η_j): the Middle derivative value, with its Inner solve.
__global__ void __launch_bounds__(GF_INNER_THREADS)
gf_inner_kernel(const struct gf820_contract *contracts, const double *t, const int *t_contract,
                size_t t_first, size_t t_count, double *d)
{
    size_t item = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (item >= t_count * GF_ETA_POINTS)
        return;
    size_t ti = item / GF_ETA_POINTS;
    int j = (int)(item - ti * GF_ETA_POINTS);
    struct gf820_contract c = contracts[t_contract[t_first + ti]];
    double tau = __dadd_rn((double)c.x, t[t_first + ti]);
    double k = gf_k(c.g, c.r, tau);
    d[item] = gf_middle_f(j, tau, k, c.steps);
}

__global__ void gf_middle_kernel(const double *d, size_t t_first, size_t t_count, double *m)
{
    size_t ti = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (ti >= t_count)
        return;
    m[t_first + ti] = gf_middle_combine(d + ti * GF_ETA_POINTS);
}

__global__ void gf_outer_kernel(const struct gf820_contract *contracts, size_t n, const double *t,
                                const size_t *t_off, const double *m, double *v0, double *table)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    struct gf820_contract c = contracts[i];
    double *row = table + i * GF820_TABLE_LEN;
    for (int y = 0; y < GF820_TABLE_LEN; y++)
        row[y] = NAN;
    v0[i] = gf_outer_solve(c.x, c.steps, t + t_off[i], m + t_off[i], row);
}

int gf820_launch(const struct gf820_dev *d, size_t t_first, size_t t_count, int outer, cudaStream_t stream)
{
    if (t_count > d->d_cap || t_first + t_count > d->nt)
        return GA_EINVAL;
    if (t_count) {
        size_t items = t_count * GF_ETA_POINTS;
        unsigned blocks = (unsigned)((items + GF_INNER_THREADS - 1) / GF_INNER_THREADS);
        gf_inner_kernel<<<blocks, GF_INNER_THREADS, 0, stream>>>(d->contracts, d->t, d->t_contract, t_first,
                                                                 t_count, d->d);
        CUDA_CHECK(cudaGetLastError());
        gf_middle_kernel<<<(unsigned)((t_count + 127) / 128), 128, 0, stream>>>(d->d, t_first, t_count, d->m);
        CUDA_CHECK(cudaGetLastError());
    }
    if (outer) {
        gf_outer_kernel<<<(unsigned)((d->n + 63) / 64), 64, 0, stream>>>(d->contracts, d->n, d->t, d->t_off,
                                                                       d->m, d->v0, d->table);
        CUDA_CHECK(cudaGetLastError());
    }
    return 0;
}

// The body of gf820_gpu once the host arrays exist; frees nothing of the caller's.
static int gf820_run(int device, const struct gf820_contract *c, size_t n, const double *ht, const int *htc,
                     const size_t *hoff, size_t nt, double *v0, double *table, job_par_progress_fn cb,
                     void *ud)
{
    int rc = 0;
    cudaStream_t stream = NULL;
    struct gf820_dev d;
    memset(&d, 0, sizeof d);
    struct gf820_contract *dc = NULL;
    double *dt = NULL, *dd = NULL, *dm = NULL, *dv0 = NULL, *dtab = NULL;
    int *dtc = NULL;
    size_t *doff = NULL;

#define GO(call) do { rc = (call); if (rc) goto out; } while (0)
    GO([&]() -> int { CUDA_CHECK(cudaSetDevice(device)); return 0; }());
    GO([&]() -> int { CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); return 0; }());
    d.n = n;
    d.nt = nt;
    d.d_cap = nt < GF_CHUNK_T ? nt : GF_CHUNK_T;
    GO([&]() -> int {
        CUDA_CHECK(cudaMalloc(&dc, n * sizeof *dc));
        CUDA_CHECK(cudaMalloc(&dt, nt * sizeof *dt));
        CUDA_CHECK(cudaMalloc(&dtc, nt * sizeof *dtc));
        CUDA_CHECK(cudaMalloc(&doff, (n + 1) * sizeof *doff));
        CUDA_CHECK(cudaMalloc(&dd, d.d_cap * GF_ETA_POINTS * sizeof *dd));
        CUDA_CHECK(cudaMalloc(&dm, nt * sizeof *dm));
        CUDA_CHECK(cudaMalloc(&dv0, n * sizeof *dv0));
        CUDA_CHECK(cudaMalloc(&dtab, n * GF820_TABLE_LEN * sizeof *dtab));
        CUDA_CHECK(cudaMemcpyAsync(dc, c, n * sizeof *dc, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaMemcpyAsync(dt, ht, nt * sizeof *dt, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaMemcpyAsync(dtc, htc, nt * sizeof *dtc, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaMemcpyAsync(doff, hoff, (n + 1) * sizeof *doff, cudaMemcpyHostToDevice, stream));
        return 0;
    }());
    d.contracts = dc;
    d.t = dt;
    d.t_contract = dtc;
    d.t_off = doff;
    d.d = dd;
    d.m = dm;
    d.v0 = dv0;
    d.table = dtab;
    for (size_t first = 0; first < nt; first += d.d_cap) {
        size_t cnt = nt - first < d.d_cap ? nt - first : d.d_cap;
        GO(gf820_launch(&d, first, cnt, 0, stream));
        if (cb) {
            GO([&]() -> int { CUDA_CHECK(cudaStreamSynchronize(stream)); return 0; }());
            if (cb(ud, first + cnt, nt) != 0 && first + cnt < nt) {
                rc = GA_ECANCELED;
                goto out;
            }
        }
    }
    GO(gf820_launch(&d, 0, 0, 1, stream));
    if (table) {
        GO([&]() -> int {
            CUDA_CHECK(cudaMemcpyAsync(table, dtab, n * GF820_TABLE_LEN * sizeof *dtab, cudaMemcpyDeviceToHost, stream));
            return 0;
        }());
    }
    GO([&]() -> int {
        CUDA_CHECK(cudaMemcpyAsync(v0, dv0, n * sizeof *dv0, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        return 0;
    }());
#undef GO
out:
    if (stream)
        cudaStreamSynchronize(stream);
    cudaFree(dc);
    cudaFree(dt);
    cudaFree(dtc);
    cudaFree(doff);
    cudaFree(dd);
    cudaFree(dm);
    cudaFree(dv0);
    cudaFree(dtab);
    if (stream)
        cudaStreamDestroy(stream);
    return rc;
}

extern "C" int gf820_gpu(int device, const struct gf820_contract *c, size_t n, double *v0, double *table,
                         job_par_progress_fn cb, void *ud, char *err, size_t errlen)
{
    int rc = gf820_validate(c, n, err, errlen);
    if (rc)
        return rc;
    if ((rc = job_cuda_device_check(device, err, errlen)))
        return rc;
    size_t nt = 0;
    for (size_t i = 0; i < n; i++)
        nt += gf820_outer_points(&c[i]);
    double *ht = (double *)malloc(nt * sizeof *ht);
    int *htc = (int *)malloc(nt * sizeof *htc);
    size_t *hoff = (size_t *)malloc((n + 1) * sizeof *hoff);
    if (!ht || !htc || !hoff) {
        rc = GA_ENOMEM;
    } else {
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            hoff[i] = off;
            size_t np = gf820_outer_points(&c[i]);
            gf820_outer_times(&c[i], ht + off);
            for (size_t p = 0; p < np; p++)
                htc[off + p] = (int)i;
            off += np;
        }
        hoff[n] = off;
        rc = gf820_run(device, c, n, ht, htc, hoff, nt, v0, table, cb, ud);
        if (rc == GA_ECUDA && err && errlen)
            snprintf(err, errlen, "a CUDA call failed (see the cuda_error log line)");
    }
    free(ht);
    free(htc);
    free(hoff);
    return rc;
}
