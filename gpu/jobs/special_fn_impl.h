/* special_fn_impl.h — bodies of the special functions of special_fn.h,
 * written once for the host (C) and the device (CUDA): every function is
 * `static inline` and marked GA_HD.  Include special_fn.h from C code; this
 * file only from special_fn.c and from .cu files that need the functions on
 * the device.
 *
 * Methods (from the math, Numerical-Recipes style):
 *   lnΓ(x)   x >= 10: Stirling's series to x^-15; below, the recurrence
 *            Γ(x+1) = x Γ(x) down or up to [1.5, 2.5) and there the Taylor
 *            series of lnΓ around 2 (coefficients from ζ(k)).  A few ulps.
 *   P(a,x)   series  x^a e^-x / Γ(a+1) · Σ x^n / ((a+1)...(a+n))   for x < a+1,
 *   Q(a,x)   continued fraction (modified Lentz)                     otherwise;
 *            the other one as 1 minus it.
 *   P⁻¹      Halley's method on whichever of P or Q is smaller at the
 *            target, from a Wilson–Hilferty (a > 1) or small-a start, kept
 *            inside a bracket that shrinks with every residual's sign. */
#ifndef GA_SPECIAL_FN_IMPL_H
#define GA_SPECIAL_FN_IMPL_H

#include <float.h>
#include <math.h>

#ifndef GA_HD
#ifdef __CUDACC__
#define GA_HD __host__ __device__
#else
#define GA_HD
#endif
#endif

#define GA_SF_EPS   1.1102230246251565e-16   /* 2^-53 */
#define GA_SF_TINY  1e-300
#define GA_SF_MAXIT 100000

/* c_k of lnΓ(2+z) = Σ c_k z^k: c_1 = 1 - γ, c_k = (-1)^k (ζ(k) - 1) / k, from
 * tests/unit/gen_special_fn_ref.py (PRINT_COEFFS=1).  On |z| <= 1/2 the
 * terms fall like 4^-k / k: 30 of them leave < 1e-19. */

GA_HD static inline double ga_sf_lgamma(double x)
{
    if (isnan(x))
        return x;
    if (x <= 0.0)
        return INFINITY;              /* only x > 0 is supported */
    if (isinf(x))
        return INFINITY;
    if (x >= 10.0) {
        /* Stirling: (x-1/2) ln x - x + ln(2π)/2 + Σ_k B_2k / (2k (2k-1) x^(2k-1)), k = 1..8 */
        double z = 1.0 / (x * x);
        double s = -3617.0 / 122400.0;
        s = s * z + 1.0 / 156.0;
        s = s * z - 691.0 / 360360.0;
        s = s * z + 1.0 / 1188.0;
        s = s * z - 1.0 / 1680.0;
        s = s * z + 1.0 / 1260.0;
        s = s * z - 1.0 / 360.0;
        s = s * z + 1.0 / 12.0;
        s /= x;
        return (x - 0.5) * log(x) - x + 0.91893853320467274178 + s;
    }
    /* reduce to [1.5, 2.5) with Γ(x+1) = x Γ(x); near 1 the log goes through
     * log1p of the exact x - 1, so lnΓ(1+e) keeps its relative accuracy */
    double acc = 0.0;
    while (x < 1.5) {
        acc -= (x >= 0.5) ? log1p(x - 1.0) : log(x);
        x += 1.0;
    }
    double prod = 1.0;
    while (x >= 2.5) {                /* exact: x - 1 for 2 <= x < 10 */
        x -= 1.0;
        prod *= x;
    }
    if (prod != 1.0)
        acc += log(prod);
    double z = x - 2.0;               /* exact */
    double poly = 3.1044247747322276e-11;
    poly = poly * z + -6.4229645638381e-11;
    poly = poly * z + 1.330476437424449e-10;
    poly = poly * z + -2.7595228851242334e-10;
    poly = poly * z + 5.731367241678862e-10;
    poly = poly * z + -1.1921401405860912e-09;
    poly = poly * z + 2.4836745438024785e-09;
    poly = poly * z + -5.183475041970047e-09;
    poly = poly * z + 1.0838659214896955e-08;
    poly = poly * z + -2.2711094608943164e-08;
    poly = poly * z + 4.7698101693639804e-08;
    poly = poly * z + -1.0043224823968099e-07;
    poly = poly * z + 2.1207184805554665e-07;
    poly = poly * z + -4.492469198764566e-07;
    poly = poly * z + 9.55141213040742e-07;
    poly = poly * z + -2.039215753801366e-06;
    poly = poly * z + 4.374866789907488e-06;
    poly = poly * z + -9.439488275268397e-06;
    poly = poly * z + 2.050721277567069e-05;
    poly = poly * z + -4.492623673813314e-05;
    poly = poly * z + 9.945751278180853e-05;
    poly = poly * z + -0.00022315475845357939;
    poly = poly * z + 0.0005096695247430425;
    poly = poly * z + -0.001192753911703261;
    poly = poly * z + 0.0028905103307415234;
    poly = poly * z + -0.007385551028673986;
    poly = poly * z + 0.020580808427784546;
    poly = poly * z + -0.0673523010531981;
    poly = poly * z + 0.3224670334241132;
    poly = poly * z + 0.42278433509846713;
    return z * poly + acc;
}

/* ln of the prefactor x^a e^-x / Γ(a). */
GA_HD static inline double ga_sf_gamma_lnpre(double a, double x, double lga)
{
    return a * log(x) - x - lga;
}

/* Series Σ: P(a,x) = e^pre · Σ, with Σ = 1/a + x/(a(a+1)) + ... */
GA_HD static inline double ga_sf_gamma_series(double a, double x)
{
    double ap = a, del = 1.0 / a, sum = del;
    for (int n = 0; n < GA_SF_MAXIT; n++) {
        ap += 1.0;
        del *= x / ap;
        sum += del;
        if (fabs(del) < fabs(sum) * GA_SF_EPS)
            break;
    }
    return sum;
}

/* Continued fraction for Q(a,x) = e^pre · CF (modified Lentz). */
GA_HD static inline double ga_sf_gamma_cf(double a, double x)
{
    double b = x + 1.0 - a, c = 1.0 / GA_SF_TINY, d = 1.0 / b, h = d;
    for (int i = 1; i < GA_SF_MAXIT; i++) {
        double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (fabs(d) < GA_SF_TINY)
            d = GA_SF_TINY;
        c = b + an / c;
        if (fabs(c) < GA_SF_TINY)
            c = GA_SF_TINY;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < GA_SF_EPS)
            break;
    }
    return h;
}

/* Regularised lower incomplete gamma P(a,x) (want_q = 0) or upper Q(a,x)
 * (want_q = 1), for a > 0, x >= 0; NaN outside. */
GA_HD static inline double ga_sf_gamma_pq(double a, double x, int want_q)
{
    if (!(a > 0.0) || !(x >= 0.0))
        return NAN;
    if (x == 0.0)
        return want_q ? 1.0 : 0.0;
    if (isinf(x))
        return want_q ? 0.0 : 1.0;
    double lga = ga_sf_lgamma(a);
    double pre = ga_sf_gamma_lnpre(a, x, lga);
    if (x < a + 1.0) {
        double p = exp(pre) * ga_sf_gamma_series(a, x);
        if (p > 1.0)
            p = 1.0;
        return want_q ? 1.0 - p : p;
    }
    double q = exp(pre) * ga_sf_gamma_cf(a, x);
    if (q > 1.0)
        q = 1.0;
    return want_q ? q : 1.0 - q;
}

/* x with P(a,x) = p, where q = 1 - p is passed as well: the function works
 * from whichever of p and q is smaller, so pass the accurate one (for a
 * tail probability pass q exactly and p = 1 - q).  a > 0; returns 0 for
 * p <= 0, +inf for q <= 0, NaN for bad arguments.
 *
 * Start: x^a / Γ(a+1) >= P(a,x) gives a lower bound x_lo = (p Γ(a+1))^(1/a);
 * then Wilson–Hilferty (a > 1) or the small-a form.  Iterate: in the tails
 * (target below 1e-3) Newton on log P or log Q, which is nearly linear there;
 * otherwise Halley on P - p or q - Q.  A step that leaves the bracket made
 * by the residuals' signs is replaced by bisection (geometric when the
 * bracket spans decades). */
GA_HD static inline double ga_sf_gamma_inv(double a, double p, double q)
{
    if (!(a > 0.0) || isnan(p) || isnan(q))
        return NAN;
    if (p <= 0.0)
        return 0.0;
    if (q <= 0.0)
        return INFINITY;
    int use_q = q < p;
    double target = use_q ? q : p;
    double lga = ga_sf_lgamma(a);
    double lo = 0.0, hi = INFINITY;
    double x;
    if (!use_q) {
        lo = exp((log(p) + ga_sf_lgamma(a + 1.0)) / a);
        if (!(lo < INFINITY))
            lo = 0.0;
    }
    if (a > 1.0) {
        double t = sqrt(-2.0 * log(target));
        double z = t - (2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481));
        if (!use_q)
            z = -z;
        double w = 1.0 - 1.0 / (9.0 * a) + z / (3.0 * sqrt(a));
        x = a * w * w * w;
        if (!(x > 1e-3 * a))
            x = 1e-3 * a;
    } else {
        double t = 1.0 - a * (0.253 + a * 0.12);
        if (p < t)
            x = pow(p / t, 1.0 / a);
        else
            x = 1.0 - log(q / (1.0 - t));
    }
    if (x < lo)
        x = lo;
    for (int it = 0; it < 400; it++) {
        if (!(x > 0.0))
            x = lo > 0.0 ? lo : DBL_MIN;
        double val = ga_sf_gamma_pq(a, x, use_q);
        double f = use_q ? q - val : val - p;        /* increasing in x */
        if (f == 0.0)
            return x;
        if (f < 0.0)
            lo = x;
        else
            hi = x;
        double dens = exp((a - 1.0) * log(x) - x - lga);  /* dP/dx = -dQ/dx */
        double xn = NAN;
        if (dens > 0.0 && dens < INFINITY) {
            if (target < 1e-3 && val > 0.0) {
                double step = (log(val) - log(target)) * (val / dens);
                xn = use_q ? x + step : x - step;
            } else {
                double u = f / dens;
                double corr = 1.0 - 0.5 * fmin(1.0, u * ((a - 1.0) / x - 1.0));
                xn = x - u / corr;
            }
        }
        if (!(xn > lo && xn < hi)) {
            if (isinf(hi))
                xn = 2.0 * (lo > x ? lo : x);
            else if (lo <= 0.0)
                xn = 0.0625 * hi;
            else if (hi > 4.0 * lo)
                xn = sqrt(lo) * sqrt(hi);
            else
                xn = 0.5 * (lo + hi);
        }
        if (fabs(xn - x) <= 4.0 * GA_SF_EPS * xn)
            return xn;
        if (hi < INFINITY && hi - lo <= 2.0 * GA_SF_EPS * hi)
            return xn;
        x = xn;
    }
    return x;
}

#endif
