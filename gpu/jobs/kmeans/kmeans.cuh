// kmeans.cuh — the k-means kernel's device-side API: a workspace on one
// device (objects column-major, memberships, centres, per-tile partials, a
// small state block), and one launcher that enqueues iterations on a stream.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/jobs/kmeans/kmeans.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ga_kmeans_dev;

// Allocate a workspace for p on `device` (sets the current device).  0,
// GA_EBADARG, GA_ENOMEM or GA_ECUDA.  *out is owned by the caller: destroy it.
int ga_kmeans_dev_create(int device, const struct ga_kmeans_params *p, struct ga_kmeans_dev **out);
int ga_kmeans_dev_destroy(struct ga_kmeans_dev *d);
// The objects, column-major: coordinate j of object i at [j * nobjs + i].
double *ga_kmeans_dev_objects(struct ga_kmeans_dev *d);
// The assign kernel in use: GA_KMEANS_KERNEL_LANE, _REG or _GENERIC (the
// params' kernel, AUTO resolved; create fails with GA_EBADARG if it cannot
// serve k and coords).
int ga_kmeans_dev_kernel(const struct ga_kmeans_dev *d);
// Fill the objects with the generated dataset (same values as ga_kmeans_generate).
int ga_kmeans_dev_generate(struct ga_kmeans_dev *d, cudaStream_t s);
// Fill the objects from a row-major array (host or device) through a transpose.
int ga_kmeans_dev_load(struct ga_kmeans_dev *d, const double *rowmajor, cudaStream_t s);
// Centres = first k objects, memberships unset, loop count 0.
int ga_kmeans_dev_start(struct ga_kmeans_dev *d, cudaStream_t s);
// THE LAUNCHER: enqueue `nloops` iterations (assign + partial sums, then
// finalize: centres, delta, convergence flag).  Once converged or at
// max_loops, the enqueued kernels return at once.  No host synchronisation.
int ga_kmeans_launch(struct ga_kmeans_dev *d, int nloops, cudaStream_t s);
// Wait for the stream, then read loops done, the done flag and the last delta;
// hist (may be NULL) gets the deltas of loops [from, loops).
int ga_kmeans_dev_status(struct ga_kmeans_dev *d, cudaStream_t s, int *loops, int *done, double *delta,
                         int from, double *hist);
// Copy centres (k*coords, row-major) and, if membership != NULL, memberships
// (nobjs int32) to host memory; waits for the stream.
int ga_kmeans_dev_results(struct ga_kmeans_dev *d, cudaStream_t s, double *centres, int32_t *membership);

#ifdef __cplusplus
}
#endif
