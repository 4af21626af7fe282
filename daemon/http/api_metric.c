/* api_metric.c — Gnocchi's metric reads: GET /v1/metric (list),
 * /v1/metric/{id or name}[/measures], /v1/resource/{type}/{id}/metric/
 * {name}[/measures] (docs/API.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/agg_series.h"
#include "daemon/http/api.h"
#include "daemon/http/api_resource.h"
#include "daemon/http/http_routes.h"
#include "daemon/http/json_out.h"
#include "proto/ga_err.h"
#include "proto/uuid.h"
#include "storage/pg_api.h"
#include "storage/pg_read.h"

#define LIST_MAX 1000                     /* Gnocchi's default max_limit */

/* ---- measures of one metric -------------------------------------------------- */

static int64_t floor_to(int64_t t, int64_t g)
{
    if (t == INT64_MIN)
        return t;
    int64_t r = t % g;
    return r < 0 ? t - r - g : t - r;
}

/* Answer GET .../measures for the metric row (storage/pg_api.h). */
static void measures(struct http_req *req, struct http_resp *resp, const json_t *row)
{
    int64_t start, stop, gran;
    if (api_range_args(req, resp, &start, &stop, &gran))
        return;
    const char *agg = http_arg(req, "aggregation");
    if (!agg)
        agg = "mean";
    if (http_arg(req, "transform")) {
        http_error(resp, 400, "transform is not supported by gpuagg's measures API; use POST "
                   "/v1/aggregates");
        return;
    }
    /* resample: carbonara's resample of the granularity's series */
    const char *rs = http_arg(req, "resample");
    int64_t resample = 0;
    if (rs) {
        if (!gran) {
            http_error(resp, 400, "A granularity must be specified to resample");
            return;
        }
        if (strlen(rs) == 1 && strchr("YHQMW", rs[0])) {
            http_error(resp, 400, "resample: the calendar groupings (Y, H, Q, M, W) are not "
                       "supported by gpuagg; give a timespan");
            return;
        }
        if (api_parse_span(rs, &resample) < 0) {
            http_error(resp, 400, "Unable to parse timespan '%.60s'", rs);
            return;
        }
    }
    const json_t *pol = json_object_get(row, "policy");
    const char *id = json_string_value(json_object_get(row, "id"));
    const char *name = json_string_value(json_object_get(row, "gpuagg_name"));
    if (!api_policy_has_method(pol, agg)) {
        api_error_desc(resp, 404, json_pack("{s:s, s:{s:s, s:s}}", "cause",
                                            "Aggregation method does not exist for this metric",
                                            "detail", "metric", id, "aggregation_method", agg));
        return;
    }
    int64_t grans[32];
    int ng = api_policy_grans(pol, grans, 32);
    if (gran) {
        int found = 0;
        for (int i = 0; i < ng; i++)
            found |= grans[i] == gran;
        if (!found) {
            char gs[32];
            api_pyfloat((double)gran / 1e9, gs);
            http_error(resp, 404, "Aggregation method '%s' at granularity '%s' for metric %s does "
                       "not exist", agg, gs, id);
            return;
        }
        grans[0] = gran;
        ng = 1;
    }
    int max_points = http_server_config(req->srv)->http.max_points;
    struct json_out out = { 0 };
    json_out_put(&out, "[", 1);
    size_t total = 0;
    for (int i = 0; i < ng; i++) {
        char err[512];
        int64_t g = resample ? resample : grans[i], to = stop;
        if (resample && stop != INT64_MAX)
            to = floor_to(stop - 1, g) + g;   /* whole resampled buckets */
        struct pg_read_series s;
        int rc = pg_read_series_read(http_server_pgq(req->srv), 1, &name, &agg, grans[i],
                                 floor_to(start, g), to, (size_t)max_points - total, &s, err,
                                 sizeof err);
        if (rc == GA_ERANGE) {
            json_out_free(&out);
            http_error(resp, 400, "more than http.max_points (%d) points: narrow start/stop or "
                       "give a granularity", max_points);
            return;
        }
        if (rc < 0) {
            json_out_free(&out);
            api_db_error(resp, rc, err);
            return;
        }
        total += s.n;
        size_t n = s.n;
        if (resample && agg_resample(agg, s.ts, s.val, s.n, resample, s.ts, s.val, &n) < 0) {
            pg_read_series_free(&s);
            json_out_free(&out);
            http_error(resp, 400, "resample: no aggregation method '%s' to resample with", agg);
            return;
        }
        json_out_measures(&out, s.ts, s.val, n, g, stop);
        pg_read_series_free(&s);
    }
    json_out_put(&out, "]", 1);
    if (out.oom)
        http_error(resp, 500, "out of memory encoding the response");
    else
        http_text(resp, 200, "application/json", out.p, out.len);
    json_out_free(&out);
}

/* ---- lookups ------------------------------------------------------------------ */

/* The metric row by Gnocchi id (UUID) or gpuagg name; NULL with resp set
 * (404 when unknown or not visible). */
static json_t *metric_by_ref(struct http_req *req, struct http_resp *resp, const char *ref)
{
    char uuid[GA_UUID_STR], sq[256];
    const char *vals[3];
    int n = 1;
    int is_id = ga_uuid_parse(ref, uuid);
    vals[0] = is_id ? uuid : ref;
    char sql[2048];
    pg_api_metric(sql, sizeof sql, is_id, api_scope(&req->ident, sq, sizeof sq, vals, &n));
    json_t *rows = api_query_json(req, resp, sql, n, vals);
    if (!rows)
        return NULL;
    json_t *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (!row)
        http_error(resp, 404, "Metric %s does not exist", ref);
    return row;
}

/* A single metric as Gnocchi's GET answers it: "resource" (null, or the
 * resource object) in place of the listing's "resource_id". */
static json_t *metric_detail(struct http_req *req, struct http_resp *resp, const json_t *row)
{
    json_t *m = api_metric_out(row);
    const char *rid = json_string_value(json_object_get(m, "resource_id"));
    json_t *res = json_null();
    if (rid && !(res = api_resource_object(req, resp, rid))) {
        json_decref(m);
        return NULL;
    }
    json_object_del(m, "resource_id");
    json_object_set_new(m, "resource", res);
    return m;
}

/* GET /v1/metric/{*}: "ID", "ID/measures", "NAME" or "NAME/measures" (a
 * gpuagg name may contain '/'; ".../measures" always means the measures). */
void api_metric_get(struct http_req *req, struct http_resp *resp)
{
    char *ref = req->captures[0];
    size_t n = strlen(ref);
    int want_measures = 0;
    if (n > 9 && strcmp(ref + n - 9, "/measures") == 0) {
        ref[n - 9] = '\0';
        want_measures = 1;
    }
    json_t *row = metric_by_ref(req, resp, ref);
    if (!row)
        return;
    json_t *m;
    if (want_measures)
        measures(req, resp, row);
    else if ((m = metric_detail(req, resp, row)))
        http_json(resp, 200, m);
    json_decref(row);
}

/* GET /v1/metric: every visible metric, ordered by id, paginated. */
void api_metric_list(struct http_req *req, struct http_resp *resp)
{
    const char *lim = http_arg(req, "limit"), *marker = http_arg(req, "marker");
    const char *name = http_arg(req, "name");
    long limit = LIST_MAX;
    if (lim) {
        char *end;
        limit = strtol(lim, &end, 10);
        if (*end || limit < 1 || limit > LIST_MAX) {
            http_error(resp, 400, "Invalid value for limit: must be an integer 1..%d", LIST_MAX);
            return;
        }
    }
    char mk[GA_UUID_STR] = "", sq[256], lbuf[24], sql[2048];
    if (marker && !ga_uuid_parse(marker, mk)) {
        http_error(resp, 400, "Invalid marker: '%.60s' is not a metric id", marker);
        return;
    }
    const char *vals[6];
    int n = 0, mk_idx = 0, name_idx = 0;
    if (mk[0]) {
        vals[n++] = mk;
        mk_idx = n;
    }
    if (name) {
        vals[n++] = name;
        name_idx = n;
    }
    snprintf(lbuf, sizeof lbuf, "%ld", limit);
    vals[n++] = lbuf;
    int lim_idx = n;
    const char *scope = api_scope(&req->ident, sq, sizeof sq, vals, &n);
    pg_api_metric_list(sql, sizeof sql, mk_idx, name_idx, lim_idx, scope);
    json_t *rows = api_query_json(req, resp, sql, n, vals);
    if (!rows)
        return;
    json_t *out = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) json_array_append_new(out, api_metric_out(row));
    if (json_array_size(rows) == (size_t)limit) {
        const char *host = http_header(req, "Host");
        const char *last = json_string_value(json_object_get(json_array_get(rows, limit - 1), "id"));
        snprintf(resp->link, sizeof resp->link, "<http://%s/v1/metric?limit=%ld&marker=%s>; rel=\"next\"",
                 host ? host : "localhost", limit, last ? last : "");
    }
    json_decref(rows);
    http_json(resp, 200, out);
}

/* The metric row named `name` of resource (type, raw id); NULL with resp
 * set (404 resource or metric unknown). */
static json_t *resource_metric(struct http_req *req, struct http_resp *resp, const char *type,
                               const char *rawid, const char *name)
{
    char rid[GA_UUID_STR], why[128], sq[256], sql[2048];
    if (ga_resource_uuid(rawid, req->ident.creator, rid, why, sizeof why) < 0) {
        http_error(resp, 400, "Invalid resource id: %s", why);
        return NULL;
    }
    const char *vals[5] = { rid, type };
    int n = 2;
    const char *scope = api_scope(&req->ident, sq, sizeof sq, vals, &n);
    pg_api_resource_metric(sql, sizeof sql, n + 1, scope);
    vals[n++] = name;
    json_t *rows = api_query_json(req, resp, sql, n, vals);
    if (!rows)
        return NULL;
    json_t *first = json_array_get(rows, 0);
    json_t *m = first ? json_object_get(first, "metric") : NULL;
    if (!first)
        http_error(resp, 404, "Resource %s does not exist", rid);
    else if (!m || json_is_null(m))
        http_error(resp, 404, "Metric %s does not exist", name);
    m = (first && m && !json_is_null(m)) ? json_incref(m) : NULL;
    json_decref(rows);
    return m;
}

/* GET /v1/resource/{type}/{id}/metric/{name}/measures */
void api_resource_metric_measures(struct http_req *req, struct http_resp *resp)
{
    json_t *row = resource_metric(req, resp, req->captures[0], req->captures[1], req->captures[2]);
    if (row)
        measures(req, resp, row);
    json_decref(row);
}

/* GET /v1/resource/{type}/{id}/metric/{name} */
void api_resource_metric_get(struct http_req *req, struct http_resp *resp)
{
    json_t *row = resource_metric(req, resp, req->captures[0], req->captures[1], req->captures[2]);
    json_t *m;
    if (row && (m = metric_detail(req, resp, row)))
        http_json(resp, 200, m);
    json_decref(row);
}
