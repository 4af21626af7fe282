/* http_meta.c — GET / (the API versions, as Gnocchi's VersionsController
 * answers them), /v1, /v1/capabilities, /v1/status, /v1/archive_policy
 * (docs/API.md). */
#include <stdio.h>
#include <string.h>

#include "daemon/http/api.h"
#include "daemon/http/http_routes.h"
#include "gpu/policy.h"

/* "http://host:port" of this request (from the Host header). */
static void base_url(const struct http_req *req, char *buf, size_t n)
{
    const char *host = http_header(req, "Host");
    snprintf(buf, n, "http://%s", host ? host : "localhost");
}

void http_versions(struct http_req *req, struct http_resp *resp)
{
    char href[512];
    base_url(req, href, sizeof href - 8);
    snprintf(href + strlen(href), 8, "/v1/");
    http_json(resp, 200,
              json_pack("{s:s, s:[{s:s, s:[{s:s, s:s}], s:s, s:s}]}", "build", GA_VERSION,
                        "versions", "status", "CURRENT", "links", "rel", "self", "href", href,
                        "id", "v1.0", "updated", "2015-03-19"));
}

/* GET /v1: the links of the v1 API. */
void http_v1_index(struct http_req *req, struct http_resp *resp)
{
    static const char *const subs[] = { "aggregates", "aggregation", "archive_policy",
                                        "capabilities", "metric", "resource", "resource_type",
                                        "search", "status" };
    char base[512], href[600];
    base_url(req, base, sizeof base);
    json_t *links = json_array();
    snprintf(href, sizeof href, "%s/v1", base);
    json_array_append_new(links, json_pack("{s:s, s:s}", "rel", "self", "href", href));
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        snprintf(href, sizeof href, "%s/v1/%s", base, subs[i]);
        json_array_append_new(links, json_pack("{s:s, s:s}", "rel", subs[i], "href", href));
    }
    http_json(resp, 200, json_pack("{s:o}", "version", json_pack("{s:s, s:o}", "id", "v1.0",
                                                                 "links", links)));
}

/* GET /v1/capabilities: the aggregation methods gpuagg computes and the
 * operations of POST /v1/aggregates it evaluates. */
void http_capabilities(struct http_req *req, struct http_resp *resp)
{
    (void)req;
    json_t *methods = json_array(), *dyn = json_array();
    char name[GA_METHOD_NAME_MAX];
    for (int rate = 0; rate < 2; rate++)
        for (int b = GA_M_MEAN; b <= GA_M_MEDIAN; b++)
            json_array_append_new(methods, json_string(ga_method_name(
                                               (ga_method_t)(b | (rate ? GA_M_RATE : 0)), name)));
    json_array_append_new(methods, json_string("Npct (1pct..99pct)"));
    json_array_append_new(methods, json_string("rate:Npct"));
    static const char *const ops[] = { "mean", "median", "std", "min", "max", "sum", "var", "count",
                                       "+", "-", "*", "/", "**", "%", "abs", "neg", "cos", "sin",
                                       "tan", "floor", "ceil", "sqrt", "exp", "log" };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        json_array_append_new(dyn, json_string(ops[i]));
    http_json(resp, 200, json_pack("{s:o, s:o}", "aggregation_methods", methods,
                                   "dynamic_aggregation_methods", dyn));
}

/* GET /v1/status */
void http_status(struct http_req *req, struct http_resp *resp)
{
    json_t *rows = api_query_json(req, resp, "SELECT json_build_object('metrics', count(*)) FROM metrics",
                                  0, NULL);
    if (!rows)
        return;
    json_t *n = json_object_get(json_array_get(rows, 0), "metrics");
    http_json(resp, 200, json_pack("{s:{s:{s:n, s:n}}, s:{s:n}, s:{s:O}}", "storage", "summary",
                                   "metrics", "measures", "metricd", "processors", "gpuagg",
                                   "metrics", n ? n : json_null()));
    json_decref(rows);
}

static const char policy_sql[] =
    "SELECT json_build_object('name', name, 'back_window', back_window, 'definition', definition,"
    " 'methods', methods) FROM archive_policies";

/* GET /v1/archive_policy */
void http_archive_policy_list(struct http_req *req, struct http_resp *resp)
{
    json_t *rows = api_query_json(req, resp, "SELECT * FROM (SELECT json_build_object('name', name,"
                                  " 'back_window', back_window, 'definition', definition, 'methods',"
                                  " methods) FROM archive_policies ORDER BY name) q", 0, NULL);
    if (!rows)
        return;
    json_t *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) json_array_append_new(out, api_policy_json(r));
    json_decref(rows);
    http_json(resp, 200, out);
}

/* GET /v1/archive_policy/{name} */
void http_archive_policy_get(struct http_req *req, struct http_resp *resp)
{
    char sql[512];
    snprintf(sql, sizeof sql, "%s WHERE name = $1", policy_sql);
    const char *vals[] = { req->captures[0] };
    json_t *rows = api_query_json(req, resp, sql, 1, vals);
    if (!rows)
        return;
    json_t *r = json_array_get(rows, 0);
    if (!r)
        http_error(resp, 404, "Archive policy %s does not exist", req->captures[0]);
    else
        http_json(resp, 200, api_policy_json(r));
    json_decref(rows);
}
