/* test_ts_range.c — the accepted time range (proto/ga_time.h) at its edges.
 *
 * For every granularity of the built-in policies and 1 ns, 1 s, 1 min,
 * 1 h, 1 day and GA_GRANULARITY_MAX, the timestamps 0, -1, GA_TS_MAX - 1,
 * GA_TS_MAX, GA_TS_MAX + 1 and INT64_MAX go through the bucket arithmetic,
 * the engine (CPU backend), and both ingest point forms: the ones inside
 * the range are aggregated into buckets whose start + granularity + one
 * day (the storage partition's upper bound) fits int64; the others are
 * rejected with their reason, never aggregated.  Then the policy limits
 * that keep the window and timespan arithmetic inside int64. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include <msgpack.h>

#include "proto/base/log.h"
#include "gpu/bucket_div.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "proto/ga_time.h"
#include "proto/ingest_proto.h"
#include "proto/ts_parse.h"

#define SEC 1000000000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

static const int64_t edge_ts[] = { 0, -1, GA_TS_MAX - 1, GA_TS_MAX, GA_TS_MAX + 1, INT64_MAX };
#define NEDGE (sizeof edge_ts / sizeof edge_ts[0])

/* The granularities under test: the built-ins' and the list above. */
static size_t granularities(int64_t *g, size_t cap)
{
    static const int64_t extra[] = { 1, SEC, MIN, HOUR, DAY, GA_GRANULARITY_MAX };
    size_t n = 0;
    const struct ga_policy *p;
    for (int i = 0; (p = ga_policy_builtin_at(i)) != NULL; i++)
        for (int d = 0; d < p->ndefs && n < cap; d++)
            g[n++] = p->defs[d].granularity_ns;
    for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < cap; i++)
        g[n++] = extra[i];
    return n;
}

static void test_constants(void)
{
    char buf[TS_RFC3339_LEN + 1];
    ts_format_rfc3339(GA_TS_MAX, buf, sizeof buf);
    CHECK_STR(buf, "2200-01-01T00:00:00.000000000Z");
    int64_t ns;
    CHECK_INT(ts_parse_rfc3339(GA_TS_MAX_TEXT, strlen(GA_TS_MAX_TEXT), &ns, NULL, 0), 0);
    CHECK_INT(ns, GA_TS_MAX);
    CHECK_INT(GA_TS_MIN, 0);
    CHECK_INT(GA_GRANULARITY_MAX, 3650 * DAY);
    CHECK_INT(GA_TIMESPAN_MAX, 36500 * DAY);
    CHECK(GA_TS_IN_RANGE(0) && GA_TS_IN_RANGE(GA_TS_MAX) && !GA_TS_IN_RANGE(-1) &&
          !GA_TS_IN_RANGE(GA_TS_MAX + 1) && !GA_TS_IN_RANGE(INT64_MAX));
}

/* bucket start + granularity + one day, and the start of the next
 * day's partition, computed with overflow checks. */
static void check_bucket_fits(int64_t b, int64_t g, const char *what, int64_t ts)
{
    int64_t end, part;
    int64_t day = b / GA_NS_PER_DAY;
    if (b < 0 || __builtin_add_overflow(b, g, &end) || __builtin_add_overflow(end, DAY, &end) ||
        __builtin_mul_overflow(day, GA_NS_PER_DAY, &part) ||
        __builtin_add_overflow(part, GA_NS_PER_DAY, &part))
        harness_fail(__FILE__, __LINE__, "%s: ts %lld g %lld: bucket %lld + g + 1 day overflows",
                     what, (long long)ts, (long long)g, (long long)b);
}

static void test_bucket_edges(void)
{
    int64_t g[64];
    size_t ng = granularities(g, 64);
    CHECK(ng >= 16);
    for (size_t k = 0; k < ng; k++)
        for (size_t i = 0; i < NEDGE; i++) {
            int64_t ts = edge_ts[i];
            if (!GA_TS_IN_RANGE(ts))
                continue;                   /* never reaches the bucket math */
            int64_t b = ga_bucket_start(ts, g[k]);
            CHECK(b <= ts && ts - b < g[k] && b % g[k] == 0);
            check_bucket_fits(b, g[k], "ga_bucket_start", ts);
        }
}

/* Feed the six edge timestamps to a CPU engine with policy p; check what
 * is aggregated and what is late, and that every bucket fits. */
static void feed_edges(const struct ga_policy *p, const char *what)
{
    struct ga_backend *be;
    struct ga_engine *e;
    struct ga_result r = { 0 };
    CHECK_INT(ga_cpu_backend_open(&be, 2), 0);
    CHECK_INT(ga_engine_open(&e, &be, 1), 0);
    CHECK_INT(ga_engine_metric_add(e, 7, p), 0);
    uint32_t ids[NEDGE];
    double v[NEDGE];
    for (size_t i = 0; i < NEDGE; i++)
        ids[i] = 7, v[i] = (double)i + 0.5;
    int rc = ga_engine_feed(e, &(struct ga_points){ .n = NEDGE, .metric = ids, .ts = edge_ts,
                                                    .value = v }, &r);
    CHECK_INT(rc, 0);
    /* -1: before_epoch; GA_TS_MAX + 1 and INT64_MAX: out_of_range */
    if (r.nlate != 3)
        harness_fail(__FILE__, __LINE__, "%s: %zu late points, expected 3", what, r.nlate);
    for (size_t i = 0; i < r.nlate; i++) {
        const struct ga_late *l = &r.late[i];
        uint32_t want = l->ts < 0 ? GA_LATE_BEFORE_EPOCH : GA_LATE_OUT_OF_RANGE;
        if (l->reason != want || (l->ts != -1 && l->ts != GA_TS_MAX + 1 && l->ts != INT64_MAX))
            harness_fail(__FILE__, __LINE__, "%s: late ts %lld reason %s", what, (long long)l->ts,
                         ga_late_reason_name(l->reason));
    }
    size_t at_max = 0;
    for (size_t i = 0; i < r.naggs; i++) {
        const struct ga_agg *a = &r.aggs[i];
        if (!GA_TS_IN_RANGE(a->ts))
            harness_fail(__FILE__, __LINE__, "%s: bucket %lld outside the range", what,
                         (long long)a->ts);
        check_bucket_fits(a->ts, a->granularity_ns, what, a->ts);
        at_max += a->ts == ga_bucket_start(GA_TS_MAX, a->granularity_ns);
    }
    if (!at_max)
        harness_fail(__FILE__, __LINE__, "%s: no bucket holds GA_TS_MAX", what);
    struct ga_engine_stats es;
    ga_engine_get_stats(e, &es);
    CHECK_INT(es.points_in, NEDGE);
    CHECK_INT(es.points_aggregated, 3);
    CHECK_INT(es.late_before_epoch, 1);
    CHECK_INT(es.late_out_of_range, 2);
    struct ga_metric_stats ms;
    CHECK_INT(ga_engine_metric_stats(e, 7, &ms), 0);
    CHECK_INT(ms.late_out_of_range, 2);
    CHECK_STR(ga_late_reason_name(GA_LATE_OUT_OF_RANGE), "out_of_range");

    /* a window holding GA_TS_MAX takes a second batch at the bound */
    ga_result_reset(&r);
    int64_t ts2[2] = { GA_TS_MAX, INT64_MAX };
    CHECK_INT(ga_engine_feed(e, &(struct ga_points){ .n = 2, .metric = ids, .ts = ts2, .value = v },
                             &r), 0);
    CHECK_INT(r.nlate, 1);
    for (size_t i = 0; i < r.naggs; i++)
        check_bucket_fits(r.aggs[i].ts, r.aggs[i].granularity_ns, what, r.aggs[i].ts);
    ga_result_free(&r);
    ga_engine_close(e);
}

static void test_engine_builtin_policies(void)
{
    const struct ga_policy *p;
    int n = 0;
    for (int i = 0; (p = ga_policy_builtin_at(i)) != NULL; i++, n++)
        feed_edges(p, p->name);
    CHECK(n >= 8);
}

static void test_engine_granularities(void)
{
    static const int64_t gs[] = { 1, SEC, MIN, HOUR, DAY, GA_GRANULARITY_MAX };
    static const char *const m[] = { "mean", "count", "last", "std", "median", "rate:mean" };
    for (size_t k = 0; k < sizeof gs / sizeof gs[0]; k++) {
        struct ga_policy p = { .name = "edge" };
        CHECK_INT(ga_policy_add_def(&p, gs[k], 0, 0, NULL), 0);
        CHECK_INT(ga_policy_methods_from_list(&p, m, 6, NULL), 0);
        char what[64];
        snprintf(what, sizeof what, "granularity %lld ns", (long long)gs[k]);
        feed_edges(&p, what);
        /* with timespans and a back window as large as accepted */
        struct ga_policy q = { .name = "edge-tb" };
        CHECK_INT(ga_policy_add_def(&q, gs[k], GA_TIMESPAN_MAX / gs[k] * gs[k], 0, NULL), 0);
        CHECK_INT(ga_policy_methods_from_list(&q, m, 6, NULL), 0);
        q.back_window = GA_TIMESPAN_MAX / gs[k] - 1;
        CHECK_INT(ga_policy_check_range(&q, NULL), 0);
        feed_edges(&q, what);
    }
}

/* ---- ingest ---- */

static int decode(msgpack_sbuffer *sb, struct ing_msg *m)
{
    char err[256] = "";
    uint8_t *copy = malloc(sb->size);
    memcpy(copy, sb->data, sb->size);
    int rc = ing_decode(copy, sb->size, NULL, m, err, sizeof err);
    free(copy);
    msgpack_sbuffer_destroy(sb);
    return rc;
}

/* The batch kept exactly the in-range edges and rejected the others with
 * the documented reasons. */
static void check_edge_batch(const struct ing_batch *b, const char *form)
{
    size_t w = 0, r = 0;
    for (size_t i = 0; i < NEDGE; i++) {
        int64_t ts = edge_ts[i];
        if (GA_TS_IN_RANGE(ts)) {
            if (w >= b->n || b->ts[w] != ts)
                harness_fail(__FILE__, __LINE__, "%s: point %zu (%lld) not kept", form, i,
                             (long long)ts);
            w++;
            continue;
        }
        const char *want = ts < 0 ? "timestamp before 1970" : "timestamp after 2200-01-01T00:00:00Z";
        if (r >= b->nrejected || b->rejected[r].index != i || strcmp(b->rejected[r].reason, want))
            harness_fail(__FILE__, __LINE__, "%s: point %zu (%lld) not rejected as \"%s\"", form,
                         i, (long long)ts, want);
        r++;
    }
    CHECK_INT(b->n, 3);
    CHECK_INT(b->nrejected, 3);
}

static void test_ingest_edges(void)
{
    static const char *const names[] = { "m" };
    uint32_t counts[1] = { NEDGE }, index[NEDGE] = { 0 };
    double v[NEDGE];
    for (size_t i = 0; i < NEDGE; i++)
        v[i] = (double)i;
    for (int form = 0; form < 3; form++) {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        if (form == 0)
            ing_pack_points_friendly(&pk, 1, 1, names, counts, edge_ts, v, ING_TS_NS);
        else if (form == 1)
            ing_pack_points_columnar(&pk, 1, 1, names, index, NULL, NEDGE, edge_ts, v);
        else
            ing_pack_points_columnar(&pk, 1, 1, names, NULL, counts, NEDGE, edge_ts, v);
        struct ing_msg m;
        CHECK_INT(decode(&sb, &m), ING_POINTS);
        check_edge_batch(&m.u.points, form == 0 ? "friendly" : form == 1 ? "index" : "counts");
        ing_msg_free(&m);
    }
}

/* Other spellings of the bound: uint64 past int64, float seconds, RFC 3339. */
static void test_ingest_other_forms(void)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    static const char *const str_ts[] = {
        "2200-01-01T00:00:00Z", "2199-12-31T23:59:59.999999999Z", "2200-01-01T01:00:00+01:00",
        "2200-01-01T00:00:00.000000001Z", "2262-04-11T23:47:16.854775807Z", "2262-04-12T00:00:00Z",
    };
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "type", 4), msgpack_pack_str_with_body(&pk, "points", 6);
    msgpack_pack_str_with_body(&pk, "seq", 3), msgpack_pack_uint64(&pk, 5);
    msgpack_pack_str_with_body(&pk, "metrics", 7), msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 2);
    msgpack_pack_str_with_body(&pk, "metric", 6), msgpack_pack_str_with_body(&pk, "m", 1);
    msgpack_pack_str_with_body(&pk, "points", 6), msgpack_pack_array(&pk, 11);
    for (size_t i = 0; i < 6; i++) {                                    /* 0..5 */
        msgpack_pack_array(&pk, 2);
        msgpack_pack_str_with_body(&pk, str_ts[i], strlen(str_ts[i]));
        msgpack_pack_double(&pk, 1.0);
    }
    msgpack_pack_array(&pk, 2), msgpack_pack_double(&pk, 7258118400.0),            /* 6 */
        msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2), msgpack_pack_double(&pk, 7258118400.000002),       /* 7 */
        msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2), msgpack_pack_double(&pk, 9.3e9), msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2), msgpack_pack_uint64(&pk, (uint64_t)INT64_MAX + 1),  /* 9 */
        msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2), msgpack_pack_uint64(&pk, UINT64_MAX), msgpack_pack_double(&pk, 1.0);
    struct ing_msg m;
    CHECK_INT(decode(&sb, &m), ING_POINTS);
    const struct ing_batch *b = &m.u.points;
    CHECK_INT(b->n, 4);
    CHECK_INT(b->nrejected, 7);
    if (b->n == 4)
        CHECK(b->ts[0] == GA_TS_MAX && b->ts[1] == GA_TS_MAX - 1 && b->ts[2] == GA_TS_MAX &&
              b->ts[3] == GA_TS_MAX);
    static const uint64_t rej[] = { 3, 4, 5, 7, 8, 9, 10 };
    for (size_t i = 0; i < b->nrejected && i < 7; i++) {
        CHECK_INT(b->rejected[i].index, rej[i]);
        CHECK_STR(b->rejected[i].reason, "timestamp after 2200-01-01T00:00:00Z");
    }
    ing_msg_free(&m);
}

/* ---- policy limits ---- */

static void test_policy_limits(void)
{
    struct ga_policy p = { .name = "x" };
    const char *why = NULL;
    CHECK_INT(ga_policy_add_def(&p, GA_GRANULARITY_MAX, 0, 0, &why), 0);
    CHECK_INT(ga_policy_add_def(&p, GA_GRANULARITY_MAX + 1, 0, 0, &why), GA_EINVAL);
    CHECK_CONTAINS(why, "granularity is longer than 3650 days");
    CHECK_INT(ga_policy_add_def(&p, HOUR, GA_TIMESPAN_MAX, 0, &why), 0);
    CHECK_INT(p.defs[0].timespan_ns, GA_TIMESPAN_MAX);
    CHECK_INT(ga_policy_add_def(&p, MIN, GA_TIMESPAN_MAX + 1, 0, &why), GA_EINVAL);
    CHECK_CONTAINS(why, "timespan is longer than 36500 days");
    /* granularity x points past int64: refused, no overflow */
    CHECK_INT(ga_policy_add_def(&p, DAY, 0, INT64_MAX / 2, &why), GA_EINVAL);
    CHECK_CONTAINS(why, "granularity x points is longer than 36500 days");
    CHECK_INT(ga_policy_add_def(&p, SEC, 5 * SEC, INT64_MAX, &why), GA_EINVAL);
    CHECK_INT(ga_policy_add_def(&p, 0, GA_TIMESPAN_MAX, 1, &why), GA_EINVAL);   /* g = timespan */
    CHECK_CONTAINS(why, "3650 days");
    CHECK_INT(p.ndefs, 2);

    /* back window: (back_window + 1) x largest granularity <= GA_TIMESPAN_MAX */
    struct ga_policy q = { .name = "bw" };
    CHECK_INT(ga_policy_add_def(&q, DAY, 0, 0, NULL), 0);
    q.back_window = 36499;
    CHECK_INT(ga_policy_check_range(&q, &why), 0);
    q.back_window = 36500;
    CHECK_INT(ga_policy_check_range(&q, &why), GA_EINVAL);
    CHECK_CONTAINS(why, "back_window");
    q.back_window = INT64_MAX;
    CHECK_INT(ga_policy_check_range(&q, &why), GA_EINVAL);
    q.back_window = -1;
    CHECK_INT(ga_policy_check_range(&q, &why), GA_EINVAL);
    /* the engine refuses such a policy too */
    q.back_window = INT64_MAX;
    const char *const m[] = { "mean" };
    CHECK_INT(ga_policy_methods_from_list(&q, m, 1, NULL), 0);
    struct ga_backend *be;
    struct ga_engine *e;
    CHECK_INT(ga_cpu_backend_open(&be, 1), 0);
    CHECK_INT(ga_engine_open(&e, &be, 1), 0);
    CHECK(ga_engine_metric_add(e, 1, &q) < 0);
    ga_engine_close(e);
    /* every built-in is inside the limits */
    const struct ga_policy *b;
    for (int i = 0; (b = ga_policy_builtin_at(i)) != NULL; i++)
        CHECK_INT(ga_policy_check_range(b, NULL), 0);
}

/* A window put with a point past GA_TS_MAX is refused. */
static void test_window_put(void)
{
    struct ga_backend *be;
    struct ga_engine *e;
    CHECK_INT(ga_cpu_backend_open(&be, 1), 0);
    CHECK_INT(ga_engine_open(&e, &be, 1), 0);
    const struct ga_policy *p = ga_policy_builtin("low");
    int64_t ts[2] = { 0, GA_TS_MAX };
    double v[2] = { 1, 2 };
    struct ga_window w = { .n = 2, .ts = ts, .value = v };
    CHECK_INT(ga_engine_window_put(e, 3, p, &w), 0);
    ts[1] = GA_TS_MAX + 1;
    CHECK_INT(ga_engine_window_put(e, 4, p, &w), GA_EINVAL);
    ga_engine_close(e);
}

void run_tests(void)
{
    ga_log_set_level(GA_LOG_ERROR);
    RUN(test_constants);
    RUN(test_bucket_edges);
    RUN(test_engine_builtin_policies);
    RUN(test_engine_granularities);
    RUN(test_ingest_edges);
    RUN(test_ingest_other_forms);
    RUN(test_policy_limits);
    RUN(test_window_put);
}
