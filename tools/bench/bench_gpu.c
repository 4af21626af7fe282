/* bench_gpu.c — the CUDA backend's throughput, one table from one run.
 *
 *   bench_gpu [--device D] [--quick] [--cpu-threads T] [--only kernel|pipeline|ref]
 *             [--sort-small N] [--batch N] [--set basic|median|rate]
 *   bench_gpu --dump-load FILE [--dump-metrics K]
 *
 * Measured in the same run, on the same GPU:
 *   - ceilings: device-to-device copy GB/s (bytes read + written), pinned
 *     host-to-device and device-to-host copy GB/s, and the two at once on
 *     two streams (bytes both ways per s: what the pipelines' points in and
 *     rows out share);
 *   - kernel only (points already on the GPU, sorted): bucket keys + tasks
 *     (two passes and a scan; also timed alone beside the one-pass and
 *     three-pass ways, tasks compared) + the methods, for the basic methods together, sum alone, median+90pct,
 *     rate:*; median+90pct also at each size below with each sort (CUB
 *     alone; the shared-memory kernel up to the threshold + CUB beyond;
 *     warp rows kernel), the sort alone in ms, the faster one ("pick"),
 *     the two sorted arrays compared bit for bit (sorted_differ);
 *     points/s and % of the floor of reading 16 bytes a point at the
 *     measured device bandwidth; each with the tiled rows kernel (the
 *     default) and the warp one, same data, same run, and the rows kernel
 *     alone in ms; "basic" also at 6, 360 and ~8640 points a bucket (60 s,
 *     1 h, 1 day; the last: long buckets read from global memory);
 *     the two kernels' "basic" rows compared field by field (rows_differ);
 *     "basic" again as wide records (one 96-byte record a bucket instead
 *     of 8 rows, gpu/engine.h), each kernel, each record compared with the
 *     tiled kernel's rows (wide_differ);
 *   - pipeline: ga_backend feed() from the caller's arrays to the rows in
 *     host memory (H2D, the whole feed, D2H), points/s and bytes/s against
 *     the measured H2D bandwidth (20 bytes a point travel: id 4, ts 8, value
 *     8): input and result in page-locked memory (as the engine keeps them
 *     with a GPU: rows DMA'd straight into the result); for "basic" also
 *     pageable input (packed into the pinned ring) and a pageable result
 *     (rows staged in the backend's pinned buffer, then copied), and the
 *     prefetched pipeline with the rows as wide records (want_wide, as the
 *     daemon asks for them; rows counted unpacked, bytes out as sent);
 *   - the CPU backend on the same data with T threads (default 16);
 *   - the published reference case: 6,291,456 points, 5 s samples resampled
 *     to 35 s, sum — kernel only and through feed().
 * --set: the pipeline for that method set only (profiling).
 * --batch N: the pipeline's points a batch (default 4,000,000; the daemon
 * feeds each ingest batch, often ~100,000, as it comes: a feed's fixed cost
 * shows there).
 * Prints key=value lines, then the table (markdown).
 * --dump-load writes the pipeline's batches, the points of its first K
 * metrics (default 500) in arrival order, in bench_engine's dump format
 * (per batch: an int64 count, then {int64 ts, float64 value, int64 metric}
 * records), and exits: carbonara's side of the comparison
 * (tools/bench/bench_gpu_carbonara.py), no GPU needed. */
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/cuda.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tools/bench/bench_opts.h"
#include "tools/bench/cuda/bench_hooks.h"

#define NS 1000000000LL
#define T0 (1700000000LL * NS)
/* the pipeline's load: PIPE_BATCHES batches of PIPE_BATCH points over
 * PIPE_METRICS metrics sampled every PIPE_STEP ns (--quick: fewer) */
#define PIPE_METRICS 10000u
#define PIPE_BATCH ((size_t)4000000)
#define PIPE_BATCHES 20
#define PIPE_STEP (10 * NS)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s) { return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0); }

struct load {
    size_t n;                     /* points a batch */
    int nbatch, pinned;
    uint32_t **mid;
    int64_t **ts;
    double **val;
    /* the timestamps also as 32-bit offsets (engine.h), where a batch packs
     * (packed[b]); use32: feeds take them (16 bytes a point, not 20) */
    uint32_t **o;
    int64_t *base, *unit;
    int *packed, use32;
};

/* Batch b of l as a feed takes it. */
static struct ga_points pts_of(const struct load *l, int b)
{
    struct ga_points p = { .n = l->n, .metric = l->mid[b], .value = l->val[b] };
    if (l->use32 && l->packed[b]) {
        p.ts32 = l->o[b];
        p.ts_base = l->base[b];
        p.ts_unit = l->unit[b];
    } else {
        p.ts = l->ts[b];
    }
    return p;
}

/* Bytes a point of l's batches crosses to the GPU (every batch one way). */
static int in_bytes(const struct load *l)
{
    for (int b = 0; b < l->nbatch; b++)
        if (!(l->use32 && l->packed[b]))
            return 20;
    return 16;
}

/* nmet metrics, each a random walk every step s (jitter up to step/2),
 * per batch per metric n/nmet consecutive points, metrics interleaved. */
static void *alloc(const struct load *l, size_t bytes)
{
    void *p = NULL;
    if (l->pinned)
        return ga_cuda_host_alloc(&p, bytes) == 0 ? p : NULL;
    return malloc(bytes);
}

static void release(const struct load *l, void *p)
{
    if (l->pinned)
        ga_cuda_host_free(p);
    else
        free(p);
}

static int make_load(struct load *l, size_t n, int nbatch, uint32_t nmet, int64_t step, int pinned,
                     int shuffle)
{
    l->n = n;
    l->nbatch = nbatch;
    l->pinned = pinned;
    l->mid = calloc((size_t)nbatch, sizeof *l->mid);
    l->ts = calloc((size_t)nbatch, sizeof *l->ts);
    l->val = calloc((size_t)nbatch, sizeof *l->val);
    l->o = calloc((size_t)nbatch, sizeof *l->o);
    l->base = calloc((size_t)nbatch, sizeof *l->base);
    l->unit = calloc((size_t)nbatch, sizeof *l->unit);
    l->packed = calloc((size_t)nbatch, sizeof *l->packed);
    l->use32 = 1;
    double *walk = calloc(nmet, sizeof *walk);
    if (!l->mid || !l->ts || !l->val || !l->o || !l->base || !l->unit || !l->packed || !walk)
        return GA_ENOMEM;
    uint64_t rng = 7;
    size_t per = n / nmet;
    for (int b = 0; b < nbatch; b++) {
        l->mid[b] = alloc(l, n * sizeof **l->mid);
        l->ts[b] = alloc(l, n * sizeof **l->ts);
        l->val[b] = alloc(l, n * sizeof **l->val);
        l->o[b] = alloc(l, n * sizeof **l->o);
        if (!l->mid[b] || !l->ts[b] || !l->val[b] || !l->o[b])
            return GA_ENOMEM;
        for (size_t j = 0; j < n; j++) {
            uint32_t m = (uint32_t)(j % nmet);
            int64_t k = (int64_t)b * (int64_t)per + (int64_t)(j / nmet);
            l->mid[b][j] = m;
            l->ts[b][j] = T0 + (int64_t)(m * 7919 % 1000) * (NS / 1000) + k * step +
                          (int64_t)(unit(&rng) * (double)(step / 2) / 1e3) * 1000;   /* in us */
            walk[m] += unit(&rng) - 0.5;
            l->val[b][j] = walk[m];
        }
        for (size_t j = n; shuffle && j > 1; j--) {   /* each metric's points out of time order */
            size_t i = (size_t)(splitmix(&rng) % j);
            uint32_t tm = l->mid[b][j - 1];
            int64_t tt = l->ts[b][j - 1];
            double tv = l->val[b][j - 1];
            l->mid[b][j - 1] = l->mid[b][i];
            l->ts[b][j - 1] = l->ts[b][i];
            l->val[b][j - 1] = l->val[b][i];
            l->mid[b][i] = tm;
            l->ts[b][i] = tt;
            l->val[b][i] = tv;
        }
        l->packed[b] = ga_points_pack_ts32(l->ts[b], n, l->o[b], &l->base[b], &l->unit[b]) == 0;
    }
    free(walk);
    return 0;
}

/* The first k metrics' points of every batch of l to path (the format
 * above); 0, or 1 with a message. */
static int dump_load(const struct load *l, uint32_t k, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    int bad = 0;
    for (int b = 0; b < l->nbatch && !bad; b++) {
        int64_t cnt = 0;
        for (size_t j = 0; j < l->n; j++)
            cnt += l->mid[b][j] < k;
        bad |= fwrite(&cnt, sizeof cnt, 1, f) != 1;
        for (size_t j = 0; j < l->n && !bad; j++) {
            if (l->mid[b][j] >= k)
                continue;
            struct { int64_t ts; double value; int64_t metric; } r = { l->ts[b][j], l->val[b][j],
                                                                        l->mid[b][j] };
            bad |= fwrite(&r, sizeof r, 1, f) != 1;
        }
    }
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "bench_gpu: writing %s failed\n", path);
        return 1;
    }
    return 0;
}

static void free_load(struct load *l)
{
    for (int b = 0; b < l->nbatch; b++) {
        release(l, l->mid[b]);
        release(l, l->ts[b]);
        release(l, l->val[b]);
        release(l, l->o[b]);
    }
    free(l->mid);
    free(l->ts);
    free(l->val);
    free(l->o);
    free(l->base);
    free(l->unit);
    free(l->packed);
}

static int policy(struct ga_policy *p, const int64_t *g, int ng, const char *const *ms, int nm)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "bench");
    for (int i = 0; i < ng; i++)
        if (ga_policy_add_def(p, g[i], 0, 0, NULL))
            return GA_EINVAL;
    return ga_policy_methods_from_list(p, ms, nm, NULL);
}

#define REPS 3

static double median3(const double *v)
{
    double a = v[0], b = v[1], c = v[2];
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

/* Batches not counted: they grow the buffers (those of both of a backend's
 * in-flight slots, for the pipelined run) until the steady state.  A batch
 * is 4,000 s of each metric's points, so where it ends in the hour (and the
 * size of the 1 h windows left) comes round every 9 batches: the largest
 * pool, and the last growth, come in the first 9 (the spread line's
 * "growth" shows none after). */
#define WARM 10

/* Feed every batch; seconds of the batches after the first WARM, summed. */
static int run_feed(struct ga_backend *b, const struct load *l, uint32_t nmet,
                    const struct ga_policy *p, int pinned_out, double *sec, uint64_t *aggs)
{
    for (uint32_t m = 0; m < nmet; m++) {
        int rc = b->ops->metric_add(b, m, p);
        if (rc)
            return rc;
    }
    struct ga_result r = { .want_pinned = pinned_out };  /* as the engine's, with a GPU */
    *sec = 0;
    *aggs = 0;
    for (int i = 0; i < l->nbatch; i++) {
        struct ga_points pts = pts_of(l, i);
        ga_result_reset(&r);
        double t = now_s();
        int rc = b->ops->feed(b, &pts, &r);
        t = now_s() - t;
        if (rc) {
            ga_result_free(&r);
            return rc;
        }
        if (i >= WARM) {
            *sec += t;
            *aggs += r.naggs;
        }
    }
    ga_result_free(&r);
    return 0;
}

/* The same, pipelined: feed_start batch k, then feed_wait batch k - 1 (two
 * results in turn), so k's upload and kernels overlap k - 1's rows coming
 * back; with pre, batch k + 1 is prefetched before batch k starts, so its
 * upload overlaps k's kernels too.  Counted from batch WARM on, as run_feed. */
/* Per timed batch of one run_feed_async run: feed_start's host time and
 * the GPU's stage timeline of that feed (ga_cuda_feed_stats), to tell a
 * steady feed from one slowed by what runs beside it. */
struct spread {
    int n;
    double start_ms[PIPE_BATCHES], gpu_ms[PIPE_BATCHES];
    double stage_ms[6];           /* summed over the timed feeds */
    double slow_ms[6], slow_g;    /* the stages of the feed with the longest GPU timeline */
    uint64_t allocs, pinned_allocs;   /* buffer growth over the timed feeds */
    double alloc_s;
    /* steady state: seconds from the start of loop turn WARM to that of the
     * last, over the turns between (each turn prefetches a batch, starts one
     * and waits for the one before: one batch's worth of every step, no
     * pipeline filling or draining in it) */
    double period_s;
};

static double stages_ms(const struct ga_cuda_feed_stats *q, double out[6])
{
    double v[6] = { q->gpu_upload_s, q->gpu_sort_s, q->gpu_merge_s, q->gpu_buckets_s, q->gpu_rows_s,
                    q->gpu_rebuild_s }, sum = 0;
    for (int i = 0; i < 6; i++) {
        out[i] += v[i] * 1e3;
        sum += v[i] * 1e3;
    }
    return sum;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_spread(const char *set, int k, struct spread *sp)
{
    if (!sp->n)
        return;
    double s[PIPE_BATCHES], g[PIPE_BATCHES];
    memcpy(s, sp->start_ms, sizeof s);
    memcpy(g, sp->gpu_ms, sizeof g);
    qsort(s, (size_t)sp->n, sizeof *s, cmp_d);
    qsort(g, (size_t)sp->n, sizeof *g, cmp_d);
    double *m = sp->stage_ms, *w = sp->slow_ms;
    printf("pipeline set=%s variant=%d timed feeds=%d, ms min/median/max: feed_start %.3f/%.3f/%.3f "
           "GPU timeline %.3f/%.3f/%.3f; GPU stages, mean: upload+classify=%.3f sort=%.3f merge=%.3f "
           "buckets=%.3f rows=%.3f rebuild=%.3f; slowest: %.3f/%.3f/%.3f/%.3f/%.3f/%.3f; growth: %" PRIu64
           " buffers (%" PRIu64 " page-locked) %.3f ms\n", set, k, sp->n, s[0], s[sp->n / 2],
           s[sp->n - 1], g[0], g[sp->n / 2], g[sp->n - 1], m[0] / sp->n, m[1] / sp->n, m[2] / sp->n,
           m[3] / sp->n, m[4] / sp->n, m[5] / sp->n, w[0], w[1], w[2], w[3], w[4], w[5], sp->allocs,
           sp->pinned_allocs, sp->alloc_s * 1e3);
}

static int run_feed_async(struct ga_backend *b, const struct load *l, int pre, int wide, double *sec,
                          uint64_t *aggs, uint64_t *slots, double host_s[3], struct spread *sp)
{
    struct ga_result r[2] = { { .want_pinned = 1, .want_wide = wide }, { .want_pinned = 1, .want_wide = wide } };
    int rc = 0;
    double t = 0;
    *aggs = *slots = 0;
    host_s[0] = host_s[1] = host_s[2] = 0;    /* in prefetch, feed_start, feed_wait */
    double turn0 = 0;
    for (int i = 0; !rc && i <= l->nbatch; i++) {
        if (i == WARM)
            t = now_s();
        double t0 = now_s();
        if (i == WARM)
            turn0 = t0;
        if (sp && i == l->nbatch - 1 && i > WARM)
            sp->period_s = (t0 - turn0) / (i - WARM);
        for (int j = i ? i + 1 : 0; pre && !rc && j <= i + 1 && j < l->nbatch; j++) {
            struct ga_points q = pts_of(l, j);
            rc = b->ops->prefetch(b, &q) == 1 ? 0 : GA_EINVAL;   /* pinned: it must start */
        }
        double t1 = now_s();
        if (!rc && i < l->nbatch) {
            struct ga_points q = pts_of(l, i);
            ga_result_reset(&r[i % 2]);
            rc = b->ops->feed_start(b, &q, &r[i % 2]);
        }
        double t2 = now_s();
        struct ga_cuda_feed_stats q;
        if (!rc && sp && i >= WARM && i < l->nbatch && sp->n < PIPE_BATCHES &&
            ga_cuda_backend_stats(b, &q) == 0) {
            double one[6] = { 0 }, g = stages_ms(&q, one);
            for (int k = 0; k < 6; k++)
                sp->stage_ms[k] += one[k];
            if (g > sp->slow_g) {
                sp->slow_g = g;
                memcpy(sp->slow_ms, one, sizeof one);
            }
            sp->allocs += q.allocs;
            sp->pinned_allocs += q.pinned_allocs;
            sp->alloc_s += q.alloc_s;
            sp->start_ms[sp->n] = (t2 - t1) * 1e3;
            sp->gpu_ms[sp->n++] = g;
        }
        if (!rc && i > 0) {
            rc = b->ops->feed_wait(b);
            const struct ga_result *w = &r[(i - 1) % 2];
            if (i - 1 >= WARM) {  /* rows as the CPU backend counts them; slots as they crossed */
                *aggs += w->nrows;
                *slots += w->naggs;
            }
        }
        if (i >= WARM && i < l->nbatch) {
            host_s[0] += t1 - t0;
            host_s[1] += t2 - t1;
            host_s[2] += now_s() - t2;
        }
    }
    *sec = now_s() - t;
    ga_result_free(&r[0]);
    ga_result_free(&r[1]);
    return rc;
}

struct row {
    char what[128];
    double pps;                   /* points per second */
    char vs[128];                 /* against what */
    char goal[48];
};
static struct row rows[80];
static int nrows;

static void add_row(const char *what, double pps, const char *vs, const char *goal)
{
    if (nrows == (int)(sizeof rows / sizeof rows[0])) {
        fprintf(stderr, "bench_gpu: table full, row dropped: %s\n", what);
        return;
    }
    struct row *r = &rows[nrows++];
    snprintf(r->what, sizeof r->what, "%s", what);
    r->pps = pps;
    snprintf(r->vs, sizeof r->vs, "%s", vs);
    snprintf(r->goal, sizeof r->goal, "%s", goal);
}

static const char *human(double v, char *buf)
{
    if (v >= 1e9)
        sprintf(buf, "%.1f G", v / 1e9);
    else if (v >= 1e6)
        sprintf(buf, "%.1f M", v / 1e6);
    else
        sprintf(buf, "%.0f", v);
    return buf;
}

/* Basic as wide records (one 96-byte record a bucket), each rows kernel:
 * a key=value line and two table rows. */
static void wide_rows(const struct ga_cuda_kbench *k, double N, double floor_pps, const char *what0,
                      int goal)
{
    printf("kernel_wide gran_s=%lld tiled_s=%.6f tiled_rows_s=%.6f warp_s=%.6f warp_rows_s=%.6f "
           "wide_differ=%" PRId64 "\n", (long long)(k->gran_ns / NS), k->wide_s[0], k->wide_rows_s[0],
           k->wide_s[1], k->wide_rows_s[1], k->wide_differ);
    for (int leg = 0; leg < 2; leg++) {
        double pps = N / k->wide_s[leg];
        char what[128], vs[64], g[32];
        snprintf(what, sizeof what, "%s as wide records, %.0fM points, %.0f pts/bucket, %s rows kernel",
                 what0, N / 1e6, N / (double)k->buckets, leg ? "warp" : "tiled");
        snprintf(vs, sizeof vs, "%.0f%% of floor (16 B/pt at d2d); rows kernel %.3f ms",
                 100.0 * pps / floor_pps, k->wide_rows_s[leg] * 1e3);
        snprintf(g, sizeof g, ">= 100 G/s%s", pps >= 100e9 ? " ok" : " MISSED");
        add_row(what, pps, vs, goal && leg ? g : "");   /* auto's pick for records: warp */
    }
}

/* Median + 90pct with each sort: a key=value line and two table rows. */
static void sort_lines(const struct ga_cuda_kbench *k, int64_t gran_s, double N, double floor_pps)
{
    double ppb = N / (double)k->buckets;
    const char *pick = k->sort_small_s < k->sort_cub_s ? "shared-memory" : "cub";
    printf("kernel_sort gran_s=%lld pts_per_bucket=%.0f small_max=%u cub_s=%.6f small_s=%.6f "
           "cub_sort_s=%.6f small_sort_s=%.6f small_parts=%" PRIu64 " cub_parts=%" PRIu64
           " sorted_differ=%" PRId64 " pick=%s\n", (long long)gran_s, ppb, k->sort_small, k->sort_cub_s,
           k->sort_small_s, k->sort_cub_sort_s, k->sort_small_sort_s, k->sort_small_parts,
           k->sort_big_parts, k->sorted_differ, pick);
    for (int sm = 0; sm < 2; sm++) {
        double sec = sm ? k->sort_small_s : k->sort_cub_s, pps = N / sec;
        char what[128], vs[64];
        if (sm)
            snprintf(what, sizeof what, "kernel: median + 90pct, %.0f pts/bucket, sort: shared memory "
                     "(<= %u) + CUB, warp rows", ppb, k->sort_small);
        else
            snprintf(what, sizeof what, "kernel: median + 90pct, %.0f pts/bucket, sort: CUB alone, "
                     "warp rows", ppb);
        snprintf(vs, sizeof vs, "%.0f%% of floor; sort %.3f ms%s", 100.0 * pps / floor_pps,
                 (sm ? k->sort_small_sort_s : k->sort_cub_sort_s) * 1e3,
                 (sm ? k->sort_small_s < k->sort_cub_s : k->sort_cub_s <= k->sort_small_s) ? " (pick)" : "");
        add_row(what, pps, vs, "");
    }
}

int main(int argc, char **argv)
{
    int dev = 0, quick = 0, cthreads = 16;
    const char *only = NULL;      /* one part only (profiling); the ceilings always run */
    unsigned sort_small = 0;      /* the kernel_sort lines' threshold (values a bucket the
                                     shared-memory sort takes); 0 = auto, at most 4096 */
    const char *dump_path = NULL;
    long dump_k = 500;
    long batch = 0;               /* --batch: 0 = PIPE_BATCH (--quick: 400,000) */
    int only_set = -1;            /* --set: 0 basic, 1 median+90pct, 2 rate:mean; -1 all */
    enum { O_DEVICE = 0x100, O_QUICK, O_CTHREADS, O_SORT_SMALL, O_DUMP, O_DUMP_K, O_SET, O_BATCH, O_ONLY };
    static const struct option lo[] = {
        { "device", required_argument, NULL, O_DEVICE },
        { "quick", no_argument, NULL, O_QUICK },
        { "cpu-threads", required_argument, NULL, O_CTHREADS },
        { "sort-small", required_argument, NULL, O_SORT_SMALL },
        { "dump-load", required_argument, NULL, O_DUMP },
        { "dump-metrics", required_argument, NULL, O_DUMP_K },
        { "set", required_argument, NULL, O_SET },
        { "batch", required_argument, NULL, O_BATCH },
        { "only", required_argument, NULL, O_ONLY },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const char usage[] =
        "usage: bench_gpu [--device D] [--quick] [--cpu-threads T] "
        "[--only kernel|pipeline|ref] [--sort-small N]\n"
        "                 [--batch N (10000..64000000)] [--set basic|median|rate]\n"
        "       bench_gpu --dump-load FILE [--dump-metrics K]\n";
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        const char *v = optarg;
        switch (opt) {
        case O_DEVICE: dev = atoi(v); break;
        case O_QUICK: quick = 1; break;
        case O_CTHREADS: cthreads = atoi(v); break;
        case O_SORT_SMALL: sort_small = (unsigned)atoi(v); break;
        case O_DUMP: dump_path = v; break;
        case O_DUMP_K: dump_k = atol(v); break;
        case O_SET:
            only_set = !strcmp(v, "basic") ? 0 : !strcmp(v, "median") ? 1 : !strcmp(v, "rate") ? 2 : -2;
            if (only_set < 0) {
                fprintf(stderr, "bench_gpu: --set is basic, median or rate, not \"%s\"\n", v);
                return 2;
            }
            break;
        case O_BATCH: {
            char *end = NULL;
            batch = strtol(v, &end, 10);
            if (end == v || *end || batch < 10000 || batch > 64000000) {
                fprintf(stderr, "bench_gpu: --batch is 10000..64000000 points, not \"%s\"\n", v);
                return 2;
            }
            break;
        }
        case O_ONLY:
            if (strcmp(v, "kernel") != 0 && strcmp(v, "pipeline") != 0 && strcmp(v, "ref") != 0) {
                fprintf(stderr, "bench_gpu: --only is kernel, pipeline or ref, not \"%s\"\n%s", v, usage);
                return 2;
            }
            only = v;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            bench_opt_error("bench_gpu", opt, argv);
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench_gpu: unexpected argument '%s'\n%s", argv[optind], usage);
        return 2;
    }
    if (dump_path) {              /* the pipeline's load (pageable: the same points) */
        struct load d;
        if (dump_k < 1 || dump_k > (long)PIPE_METRICS) {
            fprintf(stderr, "bench_gpu: --dump-metrics is 1..%u\n", PIPE_METRICS);
            return 2;
        }
        if (make_load(&d, PIPE_BATCH, PIPE_BATCHES, PIPE_METRICS, PIPE_STEP, 0, 0)) {
            fprintf(stderr, "bench_gpu: out of memory\n");
            return 1;
        }
        int drc = dump_load(&d, (uint32_t)dump_k, dump_path);
        free_load(&d);
        return drc;
    }
    int do_kernel = !only || !strcmp(only, "kernel"), do_pipe = !only || !strcmp(only, "pipeline"),
        do_ref = !only || !strcmp(only, "ref");
    char b1[32], b2[96];
    /* 1. ceilings and kernel-only (small when only the ceilings are wanted) */
    struct ga_cuda_kbench kb = { .nmetrics = 4096, .npoints_per_metric = quick || !do_kernel ? 1024 : 16384,
                                 .step_ns = 10 * NS, .gran_ns = 300 * NS, .repeat = 10,
                                 .sort_small = sort_small };
    int rc = ga_cuda_kernel_bench(dev, &kb);
    if (rc) {
        fprintf(stderr, "bench_gpu: kernel bench: %s\n", ga_strerror(rc));
        return rc == GA_ENOGPU ? 77 : 1;
    }
    double N = (double)(kb.nmetrics * kb.npoints_per_metric);
    double floor_pps = kb.d2d_gbps * 1e9 / 16.0;
    printf("d2d_gbps=%.1f h2d_gbps=%.1f d2h_gbps=%.1f duplex_gbps=%.1f floor_points_per_s=%.3g buckets=%"
           PRIu64 " checked=%d rows_differ=%" PRId64 " tiled_smem=%u tiled_blocks_per_sm=%d\n", kb.d2d_gbps,
           kb.h2d_gbps, kb.d2h_gbps, kb.duplex_gbps, floor_pps, kb.buckets, kb.checked, kb.rows_differ,
           kb.tiled_smem, kb.tiled_blocks_per_sm);
    int kernels_ok = kb.checked && kb.rows_differ == 0;
    sort_lines(&kb, 300, N, floor_pps);
    kernels_ok = kernels_ok && kb.sorted_differ == 0;
    /* pick: the rows kernel auto runs (docs/GPU.md "Rows kernel"), where the goal is checked */
    struct { const char *what; double s, warp_s; const char *goal; double gpps; int pick; } kr[] = {
        { "kernel: basic (count,sum,mean,min,max,first,last,std)", kb.basic_s, kb.warp_s[0], ">= 100 G/s", 100e9, 0 },
        { "kernel: sum", kb.sum_s, kb.warp_s[1], "", 0, 1 },
        { "kernel: median + 90pct", kb.sort_s, kb.warp_s[2], ">= 5 G/s", 5e9, 1 },
        { "kernel: rate:mean,sum,std,max", kb.rate_s, kb.warp_s[3], "", 0, 0 },
    };
    printf("kernel_keys two_passes_s=%.6f one_pass_lookback_s=%.6f three_passes_s=%.6f tasks_differ=%" PRId64
           "\n", kb.keys_s[0], kb.keys_s[1], kb.keys_s[2], kb.tasks_differ);
    kernels_ok = kernels_ok && kb.tasks_differ == 0;
    snprintf(b2, sizeof b2, "%.3f ms; one pass (look-back) %.3f ms; three passes %.3f ms", kb.keys_s[0] * 1e3,
             kb.keys_s[1] * 1e3, kb.keys_s[2] * 1e3);
    {
        char what[128];
        snprintf(what, sizeof what, "kernel: bucket keys + tasks alone (two passes), %.0fM points, %.0f pts/bucket",
                 N / 1e6, N / (double)kb.buckets);
        add_row(what, N / kb.keys_s[0], b2, "");
    }
    for (int i = 0; do_kernel && i < 4; i++) {
        for (int leg = 0; leg < 2; leg++) {
            double sec = leg ? kr[i].warp_s : kr[i].s;
            double rsec = leg ? kb.warp_rows_s[i] : kb.rows_s[i];
            double pps = N / sec;
            char what[128], goal[32];
            snprintf(what, sizeof what, "%s, %.0fM points, %.0f pts/bucket, %s rows kernel", kr[i].what,
                     N / 1e6, N / (double)kb.buckets, leg ? "warp" : "tiled");
            snprintf(b2, sizeof b2, "%.0f%% of floor (16 B/pt at d2d); rows kernel %.3f ms",
                     100.0 * pps / floor_pps, rsec * 1e3);
            snprintf(goal, sizeof goal, "%s%s", kr[i].goal,
                     kr[i].gpps ? (pps >= kr[i].gpps ? " ok" : " MISSED") : "");
            add_row(what, pps, b2, leg == kr[i].pick ? goal : "");
            printf("kernel_%d rows_kernel=%s seconds=%.6f rows_seconds=%.6f points_per_s=%.4g\n", i,
                   leg ? "warp" : "tiled", sec, rsec, pps);
        }
        if (i == 0)
            wide_rows(&kb, N, floor_pps, kr[0].what, 1);
    }
    kernels_ok = kernels_ok && kb.wide_differ == 0;
    /* basic at 6 and 360 points a bucket (the pipeline's 60 s and 1 h), and
     * at 1 day (buckets longer than 1/8 of either kernel's buffer: read
     * from global memory) */
    int64_t kgrans[3] = { 60 * NS, 3600 * NS, 86400 * NS };
    for (int gi = 0; do_kernel && gi < 3; gi++) {
        struct ga_cuda_kbench kg = { .nmetrics = kb.nmetrics, .npoints_per_metric = kb.npoints_per_metric,
                                     .step_ns = kb.step_ns, .gran_ns = kgrans[gi], .repeat = kb.repeat,
                                     .basic_only = 1, .sort_both = 1, .sort_small = sort_small };
        rc = ga_cuda_kernel_bench(dev, &kg);
        if (rc) {
            fprintf(stderr, "bench_gpu: kernel bench (%lld s buckets): %s\n", (long long)(kgrans[gi] / NS),
                    ga_strerror(rc));
            return 1;
        }
        printf("kernel_basic gran_s=%lld buckets=%" PRIu64 " checked=%d rows_differ=%" PRId64
               " tiled_s=%.6f tiled_rows_s=%.6f warp_s=%.6f warp_rows_s=%.6f\n",
               (long long)(kgrans[gi] / NS), kg.buckets, kg.checked, kg.rows_differ, kg.basic_s,
               kg.rows_s[0], kg.warp_s[0], kg.warp_rows_s[0]);
        printf("kernel_keys gran_s=%lld two_passes_s=%.6f one_pass_lookback_s=%.6f three_passes_s=%.6f"
               " tasks_differ=%" PRId64 "\n", (long long)(kgrans[gi] / NS), kg.keys_s[0], kg.keys_s[1],
               kg.keys_s[2], kg.tasks_differ);
        kernels_ok = kernels_ok && kg.checked && kg.rows_differ == 0 && kg.wide_differ == 0 &&
                     kg.tasks_differ == 0;
        for (int leg = 0; leg < 2; leg++) {
            double sec = leg ? kg.warp_s[0] : kg.basic_s, pps = N / sec;
            char what[128];
            snprintf(what, sizeof what, "%s, %.0fM points, %.0f pts/bucket, %s rows kernel", kr[0].what,
                     N / 1e6, N / (double)kg.buckets, leg ? "warp" : "tiled");
            snprintf(b2, sizeof b2, "%.0f%% of floor (16 B/pt at d2d); rows kernel %.3f ms",
                     100.0 * pps / floor_pps, (leg ? kg.warp_rows_s[0] : kg.rows_s[0]) * 1e3);
            add_row(what, pps, b2, "");
        }
        wide_rows(&kg, N, floor_pps, kr[0].what, 0);
        sort_lines(&kg, kgrans[gi] / NS, N, floor_pps);
        kernels_ok = kernels_ok && kg.sorted_differ == 0;
    }
    if (do_ref) {
        struct ga_cuda_kbench ref = { .nmetrics = 1, .npoints_per_metric = 6291456, .step_ns = 5 * NS,
                                      .gran_ns = 35 * NS, .repeat = 20 };
        rc = ga_cuda_kernel_bench(dev, &ref);
        if (rc) {
            fprintf(stderr, "bench_gpu: reference kernel bench: %s\n", ga_strerror(rc));
            return 1;
        }
        snprintf(b2, sizeof b2, "%.3f ms (published: 10.4 ms, older GPU)", ref.sum_s * 1e3);
        add_row("reference, kernel: 6,291,456 pts, 5 s -> 35 s, sum", 6291456.0 / ref.sum_s, b2, "");
    }

    /* 2. pipeline, GPU and CPU backends on the same batches */
    uint32_t nmet = PIPE_METRICS;
    size_t bn = batch ? (size_t)batch : quick ? 400000 : PIPE_BATCH;
    int nb = quick ? WARM + 1 : PIPE_BATCHES;
    struct load l, lp, ls;        /* pinned; pageable; pinned, shuffled within each batch */
    if (do_pipe && (make_load(&l, bn, nb, nmet, PIPE_STEP, 1, 0) || make_load(&lp, bn, nb, nmet, PIPE_STEP, 0, 0) ||
                    make_load(&ls, bn, nb, nmet, PIPE_STEP, 1, 1))) {
        fprintf(stderr, "bench_gpu: out of memory\n");
        return 1;
    }
    static const char *const basic[] = { "mean", "sum", "min", "max", "count", "first", "last", "std" };
    static const char *const srt[] = { "median", "90pct" };
    static const char *const rate[] = { "rate:mean" };
    struct { const char *name; const char *const *ms; int nm; } sets[] = {
        { "basic", basic, 8 }, { "median+90pct", srt, 2 }, { "rate:mean", rate, 1 },
    };
    int64_t grans[] = { 60 * NS, 3600 * NS };
    double pts_timed = (double)bn * (nb - WARM);
    for (int s = 0; do_pipe && s < 3; s++) {
        if (only_set >= 0 && s != only_set)
            continue;
        struct ga_policy p;
        policy(&p, grans, 2, sets[s].ms, sets[s].nm);
        struct ga_backend *g = NULL, *c = NULL;
        double sg = 0, sc = 0;
        uint64_t ag = 0, ac = 0;
        struct ga_cuda_feed_stats st = { 0 };
        /* each GPU figure: the median of REPS runs, each on a fresh backend
         * (a run is ~50 ms: one hiccup of the host would swing a single one) */
        double rs[REPS];
        for (int r = 0; r < REPS && !rc; r++) {
            g = NULL;
            rc = ga_cuda_backend_open(&g, dev, NULL);
            if (!rc)
                rc = run_feed(g, &l, nmet, &p, 1, &rs[r], &ag);
            if (!rc)
                ga_cuda_backend_stats(g, &st);
            if (g)
                g->ops->close(g);
        }
        sg = median3(rs);
        /* the same batches, pipelined (k = 0), then pipelined with the next
         * batch prefetched (k = 1), and that with the counts copied rather
         * than stored into mapped memory (k = 2: rows home in pieces, the
         * way before mapped counts), and k = 1 on the same points shuffled
         * within each batch (k = 3: out of time order, so the feed sorts by
         * time as well as by metric), each on a fresh backend */
        /* basic (k = 4): k = 1 with the rows as wide records, as the daemon
         * asks for them (engine.h); k = 5: k = 4 with the timestamps as
         * int64, 20 bytes a point (every other run takes the 32-bit offsets
         * where the batches pack: 16) */
        enum { NVAR = 6 };
        int nvar = s == 0 ? 6 : 4;
        double sa[NVAR] = { 0 };
        uint64_t aa[NVAR] = { 0 }, slots[NVAR] = { 0 };
        struct ga_cuda_feed_stats sta[NVAR];
        double hs[NVAR][3];       /* host seconds in prefetch, feed_start, feed_wait */
        static struct spread spr[NVAR];   /* the last run of each variant */
        double per[NVAR][REPS];       /* each run's steady-state period */
        memset(per, 0, sizeof per);
        memset(sta, 0, sizeof sta);
        memset(hs, 0, sizeof hs);
        for (int k = 0; k < nvar && !rc; k++) {
            struct ga_cuda_opts co = { .counts = k == 2 ? GA_CUDA_COUNTS_COPY : GA_CUDA_COUNTS_MAPPED };
            for (int r = 0; r < REPS && !rc; r++) {
                g = NULL;
                memset(&spr[k], 0, sizeof spr[k]);
                rc = ga_cuda_backend_open(&g, dev, &co);
                for (uint32_t m = 0; !rc && m < nmet; m++)
                    rc = g->ops->metric_add(g, m, &p);
                l.use32 = k != 5;
                if (!rc)
                    rc = run_feed_async(g, k == 3 ? &ls : &l, k > 0, k >= 4, &rs[r], &aa[k], &slots[k],
                                        hs[k], &spr[k]);
                l.use32 = 1;
                if (!rc)
                    ga_cuda_backend_stats(g, &sta[k]);
                per[k][r] = spr[k].period_s;
                if (g)
                    g->ops->close(g);
            }
            sa[k] = median3(rs);
        }
        if (rc) {
            fprintf(stderr, "bench_gpu: gpu feed: %s\n", ga_strerror(rc));
            return 1;
        }
        rc = ga_cpu_backend_open(&c, cthreads);
        if (!rc)
            rc = run_feed(c, &l, nmet, &p, 0, &sc, &ac);
        if (c)
            c->ops->close(c);
        if (rc) {
            fprintf(stderr, "bench_gpu: cpu feed: %s\n", ga_strerror(rc));
            return 1;
        }
        printf("pipeline set=%s batch=%zu metrics=%u gpu_s=%.4f gpu_async_s=%.4f cpu_s=%.4f "
               "gpu_aggs=%" PRIu64 " gpu_async_aggs=%" PRIu64 " cpu_aggs=%" PRIu64 " last_feed: "
               "upload=%.4f sort=%.4f merge=%.4f buckets=%.4f rebuild=%.4f download=%.4f "
               "total=%.4f pool=%" PRIu64 "\n", sets[s].name, bn, nmet, sg, sa[0], sc, ag, aa[0], ac,
               st.upload_s, st.sort_s, st.merge_s, st.buckets_s, st.rebuild_s, st.download_s,
               st.total_s, st.pool_points);
        for (int k = 0; k < nvar; k++) {
            double nb_t = l.nbatch - WARM;
            printf("pipeline set=%s variant=%d host ms a batch: prefetch=%.3f feed_start=%.3f "
                   "feed_wait=%.3f\n", sets[s].name, k, hs[k][0] * 1e3 / nb_t, hs[k][1] * 1e3 / nb_t,
                   hs[k][2] * 1e3 / nb_t);
            print_spread(sets[s].name, k, &spr[k]);
        }
        printf("pipeline set=%s prefetched gpu_async_s=%.4f aggs=%" PRIu64 " prefetch_used=%" PRIu64
               " prefetch_dropped=%" PRIu64 " order_in_time=%" PRIu64 " order_sorted=%" PRIu64
               "; shuffled: aggs=%" PRIu64 " order_in_time=%" PRIu64 " order_sorted=%" PRIu64 "\n",
               sets[s].name, sa[1], aa[1], sta[1].prefetch_used, sta[1].prefetch_dropped,
               sta[1].order_in_time, sta[1].order_sorted, aa[3], sta[3].order_in_time, sta[3].order_sorted);
        for (int k = 0; k <= nvar; k++) {
            const struct ga_cuda_feed_stats *q = k ? &sta[k - 1] : &st;
            static const char *const how[] = { "feed", "feed_start/wait", "prefetch+start/wait",
                                               "prefetch+start/wait, counts copied",
                                               "prefetch+start/wait, shuffled",
                                               "prefetch+start/wait, wide records",
                                               "prefetch+start/wait, wide records, int64 ts" };
            printf("pipeline set=%s %s last feed on the GPU (ms): upload+classify=%.3f sort=%.3f "
                   "merge=%.3f buckets=%.3f rows=%.3f rebuild=%.3f; host: upload=%.3f sort=%.3f "
                   "merge=%.3f buckets=%.3f rebuild=%.3f wait for rows=%.3f total=%.3f\n",
                   sets[s].name, how[k], q->gpu_upload_s * 1e3, q->gpu_sort_s * 1e3,
                   q->gpu_merge_s * 1e3, q->gpu_buckets_s * 1e3, q->gpu_rows_s * 1e3,
                   q->gpu_rebuild_s * 1e3, q->upload_s * 1e3, q->sort_s * 1e3, q->merge_s * 1e3,
                   q->buckets_s * 1e3, q->rebuild_s * 1e3, q->download_s * 1e3, q->total_s * 1e3);
        }
        char what[128], goal[48];
        /* Against the H2D ceiling as the issue sets it: points/s as 16-byte
         * points (ts + value), which a batch carried in fewer bytes can go
         * past.  Beside it what did cross a point: in (16 with the offsets,
         * 20 with int64 ts: the metric id and the ts) and out (the rows,
         * 32 B a slot), and the link bound: the larger of the two at the
         * H2D rate, as the directions run at once (the both-ways ceiling
         * says how far the link gives both together). */
        int inb = in_bytes(&l);
        double h2d = kb.h2d_gbps * 1e9, out_b = (double)ag * 32.0 / pts_timed;
        double pps = pts_timed / sg;
        snprintf(what, sizeof what, "pipeline feed(), pinned input: %s, %gM-pt batches, 10k metrics, 60 s + 1 h",
                 sets[s].name, (double)bn / 1e6);
        snprintf(b2, sizeof b2, "%.0f%% of H2D at 16 B/pt (in %d B/pt); %.1fx CPU", 100.0 * pps * 16 / h2d,
                 inb, sc / sg);
        add_row(what, pps, b2, "");
        for (int k = 0; k < nvar; k++) {
            double ppa = pts_timed / sa[k];
            static const char *const how[] = { " (k+1 overlaps k's D2H)", " + prefetch of k+1",
                                               " + prefetch, counts copied (rows in pieces)",
                                               " + prefetch, points shuffled in each batch",
                                               " + prefetch, wide records",
                                               " + prefetch, wide records, int64 ts" };
            int kin = k == 5 ? 20 : k == 3 ? in_bytes(&ls) : inb;
            out_b = (double)slots[k] * 32.0 / pts_timed;   /* as they crossed: 32 a slot */
            double wire_b = out_b > kin ? out_b : kin;
            snprintf(what, sizeof what, "pipeline feed_start/feed_wait%s, pinned: %s, same batches",
                     how[k], sets[s].name);
            snprintf(b2, sizeof b2, "%.0f%% of H2D at 16 B/pt; in %d B/pt, out %.0f B/pt: %.0f%% of link bound",
                     100.0 * ppa * 16 / h2d, kin, out_b, 100.0 * ppa * wire_b / h2d);
            snprintf(goal, sizeof goal, ">= 90%% H2D%s (with drain)", ppa * 16 >= 0.9 * h2d ? " ok" : " MISSED");
            add_row(what, ppa, b2, aa[k] == ag ? (k == 1 || k == 4 ? goal : "") : "ROW COUNT DIFFERS");
            if ((k != 1 && k < 4) || nb - WARM < 2)
                continue;
            /* the same runs, steady state: the period between loop turns,
             * without the last batch's rows draining at the end */
            double pt = median3(per[k]);
            if (pt <= 0)
                continue;
            double pps1 = (double)bn / pt;
            snprintf(what, sizeof what, "pipeline feed_start/feed_wait + prefetch%s, steady state (a batch "
                     "every %.3f ms): %s", k == 4 ? ", wide records" : k == 5 ? ", wide records, int64 ts" : "",
                     pt * 1e3, sets[s].name);
            snprintf(b2, sizeof b2, "%.0f%% of H2D at 16 B/pt; in %d B/pt, out %.0f B/pt: %.0f%% of link bound",
                     100.0 * pps1 * 16 / h2d, kin, out_b, 100.0 * pps1 * wire_b / h2d);
            snprintf(goal, sizeof goal, ">= 90%% H2D%s", pps1 * 16 >= 0.9 * h2d ? " ok" : " MISSED");
            add_row(what, pps1, b2, k == 5 ? "" : goal);
        }
        snprintf(what, sizeof what, "CPU backend, %d threads: %s, same batches", cthreads, sets[s].name);
        add_row(what, pts_timed / sc, ag == ac ? "same row count as GPU" : "ROW COUNT DIFFERS", "");
        if (s == 0) {             /* the same from pageable memory (staged through the ring) */
            double sp = 0;
            uint64_t ap = 0;
            rc = ga_cuda_backend_open(&g, dev, NULL);
            if (!rc)
                rc = run_feed(g, &lp, nmet, &p, 1, &sp, &ap);
            if (g)
                g->ops->close(g);
            double so = 0;            /* pinned input, rows into pageable memory (staged); */
            uint64_t ao = 0;          /* a fresh backend: the same batches again would be late */
            g = NULL;
            if (!rc)
                rc = ga_cuda_backend_open(&g, dev, NULL);
            if (!rc)
                rc = run_feed(g, &l, nmet, &p, 0, &so, &ao);
            if (g)
                g->ops->close(g);
            if (!rc && (ap != ag || ao != ag))
                fprintf(stderr, "bench_gpu: row counts differ: pinned %" PRIu64 ", pageable input %"
                        PRIu64 ", pageable result %" PRIu64 "\n", ag, ap, ao);
            if (!rc && (ap != ag || ao != ag))
                rc = GA_EINVAL;
            if (rc) {
                fprintf(stderr, "bench_gpu: gpu feed (pageable): %s\n", ga_strerror(rc));
                return 1;
            }
            snprintf(what, sizeof what, "pipeline feed(), pageable input: %s, same batches", sets[s].name);
            snprintf(b2, sizeof b2, "%.0f%% of H2D at 16 B/pt (in %d B/pt)",
                     100.0 * pts_timed / sp * 16 / (kb.h2d_gbps * 1e9), in_bytes(&lp));
            add_row(what, pts_timed / sp, b2, "");
            snprintf(what, sizeof what, "pipeline feed(), pinned input, rows to pageable memory "
                     "(staged + copied): %s", sets[s].name);
            snprintf(b2, sizeof b2, "%.0f%% of H2D at 16 B/pt (in %d B/pt)",
                     100.0 * pts_timed / so * 16 / (kb.h2d_gbps * 1e9), inb);
            add_row(what, pts_timed / so, b2, "");
        }
    }
    if (do_pipe) {
        free_load(&l);
        free_load(&lp);
        free_load(&ls);
    }

    /* 3. the reference case through feed(): one metric, one batch */
    if (do_ref) {
        size_t n = 6291456;
        struct load r;
        if (make_load(&r, n, 1, 1, 5 * NS, 1, 0)) {
            fprintf(stderr, "bench_gpu: out of memory\n");
            return 1;
        }
        static const char *const sum[] = { "sum" };
        int64_t g35 = 35 * NS;
        struct ga_policy p;
        policy(&p, &g35, 1, sum, 1);
        double t[2];
        for (int side = 0; side < 2; side++) {
            struct ga_backend *b = NULL;
            rc = side ? ga_cpu_backend_open(&b, cthreads) : ga_cuda_backend_open(&b, dev, NULL);
            double best = 1e9;
            struct ga_result res = { .want_pinned = !side };   /* as the engine's with a GPU: */
            for (int rep = 0; rc == 0 && rep < 4; rep++) {     /* page-locked, kept */
                struct ga_points pts = { .n = n, .metric = r.mid[0], .ts = r.ts[0], .value = r.val[0] };
                ga_result_reset(&res);
                rc = b->ops->metric_add(b, 0, &p);
                double t0 = now_s();
                if (!rc)
                    rc = b->ops->feed(b, &pts, &res);
                double dt = now_s() - t0;
                if (rep && dt < best)
                    best = dt;            /* rep 0 warms up (allocations) */
                b->ops->metric_drop(b, 0);
            }
            ga_result_free(&res);
            struct ga_cuda_feed_stats q;
            if (!rc && !side && ga_cuda_backend_stats(b, &q) == 0)
                printf("reference feed last feed on the GPU (ms): upload+classify=%.3f sort=%.3f "
                       "merge=%.3f buckets=%.3f rows=%.3f rebuild=%.3f; host: upload=%.3f sort=%.3f "
                       "merge=%.3f buckets=%.3f rebuild=%.3f wait for rows=%.3f total=%.3f\n",
                       q.gpu_upload_s * 1e3, q.gpu_sort_s * 1e3, q.gpu_merge_s * 1e3,
                       q.gpu_buckets_s * 1e3, q.gpu_rows_s * 1e3, q.gpu_rebuild_s * 1e3,
                       q.upload_s * 1e3, q.sort_s * 1e3, q.merge_s * 1e3, q.buckets_s * 1e3,
                       q.rebuild_s * 1e3, q.download_s * 1e3, q.total_s * 1e3);
            if (b)
                b->ops->close(b);
            if (rc) {
                fprintf(stderr, "bench_gpu: reference feed: %s\n", ga_strerror(rc));
                return 1;
            }
            t[side] = best;
        }
        snprintf(b2, sizeof b2, "%.2f ms; CPU %d threads %.2f ms", t[0] * 1e3, cthreads, t[1] * 1e3);
        add_row("reference, feed(): 6,291,456 pts, 5 s -> 35 s, sum", (double)n / t[0], b2, "");
        free_load(&r);
    }

    printf("\nd2d copy: %.0f GB/s (read + write); pinned H2D: %.1f GB/s, D2H: %.1f GB/s, both at once: "
           "%.1f GB/s (both ways); kernel check (host recomputation, tiled == warp, shared-memory sort "
           "== CUB): %s\n\n", kb.d2d_gbps, kb.h2d_gbps, kb.d2h_gbps, kb.duplex_gbps,
           kernels_ok ? "ok" : "FAILED");
    printf("| measurement | points/s | against | goal |\n|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++)
        printf("| %s | %s | %s | %s |\n", rows[i].what, human(rows[i].pps, b1), rows[i].vs, rows[i].goal);
    return kernels_ok ? 0 : 1;
}
