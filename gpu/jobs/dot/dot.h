/* dot.h — the `dot` job: x·y over float32 or float64 vectors.
 *
 * Three entry points share one parameter struct:
 *   ga_dot_validate  checks the parameters (0 or GA_EBADARG + message);
 *   ga_dot_cpu       the CPU reference: products in double, pairwise sum in
 *                    double over a fixed tree (same answer for any thread count);
 *   ga_dot_gpu       self-contained GPU run (allocate, copy, compute, copy back,
 *                    free); x and y may be host or device pointers.
 * The lower-level launcher on device pointers and a cudaStream_t is in
 * gpu/jobs/dot/dot.cuh.  Both answers are doubles: float32 inputs are multiplied
 * exactly in double and accumulated in double on both sides (docs/JOBS.md). */
#ifndef GA_JOBS_DOT_H
#define GA_JOBS_DOT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ga_dot_dtype { GA_DOT_F32 = 0, GA_DOT_F64 = 1 };

#define GA_DOT_N_MAX ((int64_t)1 << 34)   /* 16 Gi elements */

struct ga_dot_params {
    int dtype;       /* GA_DOT_F32 or GA_DOT_F64 */
    int64_t n;       /* elements in each vector, 1..GA_DOT_N_MAX */
};

/* Bytes of one element (4 or 8), 0 for an unknown dtype. */
size_t ga_dot_elem_size(int dtype);

/* 0, or GA_EBADARG with a message naming the bad field in err. */
int ga_dot_validate(const struct ga_dot_params *p, char *err, size_t errlen);

/* CPU reference.  x, y: p->n elements of p->dtype (caller-owned).  *out gets
 * the dot product; abs_out (may be NULL) gets sum |x_i*y_i|, the scale that
 * error bounds use.  nthreads <= 0: one per online CPU.  Returns 0,
 * GA_EBADARG (err says why) or GA_ENOMEM. */
int ga_dot_cpu(const struct ga_dot_params *p, const void *x, const void *y, double *out,
               double *abs_out, int nthreads, char *err, size_t errlen);

/* GPU run on CUDA device `device`: x, y host or device pointers (not
 * modified).  Returns 0 with *out set, GA_EBADARG, GA_ENOGPU (no device or a
 * build without CUDA; err says which), GA_ENOMEM or GA_ECUDA (the failing call
 * is logged with file and line).  Sets the calling thread's current device. */
int ga_dot_gpu(int device, const struct ga_dot_params *p, const void *x, const void *y,
               double *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
