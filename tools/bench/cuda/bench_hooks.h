/* bench_hooks.h — the benchmarks' entry points into the CUDA code: kernel
 * benchmarks, the median sort and galloping-search checks, the job
 * benchmarks.  Built from tools/bench/cuda/ into the benchmarks' archive (Makefile:
 * LAB_LIB), not into libgpuagg.a: the benchmarks (tools/bench/) and the unit
 * tests link it.  Without CUDA, bench_nocuda.c answers GA_ENOGPU. */
#ifndef GA_BENCH_HOOKS_H
#define GA_BENCH_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cuda.h"
#include "gpu/jobs/blackscholes/blackscholes.h"
#include "gpu/jobs/dot/dot.h"
#include "gpu/jobs/kmeans/kmeans.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the aggregation kernels (tools/bench/bench_gpu.c, tests) ------------ */

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

/* ---- the job kernels (tools/bench/bench_jobs_peers.c) ----------------------- */

/* Benchmark support (tools/bench/bench_jobs_peers.c): one size, median of `reps`
 * timed runs each, data resident on the device.  GB/s count bytes read. */
struct ga_dot_bench {
    double ours_ms, cublas_ms, copy_ms;   /* cublas_ms < 0: cuBLAS not found */
    double ours_gbs, cublas_gbs, copy_gbs; /* copy: D2D memcpy, read + written */
    double ours_val, cublas_val, ref_val;  /* ref: ga_dot_cpu on the same data */
    int block;                             /* block size used for `ours` */
};
int ga_dot_bench_run(int device, int dtype, int64_t n, int reps, int block,
                     struct ga_dot_bench *out, char *err, size_t errlen);

/* Benchmark support: options generated on the device, median of `reps` timed
 * runs of ours and of an SDK-style baseline (float, one option per thread,
 * grid-stride) in the same process; bytes = 20 per option (3 read, 2 written). */
struct ga_bs_bench {
    double ours_ms, sdk_ms;
    double ours_gbs, sdk_gbs;        /* effective bandwidth */
    double ours_gopts, sdk_gopts;    /* 1e9 options per second */
    double ours_l1, sdk_l1;          /* L1 error against ga_bs_cpu */
};
int ga_bs_bench_run(int device, int64_t n, int reps, struct ga_bs_bench *out, char *err, size_t errlen);

/* Benchmark support (p->kernel picks the kernel): the dataset generated on
 * the device; times (median of reps) of the whole iteration loop with the data resident (events around the
 * enqueued loop, one host wait), of the generation, and of loading the same
 * objects from host memory (row-major copy + transpose).  centres: k*coords
 * doubles of the last run (may be NULL). */
struct ga_kmeans_bench {
    double iter_ms, per_iter_ms, gen_ms, load_ms;
    int loops;
    double delta;
    int kernel;      /* the GA_KMEANS_KERNEL_* that ran (p->kernel resolved) */
};
int ga_kmeans_bench_run(int device, const struct ga_kmeans_params *p, int reps, struct ga_kmeans_bench *out,
                        double *centres, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
