/* resample.c — `gpuaggctl resample --local` (see resample.h).
 *
 * The whole file is read, each batch ("#batch" lines separate them; without
 * any the file is one batch) is fed to a CPU engine in arrival order, and
 * the final value of every bucket is written: the rows of all feeds, a later
 * row for a bucket replacing an earlier one, then Gnocchi's read-side
 * timespan truncation per (metric, granularity, method). */
#include "tools/gpuaggctl/resample.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "tools/gpuaggctl/csv_points.h"

static const char usage[] =
"usage: gpuaggctl resample --local --granularity G[,G...] --method M[,M...]\n"
"                          [--timespan T[,T...]] [--back-window N] [--threads N]\n"
"                          [--input FILE|-] [--json]\n"
"\n"
"Aggregate the points of a CSV file with Gnocchi's archive-policy semantics\n"
"(docs/SEMANTICS.md), in this process, and print every bucket's final value.\n"
"\n"
"  --granularity  durations: seconds (\"60\", \"0.5\") or with a unit (\"5min\")\n"
"  --method       mean sum min max count first last std median Npct (N 1..99)\n"
"                 and rate:<any of those>; \"*\" all; \"+m\"/\"-m\" edit the default\n"
"  --timespan     one per granularity, 0 = unbounded (default: all unbounded)\n"
"  --back-window  blocks of the largest granularity a late point may reach back\n"
"                 (matters across batches only; default 0)\n"
"  --threads      worker threads (default: one per core)\n"
"  --input        the CSV (default: standard input)\n"
"  --json         JSON instead of CSV\n"
"\n"
"Input: header \"metric,timestamp,value\"; timestamp in epoch seconds with up\n"
"to 9 decimals or RFC 3339; a line \"#batch\" ends a batch, other lines\n"
"starting with '#' are comments.\n"
"Output CSV: header \"metric,granularity,method,timestamp,value\"; granularity\n"
"in seconds, timestamp (bucket start) in epoch seconds with 9 decimals, value\n"
"with 17 significant digits (\"inf\", \"-inf\", \"nan\" if the arithmetic gives\n"
"them); rows sorted by metric, granularity, method (byte order of the names),\n"
"timestamp.\n"
"Output JSON: one array of objects, in the same order:\n"
"  [{\"metric\": \"cpu\", \"granularity\": 60, \"method\": \"mean\",\n"
"    \"timestamp\": 1700000040.000000000, \"value\": 0.5}, ...]\n"
"  (a non-finite value is the string \"inf\", \"-inf\" or \"nan\").\n"
"Late points (older than the back window when their batch came) are not\n"
"aggregated; each is reported on stderr as \"late,METRIC,TIMESTAMP,VALUE,window\".\n"
"Exit status: 0 ok; 1 bad input (a malformed line: nothing is written; a\n"
"point before 1970 or with a NaN/Inf value: reported with its line number,\n"
"the other points are aggregated and written); 2 usage error.\n";

struct opts {
    const char *gran, *method, *timespan, *input;
    int64_t back_window;
    int threads, json;
};

static int usage_error(FILE *err, const char *fmt, const char *arg)
{
    fputs("gpuaggctl resample: ", err);
    fprintf(err, fmt, arg);
    fputs("\n(see gpuaggctl resample --help)\n", err);
    return 2;
}

/* "--name value" or "--name=value"; returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == 0 && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o, FILE *out, FILE *err)
{
    *o = (struct opts){ .input = "-" };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int64_t n;
        if (strcmp(a, "--local") == 0)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, out);
            return 0;
        }
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if ((v = opt_value(argc, argv, &i, "--granularity"))) {
            o->gran = v;
        } else if ((v = opt_value(argc, argv, &i, "--method"))) {
            o->method = v;
        } else if ((v = opt_value(argc, argv, &i, "--timespan"))) {
            o->timespan = v;
        } else if ((v = opt_value(argc, argv, &i, "--input"))) {
            o->input = v;
        } else if ((v = opt_value(argc, argv, &i, "--back-window"))) {
            if (parse_int(v, 0, INT32_MAX, &o->back_window))
                return usage_error(err, "--back-window: \"%s\" is not a whole number >= 0", v);
        } else if ((v = opt_value(argc, argv, &i, "--threads"))) {
            if (parse_int(v, 1, 1024, &n))
                return usage_error(err, "--threads: \"%s\" is not a number in 1..1024", v);
            o->threads = (int)n;
        } else {
            return usage_error(err, "unknown or incomplete option \"%s\"", a);
        }
    }
    if (!o->gran)
        return usage_error(err, "%s", "--granularity is required");
    if (!o->method)
        return usage_error(err, "%s", "--method is required");
    return -1;                                 /* go on */
}

/* Split a comma list in place into at most max items. */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (n == max)
            return -1;
        items[n++] = tok;
    }
    return n;
}

static int build_policy(const struct opts *o, struct ga_policy *p, FILE *err)
{
    char gbuf[1024], tbuf[1024], mbuf[4096];
    char *gs[GA_POLICY_MAX_DEFS + 1], *tsp[GA_POLICY_MAX_DEFS + 1], *ms[GA_POLICY_MAX_METHODS + 1];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "resample");
    p->back_window = o->back_window;
    snprintf(gbuf, sizeof gbuf, "%s", o->gran);
    int ng = split_list(gbuf, gs, GA_POLICY_MAX_DEFS);
    if (ng <= 0)
        return usage_error(err, "--granularity: \"%s\": give 1 to 16 durations", o->gran);
    int nt = 0;
    if (o->timespan) {
        snprintf(tbuf, sizeof tbuf, "%s", o->timespan);
        nt = split_list(tbuf, tsp, GA_POLICY_MAX_DEFS);
        if (nt != ng)
            return usage_error(err, "--timespan: \"%s\": give one per granularity", o->timespan);
    }
    for (int i = 0; i < ng; i++) {
        int64_t g, t = 0;
        const char *why = "";
        if (ga_parse_duration(gs[i], &g) || g <= 0)
            return usage_error(err, "--granularity: \"%s\" is not a positive duration", gs[i]);
        if (nt && ga_parse_duration(tsp[i], &t))
            return usage_error(err, "--timespan: \"%s\" is not a duration", tsp[i]);
        if (ga_policy_add_def(p, g, t, 0, &why)) {
            fprintf(err, "gpuaggctl resample: granularity %s: %s\n", gs[i], why);
            return 2;
        }
    }
    snprintf(mbuf, sizeof mbuf, "%s", o->method);
    int nm = split_list(mbuf, ms, GA_POLICY_MAX_METHODS);
    const char *bad = NULL;
    if (nm <= 0)
        return usage_error(err, "--method: \"%s\": give at least one method", o->method);
    if (ga_policy_methods_from_list(p, (const char *const *)ms, nm, &bad))
        return usage_error(err, "--method: unknown aggregation method \"%s\"", bad ? bad : "?");
    if (p->nmethods == 0)
        return usage_error(err, "--method: \"%s\" leaves no method", o->method);
    return -1;
}

/* ---- final state ---------------------------------------------------------- */

struct sort_ctx {
    const struct ga_agg *rows;
    const uint32_t *name_rank;
    const uint16_t *method_rank;
};
static struct sort_ctx sctx;                  /* qsort has no context argument */

static int cmp_rows(const void *pa, const void *pb)
{
    size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
    const struct ga_agg *a = &sctx.rows[ia], *b = &sctx.rows[ib];
    uint32_t na = sctx.name_rank[a->metric], nb = sctx.name_rank[b->metric];
    if (na != nb)
        return na < nb ? -1 : 1;
    if (a->granularity_ns != b->granularity_ns)
        return a->granularity_ns < b->granularity_ns ? -1 : 1;
    uint16_t ma = sctx.method_rank[a->method], mb = sctx.method_rank[b->method];
    if (ma != mb)
        return ma < mb ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return ia < ib ? -1 : ia > ib;            /* arrival: the later feed wins */
}

static char **name_tab;
static int cmp_name_idx(const void *a, const void *b)
{
    return strcmp(name_tab[*(const uint32_t *)a], name_tab[*(const uint32_t *)b]);
}

static int same_key(const struct ga_agg *a, const struct ga_agg *b)
{
    return a->metric == b->metric && a->granularity_ns == b->granularity_ns &&
           a->method == b->method;
}

static int64_t timespan_of(const struct ga_policy *p, int64_t g)
{
    for (int d = 0; d < p->ndefs; d++)
        if (p->defs[d].granularity_ns == g)
            return p->defs[d].timespan_ns;
    return 0;
}

static void put_value(FILE *out, double v, int json)
{
    if (v != v)
        fputs(json ? "\"nan\"" : "nan", out);
    else if (v == 1.0 / 0.0)
        fputs(json ? "\"inf\"" : "inf", out);
    else if (v == -1.0 / 0.0)
        fputs(json ? "\"-inf\"" : "-inf", out);
    else
        fprintf(out, "%.17g", v);
}

/* Sort, keep each bucket's last value, truncate by timespan, print. */
static int write_rows(const struct ga_result *res, const struct csv_input *in,
                      const struct ga_policy *p, int json, FILE *out)
{
    int rc = GA_ENOMEM;
    size_t *idx = malloc((res->naggs + 1) * sizeof *idx);
    uint32_t *order = malloc((in->nnames + 1) * sizeof *order);
    uint32_t *rank = malloc((in->nnames + 1) * sizeof *rank);
    static uint16_t mrank[(GA_M_RATE | 0xff) + 1];
    if (!idx || !order || !rank)
        goto out;
    for (uint32_t i = 0; i < in->nnames; i++)
        order[i] = i;
    name_tab = in->names;
    qsort(order, in->nnames, sizeof *order, cmp_name_idx);
    for (uint32_t i = 0; i < in->nnames; i++)
        rank[order[i]] = i;
    /* methods by name: insertion sort of the policy's few methods */
    char names[GA_POLICY_MAX_METHODS][GA_METHOD_NAME_MAX];
    int mo[GA_POLICY_MAX_METHODS];
    for (int i = 0; i < p->nmethods; i++) {
        ga_method_name(p->methods[i], names[i]);
        int j = i;
        while (j > 0 && strcmp(names[mo[j - 1]], names[i]) > 0) {
            mo[j] = mo[j - 1];
            j--;
        }
        mo[j] = i;
    }
    for (int i = 0; i < p->nmethods; i++)
        mrank[p->methods[mo[i]]] = (uint16_t)i;
    for (size_t i = 0; i < res->naggs; i++)
        idx[i] = i;
    sctx = (struct sort_ctx){ res->aggs, rank, mrank };
    qsort(idx, res->naggs, sizeof *idx, cmp_rows);

    if (json)
        fputs("[", out);
    else
        fputs("metric,granularity,method,timestamp,value\n", out);
    int first = 1;
    size_t g0 = 0;                             /* start of the (metric, g, method) group */
    while (g0 < res->naggs) {
        const struct ga_agg *head = &res->aggs[idx[g0]];
        size_t g1 = g0;
        while (g1 < res->naggs && same_key(&res->aggs[idx[g1]], head))
            g1++;
        int64_t tspan = timespan_of(p, head->granularity_ns);
        int64_t newest = res->aggs[idx[g1 - 1]].ts;
        char mname[GA_METHOD_NAME_MAX], gbuf[32], tbuf[32];
        ga_method_name(head->method, mname);
        csv_format_seconds(head->granularity_ns, gbuf);
        for (size_t k = g0; k < g1; k++) {
            const struct ga_agg *a = &res->aggs[idx[k]];
            if (k + 1 < g1 && res->aggs[idx[k + 1]].ts == a->ts)
                continue;                      /* a later feed rewrote this bucket */
            if (tspan && a->ts <= newest - tspan)
                continue;                      /* Gnocchi's read-side truncation */
            const char *metric = in->names[a->metric];
            csv_format_ns(a->ts, tbuf);
            if (json) {
                fputs(first ? "\n  {\"metric\": " : ",\n  {\"metric\": ", out);
                csv_write_json_string(out, metric);
                fprintf(out, ", \"granularity\": %s, \"method\": \"%s\", \"timestamp\": %s, "
                        "\"value\": ", gbuf, mname, tbuf);
                put_value(out, a->value, 1);
                fputs("}", out);
            } else {
                csv_write_field(out, metric);
                fprintf(out, ",%s,%s,%s,", gbuf, mname, tbuf);
                put_value(out, a->value, 0);
                fputc('\n', out);
            }
            first = 0;
        }
        g0 = g1;
    }
    if (json)
        fputs(first ? "]\n" : "\n]\n", out);
    rc = fflush(out) == 0 ? 0 : GA_EIO;
out:
    free(idx);
    free(order);
    free(rank);
    return rc;
}

/* ---- the command ---------------------------------------------------------- */

static int resample_main(int argc, char **argv, FILE *out, FILE *err)
{
    struct opts o;
    struct ga_policy pol;
    int rc = parse_opts(argc, argv, &o, out, err);
    if (rc >= 0)
        return rc;
    rc = build_policy(&o, &pol, err);
    if (rc >= 0)
        return rc;

    int status = 1;
    struct csv_input in = { 0 };
    struct ga_result res = { 0 };
    struct ga_engine *e = NULL;
    char emsg[512] = "";
    FILE *f = strcmp(o.input, "-") == 0 ? stdin : fopen(o.input, "r");
    if (!f) {
        fprintf(err, "gpuaggctl resample: %s: %s\n", o.input, strerror(errno));
        return 1;
    }
    rc = csv_read_points(f, &in, emsg, sizeof emsg);
    if (f != stdin)
        fclose(f);
    if (rc) {
        fprintf(err, "gpuaggctl resample: %s: %s\n", strcmp(o.input, "-") ? o.input : "stdin",
                rc == GA_ENOMEM ? "out of memory" : emsg);
        goto out;
    }
    int bad = 0;
    for (size_t i = 0; i < in.n; i++) {
        if (in.ts[i] < 0) {
            fprintf(err, "gpuaggctl resample: line %zu: timestamp before 1970-01-01T00:00:00Z: "
                    "point rejected\n", in.line[i]);
            bad = 1;
        } else if (!(in.value[i] - in.value[i] == 0)) {
            fprintf(err, "gpuaggctl resample: line %zu: value is not finite (NaN or Inf): point "
                    "rejected\n", in.line[i]);
            bad = 1;
        }
    }
    ga_log_set_level(GA_LOG_ERROR);            /* late points are listed below */
    struct ga_backend *b;
    rc = ga_cpu_backend_open(&b, o.threads);
    if (!rc)
        rc = ga_engine_open(&e, &b, 1);
    for (size_t m = 0; !rc && m < in.nnames; m++)
        rc = ga_engine_metric_add(e, (uint32_t)m, &pol);
    size_t from = 0;
    for (size_t bi = 0; !rc && bi < in.nbatches; bi++) {
        size_t to = in.batch_end[bi], late0 = res.nlate;
        struct ga_points pts = { to - from, in.metric + from, in.ts + from, in.value + from };
        rc = ga_engine_feed(e, &pts, &res);
        for (size_t k = late0; !rc && k < res.nlate; k++) {
            const struct ga_late *l = &res.late[k];
            if (l->reason != GA_LATE_WINDOW)
                continue;                      /* reported above, with the line */
            char tb[32];
            fputs("late,", err);
            csv_write_field(err, in.names[l->metric]);
            fprintf(err, ",%s,%.17g,window\n", csv_format_ns(l->ts, tb), l->value);
        }
        from = to;
    }
    if (!rc)
        rc = write_rows(&res, &in, &pol, o.json, out);
    if (rc) {
        fprintf(err, "gpuaggctl resample: %s\n", ga_strerror(rc));
        goto out;
    }
    status = bad ? 1 : 0;
out:
    ga_engine_close(e);
    ga_result_free(&res);
    csv_input_free(&in);
    return status;
}

int ctl_resample_local(int argc, char **argv)
{
    return resample_main(argc, argv, stdout, stderr);
}
