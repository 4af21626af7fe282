/* device.c — ga_gpu_probe for builds without nvcc: no GPU support. */
#include "gpu/device.h"

#include <stdio.h>

#include "proto/ga_err.h"

int ga_gpu_probe(struct ga_gpu_info *out, int max, char *err, size_t errlen)
{
    (void)out;
    (void)max;
    snprintf(err, errlen, "built without CUDA (nvcc was not found at build time)");
    return GA_ENOGPU;
}

int ga_gpu_compiled(void)
{
    return 0;
}
