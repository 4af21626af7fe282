/* bench_jobs_peers.c — GPU benchmarks of the dot, Black-Scholes and k-means jobs,
 * each against its baseline in the same run (docs/PERFORMANCE.md, "Jobs on the
 * GPU").
 *
 *   bench_jobs_peers [--only dot|bs|kmeans] [--reps N] [--quick]
 *                [--centres FILE]    write the k-means GPU centres (for the
 *                                    PyTorch comparison, tests/gpu/)
 *                [--no-cpu]          skip the k-means CPU reference run
 *
 * dot: n = 2^20..2^28, float32 and float64; ours vs cuBLAS (dlopen) vs the
 *      device-to-device copy ceiling.  bs: 4M options, ours vs an SDK-style
 *      kernel.  kmeans: {256 MB, 2 coords, 16 clusters, 10 loops}, GPU loop
 *      time of the lane and reg kernels and the 16-core CPU reference,
 *      centres compared bit for bit. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

#include "gpu/jobs/blackscholes/blackscholes.h"
#include "gpu/jobs/dot/dot.h"
#include "gpu/jobs/kmeans/kmeans.h"
#include "proto/ga_err.h"
#include "tools/bench/bench_opts.h"
#include "tools/bench/cuda/bench_hooks.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int bench_dot(int reps, int quick, char *summary, size_t sl)
{
    char err[256];
    printf("\n== dot: ours vs cuBLAS, GB/s = bytes read / time; copy = D2D memcpy, read + written ==\n");
    printf("%-4s %-6s %9s %9s %9s %8s %8s %8s %7s %10s %10s\n", "type", "n", "ours_us", "cublas_us", "copy_us",
           "ours_GBs", "cubl_GBs", "copy_GBs", "ours/cb", "rel_ours", "rel_cublas");
    double ratio26[2] = { 0, 0 };
    for (int dt = 0; dt < 2; dt++)
        for (int e = 20; e <= 28; e += quick ? 4 : 2) {
            struct ga_dot_bench b;
            int rc = ga_dot_bench_run(0, dt, (int64_t)1 << e, reps, 256, &b, err, sizeof err);
            if (rc) {
                printf("dot %s 2^%d: %s (%s)\n", dt ? "f64" : "f32", e, ga_errname(rc), err);
                return rc;
            }
            double ratio = b.cublas_ms > 0 ? b.cublas_ms / b.ours_ms : 0;
            double scale = fabs(b.ref_val) > 0 ? fabs(b.ref_val) : 1;
            printf("%-4s 2^%-4d %9.1f %9.1f %9.1f %8.0f %8.0f %8.0f %7.3f %10.2e %10.2e\n", dt ? "f64" : "f32", e,
                   b.ours_ms * 1e3, b.cublas_ms * 1e3, b.copy_ms * 1e3, b.ours_gbs, b.cublas_gbs, b.copy_gbs, ratio,
                   fabs(b.ours_val - b.ref_val) / scale, b.cublas_ms > 0 ? fabs(b.cublas_val - b.ref_val) / scale : 0);
            if (e == 26 || (quick && e == 24))
                ratio26[dt] = ratio;
        }
    if (!quick)
        for (int blk = 128; blk <= 1024; blk *= 2) {
            struct ga_dot_bench b;
            if (ga_dot_bench_run(0, GA_DOT_F32, (int64_t)1 << 26, reps, blk, &b, err, sizeof err) == 0)
                printf("dot f32 2^26 block %4d: %.1f us, %.0f GB/s (cuBLAS %.1f us)\n", blk, b.ours_ms * 1e3,
                       b.ours_gbs, b.cublas_ms * 1e3);
        }
    snprintf(summary, sl, "dot   2^26 ours/cuBLAS speed: f32 %.3f, f64 %.3f (goal >= 0.95)", ratio26[0], ratio26[1]);
    return 0;
}

static int bench_bs(int reps, char *summary, size_t sl)
{
    char err[256];
    struct ga_bs_bench b;
    int rc = ga_bs_bench_run(0, GA_BS_N_DEFAULT, reps, &b, err, sizeof err);
    printf("\n== blackscholes: 4M options, 20 bytes per option ==\n");
    if (rc) {
        printf("blackscholes: %s (%s)\n", ga_errname(rc), err);
        return rc;
    }
    printf("%-10s %9s %9s %10s %10s\n", "kernel", "us", "GB/s", "Gopt/s", "L1");
    printf("%-10s %9.1f %9.0f %10.2f %10.2e\n", "ours", b.ours_ms * 1e3, b.ours_gbs, b.ours_gopts, b.ours_l1);
    printf("%-10s %9.1f %9.0f %10.2f %10.2e\n", "sdk-style", b.sdk_ms * 1e3, b.sdk_gbs, b.sdk_gopts, b.sdk_l1);
    snprintf(summary, sl, "bs    ours %.0f GB/s %.2f Gopt/s, sdk-style %.0f GB/s (ratio %.3f), L1 %.1e", b.ours_gbs,
             b.ours_gopts, b.sdk_gbs, b.sdk_ms / b.ours_ms, b.ours_l1);
    return 0;
}

/* Both small-(k, coords) kernels, lane (the default) and reg (the first
 * version), in the same run; the CPU reference once, compared with each. */
static int bench_kmeans(int reps, int cpu, const char *centres_file, char *summary, size_t sl)
{
    char err[256];
    struct ga_kmeans_params p;
    ga_kmeans_params_default(&p);
    p.coords = 2;
    p.k = 16;
    p.nobjs = ga_kmeans_lab_nobjs(256, 2);
    p.max_loops = 10;
    p.threshold = 0.001;
    static const int kernels[2] = { GA_KMEANS_KERNEL_LANE, GA_KMEANS_KERNEL_REG };
    struct ga_kmeans_bench b[2];
    double gc[2][32], cc[32];
    printf("\n== kmeans: {256 MB, 2 coords, 16 clusters, 10 loops} = %lld objects ==\n", (long long)p.nobjs);
    for (int v = 0; v < 2; v++) {
        p.kernel = kernels[v];
        int rc = ga_kmeans_bench_run(0, &p, reps, &b[v], gc[v], err, sizeof err);
        if (rc) {
            printf("kmeans %s: %s (%s)\n", ga_kmeans_kernel_name(p.kernel), ga_errname(rc), err);
            return rc;
        }
        printf("gpu %-4s kernel: %d loops in %.3f ms (%.4f ms/loop), final delta %.6g; generate %.2f ms, "
               "load from host (copy+transpose) %.1f ms\n", ga_kmeans_kernel_name(b[v].kernel), b[v].loops,
               b[v].iter_ms, b[v].per_iter_ms, b[v].delta, b[v].gen_ms, b[v].load_ms);
    }
    int gpu_same = b[0].loops == b[1].loops && b[0].delta == b[1].delta && memcmp(gc[0], gc[1], sizeof gc[0]) == 0;
    printf("lane vs reg kernel: centres, loops and delta %s\n", gpu_same ? "bit-identical" : "DIFFER");
    if (centres_file) {
        FILE *f = fopen(centres_file, "w");
        if (f) {
            fprintf(f, "%d %.17g\n", b[0].loops, b[0].delta);
            for (int q = 0; q < 32; q++)
                fprintf(f, "%.17g\n", gc[0][q]);
            fclose(f);
        }
    }
    char cpu_s[160] = "cpu reference not run";
    if (cpu) {
        double *o = malloc(sizeof(double) * p.nobjs * 2);
        if (!o)
            return GA_ENOMEM;
        ga_kmeans_generate(o, p.nobjs, 2);
        struct ga_kmeans_result r = { cc, NULL, 0, 0 };
        double t0 = now_ms();
        int rc = ga_kmeans_cpu(&p, o, &r, 0, NULL, NULL, err, sizeof err);
        double ms = now_ms() - t0;
        free(o);
        if (rc) {
            printf("kmeans cpu: %s (%s)\n", ga_errname(rc), err);
            return rc;
        }
        int same[2];
        for (int v = 0; v < 2; v++)
            same[v] = r.loops == b[v].loops && r.delta == b[v].delta && memcmp(cc, gc[v], sizeof cc) == 0;
        printf("cpu (all cores): %d loops in %.1f ms, delta %.6g; centres, loops, delta: lane %s, reg %s\n", r.loops,
               ms, r.delta, same[0] ? "bit-identical" : "DIFFER", same[1] ? "bit-identical" : "DIFFER");
        snprintf(cpu_s, sizeof cpu_s, "cpu %.0f ms, lane %s, reg %s", ms, same[0] ? "identical" : "DIFFER",
                 same[1] ? "identical" : "DIFFER");
    }
    printf("centres (gpu):");
    for (int c = 0; c < 16; c++)
        printf(" (%.6f,%.6f)", gc[0][2 * c], gc[0][2 * c + 1]);
    printf("\n");
    snprintf(summary, sl, "kmeans lane %.3f ms (%.4f ms/loop), reg %.3f ms (%.4f ms/loop), %d loops; %s", b[0].iter_ms,
             b[0].per_iter_ms, b[1].iter_ms, b[1].per_iter_ms, b[0].loops, cpu_s);
    return 0;
}

int main(int argc, char **argv)
{
    const char *only = NULL, *centres = NULL;
    int reps = 20, quick = 0, cpu = 1;
    enum { O_ONLY = 0x100, O_REPS, O_CENTRES, O_QUICK, O_NO_CPU };
    static const struct option lo[] = {
        { "only", required_argument, NULL, O_ONLY },
        { "reps", required_argument, NULL, O_REPS },
        { "centres", required_argument, NULL, O_CENTRES },
        { "quick", no_argument, NULL, O_QUICK },
        { "no-cpu", no_argument, NULL, O_NO_CPU },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *usage = "usage: %s [--only dot|bs|kmeans] [--reps N] [--quick] [--centres FILE] [--no-cpu]\n";
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (opt) {
        case O_ONLY: only = optarg; break;
        case O_REPS: reps = atoi(optarg); break;
        case O_CENTRES: centres = optarg; break;
        case O_QUICK: quick = 1; break;
        case O_NO_CPU: cpu = 0; break;
        case 'h':
            printf(usage, argv[0]);
            return 0;
        default:
            bench_opt_error(argv[0], opt, argv);
            fprintf(stderr, usage, argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        fprintf(stderr, usage, argv[0]);
        return 2;
    }
    char s1[256] = "", s2[256] = "", s3[256] = "";
    int rc = 0;
    if (!only || !strcmp(only, "dot"))
        rc |= bench_dot(reps, quick, s1, sizeof s1);
    if (!only || !strcmp(only, "bs"))
        rc |= bench_bs(reps, s2, sizeof s2);
    if (!only || !strcmp(only, "kmeans"))
        rc |= bench_kmeans(reps < 5 ? reps : 5, cpu, centres, s3, sizeof s3);
    printf("\n== summary ==\n%s\n%s\n%s\n", s1, s2, s3);
    return rc ? 1 : 0;
}
