// gk_prim.cu — CUB sort / scan / select with host fallbacks (gk_prim.cuh).
#include "gpu/cuda/gk_prim.cuh"

#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <vector>

// Grow the executor's CUB scratch to `need` bytes (rarely: it only grows).
static int tmp_reserve(gk_exec *x, size_t need)
{
    if (need <= x->tmp_cap)
        return 0;
    size_t cap = need + need / 2 + 4096;
    struct timespec a, z;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (x->tmp) {
        CUDA_CHECK(cudaStreamSynchronize(x->s));
        CUDA_CHECK(cudaFree(x->tmp));
        x->tmp = NULL;
        x->tmp_cap = 0;
    }
    CUDA_CHECK(cudaMalloc(&x->tmp, cap));
    x->tmp_cap = cap;
    clock_gettime(CLOCK_MONOTONIC, &z);
    x->allocs++;
    x->alloc_s += (double)(z.tv_sec - a.tv_sec) + (double)(z.tv_nsec - a.tv_nsec) * 1e-9;
    return 0;
}

int gk_scan_u64(gk_exec *x, const uint64_t *in, uint64_t *out, size_t n1)
{
    if (!n1)
        return 0;
    if (x->emu) {
        uint64_t s = 0;
        for (size_t i = 0; i < n1; i++) {
            uint64_t v = in[i];
            out[i] = s;
            s += v;
        }
        return 0;
    }
    size_t need = 0;
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, need, in, out, (int64_t)n1, x->s));
    int rc = tmp_reserve(x, need);
    if (rc)
        return rc;
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(x->tmp, need, in, out, (int64_t)n1, x->s));
    return 0;
}

int gk_select_idx(gk_exec *x, const uint8_t *flags, uint32_t *out, uint32_t *d_count, size_t n)
{
    if (x->emu) {
        uint32_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (flags[i])
                out[k++] = (uint32_t)i;
        *d_count = k;
        return 0;
    }
    if (!n) {
        CUDA_CHECK(cudaMemsetAsync(d_count, 0, sizeof *d_count, x->s));
        return 0;
    }
    thrust::counting_iterator<uint32_t> it(0);
    size_t need = 0;
    CUDA_CHECK(cub::DeviceSelect::Flagged(NULL, need, it, flags, out, d_count, (int64_t)n, x->s));
    int rc = tmp_reserve(x, need);
    if (rc)
        return rc;
    CUDA_CHECK(cub::DeviceSelect::Flagged(x->tmp, need, it, flags, out, d_count, (int64_t)n, x->s));
    return 0;
}

template <class K>
static int sort_pairs(gk_exec *x, const K *k_in, K *k_out, const uint32_t *v_in, uint32_t *v_out, size_t n,
                      int end_bit)
{
    if (!n)
        return 0;
    if (x->emu) {
        std::vector<size_t> o(n);
        for (size_t i = 0; i < n; i++)
            o[i] = i;
        K mask = end_bit >= (int)(8 * sizeof(K)) ? ~(K)0 : (((K)1 << end_bit) - 1);
        std::stable_sort(o.begin(), o.end(),
                         [&](size_t a, size_t b) { return (k_in[a] & mask) < (k_in[b] & mask); });
        for (size_t i = 0; i < n; i++) {
            k_out[i] = k_in[o[i]];
            v_out[i] = v_in[o[i]];
        }
        return 0;
    }
    size_t need = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, need, k_in, k_out, v_in, v_out, (int64_t)n, 0,
                                               end_bit, x->s));
    int rc = tmp_reserve(x, need);
    if (rc)
        return rc;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(x->tmp, need, k_in, k_out, v_in, v_out, (int64_t)n,
                                               0, end_bit, x->s));
    return 0;
}

int gk_sort_u64(gk_exec *x, const uint64_t *k_in, uint64_t *k_out, const uint32_t *v_in, uint32_t *v_out,
                size_t n, int end_bit)
{
    return sort_pairs(x, k_in, k_out, v_in, v_out, n, end_bit);
}

int gk_sort_u32(gk_exec *x, const uint32_t *k_in, uint32_t *k_out, const uint32_t *v_in, uint32_t *v_out,
                size_t n, int end_bit)
{
    return sort_pairs(x, k_in, k_out, v_in, v_out, n, end_bit);
}

int gk_segsort_f64(gk_exec *x, const double *in, double *out, size_t nitems, const uint64_t *off,
                   size_t nseg)
{
    if (!nitems || !nseg)
        return 0;
    if (x->emu) {
        for (size_t i = 0; i < nitems; i++)
            out[i] = in[i];
        for (size_t s = 0; s < nseg; s++)   // stable: CUB's radix order (gk_prim.cuh)
            std::stable_sort(out + off[s], out + off[s + 1]);
        return 0;
    }
    size_t need = 0;
    CUDA_CHECK(cub::DeviceSegmentedSort::StableSortKeys(NULL, need, in, out, (int64_t)nitems,
                                                  (int64_t)nseg, off, off + 1, x->s));
    int rc = tmp_reserve(x, need);
    if (rc)
        return rc;
    CUDA_CHECK(cub::DeviceSegmentedSort::StableSortKeys(x->tmp, need, in, out, (int64_t)nitems,
                                                  (int64_t)nseg, off, off + 1, x->s));
    return 0;
}

namespace {

struct seg_begin_f {              // i -> off[idx[i]]
    const uint64_t *off;
    const uint32_t *idx;
    __host__ __device__ uint64_t operator()(uint32_t i) const { return off[idx[i]]; }
};
struct seg_end_f {                // i -> off[idx[i] + 1]
    const uint64_t *off;
    const uint32_t *idx;
    __host__ __device__ uint64_t operator()(uint32_t i) const { return off[idx[i] + 1]; }
};
struct part_big_f {
    const uint64_t *off;
    uint64_t small_max;
    __host__ __device__ bool operator()(uint32_t p) const { return off[p + 1] - off[p] > small_max; }
};
struct part_small_f {
    const uint64_t *off;
    uint64_t small_max;
    __host__ __device__ bool operator()(uint32_t p) const
    {
        uint64_t n = off[p + 1] - off[p];
        return n >= 1 && n <= small_max;
    }
};

} // namespace

int gk_segsort_f64_idx(gk_exec *x, const double *in, double *out, size_t nitems,
                       const uint64_t *off, const uint32_t *idx, size_t nseg)
{
    if (!nitems || !nseg)
        return 0;
    if (x->emu) {
        for (size_t s = 0; s < nseg; s++) {
            uint64_t a = off[idx[s]], b = off[idx[s] + 1];
            std::copy(in + a, in + b, out + a);
            std::stable_sort(out + a, out + b);
        }
        return 0;
    }
    thrust::counting_iterator<uint32_t> it(0);
    auto beg = thrust::make_transform_iterator(it, seg_begin_f{ off, idx });
    auto end = thrust::make_transform_iterator(it, seg_end_f{ off, idx });
    size_t need = 0;
    CUDA_CHECK(cub::DeviceSegmentedSort::StableSortKeys(NULL, need, in, out, (int64_t)nitems,
                                                  (int64_t)nseg, beg, end, x->s));
    int rc = tmp_reserve(x, need);
    if (rc)
        return rc;
    CUDA_CHECK(cub::DeviceSegmentedSort::StableSortKeys(x->tmp, need, in, out, (int64_t)nitems,
                                                  (int64_t)nseg, beg, end, x->s));
    return 0;
}

int gk_parts_split(gk_exec *x, const uint64_t *off, size_t nparts, uint64_t small_max,
                   uint32_t *big, uint32_t *counts)
{
    if (x->emu) {
        uint32_t nb = 0, ns = 0;
        for (size_t p = 0; p < nparts; p++) {
            uint64_t n = off[p + 1] - off[p];
            if (n > small_max)
                big[nb++] = (uint32_t)p;
            else
                ns += n >= 1;
        }
        counts[0] = nb;
        counts[1] = ns;
        return 0;
    }
    if (!nparts) {
        CUDA_CHECK(cudaMemsetAsync(counts, 0, 2 * sizeof *counts, x->s));
        return 0;
    }
    // Three-way partition of the part indices: big ones kept, small and
    // empty ones only counted.
    thrust::counting_iterator<uint32_t> it(0);
    thrust::discard_iterator<> none;
    part_big_f big_f{ off, small_max };
    part_small_f small_f{ off, small_max };
    size_t need = 0;
    CUDA_CHECK(cub::DevicePartition::If(NULL, need, it, big, none, none, counts, (int64_t)nparts,
                                        big_f, small_f, x->s));
    int rc = tmp_reserve(x, need);
    if (rc)
        return rc;
    CUDA_CHECK(cub::DevicePartition::If(x->tmp, need, it, big, none, none, counts, (int64_t)nparts,
                                        big_f, small_f, x->s));
    return 0;
}
