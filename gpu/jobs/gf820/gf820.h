/* gf820.h — the GF820 collective spouse-pension reserve (docs/JOBS.md,
 * spec: the project's kernels/gf820.md): three nested backward RK4 solves.
 *
 *   Outer   dV/dt = r V - μ_f(x+t) (Middle(x+t, t) - V),  V(120-x) = 0, to t = 0,
 *           year by year, `steps` steps a year
 *   Middle  dI/dη = -gp(τ) h(η,τ) Inner(η, k(τ), t),       I(120) = 0, to η = 1, 2 steps a year
 *   Inner   da/ds = r a - 1{s >= k} - μ_m(η+s)(0 - a),     a(120-η) = 0, to s = 0, `steps` a year
 *
 * Both implementations evaluate each distinct derivative time once: the
 * Middle derivative does not depend on I and the Outer one depends on V
 * only outside Middle, so RK4's two half-step stages share one Middle (one
 * Inner) value, and the end of one step is the start of the next.  That
 * changes no bit of the result (the same function of the same doubles) and
 * halves the work.  What stays: every (t, η) pair gets its own Inner solve
 * (the GPU's parallelism), every t its own Middle.
 *
 * Results: V(0) per contract and the reserve table V(y), y = 0 .. 120-x, in
 * rows of GF820_TABLE_LEN doubles (entries past 120-x are NaN). */
#ifndef GA_GF820_H
#define GA_GF820_H

#include <stddef.h>

#include "gpu/jobs/job_par.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GF820_TABLE_LEN 121      /* V(y), y = 0..120 */
#define GF820_MAX_STEPS 100
#define GF820_MAX_CONTRACTS 100000

struct gf820_contract {
    int g;        /* age-difference parameter of the spouse, years, 0..120 */
    int r;        /* retirement age, 0..120 */
    int x;        /* age of the insured at t = 0, 0..119 */
    int steps;    /* RK4 steps a year, outer and inner levels, 1..GF820_MAX_STEPS */
};

/* 0, or GA_EBADARG with a message naming the contract and field in err. */
int gf820_validate(const struct gf820_contract *c, size_t n, char *err, size_t errlen);

/* Distinct Outer derivative times of one contract (Middle solves):
 * (120 - x) (2 steps + 1).  Each needs 477 Inner solves. */
size_t gf820_outer_points(const struct gf820_contract *c);

/* The Outer derivative times of c in the order the Outer solve uses them,
 * into t[gf820_outer_points(c)]: year y from 120-x down to 1, inside it
 * t_s (s = 0..steps-1, t_0 = y, t_{s+1} = t_s + h) and t_s + h/2, then
 * t_steps: index (120-x-y)(2 steps+1) + 2s, + 2s+1, + 2 steps. */
void gf820_outer_times(const struct gf820_contract *c, double *t);

/* CPU reference, in double, on `threads` threads (>= 1), parallel over the
 * Middle solves of all contracts.  v0[n] receives V(0); table (NULL or
 * n * GF820_TABLE_LEN doubles) the reserve tables.  cb (may be NULL) is
 * called between rounds of Middle solves with (done, total); nonzero
 * cancels.  Returns 0, GA_EBADARG (message in err when err != NULL),
 * GA_ENOMEM, GA_ECANCELED.  The caller owns every buffer. */
int gf820_cpu(const struct gf820_contract *c, size_t n, double *v0, double *table, int threads,
              job_par_progress_fn cb, void *ud, char *err, size_t errlen);

/* The same on GPU `device`: allocates, copies, computes, copies back and
 * frees.  Same arguments and results (to about 1e-15: the GPU's pow/exp
 * differ from glibc's in the last bit; no fused multiply-adds in the RK
 * arithmetic on either side).  Returns 0, GA_EBADARG, GA_ENOMEM,
 * GA_ECANCELED, GA_ENOGPU (built without CUDA, no device, or no such
 * ordinal), GA_ECUDA. */
int gf820_gpu(int device, const struct gf820_contract *c, size_t n, double *v0, double *table,
              job_par_progress_fn cb, void *ud, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
