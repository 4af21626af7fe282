/* agg_query.c — one aggregates read: parameters, granularities, grids,
 * overlap, operations and the answer (agg_query.h), as
 * gnocchi/rest/aggregates/processor.py does them. */
#include "daemon/http/agg_query.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "daemon/http/api.h"
#include "proto/ga_err.h"
#include "storage/pg_read.h"

/* Gnocchi's error body with a structured description. */
void agg_query_error(struct http_resp *resp, int code, const char *cause, const char *reason,
                       json_t *detail)
{
    json_t *d = json_pack("{s:s}", "cause", cause);
    if (reason)
        json_object_set_new(d, "reason", json_string(reason));
    json_object_set_new(d, "detail", detail ? detail : json_null());
    http_json(resp, code, json_pack("{s:i, s:s, s:o}", "code", code, "title",
                                    code == 404 ? "Not Found" : "Bad Request", "description", d));
}

/* ---- the request ------------------------------------------------------------------ */

/* Gnocchi's validate_qs(): start, stop, granularity, needed_overlap, fill;
 * errors as {"cause": "Argument value error", "detail": NAME, "reason"}.
 * dropna_default: fill is dropna when neither fill nor needed_overlap is
 * given (/v1/aggregates; the deprecated endpoints have no default). */
int agg_query_parse_params(struct http_req *req, struct http_resp *resp, struct agg_query_params *p,
                        int dropna_default)
{
    memset(p, 0, sizeof *p);
    struct timespec tsn;
    clock_gettime(CLOCK_REALTIME, &tsn);
    int64_t now = (int64_t)tsn.tv_sec * 1000000000 + tsn.tv_nsec;
    char why[256];
    const char *s = http_arg(req, "start"), *e = http_arg(req, "stop");
    const char *g = http_arg(req, "granularity");
    const char *no = http_arg(req, "needed_overlap"), *fill = http_arg(req, "fill");
    const char *det = http_arg(req, "details");
    p->start = INT64_MIN;
    p->stop = INT64_MAX;
    p->details = det && (!strcasecmp(det, "true") || !strcmp(det, "1") || !strcasecmp(det, "yes") ||
                         !strcasecmp(det, "on"));
    p->needed_overlap = 100.0;
    if (no) {
        char *end;
        p->needed_overlap = strtod(no, &end);
        while (isspace((unsigned char)*end))
            end++;
        if (*end || end == no) {
            agg_query_error(resp, 400, "Argument value error", "Must be a number",
                            json_string("needed_overlap"));
            return 400;
        }
    }
    if (s && api_parse_time(s, now, &p->start, why, sizeof why) < 0) {
        agg_query_error(resp, 400, "Argument value error", "Must be a datetime or a timestamp",
                        json_string("start"));
        return 400;
    }
    if (e && api_parse_time(e, now, &p->stop, why, sizeof why) < 0) {
        agg_query_error(resp, 400, "Argument value error", "Must be a datetime or a timestamp",
                        json_string("stop"));
        return 400;
    }
    if (g && api_parse_span(g, &p->gran) < 0) {
        char r[160];
        snprintf(r, sizeof r, "Unable to parse timespan '%.60s' (a positive number of seconds or "
                 "'1 minute')", g);
        agg_query_error(resp, 400, "Argument value error", r, json_string("granularity"));
        return 400;
    }
    p->has_start = s != NULL;
    p->has_stop = e != NULL;
    p->fill_kind = (dropna_default && !fill && !no) ? 1 : 0;
    if (fill) {
        char *end;
        if (!strcmp(fill, "dropna"))
            p->fill_kind = 1;
        else if (!strcmp(fill, "null"))
            p->fill_kind = 2;
        else if ((p->fill = strtod(fill, &end)), *end == '\0' && end != fill)
            p->fill_kind = 3;
        else {
            agg_query_error(resp, 400, "Argument value error",
                            "Must be a float, 'dropna' or 'null'", json_string("fill"));
            return 400;
        }
    }
    return 0;
}

json_t *agg_query_triplet(int64_t t, int64_t g, double v, int is_bool)
{
    char iso[40];
    api_iso(t, iso);
    json_t *jv = is_bool ? json_boolean(v != 0) : isfinite(v) ? json_real(v) : json_null();
    return json_pack("[s, f, o]", iso, (double)g / 1e9, jv);
}

int64_t agg_query_floor(int64_t t, int64_t g)
{
    if (t == INT64_MIN)
        return t;
    int64_t r = t % g;
    return r < 0 ? t - r - g : t - r;
}

int agg_query_has_gran(const json_t *metric, int64_t g)
{
    int64_t pg[AGG_QUERY_MAX_GRANS];
    int n = api_policy_grans(json_object_get(metric, "policy"), pg, AGG_QUERY_MAX_GRANS);
    for (int i = 0; i < n; i++)
        if (pg[i] == g)
            return 1;
    return 0;
}

/* Gnocchi's lookup keys of the columns: [wildcard or metric id, agg]. */
static json_t *lookup_keys(const struct agg_refs *refs, const struct agg_query_col *cols, int ncols,
                           int by_resource)
{
    json_t *a = json_array();
    for (int c = 0; c < ncols; c++) {
        const struct agg_ref *r = &refs->r[cols[c].ref];
        json_array_append_new(a, json_pack("[s, s]", by_resource ? r->name : cols[c].mname,
                                           r->agg));
    }
    return a;
}

/* The granularities of an aggregate, descending, as processor.get_measures
 * picks them: the one asked (every column must have it), else those every
 * column has.  Returns the count, or -status with resp set. */
static int pick_grans(struct http_resp *resp, const struct agg_refs *refs,
                      const struct agg_query_col *cols,
                      int ncols, const struct agg_query_params *p, int64_t *grans)
{
    int ng = 0;
    if (p->gran) {
        grans[ng++] = p->gran;
    } else {
        int64_t g0[AGG_QUERY_MAX_GRANS];
        int n0 = ncols ? api_policy_grans(json_object_get(cols[0].metric, "policy"), g0,
                                          AGG_QUERY_MAX_GRANS) : 0;
        for (int i = 0; i < n0; i++) {
            int all = 1;
            for (int c = 1; c < ncols && all; c++)
                all = agg_query_has_gran(cols[c].metric, g0[i]);
            if (all)
                grans[ng++] = g0[i];
        }
        if (!ng) {
            json_t *d = json_array();
            for (int c = 0; c < ncols; c++)
                json_array_append_new(d, json_pack("[s, s]", cols[c].mname,
                                                   refs->r[cols[c].ref].agg));
            agg_query_error(resp, 400, "Metrics can't being aggregated", "No granularity match", d);
            return -400;
        }
    }
    for (int c = 0; c < ncols; c++) {
        const char *agg = refs->r[cols[c].ref].agg;
        if (!api_policy_has_method(json_object_get(cols[c].metric, "policy"), agg)) {
            const char *id = json_string_value(json_object_get(cols[c].metric, "id"));
            agg_query_error(resp, 404, "Metrics with unknown aggregation", NULL,
                            json_pack("[[s, s]]", id, agg));
            return -404;
        }
    }
    json_t *missing = json_array();
    for (int c = 0; c < ncols; c++)
        for (int i = 0; i < ng; i++)
            if (!agg_query_has_gran(cols[c].metric, grans[i])) {
                json_array_append_new(missing, json_pack("[s, s, f]", cols[c].mname,
                                                         refs->r[cols[c].ref].agg,
                                                         (double)grans[i] / 1e9));
                break;
            }
    if (json_array_size(missing)) {
        agg_query_error(resp, 400, "Metrics can't being aggregated", "Granularities are missing",
                        missing);
        return -400;
    }
    json_decref(missing);
    return ng;
}

/* The grid of one granularity: the union of the columns' timestamps, the
 * fill, Gnocchi's overlap rule.  0, or the HTTP status with resp set. */
static int cmp_ts(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The union of the series' times into all[] (room for s->n), ascending,
 * each once; returns the count.  Bucket starts are multiples of g, so
 * when they span few slots of g the union is a pass over a bitmap of
 * slots; otherwise (times off the multiples, or sparse over a long span)
 * a sort. */
static size_t time_union(const struct pg_read_series *s, int64_t g, int64_t *all)
{
    if (!s->n)
        return 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int aligned = 1;
    for (size_t c = 0; c < s->nseries; c++) {
        size_t a = s->off[c], b = s->off[c + 1];
        if (a == b)
            continue;
        lo = s->ts[a] < lo ? s->ts[a] : lo;
        hi = s->ts[b - 1] > hi ? s->ts[b - 1] : hi;
    }
    for (size_t i = 0; i < s->n && aligned; i++)
        aligned = (s->ts[i] - lo) % g == 0;
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    size_t slots = aligned && span / (uint64_t)g < 4 * (uint64_t)s->n + 64
                       ? (size_t)(span / (uint64_t)g) + 1 : 0;
    unsigned char *seen = slots ? calloc(slots, 1) : NULL;
    size_t nu = 0;
    if (seen) {
        for (size_t i = 0; i < s->n; i++)
            seen[(uint64_t)(s->ts[i] - lo) / (uint64_t)g] = 1;
        for (size_t k = 0; k < slots; k++)
            if (seen[k])
                all[nu++] = lo + (int64_t)k * g;
        free(seen);
        return nu;
    }
    memcpy(all, s->ts, s->n * sizeof *all);
    qsort(all, s->n, sizeof *all, cmp_ts);
    for (size_t a = 0; a < s->n; a++)
        if (!nu || all[nu - 1] != all[a])
            all[nu++] = all[a];
    return nu;
}

static int build_grid(struct http_req *req, struct http_resp *resp, const struct agg_refs *refs,
                      const struct agg_query_col *cols, int ncols, const struct agg_query_params *p,
                      int by_resource, int64_t g, size_t *used, struct agg_grid *grid)
{
    int max_points = http_server_config(req->srv)->http.max_points;
    const char **names = malloc((size_t)(ncols ? ncols : 1) * sizeof *names);
    const char **aggs = malloc((size_t)(ncols ? ncols : 1) * sizeof *aggs);
    struct pg_read_series s = { 0 };
    int64_t *all = NULL;
    int status = 0;
    if (!names || !aggs) {
        http_error(resp, 500, "out of memory");
        status = 500;
        goto out;
    }
    for (int c = 0; c < ncols; c++) {
        names[c] = json_string_value(json_object_get(cols[c].metric, "gpuagg_name"));
        aggs[c] = refs->r[cols[c].ref].agg;
    }
    char err[512];
    int rc = pg_read_series_read(http_server_pgq(req->srv), (size_t)ncols, names, aggs, g,
                             agg_query_floor(p->start, g), p->stop, (size_t)max_points - *used, &s,
                             err, sizeof err);
    if (rc == GA_ERANGE) {
        http_error(resp, 400, "more than http.max_points (%d) points: narrow start/stop, "
                   "give a granularity or fewer metrics", max_points);
        status = 400;
        goto out;
    }
    if (rc < 0) {
        api_db_error(resp, rc, err);
        status = resp->status;
        goto out;
    }
    *used += s.n;
    all = malloc((s.n ? s.n : 1) * sizeof *all);
    if (!all) {
        http_error(resp, 500, "out of memory");
        status = 500;
        goto out;
    }
    size_t nu = time_union(&s, g, all);
    if ((double)nu * ncols > 4.0 * max_points) {
        http_error(resp, 400, "%zu timestamps x %d series is over 4 x http.max_points (%d) cells: "
                   "narrow start/stop, give a granularity or fewer metrics", nu, ncols, max_points);
        status = 400;
        goto out;
    }
    grid->g = g;
    if (agg_grid_alloc(grid, nu, ncols) < 0) {
        http_error(resp, 500, "out of memory");
        status = 500;
        goto out;
    }
    memcpy(grid->t, all, nu * sizeof *all);
    double filler = p->fill_kind == 3 ? p->fill : NAN;
    for (size_t i = 0; i < nu * (size_t)ncols; i++)
        grid->v[i] = filler;
    for (int c = 0; c < ncols; c++) {
        grid->cols[c] = c;
        size_t k = 0;
        for (size_t i = s.off[c]; i < s.off[c + 1]; i++) {
            while (grid->t[k] < s.ts[i])
                k++;
            grid->v[k * (size_t)ncols + (size_t)c] = s.val[i];
        }
    }
    if (p->fill_kind == 0) {
        /* Gnocchi's overlap rule */
        size_t first = SIZE_MAX, last = 0, nover = 0;
        for (size_t i = 0; i < grid->nt; i++) {
            int full = 1;
            for (int c = 0; c < ncols; c++)
                full &= !isnan(grid->v[i * (size_t)ncols + (size_t)c]);
            if (full) {
                nover++;
                first = first == SIZE_MAX ? i : first;
                last = i;
            }
        }
        if (!nover && p->needed_overlap > 0) {
            agg_query_error(resp, 400, "Metrics can't being aggregated", "No overlap",
                            lookup_keys(refs, cols, ncols, by_resource));
            status = 400;
            goto out;
        }
        size_t lo = 0, hi = grid->nt;
        if (nover && !p->has_stop)
            hi = last + 1;
        if (nover && !p->has_start)
            lo = first;
        if (hi > lo) {
            double pct = (double)nover * 100.0 / (double)(hi - lo);
            if (pct < p->needed_overlap) {
                char r[160];
                snprintf(r, sizeof r, "Less than %f%% of datapoints overlap in this timespan "
                         "(%.2f%%)", p->needed_overlap, pct);
                agg_query_error(resp, 400, "Metrics can't being aggregated", r,
                                lookup_keys(refs, cols, ncols, by_resource));
                status = 400;
                goto out;
            }
            if (lo) {
                memmove(grid->t, grid->t + lo, (hi - lo) * sizeof *grid->t);
                memmove(grid->v, grid->v + lo * (size_t)ncols,
                        (hi - lo) * (size_t)ncols * sizeof *grid->v);
            }
            grid->nt = hi - lo;
        }
    }
out:
    free(all);
    free(names);
    free(aggs);
    pg_read_series_free(&s);
    return status;
}

/* Compute the operations over cols; the Gnocchi-shaped "measures" value
 * in *out.  0, or the HTTP status with resp set. */
int agg_query_compute(struct http_req *req, struct http_resp *resp, const json_t *ops,
                   const struct agg_refs *refs, const struct agg_query_col *cols, int ncols,
                   const struct agg_query_params *p, int by_resource, json_t **out)
{
    *out = NULL;
    int64_t grans[AGG_QUERY_MAX_GRANS];
    int ng = pick_grans(resp, refs, cols, ncols, p, grans);
    if (ng < 0)
        return -ng;
    int *col_ref = malloc((size_t)(ncols ? ncols : 1) * sizeof *col_ref);
    if (!col_ref) {
        http_error(resp, 500, "out of memory");
        return 500;
    }
    for (int c = 0; c < ncols; c++)
        col_ref[c] = cols[c].ref;
    size_t used = 0;
    json_t *res = json_object();
    json_t *aggregated = NULL;
    int status = 0;
    for (int gi = 0; gi < ng && !status; gi++) {
        struct agg_grid grid = { 0 }, outg = { 0 };
        status = build_grid(req, resp, refs, cols, ncols, p, by_resource, grans[gi], &used, &grid);
        if (status)
            goto next;
        struct agg_eval e = { .in = &grid, .col_ref = col_ref, .refs = refs };
        if (agg_eval(&e, ops, &outg) < 0) {
            if (e.unaggregable)
                agg_query_error(resp, 400, "Metrics can't being aggregated", e.why,
                                lookup_keys(refs, cols, ncols, by_resource));
            else
                agg_query_error(resp, 400, "Invalid operations", e.why, json_deep_copy(ops));
            status = 400;
            goto next;
        }
        /* the output: Gnocchi's is_aggregated keeps the first series alone */
        int nout = outg.aggregated ? (outg.nc ? 1 : 0) : outg.nc;
        for (int c = 0; c < nout; c++) {
            json_t *list;
            if (outg.aggregated) {
                if (!aggregated)
                    aggregated = json_array();
                list = aggregated;
            } else {
                const struct agg_query_col *col = &cols[outg.cols[c]];
                const char *agg = refs->r[col->ref].agg;
                json_t *parent = res;
                if (by_resource) {
                    json_t *rj = json_object_get(res, col->resource);
                    if (!rj)
                        json_object_set_new(res, col->resource, rj = json_object());
                    parent = rj;
                }
                json_t *mj = json_object_get(parent, col->mname);
                if (!mj)
                    json_object_set_new(parent, col->mname, mj = json_object());
                list = json_object_get(mj, agg);
                if (!list)
                    json_object_set_new(mj, agg, list = json_array());
            }
            for (size_t i = 0; i < outg.nt; i++) {
                double v = outg.v[i * (size_t)outg.nc + (size_t)c];
                if (p->fill_kind == 1 && !isfinite(v))
                    continue;
                json_array_append_new(list, agg_query_triplet(outg.t[i], outg.g, v, outg.is_bool));
            }
        }
    next:
        agg_grid_free(&grid);
        agg_grid_free(&outg);
    }
    free(col_ref);
    if (status) {
        json_decref(res);
        json_decref(aggregated);
        return status;
    }
    if (aggregated) {
        json_decref(res);
        res = json_pack("{s:o}", "aggregated", aggregated);
    }
    *out = res;
    return 0;
}
