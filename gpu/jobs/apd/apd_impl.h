/* apd_impl.h — APD arithmetic shared by the CPU reference (apd.c) and the
 * GPU (apd_gpu.cu): the λ table, one candidate's ℓ, the exact sums, and the
 * fit's closed-form parameters and quantiles. */
#ifndef GA_APD_IMPL_H
#define GA_APD_IMPL_H

#include <limits.h>
#include <math.h>

#include "gpu/jobs/apd/apd.h"
#include "gpu/jobs/special_fn_impl.h"

/* Per grid λ, computed once on the host for both sides. */
struct apd_lam {
    double lam;       /* λ_j */
    double inv1;      /* 1 / (λ + 1) */
    double cst;       /* -n lnΓ(1 + 1/λ) - (n/λ)(1 + ln(λ/n)) */
    double coef;      /* n (λ + 1) / λ */
};

/* ℓ = cst - coef ln(A + B), A = (X⁻)^(1/(λ+1)), B = (X⁺)^(1/(λ+1));
 * -inf when X⁻ or X⁺ is 0 (α̂ would be 0 or 1). */
GA_HD static inline double apd_candidate_ll(double xm, double xp, const struct apd_lam *t)
{
    if (!(xm > 0.0) || !(xp > 0.0))
        return -INFINITY;
    double a = pow(xm, t->inv1), b = pow(xp, t->inv1);
    return t->cst - t->coef * log(a + b);
}

/* Is candidate (ll, j, i) better than (bll, bj, bi)?  Larger ℓ, then
 * smaller λ index, then smaller θ rank; non-finite ℓ never wins. */
GA_HD static inline int apd_better(double ll, int j, int i, double bll, int bj, int bi)
{
    if (!isfinite(ll))
        return 0;
    if (!isfinite(bll))
        return 1;
    return ll > bll || (ll == bll && (j < bj || (j == bj && i < bi)));
}

/* X⁻ = Σ_{k<i} (x_i - x_k)^λ, X⁺ = Σ_{k>i} (x_k - x_i)^λ over the sorted
 * window, each power as exp(λ ln d), in increasing k — the CPU search's
 * exact arithmetic. */
GA_HD static inline void apd_sums_exact(const double *xs, int n, int i, double lam, double *xm, double *xp)
{
    double theta = xs[i], sm = 0.0, sp = 0.0;
    for (int k = 0; k < i; k++)
        sm += exp(lam * log(theta - xs[k]));
    for (int k = i + 1; k < n; k++)
        sp += exp(lam * log(xs[k] - theta));
    *xm = sm;
    *xp = sp;
}

/* δ(α,λ) = 2 α^λ (1-α)^λ / (α^λ + (1-α)^λ) */
GA_HD static inline double apd_delta(double alpha, double lam)
{
    double a = pow(alpha, lam), b = pow(1.0 - alpha, lam);
    return 2.0 * a * b / (a + b);
}

/* Q(p) of the standardised APD (θ = 0, φ = 1). */
GA_HD static inline double apd_std_quantile(double alpha, double lam, double delta, double p)
{
    double s = 1.0 / lam;
    if (!(p > 0.0 && p < 1.0))
        return p == 0.0 ? -INFINITY : p == 1.0 ? INFINITY : NAN;
    if (p <= alpha) {
        double tail = p / alpha;                     /* P⁻¹(1 - p/α) = Q⁻¹(p/α) */
        double g = ga_sf_gamma_inv(s, 1.0 - tail, tail);
        return -alpha * pow(delta, -s) * pow(g, s);
    }
    double tail = (1.0 - p) / (1.0 - alpha);
    double g = ga_sf_gamma_inv(s, 1.0 - tail, tail);
    return (1.0 - alpha) * pow(delta, -s) * pow(g, s);
}

/* The fit for winner (i, j) of the sorted window xs[n]: exact sums, α̂, φ̂,
 * ℓ, quantiles.  i < 0 fills the no-candidate result. */
GA_HD static inline void apd_finish(const double *xs, int n, int i, int j, const struct apd_lam *tab,
                                    int nq, const double *qs, struct apd_fit *out)
{
    if (i < 0) {
        out->theta = out->phi = out->alpha = out->lambda = out->loglik = NAN;
        for (int m = 0; m < APD_MAX_QUANTILES; m++)
            out->q[m] = NAN;
        out->theta_index = -1;
        out->lambda_index = -1;
        return;
    }
    const struct apd_lam *t = &tab[j];
    double lam = t->lam, xm, xp;
    apd_sums_exact(xs, n, i, lam, &xm, &xp);
    double a = pow(xm, t->inv1), b = pow(xp, t->inv1);
    double alpha = a / (a + b);
    double delta = apd_delta(alpha, lam);
    double phil = (lam / n) * delta * (xm / pow(alpha, lam) + xp / pow(1.0 - alpha, lam));
    double phi = pow(phil, 1.0 / lam);
    out->theta = xs[i];
    out->phi = phi;
    out->alpha = alpha;
    out->lambda = lam;
    out->loglik = apd_candidate_ll(xm, xp, t);
    for (int m = 0; m < APD_MAX_QUANTILES; m++)
        out->q[m] = m < nq ? xs[i] + phi * apd_std_quantile(alpha, lam, delta, qs[m]) : NAN;
    out->theta_index = i;
    out->lambda_index = j;
}

#endif
