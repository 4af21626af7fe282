/* api_aggregates.c — POST /v1/aggregates and the deprecated /v1/aggregation/
 * reads: series of several metrics on a grid of (time x series), Gnocchi's
 * operations evaluated over it (daemon/http/agg_eval.c), with search /
 * groupby / needed_overlap / fill as gnocchi/rest/aggregates/processor.py
 * and api.py do them (docs/API.md "Aggregates"). */
#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "daemon/http/agg_eval.h"
#include "daemon/http/agg_series.h"
#include "daemon/http/api.h"
#include "daemon/http/api_resource.h"
#include "daemon/http/http_routes.h"
#include "proto/ga_err.h"

#define MAX_COLS 4096                     /* series in one aggregate */
#define MAX_GRANS 32

/* One series feeding the grid. */
struct col {
    int ref;                              /* index in refs */
    const json_t *metric;                 /* the metric row (API_METRIC_JSON_SQL) */
    const char *resource;                 /* resource id, NULL without search */
    const char *mname;                    /* output key: metric id, or name within the resource */
};

/* Gnocchi's error body with a structured description. */
static void error_json(struct http_resp *resp, int code, const char *cause, const char *reason,
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

struct params {
    int64_t start, stop, gran;
    int has_start, has_stop;
    double needed_overlap;
    int fill_kind;                        /* 0 none, 1 dropna, 2 null, 3 number */
    double fill;
    int details;
};

/* Gnocchi's validate_qs(): start, stop, granularity, needed_overlap, fill;
 * errors as {"cause": "Argument value error", "detail": NAME, "reason"}.
 * dropna_default: fill is dropna when neither fill nor needed_overlap is
 * given (/v1/aggregates; the deprecated endpoints have no default). */
static int parse_params(struct http_req *req, struct http_resp *resp, struct params *p,
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
            error_json(resp, 400, "Argument value error", "Must be a number",
                       json_string("needed_overlap"));
            return 400;
        }
    }
    if (s && api_parse_time(s, now, &p->start, why, sizeof why) < 0) {
        error_json(resp, 400, "Argument value error", "Must be a datetime or a timestamp",
                   json_string("start"));
        return 400;
    }
    if (e && api_parse_time(e, now, &p->stop, why, sizeof why) < 0) {
        error_json(resp, 400, "Argument value error", "Must be a datetime or a timestamp",
                   json_string("stop"));
        return 400;
    }
    if (g && api_parse_span(g, &p->gran) < 0) {
        char r[160];
        snprintf(r, sizeof r, "Unable to parse timespan '%.60s' (a positive number of seconds or "
                 "'1 minute')", g);
        error_json(resp, 400, "Argument value error", r, json_string("granularity"));
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
            error_json(resp, 400, "Argument value error", "Must be a float, 'dropna' or 'null'",
                       json_string("fill"));
            return 400;
        }
    }
    return 0;
}

static json_t *measure_triplet(int64_t t, int64_t g, double v, int is_bool)
{
    char iso[40];
    api_iso(t, iso);
    json_t *jv = is_bool ? json_boolean(v != 0) : isfinite(v) ? json_real(v) : json_null();
    return json_pack("[s, f, o]", iso, (double)g / 1e9, jv);
}

static int64_t floor_to(int64_t t, int64_t g)
{
    if (t == INT64_MIN)
        return t;
    int64_t r = t % g;
    return r < 0 ? t - r - g : t - r;
}

static int has_gran(const json_t *metric, int64_t g)
{
    int64_t pg[MAX_GRANS];
    int n = api_policy_grans(json_object_get(metric, "policy"), pg, MAX_GRANS);
    for (int i = 0; i < n; i++)
        if (pg[i] == g)
            return 1;
    return 0;
}

/* Gnocchi's lookup keys of the columns: [wildcard or metric id, agg]. */
static json_t *lookup_keys(const struct agg_refs *refs, const struct col *cols, int ncols,
                           int by_resource)
{
    json_t *a = json_array();
    for (int c = 0; c < ncols; c++) {
        const struct agg_ref *r = &refs->r[cols[c].ref];
        json_array_append_new(a, json_pack("[s, s]", by_resource ? r->name : cols[c].mname, r->agg));
    }
    return a;
}

/* The granularities of an aggregate, descending, as processor.get_measures
 * picks them: the one asked (every column must have it), else those every
 * column has.  Returns the count, or -status with resp set. */
static int pick_grans(struct http_resp *resp, const struct agg_refs *refs, const struct col *cols,
                      int ncols, const struct params *p, int64_t *grans)
{
    int ng = 0;
    if (p->gran) {
        grans[ng++] = p->gran;
    } else {
        int64_t g0[MAX_GRANS];
        int n0 = ncols ? api_policy_grans(json_object_get(cols[0].metric, "policy"), g0, MAX_GRANS) : 0;
        for (int i = 0; i < n0; i++) {
            int all = 1;
            for (int c = 1; c < ncols && all; c++)
                all = has_gran(cols[c].metric, g0[i]);
            if (all)
                grans[ng++] = g0[i];
        }
        if (!ng) {
            json_t *d = json_array();
            for (int c = 0; c < ncols; c++)
                json_array_append_new(d, json_pack("[s, s]", cols[c].mname, refs->r[cols[c].ref].agg));
            error_json(resp, 400, "Metrics can't being aggregated", "No granularity match", d);
            return -400;
        }
    }
    for (int c = 0; c < ncols; c++) {
        const char *agg = refs->r[cols[c].ref].agg;
        if (!api_policy_has_method(json_object_get(cols[c].metric, "policy"), agg)) {
            error_json(resp, 404, "Metrics with unknown aggregation", NULL,
                       json_pack("[[s, s]]", json_string_value(json_object_get(cols[c].metric, "id")),
                                 agg));
            return -404;
        }
    }
    json_t *missing = json_array();
    for (int c = 0; c < ncols; c++)
        for (int i = 0; i < ng; i++)
            if (!has_gran(cols[c].metric, grans[i])) {
                json_array_append_new(missing, json_pack("[s, s, f]", cols[c].mname,
                                                         refs->r[cols[c].ref].agg,
                                                         (double)grans[i] / 1e9));
                break;
            }
    if (json_array_size(missing)) {
        error_json(resp, 400, "Metrics can't being aggregated", "Granularities are missing", missing);
        return -400;
    }
    json_decref(missing);
    return ng;
}

/* The grid of one granularity: the union of the columns' timestamps, the
 * fill, Gnocchi's overlap rule.  0, or the HTTP status with resp set. */
static int build_grid(struct http_req *req, struct http_resp *resp, const struct agg_refs *refs,
                      const struct col *cols, int ncols, const struct params *p, int by_resource,
                      int64_t g, size_t *used, struct agg_grid *grid)
{
    int max_points = http_server_config(req->srv)->http.max_points;
    int64_t **ts = calloc((size_t)ncols, sizeof *ts);
    double **vs = calloc((size_t)ncols, sizeof *vs);
    size_t *ns = calloc((size_t)ncols, sizeof *ns);
    int64_t *all = NULL;
    size_t total = 0;
    int status = 0;
    if (!ts || !vs || !ns) {
        http_error(resp, 500, "out of memory");
        status = 500;
        goto out;
    }
    for (int c = 0; c < ncols; c++) {
        char err[512];
        int rc = api_series(http_server_pgq(req->srv),
                            json_string_value(json_object_get(cols[c].metric, "gpuagg_name")),
                            refs->r[cols[c].ref].agg, g, floor_to(p->start, g), p->stop, &ts[c],
                            &vs[c], &ns[c], err, sizeof err);
        if (rc < 0) {
            api_db_error(resp, rc, err);
            status = resp->status;
            goto out;
        }
        total += ns[c];
        if (total > (size_t)max_points - *used) {
            http_error(resp, 400, "more than http.max_points (%d) points: narrow start/stop, "
                       "give a granularity or fewer metrics", max_points);
            status = 400;
            goto out;
        }
    }
    *used += total;
    /* union of the times (merge of sorted lists) */
    all = malloc((total ? total : 1) * sizeof *all);
    if (!all) {
        http_error(resp, 500, "out of memory");
        status = 500;
        goto out;
    }
    size_t na = 0;
    for (int c = 0; c < ncols; c++) {
        if (ns[c])
            memcpy(all + na, ts[c], ns[c] * sizeof *all);
        na += ns[c];
    }
    for (size_t a = 1; a < na; a++) {      /* insertion sort of nearly sorted runs */
        int64_t x = all[a];
        size_t b = a;
        while (b > 0 && all[b - 1] > x) {
            all[b] = all[b - 1];
            b--;
        }
        all[b] = x;
    }
    size_t nu = 0;
    for (size_t a = 0; a < na; a++)
        if (!nu || all[nu - 1] != all[a])
            all[nu++] = all[a];
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
        for (size_t i = 0; i < ns[c]; i++) {
            while (grid->t[k] < ts[c][i])
                k++;
            grid->v[k * (size_t)ncols + (size_t)c] = vs[c][i];
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
            error_json(resp, 400, "Metrics can't being aggregated", "No overlap",
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
                error_json(resp, 400, "Metrics can't being aggregated", r,
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
    for (int c = 0; ts && c < ncols; c++) {
        free(ts[c]);
        free(vs[c]);
    }
    free(ts);
    free(vs);
    free(ns);
    return status;
}

/* Compute the operations over cols; the Gnocchi-shaped "measures" value
 * in *out.  0, or the HTTP status with resp set. */
static int compute(struct http_req *req, struct http_resp *resp, const json_t *ops,
                   const struct agg_refs *refs, const struct col *cols, int ncols,
                   const struct params *p, int by_resource, json_t **out)
{
    *out = NULL;
    int64_t grans[MAX_GRANS];
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
                error_json(resp, 400, "Metrics can't being aggregated", e.why,
                           lookup_keys(refs, cols, ncols, by_resource));
            else
                error_json(resp, 400, "Invalid operations", e.why, json_deep_copy(ops));
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
                const struct col *col = &cols[outg.cols[c]];
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
                json_array_append_new(list, measure_triplet(outg.t[i], outg.g, v, outg.is_bool));
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

/* The columns of one group of resources: each (resource, metric whose name
 * matches a reference's wildcard).  Returns the count. */
static int resource_cols(const json_t *resources, const struct agg_refs *refs, const json_t *metric_rows,
                         struct col *cols, int max)
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
static json_t *metrics_of(struct http_req *req, struct http_resp *resp, const json_t *resources)
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
    json_t *rows = api_query_json(req, resp, "SELECT " API_METRIC_JSON_SQL API_METRIC_FROM_SQL
                                  " WHERE m.uuid IN (SELECT x::uuid FROM "
                                  "json_array_elements_text($1::json) x)", 1, vals);
    free(idlist);
    if (!rows)
        return NULL;
    json_t *by_id = json_object();
    json_array_foreach(rows, i, r) json_object_set(by_id, json_string_value(json_object_get(r, "id")),
                                                   (json_t *)r);
    json_decref(rows);
    return by_id;
}

/* The group key of a resource: {attr: value} for each groupby attribute. */
static json_t *group_of(const json_t *r, const char *const *attrs, int n)
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
static json_t *groups_of(const json_t *resources, const char *const *attrs, int n)
{
    json_t *groups = json_array();
    size_t i;
    const json_t *r;
    json_array_foreach(resources, i, r) {
        json_t *g = group_of(r, attrs, n);
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
static int groupby_args(struct http_req *req, char *buf, size_t buflen, const char **attrs, int max)
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
static json_t *metric_row(struct http_req *req, struct http_resp *resp, const char *name,
                          int *failed)
{
    char uuid[API_UUID_LEN], sq[256], sql[2048];
    const char *vals[3];
    int n = 1, is_id = api_uuid_parse(name, uuid);
    vals[0] = is_id ? uuid : name;
    snprintf(sql, sizeof sql, "SELECT " API_METRIC_JSON_SQL API_METRIC_FROM_SQL
             " WHERE %s AND (rm.resource IS NULL OR %s) LIMIT 1",
             is_id ? "m.uuid = $1::uuid" : "m.name = $1",
             api_scope_sql(&req->ident, sq, sizeof sq, vals, &n));
    json_t *rows = api_query_json(req, resp, sql, n, vals);
    *failed = rows == NULL;
    if (!rows)
        return NULL;
    json_t *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    return row;
}

/* The whole aggregates request: operations (checked), optional search and
 * resource_type, groupby attributes.  Sets resp. */
static void aggregates(struct http_req *req, struct http_resp *resp, const json_t *ops,
                       const json_t *search, const char *rtype, int has_search,
                       const char *const *groupby, int ngroupby)
{
    struct params p;
    if (parse_params(req, resp, &p, 1))
        return;
    struct agg_refs refs = { 0 };
    char why[256];
    if (agg_refs_collect(ops, &refs, why, sizeof why) < 0) {
        error_json(resp, 400, "Invalid operations", why, json_deep_copy(ops));
        return;
    }
    if (!refs.n) {
        error_json(resp, 400, "Operations is invalid", "At least one 'metric' is required",
                   json_deep_copy(ops));
        return;
    }
    struct col *cols = calloc(MAX_COLS, sizeof *cols);
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
            json_t *row = metric_row(req, resp, refs.r[k].name, &failed);
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
            error_json(resp, 404, "Unknown metrics", "Provided metrics don't exists", missing);
            goto out;
        }
        json_decref(missing);
        if (compute(req, resp, ops, &refs, cols, refs.n, &p, 0, &out))
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
    if (!(metric_rows = metrics_of(req, resp, resources)))
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
        int n = resource_cols(resources, &refs, metric_rows, cols, MAX_COLS);
        if (!n) {
            error_json(resp, 400, "Metrics not found", NULL, names);
            names = NULL;
            goto out;
        }
        if (compute(req, resp, ops, &refs, cols, n, &p, 1, &out))
            goto out;
        json_t *body = json_pack("{s:o}", "measures", out);
        out = NULL;
        if (p.details)
            json_object_set(body, "references", resources);
        http_json(resp, 200, body);
        goto out;
    }
    /* groupby: one answer per distinct group, in the order of the groups' keys */
    json_t *groups = groups_of(resources, groupby, ngroupby), *results = json_array();
    size_t i;
    json_t *r, *g;
    json_array_foreach(groups, i, g) {
        json_t *members = json_array();
        size_t k;
        json_array_foreach(resources, k, r) {
            json_t *rg = group_of(r, groupby, ngroupby);
            if (json_equal(rg, g))
                json_array_append(members, r);
            json_decref(rg);
        }
        int n = resource_cols(members, &refs, metric_rows, cols, MAX_COLS);
        json_t *m = NULL;
        if (n && compute(req, resp, ops, &refs, cols, n, &p, 1, &m)) {
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
        error_json(resp, 400, "Metrics not found", NULL, names);
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
        error_json(resp, 400, "Invalid input", "required key not provided @ data['operations']",
                   json_pack("[s]", "operations"));
        json_decref(body);
        return;
    }
    if (json_is_string(ops)) {
        char why[128];
        parsed = agg_sexp_parse(json_string_value(ops), why, sizeof why);
        if (!parsed) {
            error_json(resp, 400, "Invalid operations", "Fail to parse the operations string",
                       json_string(why));
            json_decref(body);
            return;
        }
        ops = parsed;
    }
    char reason[256];
    if (agg_ops_check(ops, reason, sizeof reason) < 0) {
        error_json(resp, 400, "Invalid input", reason, json_pack("[s]", "operations"));
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
    int ngb = has_search ? groupby_args(req, gbuf, sizeof gbuf, gb, 16) : 0;
    aggregates(req, resp, ops, search && json_object_size(search) ? search : NULL,
               rt ? json_string_value(rt) : "generic", has_search, gb, ngb);
done:
    json_decref(parsed);
    json_decref(body);
}

/* ---- the deprecated /v1/aggregation/ reads ------------------------------------- */

/* The measures of one metric, as Gnocchi answers the deprecated reads for
 * a single metric: its stored series at every granularity asked, the
 * coarsest first, resampled when resample_ns.  0, or the status. */
static int single_metric(struct http_req *req, struct http_resp *resp, const json_t *row,
                         const char *agg, const int64_t *grans, int ng, const struct params *p,
                         int64_t resample_ns, json_t *out)
{
    int max_points = http_server_config(req->srv)->http.max_points;
    size_t total = 0;
    for (int i = 0; i < ng; i++) {
        int64_t *ts, g = grans[i];
        double *v;
        size_t n;
        char err[512];
        int64_t from = p->start, rg = resample_ns ? resample_ns : g;
        int64_t stop = p->stop;
        if (resample_ns && stop != INT64_MAX)
            stop = floor_to(stop - 1, rg) + rg;
        int rc = api_series(http_server_pgq(req->srv),
                            json_string_value(json_object_get(row, "gpuagg_name")), agg, g,
                            floor_to(from, rg), stop, &ts, &v, &n, err, sizeof err);
        if (rc < 0) {
            api_db_error(resp, rc, err);
            return resp->status;
        }
        total += n;
        if (total > (size_t)max_points) {
            free(ts);
            free(v);
            http_error(resp, 400, "more than http.max_points (%d) points: narrow start/stop or "
                       "give a granularity", max_points);
            return 400;
        }
        size_t on = n;
        if (resample_ns) {
            rc = agg_resample(agg, ts, v, n, resample_ns, ts, v, &on);
            if (rc < 0) {
                free(ts);
                free(v);
                http_error(resp, 400, "resample: no aggregation method '%s' to resample with", agg);
                return 400;
            }
        }
        for (size_t k = 0; k < on; k++)
            if (ts[k] >= floor_to(from, rg) && ts[k] < p->stop)
                json_array_append_new(out, measure_triplet(ts[k], rg, v[k], 0));
        free(ts);
        free(v);
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
    struct params p;
    if (parse_params(req, resp, &p, 0))
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
    int64_t grans[MAX_GRANS];
    int ng = 0;
    if (p.gran) {
        grans[ng++] = p.gran;
    } else {
        int64_t g0[MAX_GRANS];
        int n0 = api_policy_grans(json_object_get(json_array_get(rows, 0), "policy"), g0, MAX_GRANS);
        for (int i = 0; i < n0; i++) {
            int all = 1;
            for (size_t m = 1; m < nm && all; m++)
                all = has_gran(json_array_get(rows, m), g0[i]);
            if (all)
                grans[ng++] = g0[i];
        }
        if (!ng) {
            json_t *d = json_array();
            for (size_t m = 0; m < nm; m++)
                json_array_append_new(d, json_pack("[s, s]", json_string_value(json_object_get(
                                                       json_array_get(rows, m), "id")), agg));
            error_json(resp, 400, "Metrics can't being aggregated", "No granularity match", d);
            return 400;
        }
    }
    for (size_t m = 0; m < nm; m++) {
        const json_t *row = json_array_get(rows, m);
        for (int i = 0; i < ng; i++)
            if (!has_gran(row, grans[i])) {
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
            error_json(resp, 404, "Aggregation method does not exist for this metric", NULL,
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
    struct col *cols = calloc(nm, sizeof *cols);
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
    } else if (!(st = compute(req, resp, ops, &refs, cols, (int)nm, &p, 0, &out))) {
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
        json_t *row = metric_row(req, resp, ids[i], &failed);
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
    int ngb = groupby_args(req, gbuf, sizeof gbuf, gb, 16);
    if (api_resources_query(req, resp, req->captures[0],
                            search && json_object_size(search) ? search : NULL, 1, &resources))
        goto out;
    if (!(metric_rows = metrics_of(req, resp, resources)))
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
    json_t *groups = groups_of(resources, gb, ngb), *results = json_array();
    size_t i;
    json_t *r, *g;
    json_array_foreach(groups, i, g) {
        json_t *rows = json_array();
        size_t k;
        json_array_foreach(resources, k, r) {
            json_t *rg = group_of(r, gb, ngb);
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
