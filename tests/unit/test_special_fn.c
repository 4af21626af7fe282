/* test_special_fn.c — gpu/jobs/special_fn against 80-digit reference values
 * (tests/unit/special_fn_ref.h, from gen_special_fn_ref.py), identities, and
 * the inverses' round trips. */
#include "gpu/jobs/special_fn.h"
#include "tests/unit/harness.h"
#include "tests/unit/special_fn_ref.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void test_lgamma_reference(void)
{
    for (size_t i = 0; i < N_OF(lgamma_ref); i++) {
        double x = lgamma_ref[i].x, want = lgamma_ref[i].lg, got = ga_lgamma(x);
        double tol = 1e-14 * fmax(1.0, fabs(want));
        if (!(fabs(got - want) <= tol))
            harness_fail(__FILE__, __LINE__, "lgamma(%.17g) = %.17g, want %.17g (err %.3g)", x, got, want,
                         fabs(got - want));
    }
}

static void test_lgamma_identities(void)
{
    /* lnΓ(x+1) = lnΓ(x) + ln x over a sweep, and Γ(n) = (n-1)! exactly-ish */
    for (double x = 0.01; x < 40.0; x *= 1.07) {
        double l = ga_lgamma(x + 1.0), r = ga_lgamma(x) + log(x);
        CHECK(fabs(l - r) <= 2e-14 * fmax(1.0, fabs(l)));
    }
    double fact = 1.0;
    for (int n = 1; n < 25; n++) {
        CHECK(fabs(ga_lgamma(n) - log(fact)) <= 1e-14 * fmax(1.0, log(fact)));
        fact *= n;
    }
    CHECK(fabs(ga_lgamma(0.5) - 0.5 * log(M_PI)) <= 1e-15);
    CHECK(isinf(ga_lgamma(0.0)) && isinf(ga_lgamma(-1.0)) && isnan(ga_lgamma(NAN)));
}

static void test_gamma_pq_reference(void)
{
    int bad = 0;
    for (size_t i = 0; i < N_OF(gamma_ref); i++) {
        double a = gamma_ref[i].a, x = gamma_ref[i].x;
        double p = ga_gamma_p(a, x), q = ga_gamma_q(a, x);
        double ep = fabs(p - gamma_ref[i].p) / gamma_ref[i].p;
        double eq = fabs(q - gamma_ref[i].q) / gamma_ref[i].q;
        /* the one that is computed directly is good to ~1e-14; the
         * complement (1 - other) is good to 1e-14 absolute */
        /* relative error grows with the size of the exponent a ln x - x - lnΓ(a) */
        double big = 4e-16 * (fabs(a * log(x)) + x + fabs(ga_lgamma(a)));
        double tp = 5e-14 + big + (gamma_ref[i].p < 0.5 ? 0.0 : 1e-15 / gamma_ref[i].p);
        double tq = 5e-14 + big + 2e-16 / gamma_ref[i].q;
        if (gamma_ref[i].q >= 0.5)
            tq = 5e-14 + big;
        if (!(ep <= tp) || !(eq <= tq)) {
            if (bad++ < 10)
                harness_fail(__FILE__, __LINE__, "a=%g x=%g: P=%.17g (want %.17g, rel %.3g) Q=%.17g (want %.17g, rel %.3g)",
                             a, x, p, gamma_ref[i].p, ep, q, gamma_ref[i].q, eq);
        }
    }
    CHECK_INT(bad, 0);
}

static void test_gamma_pq_edges(void)
{
    CHECK(ga_gamma_p(1.0, 0.0) == 0.0 && ga_gamma_q(1.0, 0.0) == 1.0);
    CHECK(ga_gamma_p(1.0, INFINITY) == 1.0 && ga_gamma_q(1.0, INFINITY) == 0.0);
    CHECK(isnan(ga_gamma_p(0.0, 1.0)) && isnan(ga_gamma_p(-1.0, 1.0)) && isnan(ga_gamma_p(1.0, -1.0)));
    CHECK(isnan(ga_gamma_q(NAN, 1.0)) && isnan(ga_gamma_q(1.0, NAN)));
    /* a = 1: P = 1 - e^-x */
    for (double x = 1e-6; x < 50; x *= 1.9)
        CHECK_NEAR(ga_gamma_q(1.0, x), exp(-x), 1e-14);
    /* a = 1/2: P = erf(sqrt x) */
    for (double x = 1e-6; x < 20; x *= 1.9)
        CHECK(fabs(ga_gamma_p(0.5, x) - erf(sqrt(x))) <= 2e-15);
}

static void test_gamma_inverse_roundtrip(void)
{
    int bad = 0;
    /* through the reference table: x from P(a,x) and from Q(a,x) */
    for (size_t i = 0; i < N_OF(gamma_ref); i++) {
        double a = gamma_ref[i].a, x = gamma_ref[i].x, p = gamma_ref[i].p, q = gamma_ref[i].q;
        double xi = p < q ? ga_gamma_p_inv(a, p) : ga_gamma_q_inv(a, q);
        /* conditioning: dx/x = dP / (x·density); allow 1e-13 plus that */
        double dens = exp((a - 1.0) * log(x) - x - ga_lgamma(a));
        double cond = fmin(p, q) / (x * dens);
        double tol = 1e-13 * fmax(1.0, cond);
        if (!(fabs(xi - x) <= tol * x)) {
            if (bad++ < 10)
                harness_fail(__FILE__, __LINE__, "a=%g p=%.17g q=%.17g: inverse %.17g, want %.17g (rel %.3g, tol %.3g)",
                             a, p, q, xi, x, fabs(xi - x) / x, tol);
        }
    }
    /* a sweep of (a, tail probability): Q(a, Q⁻¹(a, q)) = q */
    for (double a = 0.05; a < 30; a *= 1.31) {
        for (double q = 1e-300; q < 1.0; q = q < 1e-10 ? q * 1e30 : q * 3.7) {
            double x = ga_gamma_q_inv(a, q);
            if (x < 1e-290)      /* the answer underflows: nothing to check */
                continue;
            double back = ga_gamma_q(a, x);
            if (!(fabs(back - q) <= 1e-12 * q)) {
                if (bad++ < 20)
                    harness_fail(__FILE__, __LINE__, "a=%g q=%.17g: Q(a, %.17g) = %.17g (rel %.3g)", a, q, x,
                                 back, fabs(back - q) / q);
            }
            double p = q;
            x = ga_gamma_p_inv(a, p);
            back = ga_gamma_p(a, x);
            if (x >= 1e-290 && !(fabs(back - p) <= 1e-12 * p)) {
                if (bad++ < 20)
                    harness_fail(__FILE__, __LINE__, "a=%g p=%.17g: P(a, %.17g) = %.17g (rel %.3g)", a, p, x,
                                 back, fabs(back - p) / p);
            }
        }
    }
    CHECK_INT(bad, 0);
    CHECK(ga_gamma_p_inv(2.0, 0.0) == 0.0 && isinf(ga_gamma_p_inv(2.0, 1.0)));
    CHECK(ga_gamma_q_inv(2.0, 1.0) == 0.0 && isinf(ga_gamma_q_inv(2.0, 0.0)));
    CHECK(isnan(ga_gamma_p_inv(2.0, -0.1)) && isnan(ga_gamma_p_inv(2.0, 1.1)) && isnan(ga_gamma_p_inv(0.0, 0.5)));
}

void run_tests(void)
{
    RUN(test_lgamma_reference);
    RUN(test_lgamma_identities);
    RUN(test_gamma_pq_reference);
    RUN(test_gamma_pq_edges);
    RUN(test_gamma_inverse_roundtrip);
}
