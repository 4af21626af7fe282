/* test_kmeans.c — the k-means kernel: validation rules, the built-in generator
 * (glibc rand_r), the CPU reference (known answers, ties, empty clusters,
 * convergence, cancel, thread-count independence, the fixed summation order
 * against a plain sum), the no-GPU answer, and — with a CUDA device — GPU
 * against CPU: identical memberships, identical centres, same loops/delta. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "gpu/device.h"
#include "gpu/jobs/kmeans/kmeans.h"
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

static struct ga_kmeans_params mk(int64_t n, int c, int k)
{
    struct ga_kmeans_params p;
    ga_kmeans_params_default(&p);
    p.nobjs = n;
    p.coords = c;
    p.k = k;
    return p;
}

static void test_validate(void)
{
    char err[200] = "";
    struct ga_kmeans_params p = mk(100, 2, 4);
    CHECK_INT(p.max_loops, 10);
    CHECK(p.threshold == 0.001);
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), 0);
    p.k = 0;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_STR(err, "k must be in 1..4096, got 0");
    p.k = 4097;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    p = mk(100, 0, 4);
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_STR(err, "coords must be in 1..1024, got 0");
    p = mk(3, 2, 4);
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "nobjs must be in k..");
    p = mk(100, 2, 4);
    p.max_loops = 0;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "max_loops must be in 1..1000000, got 0");
    p = mk(100, 2, 4);
    p.threshold = NAN;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "threshold");
    p.threshold = 1.5;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    p = mk(100, 2, 4);
    p.sync_every = -1;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    /* Kernel choice: LANE and REG only for small (k, coords). */
    p = mk(100, 2, 32);
    for (int kn = GA_KMEANS_KERNEL_AUTO; kn <= GA_KMEANS_KERNEL_GENERIC; kn++) {
        p.kernel = kn;
        CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), 0);
    }
    p.kernel = 4;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_STR(err, "kernel must be in 0..3, got 4");
    p = mk(100, 3, 17);
    p.kernel = GA_KMEANS_KERNEL_LANE;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "kernel lane serves");
    p.kernel = GA_KMEANS_KERNEL_GENERIC;
    CHECK_INT(ga_kmeans_validate(&p, err, sizeof err), 0);
    CHECK_INT(ga_kmeans_kernel_small(32, 1), 1);
    CHECK_INT(ga_kmeans_kernel_small(33, 2), 0);
    CHECK_INT(ga_kmeans_kernel_small(16, 4), 1);
    CHECK_INT(ga_kmeans_kernel_small(17, 3), 0);
    CHECK_INT(ga_kmeans_kernel_small(1, 5), 0);
    CHECK_STR(ga_kmeans_kernel_name(GA_KMEANS_KERNEL_REG), "reg");
    double o[4] = { 1, 2, INFINITY, 4 };
    CHECK_INT(ga_kmeans_validate_objects(o, 2, 2, err, sizeof err), GA_EBADARG);
    CHECK_STR(err, "object 1 coordinate 0 must be finite, got inf");
    o[2] = 3;
    CHECK_INT(ga_kmeans_validate_objects(o, 2, 2, err, sizeof err), 0);
    double c[8];
    struct ga_kmeans_result r = { c, NULL, 0, 0 };
    p = mk(2, 2, 0);
    CHECK_INT(ga_kmeans_cpu(&p, o, &r, 1, NULL, NULL, err, sizeof err), GA_EBADARG);
}

static void test_generator(void)
{
    for (unsigned s = 0; s < 100000; s += 7) {
        unsigned a = s, b = s;
        for (int i = 0; i < 3; i++)
            CHECK_INT(ga_kmeans_rand_r(&a), rand_r(&b));
        CHECK(a == b);
    }
    CHECK_INT(ga_kmeans_lab_nobjs(256, 2), 16777216);
    CHECK_INT(ga_kmeans_lab_nobjs(1, 1), 131072);
    double o[6];
    ga_kmeans_generate(o, 3, 2);
    for (int i = 0; i < 3; i++) {
        unsigned s = (unsigned)i;
        for (int j = 0; j < 2; j++) {
            double want = (rand_r(&s) / ((double)RAND_MAX)) * 10;
            CHECK(o[i * 2 + j] == want);
            CHECK(want >= 0 && want <= 10);
        }
    }
}

/* Three well separated groups; initial centres one from each group. */
static void test_cpu_known_answer(void)
{
    double o[] = { 0, 0, 10, 10, 20, 0, 1, 0, 0, 1, 11, 10, 10, 11, 21, 0, 20, 1, 1, 1, 11, 11, 21, 1 };
    int n = (int)(sizeof o / sizeof o[0]) / 2;
    double c[6];
    int32_t m[12];
    struct ga_kmeans_params p = mk(n, 2, 3);
    p.threshold = 0;
    struct ga_kmeans_result r = { c, m, 0, 0 };
    char err[128];
    CHECK_INT(ga_kmeans_cpu(&p, o, &r, 2, NULL, NULL, err, sizeof err), 0);
    CHECK_INT(r.loops, 2);   /* loop 1 assigns all (delta 1), loop 2 changes none */
    CHECK(r.delta == 0.0);
    CHECK(c[0] == 0.5 && c[1] == 0.5);
    CHECK(c[2] == 10.5 && c[3] == 10.5);
    CHECK(c[4] == 20.5 && c[5] == 0.5);
    for (int i = 0; i < n; i++)
        CHECK_INT(m[i], o[2 * i] >= 15 ? 2 : o[2 * i] >= 5 ? 1 : 0);
}

/* Ties go to the lowest index; an empty cluster keeps its centre. */
static void test_cpu_ties_and_empty(void)
{
    double o[] = { 5, 5, 5, 5, 0, 0, 10, 10, 4, 6 };   /* objects 0 and 1 equal: centre 1 never wins */
    double c[4];
    int32_t m[5];
    struct ga_kmeans_params p = mk(5, 2, 2);
    p.max_loops = 1;   /* next loop, the kept centre (5,5) would win objects 0 and 1 */
    struct ga_kmeans_result r = { c, m, 0, 0 };
    char err[128];
    CHECK_INT(ga_kmeans_cpu(&p, o, &r, 1, NULL, NULL, err, sizeof err), 0);
    for (int i = 0; i < 5; i++)
        CHECK_INT(m[i], 0);
    CHECK(c[2] == 5 && c[3] == 5);   /* empty cluster 1 kept its centre */
    CHECK(c[0] == 24.0 / 5 && c[1] == 26.0 / 5);
    /* Exact tie between two distinct centres: (0,0) and (2,0), object (1,0). */
    double o2[] = { 0, 0, 2, 0, 1, 0 };
    CHECK_INT(ga_kmeans_cpu(&(struct ga_kmeans_params){ 3, 2, 2, 1, 0.0, 0, 0 }, o2, &r, 1, NULL, NULL, err, sizeof err), 0);
    CHECK_INT(m[2], 0);
}

struct prog { int calls, last, cancel_at; double first; };
static int on_progress(void *arg, int loop, double delta)
{
    struct prog *pr = arg;
    pr->calls++;
    CHECK_INT(loop, pr->last + 1);
    pr->last = loop;
    if (loop == 1)
        pr->first = delta;
    return pr->cancel_at && loop >= pr->cancel_at;
}

static void test_cpu_loops_cancel(void)
{
    int64_t n = 20000;
    double *o = malloc(n * 2 * 8), c[32];
    ga_kmeans_generate(o, n, 2);
    struct ga_kmeans_params p = mk(n, 2, 16);
    p.max_loops = 5;
    p.threshold = 0;
    struct ga_kmeans_result r = { c, NULL, 0, 0 };
    struct prog pr = { 0, 0, 0, 0 };
    char err[128];
    CHECK_INT(ga_kmeans_cpu(&p, o, &r, 2, on_progress, &pr, err, sizeof err), 0);
    CHECK_INT(r.loops, 5);
    CHECK_INT(pr.calls, 5);
    CHECK(pr.first == 1.0);
    pr = (struct prog){ 0, 0, 3, 0 };
    CHECK_INT(ga_kmeans_cpu(&p, o, &r, 2, on_progress, &pr, err, sizeof err), GA_ECANCELED);
    CHECK_INT(r.loops, 3);
    CHECK_CONTAINS(err, "cancelled");
    p.threshold = 1.0;   /* any delta is <= 1: one loop */
    CHECK_INT(ga_kmeans_cpu(&p, o, &r, 2, NULL, NULL, err, sizeof err), 0);
    CHECK_INT(r.loops, 1);
    free(o);
}

/* Several tiles, odd size: same bits for any thread count; centres within
 * 1e-12 of a plain long-double mean of the members. */
static void test_cpu_threads_and_order(void)
{
    const int64_t n = 3 * GA_KMEANS_TILE + 1234;
    const int C = 3, k = 7;
    double *o = malloc(n * C * 8);
    ga_kmeans_generate(o, n, C);
    struct ga_kmeans_params p = mk(n, C, k);
    double c1[21], c2[21];
    int32_t *m1 = malloc(n * 4), *m2 = malloc(n * 4);
    struct ga_kmeans_result r1 = { c1, m1, 0, 0 }, r2 = { c2, m2, 0, 0 };
    char err[128];
    CHECK_INT(ga_kmeans_cpu(&p, o, &r1, 1, NULL, NULL, err, sizeof err), 0);
    CHECK_INT(ga_kmeans_cpu(&p, o, &r2, 4, NULL, NULL, err, sizeof err), 0);
    CHECK(memcmp(c1, c2, sizeof c1) == 0);
    CHECK(memcmp(m1, m2, n * 4) == 0);
    CHECK_INT(r1.loops, r2.loops);
    CHECK(r1.delta == r2.delta);
    /* Centres are the means of the final memberships' previous assignment:
     * recompute one more plain step from m1 and compare after a 1-loop run. */
    p.max_loops = 1;
    CHECK_INT(ga_kmeans_cpu(&p, o, &r1, 3, NULL, NULL, err, sizeof err), 0);
    long double s[21] = { 0 };
    long cnt[7] = { 0 };
    for (int64_t i = 0; i < n; i++) {
        cnt[m1[i]]++;
        for (int j = 0; j < C; j++)
            s[m1[i] * C + j] += o[i * C + j];
    }
    for (int c = 0; c < k; c++)
        for (int j = 0; j < C; j++)
            if (cnt[c])
                CHECK_NEAR(c1[c * C + j], (double)(s[c * C + j] / cnt[c]), 1e-12);
    free(o); free(m1); free(m2);
}

static void test_gpu_absent(void)
{
    if (have_gpu()) {
        harness_skip("a usable GPU is present: the no-GPU answer (GA_ENOGPU) is not exercised");
        return;
    }
    double o[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, c[4];
    struct ga_kmeans_params p = mk(4, 2, 2);
    struct ga_kmeans_result r = { c, NULL, 0, 0 };
    char err[200] = "";
    CHECK_INT(ga_kmeans_gpu(0, &p, o, &r, NULL, NULL, err, sizeof err), GA_ENOGPU);
    CHECK(err[0] != 0);
    p.k = 9;
    CHECK_INT(ga_kmeans_gpu(0, &p, o, &r, NULL, NULL, err, sizeof err), GA_EBADARG);
}

static void gpu_case_k(int64_t n, int C, int k, int gen_on_device, int max_loops, double threshold, int kernel)
{
    double *o = malloc((size_t)n * C * 8);
    ga_kmeans_generate(o, n, C);
    struct ga_kmeans_params p = mk(n, C, k);
    p.max_loops = max_loops;
    p.threshold = threshold;
    p.kernel = kernel;
    double *cc = malloc((size_t)k * C * 8), *gc = malloc((size_t)k * C * 8);
    int32_t *cm = malloc(n * 4), *gm = malloc(n * 4);
    struct ga_kmeans_result rc = { cc, cm, 0, 0 }, rg = { gc, gm, 0, 0 };
    char err[200];
    CHECK_INT(ga_kmeans_cpu(&p, o, &rc, 0, NULL, NULL, err, sizeof err), 0);
    CHECK_INT(ga_kmeans_gpu(0, &p, gen_on_device ? NULL : o, &rg, NULL, NULL, err, sizeof err), 0);
    int64_t diff_m = 0;
    for (int64_t i = 0; i < n; i++)
        diff_m += cm[i] != gm[i];
    int diff_c = 0;
    double maxrel = 0;
    for (int q = 0; q < k * C; q++) {
        diff_c += cc[q] != gc[q];
        double rel = fabs(cc[q] - gc[q]) / fmax(fabs(cc[q]), 1e-300);
        maxrel = rel > maxrel ? rel : maxrel;
    }
    printf("kmeans gpu n=%lld C=%d k=%d gen=%d kernel=%s: loops cpu %d gpu %d, delta %.6g/%.6g, memberships "
           "differing %lld, centres differing %d (max rel %.3g)\n", (long long)n, C, k, gen_on_device,
           ga_kmeans_kernel_name(kernel), rc.loops, rg.loops, rc.delta, rg.delta, (long long)diff_m, diff_c, maxrel);
    CHECK_INT(rc.loops, rg.loops);
    CHECK(rc.delta == rg.delta);
    CHECK_INT(diff_m, 0);
    CHECK_INT(diff_c, 0);
    free(o); free(cc); free(gc); free(cm); free(gm);
}

/* Small (k, coords): every kernel that serves them (auto = lane); others: auto. */
static void gpu_case(int64_t n, int C, int k, int gen_on_device, int max_loops, double threshold)
{
    gpu_case_k(n, C, k, gen_on_device, max_loops, threshold, GA_KMEANS_KERNEL_AUTO);
    if (ga_kmeans_kernel_small(k, C)) {
        gpu_case_k(n, C, k, gen_on_device, max_loops, threshold, GA_KMEANS_KERNEL_REG);
        gpu_case_k(n, C, k, gen_on_device, max_loops, threshold, GA_KMEANS_KERNEL_GENERIC);
    }
}

static void test_gpu_vs_cpu(void)
{
    if (!have_gpu()) {
        harness_skip("no usable GPU (%s): the GPU's k-means is not compared with the CPU reference",
                     no_gpu);
        return;
    }
    gpu_case(1000, 2, 16, 0, 10, 0.001);                    /* one partial tile */
    gpu_case(5 * GA_KMEANS_TILE + 77, 2, 16, 1, 10, 0.001); /* fast path, generated on device */
    gpu_case(5 * GA_KMEANS_TILE + 77, 2, 16, 0, 10, 0.001); /* fast path, host rows */
    gpu_case(200000, 1, 5, 0, 20, 0.0);
    gpu_case(200000, 3, 11, 0, 10, 0.001);
    gpu_case(200000, 4, 16, 0, 10, 0.001);
    gpu_case(200000, 2, 32, 0, 10, 0.001);
    gpu_case(200000, 2, 9, 0, 10, 0.001);                   /* k < k_max: padded clusters never win */
    gpu_case(70000, 3, 5, 0, 10, 0.001);
    gpu_case(3 * GA_KMEANS_TILE, 1, 32, 0, 12, 0.0);         /* whole tiles only */
    /* Duplicated objects and centres: exact ties, to the lowest index. */
    {
        const int64_t n = 2 * GA_KMEANS_TILE + 300;
        double *o = malloc((size_t)n * 2 * 8);
        for (int64_t i = 0; i < n; i++) {
            o[2 * i] = (double)(i % 7);
            o[2 * i + 1] = (double)((i / 7) % 3);
        }
        struct ga_kmeans_params p = mk(n, 2, 16);   /* the first 16 objects: duplicates among them */
        p.threshold = 0;
        for (int kn = GA_KMEANS_KERNEL_AUTO; kn <= GA_KMEANS_KERNEL_GENERIC; kn++) {
            double cc[32], gc[32];
            int32_t *cm = malloc(n * 4), *gm = malloc(n * 4);
            struct ga_kmeans_result rc = { cc, cm, 0, 0 }, rg = { gc, gm, 0, 0 };
            char err[200];
            p.kernel = kn;
            CHECK_INT(ga_kmeans_cpu(&p, o, &rc, 0, NULL, NULL, err, sizeof err), 0);
            CHECK_INT(ga_kmeans_gpu(0, &p, o, &rg, NULL, NULL, err, sizeof err), 0);
            CHECK(memcmp(cc, gc, sizeof cc) == 0);
            CHECK(memcmp(cm, gm, (size_t)n * 4) == 0);
            CHECK_INT(rc.loops, rg.loops);
            CHECK(rc.delta == rg.delta);
            free(cm);
            free(gm);
        }
        free(o);
    }
    gpu_case(100000, 5, 7, 0, 10, 0.001);                   /* generic: coords > 4 */
    gpu_case(100000, 1, 40, 0, 10, 0.001);                  /* generic: k > 32 */
    gpu_case(60000, 2, 300, 0, 5, 0.001);                   /* generic, many clusters */
    gpu_case(20000, 17, 3, 1, 8, 0.0);
    gpu_case(1 << 22, 2, 16, 1, 10, 0.001);
    /* Progress and cancel through host checks every loop. */
    int64_t n = 100000;
    struct ga_kmeans_params p = mk(n, 2, 16);
    p.sync_every = 1;
    p.threshold = 0;
    double c[32];
    struct ga_kmeans_result r = { c, NULL, 0, 0 };
    struct prog pr = { 0, 0, 4, 0 };
    char err[200];
    CHECK_INT(ga_kmeans_gpu(0, &p, NULL, &r, on_progress, &pr, err, sizeof err), GA_ECANCELED);
    CHECK_INT(r.loops, 4);
    CHECK_INT(pr.calls, 4);
    CHECK(pr.first == 1.0);
    pr = (struct prog){ 0, 0, 0, 0 };
    p.sync_every = 3;
    CHECK_INT(ga_kmeans_gpu(0, &p, NULL, &r, on_progress, &pr, err, sizeof err), 0);
    CHECK_INT(r.loops, 10);
    CHECK_INT(pr.calls, 10);
}

void run_tests(void)
{
    RUN(test_validate);
    RUN(test_generator);
    RUN(test_cpu_known_answer);
    RUN(test_cpu_ties_and_empty);
    RUN(test_cpu_loops_cancel);
    RUN(test_cpu_threads_and_order);
    RUN(test_gpu_absent);
    RUN(test_gpu_vs_cpu);
}
