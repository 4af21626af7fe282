// gk_sort.cuh — the sorted values median and Npct read (gk_sort.cu): every
// task part's values (a bucket's points, or a rate: part's differences)
// into sorted[sortoff[part] ..], ascending.  docs/GPU.md "Small-bucket sort".
//
// Two ways, picked per part by its length:
//  * parts of 1..small_max values: one kernel reads them straight from the
//    merged windows, sorts them in shared memory and writes them sorted (no
//    gather, no second pass over the values);
//  * longer parts: gathered into unsorted[] and sorted by CUB's segmented
//    sort, given only those parts as its segments.
// Order: ascending by value; values that compare equal keep their input
// order (the only such values with different bits are -0.0 and +0.0: CUB's
// radix sort ranks both as +0.0 and is stable, and so is this).  No NaN
// reaches the sort (the feed rejects non-finite values).
#pragma once

#include "gpu/cuda/gk_bucket.cuh"

#include <string.h>

// Checking the two sorts against each other (sort_check.cu, cuda_bench.cu):
// cnt[0] += positions where a and b differ in bits, cnt[1] += those of them
// that are zeros both (-0.0 against +0.0: the order of equal values).
struct gk_bits_differ_f {
    const double *a, *b;
    unsigned long long *cnt;      // 2 counters
    __host__ __device__ void operator()(size_t i) const
    {
        uint64_t x, y;
        memcpy(&x, &a[i], 8);
        memcpy(&y, &b[i], 8);
        if (x != y) {
            int zero = a[i] == 0.0 && b[i] == 0.0;
#ifdef __CUDA_ARCH__
            atomicAdd(&cnt[0], 1ULL);
            if (zero)
                atomicAdd(&cnt[1], 1ULL);
#else
            cnt[0]++;
            cnt[1] += zero;
#endif
        }
    }
};

// Auto: parts of up to this many values through the shared-memory kernel.
// bench_gpu prints both sorts at 6, 30 and 356 values a part (docs/GPU.md
// "Small-bucket sort"); 512 keeps the 1 h buckets of 10 s samples (360) on
// the shared-memory side.
#define GK_SORT_SMALL_AUTO 512u
// The most small_max may be (the kernel's shared memory grows with it).
#define GK_SORT_SMALL_MAX 4096u

struct gk_sort_cfg {
    unsigned small_max;           // parts of 1..small_max values: the shared-memory kernel
                                  // (capped at GK_SORT_SMALL_MAX); longer ones gather + CUB.
                                  // 0: every part through gather + CUB, no shared-memory kernel
                                  // (no split, no wait): the bench's baseline, and a way out.
    // The split's one host wait: read the device word *d into *h once the
    // stream's work before it is done; 0 or an error code.  The backend
    // passes its own count read (which first sends a piece of the previous
    // feed's rows home); NULL: a cudaMemcpyAsync + stream sync here.
    int (*read64)(void *ctx, const uint64_t *d, uint64_t *h);
    void *ctx;
};

// Parts each way, for tests and benchmarks.  With small_max 0 every part
// (empty ones too) is handed to CUB and counted in big.
struct gk_sort_counts {
    uint64_t small_parts, big_parts;
};

// Sort the 2 * ntasks parts of tasks[0, ntasks) (sortoff: exclusive sums of
// gk_bucket_sortlen's lengths, 2 * ntasks + 1 entries, device; nvalues =
// sortoff[2 * ntasks], known on the host) into sorted[], both device arrays
// of nvalues doubles; unsorted[] is the big parts' gather buffer.  scratch:
// device memory of at least gk_sort_scratch_bytes(ntasks) bytes, 8-aligned
// (the backend passes its sortlen array, dead after the scan).  cfg NULL =
// auto.  counts may be NULL.  With small_max > 0 the host waits once
// (cfg->read64) for the two counts (to size CUB's call, and to skip the
// kernel or CUB when it has nothing).  0, GA_ECUDA, GA_ENOMEM or read64's
// error.  On the executor's stream; in emulation every step runs on the
// host, the kernel block by block, phase by phase.
int gk_bucket_sort(gk_exec *x, const gk_view *v, const gk_task *tasks, size_t ntasks,
                   const uint64_t *sortoff, uint64_t nvalues, double *unsorted, double *sorted,
                   void *scratch, const gk_sort_cfg *cfg, gk_sort_counts *counts);

// small_max for a backend from ga_cuda_opts.sort_small: > 0 as is (at most
// GK_SORT_SMALL_MAX), -1: 0 (CUB only), 0: GK_SORT_SMALL_AUTO.
unsigned gk_sort_small_max(int opt);

static inline size_t gk_sort_scratch_bytes(size_t ntasks)
{
    return 2 * sizeof(uint32_t) + 2 * ntasks * sizeof(uint32_t);   // counts, long parts
}
