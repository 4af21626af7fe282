// apd.cuh — APD fit on the GPU: the launcher on device pointers.  The
// self-contained entry point is apd_fit_gpu (apd.h).
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>

#include "gpu/jobs/apd/apd_impl.h"

// Fits windows [w_first, w_first + w_count) of the device series d_series
// (window w starts at w * p->stride; the caller checked that they fit and
// that the values are finite) into d_out[0 .. w_count), one thread block a
// window.  d_tab: the device copy of apd_lambda_table(p).  Asynchronous on
// `stream`; returns 0, GA_EINVAL (bad chunk) or GA_ECUDA (launch error).
int apd_fit_launch(const struct apd_params *p, const double *d_series, const struct apd_lam *d_tab,
                   size_t w_first, size_t w_count, struct apd_fit *d_out, cudaStream_t stream);
