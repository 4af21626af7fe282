/* cuda_backend.c — the CUDA backend for builds without nvcc: no GPU. */
#include "gpu/cuda.h"

#include "proto/ga_err.h"

int ga_cuda_backend_open(struct ga_backend **out, int device, const struct ga_cuda_opts *o)
{
    (void)device;
    (void)o;
    *out = NULL;
    return GA_ENOGPU;
}

int ga_cuda_backend_stats(const struct ga_backend *b, struct ga_cuda_feed_stats *st)
{
    (void)b;
    (void)st;
    return GA_EINVAL;
}

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

int ga_cuda_host_alloc(void **p, size_t bytes)
{
    (void)bytes;
    *p = NULL;
    return GA_ENOMEM;
}

void ga_cuda_host_free(void *p)
{
    (void)p;
}
