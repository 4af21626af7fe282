/* test_apd.c — rolling APD fit.  CPU reference: validation, the profile ℓ
 * equals the summed log density at the fit, the fit is the best candidate
 * (brute force over the grid on a small window), recovery of known APD
 * parameters, quantiles by CDF round trip, threads/stride/cancel, degenerate
 * windows.  GPU (when a device is present; GA_REQUIRE_GPU=1 makes "no GPU" a
 * failure): same argmax and ℓ within 1e-9, quantiles round-trip, on skewed
 * Student-t and APD data, default W 500 × L 80 included. */
#include <stdlib.h>

#include "gpu/jobs/apd/apd.h"
#include "gpu/jobs/special_fn.h"
#include "proto/ga_err.h"
#include "tests/unit/harness.h"

static uint64_t rng_state;

static double urand(void)        /* splitmix64 → (0,1) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double nrand(void)
{
    return sqrt(-2.0 * log(urand())) * cos(2.0 * M_PI * urand());
}

/* skewed Student-t (Fernández–Steel), ν degrees of freedom, skew γ */
static void gen_skew_t(double *x, size_t n, double nu, double gamma, uint64_t seed)
{
    rng_state = seed;
    for (size_t i = 0; i < n; i++) {
        double chi = 0;
        for (int k = 0; k < (int)nu; k++) {
            double z = nrand();
            chi += z * z;
        }
        double t = nrand() / sqrt(chi / nu);
        x[i] = 0.01 * (t >= 0 ? t * gamma : t / gamma) + 0.001;
    }
}

/* APD(θ, φ, α, λ) by inversion: |u| = side · (G/δ)^(1/λ), G ~ Gamma(1/λ) */
static void gen_apd(double *x, size_t n, double theta, double phi, double alpha, double lam, uint64_t seed)
{
    rng_state = seed;
    double a = pow(alpha, lam), b = pow(1 - alpha, lam), delta = 2 * a * b / (a + b);
    for (size_t i = 0; i < n; i++) {
        double g = ga_gamma_p_inv(1.0 / lam, urand());
        double mag = pow(g / delta, 1.0 / lam);
        x[i] = urand() < alpha ? theta - phi * alpha * mag : theta + phi * (1 - alpha) * mag;
    }
}

static int require_gpu(void)
{
    const char *s = getenv("GA_REQUIRE_GPU");
    return s && *s && strcmp(s, "0") != 0;
}

static int ncpu(void)
{
    const char *s = getenv("GA_TEST_THREADS");
    int n = s ? atoi(s) : 2;
    return n > 0 ? n : 2;
}

static void small_params(struct apd_params *p, size_t w, int L)
{
    apd_params_default(p);
    p->window = w;
    p->n_lambda = L;
}

static void test_validate(void)
{
    struct apd_params p;
    char err[256];
    double x[600];
    gen_skew_t(x, 600, 5, 1.3, 1);
    apd_params_default(&p);
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), 0);
    CHECK_INT(apd_window_count(&p, 600), 101);
    CHECK_INT(apd_window_count(&p, 499), 0);
    CHECK_INT(apd_validate(&p, 499, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "shorter than one window");
    p.window = 3;
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "window = 3");
    apd_params_default(&p);
    p.n_lambda = 0;
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "n_lambda = 0");
    apd_params_default(&p);
    p.lambda_lo = 5;
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "lambda range");
    apd_params_default(&p);
    p.n_lambda = 1;
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), GA_EBADARG);
    apd_params_default(&p);
    p.quantiles[1] = 1.0;
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "quantiles[1] = 1");
    apd_params_default(&p);
    p.n_quantiles = 9;
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), GA_EBADARG);
    apd_params_default(&p);
    p.stride = 0;
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), GA_EBADARG);
    apd_params_default(&p);
    p.gpu_chunk = 7;
    CHECK_INT(apd_validate(&p, 600, err, sizeof err), GA_EBADARG);
    apd_params_default(&p);
    struct apd_fit f[101];
    x[550] = NAN;
    CHECK_INT(apd_fit_cpu(&p, x, 600, f, 1, NULL, NULL, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "series[550]");
    CHECK_INT(apd_fit_gpu(0, &p, x, 600, f, NULL, NULL, err, sizeof err), GA_EBADARG);
    x[550] = 0.5;
    CHECK_INT(apd_fit_cpu(&p, x, 600, f, 0, NULL, NULL, err, sizeof err), GA_EBADARG);
    CHECK(apd_lambda(&p, 0) == 0.5 && apd_lambda(&p, 79) == 4.0);
}

/* ℓ(θ̂, λ̂) from the closed form equals Σ log f(x_k) at the fitted
 * parameters, and F(q_p) = p. */
static void check_fit_consistency(const struct apd_params *p, const double *x, const struct apd_fit *f)
{
    CHECK(f->lambda_index >= 0 && f->theta_index >= 0);
    double s = 0;
    for (size_t k = 0; k < p->window; k++)
        s += apd_logpdf(f, x[k]);
    if (!(fabs(s - f->loglik) <= 1e-9 * fabs(s)))
        harness_fail(__FILE__, __LINE__, "Σ log f = %.17g, ℓ = %.17g", s, f->loglik);
    int below = 0;
    for (size_t k = 0; k < p->window; k++)
        below += x[k] <= f->theta;
    CHECK_INT(below, f->theta_index + 1);      /* θ is the point of that rank (no ties) */
    CHECK(f->alpha > 0 && f->alpha < 1 && f->phi > 0);
    CHECK(fabs(f->lambda - apd_lambda(p, f->lambda_index)) == 0.0);
    for (int m = 0; m < p->n_quantiles; m++) {
        double back = apd_cdf(f, f->q[m]);
        if (!(fabs(back - p->quantiles[m]) <= 1e-9))
            harness_fail(__FILE__, __LINE__, "F(q_%g) = %.17g", p->quantiles[m], back);
        CHECK(fabs(apd_quantile(f, p->quantiles[m]) - f->q[m]) <= 1e-12 * fabs(f->q[m]) + 1e-300);
    }
    for (int m = p->n_quantiles; m < APD_MAX_QUANTILES; m++)
        CHECK(isnan(f->q[m]));
}

static void test_cpu_consistency(void)
{
    struct apd_params p;
    small_params(&p, 120, 24);
    p.n_quantiles = 4;
    p.quantiles[2] = 0.5;
    p.quantiles[3] = 0.99;
    enum { N = 140 };
    double x[N];
    gen_skew_t(x, N, 4, 1.5, 7);
    size_t nw = apd_window_count(&p, N);
    struct apd_fit *f = calloc(nw, sizeof *f);
    char err[256];
    CHECK_INT(apd_fit_cpu(&p, x, N, f, ncpu(), NULL, NULL, err, sizeof err), 0);
    for (size_t w = 0; w < nw; w += 5)
        check_fit_consistency(&p, x + w, &f[w]);
    free(f);
}

/* The fit beats every other candidate: brute force of ℓ over (θ, λ) with
 * the density itself (φ̂, α̂ in closed form from the sums, ℓ = Σ log f). */
static void test_cpu_is_argmax(void)
{
    struct apd_params p;
    small_params(&p, 40, 12);
    double x[40];
    gen_skew_t(x, 40, 3, 0.7, 11);
    struct apd_fit f;
    char err[256];
    CHECK_INT(apd_fit_cpu(&p, x, 40, &f, 1, NULL, NULL, err, sizeof err), 0);
    double best = -INFINITY;
    for (int i = 0; i < 40; i++) {
        for (int j = 0; j < p.n_lambda; j++) {
            double lam = apd_lambda(&p, j), th = x[i], xm = 0, xp = 0;
            for (int k = 0; k < 40; k++) {
                if (x[k] <= th)
                    xm += pow(th - x[k], lam);
                else
                    xp += pow(x[k] - th, lam);
            }
            if (xm <= 0 || xp <= 0)
                continue;
            double A = pow(xm, 1 / (lam + 1)), B = pow(xp, 1 / (lam + 1));
            struct apd_fit c = { .theta = th, .alpha = A / (A + B), .lambda = lam, .lambda_index = j };
            double a = pow(c.alpha, lam), b = pow(1 - c.alpha, lam), d = 2 * a * b / (a + b);
            c.phi = pow(lam / 40 * d * (xm / a + xp / b), 1 / lam);
            double s = 0;
            for (int k = 0; k < 40; k++)
                s += apd_logpdf(&c, x[k]);
            if (s > best)
                best = s;
        }
    }
    CHECK(fabs(best - f.loglik) <= 1e-9 * fabs(best));
}

static void test_cpu_recovers_apd(void)
{
    struct apd_params p;
    small_params(&p, 1500, 36);          /* grid step 0.1 */
    double *x = malloc(1500 * sizeof *x);
    gen_apd(x, 1500, 0.2, 0.5, 0.3, 1.5, 99);
    struct apd_fit f;
    char err[256];
    CHECK_INT(apd_fit_cpu(&p, x, 1500, &f, ncpu(), NULL, NULL, err, sizeof err), 0);
    printf("APD(0.2, 0.5, 0.3, 1.5), n 1500: θ %.4f φ %.4f α %.4f λ %.2f\n", f.theta, f.phi, f.alpha, f.lambda);
    CHECK(fabs(f.theta - 0.2) < 0.05 && fabs(f.phi - 0.5) < 0.05 && fabs(f.alpha - 0.3) < 0.05 &&
          fabs(f.lambda - 1.5) < 0.3);
    check_fit_consistency(&p, x, &f);
    free(x);
}

static int cancel_cb(void *ud, size_t done, size_t total)
{
    size_t *st = ud;
    st[0]++;
    st[1] = done;
    return st[2] && st[0] >= st[2];
}

static void test_cpu_threads_stride_cancel(void)
{
    struct apd_params p;
    small_params(&p, 60, 10);
    enum { N = 200 };
    double x[N];
    gen_skew_t(x, N, 5, 1.2, 3);
    size_t nw = apd_window_count(&p, N);
    struct apd_fit *a = calloc(nw, sizeof *a), *b = calloc(nw, sizeof *b);
    char err[256];
    size_t st[3] = { 0, 0, 0 };
    CHECK_INT(apd_fit_cpu(&p, x, N, a, 1, cancel_cb, st, err, sizeof err), 0);
    CHECK(st[1] == nw && st[0] >= 1);
    CHECK_INT(apd_fit_cpu(&p, x, N, b, 3, NULL, NULL, err, sizeof err), 0);
    CHECK(memcmp(a, b, nw * sizeof *a) == 0);
    /* stride 7: window w of the strided run is window 7w of the dense one */
    p.stride = 7;
    size_t ns = apd_window_count(&p, N);
    CHECK_INT(ns, (N - 60) / 7 + 1);
    CHECK_INT(apd_fit_cpu(&p, x, N, b, 2, NULL, NULL, err, sizeof err), 0);
    for (size_t w = 0; w < ns; w++)
        CHECK(memcmp(&b[w], &a[7 * w], sizeof *a) == 0);
    size_t st2[3] = { 0, 0, 1 };
    CHECK_INT(apd_fit_cpu(&p, x, N, b, 1, cancel_cb, st2, err, sizeof err), GA_ECANCELED);
    free(a);
    free(b);
}

static void test_cpu_degenerate(void)
{
    struct apd_params p;
    small_params(&p, 8, 4);
    double x[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    struct apd_fit f;
    char err[256];
    CHECK_INT(apd_fit_cpu(&p, x, 8, &f, 1, NULL, NULL, err, sizeof err), 0);
    CHECK_INT(f.lambda_index, -1);
    CHECK(isnan(f.theta) && isnan(f.loglik) && isnan(f.q[0]));
    /* two distinct values: θ at the lower, X⁺ > 0, X⁻ = 0 everywhere → none;
     * three: the middle one is the only candidate */
    double y[8] = { 1, 2, 3, 1, 2, 3, 2, 2 };
    CHECK_INT(apd_fit_cpu(&p, y, 8, &f, 1, NULL, NULL, err, sizeof err), 0);
    CHECK(f.theta == 2.0 && f.lambda_index >= 0 && isfinite(f.loglik));
}

static void compare_gpu(const char *what, const struct apd_params *p, const double *x, size_t n, size_t cpu_windows)
{
    size_t nw = apd_window_count(p, n);
    struct apd_fit *g = calloc(nw, sizeof *g), *c = calloc(nw, sizeof *c);
    char err[256] = "";
    for (size_t w = 0; w < nw; w++)
        g[w].loglik = 12345.0;               /* poison */
    CHECK_INT(apd_fit_gpu(0, p, x, n, g, NULL, NULL, err, sizeof err), 0);
    struct apd_params pc = *p;
    size_t ncw = cpu_windows < nw ? cpu_windows : nw;
    size_t nc = (ncw - 1) * p->stride + p->window;
    CHECK_INT(apd_fit_cpu(&pc, x, nc, c, ncpu(), NULL, NULL, err, sizeof err), 0);
    int same = 0;
    double worst_ll = 0, worst_q = 0, worst_rt = 0;
    for (size_t w = 0; w < ncw; w++) {
        if (g[w].theta_index == c[w].theta_index && g[w].lambda_index == c[w].lambda_index)
            same++;
        else
            harness_fail(__FILE__, __LINE__, "%s window %zu: GPU (i %d, j %d, ℓ %.17g) CPU (i %d, j %d, ℓ %.17g)",
                         what, w, g[w].theta_index, g[w].lambda_index, g[w].loglik, c[w].theta_index,
                         c[w].lambda_index, c[w].loglik);
        double e = fabs(g[w].loglik - c[w].loglik);
        if (e > worst_ll)
            worst_ll = e;
        for (int m = 0; m < p->n_quantiles; m++) {
            double eq = fabs(g[w].q[m] - c[w].q[m]) / fmax(1e-300, fabs(c[w].q[m]));
            if (eq > worst_q)
                worst_q = eq;
        }
    }
    for (size_t w = 0; w < nw; w++) {
        CHECK(g[w].loglik != 12345.0 && g[w].lambda_index >= 0);
        for (int m = 0; m < p->n_quantiles; m++) {
            double rt = fabs(apd_cdf(&g[w], g[w].q[m]) - p->quantiles[m]);
            if (rt > worst_rt)
                worst_rt = rt;
        }
    }
    printf("apd GPU vs CPU %s: %zu GPU windows, %zu compared, same argmax %d, worst |Δℓ| %.3g, "
           "worst quantile rel %.3g, worst |F(q)-p| %.3g\n", what, nw, ncw, same, worst_ll, worst_q, worst_rt);
    CHECK(worst_ll <= 1e-9);
    CHECK(worst_rt <= 1e-9);
    free(g);
    free(c);
}

static void test_gpu(void)
{
    struct apd_params p;
    small_params(&p, 100, 20);
    double x[300];
    gen_skew_t(x, 300, 5, 1.3, 5);
    struct apd_fit f[201];
    char err[256] = "";
    int rc = apd_fit_gpu(0, &p, x, 300, f, NULL, NULL, err, sizeof err);
    if (rc == GA_ENOGPU) {
        CHECK(!require_gpu());
        CHECK(err[0] != '\0');
        harness_skip("no usable GPU (%s): the GPU's fits are not compared with the CPU "
                     "reference", err);
        return;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(apd_fit_gpu(99, &p, x, 300, f, NULL, NULL, err, sizeof err), GA_ENOGPU);
    compare_gpu("skew-t W100 L20", &p, x, 300, 201);
    for (int chunk = 8; chunk <= 20; chunk += chunk == 8 ? 8 : 4) {
        p.gpu_chunk = chunk;
        compare_gpu(chunk == 8 ? "chunk 8" : chunk == 16 ? "chunk 16" : "chunk 20", &p, x, 300, 201);
    }
    /* the default job: W 500, L 80, on skewed-t and APD data; the CPU
     * checks the first windows (each costs 20 M exp) */
    enum { N = 1100 };
    double *y = malloc(N * sizeof *y);
    apd_params_default(&p);
    gen_skew_t(y, N, 4, 1.4, 17);
    compare_gpu("skew-t W500 L80", &p, y, N, 48);
    gen_apd(y, N, -0.1, 0.02, 0.6, 2.2, 23);
    p.stride = 9;
    compare_gpu("APD W500 L80 stride 9", &p, y, N, 48);
    /* cancel between chunks of windows is honoured (one chunk here: done) */
    size_t st[3] = { 0, 0, 1 };
    CHECK_INT(apd_fit_gpu(0, &p, y, N, f, cancel_cb, st, err, sizeof err), 0);
    free(y);
}

void run_tests(void)
{
    RUN(test_validate);
    RUN(test_cpu_consistency);
    RUN(test_cpu_is_argmax);
    RUN(test_cpu_recovers_apd);
    RUN(test_cpu_threads_stride_cancel);
    RUN(test_cpu_degenerate);
    RUN(test_gpu);
}
