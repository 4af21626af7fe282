/* bench_engine_gpus.c — does the engine scale over backends?  The same
 * batches go through an engine of 1, then of N backends (metrics hashed over
 * them, fed concurrently); prints points/s for each, where the engine spent
 * the time (splitting the batch per backend, the backends' feeds, appending
 * their outputs), and checks that every engine produced the same rows (count
 * and an order-independent checksum).
 *   bench_engine_gpus [--backend cuda|cpu] [--gpus N] [--threads T]
 *                     [--metrics M] [--batch P] [--batches K] [--only E]
 * --backend cuda (default): N CUDA backends, GPUs 0..N-1, vs one on GPU 0.
 * --backend cpu: N CPU backends of T threads each (default 1) vs one CPU
 * backend of T threads, and vs one of N*T threads (the same cores as the N
 * backends): what splitting costs, measurable on a host without a GPU.
 * Columns: seconds = the timed ga_engine_feed() calls; split / feeds /
 * append = ga_engine_feed_times() summed over the batches; slowest = the
 * slowest backend's own feed, summed over batches (what the engine would
 * take if it cost nothing beyond that); per backend = each one's feed time;
 * CUDA only: upload = each backend's upload stage (staging copy + H2D);
 * and a second table, each GPU's feeds by stage as its feeding thread saw
 * them (host wall clock), with the GPU's own stage times summed (busy; CUDA
 * events, so a stall of the host between two stages counts too) and its
 * rows kernels' among them, and the buffers its feeds grew (device, page-
 * locked, the result's rows: ga_cuda_feed_stats.allocs) with the host
 * seconds that took.
 * --backend cuda also runs the N GPUs with the batch split into pageable
 * memory (ga_engine_set_pinned_split(e, 0)), for comparison with the pinned split.
 * Engines 4 and 5 are engines 1 and 2 fed with ga_engine_feed_start /
 * ga_engine_feed_wait, two batches in flight (the split of batch k + 1 on
 * the caller while the backends feed batch k); their seconds are the wall
 * clock of the whole loop, from the first start to the last wait.
 * Before the timed loop each engine is fed W warm-up batches (--warmup W;
 * default: enough to span two hours, and one more), so its buffers have
 * grown to the size this workload keeps (the "grown" column of the stage
 * table counts what the timed feeds still grew).
 * --only E runs engine E alone (1-based, in the order printed): the engines
 * run one after the other in one process and a later one finds the heap the
 * earlier ones left (memory already faulted in), so for timings that are
 * fair to each, run each in its own process and compare the checksums. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/base/log.h"
#include "gpu/cuda.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tools/bench/bench_opts.h"

#define MAXB 16

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

struct run {
    char name[64];
    double seconds, split_s, feed_s, append_s, slowest_s;
    double slot_s[MAXB], upload_s[MAXB];
    /* CUDA: each GPU's feeds by stage as its feeding thread saw them (host
     * wall: upload, sort, merge, buckets, rebuild, download) and the GPU's
     * own stage times summed (CUDA events: how long the GPU was busy) */
    double stage_s[MAXB][6], busy_s[MAXB], rows_s[MAXB];
    /* and the buffers its feeds grew, with the host seconds that took */
    double alloc_s[MAXB], pinned_alloc_s[MAXB];
    uint64_t allocs[MAXB], pinned_allocs[MAXB];
    int nb, kind;                 /* kind: the engine's number (--only) */
    size_t rows;
    uint64_t checksum;
    int rc;
};

/* Batch k (-warm .. -1: the warm-up) at row k + warm of the arrays. */
static void make_batches(uint32_t metrics, size_t batch, int warm, int batches, uint32_t *mid,
                         int64_t *ts, double *val)
{
    int64_t base = 1700000000LL * 1000000000LL;
    for (int k = -warm; k < batches; k++) {
        size_t o = (size_t)(k + warm) * batch;
        for (size_t i = 0; i < batch; i++) {
            uint64_t x = mix((uint64_t)(k + warm + 1) * 0x9e3779b97f4a7c15ULL + i);
            mid[o + i] = (uint32_t)(x % metrics);
            ts[o + i] = base + ((int64_t)(k + warm) * (int64_t)batch + (int64_t)i) / metrics * 1000000000LL;
            val[o + i] = (double)(x >> 11) / 9007199254740992.0 * 1000.0 + 1.0;
        }
    }
}

/* The feed times of the last batch waited for, into r. */
static void account_times(struct run *r, struct ga_engine *e, int cuda)
{
    struct ga_engine_feed_times ft;
    ga_engine_feed_times(e, &ft);
    r->split_s += ft.split_s;
    r->feed_s += ft.feed_s;
    r->append_s += ft.append_s;
    double slowest = 0;
    for (int i = 0; i < r->nb && i < GA_ENGINE_TIMED_SLOTS; i++) {
        r->slot_s[i] += ft.slot_s[i];
        slowest = ft.slot_s[i] > slowest ? ft.slot_s[i] : slowest;
        struct ga_cuda_feed_stats cs;
        if (cuda && ga_cuda_backend_stats(ga_engine_backend(e, i), &cs) == 0) {
            r->upload_s[i] += cs.upload_s;
            const double st[6] = { cs.upload_s, cs.sort_s,    cs.merge_s,
                                   cs.buckets_s, cs.rebuild_s, cs.download_s };
            for (int k = 0; k < 6; k++)
                r->stage_s[i][k] += st[k];
            r->busy_s[i] += cs.gpu_upload_s + cs.gpu_sort_s + cs.gpu_merge_s + cs.gpu_buckets_s +
                            cs.gpu_rows_s + cs.gpu_rebuild_s;
            r->rows_s[i] += cs.gpu_rows_s;
            r->allocs[i] += cs.allocs;
            r->alloc_s[i] += cs.alloc_s;
            r->pinned_allocs[i] += cs.pinned_allocs;
            r->pinned_alloc_s[i] += cs.pinned_alloc_s;
        }
    }
    r->slowest_s += r->nb > 1 ? slowest : ft.feed_s;
}

/* A batch's rows into r's count and checksum. */
static void account_rows(struct run *r, const struct ga_result *res)
{
    for (size_t i = 0; i < res->naggs; i++) {
        const struct ga_agg *a = &res->aggs[i];
        uint64_t v;
        memcpy(&v, &a->value, 8);
        r->checksum += mix(((uint64_t)a->metric << 32 | a->method) ^ (uint64_t)a->ts ^
                           (uint64_t)a->granularity_ns * 31) ^ v;
        r->rows++;
    }
}

/* nb backends: CUDA on GPUs 0..nb-1 (threads unused), or CPU of `threads`;
 * pipe: fed with feed_start / feed_wait, two batches in flight. */
static struct run run_engine(int cuda, int nb, int threads, int pageable, int pipe,
                             const struct ga_policy *pol, uint32_t metrics, size_t batch,
                             int warm, int batches, const uint32_t *mid, const int64_t *ts,
                             const double *val)
{
    struct run r = { .nb = nb };
    if (cuda)
        snprintf(r.name, sizeof r.name, "%d GPU%s%s%s", nb, nb > 1 ? "s" : "",
                 pageable ? ", pageable split" : "", pipe ? ", pipelined" : "");
    else
        snprintf(r.name, sizeof r.name, "%d cpu x %d thread%s%s", nb, threads, threads > 1 ? "s" : "",
                 pipe ? ", pipelined" : "");
    struct ga_backend *b[MAXB];
    for (int i = 0; i < nb; i++) {
        r.rc = cuda ? ga_cuda_backend_open(&b[i], i, NULL) : ga_cpu_backend_open(&b[i], threads);
        if (r.rc < 0) {
            fprintf(stderr, "%s backend %d: %s\n", cuda ? "cuda" : "cpu", i, ga_strerror(r.rc));
            while (i-- > 0)
                b[i]->ops->close(b[i]);
            return r;
        }
    }
    struct ga_engine *e;
    if ((r.rc = ga_engine_open(&e, b, nb)) < 0)
        return r;
    if (pageable)
        ga_engine_set_pinned_split(e, 0);
    for (uint32_t m = 0; m < metrics && !r.rc; m++)
        r.rc = ga_engine_metric_add(e, m, pol);
    /* a result per batch, reserved before the timed loop (page-locked with
     * a GPU, as the engine wants them), rows summed after it: the loop
     * times the engine's calls alone */
    struct ga_result *res = calloc((size_t)batches + 2, sizeof *res);
    if (!res) {
        r.rc = GA_ENOMEM;
        ga_engine_close(e);
        return r;
    }
#define BATCH(k) (&(struct ga_points){ .n = batch, .metric = mid + (size_t)((k) + warm) * batch, \
                                       .ts = ts + (size_t)((k) + warm) * batch,                 \
                                       .value = val + (size_t)((k) + warm) * batch })
    /* warm-up (module load, pools, buffers), not timed: the warm batches,
     * which span the policy's largest bucket, so the windows have grown to
     * their steady size; pipelined, the last one twice more in flight
     * together, so that both of the engine's batch buffers exist (the same
     * points again change no window) */
    for (int k = -warm; k < 0 && !r.rc; k++) {
        ga_result_reset(&res[batches]);
        r.rc = ga_engine_feed(e, BATCH(k), &res[batches]);
    }
    if (pipe && !r.rc) {
        ga_result_reset(&res[batches + 1]);
        r.rc = ga_engine_feed_start(e, BATCH(-1), &res[batches + 1]);
        ga_result_reset(&res[batches]);
        r.rc = r.rc ? r.rc : ga_engine_feed_start(e, BATCH(-1), &res[batches]);
        while (ga_engine_feed_wait(e) != GA_ENOENT)
            ;
    }
    size_t want = res[batches].naggs + res[batches].naggs / 4;
    for (int k = 0; k < batches && !r.rc; k++) {
        res[k].want_pinned = cuda;
        r.rc = ga_result_reserve(&res[k], want, 0);
    }
    double t0 = now_s();
    for (int k = 0; k < batches && !r.rc; k++) {
        if (!pipe) {
            if (!(r.rc = ga_engine_feed(e, BATCH(k), &res[k])))
                account_times(&r, e, cuda);
            continue;
        }
        r.rc = ga_engine_feed_start(e, BATCH(k), &res[k]);
        if (!r.rc && k > 0 && !(r.rc = ga_engine_feed_wait(e)))
            account_times(&r, e, cuda);
    }
    if (pipe && !r.rc && !(r.rc = ga_engine_feed_wait(e)))
        account_times(&r, e, cuda);
#undef BATCH
    r.seconds = now_s() - t0;
    for (int k = 0; k < batches + 2; k++) {
        if (k < batches && !r.rc)
            account_rows(&r, &res[k]);
        ga_result_free(&res[k]);
    }
    free(res);
    ga_engine_close(e);
    return r;
}

static void print_run(const struct run *r, int cuda, double points)
{
    printf("| %s | %.3f | %.3g | %.3f | %.3f | %.3f | %.3f | ", r->name, r->seconds,
           points / r->seconds, r->split_s, r->feed_s, r->append_s, r->slowest_s);
    for (int i = 0; i < r->nb && i < GA_ENGINE_TIMED_SLOTS; i++)
        printf("%s%.3f", i ? " / " : "", r->slot_s[i]);
    if (cuda) {
        printf(" | ");
        for (int i = 0; i < r->nb && i < GA_ENGINE_TIMED_SLOTS; i++)
            printf("%s%.3f", i ? " / " : "", r->upload_s[i]);
    }
    printf(" | %zu | %016llx |\n", r->rows, (unsigned long long)r->checksum);
}

int main(int argc, char **argv)
{
    int nb = 2, batches = 10, cuda = 1, threads = 1, only = 0, warm = -1;
    uint32_t metrics = 10000;
    size_t batch = 10000000;
    enum { O_GPUS = 0x100, O_BACKEND, O_THREADS, O_METRICS, O_BATCH, O_BATCHES, O_ONLY, O_WARMUP };
    static const struct option lo[] = {
        { "gpus", required_argument, NULL, O_GPUS },
        { "backend", required_argument, NULL, O_BACKEND },
        { "threads", required_argument, NULL, O_THREADS },
        { "metrics", required_argument, NULL, O_METRICS },
        { "batch", required_argument, NULL, O_BATCH },
        { "batches", required_argument, NULL, O_BATCHES },
        { "only", required_argument, NULL, O_ONLY },
        { "warmup", required_argument, NULL, O_WARMUP },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const char usage[] =
        "usage: bench_engine_gpus [--backend cuda|cpu] [--gpus N] [--threads T]\n"
        "                         [--metrics M] [--batch P] [--batches K] [--only E]\n"
        "                         [--warmup W]\n";
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (opt) {
        case O_GPUS: nb = atoi(optarg); break;
        case O_BACKEND:
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0) {
                fprintf(stderr, "bench_engine_gpus: --backend is cuda or cpu, not '%s'\n%s", optarg, usage);
                return 2;
            }
            cuda = strcmp(optarg, "cuda") == 0;
            break;
        case O_THREADS: threads = atoi(optarg); break;
        case O_METRICS: metrics = (uint32_t)atol(optarg); break;
        case O_BATCH: batch = (size_t)atol(optarg); break;
        case O_BATCHES: batches = atoi(optarg); break;
        case O_ONLY: only = atoi(optarg); break;
        case O_WARMUP: warm = atoi(optarg); break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            bench_opt_error("bench_engine_gpus", opt, argv);
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench_engine_gpus: unexpected argument '%s'\n%s", argv[optind], usage);
        return 2;
    }
    if (nb < 1 || nb > MAXB || threads < 1 || metrics < 1 || batch < 1 || batches < 1 || only < 0 ||
        only > 5 || warm == 0 || warm < -1) {
        fprintf(stderr, "bench_engine_gpus: need 1 <= N <= %d, T >= 1, M, P, K, W >= 1, "
                "0 <= E <= 5\n", MAXB);
        return 2;
    }
    /* each metric gets a point a second: a batch spans batch / metrics s.
     * By default the warm-up spans two hours and a batch, so it holds a
     * whole hour bucket (the windows' largest: the hours start where the
     * clock's do, not where the batches do) */
    if (warm < 0) {
        double span = (double)batch / metrics;
        warm = span >= 7200 ? 2 : (int)(7200 / span) + 2;
        warm = warm > 64 ? 64 : warm;
    }
    ga_log_set_level(GA_LOG_WARN);
    struct ga_policy pol = { .name = "bench", .back_window = 0 };
    const char *methods[] = { "mean", "sum", "count", "min", "max", "first", "last", "std" };
    ga_policy_add_def(&pol, 60LL * 1000000000, 0, 0, NULL);
    ga_policy_add_def(&pol, 3600LL * 1000000000, 0, 0, NULL);
    ga_policy_methods_from_list(&pol, methods, 8, NULL);
    size_t all = batch * (size_t)(batches + warm);
    uint32_t *mid = malloc(all * sizeof *mid);
    int64_t *ts = malloc(all * sizeof *ts);
    double *val = malloc(all * sizeof *val);
    if (!mid || !ts || !val)
        return 1;
    make_batches(metrics, batch, warm, batches, mid, ts, val);
    /* the engines: 1 backend; N backends; CUDA: N with a pageable split,
     * CPU: 1 backend of N*T threads; then 1 and N backends pipelined */
    struct run runs[5];
    int nruns = 0;
    for (int k = 1; k <= 5; k++) {
        if ((only && k != only) || (nb == 1 && (k == 3 || k == 5)))
            continue;
        int n = k == 2 || k == 5 || (k == 3 && cuda) ? nb : 1;
        int th = k == 3 && !cuda ? nb * threads : threads;
        runs[nruns] = run_engine(cuda, n, th, k == 3 && cuda, k >= 4, &pol, metrics, batch,
                                 warm, batches, mid, ts, val);
        runs[nruns++].kind = k;
    }
    double points = (double)batch * batches;
    printf("%zu points in %d batches of %zu, %u metrics, after %d warm-up batches\n\n",
           batch * (size_t)batches, batches, batch, metrics, warm);
    printf("| engine | seconds | points/s | split s | feeds s | append s | slowest backend s "
           "| per backend s |%s rows | checksum |\n|---|---|---|---|---|---|---|---|%s---|---|\n",
           cuda ? " upload s |" : "", cuda ? "---|" : "");
    int same = 1;
    for (int i = 0; i < nruns; i++) {
        print_run(&runs[i], cuda, points);
        same = same && runs[i].rc == 0 && runs[i].rows == runs[0].rows &&
               runs[i].checksum == runs[0].checksum;
    }
    printf("\n");
    if (cuda) {
        printf("| engine | GPU | feed s | GPU busy s | GPU rows s | upload | sort | merge | buckets "
               "| rebuild | download | grown (page-locked) | grow s (page-locked) |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < nruns; i++)
            for (int g = 0; g < runs[i].nb && g < GA_ENGINE_TIMED_SLOTS; g++) {
                printf("| %s | %d | %.3f | %.3f | %.3f", runs[i].name, g, runs[i].slot_s[g],
                       runs[i].busy_s[g], runs[i].rows_s[g]);
                for (int k = 0; k < 6; k++)
                    printf(" | %.3f", runs[i].stage_s[g][k]);
                printf(" | %llu (%llu) | %.3f (%.3f) |\n", (unsigned long long)runs[i].allocs[g],
                       (unsigned long long)runs[i].pinned_allocs[g], runs[i].alloc_s[g],
                       runs[i].pinned_alloc_s[g]);
            }
        printf("\n");
    }
    for (int i = 0; i < nruns; i++)
        if (runs[i].nb > 1)
            printf("overhead of %s beyond its slowest backend: %.3f s (%.0f %%)\n", runs[i].name,
                   runs[i].seconds - runs[i].slowest_s,
                   100.0 * (runs[i].seconds - runs[i].slowest_s) / runs[i].seconds);
    /* ratios between the engines present: N vs 1, pipelined vs not */
    static const int pairs[][2] = { { 1, 2 }, { 3, 2 }, { 4, 5 }, { 1, 4 }, { 2, 5 }, { 1, 5 } };
    for (size_t q = 0; q < sizeof pairs / sizeof pairs[0]; q++) {
        const struct run *a = NULL, *b = NULL;
        for (int i = 0; i < nruns; i++) {
            a = runs[i].kind == pairs[q][0] ? &runs[i] : a;
            b = runs[i].kind == pairs[q][1] ? &runs[i] : b;
        }
        if (a && b && b->seconds > 0)
            printf("%s / %s: %.2fx\n", b->name, a->name, a->seconds / b->seconds);
    }
    printf("rows identical: %s\n", same ? "yes" : "NO");
    free(mid);
    free(ts);
    free(val);
    return same ? 0 : 1;
}
