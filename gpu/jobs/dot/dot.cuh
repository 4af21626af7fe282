// dot.cuh — the dot job's host launcher on device pointers (see dot.h for the
// self-contained entry point ga_dot_gpu).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/jobs/dot/dot.h"

#ifdef __cplusplus
extern "C" {
#endif

// Bytes of workspace ga_dot_launch needs on `device`: per-block partials and
// a ticket counter.  Allocate once, zero it once (cudaMemset 0); every launch
// leaves the counter back at 0, so the workspace is reusable on one stream.
size_t ga_dot_workspace_bytes(int device);

// Enqueue x·y on `stream`: dx, dy device pointers of n elements of dtype
// (16-byte aligned pointers take the vectorised path, others a scalar one);
// *d_out (device) gets the double result.  block: 128, 256, 512 or 1024 (0 =
// 256).  One kernel: each block writes a partial, the last block to finish
// adds the partials in index order, so the result is deterministic for a
// given device and block size.  Returns 0, GA_EBADARG or GA_ECUDA.
int ga_dot_launch(int dtype, const void *dx, const void *dy, int64_t n, int block, void *workspace,
                  double *d_out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
