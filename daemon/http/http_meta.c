/* http_meta.c — GET / (the API versions, as Gnocchi's VersionsController
 * answers them), /v1, /v1/capabilities, /v1/status, /v1/archive_policy
 * (docs/API.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/http/api.h"
#include "daemon/http/http_routes.h"
#include "proto/policy.h"
#include "storage/pg_api.h"

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

/* GET /v1/capabilities: every method an archive policy may hold, as
 * Gnocchi lists them (each Npct by name, each also as rate:NAME). */
void http_capabilities(struct http_req *req, struct http_resp *resp)
{
    (void)req;
    json_t *methods = json_array();
    char name[GA_METHOD_NAME_MAX];
    for (int rate = 0; rate < 2; rate++) {
        int r = rate ? GA_M_RATE : 0;
        for (int b = GA_M_MEAN; b <= GA_M_MEDIAN; b++)
            json_array_append_new(methods, json_string(ga_method_name((ga_method_t)(b | r), name)));
        for (int n = 1; n <= 99; n++)
            json_array_append_new(methods, json_string(ga_method_name(
                                               (ga_method_t)((GA_M_PCT_BASE + n) | r), name)));
    }
    http_json(resp, 200, json_pack("{s:o}", "aggregation_methods", methods));
}

/* GET /v1/status */
void http_status(struct http_req *req, struct http_resp *resp)
{
    json_t *rows = api_query_json(req, resp, pg_api_metric_count_sql, 0, NULL);
    if (!rows)
        return;
    json_t *n = json_object_get(json_array_get(rows, 0), "metrics");
    json_t *out = json_pack("{s:{s:{s:n, s:n}}, s:{s:n}, s:{s:O}}", "storage", "summary",
                            "metrics", "measures", "metricd", "processors", "gpuagg",
                            "metrics", n ? n : json_null());
    /* details (default true): the per-metric backlog; gpuagg aggregates
     * points as they arrive, so there is none to list */
    const char *details = http_arg(req, "details");
    if (!details || !(strcasecmp(details, "false") == 0 || strcmp(details, "0") == 0 ||
                      strcasecmp(details, "no") == 0 || strcasecmp(details, "off") == 0))
        json_object_set_new(json_object_get(out, "storage"), "measures_to_process", json_object());
    http_json(resp, 200, out);
    json_decref(rows);
}

/* The archive_policies row JSON (as storage writes it) of a policy this
 * daemon knows. */
static json_t *policy_row(const struct ga_policy *p)
{
    json_t *defs = json_array(), *methods = json_array();
    char name[GA_METHOD_NAME_MAX];
    for (int i = 0; i < p->ndefs; i++)
        json_array_append_new(defs, json_pack("{s:I, s:I}", "granularity_ns",
                                              (json_int_t)p->defs[i].granularity_ns, "timespan_ns",
                                              (json_int_t)p->defs[i].timespan_ns));
    for (int i = 0; i < p->nmethods; i++)
        json_array_append_new(methods, json_string(ga_method_name(p->methods[i], name)));
    return json_pack("{s:s, s:I, s:o, s:o}", "name", p->name, "back_window",
                     (json_int_t)p->back_window, "definition", defs, "methods", methods);
}

/* The policy named name as this daemon defines it (config, else built
 * in), NULL if it defines none by that name. */
static const struct ga_policy *defined_policy(struct http_req *req, const char *name)
{
    return ga_config_policy(http_server_config(req->srv), name);
}

static int by_name(const void *a, const void *b)
{
    const json_t *const *x = a, *const *y = b;
    return strcmp(json_string_value(json_object_get(*x, "name")),
                  json_string_value(json_object_get(*y, "name")));
}

/* GET /v1/archive_policy: every policy defined (this daemon's config and
 * the built-ins), and those only in PostgreSQL (defined by another
 * member's config), ordered by name. */
void http_archive_policy_list(struct http_req *req, struct http_resp *resp)
{
    json_t *rows = api_query_json(req, resp, pg_api_policies_sql, 0, NULL);
    if (!rows)
        return;
    const struct ga_config *cfg = http_server_config(req->srv);
    json_t *seen = json_object(), *all = json_array();
    for (int i = 0; i < cfg->npolicies; i++) {
        json_object_set_new(seen, cfg->policies[i].name, json_true());
        json_array_append_new(all, policy_row(&cfg->policies[i]));
    }
    const struct ga_policy *b;
    for (int i = 0; (b = ga_policy_builtin_at(i)); i++)
        if (!json_object_get(seen, b->name)) {
            json_object_set_new(seen, b->name, json_true());
            json_array_append_new(all, policy_row(b));
        }
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *name = json_string_value(json_object_get(r, "name"));
        if (name && !json_object_get(seen, name))
            json_array_append(all, r);
    }
    size_t n = json_array_size(all);
    json_t **v = calloc(n ? n : 1, sizeof *v);
    json_t *out = json_array();
    if (!v) {
        json_decref(all);
        json_decref(seen);
        json_decref(rows);
        json_decref(out);
        http_error(resp, 500, "out of memory");
        return;
    }
    for (i = 0; i < n; i++)
        v[i] = json_array_get(all, i);
    qsort(v, n, sizeof *v, by_name);
    for (i = 0; i < n; i++)
        json_array_append_new(out, api_policy_json(v[i]));
    free(v);
    json_decref(all);
    json_decref(seen);
    json_decref(rows);
    http_json(resp, 200, out);
}

/* GET /v1/archive_policy/{name} */
void http_archive_policy_get(struct http_req *req, struct http_resp *resp)
{
    const struct ga_policy *p = defined_policy(req, req->captures[0]);
    if (p) {
        json_t *row = policy_row(p);
        http_json(resp, 200, api_policy_json(row));
        json_decref(row);
        return;
    }
    const char *vals[] = { req->captures[0] };
    json_t *rows = api_query_json(req, resp, pg_api_policy_sql, 1, vals);
    if (!rows)
        return;
    json_t *r = json_array_get(rows, 0);
    if (!r)
        http_error(resp, 404, "Archive policy %s does not exist", req->captures[0]);
    else
        http_json(resp, 200, api_policy_json(r));
    json_decref(rows);
}

/* A rule as Gnocchi shows it; rules have no name in gpuagg's config, so
 * the name is rule-N, N the rule's place in archive_policy_rules from 1. */
static json_t *rule_json(const struct ga_rule *r, int i)
{
    char name[32];
    snprintf(name, sizeof name, "rule-%d", i + 1);
    return json_pack("{s:s, s:s, s:s}", "name", name, "metric_pattern", r->pattern,
                     "archive_policy_name", r->policy);
}

/* GET /v1/archive_policy_rule: the rules in the order they are tried. */
void http_archive_policy_rule_list(struct http_req *req, struct http_resp *resp)
{
    const struct ga_config *cfg = http_server_config(req->srv);
    json_t *out = json_array();
    for (int i = 0; i < cfg->nrules; i++)
        json_array_append_new(out, rule_json(&cfg->rules[i], i));
    http_json(resp, 200, out);
}

/* GET /v1/archive_policy_rule/{name} */
void http_archive_policy_rule_get(struct http_req *req, struct http_resp *resp)
{
    const struct ga_config *cfg = http_server_config(req->srv);
    const char *name = req->captures[0];
    char *end;
    if (strncmp(name, "rule-", 5) == 0 && name[5] >= '1' && name[5] <= '9') {
        long i = strtol(name + 5, &end, 10);
        if (!*end && i >= 1 && i <= cfg->nrules) {
            http_json(resp, 200, rule_json(&cfg->rules[i - 1], (int)i - 1));
            return;
        }
    }
    http_error(resp, 404, "Archive policy rule %s does not exist", name);
}
