/* kmeans.h — the k-means kernel (the job manager wraps it).
 *
 * Objects are float64 rows (row-major [nobjs][coords] in this API; the GPU
 * keeps them column-major, one coordinate after another, for coalescing).
 * Initial centres are the first k objects.  Each iteration assigns every
 * object to its nearest centre (squared Euclidean distance computed as
 * d = sum_j (x_j - c_j)^2, each operation rounded, no fused multiply-add; ties
 * to the lowest index), then moves every centre to the mean of its members
 * (an empty cluster keeps its centre).  The loop stops after an iteration
 * whose delta (fraction of objects whose membership changed) is <= threshold,
 * or after max_loops iterations.
 *
 * Sums are taken in one fixed order (docs/JOBS.md, "k-means: summation
 * order"), the same on the CPU reference and the GPU, so both give the same
 * centres bit for bit and the same memberships.
 *
 *   ga_kmeans_validate / ga_kmeans_validate_objects   checks;
 *   ga_kmeans_generate   the generated dataset (rand_r, seed = object index);
 *   ga_kmeans_cpu        the reference, multi-threaded (pthreads);
 *   ga_kmeans_gpu        self-contained GPU run, all iterations on the device;
 *                        lower-level launcher in gpu/jobs/kmeans/kmeans.cuh. */
#ifndef GA_JOBS_KMEANS_H
#define GA_JOBS_KMEANS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_KMEANS_K_MAX        4096
#define GA_KMEANS_COORDS_MAX   1024
#define GA_KMEANS_NOBJS_MAX    ((int64_t)0x7fffffff)
#define GA_KMEANS_LOOPS_MAX    1000000
/* Fixed summation geometry: a tile of GA_KMEANS_TILE consecutive objects is
 * 256 lanes x GA_KMEANS_ROWS rows; see docs/JOBS.md. */
#define GA_KMEANS_LANES        256
#define GA_KMEANS_ROWS         64
#define GA_KMEANS_TILE         (GA_KMEANS_LANES * GA_KMEANS_ROWS)

struct ga_kmeans_params {
    int64_t nobjs;      /* k..GA_KMEANS_NOBJS_MAX */
    int coords;         /* 1..GA_KMEANS_COORDS_MAX */
    int k;              /* 1..GA_KMEANS_K_MAX, <= nobjs */
    int max_loops;      /* 1..GA_KMEANS_LOOPS_MAX (10) */
    double threshold;   /* 0..1 (0.001) */
    int sync_every;     /* GPU: iterations enqueued between host checks for
                           progress/cancel/convergence; 0 = 64.  With
                           max_loops <= sync_every the host waits only once. */
    int kernel;         /* GPU assign kernel, GA_KMEANS_KERNEL_* (0 = auto);
                           every kernel gives the same bits */
};

/* GPU assign kernels.  LANE and REG serve only "small" (k, coords)
 * (ga_kmeans_kernel_small); AUTO picks LANE there, GENERIC elsewhere.
 *   LANE     per-lane sums in shared memory, only the winning cluster's
 *            sums touched per object (docs/JOBS.md);
 *   REG      per-lane sums in registers, a select-add for every cluster
 *            (the first version, kept for comparison);
 *   GENERIC  any k and coords. */
#define GA_KMEANS_KERNEL_AUTO     0
#define GA_KMEANS_KERNEL_LANE     1
#define GA_KMEANS_KERNEL_REG      2
#define GA_KMEANS_KERNEL_GENERIC  3
/* 1 for (coords <= 2, k <= 32) and (coords 3..4, k <= 16). */
int ga_kmeans_kernel_small(int k, int coords);
const char *ga_kmeans_kernel_name(int kernel);   /* "auto", "lane", "reg", "generic" */

/* Called after each iteration (loop = 1, 2, ...; delta of that iteration).
 * Return nonzero to cancel: the run then returns GA_ECANCELED with the
 * results of the iterations done.  On the GPU, calls come in bursts at each
 * host check (see sync_every). */
typedef int (*ga_kmeans_progress_fn)(void *arg, int loop, double delta);

struct ga_kmeans_result {
    double *centres;       /* in: caller-owned k*coords doubles; out: centres */
    int32_t *membership;   /* in: caller-owned nobjs int32s, or NULL if not wanted */
    int loops;             /* out: iterations done */
    double delta;          /* out: delta of the last iteration */
};

void ga_kmeans_params_default(struct ga_kmeans_params *p);   /* max_loops 10, threshold 0.001 */

/* 0, or GA_EBADARG with a message naming the field ("k must be in 1..4096, got 0"). */
int ga_kmeans_validate(const struct ga_kmeans_params *p, char *err, size_t errlen);
/* Every coordinate finite: 0, or GA_EBADARG naming the first bad one. */
int ga_kmeans_validate_objects(const double *objs, int64_t nobjs, int coords, char *err, size_t errlen);

/* Objects of the generated dataset of `mb` megabytes: mb * 2^20 / (coords * 8). */
int64_t ga_kmeans_lab_nobjs(int64_t mb, int coords);
/* glibc's rand_r, bit for bit (here so the GPU and other libcs agree). */
int ga_kmeans_rand_r(unsigned int *seed);
/* The generated dataset, row-major: for each object i, seed = i, then for each j
 * objs[i*coords+j] = (rand_r(&seed) / (double)RAND_MAX) * 10. */
void ga_kmeans_generate(double *objs, int64_t nobjs, int coords);

/* CPU reference.  objs: row-major, caller-owned, not modified.  nthreads <= 0:
 * one per online CPU; the answer does not depend on it.  Returns 0,
 * GA_EBADARG, GA_ENOMEM or GA_ECANCELED. */
int ga_kmeans_cpu(const struct ga_kmeans_params *p, const double *objs, struct ga_kmeans_result *res,
                  int nthreads, ga_kmeans_progress_fn fn, void *arg, char *err, size_t errlen);

/* GPU run on `device`: objs row-major on the host or the device, or NULL to
 * generate the generated dataset on the device.  Returns 0, GA_EBADARG, GA_ENOGPU,
 * GA_ENOMEM, GA_ECUDA (logged with file and line) or GA_ECANCELED. */
int ga_kmeans_gpu(int device, const struct ga_kmeans_params *p, const double *objs,
                  struct ga_kmeans_result *res, ga_kmeans_progress_fn fn, void *arg, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
