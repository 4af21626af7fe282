/* engine_replay.c — feed batches of points through the engine API and print
 * the final state of every bucket, as `gpuaggctl resample --local` prints it.
 *
 * The differential tests (tests/engine/test_carbonara_diff.py) use it for
 * multi-batch arrival, which the CLI (one file = one batch) cannot show.
 *
 *   engine_replay --granularity G[,G..] --method M[,M..] [--timespan T[,T..]]
 *                 [--back-window N] [--threads N] [--input FILE|-] [--late FILE]
 *
 * Input: CSV `metric,timestamp,value` (header optional), timestamp in epoch
 * seconds with up to 9 decimals; a line "#batch" ends a batch; other lines
 * starting with '#' and blank lines are ignored.  Every metric gets the same
 * policy.  Durations (G, T) take ts_parse_duration's syntax.
 *
 * Output: CSV `metric,granularity,method,timestamp,value`, the last value
 * the engine reported for each bucket over all batches, sorted by metric,
 * granularity, method name, timestamp.  With timespans, each series is then
 * cut as Gnocchi's read path cuts it (buckets newer than last - timespan).
 * Late points go to --late as `metric,timestamp,value,reason`.
 * Exit status: 0, 1 on an engine error, 2 on bad usage or input. */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/engine.h"
#include "proto/base/hash.h"
#include "proto/base/hmap.h"
#include "proto/policy.h"
#include "proto/ga_err.h"
#include "proto/ts_parse.h"
#include "tools/bench/bench_opts.h"

#define NS_PER_S 1000000000LL

struct names {                     /* metric name <-> dense id */
    char **name;
    uint32_t n, cap;
    struct ga_hmap ids;            /* name's hash → id */
};

struct batch {
    size_t n, cap;
    uint32_t *metric;
    int64_t *ts;
    double *value;
};

struct row {                       /* one reported bucket */
    uint32_t metric;
    ga_method_t method;
    int64_t g, ts;
    uint64_t seq;
    double value;
};

struct rows {
    struct row *r;
    size_t n, cap;
};

static struct names g_names;
static char g_method_name[GA_M_RATE | 0x100][GA_METHOD_NAME_MAX];

static void die_oom(void)
{
    fprintf(stderr, "engine_replay: out of memory\n");
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        die_oom();
    return p;
}

/* Id of name, adding it if new; *added tells which. */
static uint32_t names_intern(struct names *t, const char *name, int *added)
{
    uint64_t h = ga_hash_fmix64(ga_hash_fnv1a(name, strlen(name)));
    struct ga_hmap_it it = ga_hmap_find(&t->ids, h);
    uint32_t v;
    while (ga_hmap_next(&it, &v)) {
        if (strcmp(t->name[v], name) == 0) {
            *added = 0;
            return v;
        }
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->name = xrealloc(t->name, t->cap * sizeof *t->name);
    }
    t->name[t->n] = strdup(name);
    if (!t->name[t->n] || ga_hmap_put(&t->ids, &it, h, t->n) < 0)
        die_oom();
    *added = 1;
    return t->n++;
}

/* "1700000000.123456789" -> ns; 0 or -1 on bad text. */
static int parse_epoch_ns(const char *s, int64_t *out)
{
    int neg = 0;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    int64_t whole = 0, frac = 0;
    int nd = 0, nf = 0;
    for (; *s >= '0' && *s <= '9'; s++, nd++) {
        if (whole > (INT64_MAX / NS_PER_S - 10) / 10)
            return -1;
        whole = whole * 10 + (*s - '0');
    }
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++, nf++) {
            if (nf == 9)
                return -1;
            frac = frac * 10 + (*s - '0');
        }
    if (*s || nd + nf == 0)
        return -1;
    for (int i = nf; i < 9; i++)
        frac *= 10;
    *out = (whole * NS_PER_S + frac) * (neg ? -1 : 1);
    return 0;
}

static void fmt_ns(char *buf, size_t len, int64_t ns)
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, len, "%s%" PRIu64 ".%09" PRIu64, sign, a / (uint64_t)NS_PER_S, a % (uint64_t)NS_PER_S);
}

static void fmt_gran(char *buf, size_t len, int64_t ns)
{
    fmt_ns(buf, len, ns);
    char *dot = strchr(buf, '.');
    char *e = buf + strlen(buf) - 1;
    while (e > dot && *e == '0')
        *e-- = '\0';
    if (e == dot)
        *e = '\0';
}

static int cmp_row(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    int c = strcmp(g_names.name[a->metric], g_names.name[b->metric]);
    if (c)
        return c;
    if (a->g != b->g)
        return a->g < b->g ? -1 : 1;
    c = strcmp(g_method_name[a->method], g_method_name[b->method]);
    if (c)
        return c;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int same_series(const struct row *a, const struct row *b)
{
    return a->metric == b->metric && a->g == b->g && a->method == b->method;
}

static const char *late_reason(uint32_t r)
{
    switch (r) {
    case GA_LATE_WINDOW: return "window";
    case GA_LATE_BEFORE_EPOCH: return "before_epoch";
    case GA_LATE_NONFINITE: return "nonfinite";
    case GA_LATE_UNKNOWN_METRIC: return "unknown_metric";
    case GA_LATE_OUT_OF_RANGE: return "out_of_range";
    default: return "?";
    }
}

/* Split "a,b,c" into at most max strdup'ed items; returns the count. */
static int split_list(char *s, char **out, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (n == max)
            return -1;
        out[n++] = tok;
    }
    return n;
}

/* The usage on f; exits with status. */
static void usage(FILE *f, int status)
{
    fprintf(f, "usage: engine_replay --granularity G[,G..] --method M[,M..] "
                    "[--timespan T[,T..]] [--back-window N] [--threads N] "
                    "[--input FILE|-] [--late FILE]\n");
    exit(status);
}

static int build_policy(struct ga_policy *p, char *grans, char *methods, char *spans,
                        long back_window)
{
    char *g[GA_POLICY_MAX_DEFS], *t[GA_POLICY_MAX_DEFS], *m[GA_POLICY_MAX_METHODS];
    int ng = split_list(grans, g, GA_POLICY_MAX_DEFS);
    int nt = spans ? split_list(spans, t, GA_POLICY_MAX_DEFS) : 0;
    int nm = split_list(methods, m, GA_POLICY_MAX_METHODS);
    if (ng <= 0 || nm <= 0 || nt < 0 || (spans && nt != ng)) {
        fprintf(stderr, "engine_replay: bad --granularity/--timespan/--method list\n");
        return -1;
    }
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "replay");
    p->back_window = back_window;
    for (int i = 0; i < ng; i++) {
        int64_t gns = 0, tns = 0;
        const char *why = "";
        if (ts_parse_duration(g[i], &gns) < 0 || (spans && ts_parse_duration(t[i], &tns) < 0)) {
            fprintf(stderr, "engine_replay: bad duration '%s'\n", spans ? t[i] : g[i]);
            return -1;
        }
        if (ga_policy_add_def(p, gns, tns, 0, &why) < 0) {
            fprintf(stderr, "engine_replay: granularity '%s': %s\n", g[i], why);
            return -1;
        }
    }
    const char *bad = NULL;
    if (ga_policy_methods_from_list(p, (const char *const *)m, nm, &bad) < 0) {
        fprintf(stderr, "engine_replay: bad method '%s'\n", bad ? bad : "?");
        return -1;
    }
    return 0;
}

static int feed_batch(struct ga_engine *e, struct batch *b, struct ga_result *res,
                      struct rows *rows, uint64_t *seq, FILE *late)
{
    struct ga_points pts = { .n = b->n, .metric = b->metric, .ts = b->ts, .value = b->value };
    ga_result_reset(res);
    int rc = ga_engine_feed(e, &pts, res);
    if (rc < 0) {
        fprintf(stderr, "engine_replay: feed: %s\n", ga_strerror(rc));
        return rc;
    }
    if (rows->n + res->naggs > rows->cap) {
        rows->cap = 2 * (rows->n + res->naggs);
        rows->r = xrealloc(rows->r, rows->cap * sizeof *rows->r);
    }
    for (size_t i = 0; i < res->naggs; i++) {
        const struct ga_agg *a = &res->aggs[i];
        rows->r[rows->n++] = (struct row){ a->metric, a->method, a->granularity_ns, a->ts,
                                           (*seq)++, a->value };
    }
    for (size_t i = 0; late && i < res->nlate; i++) {
        const struct ga_late *l = &res->late[i];
        char ts[48];
        fmt_ns(ts, sizeof ts, l->ts);
        fprintf(late, "%s,%s,%.17g,%s\n", l->metric < g_names.n ? g_names.name[l->metric] : "?",
                ts, l->value, late_reason(l->reason));
    }
    b->n = 0;
    return 0;
}

int main(int argc, char **argv)
{
    char *grans = NULL, *methods = NULL, *spans = NULL;
    const char *input = "-", *late_path = NULL;
    long back_window = 0, threads = 1;
    enum { O_GRAN = 0x100, O_METHOD, O_TIMESPAN, O_BACK, O_THREADS, O_INPUT, O_LATE };
    static const struct option lo[] = {
        { "granularity", required_argument, NULL, O_GRAN },
        { "method", required_argument, NULL, O_METHOD },
        { "timespan", required_argument, NULL, O_TIMESPAN },
        { "back-window", required_argument, NULL, O_BACK },
        { "threads", required_argument, NULL, O_THREADS },
        { "input", required_argument, NULL, O_INPUT },
        { "late", required_argument, NULL, O_LATE },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (opt) {
        case O_GRAN: grans = optarg; break;
        case O_METHOD: methods = optarg; break;
        case O_TIMESPAN: spans = optarg; break;
        case O_BACK: back_window = strtol(optarg, NULL, 10); break;
        case O_THREADS: threads = strtol(optarg, NULL, 10); break;
        case O_INPUT: input = optarg; break;
        case O_LATE: late_path = optarg; break;
        case 'h': usage(stdout, 0); break;
        default:
            bench_opt_error("engine_replay", opt, argv);
            usage(stderr, 2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "engine_replay: unexpected argument '%s'\n", argv[optind]);
        usage(stderr, 2);
    }
    if (!grans || !methods || back_window < 0 || threads < 0)
        usage(stderr, 2);

    struct ga_policy pol;
    if (build_policy(&pol, grans, methods, spans, back_window) < 0)
        return 2;
    for (int i = 0; i < pol.nmethods; i++)
        ga_method_name(pol.methods[i], g_method_name[pol.methods[i]]);

    FILE *in = strcmp(input, "-") ? fopen(input, "r") : stdin;
    FILE *late = late_path ? fopen(late_path, "w") : NULL;
    if (!in || (late_path && !late)) {
        fprintf(stderr, "engine_replay: %s: %s\n", !in ? input : late_path, strerror(errno));
        return 2;
    }

    struct ga_backend *be = NULL;
    struct ga_engine *e = NULL;
    int rc = ga_cpu_backend_open(&be, (int)threads);
    if (rc == 0)
        rc = ga_engine_open(&e, &be, 1);
    if (rc < 0) {
        fprintf(stderr, "engine_replay: engine: %s\n", ga_strerror(rc));
        return 1;
    }

    struct batch b = { 0 };
    struct rows rows = { 0 };
    struct ga_result res = { 0 };
    uint64_t seq = 0;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int status = 0;
    while (getline(&line, &cap, in) > 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!strcmp(line, "#batch")) {
            if (feed_batch(e, &b, &res, &rows, &seq, late) < 0) {
                status = 1;
                goto out;
            }
            continue;
        }
        if (!line[0] || line[0] == '#' || !strcmp(line, "metric,timestamp,value"))
            continue;
        char *c2 = strrchr(line, ','), *c1 = NULL;
        if (c2) {
            *c2 = '\0';
            c1 = strrchr(line, ',');
        }
        int64_t ts;
        char *end = NULL;
        double v = c1 ? strtod(c2 + 1, &end) : 0;
        if (!c1 || c1 == line || parse_epoch_ns(c1 + 1, &ts) < 0 || end == c2 + 1 || *end) {
            fprintf(stderr, "engine_replay: %s line %ld: expected metric,timestamp,value\n",
                    input, lineno);
            status = 2;
            goto out;
        }
        *c1 = '\0';
        int added;
        uint32_t id = names_intern(&g_names, line, &added);
        if (added && (rc = ga_engine_metric_add(e, id, &pol)) < 0) {
            fprintf(stderr, "engine_replay: metric_add %s: %s\n", line, ga_strerror(rc));
            status = 1;
            goto out;
        }
        if (b.n == b.cap) {
            b.cap = b.cap ? 2 * b.cap : 1024;
            b.metric = xrealloc(b.metric, b.cap * sizeof *b.metric);
            b.ts = xrealloc(b.ts, b.cap * sizeof *b.ts);
            b.value = xrealloc(b.value, b.cap * sizeof *b.value);
        }
        b.metric[b.n] = id;
        b.ts[b.n] = ts;
        b.value[b.n++] = v;
    }
    if (feed_batch(e, &b, &res, &rows, &seq, late) < 0) {
        status = 1;
        goto out;
    }

    /* Final state: the last report of each bucket, then the read-side cut. */
    qsort(rows.r, rows.n, sizeof *rows.r, cmp_row);
    size_t k = 0;
    for (size_t i = 0; i < rows.n; i++) {
        if (k && same_series(&rows.r[k - 1], &rows.r[i]) && rows.r[k - 1].ts == rows.r[i].ts)
            rows.r[k - 1] = rows.r[i];
        else
            rows.r[k++] = rows.r[i];
    }
    rows.n = k;
    printf("metric,granularity,method,timestamp,value\n");
    for (size_t s = 0; s < rows.n;) {
        size_t end = s;
        while (end < rows.n && same_series(&rows.r[s], &rows.r[end]))
            end++;
        int64_t span = 0;
        for (int d = 0; d < pol.ndefs; d++)
            if (pol.defs[d].granularity_ns == rows.r[s].g)
                span = pol.defs[d].timespan_ns;
        int64_t last = rows.r[end - 1].ts;
        char gbuf[48], tbuf[48];
        fmt_gran(gbuf, sizeof gbuf, rows.r[s].g);
        for (size_t i = s; i < end; i++) {
            if (span && rows.r[i].ts <= last - span)
                continue;
            fmt_ns(tbuf, sizeof tbuf, rows.r[i].ts);
            printf("%s,%s,%s,%s,%.17g\n", g_names.name[rows.r[i].metric], gbuf,
                   g_method_name[rows.r[i].method], tbuf, rows.r[i].value);
        }
        s = end;
    }
out:
    free(line);
    free(b.metric);
    free(b.ts);
    free(b.value);
    free(rows.r);
    ga_result_free(&res);
    ga_engine_close(e);
    if (in != stdin)
        fclose(in);
    if (late && fclose(late) != 0 && status == 0)
        status = 1;
    for (uint32_t i = 0; i < g_names.n; i++)
        free(g_names.name[i]);
    free(g_names.name);
    ga_hmap_free(&g_names.ids);
    return status;
}
