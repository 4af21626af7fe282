/* bench_engine.c — aggregation throughput of the engine (CPU backend).
 *
 *   bench_engine [--points N] [--metrics M] [--batch B] [--threads T]
 *                [--granularity 60,3600] [--method mean,std,...]
 *                [--interval S] [--seed X] [--dump FILE --dump-metrics K]
 *
 * Synthetic load, generated batch by batch so 100M points need no memory:
 * M metrics, each a random walk sampled every S seconds (default 10) with
 * up to S/2 of jitter; a batch holds B/M consecutive points of every metric,
 * metrics interleaved (as a collector flushes).  Only ga_engine_feed() is
 * timed: generation and the first metric_add are not.
 *
 * Prints one line of key=value: points, metrics, batch, threads, methods,
 * seconds and points_per_s (wall clock), cpu_seconds and points_per_cpu_s
 * (CPU time of the process, all threads: per-core throughput, robust to
 * other load on the machine), aggs (rows reported), late.  --dump writes the points of
 * metrics [0, K) to FILE, for tools/bench/bench_engine.py to run carbonara
 * on the same data: per batch an int64 count, then count records
 * { int64 ts_ns; double value; int64 metric }. */
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/engine.h"
#include "proto/policy.h"
#include "proto/ga_err.h"
#include "proto/ts_parse.h"
#include "tools/bench/bench_opts.h"

#define NS_PER_S 1000000000LL
#define T0_NS (1700000000LL * NS_PER_S)

struct dump_rec {
    int64_t ts;
    double value;
    int64_t metric;
};

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s)
{
    return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The usage on f; exits with status. */
static void usage(FILE *f, int status)
{
    fprintf(f, "usage: bench_engine [--points N] [--metrics M] [--batch B] [--threads T] "
                    "[--granularity G,..] [--method M,..] [--interval S] [--seed X] "
                    "[--dump FILE --dump-metrics K]\n");
    exit(status);
}

static int build_policy(struct ga_policy *p, char *grans, char *methods)
{
    const char *names[GA_POLICY_MAX_METHODS];
    int nm = 0;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "bench");
    for (char *t = strtok(grans, ","); t; t = strtok(NULL, ",")) {
        int64_t g;
        const char *why = "";
        if (ts_parse_duration(t, &g) < 0 || ga_policy_add_def(p, g, 0, 0, &why) < 0) {
            fprintf(stderr, "bench_engine: bad granularity '%s' %s\n", t, why);
            return -1;
        }
    }
    for (char *t = strtok(methods, ","); t && nm < GA_POLICY_MAX_METHODS; t = strtok(NULL, ","))
        names[nm++] = t;
    const char *bad = NULL;
    if (ga_policy_methods_from_list(p, names, nm, &bad) < 0) {
        fprintf(stderr, "bench_engine: bad method '%s'\n", bad ? bad : "?");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    long long npoints = 1000000, nmetrics = 10000, batch = 1000000, dump_k = 0;
    int threads = 1;
    double interval = 10.0;
    uint64_t seed = 1;
    char grans[256] = "60,3600", methods[2048] = "mean";
    char method_arg[2048], gran_arg[256];
    const char *dump_path = NULL;
    enum { O_POINTS = 0x100, O_METRICS, O_BATCH, O_THREADS, O_INTERVAL, O_SEED, O_GRAN, O_METHOD,
           O_DUMP, O_DUMP_K };
    static const struct option lo[] = {
        { "points", required_argument, NULL, O_POINTS },
        { "metrics", required_argument, NULL, O_METRICS },
        { "batch", required_argument, NULL, O_BATCH },
        { "threads", required_argument, NULL, O_THREADS },
        { "interval", required_argument, NULL, O_INTERVAL },
        { "seed", required_argument, NULL, O_SEED },
        { "granularity", required_argument, NULL, O_GRAN },
        { "method", required_argument, NULL, O_METHOD },
        { "dump", required_argument, NULL, O_DUMP },
        { "dump-metrics", required_argument, NULL, O_DUMP_K },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        const char *v = optarg;
        switch (opt) {
        case O_POINTS: npoints = atoll(v); break;
        case O_METRICS: nmetrics = atoll(v); break;
        case O_BATCH: batch = atoll(v); break;
        case O_THREADS: threads = atoi(v); break;
        case O_INTERVAL: interval = atof(v); break;
        case O_SEED: seed = strtoull(v, NULL, 10); break;
        case O_GRAN: snprintf(grans, sizeof grans, "%s", v); break;
        case O_METHOD: snprintf(methods, sizeof methods, "%s", v); break;
        case O_DUMP: dump_path = v; break;
        case O_DUMP_K: dump_k = atoll(v); break;
        case 'h': usage(stdout, 0); break;
        default:
            bench_opt_error("bench_engine", opt, argv);
            usage(stderr, 2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench_engine: unexpected argument '%s'\n", argv[optind]);
        usage(stderr, 2);
    }
    if (npoints <= 0 || nmetrics <= 0 || batch < nmetrics || threads < 0 || interval <= 0)
        usage(stderr, 2);
    batch = batch / nmetrics * nmetrics;
    snprintf(method_arg, sizeof method_arg, "%s", methods);
    snprintf(gran_arg, sizeof gran_arg, "%s", grans);

    struct ga_policy pol;
    if (build_policy(&pol, grans, methods) < 0)
        return 2;
    struct ga_backend *be = NULL;
    struct ga_engine *e = NULL;
    int rc = ga_cpu_backend_open(&be, threads);
    if (rc == 0)
        rc = ga_engine_open(&e, &be, 1);
    for (long long m = 0; rc == 0 && m < nmetrics; m++)
        rc = ga_engine_metric_add(e, (uint32_t)m, &pol);
    if (rc < 0) {
        fprintf(stderr, "bench_engine: engine: %s\n", ga_strerror(rc));
        return 1;
    }
    FILE *dump = dump_path ? fopen(dump_path, "wb") : NULL;
    if (dump_path && !dump) {
        perror(dump_path);
        return 2;
    }

    uint32_t *mid = malloc((size_t)batch * sizeof *mid);
    int64_t *ts = malloc((size_t)batch * sizeof *ts);
    double *val = malloc((size_t)batch * sizeof *val);
    double *walk = malloc((size_t)nmetrics * sizeof *walk);
    struct dump_rec *drec = dump ? malloc((size_t)batch * sizeof *drec) : NULL;
    if (!mid || !ts || !val || !walk || (dump && !drec)) {
        fprintf(stderr, "bench_engine: out of memory\n");
        return 1;
    }
    uint64_t rng = seed;
    for (long long m = 0; m < nmetrics; m++)
        walk[m] = 100.0 * unit(&rng);
    int64_t step = (int64_t)(interval * NS_PER_S);

    struct ga_result res = { 0 };
    double busy = 0.0, cpu = 0.0;
    uint64_t naggs = 0, nlate = 0;
    long long done = 0, k0 = 0;
    while (done < npoints) {
        long long n = npoints - done < batch ? (npoints - done) / nmetrics * nmetrics : batch;
        if (n <= 0)
            break;
        long long kper = n / nmetrics;
        for (long long j = 0; j < n; j++) {
            long long m = j % nmetrics, k = k0 + j / nmetrics;
            mid[j] = (uint32_t)m;
            ts[j] = T0_NS + (m * 7919 % 1000) * (NS_PER_S / 1000) + k * step +
                    (int64_t)(unit(&rng) * (double)(step / 2));
            walk[m] += unit(&rng) - 0.5;
            val[j] = walk[m];
        }
        if (dump) {
            int64_t c = 0;
            for (long long j = 0; j < n; j++)
                if ((long long)mid[j] < dump_k)
                    drec[c++] = (struct dump_rec){ ts[j], val[j], mid[j] };
            if (fwrite(&c, sizeof c, 1, dump) != 1 ||
                fwrite(drec, sizeof *drec, (size_t)c, dump) != (size_t)c) {
                perror(dump_path);
                return 1;
            }
        }
        struct ga_points pts = { .n = (size_t)n, .metric = mid, .ts = ts, .value = val };
        ga_result_reset(&res);
        double t = clock_s(CLOCK_MONOTONIC), c = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        rc = ga_engine_feed(e, &pts, &res);
        busy += clock_s(CLOCK_MONOTONIC) - t;
        cpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - c;
        if (rc < 0) {
            fprintf(stderr, "bench_engine: feed: %s\n", ga_strerror(rc));
            return 1;
        }
        naggs += res.naggs;
        nlate += res.nlate;
        done += n;
        k0 += kper;
    }
    printf("points=%lld metrics=%lld batch=%lld threads=%d granularity=%s methods=%s "
           "seconds=%.4f points_per_s=%.0f cpu_seconds=%.4f points_per_cpu_s=%.0f aggs=%" PRIu64
           " late=%" PRIu64 "\n",
           done, nmetrics, batch, threads, gran_arg, method_arg, busy, (double)done / busy, cpu,
           (double)done / cpu, naggs, nlate);
    if (dump && fclose(dump) != 0) {
        perror(dump_path);
        return 1;
    }
    ga_result_free(&res);
    ga_engine_close(e);
    free(mid);
    free(ts);
    free(val);
    free(walk);
    free(drec);
    return 0;
}
