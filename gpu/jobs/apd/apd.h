/* apd.h — rolling maximum-likelihood fit of Komunjer's asymmetric power
 * distribution (APD) with value-at-risk quantiles (docs/JOBS.md; spec: the
 * project's kernels/apd.md).
 *
 * For every window of `window` consecutive values of a series (window starts
 * 0, stride, 2 stride, ...), the fit is the (θ, λ) with the largest profile
 * log-likelihood ℓ(θ, λ), θ over the window's sorted points, λ over an even
 * grid of n_lambda values on [lambda_lo, lambda_hi]; α̂ and φ̂ follow in
 * closed form, then the requested quantiles q_p.  Candidates whose θ leaves
 * no point below or above (α̂ = 0 or 1) are skipped; ties in ℓ go to the
 * smaller λ, then the smaller θ rank.
 *
 * The CPU reference computes every |x_k - θ|^λ as exp(λ ln|x_k - θ|), the
 * logarithm of each pair once for all λ.  The GPU searches with
 * |x_k - θ|^(λ_j + Δ) = |x_k - θ|^λ_j · |x_k - θ|^Δ along the grid (two exps
 * per pair and chunk of λs, then one multiply per λ; about 1e-15 relative),
 * and recomputes the winner exactly as the CPU does.  Results agree to
 * ~1e-13 relative; the argmax can differ only where two candidates' ℓ are
 * within ~1e-12 of each other. */
#ifndef GA_APD_H
#define GA_APD_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/jobs/job_par.h"

#ifdef __cplusplus
extern "C" {
#endif

#define APD_MAX_QUANTILES 8
#define APD_MAX_WINDOW 4096
#define APD_MAX_LAMBDAS 1024

struct apd_params {
    size_t window;          /* W, values per window: 4..APD_MAX_WINDOW (default 500) */
    size_t stride;          /* distance between window starts, >= 1 (default 1) */
    int n_lambda;           /* L, shape grid size: 1..APD_MAX_LAMBDAS (default 80) */
    double lambda_lo;       /* grid ends, 0.05 <= lo <= hi <= 50 (default 0.5, 4.0); */
    double lambda_hi;       /*   lo == hi when n_lambda == 1 */
    int n_quantiles;        /* 0..APD_MAX_QUANTILES (default 2) */
    double quantiles[APD_MAX_QUANTILES];  /* probabilities in (0,1) (default 0.01, 0.05) */
    int gpu_chunk;          /* GPU tuning: λ values per thread, 8, 16 or 20; 0 = 20 */
};

struct apd_fit {            /* one window */
    double theta;           /* location θ̂ (a point of the window) */
    double phi;             /* scale φ̂ > 0 */
    double alpha;           /* asymmetry α̂ = P(Y <= θ̂) */
    double lambda;          /* shape λ̂ (a grid value) */
    double loglik;          /* ℓ at the fit */
    double q[APD_MAX_QUANTILES];   /* q_p for params.quantiles[0..n_quantiles) */
    int32_t theta_index;    /* rank of θ̂ in the sorted window; -1: no candidate */
    int32_t lambda_index;   /* grid index of λ̂; -1: no candidate (then all NaN) */
};

/* Defaults: W 500, stride 1, 80 λ on [0.5, 4], quantiles 1 % and 5 %. */
void apd_params_default(struct apd_params *p);

/* 0, or GA_EBADARG with a message naming the parameter in err. */
int apd_validate(const struct apd_params *p, size_t n_series, char *err, size_t errlen);

/* Windows in a series of n values: (n - W) / stride + 1, or 0 if n < W. */
size_t apd_window_count(const struct apd_params *p, size_t n);

/* The j-th λ of the grid: lo + j (hi - lo) / (L - 1). */
double apd_lambda(const struct apd_params *p, int j);

/* CPU reference on `threads` threads (1..1024), parallel over windows.
 * out[apd_window_count(p, n)] receives the fits.  cb (may be NULL) runs
 * between rounds of windows with (done, total); nonzero cancels.  Returns
 * 0, GA_EBADARG (bad parameter or a non-finite series value; message in
 * err), GA_ENOMEM, GA_ECANCELED.  The caller owns every buffer. */
int apd_fit_cpu(const struct apd_params *p, const double *series, size_t n, struct apd_fit *out, int threads,
                job_par_progress_fn cb, void *ud, char *err, size_t errlen);

/* The same on GPU `device` (allocate, copy, compute, copy back, free).
 * Also GA_ENOGPU (built without CUDA, no device, no such ordinal) and
 * GA_ECUDA. */
int apd_fit_gpu(int device, const struct apd_params *p, const double *series, size_t n, struct apd_fit *out,
                job_par_progress_fn cb, void *ud, char *err, size_t errlen);

/* The fitted distribution: CDF F(y), log density, quantile Q(p). */
double apd_cdf(const struct apd_fit *f, double y);
double apd_logpdf(const struct apd_fit *f, double y);
double apd_quantile(const struct apd_fit *f, double p);

#ifdef __cplusplus
}
#endif

#endif
