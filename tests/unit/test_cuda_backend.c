/* test_cuda_backend.c — the CUDA backend against the CPU reference backend.
 *
 * Both backends get the same metrics and the same batches (random policies
 * and methods, several batches, late points inside and outside the back
 * window, duplicates, NaN and negative timestamps, unknown ids, drops and
 * re-adds, window put/get) and must answer alike: the same rows (as a set),
 * count/min/max/first/last/median/Npct bit for bit, sum/mean/std within
 * 1e-12 relative (they come out bit for bit too; the test counts it), the
 * same late points and the same windows.
 *
 * Where it runs:
 *   - a GPU (sm_90+) and a CUDA build: everything on the GPU;
 *   - a CUDA build without a GPU (CI, a laptop): the GA_ENOGPU answer is
 *     checked, then the same comparison runs with the backend's emulation
 *     (every kernel as a host loop), which checks the algorithm;
 *   - a build without nvcc: only the GA_ENOGPU answer.
 * With a GPU the whole comparison runs twice, once per rows kernel (the
 * tiled default, then the warp one: GA_CUDA_ROWS_*); in emulation it runs
 * once, the tiled kernel's block emulation, with one random trial in four on
 * the warp kernel's emulation.  A third of the tiled backends get a small
 * shared-memory tile (12-40 KB), two thirds of the warp ones 32-512 values
 * a warp, so that their rounds and fallbacks run too.
 * The median / Npct sort (docs/GPU.md "Small-bucket sort") cycles over the
 * random trials: the default split, CUB alone, the shared-memory kernel for
 * every bucket it may take, and a threshold of 1..64 values (both ways in
 * one feed); test_sort_split checks the two ways against each other on
 * buckets made to reach the kernel's edges, -0.0 and +0.0 included.
 * GA_CUDA_TEST_SCALE=0.1 shrinks the random work (compute-sanitizer runs). */
#include "tests/unit/harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/log.h"
#include "gpu/cuda.h"
#include "gpu/device.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tools/bench/cuda/bench_hooks.h"
#include "tests/unit/random_policy.h"

#define SEC 1000000000LL

static int use_emu;
static double scale = 1.0;
static size_t rows_cmp, rows_bitexact, late_cmp;
static size_t wide_records, wide_values;   /* in the GPU's wide results, before unpacking */
static size_t packed_records;              /* of them packed (engine.h) */
static int rows_kernel = GA_CUDA_ROWS_TILED;    /* the variant under test */
static int sort_small;            /* ga_cuda_opts.sort_small of the backends opened */
/* Parts each sort took (ga_cuda_feed_stats), per sort mode: 0 default,
 * 1 CUB alone, 2 shared memory for all it may take, 3 a 1..64 threshold. */
static uint64_t sort_parts[4][2];
static int sort_mode;
static uint64_t pre_used, pre_dropped;   /* prefetch, over the random trials */
static uint64_t order_fast, order_sorted; /* feeds sorted by slot alone / by ts too */

static int open_gpu(struct ga_backend **b)
{
    struct ga_cuda_opts o = { .chunk_points = (size_t)rnd_in(1, 3) << 16, .ring = (int)rnd_in(2, 4),
                              .emulate = use_emu, .rows_kernel = rows_kernel,
                              .sort_small = sort_small };
    if (rows_kernel == GA_CUDA_ROWS_TILED && rnd() % 3 == 0)
        o.rows_smem = (unsigned)rnd_in(12 << 10, 40 << 10);
    /* the warp kernel: 32..512 values a warp, so its rounds and the tasks it
     * leaves to global memory (more than 1/8 of that) come often */
    if (rows_kernel == GA_CUDA_ROWS_WARP && rnd() % 3)
        o.rows_smem = (unsigned)rnd_in(256, 4096);
    /* buckets of 1..64 points and up to the long-task kernel (most of the
     * random buckets then), its chunks cut short; or none, or the default */
    o.rows_long = (int[]){ 0, -1, (int)rnd_in(1, 64) }[rnd() % 3];
    /* counts copied (pipelined rows home in pieces, here often many of
     * 1..4096 bytes) or stored into mapped memory (rows home at once) */
    o.counts = rnd() % 2 ? GA_CUDA_COUNTS_COPY : GA_CUDA_COUNTS_MAPPED;
    if (o.counts == GA_CUDA_COUNTS_COPY && rnd() % 2)
        o.piece_bytes = (size_t)rnd_in(1, 4096);
    return ga_cuda_backend_open(b, 0, &o);
}

/* The last feed's sort split, counted for sort_mode. */
static void note_sort(const struct ga_backend *g)
{
    struct ga_cuda_feed_stats st;
    if (ga_cuda_backend_stats(g, &st) == 0) {
        sort_parts[sort_mode][0] += st.sort_small_parts;
        sort_parts[sort_mode][1] += st.sort_big_parts;
    }
}

static int cmp_agg(const void *a, const void *b)
{
    const struct ga_agg *x = a, *y = b;
    if (x->metric != y->metric) return x->metric < y->metric ? -1 : 1;
    if (x->granularity_ns != y->granularity_ns) return x->granularity_ns < y->granularity_ns ? -1 : 1;
    if (x->method != y->method) return x->method < y->method ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return 0;
}

static int cmp_late(const void *a, const void *b)
{
    const struct ga_late *x = a, *y = b;
    if (x->metric != y->metric) return x->metric < y->metric ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->reason != y->reason) return x->reason < y->reason ? -1 : 1;
    return memcmp(&x->value, &y->value, sizeof x->value);   /* NaN: same bits both sides */
}

static int tolerant(ga_method_t m)
{
    int b = GA_M_BASE(m);
    return b == GA_M_SUM || b == GA_M_MEAN || b == GA_M_STD;
}

/* The GPU's wide records counted and unpacked (the CPU backend writes
 * rows: the two then compare row for row).  Each record's values are of
 * basic methods in ascending order, the rows after it of other methods or
 * other buckets.  A record is packed exactly where its bucket fits the
 * packed header (engine.h): the granularity and start in whole seconds
 * below 2^32, at most 65,535 points (its count row, when the policy has
 * count, says how many). */
static int unpack_wide(const char *what, struct ga_result *g)
{
    for (size_t i = 0; i < g->naggs;) {
        const struct ga_agg *a = &g->aggs[i];
        size_t span = ga_agg_span(a);
        int packed = (a->method & 0xff00) == GA_M_PACKED;
        if (packed || a->method == GA_M_WIDE) {
            struct ga_agg one[GA_WIDE_MAX];
            size_t k = ga_agg_unpack(a, g->naggs - i, one), kept = k;
            int fits = k && one[0].granularity_ns % SEC == 0 && one[0].ts / SEC <= UINT32_MAX;
            for (size_t j = 0; j < k; j++) {
                if (one[j].method == GA_M_COUNT)
                    fits = fits && one[j].value <= 65535, kept--;
                if (one[j].method == GA_M_MEAN && j + 1 < k && one[j + 1].method == GA_M_SUM)
                    kept--;
            }
            if (!k || span != (packed ? 1 + (kept > 2) : 1 + (k + 3) / 4) || packed != fits) {
                harness_fail(__FILE__, __LINE__, "%s: slot %zu: bad wide record (method %#x, %zu values, "
                             "span %zu)", what, i, (unsigned)a->method, k, span);
                return -1;
            }
            wide_records++;
            packed_records += packed;
            wide_values += k;
        }
        i += span;
    }
    size_t rows = ga_aggs_count(g->aggs, g->naggs);
    CHECK_INT(g->nrows, rows);    /* counted on the GPU beside the slots */
    CHECK_INT(ga_result_narrow(g, 0), 0);
    CHECK_INT(g->naggs, rows);
    return 0;
}

/* Same rows (as a set) and late points; 0 if equal. */
static int compare(const char *what, struct ga_result *g, struct ga_result *c)
{
    if (g->want_wide && unpack_wide(what, g))
        return -1;
    CHECK_INT(g->nrows, g->naggs);
    CHECK_INT(c->nrows, c->naggs);
    qsort(g->aggs, g->naggs, sizeof *g->aggs, cmp_agg);
    qsort(c->aggs, c->naggs, sizeof *c->aggs, cmp_agg);
    qsort(g->late, g->nlate, sizeof *g->late, cmp_late);
    qsort(c->late, c->nlate, sizeof *c->late, cmp_late);
    if (g->naggs != c->naggs || g->nlate != c->nlate) {
        harness_fail(__FILE__, __LINE__, "%s: gpu %zu rows %zu late, cpu %zu rows %zu late", what,
                     g->naggs, g->nlate, c->naggs, c->nlate);
        return -1;
    }
    for (size_t i = 0; i < g->naggs; i++) {
        const struct ga_agg *a = &g->aggs[i], *b = &c->aggs[i];
        int same = cmp_agg(a, b) == 0;
        int exact = same && memcmp(&a->value, &b->value, sizeof a->value) == 0;
        int ok = exact || (same && a->value == b->value);
        if (!ok && same && tolerant(a->method))
            ok = fabs(a->value - b->value) <= 1e-12 * fmax(fabs(a->value), fabs(b->value));
        if (!ok) {
            char nb[GA_METHOD_NAME_MAX];
            harness_fail(__FILE__, __LINE__, "%s: row %zu: gpu m=%u %s g=%lld b=%lld %.17g, "
                         "cpu m=%u g=%lld b=%lld %.17g", what, i, a->metric,
                         ga_method_name(a->method, nb), (long long)a->granularity_ns,
                         (long long)a->ts, a->value, b->metric, (long long)b->granularity_ns,
                         (long long)b->ts, b->value);
            return -1;
        }
        rows_cmp++;
        rows_bitexact += exact;
    }
    for (size_t i = 0; i < g->nlate; i++) {
        if (cmp_late(&g->late[i], &c->late[i]) != 0 || g->late[i].reason != c->late[i].reason) {
            harness_fail(__FILE__, __LINE__, "%s: late %zu differs: m=%u ts=%lld r=%u / m=%u ts=%lld r=%u",
                         what, i, g->late[i].metric, (long long)g->late[i].ts, g->late[i].reason,
                         c->late[i].metric, (long long)c->late[i].ts, c->late[i].reason);
            return -1;
        }
        late_cmp++;
    }
    return 0;
}

/* The window set read in one go (windows_get) against the CPU's windows,
 * one at a time; ids the GPU does not hold are left out of the set. */
static int compare_window_set(const char *what, struct ga_backend *g, struct ga_backend *c,
                              const uint32_t *ids, int n)
{
    uint32_t held[64] = { 0 };
    struct ga_window set[64];
    int k = 0;
    for (int i = 0; i < n && k < 64; i++) {
        struct ga_window w;
        if (g->ops->window_get(g, ids[i], &w) == 0) {
            held[k++] = ids[i];
            free(w.ts);
            free(w.value);
        }
    }
    CHECK_INT(g->ops->windows_get(g, held, (size_t)k, set), 0);
    int bad = 0;
    for (int i = 0; i < k; i++) {
        struct ga_window wc;
        CHECK_INT(c->ops->window_get(c, held[i], &wc), 0);
        bad = set[i].n != wc.n;
        for (size_t j = 0; !bad && j < wc.n; j++)
            bad = set[i].ts[j] != wc.ts[j] || memcmp(&set[i].value[j], &wc.value[j], 8) != 0;
        if (bad)
            harness_fail(__FILE__, __LINE__, "%s: window set: metric %u differs (gpu %zu points, "
                         "cpu %zu)", what, held[i], set[i].n, wc.n);
        free(wc.ts);
        free(wc.value);
        if (bad)
            break;
    }
    for (int i = 0; i < k; i++) {
        free(set[i].ts);
        free(set[i].value);
    }
    return bad ? -1 : 0;
}

static int compare_windows(const char *what, struct ga_backend *g, struct ga_backend *c,
                           const uint32_t *ids, int n)
{
    if (compare_window_set(what, g, c, ids, n) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        struct ga_window wg, wc;
        int rg = g->ops->window_get(g, ids[i], &wg), rc = c->ops->window_get(c, ids[i], &wc);
        CHECK_INT(rg, rc);
        if (rg || rc)
            continue;
        int bad = wg.n != wc.n;
        for (size_t k = 0; !bad && k < wg.n; k++)
            bad = wg.ts[k] != wc.ts[k] || memcmp(&wg.value[k], &wc.value[k], 8) != 0;
        if (bad)
            harness_fail(__FILE__, __LINE__, "%s: window of metric %u differs (gpu %zu points, cpu %zu)",
                         what, ids[i], wg.n, wc.n);
        free(wg.ts);
        free(wg.value);
        free(wc.ts);
        free(wc.value);
        if (bad)
            return -1;
    }
    return 0;
}

#define MAXM 12
#define BCAP 3000

static void *big_alloc(size_t bytes, int pinned)
{
    void *p = NULL;
    if (pinned && ga_cuda_host_alloc(&p, bytes) == 0)
        return p;                  /* page-locked: feed() DMAs straight from it */
    return malloc(bytes);
}

static void big_free(void *p, int pinned)
{
    if (pinned && !use_emu)
        ga_cuda_host_free(p);
    else
        free(p);
}

/* One random batch of up to BCAP points for metrics ids[0..nmet) (and an
 * unknown id now and then) around *now, which moves on. */
struct tbatch {
    uint32_t *mid;
    int64_t *ts;
    double *val;
    size_t n;
    uint32_t *o;                  /* ts as 32-bit offsets (engine.h), where packed */
    int64_t base, unit;
    int packed;
};

static size_t packed_batches;    /* fed as 32-bit offsets */

/* A trial of offsets (t32) rounds each batch's ts to whole ms and packs them
 * (a batch spanning more than 49 days of ms, or with a point before 1970,
 * does not pack and goes as int64). */
static void pack_batch(struct tbatch *b, int t32)
{
    b->packed = 0;
    if (!t32)
        return;
    for (size_t i = 0; i < b->n; i++)
        b->ts[i] = b->ts[i] / 1000000 * 1000000;
    b->packed = ga_points_pack_ts32(b->ts, b->n, b->o, &b->base, &b->unit) == 0;
}

static struct ga_points pts_of(const struct tbatch *b)
{
    struct ga_points p = { .n = b->n, .metric = b->mid, .value = b->val };
    if (b->packed) {
        p.ts32 = b->o;
        p.ts_base = b->base;
        p.ts_unit = b->unit;
    } else {
        p.ts = b->ts;
    }
    return p;
}

/* Stable insertion sort by ts (batches are at most BCAP points). */
static void sort_by_ts(struct tbatch *b)
{
    for (size_t i = 1; i < b->n; i++) {
        uint32_t m = b->mid[i];
        int64_t t = b->ts[i];
        double v = b->val[i];
        size_t j = i;
        for (; j > 0 && b->ts[j - 1] > t; j--) {
            b->mid[j] = b->mid[j - 1];
            b->ts[j] = b->ts[j - 1];
            b->val[j] = b->val[j - 1];
        }
        b->mid[j] = m;
        b->ts[j] = t;
        b->val[j] = v;
    }
}

static void gen_batch(struct tbatch *b, const uint32_t *ids, int nmet, int64_t *now)
{
    size_t n = (size_t)rnd_in(1, BCAP);
    if (rnd() % 3 == 0)
        n = (size_t)rnd_in(1, 40);
    int64_t spread = rnd_in(1, 600) * SEC;
    for (size_t i = 0; i < n; i++) {
        b->mid[i] = ids[rnd_in(0, nmet - 1)];
        int64_t t = *now + rnd_in(-spread / 2, spread);
        if (rnd() % 10 == 0)
            t = *now - rnd_in(0, 3600) * SEC;
        if (rnd() % 8 == 0 && i)
            t = b->ts[rnd() % i];
        if (rnd() % 3 == 0)
            t = t / SEC * SEC;
        b->ts[i] = t;
        b->val[i] = rnd_value();
        if (rnd() % 200 == 0)
            b->ts[i] = -b->ts[i];
        if (rnd() % 200 == 0)
            b->val[i] = rnd() % 2 ? NAN : -INFINITY;
        if (rnd() % 300 == 0)
            b->mid[i] = 999;                          /* unknown */
    }
    b->n = n;
    *now += spread;
    if (rnd() % 3 == 0)           /* in time order, as producers mostly send them */
        sort_by_ts(b);
    if (rnd() % 12 == 0)          /* nothing kept: the feed returns after its late points */
        for (size_t i = 0; i < n; i++)
            b->mid[i] = 999;
}

/* async: feed_start batch k, then feed_wait for batch k - 1 (two results
 * in turn), as a pipelined caller does; else feed().  pre: batch k + 1 is
 * prefetched before batch k is fed (its arrays page-locked on a GPU), now
 * and then with a decoy prefetch in between (other arrays, same length,
 * other values), which no feed may take for its own. */
static void one_trial(int trial, int async, int pre)
{
    struct ga_backend *g, *c;
    CHECK_INT(open_gpu(&g), 0);
    CHECK_INT(ga_cpu_backend_open(&c, 2), 0);
    struct ga_policy pol[MAXM];
    uint32_t ids[MAXM];
    int nmet = (int)rnd_in(1, MAXM);
    for (int m = 0; m < nmet; m++) {
        random_policy(&pol[m]);
        ids[m] = (uint32_t)(m * 5 + 1);
        CHECK_INT(g->ops->metric_add(g, ids[m], &pol[m]), 0);
        CHECK_INT(c->ops->metric_add(c, ids[m], &pol[m]), 0);
    }
    struct ga_result rga[2] = { { 0 }, { 0 } }, rca[2] = { { 0 }, { 0 } };
    rga[0].want_pinned = rga[1].want_pinned = (int)(rnd() % 2);  /* rows straight from the GPU, or staged */
    /* basic methods as records: one trial in two, alternating over the
     * emulation's warp trials (t % 4 == 3) too */
    rga[0].want_wide = rga[1].want_wide = (trial + trial / 4) % 2;
    int64_t now = rnd_in(1600000000, 1700000000) * SEC + rnd_in(0, SEC);
    int nbatch = (int)rnd_in(1, 8);
    int pinned = pre && !use_emu;
    struct tbatch bat[3];         /* batches k and k + 1 in turn; [2]: the decoy */
    for (int k = 0; k < 3; k++) {
        bat[k].mid = big_alloc(BCAP * sizeof *bat[k].mid, pinned);
        bat[k].ts = big_alloc(BCAP * sizeof *bat[k].ts, pinned);
        bat[k].val = big_alloc(BCAP * sizeof *bat[k].val, pinned);
        bat[k].o = big_alloc(BCAP * sizeof *bat[k].o, pinned);
    }
    int t32 = trial % 3 == 1;     /* timestamps as offsets: one trial in three */
    struct ga_cuda_feed_stats st0, st1;
    CHECK_INT(ga_cuda_backend_stats(g, &st0), 0);
    int decoys = 0;
    gen_batch(&bat[0], ids, nmet, &now);
    pack_batch(&bat[0], t32);
    if (pre) {
        struct ga_points p0 = pts_of(&bat[0]);
        CHECK_INT(g->ops->prefetch(g, &p0), 1);
    }
    for (int bi = 0; bi < nbatch; bi++) {
        struct tbatch *b = &bat[bi % 2];
        if (bi + 1 < nbatch) {    /* the next batch, into the arrays batch bi - 1 had */
            struct tbatch *nx = &bat[(bi + 1) % 2];
            gen_batch(nx, ids, nmet, &now);
            pack_batch(nx, t32);
            if (pre && rnd() % 5 == 0) {
                memcpy(bat[2].mid, nx->mid, nx->n * sizeof *nx->mid);
                memcpy(bat[2].ts, nx->ts, nx->n * sizeof *nx->ts);
                memcpy(bat[2].o, nx->o, nx->n * sizeof *nx->o);
                bat[2].n = nx->n;
                bat[2].packed = nx->packed;
                bat[2].base = nx->base;
                bat[2].unit = nx->unit;
                for (size_t i = 0; i < nx->n; i++)   /* same length, other values */
                    bat[2].val[i] = nx->val[i] + 1.0;
                struct ga_points pd = pts_of(&bat[2]);
                int r = g->ops->prefetch(g, &pd);
                CHECK(r == 1 || r == GA_EBUSY);
                decoys++;
            }
            struct ga_points pn = pts_of(nx);
            if (pre) {
                int r = g->ops->prefetch(g, &pn);
                CHECK(r == 1 || r == GA_EBUSY);
            }
        }
        int k = async ? bi % 2 : 0;
        struct ga_result *rg = &rga[k], *rc = &rca[k];
        if (rnd() % 4) {          /* else append behind the rows of two batches ago */
            ga_result_reset(rg);
            ga_result_reset(rc);
        }
        struct ga_points p = pts_of(b);
        packed_batches += b->packed;
        char what[64];
        snprintf(what, sizeof what, "trial %d batch %d%s", trial, bi, pre ? " (prefetched)" : "");
        if (async) {
            CHECK_INT(g->ops->feed_start(g, &p, rg), 0);
            if (bi) {
                CHECK_INT(g->ops->feed_start(g, &p, &rga[1 - k]), GA_EBUSY);   /* two in flight */
                CHECK_INT(g->ops->feed_wait(g), 0);                           /* batch bi - 1 */
                snprintf(what, sizeof what, "trial %d batch %d (async)", trial, bi - 1);
                if (compare(what, &rga[1 - k], &rca[1 - k]))
                    break;
            } else {
                CHECK_INT(g->ops->feed_start(g, &p, rg), GA_EINVAL);          /* its out in flight */
            }
        } else {
            CHECK_INT(g->ops->feed(g, &p, rg), 0);
        }
        CHECK_INT(c->ops->feed(c, &p, rc), 0);
        if (!async && rg->want_pinned && rg->naggs)
            CHECK_INT(rg->aggs_pinned, !use_emu);
        if ((!async && compare(what, rg, rc)) || compare_windows(what, g, c, ids, nmet))
            break;
        if (rnd() % 6 == 0) {                          /* drop and re-add one metric */
            int m = (int)rnd_in(0, nmet - 1);
            g->ops->metric_drop(g, ids[m]);
            c->ops->metric_drop(c, ids[m]);
            CHECK_INT(g->ops->metric_add(g, ids[m], &pol[m]), 0);
            CHECK_INT(c->ops->metric_add(c, ids[m], &pol[m]), 0);
        }
    }
    if (async && g->ops->feed_wait(g) == 0)           /* the last batch */
        compare("async last batch", &rga[(nbatch - 1) % 2], &rca[(nbatch - 1) % 2]);
    CHECK_INT(g->ops->feed_wait(g), GA_ENOENT);
    /* Batch 0 was prefetched with nothing before it: its feed took that upload. */
    CHECK_INT(ga_cuda_backend_stats(g, &st1), 0);
    if (pre)
        CHECK(st1.prefetch_used > st0.prefetch_used);
    else
        CHECK(st1.prefetch_used == st0.prefetch_used && st1.prefetch_dropped == st0.prefetch_dropped);
    if (pre && !decoys)           /* every batch fed took its prefetched upload */
        CHECK_INT(st1.prefetch_used - st0.prefetch_used, (uint64_t)nbatch);
    pre_used += st1.prefetch_used - st0.prefetch_used;
    order_fast += st1.order_in_time - st0.order_in_time;
    order_sorted += st1.order_sorted - st0.order_sorted;
    pre_dropped += st1.prefetch_dropped - st0.prefetch_dropped;
    for (int k = 0; k < 3; k++) {
        big_free(bat[k].mid, pinned);
        big_free(bat[k].ts, pinned);
        big_free(bat[k].val, pinned);
        big_free(bat[k].o, pinned);
    }
    for (int k = 0; k < 2; k++) {
        ga_result_free(&rga[k]);
        ga_result_free(&rca[k]);
    }
    note_sort(g);
    g->ops->close(g);
    c->ops->close(c);
}

static void test_random_vs_cpu(void)
{
    int n = (int)(200 * scale) + 1;
    wide_records = wide_values = packed_records = 0;
    int variant = rows_kernel;
    for (int t = 0; t < n; t++) {
        if (use_emu)              /* emulation: one trial in four on the warp kernel */
            rows_kernel = t % 4 == 3 ? GA_CUDA_ROWS_WARP : variant;
        else                      /* GPU: one in four on the per-launch automatic choice */
            rows_kernel = t % 4 == 1 ? GA_CUDA_ROWS_DEFAULT : variant;
        sort_mode = (t / 2) % 4;  /* the sort: every mode with each rows kernel */
        sort_small = (int[]){ 0, -1, GA_CUDA_SORT_SMALL_MAX, (int)rnd_in(1, 64) }[sort_mode];
        one_trial(t, t % 3 == 2, t % 5 >= 3);   /* prefetched: two in five, both ways */
    }
    rows_kernel = variant;
    sort_small = sort_mode = 0;
    CHECK(rows_cmp > 1000);
    CHECK(late_cmp > 50);
    printf("timestamps as 32-bit offsets: %zu batches\n", packed_batches);
    if (n >= 8)
        CHECK(packed_batches > 0);
    printf("wide: %zu records (%zu packed) of %zu values\n", wide_records, packed_records, wide_values);
    if (n >= 8)               /* the sanitizers' few trials may hold no record */
        CHECK(wide_records > 0 && wide_values > wide_records);
    if (n >= 50)              /* both kinds: granularities of whole and of part seconds */
        CHECK(packed_records > 0 && packed_records < wide_records);
    /* Both sorts ran where they should (once the backend reports its split:
     * a call site that does not leaves every count 0). */
    uint64_t any = 0;
    for (int m = 0; m < 4; m++)
        any += sort_parts[m][0] + sort_parts[m][1];
    printf("sort parts (small/CUB): default %llu/%llu, CUB only %llu/%llu, all small %llu/%llu, "
           "1..64 %llu/%llu\n", (unsigned long long)sort_parts[0][0], (unsigned long long)sort_parts[0][1],
           (unsigned long long)sort_parts[1][0], (unsigned long long)sort_parts[1][1],
           (unsigned long long)sort_parts[2][0], (unsigned long long)sort_parts[2][1],
           (unsigned long long)sort_parts[3][0], (unsigned long long)sort_parts[3][1]);
    CHECK(sort_parts[1][0] == 0);                /* CUB only: never the kernel */
    if (any && n >= 40) {     /* the sanitizers' few trials may not reach every case */
        CHECK(sort_parts[0][0] > 0);            /* the default: auto */
        CHECK(sort_parts[1][1] > 0);
        CHECK(sort_parts[2][0] > 0);
        CHECK(sort_parts[3][0] > 0 && sort_parts[3][1] > 0);
    }
    memset(sort_parts, 0, sizeof sort_parts);
    printf("prefetch: %llu feeds took a prefetched upload, %llu prefetched batches dropped\n",
           (unsigned long long)pre_used, (unsigned long long)pre_dropped);
    if (n >= 20)              /* decoys (one in five batches) make some feeds drop theirs */
        CHECK(pre_used > 0 && pre_dropped > 0);
    pre_used = pre_dropped = 0;
    /* Batches in time order (one in three) take the slot sort alone; the
     * others are caught out of order and sorted by ts too. */
    printf("order: %llu feeds sorted by metric alone, %llu by time as well\n",
           (unsigned long long)order_fast, (unsigned long long)order_sorted);
    if (n >= 20)
        CHECK(order_fast > 0 && order_sorted > 0);
    order_fast = order_sorted = 0;
}

/* Many metrics, big batches (several staging chunks), every method kind. */
static void big_case(size_t npts, uint32_t nmet, int nbatch, const char *const *ms, int nms,
                     int pinned)
{
    pinned = pinned && !use_emu;
    struct ga_backend *g, *c;
    CHECK_INT(open_gpu(&g), 0);
    CHECK_INT(ga_cpu_backend_open(&c, 0), 0);
    struct ga_policy p = *ga_policy_builtin("high");
    CHECK_INT(ga_policy_methods_from_list(&p, ms, nms, NULL), 0);
    p.back_window = 1;
    uint32_t *ids = malloc(nmet * sizeof *ids);
    for (uint32_t m = 0; m < nmet; m++) {
        ids[m] = m;
        CHECK_INT(g->ops->metric_add(g, m, &p), 0);
        CHECK_INT(c->ops->metric_add(c, m, &p), 0);
    }
    uint32_t *mid = big_alloc(npts * sizeof *mid, pinned);
    int64_t *ts = big_alloc(npts * sizeof *ts, pinned);
    double *val = big_alloc(npts * sizeof *val, pinned);
    int64_t t0 = 1700000000 * SEC;
    static int big_calls;
    struct ga_result rg = { .want_pinned = pinned, .want_wide = big_calls++ % 2 == 0 }, rc = { 0 };
    for (int b = 0; b < nbatch; b++) {
        for (size_t i = 0; i < npts; i++) {
            mid[i] = (uint32_t)(rnd() % nmet);
            ts[i] = t0 + rnd_in(0, 900) * (SEC / 4) + rnd_in(0, SEC);
            val[i] = rnd_value();
        }
        t0 += 600 * SEC;
        ga_result_reset(&rg);
        ga_result_reset(&rc);
        struct ga_points pts = { .n = npts, .metric = mid, .ts = ts, .value = val };
        CHECK_INT(g->ops->feed(g, &pts, &rg), 0);
        CHECK_INT(c->ops->feed(c, &pts, &rc), 0);
        char what[64];
        snprintf(what, sizeof what, "big %zu batch %d", npts, b);
        CHECK(rc.naggs > 0);
        if (compare(what, &rg, &rc))
            break;
    }
    compare_windows("big windows", g, c, ids, (int)nmet);
    note_sort(g);
    free(ids);
    big_free(mid, pinned);
    big_free(ts, pinned);
    big_free(val, pinned);
    ga_result_free(&rg);
    ga_result_free(&rc);
    g->ops->close(g);
    c->ops->close(c);
}

static void test_big_batches(void)
{
    static const char *const a[] = { "mean", "std", "90pct", "rate:mean", "median", "last", "count",
                                     "rate:std", "rate:50pct", "sum", "min", "max", "first" };
    size_t n = (size_t)(400000 * scale) + 1000;
    big_case(n, 500, 3, a, 13, 1);
    big_case(n / 4, 20000, 2, a, 6, 0);
    /* 1 h buckets of up to ~2,400 points next to 1 s ones: both sorts, split at 100 */
    sort_small = 100;
    big_case(n / 2, 300, 2, a, 13, 0);
    sort_small = 0;
}

/* The shared-memory sort against CUB alone, value for value, at thresholds
 * around its 32-value chunks and its largest. */
static void test_sort_split(void)
{
    static const unsigned thr[] = { 1, 8, 31, 32, 33, 100, 512, 1500, GA_CUDA_SORT_SMALL_MAX };
    uint64_t values = 0, differ = 0, swaps = 0;
    for (unsigned i = 0; i < sizeof thr / sizeof thr[0]; i++) {
        uint64_t pts = (uint64_t)((use_emu ? 150000 : 2000000) * fmax(scale, 0.01));
        struct ga_cuda_sort_check c = { .emulate = use_emu, .seed = 7 + i, .small_max = thr[i],
                                        .points = pts > 40 * thr[i] ? pts : 40 * thr[i] };
        CHECK_INT(ga_cuda_sort_check(0, &c), 0);
        CHECK(c.small_parts > 0);
        CHECK(c.big_parts > 0);
        /* bit for bit, -0.0 and +0.0 in input order on both sides */
        CHECK_INT(c.differ, 0);
        if (c.differ)
            printf("sort split %u: %llu of %llu values differ (%llu -0.0/+0.0 swaps)\n", thr[i],
                   (unsigned long long)c.differ, (unsigned long long)c.values,
                   (unsigned long long)c.zero_swaps);
        values += c.values;
        differ += c.differ;
        swaps += c.zero_swaps;
    }
    printf("sort split: %llu values, shared-memory kernel + CUB vs CUB alone: %llu differ "
           "(%llu of them -0.0/+0.0)\n", (unsigned long long)values, (unsigned long long)differ,
           (unsigned long long)swaps);
}

/* window_put on the GPU backend then feed == feeding the CPU backend. */
static void test_window_put_get(void)
{
    struct ga_policy p;
    random_policy(&p);
    struct ga_backend *g, *c;
    CHECK_INT(open_gpu(&g), 0);
    CHECK_INT(ga_cpu_backend_open(&c, 1), 0);
    CHECK_INT(c->ops->metric_add(c, 5, &p), 0);
    int64_t t0 = 1650000000 * SEC;
    int64_t ts[200];
    double v[200];
    uint32_t mid[200];
    for (int i = 0; i < 200; i++) {
        ts[i] = t0 + rnd_in(0, 400) * SEC / 3;
        v[i] = rnd_value();
        mid[i] = 5;
    }
    struct ga_result rg = { 0 }, rc = { 0 };
    CHECK_INT(c->ops->feed(c, &(struct ga_points){ .n = 100, .metric = mid, .ts = ts, .value = v }, &rc), 0);
    struct ga_window w;
    CHECK_INT(c->ops->window_get(c, 5, &w), 0);
    CHECK_INT(g->ops->window_put(g, 5, &p, &w), 0);
    uint32_t one = 5;
    compare_windows("after put", g, c, &one, 1);
    ga_result_reset(&rc);
    CHECK_INT(c->ops->feed(c, &(struct ga_points){ .n = 100, .metric = mid + 100,
                                                   .ts = ts + 100, .value = v + 100 }, &rc), 0);
    CHECK_INT(g->ops->feed(g, &(struct ga_points){ .n = 100, .metric = mid + 100,
                                                   .ts = ts + 100, .value = v + 100 }, &rg), 0);
    compare("after put, feed", &rg, &rc);
    compare_windows("after put, feed", g, c, &one, 1);
    struct ga_window bad = { 0 };
    CHECK_INT(g->ops->window_get(g, 77, &bad), GA_ENOENT);
    uint32_t some[2] = { 5, 77 };
    struct ga_window set[2] = { { .n = 9 }, { .n = 9 } };
    CHECK_INT(g->ops->windows_get(g, some, 2, set), GA_ENOENT);
    CHECK(set[0].ts == NULL && set[0].n == 0 && set[1].ts == NULL);
    if (w.n >= 2) {
        int64_t tmp = w.ts[0];
        w.ts[0] = w.ts[1];
        w.ts[1] = tmp;
        CHECK_INT(g->ops->window_put(g, 6, &p, &w), GA_EINVAL);
    }
    free(w.ts);
    free(w.value);
    ga_result_free(&rg);
    ga_result_free(&rc);
    g->ops->close(g);
    c->ops->close(c);
}

static void test_stats(void)
{
    struct ga_backend *g, *c;
    CHECK_INT(open_gpu(&g), 0);
    CHECK_INT(ga_cpu_backend_open(&c, 1), 0);
    struct ga_cuda_feed_stats st;
    CHECK_INT(ga_cuda_backend_stats(g, &st), 0);
    CHECK_INT(ga_cuda_backend_stats(c, &st), GA_EINVAL);
    g->ops->close(g);
    c->ops->close(c);
}

/* Steady state grows nothing: a workload whose shape holds (the same
 * metrics, about as many points each a batch, time moving on, windows of
 * one block) grows its buffers in its first feeds, then never again; its rows
 * match the CPU backend's all along.  Fed both ways (feed, and two feeds in
 * flight) into results that want page-locked rows, as the engine's do. */
static void test_steady_state(void)
{
    struct ga_policy p;
    memset(&p, 0, sizeof p);
    strcpy(p.name, "steady");
    const char *why = NULL;
    CHECK_INT(ga_policy_add_def(&p, 10 * SEC, 0, 100, &why), 0);
    CHECK_INT(ga_policy_add_def(&p, 60 * SEC, 0, 100, &why), 0);
    const char *ms[] = { "mean", "max", "last", "std", "median", "90pct", "rate:sum" };
    CHECK_INT(ga_policy_methods_from_list(&p, ms, 7, &why), 0);
    enum { NMET = 300, PER = 40, NB = 14, WARM = 4 };
    size_t n = (size_t)NMET * PER;
    uint32_t *mid = malloc(n * 4);
    int64_t *ts = malloc(n * 8);
    double *val = malloc(n * 8);
    CHECK(mid && ts && val);
    for (int async = 0; async < 2 && mid && ts && val; async++) {
        struct ga_backend *g, *c;
        CHECK_INT(open_gpu(&g), 0);
        CHECK_INT(ga_cpu_backend_open(&c, 1), 0);
        for (uint32_t m = 0; m < NMET; m++) {
            CHECK_INT(g->ops->metric_add(g, m, &p), 0);
            CHECK_INT(c->ops->metric_add(c, m, &p), 0);
        }
        struct ga_result rg[2] = { { .want_pinned = 1 }, { .want_pinned = 1 } }, rc = { 0 };
        uint64_t grown_late = 0, grown_early = 0, pinned_early = 0;
        int64_t t0 = 1700000000 * SEC;
        for (int k = 0; k < NB; k++) {
            /* PER points a metric, 3 s apart, in time order; a few metrics
             * get up to 4 fewer, so the sizes move a little from feed to feed */
            size_t m = 0;
            for (size_t i = 0; i < n; i++) {
                uint32_t id = (uint32_t)(i % NMET);
                if (i / NMET + 4 >= PER && rnd() % 4 == 0)
                    continue;
                mid[m] = id;
                ts[m] = t0 + ((int64_t)k * PER + (int64_t)(i / NMET)) * 3 * SEC + rnd_in(0, SEC - 1);
                val[m++] = rnd_value();
            }
            struct ga_points pts = { .n = m, .metric = mid, .ts = ts, .value = val };
            struct ga_result *out = &rg[async ? k % 2 : 0];
            ga_result_reset(out);
            ga_result_reset(&rc);
            CHECK_INT(c->ops->feed(c, &pts, &rc), 0);
            if (async) {
                CHECK_INT(g->ops->feed_start(g, &pts, out), 0);
                CHECK_INT(g->ops->feed_wait(g), 0);
            } else {
                CHECK_INT(g->ops->feed(g, &pts, out), 0);
            }
            struct ga_cuda_feed_stats st;
            CHECK_INT(ga_cuda_backend_stats(g, &st), 0);
            *(k < WARM ? &grown_early : &grown_late) += st.allocs;
            pinned_early += k < WARM ? st.pinned_allocs : 0;
            CHECK(out->naggs > 0);
            compare("steady state", out, &rc);
        }
        CHECK(grown_early > 0);       /* the first feed grows every buffer it uses */
        CHECK(pinned_early > 0);      /* among them the result's rows, page-locked */
        CHECK_INT(grown_late, 0);
        printf("steady state (%s): %llu buffers grown in the first %d feeds, %llu in the next %d\n",
               async ? "feed_start/feed_wait" : "feed", (unsigned long long)grown_early, WARM,
               (unsigned long long)grown_late, NB - WARM);
        ga_result_free(&rg[0]);
        ga_result_free(&rg[1]);
        ga_result_free(&rc);
        g->ops->close(g);
        c->ops->close(c);
    }
    free(mid);
    free(ts);
    free(val);
}

static int gpu_mode;              /* 0 none, 1 GPU, 2 emulation */

/* A result that wants page-locked rows: every growth keeps the rows; they
 * are page-locked exactly when a GPU is there to pin them, and freeing
 * keeps the wish. */
static void test_result_pinned(void)
{
    struct ga_result r = { .want_pinned = 1 };
    for (int round = 0; round < 2; round++) {
        for (uint32_t i = 0; i < 20000; i++) {
            struct ga_agg a = { .metric = i, .method = GA_M_SUM, .granularity_ns = SEC,
                                .ts = (int64_t)i * SEC, .value = i * 0.5 - 3 };
            CHECK_INT(ga_result_push_agg(&r, &a), 0);
        }
        CHECK_INT(r.naggs, 20000);
        int bad = 0;
        for (uint32_t i = 0; i < 20000; i++)
            bad += r.aggs[i].metric != i || r.aggs[i].ts != (int64_t)i * SEC ||
                   r.aggs[i].value != i * 0.5 - 3;
        CHECK_INT(bad, 0);
        CHECK_INT(r.aggs_pinned, gpu_mode == 1);
        CHECK_INT(ga_result_reserve(&r, 100000, 0), 0);   /* a growth by reserve keeps them */
        CHECK_INT(r.aggs[19999].metric, 19999);
        ga_result_free(&r);
        CHECK_INT(r.want_pinned, 1);
        CHECK(r.aggs == NULL && r.naggs == 0 && r.cap_aggs == 0 && !r.aggs_pinned);
    }
}

/* The galloping searches of the feed against plain binary search (host
 * code: the kernels' own functions), wherever nvcc built them. */
static void test_searches(void)
{
    uint64_t checked = 0, differ = 0;
    int rc = ga_cuda_search_check(11, 2000, &checked, &differ);
    if (!ga_gpu_compiled()) {
        CHECK_INT(rc, GA_ENOGPU);
        harness_skip("built without CUDA: the kernels' searches are not built");
        return;
    }
    CHECK_INT(rc, 0);
    CHECK(checked == 2000 * 160);
    CHECK_INT(differ, 0);
    printf("galloping searches: %llu answers, %llu differ from binary search\n",
           (unsigned long long)checked, (unsigned long long)differ);
}

/* The open call: a GPU, or GA_ENOGPU with nothing returned. */
static void test_open_answers(void)
{
    struct ga_backend *b = NULL;
    CHECK_INT(ga_cuda_backend_open(&b, 0, &(struct ga_cuda_opts){ .rows_kernel = 3 }),
              ga_gpu_compiled() ? GA_EINVAL : GA_ENOGPU);
    CHECK_INT(ga_cuda_backend_open(&b, 0, &(struct ga_cuda_opts){ .sort_small = -2 }),
              ga_gpu_compiled() ? GA_EINVAL : GA_ENOGPU);
    CHECK_INT(ga_cuda_backend_open(&b, 0, &(struct ga_cuda_opts){ .rows_long = -2 }),
              ga_gpu_compiled() ? GA_EINVAL : GA_ENOGPU);
    CHECK_INT(ga_cuda_backend_open(&b, 0, &(struct ga_cuda_opts){ .sort_small = GA_CUDA_SORT_SMALL_MAX + 1 }),
              ga_gpu_compiled() ? GA_EINVAL : GA_ENOGPU);
    CHECK(b == NULL);
    int rc = ga_cuda_backend_open(&b, 0, NULL);
    if (rc == 0) {
        printf("GPU part: running on %s\n", b->label);
        b->ops->close(b);
        gpu_mode = 1;
        return;
    }
    CHECK_INT(rc, GA_ENOGPU);
    CHECK(b == NULL);
    CHECK_INT(ga_cuda_backend_open(&b, 0, &(struct ga_cuda_opts){ .ring = 1 }),
              ga_gpu_compiled() ? GA_EINVAL : GA_ENOGPU);
    struct ga_cuda_opts o = { .emulate = 1 };
    rc = ga_cuda_backend_open(&b, 0, &o);
    if (rc == GA_ENOGPU)
        return;                        /* built without CUDA: run_tests says so */
    CHECK_INT(rc, 0);
    if (rc)
        return;
    b->ops->close(b);
    gpu_mode = 2;
}

void run_tests(void)
{
    rng = 0x243f6a8885a308d3ULL;      /* this suite's own seed */
    ga_log_set_level(GA_LOG_ERROR);
    const char *sc = getenv("GA_CUDA_TEST_SCALE");
    if (sc && atof(sc) > 0)
        scale = atof(sc);
    RUN(test_open_answers);
    RUN(test_result_pinned);
    RUN(test_searches);
    if (!gpu_mode) {
        harness_skip("built without CUDA (GA_ENOGPU checked): the CUDA backend is not compared "
                     "with the CPU backend");
        return;
    }
    if (gpu_mode == 2) {
        harness_skip("no usable GPU (GA_ENOGPU checked): the CUDA backend's kernels are compared "
                     "with the CPU backend in host emulation only, not on a GPU");
        use_emu = 1;
        scale *= 0.25;
    }
    /* GPU: both rows kernels, the whole comparison each; emulation: once.
     * GA_CUDA_TEST_ROWS=tiled|warp: that one alone (a sanitizer's run
     * of each, side by side, fits its time cap). */
    static const int variants[] = { GA_CUDA_ROWS_TILED, GA_CUDA_ROWS_WARP };
    const char *only = getenv("GA_CUDA_TEST_ROWS");
    int one = only && (!strcmp(only, "tiled") || !strcmp(only, "warp"));
    int v0 = one && !strcmp(only, "warp") ? 1 : 0;
    int v1 = use_emu || one ? v0 + 1 : 2;
    for (int v = v0; v < v1; v++) {
        rows_kernel = variants[v];
        const char *name = rows_kernel == GA_CUDA_ROWS_TILED ? "tiled" : "warp";
        printf("rows kernel: %s%s\n", name, use_emu ? " (emulated; 1 random trial in 4: warp)" : "");
        rows_cmp = rows_bitexact = late_cmp = 0;
        RUN(test_random_vs_cpu);
        RUN(test_big_batches);
        RUN(test_window_put_get);
        RUN(test_stats);
        RUN(test_steady_state);
        if (v == 0)
            RUN(test_sort_split);
        printf("rows kernel %s: compared %zu rows (%zu bit-identical), %zu late points\n", name,
               rows_cmp, rows_bitexact, late_cmp);
    }
}
