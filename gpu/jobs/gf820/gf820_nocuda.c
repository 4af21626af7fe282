/* gf820_nocuda.c — gf820_gpu in a build without CUDA: GA_ENOGPU. */
#include <stdio.h>

#include "gpu/jobs/gf820/gf820.h"
#include "proto/ga_err.h"

int gf820_gpu(int device, const struct gf820_contract *c, size_t n, double *v0, double *table,
              job_par_progress_fn cb, void *ud, char *err, size_t errlen)
{
    int rc = gf820_validate(c, n, err, errlen);
    if (rc)
        return rc;
    if (err && errlen)
        snprintf(err, errlen, "built without CUDA");
    return GA_ENOGPU;
}
