// gk_select.cuh — the indices i in [0, n) for which a predicate holds,
// listed by CUB's DeviceSelect::If over the indices themselves: the test
// runs inside the select, so no flag array is written by one pass and read
// back by the next.  A template (the predicate is a functor type), in a
// header of its own so that only the .cu files using it compile CUB's
// select (some 5 s more each); scratch from gk_prim's gk_tmp_reserve.
#pragma once

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "gpu/cuda/gk_prim.cuh"

// The i in [0, n) with pred(i) true, ascending, into out; their count into
// *d_count (device memory).  I: uint32_t (then n < 2^32) or uint64_t.
// pred: a __host__ __device__ functor `bool operator()(I i) const` without
// side effects, passed by value (its pointers are device memory; host
// memory in emulation); on the GPU CUB applies it to each i < n in its own
// order, in emulation a host loop does.  0 or GA_ECUDA; runs on the
// executor's stream.
template <class I, class P>
int gk_select_if_idx(gk_exec *x, P pred, I *out, I *d_count, size_t n)
{
    if (x->emu) {
        I k = 0;
        for (size_t i = 0; i < n; i++)
            if (pred((I)i))
                out[k++] = (I)i;
        *d_count = k;
        return 0;
    }
    if (!n) {
        CUDA_CHECK(cudaMemsetAsync(d_count, 0, sizeof *d_count, x->s));
        return 0;
    }
    // The select op gets the input's value: here the index itself.
    thrust::counting_iterator<I> it(0);
    size_t need = 0;
    CUDA_CHECK(cub::DeviceSelect::If(NULL, need, it, out, d_count, (int64_t)n, pred, x->s));
    int rc = gk_tmp_reserve(x, need);
    if (rc)
        return rc;
    CUDA_CHECK(cub::DeviceSelect::If(x->tmp, need, it, out, d_count, (int64_t)n, pred, x->s));
    return 0;
}
