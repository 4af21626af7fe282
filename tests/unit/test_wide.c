/* test_wide.c — wide records (gpu/engine.h): the readers in gpu/result.c
 * against the packer of tests/unit/wide_pack.h on the CPU backend's rows of
 * random series and policies; malformed and cut-short records; the engine
 * with want_wide over CPU backends (rows, counted as rows), and over a CPU
 * and an emulated CUDA backend (records through the engine's split).  The
 * CUDA backend's records are checked against the CPU backend at length in
 * test_cuda_backend. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "proto/base/log.h"
#include "gpu/cuda.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tests/unit/random_policy.h"
#include "tests/unit/wide_pack.h"

static int same_row(const struct ga_agg *a, const struct ga_agg *b)
{
    return a->metric == b->metric && a->method == b->method && a->granularity_ns == b->granularity_ns &&
           a->ts == b->ts && memcmp(&a->value, &b->value, sizeof a->value) == 0;
}

/* Rows of a few batches of random points through an engine of nb
 * backends, CPU ones, or (cuda) a CPU one then the CUDA backend run in
 * emulation: every method kind, buckets of one or many points.  0, or
 * GA_ENOGPU when a CUDA backend was asked of a build without one. */
static int engine_rows_on(int nb, int cuda, int want_wide, uint64_t seed, struct ga_result *out,
                          struct ga_engine_stats *st)
{
    rng = seed;
    struct ga_backend *b[2];
    for (int i = 0; i < nb; i++) {
        if (cuda && i == 1) {     /* second: its rows come through the engine's part result */
            struct ga_cuda_opts o = { .emulate = 1 };
            int rc = ga_cuda_backend_open(&b[i], 0, &o);
            if (rc) {
                b[0]->ops->close(b[0]);
                return rc;
            }
        } else {
            CHECK_INT(ga_cpu_backend_open(&b[i], 2), 0);
        }
    }
    struct ga_engine *e;
    CHECK_INT(ga_engine_open(&e, b, nb), 0);
    enum { NM = 12, NPTS = 3000 };
    for (uint32_t m = 0; m < NM; m++) {
        struct ga_policy p;
        random_policy(&p);
        CHECK_INT(ga_engine_metric_add(e, m, &p), 0);
    }
    uint32_t mid[NPTS];
    int64_t ts[NPTS];
    double val[NPTS];
    int64_t t0 = 1700000000 * SEC;
    out->want_wide = want_wide;
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < NPTS; i++) {
            mid[i] = (uint32_t)(rnd() % NM);
            ts[i] = t0 + rnd_in(0, 600) * SEC + rnd_in(0, SEC - 1);
            val[i] = rnd_value();
        }
        t0 += 400 * SEC;
        struct ga_points pts = { .n = NPTS, .metric = mid, .ts = ts, .value = val };
        CHECK_INT(ga_engine_feed(e, &pts, out), 0);
    }
    ga_engine_get_stats(e, st);
    ga_engine_close(e);
    return 0;
}

static void engine_rows(int nb, int want_wide, uint64_t seed, struct ga_result *out,
                        struct ga_engine_stats *st)
{
    CHECK_INT(engine_rows_on(nb, 0, want_wide, seed, out, st), 0);
}

static void test_pack_unpack_round_trip(void)
{
    struct ga_result rows = { 0 };
    struct ga_engine_stats st;
    engine_rows(1, 0, 0x51ab1e5eedULL, &rows, &st);
    size_t n = rows.naggs;
    CHECK(n > 5000);
    struct ga_agg *packed = malloc(2 * n * sizeof *packed);
    size_t np = wide_pack(rows.aggs, n, packed);
    CHECK(np < n);                /* the basic methods of a bucket share records */
    CHECK_INT(ga_aggs_count(packed, np), n);
    /* the spans walk the slots exactly; every record unpacks to its rows */
    size_t i = 0, r = 0, records = 0, packs = 0;
    while (i < np) {
        struct ga_agg one[GA_WIDE_MAX];
        size_t span = ga_agg_span(&packed[i]), k = ga_agg_unpack(&packed[i], np - i, one);
        CHECK(k >= 1 && r + k <= n);
        if (k < 1 || r + k > n)
            break;
        for (size_t j = 0; j < k; j++)
            CHECK(same_row(&one[j], &rows.aggs[r + j]));
        if (packed[i].method == GA_M_WIDE) {
            records++;
            CHECK_INT(span, 1 + (k + 3) / 4);
        } else if ((packed[i].method & 0xff00) == GA_M_PACKED) {
            packs++;
            CHECK(span == 1 || span == 2);
            CHECK(one[0].granularity_ns % SEC == 0);
        } else {
            CHECK_INT(span, 1);
        }
        r += k;
        i += span;
    }
    CHECK_INT(i, np);
    CHECK_INT(r, n);
    CHECK(records > 100);         /* both kinds: part-second granularities, no count */
    CHECK(packs > 100);
    /* in place, after rows kept as they are */
    struct ga_result w = { 0 };
    CHECK_INT(ga_result_reserve(&w, 5 + np, 0), 0);
    memcpy(w.aggs, rows.aggs, 5 * sizeof *w.aggs);
    memcpy(w.aggs + 5, packed, np * sizeof *w.aggs);
    w.naggs = 5 + np;
    CHECK_INT(ga_result_narrow(&w, 5), 0);
    CHECK_INT(w.naggs, 5 + n);
    CHECK_INT(w.nrows, 5 + n);
    for (size_t j = 0; j < 5 && w.naggs == 5 + n; j++)
        CHECK(same_row(&w.aggs[j], &rows.aggs[j]));
    for (size_t j = 0; j < n && w.naggs == 5 + n; j++)
        if (!same_row(&w.aggs[5 + j], &rows.aggs[j])) {
            CHECK(same_row(&w.aggs[5 + j], &rows.aggs[j]));
            break;
        }
    free(packed);
    ga_result_free(&w);
    ga_result_free(&rows);
}

static void test_malformed_and_cut_short(void)
{
    struct ga_agg s[6];
    memset(s, 0, sizeof s);
    /* packed headers of no method or no point */
    for (int i = 0; i < 2; i++) {
        s[0] = (struct ga_agg){ .metric = 3, .method = (ga_method_t)(GA_M_PACKED | (i ? 0x12 : 0)),
                                .aux = (uint16_t)(i ? 0 : 5) };
        struct ga_agg one[GA_WIDE_MAX];
        CHECK_INT(ga_agg_span(&s[0]), 1);
        CHECK_INT(ga_agg_unpack(&s[0], 6, one), 0);
        CHECK_INT(ga_aggs_count(s, 1), 0);
    }
    static const double bad[] = { 0.0, 256.0, 1.5, -1.0, NAN, INFINITY };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s[0] = (struct ga_agg){ .metric = 3, .method = GA_M_WIDE, .granularity_ns = 60, .ts = 120,
                                .value = bad[i] };
        struct ga_agg one[GA_WIDE_MAX];
        CHECK_INT(ga_agg_span(&s[0]), 1);
        CHECK_INT(ga_agg_unpack(&s[0], 6, one), 0);
        CHECK_INT(ga_aggs_count(s, 1), 0);
    }
    /* mean, max, std (mask 0b10001001): one value slot; all 8: two */
    struct ga_agg r3[3] = { { .metric = 1, .method = GA_M_MEAN, .granularity_ns = 60, .value = 1.25 },
                            { .metric = 1, .method = GA_M_MAX, .granularity_ns = 60, .value = 2.5 },
                            { .metric = 1, .method = GA_M_STD, .granularity_ns = 60, .value = 0.5 } };
    CHECK_INT(wide_pack(r3, 3, s), 2);
    CHECK_INT((int)s[0].value, 0x89);
    CHECK_INT(ga_agg_span(&s[0]), 2);
    double tail[4];
    memcpy(tail, &s[1], sizeof tail);
    CHECK(tail[3] == 0.0);
    struct ga_agg one[GA_WIDE_MAX];
    CHECK_INT(ga_agg_unpack(&s[0], 1, one), 0);      /* cut short */
    CHECK_INT(ga_agg_unpack(&s[0], 2, one), 3);
    CHECK(same_row(&one[1], &r3[1]) && same_row(&one[2], &r3[2]));
    /* a row, then a record cut short: one row counted, the narrowing stops there */
    struct ga_result r = { 0 };
    CHECK_INT(ga_result_reserve(&r, 3, 0), 0);
    r.aggs[0] = (struct ga_agg){ .metric = 2, .method = GA_M_MEDIAN, .granularity_ns = 60, .value = 7.0 };
    r.aggs[1] = s[0];
    r.naggs = 2;
    CHECK_INT(ga_aggs_count(r.aggs, 2), 1);
    CHECK_INT(ga_result_narrow(&r, 0), 0);
    CHECK_INT(r.naggs, 1);
    CHECK_INT(r.aggs[0].method, GA_M_MEDIAN);
    /* a malformed header between rows is skipped, the rows kept */
    r.aggs[1] = (struct ga_agg){ .metric = 2, .method = GA_M_WIDE, .granularity_ns = 60 };
    r.aggs[2] = (struct ga_agg){ .metric = 2, .method = GA_M_SUM, .granularity_ns = 60, .ts = 60,
                                 .value = 3.0 };
    r.naggs = 3;
    CHECK_INT(ga_aggs_count(r.aggs, 3), 2);
    CHECK_INT(ga_result_narrow(&r, 0), 0);
    CHECK_INT(r.naggs, 2);
    CHECK_INT(r.aggs[1].method, GA_M_SUM);
    ga_result_free(&r);
}

/* Packed records by hand (engine.h's layout): basic's 8 methods in two
 * slots, mean from sum / count; 5 values (no std) in two, 2 in one; and
 * the buckets whose header does not fit (65,536 points, a start past 2106,
 * a part-second granularity) in wide records. */
static void test_packed_layout(void)
{
    const int64_t g = 60 * SEC, ts = 1700000040LL * SEC;
    double sum = 7.0, n = 3.0;
    const double vals[8] = { sum / n, sum, -1.5, 4.25, n, 2.0, 0.75, 1.0 / 3.0 };
    struct ga_agg rows[8], s[4], one[GA_WIDE_MAX];
    for (int m = 0; m < 8; m++)
        rows[m] = (struct ga_agg){ .metric = 9, .method = (ga_method_t)(GA_M_MEAN + m), .granularity_ns = g,
                                   .ts = ts, .value = vals[m] };
    memset(s, 0xa5, sizeof s);
    CHECK_INT(wide_pack(rows, 8, s), 2);
    CHECK_INT(s[0].method, GA_M_PACKED | 0xff);
    CHECK_INT(s[0].aux, 3);
    uint32_t w[2];
    memcpy(w, &s[0].granularity_ns, sizeof w);
    CHECK_INT(w[0], 60);
    CHECK_INT(w[1], 1700000040u);
    double v[6];                  /* sum min max first last std */
    memcpy(v, (const char *)s + 16, sizeof v);
    CHECK(v[0] == sum && v[1] == -1.5 && v[2] == 4.25 && v[3] == 2.0 && v[4] == 0.75 && v[5] == vals[7]);
    CHECK_INT(ga_agg_span(&s[0]), 2);
    CHECK_INT(ga_agg_unpack(&s[0], 1, one), 0);      /* cut short */
    CHECK_INT(ga_agg_unpack(&s[0], 2, one), 8);
    for (int m = 0; m < 8; m++)
        CHECK(same_row(&one[m], &rows[m]));
    /* one point: no std, 5 values still two slots; mean + count: one slot */
    rows[4].value = 1.0;
    rows[0].value = sum;
    CHECK_INT(wide_pack(rows, 7, s), 2);
    CHECK_INT(s[0].method, GA_M_PACKED | 0x7f);
    CHECK_INT(ga_agg_unpack(&s[0], 2, one), 7);
    for (int m = 0; m < 7; m++)
        CHECK(same_row(&one[m], &rows[m]));
    struct ga_agg mc[2] = { rows[0], rows[4] };
    mc[0].method = GA_M_MEAN;
    CHECK_INT(wide_pack(mc, 2, s), 1);
    double tail[2];
    memcpy(tail, (const char *)s + 16, sizeof tail);
    CHECK(tail[0] == sum && tail[1] == 0.0);         /* mean kept: no sum to make it */
    CHECK_INT(ga_agg_span(&s[0]), 1);
    CHECK_INT(ga_agg_unpack(&s[0], 1, one), 2);
    CHECK(same_row(&one[0], &mc[0]) && same_row(&one[1], &mc[1]));
    /* headers that do not fit: wide */
    for (int c = 0; c < 3; c++) {
        for (int m = 0; m < 8; m++)
            rows[m] = (struct ga_agg){ .metric = 9, .method = (ga_method_t)(GA_M_MEAN + m),
                                       .granularity_ns = c == 2 ? SEC / 2 : g,
                                       .ts = c == 1 ? ((int64_t)UINT32_MAX + 60) * SEC : ts,
                                       .value = m == 4 ? (c == 0 ? 65536.0 : 3.0) : vals[m] };
        CHECK_INT(wide_pack(rows, 8, s), 3);
        CHECK_INT(s[0].method, GA_M_WIDE);
        CHECK_INT(ga_agg_unpack(&s[0], 3, one), 8);
        for (int m = 0; m < 8; m++)
            CHECK(same_row(&one[m], &rows[m]));
    }
}

/* The CPU backend writes rows whatever want_wide says: the same rows, in
 * the same order, counted as rows. */
static void test_engine_cpu_wide(void)
{
    for (int nb = 1; nb <= 2; nb++) {
        struct ga_result a = { 0 }, b = { 0 };
        struct ga_engine_stats sa, sb;
        engine_rows(nb, 0, 0x77aa55ULL + (uint64_t)nb, &a, &sa);
        engine_rows(nb, 1, 0x77aa55ULL + (uint64_t)nb, &b, &sb);
        CHECK(a.naggs > 1000);
        CHECK_INT(b.naggs, a.naggs);
        CHECK_INT(b.want_wide, 1);
        for (size_t i = 0; i < a.naggs && b.naggs == a.naggs; i++)
            if (!same_row(&a.aggs[i], &b.aggs[i])) {
                CHECK(same_row(&a.aggs[i], &b.aggs[i]));
                break;
            }
        CHECK_INT(sb.aggs_out, sa.aggs_out);
        CHECK_INT(sa.aggs_out, a.naggs);
        CHECK_INT(a.nrows, a.naggs);
        CHECK_INT(b.nrows, b.naggs);
        ga_result_free(&a);
        ga_result_free(&b);
    }
}

/* The engine hands want_wide to each backend's own result: the CUDA
 * backend's records (emulated), appended after the CPU backend's rows,
 * unpack to what want_wide = 0 gives, in order, counted as rows. */
static void test_engine_cuda_wide(void)
{
    struct ga_result a = { 0 }, b = { 0 };
    struct ga_engine_stats sa, sb;
    int rc = engine_rows_on(2, 1, 0, 0x3c0ffeeULL, &a, &sa);
    if (rc == GA_ENOGPU) {
        harness_skip("built without CUDA (GA_ENOGPU): no CUDA backend to compare");
        ga_result_free(&a);
        return;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(engine_rows_on(2, 1, 1, 0x3c0ffeeULL, &b, &sb), 0);
    size_t records = 0;
    for (size_t i = 0; i < b.naggs; i += ga_agg_span(&b.aggs[i]))
        records += b.aggs[i].method == GA_M_WIDE || (b.aggs[i].method & 0xff00) == GA_M_PACKED;
    CHECK(records > 100);
    CHECK(b.naggs < a.naggs);
    CHECK_INT(b.nrows, a.naggs);
    CHECK_INT(sb.aggs_out, sa.aggs_out);
    CHECK_INT(ga_result_narrow(&b, 0), 0);
    CHECK_INT(b.naggs, a.naggs);
    for (size_t i = 0; i < a.naggs && b.naggs == a.naggs; i++)
        if (!same_row(&a.aggs[i], &b.aggs[i])) {
            CHECK(same_row(&a.aggs[i], &b.aggs[i]));
            break;
        }
    ga_result_free(&a);
    ga_result_free(&b);
}

void run_tests(void)
{
    ga_log_set_level(GA_LOG_ERROR);
    RUN(test_pack_unpack_round_trip);
    RUN(test_malformed_and_cut_short);
    RUN(test_packed_layout);
    RUN(test_engine_cpu_wide);
    RUN(test_engine_cuda_wide);
}
