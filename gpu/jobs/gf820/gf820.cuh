// gf820.cuh — GF820 on the GPU: the launcher on device pointers.  The
// self-contained entry point is gf820_gpu (gf820.h).
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>

#include "gpu/jobs/gf820/gf820.h"

// Device buffers of one GF820 job (all device pointers, owned by the caller).
struct gf820_dev {
    const struct gf820_contract *contracts;  // [n]
    size_t n;
    const double *t;             // [nt] outer times of all contracts, gf820_outer_times order
    const int *t_contract;       // [nt] contract of each outer time
    const size_t *t_off;         // [n + 1] first outer time of each contract
    size_t nt;
    double *d;                   // scratch: d_cap * GF_ETA_POINTS Middle derivative values
    size_t d_cap;                // outer times one launch may cover
    double *m;                   // [nt] Middle values
    double *v0;                  // [n] V(0)
    double *table;               // [n * GF820_TABLE_LEN] reserve tables
};

// Middle values for outer times [t_first, t_first + t_count) (t_count <=
// d_cap): one thread per (outer time, η) Inner solve, then one per outer
// time for the Middle RK4.  With outer != 0, afterwards the Outer solve of
// every contract (needs every Middle value).  Asynchronous on `stream`;
// returns 0 or GA_ECUDA (launch error).
int gf820_launch(const struct gf820_dev *d, size_t t_first, size_t t_count, int outer, cudaStream_t stream);
