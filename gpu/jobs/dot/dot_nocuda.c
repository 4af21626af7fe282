/* dot_nocuda.c — the dot job's GPU entry points in builds without CUDA. */
#include <stdio.h>

#include "gpu/jobs/dot/dot.h"
#include "proto/ga_err.h"

int ga_dot_gpu(int device, const struct ga_dot_params *p, const void *x, const void *y, double *out,
               char *err, size_t errlen)
{
    int rc = ga_dot_validate(p, err, errlen);
    if (rc)
        return rc;
    snprintf(err, errlen, "built without CUDA (nvcc was not found at build time)");
    return GA_ENOGPU;
}
