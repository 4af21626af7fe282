/* gf820_impl.h — the GF820 model functions and RK4 steps, one body for the
 * host (gf820.c) and the device (gf820.cu).  Every expression keeps the
 * evaluation order of the published C# model (Actulus GF820, Rk4.OneStep),
 * and the arithmetic goes through GF_MUL/GF_ADD/GF_SUB: plain operators on
 * the host (C11 in ISO mode does not contract a*b+c into fma, and x86-64
 * without -march has no fma), __dmul_rn/__dadd_rn/__dsub_rn on the device,
 * which nvcc never fuses.  Only pow/exp differ (device: exp10/exp, <= 1-2
 * ulp; host: glibc). */
#ifndef GA_GF820_IMPL_H
#define GA_GF820_IMPL_H

#include <math.h>

#ifndef GA_HD
#ifdef __CUDACC__
#define GA_HD __host__ __device__
#else
#define GA_HD
#endif
#endif

#if defined(__CUDA_ARCH__)
#define GF_MUL(a, b) __dmul_rn((a), (b))
#define GF_ADD(a, b) __dadd_rn((a), (b))
#define GF_SUB(a, b) __dsub_rn((a), (b))
#define GF_POW10(y) exp10(y)
#else
#define GF_MUL(a, b) ((a) * (b))
#define GF_ADD(a, b) ((a) + (b))
#define GF_SUB(a, b) ((a) - (b))
#define GF_POW10(y) pow(10.0, (y))
#endif

#define GF_RATE 0.05            /* rate(t), constant */
#define GF_ETA_POINTS 477       /* Middle's η values: 120 - j/4, j = 0..476 */
#define GF_MIDDLE_STEPS 238     /* SolveFinal(120, 1, 2) */

/* Gompertz–Makeham intensities: 0.0005 + 10^(5.728 - 10 + 0.038 t) */
GA_HD static inline double gf_mu_female(double t)
{
    return GF_ADD(0.0005, GF_POW10(GF_ADD(5.728 - 10, GF_MUL(0.038, t))));
}

GA_HD static inline double gf_mu_male(double t)
{
    return GF_ADD(0.0005, GF_POW10(GF_ADD(5.880 - 10, GF_MUL(0.038, t))));
}

GA_HD static inline double gf_parabel(double t)
{
    double v = GF_MUL(GF_SUB(15.0, t), GF_SUB(t, 120.0));
    return v > 0.0 ? v : 0.0;
}

/* gp(τ) = Parabel(τ) / (Parabel(67.5) / 0.9) */
GA_HD static inline double gf_gp(double tau)
{
    double scale = gf_parabel(67.5) / 0.9;
    return gf_parabel(tau) / scale;
}

/* h(η,τ) = exp(-(τ-η)²/(2σ²)) / (σ √(2π)), σ = 3; 0 outside 0 < η < 120 */
GA_HD static inline double gf_h(double eta, double tau)
{
    if (eta <= 0.0 || eta >= 120.0)
        return 0.0;
    double sigma = 3.0;
    double pre = 1.0 / GF_MUL(sqrt(GF_MUL(2.0, 3.14159265358979323846)), sigma);
    double fac = 1.0 / GF_MUL(GF_MUL(2.0, sigma), sigma);
    double d = GF_SUB(tau, eta);
    return GF_MUL(pre, exp(GF_MUL(GF_MUL(GF_MUL(-1.0, d), d), fac)));
}

/* k(τ) = g before retirement, r + g - τ in the g years after, then 0 */
GA_HD static inline double gf_k(int g, int r, double tau)
{
    return (tau < r) ? (double)g : (tau < r + g) ? GF_SUB((double)(r + g), tau) : 0.0;
}

/* Inner derivative r a - 1{s >= k} - μ_m(η+s) (0 - a), with μ given */
GA_HD static inline double gf_inner_f(double s, double a, double k, double mu)
{
    double ind = (s >= k) ? 1.0 : 0.0;
    return GF_SUB(GF_SUB(GF_MUL(GF_RATE, a), ind), GF_MUL(mu, GF_SUB(0.0, a)));
}

/* One RK4 step of the Inner ODE from s = t with length h (Rk4.OneStep):
 * k_i = h f(...); the two half-step stages share μ_m(η + t + h/2). */
GA_HD static inline double gf_inner_step(double h, double t, double v, double eta, double k)
{
    double th = GF_ADD(t, h / 2);
    double te = GF_ADD(t, h);
    double mu_half = gf_mu_male(GF_ADD(eta, th));
    double k1 = GF_MUL(h, gf_inner_f(t, v, k, gf_mu_male(GF_ADD(eta, t))));
    double tmp = GF_ADD(GF_MUL(0.5, k1), v);
    double k2 = GF_MUL(h, gf_inner_f(th, tmp, k, mu_half));
    tmp = GF_ADD(GF_MUL(0.5, k2), v);
    double k3 = GF_MUL(h, gf_inner_f(th, tmp, k, mu_half));
    tmp = GF_ADD(GF_MUL(1.0, k3), v);
    double k4 = GF_MUL(h, gf_inner_f(te, tmp, k, gf_mu_male(GF_ADD(eta, te))));
    tmp = GF_ADD(GF_MUL(1 / 6.0, k4), v);
    tmp = GF_ADD(GF_MUL(2 / 6.0, k3), tmp);
    tmp = GF_ADD(GF_MUL(2 / 6.0, k2), tmp);
    return GF_ADD(GF_MUL(1 / 6.0, k1), tmp);
}

/* Inner(η, k) = SolveFinal(120 - η, 0, steps) from a = 0.  (rate is
 * constant, so Inner does not depend on the outer t.) */
GA_HD static inline double gf_inner(double eta, double k, int steps)
{
    double a = GF_SUB(120.0, eta), b = 0.0;
    double h = -1.0 / steps;
    int full = (int)floor(GF_MUL(GF_SUB(a, b), (double)steps));
    double t = GF_SUB(b, GF_MUL((double)full, h));
    double v = 0.0;
    if (GF_SUB(a, t) > 1e-10)
        v = gf_inner_step(GF_SUB(t, a), a, v, eta, k);
    for (int s = 0; s < full; s++) {
        t = GF_ADD(b, GF_MUL((double)(s - full), h));
        v = gf_inner_step(h, t, v, eta, k);
    }
    return v;
}

/* Middle's derivative at η_j = 120 - j/4 for τ = x + t:
 * -gp(τ) h(η,τ) Inner(η, k(τ)); no Inner solve where the factor is 0. */
GA_HD static inline double gf_middle_f(int j, double tau, double k, int steps)
{
    double eta = GF_SUB(120.0, GF_MUL(0.25, (double)j));
    double c = GF_MUL(-gf_gp(tau), gf_h(eta, tau));
    if (c == 0.0)
        return 0.0;
    return GF_MUL(c, gf_inner(eta, k, steps));
}

/* One RK4 step of a derivative that does not depend on the state, given
 * the values at t, t+h/2 and t+h (stages 2 and 3 share f_half). */
GA_HD static inline double gf_step_given(double h, double v, double f0, double f_half, double f1)
{
    double k1 = GF_MUL(h, f0);
    double k2 = GF_MUL(h, f_half);
    double k3 = k2;
    double k4 = GF_MUL(h, f1);
    double tmp = GF_ADD(GF_MUL(1 / 6.0, k4), v);
    tmp = GF_ADD(GF_MUL(2 / 6.0, k3), tmp);
    tmp = GF_ADD(GF_MUL(2 / 6.0, k2), tmp);
    return GF_ADD(GF_MUL(1 / 6.0, k1), tmp);
}

/* Middle = SolveFinal(120, 1, 2) over the derivative values d[477] */
GA_HD static inline double gf_middle_combine(const double *d)
{
    double v = 0.0;
    for (int s = 0; s < GF_MIDDLE_STEPS; s++)
        v = gf_step_given(-0.5, v, d[2 * s], d[2 * s + 1], d[2 * s + 2]);
    return v;
}

/* Outer derivative r V - μ_f(x+t) (M - V) */
GA_HD static inline double gf_outer_f(int x, double t, double v, double m)
{
    return GF_SUB(GF_MUL(GF_RATE, v), GF_MUL(gf_mu_female(GF_ADD((double)x, t)), GF_SUB(m, v)));
}

/* The Outer solve (Rk4.SolveAll(120-x, 0, steps)) given the Middle values
 * m[] at the times t[] of gf820_outer_times; table[0..120-x] = V(y). */
GA_HD static inline double gf_outer_solve(int x, int steps, const double *t, const double *m, double *table)
{
    int a = 120 - x;
    double h = -1.0 / steps;
    double v = 0.0;
    table[a] = 0.0;
    int per_year = 2 * steps + 1;
    for (int y = a; y > 0; y--) {
        const double *ty = t + (size_t)(a - y) * per_year;
        const double *my = m + (size_t)(a - y) * per_year;
        for (int s = 0; s < steps; s++) {
            double t0 = ty[2 * s], th = ty[2 * s + 1], te = ty[2 * s + 2];
            double k1 = GF_MUL(h, gf_outer_f(x, t0, v, my[2 * s]));
            double tmp = GF_ADD(GF_MUL(0.5, k1), v);
            double k2 = GF_MUL(h, gf_outer_f(x, th, tmp, my[2 * s + 1]));
            tmp = GF_ADD(GF_MUL(0.5, k2), v);
            double k3 = GF_MUL(h, gf_outer_f(x, th, tmp, my[2 * s + 1]));
            tmp = GF_ADD(GF_MUL(1.0, k3), v);
            double k4 = GF_MUL(h, gf_outer_f(x, te, tmp, my[2 * s + 2]));
            tmp = GF_ADD(GF_MUL(1 / 6.0, k4), v);
            tmp = GF_ADD(GF_MUL(2 / 6.0, k3), tmp);
            tmp = GF_ADD(GF_MUL(2 / 6.0, k2), tmp);
            v = GF_ADD(GF_MUL(1 / 6.0, k1), tmp);
        }
        table[y - 1] = v;
    }
    return v;
}

#endif
