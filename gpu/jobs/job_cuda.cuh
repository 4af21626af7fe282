// job_cuda.cuh — small CUDA helpers the job kernels' hosts share.
#pragma once

#include <stdio.h>

#include "gpu/cuda/cuda_check.cuh"
#include "proto/ga_err.h"

// The one preamble of a job's GPU entry point, after it has validated its
// parameters: CUDA device `device` exists on this host.  0, or GA_ENOGPU
// with err saying why (no CUDA device at all, or none of that number), on
// which the daemon runs the kind's CPU reference (docs/JOBS.md).
static inline int job_cuda_device_check(int device, char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        if (err && errlen)
            snprintf(err, errlen, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
        return GA_ENOGPU;
    }
    if (device < 0 || device >= n) {
        if (err && errlen)
            snprintf(err, errlen, "device %d: this host has %d CUDA device(s)", device, n);
        return GA_ENOGPU;
    }
    return 0;
}

// *dev = 1 when p is device (or managed) memory, 0 for host memory.  0 or GA_ECUDA.
static inline int job_cuda_is_device_ptr(const void *p, int *dev)
{
    cudaPointerAttributes a;
    CUDA_CHECK(cudaPointerGetAttributes(&a, p));
    *dev = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
    return 0;
}

// cudaFree that accepts NULL.  0 or GA_ECUDA.
static inline int job_cuda_dfree(void *p)
{
    if (p)
        CUDA_CHECK(cudaFree(p));
    return 0;
}
