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
