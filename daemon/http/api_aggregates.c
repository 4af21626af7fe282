/* api_aggregates.c — POST /v1/aggregates: the operations (a JSON list or
 * the string form), by metric ids or by search, with groupby
 * (gnocchi/rest/aggregates/api.py; docs/API.md "Aggregates"). */
#include <stdlib.h>
#include <string.h>

#include "daemon/http/agg_eval.h"
#include "daemon/http/agg_query.h"
#include "daemon/http/agg_schema.h"
#include "daemon/http/api.h"
#include "daemon/http/api_resource.h"
#include "daemon/http/http_routes.h"

/* The whole aggregates request: operations (checked), optional search and
 * resource_type, groupby attributes.  Sets resp. */
static void aggregates(struct http_req *req, struct http_resp *resp, const json_t *ops,
                       const json_t *search, const char *rtype, int has_search,
                       const char *const *groupby, int ngroupby)
{
    struct agg_query_params p;
    if (agg_query_parse_params(req, resp, &p, 1))
        return;
    struct agg_refs refs = { 0 };
    char why[256];
    if (agg_refs_collect(ops, &refs, why, sizeof why) < 0) {
        agg_query_error(resp, 400, "Invalid operations", why, json_deep_copy(ops));
        return;
    }
    if (!refs.n) {
        agg_query_error(resp, 400, "Operations is invalid", "At least one 'metric' is required",
                        json_deep_copy(ops));
        return;
    }
    struct agg_query_col *cols = calloc(AGG_QUERY_MAX_COLS, sizeof *cols);
    if (!cols) {
        http_error(resp, 500, "out of memory");
        return;
    }
    json_t *out = NULL, *keep = NULL, *metric_rows = NULL, *resources = NULL, *names = NULL;
    if (!has_search) {
        keep = json_array();
        json_t *missing = json_array();
        for (int k = 0; k < refs.n; k++) {
            int failed;
            json_t *row = agg_lookup_metric_row(req, resp, refs.r[k].name, &failed);
            if (failed) {
                json_decref(missing);
                goto out;
            }
            if (!row) {
                json_array_append_new(missing, json_string(refs.r[k].name));
                continue;
            }
            json_array_append_new(keep, row);
            cols[k].ref = k;
            cols[k].metric = row;
            cols[k].mname = json_string_value(json_object_get(row, "id"));
        }
        if (json_array_size(missing)) {
            agg_query_error(resp, 404, "Unknown metrics", "Provided metrics don't exists", missing);
            goto out;
        }
        json_decref(missing);
        if (agg_query_compute(req, resp, ops, &refs, cols, refs.n, &p, 0, &out))
            goto out;
        json_t *body = json_pack("{s:o}", "measures", out);
        out = NULL;
        if (p.details) {
            size_t i;
            json_t *m, *refsj = json_array();
            json_array_foreach(keep, i, m) json_array_append_new(refsj, api_metric_out(m));
            json_object_set_new(body, "references", refsj);
        }
        http_json(resp, 200, body);
        goto out;
    }
    /* search: resources, their metrics by name */
    if (api_resources_query(req, resp, rtype, search, 1, &resources))
        goto out;
    if (!(metric_rows = agg_lookup_metrics_of(req, resp, resources)))
        goto out;
    names = json_array();                 /* Gnocchi's set of the names */
    for (int k = 0; k < refs.n; k++) {
        int dup = 0;
        for (int j = 0; j < k; j++)
            dup |= !strcmp(refs.r[j].name, refs.r[k].name);
        if (!dup)
            json_array_append_new(names, json_string(refs.r[k].name));
    }
    if (!ngroupby) {
        int n = agg_lookup_resource_cols(resources, &refs, metric_rows, cols, AGG_QUERY_MAX_COLS);
        if (!n) {
            agg_query_error(resp, 400, "Metrics not found", NULL, names);
            names = NULL;
            goto out;
        }
        if (agg_query_compute(req, resp, ops, &refs, cols, n, &p, 1, &out))
            goto out;
        json_t *body = json_pack("{s:o}", "measures", out);
        out = NULL;
        if (p.details)
            json_object_set(body, "references", resources);
        http_json(resp, 200, body);
        goto out;
    }
    /* groupby: one answer per distinct group, in the order of the groups' keys */
    json_t *groups = agg_lookup_groups_of(resources, groupby, ngroupby), *results = json_array();
    size_t i;
    json_t *r, *g;
    json_array_foreach(groups, i, g) {
        json_t *members = json_array();
        size_t k;
        json_array_foreach(resources, k, r) {
            json_t *rg = agg_lookup_group_of(r, groupby, ngroupby);
            if (json_equal(rg, g))
                json_array_append(members, r);
            json_decref(rg);
        }
        int n = agg_lookup_resource_cols(members, &refs, metric_rows, cols, AGG_QUERY_MAX_COLS);
        json_t *m = NULL;
        if (n && agg_query_compute(req, resp, ops, &refs, cols, n, &p, 1, &m)) {
            json_decref(members);
            json_decref(groups);
            json_decref(results);
            goto out;
        }
        if (m) {
            json_t *mv = json_pack("{s:o}", "measures", m);
            if (p.details)
                json_object_set(mv, "references", members);
            json_array_append_new(results, json_pack("{s:O, s:o}", "group", g, "measures", mv));
        }
        json_decref(members);
    }
    json_decref(groups);
    if (!json_array_size(results)) {
        json_decref(results);
        agg_query_error(resp, 400, "Metrics not found", NULL, names);
        names = NULL;
        goto out;
    }
    http_json(resp, 200, results);
out:
    json_decref(names);
    json_decref(out);
    json_decref(keep);
    json_decref(metric_rows);
    json_decref(resources);
    free(cols);
}

/* POST /v1/aggregates */
void api_aggregates_post(struct http_req *req, struct http_resp *resp)
{
    json_error_t je;
    json_t *body = req->body_len ? json_loadb(req->body, req->body_len, 0, &je) : NULL;
    if (!body) {
        http_error(resp, 400, "Invalid JSON body: %s", req->body_len ? je.text : "empty body");
        return;
    }
    json_t *ops = json_object_get(body, "operations"), *parsed = NULL;
    if (!json_is_object(body) || !ops) {
        agg_query_error(resp, 400, "Invalid input",
                        "required key not provided @ data['operations']",
                        json_pack("[s]", "operations"));
        json_decref(body);
        return;
    }
    if (json_is_string(ops)) {
        char why[128];
        parsed = agg_sexp_parse(json_string_value(ops), why, sizeof why);
        if (!parsed) {
            agg_query_error(resp, 400, "Invalid operations", "Fail to parse the operations string",
                            json_string(why));
            json_decref(body);
            return;
        }
        ops = parsed;
    }
    char reason[256];
    if (agg_ops_check(ops, reason, sizeof reason) < 0) {
        agg_query_error(resp, 400, "Invalid input", reason, json_pack("[s]", "operations"));
        goto done;
    }
    const json_t *search = json_object_get(body, "search");
    const json_t *rt = json_object_get(body, "resource_type");
    int has_search = rt != NULL || search != NULL;
    if (json_is_string(search)) {
        http_error(resp, 400, "the string search syntax is not supported by gpuagg: send the "
                   "search as a JSON filter");
        goto done;
    }
    char gbuf[1024];
    const char *gb[16];
    int ngb = has_search ? agg_lookup_groupby_args(req, gbuf, sizeof gbuf, gb, 16) : 0;
    aggregates(req, resp, ops, search && json_object_size(search) ? search : NULL,
               rt ? json_string_value(rt) : "generic", has_search, gb, ngb);
done:
    json_decref(parsed);
    json_decref(body);
}
