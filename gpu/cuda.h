/* cuda.h — the CUDA backend of the engine (gpu/engine.h), and its benchmark
 * hooks.
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
                              (docs/GPU.md "Rows kernel"); 0 = the environment's
                              GA_CUDA_ROWS_KERNEL ("auto", "tiled" or "warp"),
                              else auto: per launch, tiled from 3 rows a bucket
                              besides a wide record */
    unsigned rows_smem;    /* tiled rows kernel: shared memory a block, bytes; warp
                              rows kernel: bytes a warp stages (256..8192); tests use
                              small values to reach their fallbacks; 0 = default */
    int rows_long;         /* buckets of at least this many points go to the long-task
                              kernel, a warp a bucket (docs/GPU.md "Long buckets"), with
                              either rows kernel; -1 = none (tests use small values to
                              send many buckets there); 0 = the environment's
                              GA_CUDA_ROWS_LONG (a number, or "off"), else 1024
                              (another value: a warning, and 1024) */
    int sort_small;        /* median / Npct: buckets of at most this many values are
                              sorted by the shared-memory kernel, longer ones by CUB
                              (docs/GPU.md "Small-bucket sort"); 1..GA_CUDA_SORT_SMALL_MAX,
                              or -1: every bucket through CUB; 0 = the environment's
                              GA_CUDA_SORT_SMALL (a number 0..GA_CUDA_SORT_SMALL_MAX,
                              0 meaning CUB only, or "auto"), else auto (512) */
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
                              0 = the environment's GA_CUDA_COUNTS ("mapped" or
                              "copy"), else mapped */
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

/* ---- benchmark hooks (tools/bench/bench_gpu.c) ---------------------------- */

/* Kernel-only timings over points already on the GPU: nmetrics series of
 * npoints_per_metric sorted points each, step_ns apart, aggregated at
 * granularity gran_ns.  Each figure is the median of `repeat` timed runs
 * after a warm-up, in seconds. */
struct ga_cuda_kbench {
    int64_t nmetrics, npoints_per_metric, step_ns, gran_ns;
    int repeat;
    int basic_only;        /* 1: basic and sum only (no median/Npct, no rate:) */
    /* out: the four method sets with the tiled rows kernel (the default) */
    double d2d_gbps;       /* device-to-device copy, bytes read + written per s */
    double h2d_gbps;       /* pinned host to device */
    double d2h_gbps;       /* pinned device to host */
    double duplex_gbps;    /* H2D and D2H at once (two streams, the same bytes
                              each way): bytes both ways per s */
    double basic_s;        /* bucket keys + count,sum,mean,min,max,first,last,std */
    double sum_s;          /* bucket keys + sum alone */
    double sort_s;         /* bucket keys + median + 90pct (segmented sort) */
    double rate_s;         /* bucket keys + rate:mean,rate:sum,rate:std,rate:max */
    uint64_t buckets;
    int checked;           /* 1 if a sample of buckets matched a host recomputation
                              (basic, with each rows kernel) */
    /* the same runs with the warp rows kernel, and the rows kernel alone
       (events around it), indexed basic, sum, sort, rate */
    double warp_s[4];
    double rows_s[4], warp_rows_s[4];
    int64_t rows_differ;   /* basic: rows whose fields differ between the two kernels
                              (0 expected; -1 not compared) */
    unsigned tiled_smem;   /* the tiled kernel's shared memory a block, bytes */
    int tiled_blocks_per_sm;   /* and its blocks an SM (occupancy calculator) */
    /* median + 90pct with each sort (docs/GPU.md "Small-bucket sort"), same data,
       same run, warp rows kernel (auto's pick for 2 rows a bucket); also when
       basic_only, if sort_both */
    int sort_both;         /* in: 1 = run these with basic_only too */
    unsigned sort_small;   /* in: the second run's threshold (buckets of at most this many
                              values in shared memory); 0 = auto.  out: the one used */
    double sort_cub_s, sort_small_s;        /* bucket keys + sort + rows: CUB alone,
                                               shared-memory kernel + CUB */
    double sort_cub_sort_s, sort_small_sort_s;   /* the sort alone (events around it) */
    uint64_t sort_small_parts, sort_big_parts;   /* the second run's parts, each way */
    int64_t sorted_differ; /* sorted values whose bits differ between the two
                              (0 expected; -1 not compared) */
    /* basic as wide records (engine.h; 96 bytes a bucket, not 8 rows of 32):
       [0] tiled, [1] warp rows kernel; the whole pass and the rows kernel */
    double wide_s[2], wide_rows_s[2];
    /* bucket keys + tasks alone (the first part of every line above): [0] two
       passes and a scan (what the lines run: head bits and counts, then the
       tasks), [1] one pass chaining the tiles by decoupled look-back, [2] three
       passes (head flags, CUB select, a task a start); and tasks whose fields
       differ between [0] or [1] and [2] (0 expected; -1 not compared) */
    double keys_s[3];
    int64_t tasks_differ;
    int64_t wide_differ;   /* buckets whose record is not the tiled kernel's 8 rows
                              packed (0 expected; -1 not compared) */
};
int ga_cuda_kernel_bench(int device, struct ga_cuda_kbench *kb);

/* The median / Npct sort's two ways on the same random buckets, value for
 * value (tests): the shared-memory kernel for buckets of up to small_max
 * values + CUB for longer ones, against CUB alone.  The buckets are made to
 * reach the kernel's edges (1..8 values, multiples of its 32-value chunks,
 * around small_max and past it, rate: differences) with many ties, -0.0
 * and +0.0.  emulate: 1 = on the host (no GPU needed, CUB replaced by a
 * stable sort); else on CUDA device `device`.  0, GA_ENOGPU, GA_EINVAL,
 * GA_ENOMEM or GA_ECUDA. */
struct ga_cuda_sort_check {
    int emulate;           /* in */
    uint64_t seed;         /* in */
    unsigned small_max;    /* in: 1..GA_CUDA_SORT_SMALL_MAX; 0 = auto */
    uint64_t points;       /* in: about this many points in all; 0 = 200,000 */
    uint64_t values;       /* out: values sorted */
    uint64_t small_parts, big_parts;   /* out: parts each way */
    uint64_t differ;       /* out: values whose bits differ (0 expected) */
    uint64_t zero_swaps;   /* out: of those, -0.0 against +0.0 (order of equal values) */
};
int ga_cuda_sort_check(int device, struct ga_cuda_sort_check *c);

/* The feed's galloping searches (gpu/cuda/gk.cuh) against plain binary
 * search on `arrays` random sorted arrays, 120 queries each: *differ
 * answers that disagree (0 expected) of *checked.  Host code (the searches
 * are the kernels' own __host__ __device__ functions).  0, or GA_ENOGPU in
 * a build without nvcc. */
int ga_cuda_search_check(uint64_t seed, int arrays, uint64_t *checked, uint64_t *differ);

#ifdef __cplusplus
}
#endif
#endif
