/* test_blackscholes.c — the Black-Scholes job: validation, generator, the CPU
 * reference (parity, a closed-form check, thread independence), the no-GPU
 * answer, and — with a CUDA device — GPU L1 error against the reference. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "gpu/device.h"
#include "gpu/jobs/blackscholes/blackscholes.h"
#include "proto/ga_err.h"

static char no_gpu[300];   /* why there is no usable GPU; "" when there is one */

static int have_gpu(void)
{
    struct ga_gpu_info g[4];
    char err[256] = "";
    int n = ga_gpu_probe(g, 4, err, sizeof err);
    if (n > 0 && g[0].usable)
        return 1;
    snprintf(no_gpu, sizeof no_gpu, "%s", n < 0 ? err : n == 0 ? "no device found" : g[0].why);
    return 0;
}

static void test_validate(void)
{
    struct ga_bs_params p;
    char err[200] = "";
    ga_bs_params_default(&p);
    CHECK_INT(p.n, 4 * 1024 * 1024);
    CHECK(p.riskfree == 0.02 && p.volatility == 0.30);
    CHECK_INT(ga_bs_validate(&p, err, sizeof err), 0);
    p.n = 0;
    CHECK_INT(ga_bs_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "n must be in 1..2147483648, got 0");
    ga_bs_params_default(&p);
    p.volatility = 0;
    CHECK_INT(ga_bs_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "volatility");
    p.volatility = NAN;
    CHECK_INT(ga_bs_validate(&p, err, sizeof err), GA_EBADARG);
    ga_bs_params_default(&p);
    p.riskfree = 2;
    CHECK_INT(ga_bs_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "riskfree");
    float S[3] = { 10, 20, 30 }, X[3] = { 10, 0, 30 }, T[3] = { 1, 1, 1 };
    CHECK_INT(ga_bs_validate_inputs(S, X, T, 3, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "X[1] must be finite and > 0, got 0");
    X[1] = 20;
    T[2] = INFINITY;
    CHECK_INT(ga_bs_validate_inputs(S, X, T, 3, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "T[2]");
    T[2] = 1;
    CHECK_INT(ga_bs_validate_inputs(S, X, T, 3, err, sizeof err), 0);
    CHECK_INT(ga_bs_validate_inputs(NULL, X, T, 3, err, sizeof err), GA_EBADARG);
}

static void test_generator(void)
{
    enum { N = 100000 };
    float *S = malloc(N * 4), *X = malloc(N * 4), *T = malloc(N * 4);
    ga_bs_generate(S, X, T, N, 5347);
    double ms = 0;
    int distinct = 0;
    for (int i = 0; i < N; i++) {
        CHECK(S[i] >= 5.0f && S[i] <= 30.0f);
        CHECK(X[i] >= 1.0f && X[i] <= 100.0f);
        CHECK(T[i] >= 0.25f && T[i] <= 10.0f);
        ms += S[i];
        distinct += i > 0 && S[i] != S[i - 1];
    }
    CHECK(fabs(ms / N - 17.5) < 0.1);   /* uniform mean */
    CHECK(distinct > N - 10);
    float s2[10], x2[10], t2[10];
    ga_bs_generate(s2, x2, t2, 10, 5347);   /* option i depends on (seed, i) only */
    CHECK(memcmp(s2, S, sizeof s2) == 0 && memcmp(t2, T, sizeof t2) == 0);
    ga_bs_generate(s2, x2, t2, 10, 5348);
    CHECK(memcmp(s2, S, sizeof s2) != 0);
    free(S); free(X); free(T);
}

/* Closed form with erfc for the normal CDF; the polynomial CND is within
 * 7.5e-8 of it, so prices agree within (S + X) * 1e-7. */
static double ncdf(double d) { return 0.5 * erfc(-d / sqrt(2.0)); }

static void test_cpu_reference(void)
{
    enum { N = 200003 };
    float *S = malloc(N * 4), *X = malloc(N * 4), *T = malloc(N * 4);
    double *c = malloc(N * 8), *p = malloc(N * 8), *c2 = malloc(N * 8), *p2 = malloc(N * 8);
    ga_bs_generate(S, X, T, N, 42);
    struct ga_bs_params bp;
    ga_bs_params_default(&bp);
    bp.n = N;
    char err[128];
    CHECK_INT(ga_bs_cpu(&bp, S, X, T, c, p, 1, err, sizeof err), 0);
    CHECK_INT(ga_bs_cpu(&bp, S, X, T, c2, p2, 5, err, sizeof err), 0);
    CHECK(memcmp(c, c2, N * 8) == 0 && memcmp(p, p2, N * 8) == 0);
    int bad_parity = 0, bad_closed = 0, negative = 0;
    for (int i = 0; i < N; i++) {
        double s = S[i], x = X[i], t = T[i], r = 0.02, v = 0.30;
        double parity = s - x * exp(-r * t);
        if (fabs((c[i] - p[i]) - parity) > 1e-9 * (s + x))
            bad_parity++;
        double d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt(t)), d2 = d1 - v * sqrt(t);
        double call = s * ncdf(d1) - x * exp(-r * t) * ncdf(d2);
        if (fabs(c[i] - call) > 1e-7 * (s + x))
            bad_closed++;
        if (c[i] < -1e-6 || p[i] < -1e-6)
            negative++;
    }
    CHECK_INT(bad_parity, 0);
    CHECK_INT(bad_closed, 0);
    CHECK_INT(negative, 0);
    /* Deep in the money, the call is S - X e^{-rT}. */
    float s1 = 30, x1 = 1, t1 = 1;
    bp.n = 1;
    CHECK_INT(ga_bs_cpu(&bp, &s1, &x1, &t1, c, p, 1, err, sizeof err), 0);
    CHECK_NEAR(c[0], 30 - exp(-0.02), 1e-12);
    CHECK(fabs(p[0]) < 1e-12);
    /* L1 error helper. */
    float fc[2] = { 1.0f, 2.0f }, fp[2] = { 3.0f, 4.0f };
    double rc2[2] = { 1.0, 2.0 }, rp2[2] = { 3.0, 4.5 };
    CHECK_NEAR(ga_bs_l1_error(fc, fp, rc2, rp2, 2), 0.5 / 10.5, 1e-15);
    free(S); free(X); free(T); free(c); free(p); free(c2); free(p2);
}

static void test_gpu_absent(void)
{
    if (have_gpu()) {
        harness_skip("a usable GPU is present: the no-GPU answer (GA_ENOGPU) is not exercised");
        return;
    }
    struct ga_bs_params bp;
    ga_bs_params_default(&bp);
    bp.n = 4;
    float a[4] = { 10, 10, 10, 10 }, c[4], p[4];
    char err[200] = "";
    CHECK_INT(ga_bs_gpu(0, &bp, a, a, a, c, p, err, sizeof err), GA_ENOGPU);
    CHECK(err[0] != 0);
    bp.volatility = -1;
    CHECK_INT(ga_bs_gpu(0, &bp, a, a, a, c, p, err, sizeof err), GA_EBADARG);
}

static void gpu_case(int64_t n, int gen_on_device, int offset)
{
    float *S = malloc((n + 1) * 4), *X = malloc((n + 1) * 4), *T = malloc((n + 1) * 4);
    float *gc = malloc((n + 1) * 4), *gp = malloc((n + 1) * 4);
    double *rc = malloc(n * 8), *rp = malloc(n * 8);
    struct ga_bs_params bp;
    ga_bs_params_default(&bp);
    bp.n = n;
    ga_bs_generate(S + offset, X + offset, T + offset, n, bp.seed);
    char err[200];
    CHECK_INT(ga_bs_cpu(&bp, S + offset, X + offset, T + offset, rc, rp, 0, err, sizeof err), 0);
    for (int64_t i = 0; i <= n; i++)
        gc[i] = gp[i] = NAN;   /* poison: every output must be written */
    if (gen_on_device)
        CHECK_INT(ga_bs_gpu(0, &bp, NULL, NULL, NULL, gc + offset, gp + offset, err, sizeof err), 0);
    else
        CHECK_INT(ga_bs_gpu(0, &bp, S + offset, X + offset, T + offset, gc + offset, gp + offset, err, sizeof err), 0);
    double l1 = ga_bs_l1_error(gc + offset, gp + offset, rc, rp, n);
    if (!(l1 <= 1e-6))
        harness_fail(__FILE__, __LINE__, "n %lld gen %d off %d: L1 %.3g > 1e-6", (long long)n, gen_on_device, offset, l1);
    printf("blackscholes gpu n=%lld gen_on_device=%d offset=%d L1=%.3e\n", (long long)n, gen_on_device, offset, l1);
    free(S); free(X); free(T); free(gc); free(gp); free(rc); free(rp);
}

static void test_gpu_vs_cpu(void)
{
    if (!have_gpu()) {
        harness_skip("no usable GPU (%s): the GPU's Black-Scholes is not compared with the CPU reference",
                     no_gpu);
        return;
    }
    gpu_case(1, 0, 0);
    gpu_case(3, 0, 0);
    gpu_case(1000003, 0, 1);
    gpu_case(1000003, 0, 0);
    gpu_case(GA_BS_N_DEFAULT, 1, 0);
    gpu_case(GA_BS_N_DEFAULT, 0, 0);
}

void run_tests(void)
{
    RUN(test_validate);
    RUN(test_generator);
    RUN(test_cpu_reference);
    RUN(test_gpu_absent);
    RUN(test_gpu_vs_cpu);
}
