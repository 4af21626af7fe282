/* kmeans_nocuda.c — the k-means GPU entry points in builds without CUDA. */
#include <stdio.h>

#include "gpu/jobs/kmeans/kmeans.h"
#include "proto/ga_err.h"

int ga_kmeans_gpu(int device, const struct ga_kmeans_params *p, const double *objs,
                  struct ga_kmeans_result *res, ga_kmeans_progress_fn fn, void *arg, char *err, size_t errlen)
{
    int rc = ga_kmeans_validate(p, err, errlen);
    if (rc)
        return rc;
    snprintf(err, errlen, "built without CUDA (nvcc was not found at build time)");
    return GA_ENOGPU;
}
