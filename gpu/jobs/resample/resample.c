/* resample.c — CSV points → engine → sorted roll-ups (see resample.h). */
#include "gpu/jobs/resample/resample.h"

#include <stdlib.h>
#include <string.h>

#include "proto/csv_points.h"
#include "proto/ga_err.h"
#include "proto/ts_parse.h"

/* ---- the policy ------------------------------------------------------------ */

static int bad(char *err, size_t errlen, const char *prefix, const char *field, const char *fmt,
               const char *arg)
{
    int k = snprintf(err, errlen, "%s%s: ", prefix ? prefix : "", field);
    if (k >= 0 && (size_t)k < errlen)
        snprintf(err + k, errlen - (size_t)k, fmt, arg);
    return GA_EBADARG;
}

/* Split a comma list in place into at most max items; -1 past max. */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            return -1;
        items[n++] = tok;
    }
    return n;
}

int ga_resample_policy(const struct ga_resample_spec *s, const char *prefix,
                       struct ga_policy *p, char *err, size_t errlen)
{
    char gbuf[1024], tbuf[1024], mbuf[4096];
    char *gs[GA_POLICY_MAX_DEFS + 1], *tsp[GA_POLICY_MAX_DEFS + 1], *ms[GA_POLICY_MAX_METHODS + 1];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "resample");
    if (!s->granularity || !*s->granularity)
        return bad(err, errlen, prefix, "granularity", "%s", "is required");
    if (!s->method || !*s->method)
        return bad(err, errlen, prefix, "method", "%s", "is required");
    if (s->back_window < 0 || s->back_window > INT32_MAX)
        return bad(err, errlen, prefix, "back-window", "%s", "must be a whole number >= 0");
    p->back_window = s->back_window;
    snprintf(gbuf, sizeof gbuf, "%s", s->granularity);
    int ng = split_list(gbuf, gs, GA_POLICY_MAX_DEFS);
    if (ng <= 0)
        return bad(err, errlen, prefix, "granularity", "\"%s\": give 1 to 16 durations",
                   s->granularity);
    int nt = 0;
    if (s->timespan && *s->timespan) {
        snprintf(tbuf, sizeof tbuf, "%s", s->timespan);
        nt = split_list(tbuf, tsp, GA_POLICY_MAX_DEFS);
        if (nt != ng)
            return bad(err, errlen, prefix, "timespan", "\"%s\": give one per granularity",
                       s->timespan);
    }
    for (int i = 0; i < ng; i++) {
        int64_t g, t = 0;
        const char *why = "";
        if (ts_parse_duration(gs[i], &g) || g <= 0)
            return bad(err, errlen, prefix, "granularity", "\"%s\" is not a positive duration",
                       gs[i]);
        if (nt && ts_parse_duration(tsp[i], &t))
            return bad(err, errlen, prefix, "timespan", "\"%s\" is not a duration", tsp[i]);
        if (ga_policy_add_def(p, g, t, 0, &why)) {
            char what[160];
            snprintf(what, sizeof what, "\"%.60s\": %.90s", gs[i], why);
            return bad(err, errlen, prefix, "granularity", "%s", what);
        }
    }
    snprintf(mbuf, sizeof mbuf, "%s", s->method);
    int nm = split_list(mbuf, ms, GA_POLICY_MAX_METHODS);
    const char *badm = NULL;
    if (nm <= 0)
        return bad(err, errlen, prefix, "method", "\"%s\": give at least one method", s->method);
    if (ga_policy_methods_from_list(p, (const char *const *)ms, nm, &badm))
        return bad(err, errlen, prefix, "method", "unknown aggregation method \"%s\"",
                   badm ? badm : "?");
    if (p->nmethods == 0)
        return bad(err, errlen, prefix, "method", "\"%s\" leaves no method", s->method);
    const char *why;
    if (ga_policy_check_range(p, &why) < 0)
        return bad(err, errlen, prefix, "back-window", "%s", why);
    return 0;
}

/* ---- the final state -------------------------------------------------------- */

struct sort_ctx {
    const struct ga_agg *rows;
    const uint32_t *name_rank;
    const uint16_t *method_rank;
    char **names;
};

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
    const struct sort_ctx *c = arg;
    size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
    const struct ga_agg *a = &c->rows[ia], *b = &c->rows[ib];
    uint32_t na = c->name_rank[a->metric], nb = c->name_rank[b->metric];
    if (na != nb)
        return na < nb ? -1 : 1;
    if (a->granularity_ns != b->granularity_ns)
        return a->granularity_ns < b->granularity_ns ? -1 : 1;
    uint16_t ma = c->method_rank[a->method], mb = c->method_rank[b->method];
    if (ma != mb)
        return ma < mb ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return ia < ib ? -1 : ia > ib;            /* arrival: the later feed wins */
}

static int cmp_name_idx(const void *a, const void *b, void *arg)
{
    char **names = arg;
    return strcmp(names[*(const uint32_t *)a], names[*(const uint32_t *)b]);
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

/* Methods in byte order of their names: rank[m] for each method of p. */
static void method_ranks(const struct ga_policy *p, uint16_t *mrank)
{
    char names[GA_POLICY_MAX_METHODS][GA_METHOD_NAME_MAX];
    int mo[GA_POLICY_MAX_METHODS];
    for (int i = 0; i < p->nmethods; i++) {          /* insertion sort of a few names */
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
}

static void put_row(FILE *out, int json, int first, const char *metric, const char *gbuf,
                    const char *mname, const char *tbuf, double value)
{
    if (json) {
        fputs(first ? "\n  {\"metric\": " : ",\n  {\"metric\": ", out);
        csv_write_json_string(out, metric);
        fprintf(out, ", \"granularity\": %s, \"method\": \"%s\", \"timestamp\": %s, "
                "\"value\": ", gbuf, mname, tbuf);
        put_value(out, value, 1);
        fputs("}", out);
    } else {
        csv_write_field(out, metric);
        fprintf(out, ",%s,%s,%s,", gbuf, mname, tbuf);
        put_value(out, value, 0);
        fputc('\n', out);
    }
}

/* Sort, keep each bucket's last value, truncate by timespan, print. */
static int write_rows(const struct ga_result *res, const struct csv_input *in,
                      const struct ga_policy *p, int json, FILE *out, size_t *nrows)
{
    int rc = GA_ENOMEM;
    size_t *idx = malloc((res->naggs + 1) * sizeof *idx);
    uint32_t *order = malloc((in->nnames + 1) * sizeof *order);
    uint32_t *rank = malloc((in->nnames + 1) * sizeof *rank);
    uint16_t *mrank = calloc((GA_M_RATE | 0xff) + 1, sizeof *mrank);
    if (!idx || !order || !rank || !mrank)
        goto out;
    for (uint32_t i = 0; i < in->nnames; i++)
        order[i] = i;
    qsort_r(order, in->nnames, sizeof *order, cmp_name_idx, in->names);
    for (uint32_t i = 0; i < in->nnames; i++)
        rank[order[i]] = i;
    method_ranks(p, mrank);
    for (size_t i = 0; i < res->naggs; i++)
        idx[i] = i;
    struct sort_ctx sc = { res->aggs, rank, mrank, in->names };
    qsort_r(idx, res->naggs, sizeof *idx, cmp_rows, &sc);

    fputs(json ? "[" : "metric,granularity,method,timestamp,value\n", out);
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
            put_row(out, json, first, in->names[a->metric], gbuf, mname,
                    csv_format_ns(a->ts, tbuf), a->value);
            first = 0;
            (*nrows)++;
        }
        g0 = g1;
    }
    if (json)
        fputs(first ? "]\n" : "\n]\n", out);
    rc = fflush(out) == 0 && !ferror(out) ? 0 : GA_EIO;
out:
    free(idx);
    free(order);
    free(rank);
    free(mrank);
    return rc;
}

/* ---- the run ------------------------------------------------------------------ */

/* Points the engine would refuse, reported with their line; returns how many. */
static size_t report_rejected(const struct csv_input *in, const struct ga_resample_io *io)
{
    size_t n = 0;
    const char *pre = io->reject_prefix ? io->reject_prefix : "";
    for (size_t i = 0; i < in->n; i++) {
        const char *why = NULL;
        if (in->ts[i] < GA_TS_MIN)
            why = "timestamp before 1970-01-01T00:00:00Z";
        else if (in->ts[i] > GA_TS_MAX)
            why = "timestamp after " GA_TS_MAX_TEXT;
        else if (!(in->value[i] - in->value[i] == 0))
            why = "value is not finite (NaN or Inf)";
        if (!why)
            continue;
        n++;
        if (io->rejected)
            fprintf(io->rejected, "%sline %zu: %s: point rejected\n", pre, in->line[i], why);
    }
    return n;
}

static void report_late(const struct csv_input *in, const struct ga_result *res, size_t from,
                        FILE *f, size_t *nlate)
{
    for (size_t k = from; k < res->nlate; k++) {
        const struct ga_late *l = &res->late[k];
        if (l->reason != GA_LATE_WINDOW)
            continue;                          /* rejected: reported with its line */
        (*nlate)++;
        if (!f)
            continue;
        char tb[32];
        fputs("late,", f);
        csv_write_field(f, in->names[l->metric]);
        fprintf(f, ",%s,%.17g,window\n", csv_format_ns(l->ts, tb), l->value);
    }
}

int ga_resample_run(const struct ga_policy *p, struct ga_backend *backend, int threads,
                    const struct ga_resample_io *io, struct ga_resample_stats *st, char *err,
                    size_t errlen)
{
    struct csv_input in = { 0 };
    struct ga_result res = { 0 };
    struct ga_engine *e = NULL;
    struct ga_resample_stats s = { 0 };
    int rc = csv_read_points(io->in, &in, err, errlen);
    if (rc) {
        if (backend)
            backend->ops->close(backend);
        if (rc != GA_EINVAL)
            snprintf(err, errlen, "%s", ga_strerror(rc));
        goto out;
    }
    s.points = in.n;
    s.rejected = report_rejected(&in, io);
    if (!backend)
        rc = ga_cpu_backend_open(&backend, threads);
    if (!rc)
        rc = ga_engine_open(&e, &backend, 1);
    for (size_t m = 0; !rc && m < in.nnames; m++)
        rc = ga_engine_metric_add(e, (uint32_t)m, p);
    size_t from = 0;
    for (size_t bi = 0; !rc && bi < in.nbatches; bi++) {
        size_t to = in.batch_end[bi], late0 = res.nlate;
        struct ga_points pts = { .n = to - from, .metric = in.metric + from,
                                 .ts = in.ts + from, .value = in.value + from };
        rc = ga_engine_feed(e, &pts, &res);
        if (!rc)
            report_late(&in, &res, late0, io->late, &s.late);
        if (!rc && io->progress && io->progress(io->progress_arg, 90.0 * (double)(bi + 1) /
                                                (double)in.nbatches))
            rc = GA_ECANCELED;
        from = to;
    }
    if (!rc)
        rc = write_rows(&res, &in, p, io->json, io->out, &s.rows);
    if (rc)
        snprintf(err, errlen, "%s", ga_strerror(rc));
out:
    ga_engine_close(e);
    ga_result_free(&res);
    csv_input_free(&in);
    if (st)
        *st = s;
    return rc;
}
