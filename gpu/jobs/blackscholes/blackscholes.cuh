// blackscholes.cuh — the Black-Scholes job's host launcher on device pointers.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/jobs/blackscholes/blackscholes.h"

#ifdef __cplusplus
extern "C" {
#endif

// Enqueue prices for n options on `stream`: dS, dX, dT in, dCall, dPut out
// (device arrays of n floats).  When all five are 16-byte aligned each thread
// prices 4 options per step with 16-byte streaming loads and stores; otherwise
// one option per step.  Returns 0, GA_EBADARG or GA_ECUDA.
int ga_bs_launch(const float *dS, const float *dX, const float *dT, float *dCall, float *dPut, int64_t n,
                 float riskfree, float volatility, cudaStream_t stream);

// Enqueue the generator: the same values as ga_bs_generate, into device arrays.
int ga_bs_generate_launch(float *dS, float *dX, float *dT, int64_t n, uint64_t seed, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
