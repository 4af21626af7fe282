/* agg_lookup.c — the metric and resource lookups of the aggregates reads
 * (agg_query.h "lookups"): metric rows, the series of a search, groupby. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/agg_query.h"
#include "daemon/http/api.h"
#include "proto/uuid.h"
#include "storage/pg_api.h"

/* The columns of one group of resources: each (resource, metric whose name
 * matches a reference's wildcard).  Returns the count. */
int agg_lookup_resource_cols(const json_t *resources, const struct agg_refs *refs,
                       const json_t *metric_rows,
                         struct agg_query_col *cols, int max)
{
    int n = 0;
    size_t i;
    const json_t *r;
    json_array_foreach(resources, i, r) {
        const char *rid = json_string_value(json_object_get(r, "id"));
        const json_t *ms = json_object_get(r, "metrics");
        for (int k = 0; k < refs->n; k++) {
            const char *mname;
            const json_t *mid;
            json_object_foreach((json_t *)ms, mname, mid) {
                if (fnmatch(refs->r[k].name, mname, 0) != 0)
                    continue;
                const json_t *row = json_object_get(metric_rows, json_string_value(mid));
                if (!row || n >= max)
                    continue;
                cols[n].ref = k;
                cols[n].metric = row;
                cols[n].resource = rid;
                cols[n].mname = mname;
                n++;
            }
        }
    }
    return n;
}

/* Metric rows of every metric of the resources, keyed by metric id. */
json_t *agg_lookup_metrics_of(struct http_req *req, struct http_resp *resp, const json_t *resources)
{
    json_t *ids = json_array();
    size_t i;
    const json_t *r;
    json_array_foreach(resources, i, r) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(r, "metrics"), k, v) json_array_append(ids, v);
    }
    char *idlist = json_dumps(ids, JSON_COMPACT);
    json_decref(ids);
    if (!idlist) {
        http_error(resp, 500, "out of memory");
        return NULL;
    }
    const char *vals[] = { idlist };
    json_t *rows = api_query_json(req, resp, pg_api_metrics_by_ids_sql, 1, vals);
    free(idlist);
    if (!rows)
        return NULL;
    json_t *by_id = json_object();
    json_array_foreach(rows, i, r) {
        json_object_set(by_id, json_string_value(json_object_get(r, "id")), (json_t *)r);
    }
    json_decref(rows);
    return by_id;
}

/* The group key of a resource: {attr: value} for each groupby attribute. */
json_t *agg_lookup_group_of(const json_t *r, const char *const *attrs, int n)
{
    json_t *g = json_object();
    for (int i = 0; i < n; i++) {
        json_t *v = json_object_get(r, attrs[i]);
        if (!v)
            v = json_object_get(json_object_get(r, "attributes"), attrs[i]);
        json_object_set(g, attrs[i], v ? v : json_null());
    }
    return g;
}

/* Order of two values of a groupby attribute as the database sorts them
 * (ascending, NULL last): numbers by value, strings by bytes, others by
 * their JSON text. */
static int value_cmp(const json_t *a, const json_t *b)
{
    if (json_is_null(a) || json_is_null(b))
        return json_is_null(a) - json_is_null(b);
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return (x > y) - (x < y);
    }
    if (json_is_string(a) && json_is_string(b))
        return strcmp(json_string_value(a), json_string_value(b));
    char *x = json_dumps(a, JSON_ENCODE_ANY | JSON_SORT_KEYS);
    char *y = json_dumps(b, JSON_ENCODE_ANY | JSON_SORT_KEYS);
    int c = strcmp(x ? x : "", y ? y : "");
    free(x);
    free(y);
    return c;
}

/* The distinct groups of the resources, sorted by their attributes (Gnocchi
 * lists the resources sorted by the groupby attributes and groups runs of
 * equal keys).  New reference. */
json_t *agg_lookup_groups_of(const json_t *resources, const char *const *attrs, int n)
{
    json_t *groups = json_array();
    size_t i;
    const json_t *r;
    json_array_foreach(resources, i, r) {
        json_t *g = agg_lookup_group_of(r, attrs, n);
        int seen = 0;
        for (size_t k = 0; k < json_array_size(groups) && !seen; k++)
            seen = json_equal(json_array_get(groups, k), g);
        if (!seen)
            json_array_append(groups, g);
        json_decref(g);
    }
    size_t ng = json_array_size(groups);
    for (size_t a = 1; a < ng; a++)
        for (size_t b = a; b > 0; b--) {
            json_t *x = json_array_get(groups, b - 1), *y = json_array_get(groups, b);
            int c = 0;
            for (int k = 0; k < n && !c; k++)
                c = value_cmp(json_object_get(x, attrs[k]), json_object_get(y, attrs[k]));
            if (c <= 0)
                break;
            json_incref(x);
            json_array_set(groups, b - 1, y);
            json_array_set_new(groups, b, x);
        }
    return groups;
}

/* Split ?groupby=a&groupby=b (or "a,b") into attrs; returns the count. */
int agg_lookup_groupby_args(struct http_req *req, char *buf, size_t buflen, const char **attrs, int max)
{
    const char *vals[16];
    int nv = http_args(req, "groupby", vals, 16), n = 0;
    size_t o = 0;
    for (int i = 0; i < nv; i++) {
        const char *s = vals[i];
        while (*s && n < max) {
            size_t len = strcspn(s, ",");
            if (len && o + len + 1 <= buflen) {
                memcpy(buf + o, s, len);
                buf[o + len] = '\0';
                int dup = 0;
                for (int k = 0; k < n; k++)
                    dup |= !strcmp(attrs[k], buf + o);
                if (!dup)
                    attrs[n++] = buf + o;
                o += len + 1;
            }
            s += len;
            if (*s == ',')
                s++;
        }
    }
    /* sorted, as Gnocchi sorts them */
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && strcmp(attrs[b], attrs[b - 1]) < 0; b--) {
            const char *t = attrs[b];
            attrs[b] = attrs[b - 1];
            attrs[b - 1] = t;
        }
    return n;
}

/* The metric row of a reference without search: a metric id (or gpuagg
 * name) visible to the requester.  New reference, NULL when none; NULL
 * with *failed set and resp set on a database error. */
json_t *agg_lookup_metric_row(struct http_req *req, struct http_resp *resp, const char *name,
                          int *failed)
{
    char uuid[GA_UUID_STR], sq[256], sql[2048];
    const char *vals[3];
    int n = 1, is_id = ga_uuid_parse(name, uuid);
    vals[0] = is_id ? uuid : name;
    pg_api_metric(sql, sizeof sql, is_id, api_scope(&req->ident, sq, sizeof sq, vals, &n));
    json_t *rows = api_query_json(req, resp, sql, n, vals);
    *failed = rows == NULL;
    if (!rows)
        return NULL;
    json_t *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    return row;
}
