/* api_aggregation.c — the deprecated /v1/aggregation/metric and
 * /v1/aggregation/resource/{type}/metric/{name} reads (Gnocchi's
 * AggregationController; docs/API.md "The deprecated aggregation reads"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/agg_eval.h"
#include "daemon/http/agg_query.h"
#include "daemon/http/agg_schema.h"
#include "daemon/http/agg_series.h"
#include "daemon/http/api.h"
#include "daemon/http/api_resource.h"
#include "daemon/http/http_routes.h"
#include "proto/ga_err.h"
#include "storage/pg_read.h"

/* The measures of one metric, as Gnocchi answers the deprecated reads for
 * a single metric: its stored series at every granularity asked, the
 * coarsest first, resampled when resample_ns.  0, or the status. */
static int single_metric(struct http_req *req, struct http_resp *resp, const json_t *row,
                         const char *agg, const int64_t *grans, int ng,
                         const struct agg_query_params *p, int64_t resample_ns, json_t *out)
{
    int max_points = http_server_config(req->srv)->http.max_points;
    size_t total = 0;
    for (int i = 0; i < ng; i++) {
        int64_t g = grans[i];
        char err[512];
        int64_t from = p->start, rg = resample_ns ? resample_ns : g;
        int64_t stop = p->stop;
        if (resample_ns && stop != INT64_MAX)
            stop = agg_query_floor(stop - 1, rg) + rg;
        const char *name = json_string_value(json_object_get(row, "gpuagg_name"));
        struct pg_read_series s;
        int rc = pg_read_series_read(http_server_pgq(req->srv), 1, &name, &agg, g,
                                 agg_query_floor(from, rg), stop, (size_t)max_points - total,
                                 &s, err, sizeof err);
        if (rc == GA_ERANGE) {
            http_error(resp, 400, "more than http.max_points (%d) points: narrow start/stop or "
                       "give a granularity", max_points);
            return 400;
        }
        if (rc < 0) {
            api_db_error(resp, rc, err);
            return resp->status;
        }
        total += s.n;
        size_t on = s.n;
        if (resample_ns) {
            rc = agg_resample(agg, s.ts, s.val, s.n, resample_ns, s.ts, s.val, &on);
            if (rc < 0) {
                pg_read_series_free(&s);
                http_error(resp, 400, "resample: no aggregation method '%s' to resample with", agg);
                return 400;
            }
        }
        for (size_t k = 0; k < on; k++)
            if (s.ts[k] >= agg_query_floor(from, rg) && s.ts[k] < p->stop)
                json_array_append_new(out, agg_query_triplet(s.ts[k], rg, s.val[k], 0));
        pg_read_series_free(&s);
    }
    return 0;
}

/* Gnocchi's AggregationController.get_cross_metric_measures_from_objs over
 * the metric rows (an array): 0 with the answer's list in *res (new
 * reference), or the HTTP status with resp set. */
static int cross_metric(struct http_req *req, struct http_resp *resp, const json_t *rows,
                        json_t **res)
{
    *res = NULL;
    const char *agg = http_arg(req, "aggregation"), *re = http_arg(req, "reaggregation");
    const char *rs = http_arg(req, "resample");
    if (!agg)
        agg = "mean";
    if (!re)
        re = agg;
    struct agg_query_params p;
    if (agg_query_parse_params(req, resp, &p, 0))
        return 400;
    size_t nm = json_array_size(rows);
    if (!nm) {
        *res = json_array();
        return 0;
    }
    int64_t resample_ns = 0;
    if (rs) {
        if (!p.gran) {
            http_error(resp, 400, "A granularity must be specified to resample");
            return 400;
        }
        if (strlen(rs) == 1 && strchr("YHQMW", rs[0])) {
            http_error(resp, 400, "resample: the calendar groupings (Y, H, Q, M, W) are not "
                       "supported by gpuagg; give a timespan");
            return 400;
        }
        if (api_parse_span(rs, &resample_ns) < 0) {
            http_error(resp, 400, "Unable to parse timespan '%s'", rs);
            return 400;
        }
    }
    int64_t grans[AGG_QUERY_MAX_GRANS];
    int ng = 0;
    if (p.gran) {
        grans[ng++] = p.gran;
    } else {
        int64_t g0[AGG_QUERY_MAX_GRANS];
        int n0 = api_policy_grans(json_object_get(json_array_get(rows, 0), "policy"), g0,
                                  AGG_QUERY_MAX_GRANS);
        for (int i = 0; i < n0; i++) {
            int all = 1;
            for (size_t m = 1; m < nm && all; m++)
                all = agg_query_has_gran(json_array_get(rows, m), g0[i]);
            if (all)
                grans[ng++] = g0[i];
        }
        if (!ng) {
            json_t *d = json_array();
            for (size_t m = 0; m < nm; m++)
                json_array_append_new(d, json_pack("[s, s]", json_string_value(json_object_get(
                                                       json_array_get(rows, m), "id")), agg));
            agg_query_error(resp, 400, "Metrics can't being aggregated", "No granularity match", d);
            return 400;
        }
    }
    for (size_t m = 0; m < nm; m++) {
        const json_t *row = json_array_get(rows, m);
        for (int i = 0; i < ng; i++)
            if (!agg_query_has_gran(row, grans[i])) {
                http_error(resp, 404, "Aggregation method '%s' at granularity '%.1f' for metric %s "
                           "does not exist", agg, (double)grans[i] / 1e9,
                           json_string_value(json_object_get(row, "id")));
                return 404;
            }
    }
    /* a method the policy lacks: Gnocchi's two answers, one metric or several */
    for (size_t m = 0; m < nm; m++) {
        const json_t *row = json_array_get(rows, m), *pol = json_object_get(row, "policy");
        const char *id = json_string_value(json_object_get(row, "id"));
        if (api_policy_has_method(pol, agg))
            continue;
        if (nm == 1) {
            agg_query_error(resp, 404, "Aggregation method does not exist for this metric", NULL,
                            json_pack("{s:s, s:s}", "metric", id, "aggregation_method", agg));
        } else {
            const json_t *d0 = json_array_get(json_object_get(pol, "definition"), 0);
            http_error(resp, 404, "Aggregation method '%s' at granularity '%.1f' for metric %s "
                       "does not exist", agg,
                       (double)json_integer_value(json_object_get(d0, "granularity_ns")) / 1e9, id);
        }
        return 404;
    }
    if (nm == 1) {
        json_t *out = json_array();
        int st = single_metric(req, resp, json_array_get(rows, 0), agg, grans, ng, &p, resample_ns,
                               out);
        if (st) {
            json_decref(out);
            return st;
        }
        *res = out;
        return 0;
    }
    /* ["aggregate", RE, (["resample", AGG, RS,] ["metric", [ID, AGG], ...])] */
    json_t *metric = json_pack("[s]", "metric");
    struct agg_query_col *cols = calloc(nm, sizeof *cols);
    struct agg_refs refs = { 0 };
    if (!cols || nm > AGG_MAX_REFS) {
        json_decref(metric);
        free(cols);
        http_error(resp, 400, "more than %d metrics in one aggregation", AGG_MAX_REFS);
        return 400;
    }
    for (size_t m = 0; m < nm; m++) {
        const json_t *row = json_array_get(rows, m);
        const char *id = json_string_value(json_object_get(row, "id"));
        json_array_append_new(metric, json_pack("[s, s]", id, agg));
        refs.r[refs.n].name = id;
        refs.r[refs.n].agg = agg;
        cols[m].ref = refs.n++;
        cols[m].metric = row;
        cols[m].mname = id;
    }
    json_t *ops;
    if (resample_ns) {
        char span[32];
        snprintf(span, sizeof span, "%.9f", (double)resample_ns / 1e9);
        ops = json_pack("[s, s, [s, s, s, o]]", "aggregate", re, "resample", agg, span, metric);
    } else {
        ops = json_pack("[s, s, o]", "aggregate", re, metric);
    }
    json_t *out = NULL;
    char reason[256];
    int st = 400;
    if (agg_ops_check(ops, reason, sizeof reason) < 0) {
        http_error(resp, 400, "Invalid reaggregation '%s': one of mean, median, std, min, max, "
                   "sum, var, count, or rate: of one of them", re);
    } else if (!(st = agg_query_compute(req, resp, ops, &refs, cols, (int)nm, &p, 0, &out))) {
        json_t *a = json_object_get(out, "aggregated");
        *res = json_incref(a ? a : json_array());
    }
    json_decref(out);
    json_decref(ops);
    free(cols);
    return st;
}

/* GET /v1/aggregation/metric?metric=ID&metric=ID, POST with a JSON list of
 * ids; aggregation, reaggregation, start, stop, granularity,
 * needed_overlap, fill, resample, refresh. */
void api_aggregation_metric(struct http_req *req, struct http_resp *resp)
{
    const char *ids[AGG_MAX_REFS + 1];
    int n = 0;
    json_t *body = NULL;
    if (!strcmp(req->method, "POST")) {
        json_error_t je;
        body = req->body_len ? json_loadb(req->body, req->body_len, 0, &je) : NULL;
        if (!json_is_array(body)) {
            json_decref(body);
            http_error(resp, 400, "Invalid input: expected a list of metric ids");
            return;
        }
        size_t i;
        json_t *v;
        json_array_foreach(body, i, v) {
            if (!json_is_string(v) || n > AGG_MAX_REFS) {
                json_decref(body);
                http_error(resp, 400, "Invalid input: expected a list of at most %d metric ids",
                           AGG_MAX_REFS);
                return;
            }
            ids[n++] = json_string_value(v);
        }
    } else {
        n = http_args(req, "metric", ids, AGG_MAX_REFS + 1);
    }
    if (n > AGG_MAX_REFS) {
        json_decref(body);
        http_error(resp, 400, "Invalid input: more than %d metric=", AGG_MAX_REFS);
        return;
    }
    json_t *rows = json_array();
    for (int i = 0; i < n; i++) {
        int failed, dup = 0;
        json_t *row = agg_lookup_metric_row(req, resp, ids[i], &failed);
        if (failed)
            goto out;
        if (!row) {
            http_error(resp, 404, "Metric %s does not exist", ids[i]);
            goto out;
        }
        for (size_t k = 0; k < json_array_size(rows); k++)
            dup |= json_equal(json_object_get(json_array_get(rows, k), "id"),
                              json_object_get(row, "id"));
        if (!dup)
            json_array_append(rows, row);
        json_decref(row);
    }
    json_t *res;
    if (!cross_metric(req, resp, rows, &res))
        http_json(resp, 200, res);
out:
    json_decref(rows);
    json_decref(body);
}

/* POST /v1/aggregation/resource/{type}/metric/{name}: the body is the
 * search filter; groupby. */
void api_aggregation_resource(struct http_req *req, struct http_resp *resp)
{
    json_t *search = NULL, *resources = NULL, *metric_rows = NULL;
    if (req->body_len) {
        json_error_t je;
        if (!(search = json_loadb(req->body, req->body_len, 0, &je))) {
            http_error(resp, 400, "Invalid JSON body: %s", je.text);
            return;
        }
    }
    char gbuf[1024];
    const char *gb[16];
    int ngb = agg_lookup_groupby_args(req, gbuf, sizeof gbuf, gb, 16);
    if (api_resources_query(req, resp, req->captures[0],
                            search && json_object_size(search) ? search : NULL, 1, &resources))
        goto out;
    if (!(metric_rows = agg_lookup_metrics_of(req, resp, resources)))
        goto out;
    const char *name = req->captures[1];
    if (!ngb) {
        json_t *rows = json_array();
        size_t i;
        json_t *r;
        json_array_foreach(resources, i, r) {
            json_t *mid = json_object_get(json_object_get(r, "metrics"), name);
            json_t *row = mid ? json_object_get(metric_rows, json_string_value(mid)) : NULL;
            if (row)
                json_array_append(rows, row);
        }
        json_t *res;
        if (!cross_metric(req, resp, rows, &res))
            http_json(resp, 200, res);
        json_decref(rows);
        goto out;
    }
    json_t *groups = agg_lookup_groups_of(resources, gb, ngb), *results = json_array();
    size_t i;
    json_t *r, *g;
    json_array_foreach(groups, i, g) {
        json_t *rows = json_array();
        size_t k;
        json_array_foreach(resources, k, r) {
            json_t *rg = agg_lookup_group_of(r, gb, ngb);
            json_t *mid = json_object_get(json_object_get(r, "metrics"), name);
            json_t *row = mid ? json_object_get(metric_rows, json_string_value(mid)) : NULL;
            if (row && json_equal(rg, g))
                json_array_append(rows, row);
            json_decref(rg);
        }
        json_t *m;
        int st = cross_metric(req, resp, rows, &m);
        json_decref(rows);
        if (st) {
            json_decref(groups);
            json_decref(results);
            goto out;
        }
        json_array_append_new(results, json_pack("{s:O, s:o}", "group", g, "measures", m));
    }
    json_decref(groups);
    http_json(resp, 200, results);
out:
    json_decref(search);
    json_decref(resources);
    json_decref(metric_rows);
}
