/* cuda.h — the CUDA backend of the engine (gpu/engine.h).  Its benchmark
 * hooks are the benchmarks' (tools/bench/cuda/bench_hooks.h).
 *
 * Built with nvcc (the .cu files of gpu/cuda) the backend keeps every metric's raw
 * window in GPU memory and runs the whole feed there: classify, sort, dedupe,
 * merge with the window, bucket keys for every granularity, every method,
 * truncate.  Built without (gpu/nocuda/cuda_backend.c) the open call answers
 * GA_ENOGPU.  Answers equal the CPU backend's (docs/GPU.md says how exactly).
 *
 * Failure contract (docs/GPU.md "Fallback"): feed() returns GA_ECUDA when a
 * CUDA call failed; the backend's state is then the one before the feed.
 * window_get() keeps working unless the CUDA context itself is lost (a
 * "sticky" error: illegal address, device lost), in which case it returns
 * GA_ECUDA and the windows must be rebuilt from storage + journal. */
#ifndef GA_CUDA_H
#define GA_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "gpu/engine.h"

struct ga_cuda_opts {
    size_t chunk_points;   /* points per H2D staging chunk; 0 = 1<<20 */
    int ring;              /* pinned staging slots in the ring (>= 2); 0 = 3 */
    int emulate;           /* 1: run every kernel on the host (tests without a GPU;
                              slow); needs a build with nvcc, no GPU */
    int rows_kernel;       /* GA_CUDA_ROWS_*: which rows kernel computes the methods
                              (docs/GPU.md "Rows kernel"); 0 = auto: per launch,
                              tiled from 3 rows a bucket besides a wide record */
    unsigned rows_smem;    /* tiled rows kernel: shared memory a block, bytes; warp
                              rows kernel: bytes a warp stages (256..8192); tests use
                              small values to reach their fallbacks; 0 = default */
    int rows_long;         /* buckets of at least this many points go to the long-task
                              kernel, a warp a bucket (docs/GPU.md "Long buckets"), with
                              either rows kernel; -1 = none (tests use small values to
                              send many buckets there); 0 = 1024 */
    int sort_small;        /* median / Npct: buckets of at most this many values are
                              sorted by the shared-memory kernel, longer ones by CUB
                              (docs/GPU.md "Small-bucket sort"); 1..GA_CUDA_SORT_SMALL_MAX,
                              or -1: every bucket through CUB; 0 = auto (512) */
    size_t piece_bytes;    /* rows of a feed in flight go home in pieces of at most
                              this, one ahead of each count the next feed reads
                              (docs/GPU.md "What overlaps"); 0 = 16 MiB.  Tests use
                              small values to cut a few rows into many pieces */
    int counts;            /* how the host reads the 8 or so counts of a feed:
                              GA_CUDA_COUNTS_MAPPED (a one-thread kernel stores each
                              into mapped page-locked memory: the copy engine stays
                              free, so a feed's rows go home all at once, behind no
                              count) or GA_CUDA_COUNTS_COPY (an 8-byte copy, which
                              queues behind rows: they go in pieces, piece_bytes);
                              0 = mapped */
};
enum { GA_CUDA_COUNTS_DEFAULT = 0, GA_CUDA_COUNTS_MAPPED = 1, GA_CUDA_COUNTS_COPY = 2 };
#define GA_CUDA_SORT_SMALL_MAX 4096
enum { GA_CUDA_ROWS_DEFAULT = 0, GA_CUDA_ROWS_TILED = 1, GA_CUDA_ROWS_WARP = 2 };

/* Open a CUDA backend on CUDA device `device` (an ordinal from
 * ga_gpu_probe()).  o may be NULL (defaults).  *out is owned by the caller
 * (ops->close), or by the engine once passed to ga_engine_open().
 * Returns 0, GA_ENOGPU (no usable device, or built without CUDA), GA_ECUDA
 * (a CUDA call failed while setting up), GA_ENOMEM or GA_EINVAL. */
int ga_cuda_backend_open(struct ga_backend **out, int device, const struct ga_cuda_opts *o);

/* Page-locked host memory for batches: feed() DMAs straight from a batch
 * whose three arrays lie in such memory (no staging copy).  0 or GA_ENOMEM
 * (also when no GPU can pin it); free with ga_cuda_host_free(). */
int ga_cuda_host_alloc(void **p, size_t bytes);
void ga_cuda_host_free(void *p);

/* Feed statistics of a CUDA backend, for status and benchmarks: seconds
 * spent in each stage of the last feed (host wall clock between syncs). */
struct ga_cuda_feed_stats {
    double upload_s, sort_s, merge_s, buckets_s, download_s, rebuild_s, total_s;
    uint64_t points, aggs, late, pool_points;   /* aggs: rows (unpacked; slots in
                                                   ga_result.naggs) */
    /* the same stages as the compute stream ran them (CUDA events): upload
     * and classify, sort and dedupe, merge, bucket tasks (and median sort),
     * the rows kernels, the pool rebuild; 0 in emulation.  These and
     * pool_points describe the last feed whose tail the host has seen end:
     * a feed returns before its tail runs out, so after feed_start they are
     * the feed's before, from the next feed's first wait (or a window call) on
     * its own */
    double gpu_upload_s, gpu_sort_s, gpu_merge_s, gpu_buckets_s, gpu_rows_s, gpu_rebuild_s;
    /* median / Npct: bucket parts (a bucket's values, or its rate: differences)
       sorted by the shared-memory kernel and by CUB (ga_cuda_opts.sort_small) */
    uint64_t sort_small_parts, sort_big_parts;
    /* since open: feeds whose batch prefetch had uploaded, and prefetched
       batches dropped unused (a feed of other arrays found both input sets
       taken) */
    uint64_t prefetch_used, prefetch_dropped;
    /* since open: feeds whose points came in time order per metric (sorted
       by metric alone) and feeds that needed the sort by time as well */
    uint64_t order_in_time, order_sorted;
    /* buffers grown (device, page-locked staging, the result's rows) from
     * the end of the feed before to the end of this one's start (its
     * prefetch included), and the host seconds that took: 0 in the steady
     * state of a workload whose shape holds */
    uint64_t allocs;
    double alloc_s;
    uint64_t pinned_allocs;       /* of those, page-locked host memory */
    double pinned_alloc_s;
};
/* 0, or GA_EINVAL when b is not a CUDA backend. */
int ga_cuda_backend_stats(const struct ga_backend *b, struct ga_cuda_feed_stats *st);

#ifdef __cplusplus
}
#endif
#endif
