// jb_cuda.cuh — small CUDA helpers the job kernels' hosts share.
#pragma once

#include "gpu/cuda/cuda_check.cuh"

// *dev = 1 when p is device (or managed) memory, 0 for host memory.  0 or GA_ECUDA.
static inline int jb_is_device_ptr(const void *p, int *dev)
{
    cudaPointerAttributes a;
    CUDA_CHECK(cudaPointerGetAttributes(&a, p));
    *dev = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
    return 0;
}

// cudaFree that accepts NULL.  0 or GA_ECUDA.
static inline int jb_dfree(void *p)
{
    if (p)
        CUDA_CHECK(cudaFree(p));
    return 0;
}
