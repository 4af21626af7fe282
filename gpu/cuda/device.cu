// device.cu — ga_gpu_probe through the CUDA runtime.
#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cuda_check.cuh"
#include "gpu/device.h"

extern "C" int ga_gpu_compiled(void)
{
    return 1;
}

extern "C" int ga_gpu_probe(struct ga_gpu_info *out, int max, char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
        return GA_ENOGPU;
    }
    if (n == 0) {
        snprintf(err, errlen, "the CUDA runtime reports no device");
        return GA_ENOGPU;
    }
    int count = n < max ? n : max;
    for (int i = 0; i < count; i++) {
        struct ga_gpu_info *g = &out[i];
        memset(g, 0, sizeof *g);
        g->index = i;
        cudaDeviceProp p;
        e = cudaGetDeviceProperties(&p, i);
        if (e != cudaSuccess) {
            snprintf(g->why, sizeof g->why, "cudaGetDeviceProperties: %s", cudaGetErrorString(e));
            continue;
        }
        snprintf(g->name, sizeof g->name, "%s", p.name);
        g->mem_total = p.totalGlobalMem;
        g->cc_major = p.major;
        g->cc_minor = p.minor;
        g->sm_count = p.multiProcessorCount;
        size_t fr = 0, tot = 0;
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&fr, &tot) == cudaSuccess)
            g->mem_free = fr;
        // Kernels are built as sm_90 SASS + compute_90 PTX: any cc >= 9.0 runs them.
        if (p.major >= 9) {
            g->usable = 1;
        } else {
            snprintf(g->why, sizeof g->why, "compute capability %d.%d < 9.0 (built for sm_90)",
                     p.major, p.minor);
        }
    }
    return count;
}
