/* blackscholes.h — the `blackscholes` job: European call and put prices under
 * Black-Scholes, the CUDA SDK sample's model.
 *
 * Options are given as three float arrays S (spot), X (strike), T (years);
 * prices come back as float (GPU) or double (CPU reference).  CND is the
 * 5-coefficient polynomial of Abramowitz-Stegun 26.2.17, as in the SDK sample.
 *   ga_bs_validate / ga_bs_validate_inputs  parameters / option arrays;
 *   ga_bs_generate   the seeded generator (SDK ranges, counter-based: option
 *                    i depends on (seed, i) only, and the GPU makes the same);
 *   ga_bs_cpu        double reference, multi-threaded;
 *   ga_bs_gpu        self-contained GPU run; lower-level launcher in
 *                    gpu/jobs/blackscholes/blackscholes.cuh. */
#ifndef GA_JOBS_BLACKSCHOLES_H
#define GA_JOBS_BLACKSCHOLES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_BS_N_DEFAULT   (4 * 1024 * 1024)
#define GA_BS_N_MAX       ((int64_t)1 << 31)
#define GA_BS_RISKFREE    0.02
#define GA_BS_VOLATILITY  0.30
/* Generator ranges (the SDK sample's). */
#define GA_BS_S_LO 5.0f
#define GA_BS_S_HI 30.0f
#define GA_BS_X_LO 1.0f
#define GA_BS_X_HI 100.0f
#define GA_BS_T_LO 0.25f
#define GA_BS_T_HI 10.0f

struct ga_bs_params {
    int64_t n;           /* options, 1..GA_BS_N_MAX (GA_BS_N_DEFAULT by default) */
    double riskfree;     /* annual rate, -1..1 (0.02) */
    double volatility;   /* annual, (0, 5] (0.30) */
    uint64_t seed;       /* generator seed when no arrays are given */
};

/* The defaults above (n = 4M, r = 0.02, v = 0.30, seed 5347). */
void ga_bs_params_default(struct ga_bs_params *p);

/* 0, or GA_EBADARG with a message naming the bad field. */
int ga_bs_validate(const struct ga_bs_params *p, char *err, size_t errlen);
/* Every S, X, T finite and > 0: 0, or GA_EBADARG naming the first bad option. */
int ga_bs_validate_inputs(const float *S, const float *X, const float *T, int64_t n, char *err, size_t errlen);

/* Fill S, X, T[0..n) (caller-owned) from `seed`: value k of option i is
 * lo + (hi-lo)-blend of t = top 24 bits of splitmix64(seed, 3i+k) / 2^24,
 * computed as (1-t)*lo + t*hi in float, as the SDK's RandFloat. */
void ga_bs_generate(float *S, float *X, float *T, int64_t n, uint64_t seed);

/* Double-precision reference: call[i], put[i] (caller-owned, n doubles each).
 * nthreads <= 0: one per online CPU.  0, GA_EBADARG or GA_ENOMEM. */
int ga_bs_cpu(const struct ga_bs_params *p, const float *S, const float *X, const float *T,
              double *call, double *put, int nthreads, char *err, size_t errlen);

/* sum|got - ref| / sum|ref| over calls and puts together. */
double ga_bs_l1_error(const float *call, const float *put, const double *rcall, const double *rput, int64_t n);

/* GPU run on `device`.  S, X, T: host or device arrays of p->n floats, or all
 * three NULL to generate them on the device from p->seed (same values as
 * ga_bs_generate).  call, put: host or device arrays of p->n floats (caller-
 * owned).  0, GA_EBADARG, GA_ENOGPU, GA_ENOMEM or GA_ECUDA (logged). */
int ga_bs_gpu(int device, const struct ga_bs_params *p, const float *S, const float *X, const float *T,
              float *call, float *put, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
