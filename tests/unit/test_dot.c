/* test_dot.c — the dot job: validation, the CPU reference (exact cases,
 * accuracy, thread-count independence), the no-GPU answer, and — when a CUDA
 * device is present — the GPU against the CPU reference over many sizes. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "gpu/device.h"
#include "gpu/jobs/dot/dot.h"
#include "proto/ga_err.h"

static uint64_t rng = 88172645463325252ull;
static double urand(void)   /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

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
    char err[200] = "";
    struct ga_dot_params p = { GA_DOT_F32, 0 };
    CHECK_INT(ga_dot_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "n must be in 1..");
    CHECK_CONTAINS(err, "got 0");
    p.n = GA_DOT_N_MAX + 1;
    CHECK_INT(ga_dot_validate(&p, err, sizeof err), GA_EBADARG);
    p = (struct ga_dot_params){ 7, 10 };
    CHECK_INT(ga_dot_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "dtype must be f32 (0) or f64 (1), got 7");
    p = (struct ga_dot_params){ GA_DOT_F64, 1 };
    CHECK_INT(ga_dot_validate(&p, err, sizeof err), 0);
    CHECK_INT(ga_dot_validate(NULL, err, sizeof err), GA_EBADARG);
    CHECK_INT(ga_dot_elem_size(GA_DOT_F32), 4);
    CHECK_INT(ga_dot_elem_size(GA_DOT_F64), 8);
    CHECK_INT(ga_dot_elem_size(3), 0);
    double out;
    p.n = 4;
    CHECK_INT(ga_dot_cpu(&p, NULL, NULL, &out, NULL, 1, err, sizeof err), GA_EBADARG);
}

/* Small integers: every partial sum is exact, so the answer is exact. */
static void test_cpu_exact(void)
{
    const int64_t sizes[] = { 1, 2, 3, 63, 64, 65, 127, 128, 129, 1000, 65535, 65536, 65537, 1 << 20, (1 << 20) + 1 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        float *xf = malloc(n * 4), *yf = malloc(n * 4);
        double *xd = malloc(n * 8), *yd = malloc(n * 8);
        long long want = 0, wabs = 0;
        for (int64_t i = 0; i < n; i++) {
            int a = (int)(i % 7) - 3, b = (int)((i * 13) % 5) - 2;
            xf[i] = a; yf[i] = b; xd[i] = a; yd[i] = b;
            want += a * b;
            wabs += llabs((long long)a * b);
        }
        char err[128];
        double got = -1, ab = -1;
        struct ga_dot_params p = { GA_DOT_F32, n };
        CHECK_INT(ga_dot_cpu(&p, xf, yf, &got, &ab, 4, err, sizeof err), 0);
        CHECK(got == (double)want);
        CHECK(ab == (double)wabs);
        p.dtype = GA_DOT_F64;
        CHECK_INT(ga_dot_cpu(&p, xd, yd, &got, NULL, 3, err, sizeof err), 0);
        CHECK(got == (double)want);
        free(xf); free(yf); free(xd); free(yd);
    }
}

/* Random data: within a pairwise bound of a long-double sum; same bits for
 * any thread count. */
static void test_cpu_accuracy_and_threads(void)
{
    const int64_t n = 3000017;
    float *xf = malloc(n * 4), *yf = malloc(n * 4);
    double *xd = malloc(n * 8), *yd = malloc(n * 8);
    long double lf = 0, ld = 0, af = 0, ad = 0;
    for (int64_t i = 0; i < n; i++) {
        xd[i] = urand();
        yd[i] = urand() * 1e3;
        xf[i] = (float)xd[i];
        yf[i] = (float)yd[i];
        lf += (long double)xf[i] * yf[i];
        af += fabsl((long double)xf[i] * yf[i]);
        ld += (long double)xd[i] * yd[i];
        ad += fabsl((long double)xd[i] * yd[i]);
    }
    char err[128];
    struct ga_dot_params p = { GA_DOT_F32, n };
    double r1, r2, r7, a1;
    CHECK_INT(ga_dot_cpu(&p, xf, yf, &r1, &a1, 1, err, sizeof err), 0);
    CHECK_INT(ga_dot_cpu(&p, xf, yf, &r2, NULL, 2, err, sizeof err), 0);
    CHECK_INT(ga_dot_cpu(&p, xf, yf, &r7, NULL, 7, err, sizeof err), 0);
    CHECK(r1 == r2 && r1 == r7);
    double bound = 32 * 0x1.0p-52 * (double)af;   /* pairwise: ~log2(n) u sum|xy| */
    CHECK(fabs(r1 - (double)lf) <= bound);
    CHECK_NEAR(a1, (double)af, 1e-12);
    p.dtype = GA_DOT_F64;
    CHECK_INT(ga_dot_cpu(&p, xd, yd, &r1, NULL, 1, err, sizeof err), 0);
    CHECK_INT(ga_dot_cpu(&p, xd, yd, &r7, NULL, 0, err, sizeof err), 0);
    CHECK(r1 == r7);
    CHECK(fabs(r1 - (double)ld) <= 32 * 0x1.0p-52 * (double)ad);
    free(xf); free(yf); free(xd); free(yd);
}

static void test_gpu_absent(void)
{
    if (have_gpu()) {
        harness_skip("a usable GPU is present: the no-GPU answer (GA_ENOGPU) is not exercised");
        return;
    }
    float x[3] = { 1, 2, 3 }, y[3] = { 4, 5, 6 };
    double out = 0;
    char err[200] = "";
    struct ga_dot_params p = { GA_DOT_F32, 3 };
    CHECK_INT(ga_dot_gpu(0, &p, x, y, &out, err, sizeof err), GA_ENOGPU);
    CHECK(err[0] != 0);
    p.n = 0;   /* validation first, even without a GPU */
    CHECK_INT(ga_dot_gpu(0, &p, x, y, &out, err, sizeof err), GA_EBADARG);
}

/* GPU vs CPU: |gpu - cpu| <= (16 sqrt(n) + 64) * 2^-52 * sum|x_i y_i| — both
 * accumulate in double; the factor covers the GPU's per-thread running sums
 * (random rounding errors grow like sqrt(n)).  A float-accumulating dot
 * (cuBLAS sdot) would need ~1e-7 sqrt(n) instead. */
static void gpu_case(int dtype, int64_t n, int offset)
{
    size_t es = ga_dot_elem_size(dtype);
    char *xb = malloc((n + 1) * es), *yb = malloc((n + 1) * es);
    void *x = xb + offset * es, *y = yb + offset * es;
    for (int64_t i = 0; i < n; i++) {
        double a = urand(), b = urand();
        if (dtype == GA_DOT_F32) {
            ((float *)x)[i] = (float)a;
            ((float *)y)[i] = (float)b;
        } else {
            ((double *)x)[i] = a;
            ((double *)y)[i] = b;
        }
    }
    struct ga_dot_params p = { dtype, n };
    char err[200];
    double ref = 0, ab = 0, g1 = 12345, g2 = 54321;
    CHECK_INT(ga_dot_cpu(&p, x, y, &ref, &ab, 0, err, sizeof err), 0);
    CHECK_INT(ga_dot_gpu(0, &p, x, y, &g1, err, sizeof err), 0);
    CHECK_INT(ga_dot_gpu(0, &p, x, y, &g2, err, sizeof err), 0);
    double tol = (16 * sqrt((double)n) + 64) * 0x1.0p-52 * ab;
    if (!(fabs(g1 - ref) <= tol))
        harness_fail(__FILE__, __LINE__, "dtype %d n %lld off %d: gpu %.17g cpu %.17g diff %.3g tol %.3g", dtype,
                     (long long)n, offset, g1, ref, fabs(g1 - ref), tol);
    CHECK(g1 == g2);   /* deterministic */
    free(xb);
    free(yb);
}

static void test_gpu_vs_cpu(void)
{
    if (!have_gpu()) {
        harness_skip("no usable GPU (%s): the GPU's dot is not compared with the CPU reference",
                     no_gpu);
        return;
    }
    const int64_t sizes[] = { 1, 2, 3, 4, 5, 7, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4097,
                              65535, 65537, 1000003, (1 << 20) - 1, (1 << 22) + 1, 1 << 24, 33554431 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int dt = 0; dt < 2; dt++) {
            gpu_case(dt, sizes[s], 0);
            if (sizes[s] % 3 == 1)
                gpu_case(dt, sizes[s], 1);   /* odd host offset (copied to an aligned device buffer) */
        }
    gpu_case(GA_DOT_F32, 5000011, 1);
    gpu_case(GA_DOT_F64, 5000011, 1);
    char err[200];
    double out;
    struct ga_dot_params p = { GA_DOT_F32, 4 };
    float x[4] = { 1, 2, 3, 4 };
    CHECK_INT(ga_dot_gpu(999, &p, x, x, &out, err, sizeof err), GA_ENOGPU);
    CHECK_CONTAINS(err, "device 999: this host has");
    CHECK_INT(ga_dot_gpu(0, &p, x, x, &out, err, sizeof err), 0);
    CHECK(out == 30.0);
}

void run_tests(void)
{
    RUN(test_validate);
    RUN(test_cpu_exact);
    RUN(test_cpu_accuracy_and_threads);
    RUN(test_gpu_absent);
    RUN(test_gpu_vs_cpu);
}
