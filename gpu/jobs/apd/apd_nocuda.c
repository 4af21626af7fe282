/* apd_nocuda.c — apd_fit_gpu in a build without CUDA: GA_ENOGPU. */
#include <stdio.h>

#include "gpu/jobs/apd/apd_priv.h"
#include "proto/ga_err.h"

int apd_fit_gpu(int device, const struct apd_params *p, const double *series, size_t n, struct apd_fit *out,
                job_par_progress_fn cb, void *ud, char *err, size_t errlen)
{
    int rc = apd_check_input(p, series, n, err, errlen);
    if (rc)
        return rc;
    if (err && errlen)
        snprintf(err, errlen, "built without CUDA");
    return GA_ENOGPU;
}
