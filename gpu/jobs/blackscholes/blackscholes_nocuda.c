/* blackscholes_nocuda.c — the Black-Scholes job's GPU entry points in builds
 * without CUDA. */
#include <stdio.h>

#include "gpu/jobs/blackscholes/blackscholes.h"
#include "proto/ga_err.h"

int ga_bs_gpu(int device, const struct ga_bs_params *p, const float *S, const float *X, const float *T,
              float *call, float *put, char *err, size_t errlen)
{
    int rc = ga_bs_validate(p, err, errlen);
    if (rc)
        return rc;
    snprintf(err, errlen, "built without CUDA (nvcc was not found at build time)");
    return GA_ENOGPU;
}
