/* bench_jobs_actuarial.c — throughput of the apd-fit and gf820 job kernels, GPU
 * against the multi-threaded CPU reference in the same run, with the
 * results compared.
 *
 *   bench_jobs_actuarial [--threads N] [--apd-windows N] [--apd-cpu-windows N]
 *                [--gf-batch2 N] [--gf-batch10 N] [--gf-gpu-batch N] [--repeat N]
 *                [--only apd|gf820]
 *
 * APD: default job (W 500, L 80, quantiles 1 % and 5 %) over a skewed
 * Student-t series; the GPU fits --apd-windows windows (at most; default 20000, sized to ~1 s a run) with
 * each λ-chunk variant (8, 16, 20), the CPU the first --apd-cpu-windows
 * (default 160) on --threads (default: every core).  GF820: contract g 10,
 * r 65, x 35 (and x varied across a batch) at steps 2 and 10; the CPU runs
 * batches of --gf-batch2 (16) and --gf-batch10 (1) contracts, the GPU the
 * same batches and --gf-gpu-batch (64) contracts.  Times are wall clock
 * around the whole entry point (allocation and copies included), the median
 * of --repeat (3) runs after one warm-up; the CPU runs once.  Every line is
 * key=value; a table comes last. */
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/jobs/apd/apd.h"
#include "gpu/jobs/gf820/gf820.h"
#include "proto/ga_err.h"
#include "tools/bench/bench_opts.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 12345;

static double urand(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double nrand(void)
{
    return sqrt(-2.0 * log(urand())) * cos(2.0 * 3.14159265358979323846 * urand());
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct row {
    char what[64];
    double gpu_rate, cpu_rate;   /* items per second */
    char unit[16];
    char check[96];
};
static struct row rows[32];
static int nrows;

static int bench_apd(int threads, size_t nwin, size_t ncpu_win, int repeat)
{
    struct apd_params p;
    apd_params_default(&p);
    size_t n = nwin + p.window - 1;
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        double chi = 0;
        for (int k = 0; k < 4; k++) {
            double z = nrand();
            chi += z * z;
        }
        double t = nrand() / sqrt(chi / 4);
        x[i] = 0.01 * (t >= 0 ? 1.4 * t : t / 1.4);
    }
    struct apd_fit *g = calloc(nwin, sizeof *g), *c = calloc(ncpu_win, sizeof *c);
    char err[256] = "";
    size_t nc = ncpu_win + p.window - 1;
    double t0 = now();
    int rc = apd_fit_cpu(&p, x, nc, c, threads, NULL, NULL, err, sizeof err);
    double cpu_s = now() - t0;
    if (rc) {
        fprintf(stderr, "apd cpu: %s (%s)\n", ga_strerror(rc), err);
        return rc;
    }
    double cpu_rate = ncpu_win / cpu_s;
    printf("apd cpu threads=%d windows=%zu seconds=%.3f windows_per_s=%.1f\n", threads, ncpu_win, cpu_s, cpu_rate);
    int chunks[3] = { 8, 16, 20 };
    for (int v = 0; v < 3; v++) {
        p.gpu_chunk = chunks[v];
        rc = apd_fit_gpu(0, &p, x, p.window + 255, g, NULL, NULL, err, sizeof err);   /* warm-up */
        if (rc) {
            fprintf(stderr, "apd gpu: %s (%s)\n", ga_strerror(rc), err);
            return rc;
        }
        /* size the timed runs to about a second each from a 2048-window run */
        size_t probe = nwin < 2048 ? nwin : 2048;
        t0 = now();
        rc = apd_fit_gpu(0, &p, x, probe + p.window - 1, g, NULL, NULL, err, sizeof err);
        double probe_s = now() - t0;
        size_t nrun = (size_t)(probe / probe_s);
        nrun = nrun < probe ? probe : nrun > nwin ? nwin : nrun;
        double ts[16];
        for (int r = 0; r < repeat && rc == 0; r++) {
            t0 = now();
            rc = apd_fit_gpu(0, &p, x, nrun + p.window - 1, g, NULL, NULL, err, sizeof err);
            ts[r] = now() - t0;
            if (rc) {
                fprintf(stderr, "apd gpu: %s (%s)\n", ga_strerror(rc), err);
                return rc;
            }
        }
        double s = median(ts, repeat);
        int same = 0;
        double worst = 0, worst_rt = 0;
        for (size_t w = 0; w < ncpu_win; w++) {
            same += g[w].theta_index == c[w].theta_index && g[w].lambda_index == c[w].lambda_index;
            double e = fabs(g[w].loglik - c[w].loglik);
            worst = e > worst ? e : worst;
        }
        for (size_t w = 0; w < nrun; w += 97)
            for (int m = 0; m < p.n_quantiles; m++) {
                double e = fabs(apd_cdf(&g[w], g[w].q[m]) - p.quantiles[m]);
                worst_rt = e > worst_rt ? e : worst_rt;
            }
        printf("apd gpu chunk=%d windows=%zu seconds=%.4f windows_per_s=%.1f same_argmax=%d/%zu "
               "worst_dloglik=%.3g worst_cdf_roundtrip=%.3g\n", chunks[v], nrun, s, nrun / s, same, ncpu_win, worst,
               worst_rt);
        struct row *rw = &rows[nrows++];
        snprintf(rw->what, sizeof rw->what, "apd W500 L80 chunk %d", chunks[v]);
        rw->gpu_rate = nrun / s;
        rw->cpu_rate = cpu_rate;
        snprintf(rw->unit, sizeof rw->unit, "windows/s");
        snprintf(rw->check, sizeof rw->check, "argmax %d/%zu, dl %.1e, F(q)-p %.1e", same, ncpu_win, worst, worst_rt);
    }
    free(x);
    free(g);
    free(c);
    return 0;
}

static int bench_gf(int threads, int steps, size_t ncpu, size_t ngpu, int repeat)
{
    size_t nmax = ncpu > ngpu ? ncpu : ngpu;
    struct gf820_contract *k = malloc(nmax * sizeof *k);
    for (size_t i = 0; i < nmax; i++)
        k[i] = (struct gf820_contract){ 10, 65, i == 0 ? 35 : 25 + (int)(i % 40), steps };
    double *vc = malloc(nmax * sizeof *vc), *vg = malloc(nmax * sizeof *vg);
    char err[256] = "";
    double t0 = now();
    int rc = gf820_cpu(k, ncpu, vc, NULL, threads, NULL, NULL, err, sizeof err);
    double cpu_s = now() - t0;
    if (rc) {
        fprintf(stderr, "gf820 cpu: %s (%s)\n", ga_strerror(rc), err);
        return rc;
    }
    printf("gf820 cpu steps=%d threads=%d contracts=%zu seconds=%.3f v0=%.17g\n", steps, threads, ncpu, cpu_s, vc[0]);
    rc = gf820_gpu(0, k, 1, vg, NULL, NULL, NULL, err, sizeof err);     /* warm-up */
    if (rc) {
        fprintf(stderr, "gf820 gpu: %s (%s)\n", ga_strerror(rc), err);
        return rc;
    }
    size_t sizes[2] = { ncpu, ngpu };
    for (int v = 0; v < 2; v++) {
        double ts[16];
        for (int r = 0; r < repeat; r++) {
            t0 = now();
            rc = gf820_gpu(0, k, sizes[v], vg, NULL, NULL, NULL, err, sizeof err);
            ts[r] = now() - t0;
            if (rc) {
                fprintf(stderr, "gf820 gpu: %s (%s)\n", ga_strerror(rc), err);
                return rc;
            }
        }
        double s = median(ts, repeat), worst = 0;
        for (size_t i = 0; i < ncpu && i < sizes[v]; i++) {
            double e = fabs(vg[i] - vc[i]);
            worst = e > worst ? e : worst;
        }
        printf("gf820 gpu steps=%d contracts=%zu seconds=%.5f v0=%.17g worst_dv0_vs_cpu=%.3g speedup_vs_cpu=%.1f\n",
               steps, sizes[v], s, vg[0], worst, (cpu_s / ncpu) / (s / sizes[v]));
        struct row *rw = &rows[nrows++];
        snprintf(rw->what, sizeof rw->what, "gf820 steps %d, GPU batch %zu", steps, sizes[v]);
        rw->gpu_rate = sizes[v] / s;
        rw->cpu_rate = ncpu / cpu_s;
        snprintf(rw->unit, sizeof rw->unit, "contracts/s");
        snprintf(rw->check, sizeof rw->check, "V0 %.15f, |dV0| %.1e", vg[0], worst);
    }
    free(k);
    free(vc);
    free(vg);
    return 0;
}

int main(int argc, char **argv)
{
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN), repeat = 3;
    size_t apd_w = 20000, apd_cw = 160, gf2 = 16, gf10 = 1, gfg = 64;
    const char *only = "";
    enum { O_THREADS = 0x100, O_APD_W, O_APD_CW, O_GF2, O_GF10, O_GFG, O_REPEAT, O_ONLY };
    static const struct option lo[] = {
        { "threads", required_argument, NULL, O_THREADS },
        { "apd-windows", required_argument, NULL, O_APD_W },
        { "apd-cpu-windows", required_argument, NULL, O_APD_CW },
        { "gf-batch2", required_argument, NULL, O_GF2 },
        { "gf-batch10", required_argument, NULL, O_GF10 },
        { "gf-gpu-batch", required_argument, NULL, O_GFG },
        { "repeat", required_argument, NULL, O_REPEAT },
        { "only", required_argument, NULL, O_ONLY },
        { NULL, 0, NULL, 0 },
    };
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
        const char *v = optarg;
        switch (opt) {
        case O_THREADS: threads = atoi(v); break;
        case O_APD_W: apd_w = strtoul(v, NULL, 10); break;
        case O_APD_CW: apd_cw = strtoul(v, NULL, 10); break;
        case O_GF2: gf2 = strtoul(v, NULL, 10); break;
        case O_GF10: gf10 = strtoul(v, NULL, 10); break;
        case O_GFG: gfg = strtoul(v, NULL, 10); break;
        case O_REPEAT: repeat = atoi(v); break;
        case O_ONLY: only = v; break;
        default:
            bench_opt_error("bench_jobs_actuarial", opt, argv);
            fprintf(stderr, "usage: see the header of tools/bench/bench_jobs_actuarial.c\n");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench_jobs_actuarial: unexpected argument '%s'\n"
                "usage: see the header of tools/bench/bench_jobs_actuarial.c\n", argv[optind]);
        return 2;
    }
    if (repeat < 1 || repeat > 16 || threads < 1 || apd_cw < 1 || apd_cw > apd_w) {
        fprintf(stderr, "bad option value\n");
        return 2;
    }
    int rc = 0;
    if (strcmp(only, "gf820") != 0)
        rc |= bench_apd(threads, apd_w, apd_cw, repeat) != 0;
    if (strcmp(only, "apd") != 0) {
        rc |= bench_gf(threads, 2, gf2, gfg, repeat) != 0;
        rc |= bench_gf(threads, 10, gf10, gfg, repeat) != 0;
    }
    printf("\n%-30s %14s %14s %9s  %s\n", "job", "GPU", "CPU", "GPU/CPU", "check");
    for (int i = 0; i < nrows; i++)
        printf("%-30s %11.1f/s %11.2f/s %8.1fx  %s (%s; CPU %d threads)\n", rows[i].what, rows[i].gpu_rate,
               rows[i].cpu_rate, rows[i].gpu_rate / rows[i].cpu_rate, rows[i].check, rows[i].unit, threads);
    return rc;
}
