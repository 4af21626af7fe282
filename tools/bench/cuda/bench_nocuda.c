/* bench_nocuda.c — the benchmarks' CUDA entry points (bench_hooks.h) in builds
 * without nvcc: no GPU. */
#include <stdio.h>

#include "proto/ga_err.h"
#include "tools/bench/cuda/bench_hooks.h"

#define NO_CUDA "built without CUDA (nvcc was not found at build time)"

int ga_cuda_kernel_bench(int device, struct ga_cuda_kbench *kb)
{
    (void)device;
    (void)kb;
    return GA_ENOGPU;
}

int ga_cuda_sort_check(int device, struct ga_cuda_sort_check *c)
{
    (void)device;
    (void)c;
    return GA_ENOGPU;
}

int ga_cuda_search_check(uint64_t seed, int arrays, uint64_t *checked, uint64_t *differ)
{
    (void)seed;
    (void)arrays;
    *checked = *differ = 0;
    return GA_ENOGPU;
}

int ga_dot_bench_run(int device, int dtype, int64_t n, int reps, int block, struct ga_dot_bench *out,
                     char *err, size_t errlen)
{
    snprintf(err, errlen, NO_CUDA);
    return GA_ENOGPU;
}

int ga_bs_bench_run(int device, int64_t n, int reps, struct ga_bs_bench *out, char *err, size_t errlen)
{
    snprintf(err, errlen, NO_CUDA);
    return GA_ENOGPU;
}

int ga_kmeans_bench_run(int device, const struct ga_kmeans_params *p, int reps, struct ga_kmeans_bench *out,
                        double *centres, char *err, size_t errlen)
{
    snprintf(err, errlen, NO_CUDA);
    return GA_ENOGPU;
}
