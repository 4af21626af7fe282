/* bench_engine_gpus.c — does the engine scale over GPUs?  The same batches
 * go through an engine of 1, then of N CUDA backends (metrics hashed over
 * the GPUs, fed concurrently); prints points/s for each and checks the two
 * engines produced the same rows (count and an order-independent checksum).
 *   bench_engine_gpus [--gpus N] [--metrics M] [--batch P] [--batches K] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/log.h"
#include "gpu/cuda.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

struct run { double seconds; size_t rows; uint64_t checksum; int rc; };

static struct run run_engine(int ngpus, const struct ga_policy *pol, uint32_t metrics,
                             size_t batch, int batches, uint32_t *mid, int64_t *ts, double *val)
{
    struct run r = { 0 };
    struct ga_backend *b[16];
    for (int i = 0; i < ngpus; i++)
        if ((r.rc = ga_cuda_backend_open(&b[i], i, NULL)) < 0) {
            fprintf(stderr, "cuda:%d: %s\n", i, ga_strerror(r.rc));
            return r;
        }
    struct ga_engine *e;
    if ((r.rc = ga_engine_open(&e, b, ngpus)) < 0)
        return r;
    for (uint32_t m = 0; m < metrics && !r.rc; m++)
        r.rc = ga_engine_metric_add(e, m, pol);
    struct ga_result res = { 0 };
    int64_t base = 1700000000LL * 1000000000LL;
    /* warm-up batch (module load, pools), not timed, then the timed batches */
    for (int k = -1; k < batches && !r.rc; k++) {
        for (size_t i = 0; i < batch; i++) {
            uint64_t x = mix((uint64_t)(k + 2) * 0x9e3779b97f4a7c15ULL + i);
            mid[i] = (uint32_t)(x % metrics);
            ts[i] = base + ((int64_t)(k + 1) * (int64_t)batch + (int64_t)i) / metrics * 1000000000LL;
            val[i] = (double)(x >> 11) / 9007199254740992.0 * 1000.0 + 1.0;
        }
        struct ga_points p = { batch, mid, ts, val };
        ga_result_reset(&res);
        double t0 = now_s();
        r.rc = ga_engine_feed(e, &p, &res);
        if (k >= 0)
            r.seconds += now_s() - t0;
        if (k >= 0)
            for (size_t i = 0; i < res.naggs; i++) {
                const struct ga_agg *a = &res.aggs[i];
                uint64_t v;
                memcpy(&v, &a->value, 8);
                r.checksum += mix(((uint64_t)a->metric << 32 | a->method) ^ (uint64_t)a->ts ^
                                  (uint64_t)a->granularity_ns * 31) ^ v;
                r.rows++;
            }
    }
    ga_result_free(&res);
    ga_engine_close(e);
    return r;
}

int main(int argc, char **argv)
{
    int ngpus = 2, batches = 10;
    uint32_t metrics = 10000;
    size_t batch = 10000000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpus") && i + 1 < argc)
            ngpus = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--metrics") && i + 1 < argc)
            metrics = (uint32_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
            batches = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_engine_gpus [--gpus N] [--metrics M] [--batch P] [--batches K]\n");
            return 2;
        }
    }
    ga_log_set_level(GA_LOG_WARN);
    struct ga_policy pol = { .name = "bench", .back_window = 0 };
    const char *methods[] = { "mean", "sum", "count", "min", "max", "first", "last", "std" };
    ga_policy_add_def(&pol, 60LL * 1000000000, 0, 0, NULL);
    ga_policy_add_def(&pol, 3600LL * 1000000000, 0, 0, NULL);
    ga_policy_methods_from_list(&pol, methods, 8, NULL);
    uint32_t *mid = malloc(batch * sizeof *mid);
    int64_t *ts = malloc(batch * sizeof *ts);
    double *val = malloc(batch * sizeof *val);
    if (!mid || !ts || !val)
        return 1;
    struct run one = run_engine(1, &pol, metrics, batch, batches, mid, ts, val);
    struct run many = run_engine(ngpus, &pol, metrics, batch, batches, mid, ts, val);
    printf("| engine | points | seconds | points/s | rows | checksum |\n|---|---|---|---|---|---|\n");
    printf("| 1 GPU | %zu | %.3f | %.3g | %zu | %016llx |\n", batch * (size_t)batches, one.seconds,
           (double)batch * batches / one.seconds, one.rows, (unsigned long long)one.checksum);
    printf("| %d GPUs | %zu | %.3f | %.3g | %zu | %016llx |\n", ngpus, batch * (size_t)batches,
           many.seconds, (double)batch * batches / many.seconds, many.rows,
           (unsigned long long)many.checksum);
    int same = one.rc == 0 && many.rc == 0 && one.rows == many.rows && one.checksum == many.checksum;
    printf("\nscaling %d GPUs / 1 GPU: %.2fx; rows identical: %s\n", ngpus, one.seconds / many.seconds,
           same ? "yes" : "NO");
    free(mid);
    free(ts);
    free(val);
    return same ? 0 : 1;
}
