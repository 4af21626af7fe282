/* special_fn.h — gamma-family special functions for the job kernels, in
 * double precision, written from the math (no libm lgamma / no Cephes), so
 * that host and device run the same code (the bodies live in
 * special_fn_impl.h, included by CUDA kernels too).
 *
 * Accuracy against 50-digit values (tests/unit/test_special_fn.c, data from
 * tests/unit/gen_special_fn_ref.py): lnΓ within 1e-14 absolute or 1e-14
 * relative; P and Q within 1e-13 relative where they are above 1e-300;
 * the inverses round-trip to 1e-13 relative in x. */
#ifndef GA_SPECIAL_FN_H
#define GA_SPECIAL_FN_H

#ifdef __cplusplus
extern "C" {
#endif

/* ln Γ(x) for x > 0; +inf for x <= 0, NaN for NaN. */
double ga_lgamma(double x);
/* Regularised incomplete gamma functions, a > 0, x >= 0 (NaN outside):
 * P(a,x) = γ(a,x)/Γ(a), Q(a,x) = 1 - P(a,x) computed without cancellation. */
double ga_gamma_p(double a, double x);
double ga_gamma_q(double a, double x);
/* Inverses: x with P(a,x) = p, resp. Q(a,x) = q.  0 at p = 0 (q = 1),
 * +inf at p = 1 (q = 0), NaN outside [0,1] or for a <= 0. */
double ga_gamma_p_inv(double a, double p);
double ga_gamma_q_inv(double a, double q);

#ifdef __cplusplus
}
#endif

#endif
