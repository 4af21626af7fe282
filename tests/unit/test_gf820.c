/* test_gf820.c — GF820 reserve: the CPU reference against the spec's V(0)
 * values (steps 1-5; 10 with GA_TEST_SLOW=1 — about 35 s on one core) and
 * the published C# reserve table, validation, threads and batches, cancel;
 * the GPU against the CPU and the spec values when a device is present
 * (GA_REQUIRE_GPU=1 makes "no GPU" a failure), the GA_ENOGPU path when not. */
#include <stdlib.h>

#include "gpu/jobs/gf820/gf820.h"
#include "proto/ga_err.h"
#include "tests/unit/harness.h"

static const struct { int steps; double v0; } spec_v0[] = {
    { 1, 0.628095815593204 }, { 2, 0.623211034197499 }, { 3, 0.61822862875422 },
    { 4, 0.620763440596687 }, { 5, 0.618968936813721 }, { 10, 0.61861431190676 },
};

/* Rk4.cs (Actulus GF820, steps 3, "t = b + (s - fullsteps) * h" column) */
static const struct { int y; double v; } cs_table3[] = {
    { 0, 0.6182286287542200 }, { 1, 0.6425841754258790 }, { 10, 0.8911323730449740 },
    { 30, 1.7717297301363600 }, { 39, 2.2874842807873700 }, { 40, 2.2718033357283400 },
    { 65, 0.6626274147129790 }, { 84, 0.0044682878951233 }, { 85, 0.0 },
};

static int slow(void)
{
    const char *s = getenv("GA_TEST_SLOW");
    return s && *s && strcmp(s, "0") != 0;
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

static void test_validate(void)
{
    char err[256];
    struct gf820_contract ok = { 10, 65, 35, 2 };
    CHECK_INT(gf820_validate(&ok, 1, err, sizeof err), 0);
    CHECK_INT(gf820_validate(&ok, 0, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "no contracts");
    struct gf820_contract bad[] = { { 10, 65, 35, 2 }, { 10, 65, 120, 2 } };
    CHECK_INT(gf820_validate(bad, 2, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "contract 1: x = 120");
    bad[1] = (struct gf820_contract){ 10, 65, 35, 0 };
    CHECK_INT(gf820_validate(bad, 2, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "steps = 0");
    bad[1] = (struct gf820_contract){ 10, 65, 35, GF820_MAX_STEPS + 1 };
    CHECK_INT(gf820_validate(bad, 2, err, sizeof err), GA_EBADARG);
    bad[1] = (struct gf820_contract){ -1, 65, 35, 1 };
    CHECK_INT(gf820_validate(bad, 2, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "g = -1");
    bad[1] = (struct gf820_contract){ 10, 121, 35, 1 };
    CHECK_INT(gf820_validate(bad, 2, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "r = 121");
    double v0;
    CHECK_INT(gf820_cpu(bad, 2, &v0, NULL, 1, NULL, NULL, err, sizeof err), GA_EBADARG);
    CHECK_INT(gf820_cpu(&ok, 1, &v0, NULL, 0, NULL, NULL, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "threads = 0");
    CHECK_INT(gf820_gpu(0, bad, 2, &v0, NULL, NULL, NULL, err, sizeof err), GA_EBADARG);
}

static void test_outer_times(void)
{
    struct gf820_contract c = { 10, 65, 35, 3 };
    size_t n = gf820_outer_points(&c);
    CHECK_INT(n, 85 * 7);
    double *t = malloc(n * sizeof *t);
    gf820_outer_times(&c, t);
    CHECK(t[0] == 85.0);
    for (int y = 85; y > 0; y--) {
        size_t b = (size_t)(85 - y) * 7;
        CHECK(t[b] == (double)y);                        /* each year starts at the integer */
        CHECK(fabs(t[b + 6] - (y - 1)) < 1e-13);         /* ends near the next one */
        CHECK(t[b + 1] == t[b] + (-1.0 / 3) / 2);
        CHECK(t[b + 2] == t[b] + -1.0 / 3);              /* accumulated, as in Rk4.SolveAll */
    }
    free(t);
}

static void test_spec_v0(void)
{
    char err[256] = "";
    for (size_t i = 0; i < sizeof spec_v0 / sizeof spec_v0[0]; i++) {
        if (spec_v0[i].steps == 10 && !slow())
            continue;
        struct gf820_contract c = { 10, 65, 35, spec_v0[i].steps };
        double v0 = NAN;
        CHECK_INT(gf820_cpu(&c, 1, &v0, NULL, ncpu(), NULL, NULL, err, sizeof err), 0);
        if (!(fabs(v0 - spec_v0[i].v0) <= 1e-12))
            harness_fail(__FILE__, __LINE__, "steps %d: V(0) = %.17g, spec %.15g (diff %.3g)", spec_v0[i].steps, v0,
                         spec_v0[i].v0, v0 - spec_v0[i].v0);
    }
}

static void test_table_steps3(void)
{
    struct gf820_contract c = { 10, 65, 35, 3 };
    double v0, table[GF820_TABLE_LEN];
    char err[256];
    CHECK_INT(gf820_cpu(&c, 1, &v0, table, ncpu(), NULL, NULL, err, sizeof err), 0);
    CHECK(v0 == table[0]);
    for (size_t i = 0; i < sizeof cs_table3 / sizeof cs_table3[0]; i++) {
        double got = table[cs_table3[i].y];
        if (!(fabs(got - cs_table3[i].v) <= 1e-12))
            harness_fail(__FILE__, __LINE__, "V(%d) = %.17g, C# %.16f", cs_table3[i].y, got, cs_table3[i].v);
    }
    for (int y = 86; y < GF820_TABLE_LEN; y++)
        CHECK(isnan(table[y]));
}

static int count_cb(void *ud, size_t done, size_t total)
{
    size_t *st = ud;      /* [0] calls, [1] last done, [2] total, [3] cancel after */
    CHECK(done > st[1] && done <= total);
    st[0]++;
    st[1] = done;
    st[2] = total;
    return st[3] && st[0] >= st[3];
}

static void test_threads_batch_cancel(void)
{
    /* a batch of varied contracts: every thread count gives the same bits,
     * and each contract's result equals its own single-contract run */
    struct gf820_contract c[] = { { 10, 65, 35, 1 }, { 0, 60, 100, 2 }, { 5, 70, 60, 1 }, { 120, 0, 0, 1 },
                                  { 3, 67, 119, 2 } };
    enum { N = sizeof c / sizeof c[0] };
    double v1[N], v3[N], t1[N * GF820_TABLE_LEN], t3[N * GF820_TABLE_LEN];
    char err[256];
    size_t st[4] = { 0, 0, 0, 0 };
    CHECK_INT(gf820_cpu(c, N, v1, t1, 1, count_cb, st, err, sizeof err), 0);
    CHECK(st[0] >= 1 && st[1] == st[2]);
    CHECK_INT(gf820_cpu(c, N, v3, t3, 3, NULL, NULL, err, sizeof err), 0);
    CHECK(memcmp(v1, v3, sizeof v1) == 0);
    CHECK(memcmp(t1, t3, sizeof t1) == 0);
    for (int i = 0; i < N; i++) {
        double v;
        CHECK_INT(gf820_cpu(&c[i], 1, &v, NULL, 2, NULL, NULL, err, sizeof err), 0);
        CHECK(v == v1[i]);
        CHECK(isfinite(v) && v >= 0.0);
    }
    /* x = 119: one year, V(1) = 0 */
    CHECK(t1[4 * GF820_TABLE_LEN + 1] == 0.0 && isnan(t1[4 * GF820_TABLE_LEN + 2]));
    /* cancel after the first round */
    size_t st2[4] = { 0, 0, 0, 1 };
    CHECK_INT(gf820_cpu(c, N, v1, NULL, 1, count_cb, st2, err, sizeof err), GA_ECANCELED);
    CHECK_INT(st2[0], 1);
}

static void test_gpu(void)
{
    char err[256] = "";
    struct gf820_contract c = { 10, 65, 35, 2 };
    double v0 = NAN;
    int rc = gf820_gpu(0, &c, 1, &v0, NULL, NULL, NULL, err, sizeof err);
    if (rc == GA_ENOGPU) {
        CHECK(!require_gpu());
        CHECK(err[0] != '\0');
        CHECK(isnan(v0));
        harness_skip("no usable GPU (%s): the GPU's values are not compared with the CPU "
                     "reference", err);
        return;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(gf820_gpu(99, &c, 1, &v0, NULL, NULL, NULL, err, sizeof err), GA_ENOGPU);
    /* every spec value on the GPU, steps 10 included */
    for (size_t i = 0; i < sizeof spec_v0 / sizeof spec_v0[0]; i++) {
        struct gf820_contract ci = { 10, 65, 35, spec_v0[i].steps };
        double g = NAN, table[GF820_TABLE_LEN];
        CHECK_INT(gf820_gpu(0, &ci, 1, &g, table, NULL, NULL, err, sizeof err), 0);
        if (!(fabs(g - spec_v0[i].v0) <= 1e-12))
            harness_fail(__FILE__, __LINE__, "GPU steps %d: V(0) = %.17g, spec %.15g (diff %.3g)", spec_v0[i].steps, g,
                         spec_v0[i].v0, g - spec_v0[i].v0);
        printf("gf820 GPU steps %d: V(0) = %.17g  spec %.15g  diff %.3g\n", spec_v0[i].steps, g, spec_v0[i].v0,
               g - spec_v0[i].v0);
        if (spec_v0[i].steps == 3)
            for (size_t k = 0; k < sizeof cs_table3 / sizeof cs_table3[0]; k++)
                CHECK(fabs(table[cs_table3[k].y] - cs_table3[k].v) <= 1e-12);
    }
    /* a batch: GPU against CPU, V(0) and every table entry */
    struct gf820_contract b[] = { { 10, 65, 35, 2 }, { 0, 60, 100, 3 }, { 5, 70, 60, 1 }, { 120, 0, 0, 2 },
                                  { 3, 67, 119, 4 }, { 20, 50, 20, 2 } };
    enum { N = sizeof b / sizeof b[0] };
    double vc[N], vg[N], tc[N * GF820_TABLE_LEN], tg[N * GF820_TABLE_LEN];
    CHECK_INT(gf820_cpu(b, N, vc, tc, ncpu(), NULL, NULL, err, sizeof err), 0);
    size_t st[4] = { 0, 0, 0, 0 };
    CHECK_INT(gf820_gpu(0, b, N, vg, tg, count_cb, st, err, sizeof err), 0);
    CHECK(st[1] == st[2]);
    double worst = 0;
    for (int i = 0; i < N * GF820_TABLE_LEN; i++) {
        if (isnan(tc[i])) {
            CHECK(isnan(tg[i]));
            continue;
        }
        double e = fabs(tg[i] - tc[i]) / fmax(1e-3, fabs(tc[i]));
        if (e > worst)
            worst = e;
    }
    printf("gf820 GPU vs CPU batch of %d: worst table difference %.3g (relative)\n", N, worst);
    CHECK(worst <= 1e-12);
    for (int i = 0; i < N; i++)
        CHECK(fabs(vg[i] - vc[i]) <= 1e-12 * fabs(vc[i]));
    size_t st2[4] = { 0, 0, 0, 1 };
    struct gf820_contract big[40];
    for (int i = 0; i < 40; i++)
        big[i] = (struct gf820_contract){ 10, 65, 35, 2 };
    double vb[40];
    CHECK_INT(gf820_gpu(0, big, 40, vb, NULL, count_cb, st2, err, sizeof err), GA_ECANCELED);
}

void run_tests(void)
{
    RUN(test_validate);
    RUN(test_outer_times);
    RUN(test_spec_v0);
    RUN(test_table_steps3);
    RUN(test_threads_batch_cancel);
    RUN(test_gpu);
}
