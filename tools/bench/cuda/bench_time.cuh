// bench_time.cuh — the job benchmarks' one way to time GPU work: `warm`
// untimed rounds, then `reps` rounds of `per_rep` launches between two
// events on stream s; *ms is the median per launch.  launch(i) returns 0 or
// a GA_E* code (which stops the timing and is returned).
#pragma once

#include <algorithm>
#include <vector>

#include "gpu/cuda/cuda_check.cuh"

template <typename F>
int ga_bench_time(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, int warm, int reps, int per_rep,
                  F launch, double *ms)
{
    std::vector<double> t;
    for (int w = 0; w < warm; w++)
        for (int i = 0; i < per_rep; i++)
            if (int rc = launch(i))
                return rc;
    for (int r = 0; r < reps; r++) {
        CUDA_CHECK(cudaEventRecord(e0, s));
        for (int i = 0; i < per_rep; i++)
            if (int rc = launch(i))
                return rc;
        CUDA_CHECK(cudaEventRecord(e1, s));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float f = 0;
        CUDA_CHECK(cudaEventElapsedTime(&f, e0, e1));
        t.push_back((double)f / per_rep);
    }
    std::sort(t.begin(), t.end());
    *ms = t[t.size() / 2];
    return 0;
}
