/* agg_query.h — one aggregates read over a set of series: Gnocchi's query
 * parameters (validate_qs), the granularities (processor.get_measures),
 * the grid of each granularity with its fill and overlap rule, the
 * operations (agg_eval.h) and the answer's JSON.  Shared by POST
 * /v1/aggregates (api_aggregates.c) and the deprecated /v1/aggregation/
 * reads (api_aggregation.c); docs/API.md "Aggregates". */
#ifndef GA_HTTP_AGG_QUERY_H
#define GA_HTTP_AGG_QUERY_H

#include <stdint.h>

#include <jansson.h>

#include "daemon/http/agg_eval.h"
#include "daemon/http/http_server.h"

#define AGG_QUERY_MAX_COLS 4096                /* series in one aggregate */
#define AGG_QUERY_MAX_GRANS 32

/* One series feeding the grid. */
struct agg_query_col {
    int ref;                              /* index in refs */
    const json_t *metric;                 /* the metric row (storage/pg_api.h) */
    const char *resource;                 /* resource id, NULL without search */
    const char *mname;                    /* output key: metric id, or name within the resource */
};

/* The query parameters of a read. */
struct agg_query_params {
    int64_t start, stop, gran;            /* INT64_MIN / INT64_MAX / 0 when absent */
    int has_start, has_stop;
    double needed_overlap;
    int fill_kind;                        /* 0 none, 1 dropna, 2 null, 3 number */
    double fill;
    int details;
};

/* Answer code with Gnocchi's error body {"code", "title", "description":
 * {"cause", "reason" (when not NULL), "detail"}}; takes detail. */
void agg_query_error(struct http_resp *resp, int code, const char *cause, const char *reason,
                     json_t *detail);

/* Gnocchi's validate_qs(): start, stop, granularity, needed_overlap, fill,
 * details.  dropna_default: fill is dropna when neither fill nor
 * needed_overlap is given (/v1/aggregates; the deprecated reads have no
 * default).  0, or 400 with resp set ({"cause": "Argument value error"}). */
int agg_query_parse_params(struct http_req *req, struct http_resp *resp, struct agg_query_params *p,
                           int dropna_default);

/* [timestamp, granularity seconds, value] as Gnocchi writes a measure:
 * non-finite values as null, is_bool values as true/false.  New reference. */
json_t *agg_query_triplet(int64_t t, int64_t g, double v, int is_bool);
/* t rounded down to a multiple of g (INT64_MIN stays). */
int64_t agg_query_floor(int64_t t, int64_t g);
/* 1 if the metric row's policy has granularity g (ns). */
int agg_query_has_gran(const json_t *metric, int64_t g);

/* Evaluate ops (checked by agg_ops_check) over the columns cols[0..ncols)
 * of refs: the Gnocchi-shaped "measures" value in *out (new reference):
 * {"aggregated": [...]}, or {ID: {AGG: [...]}}, or with by_resource
 * {RESOURCE: {NAME: {AGG: [...]}}}.  0, or the HTTP status with resp set. */
int agg_query_compute(struct http_req *req, struct http_resp *resp, const json_t *ops,
                      const struct agg_refs *refs, const struct agg_query_col *cols, int ncols,
                      const struct agg_query_params *p, int by_resource, json_t **out);

/* ---- lookups (agg_lookup.c) ---------------------------------------------------- */

/* The columns of a group of resources: each (resource, metric whose name
 * matches a reference's wildcard), at most max.  Returns the count. */
int agg_lookup_resource_cols(const json_t *resources, const struct agg_refs *refs,
                       const json_t *metric_rows, struct agg_query_col *cols, int max);
/* The metric rows of every metric of the resources, keyed by metric id
 * (new reference); NULL with resp set on a database error. */
json_t *agg_lookup_metrics_of(struct http_req *req, struct http_resp *resp, const json_t *resources);
/* The group key of a resource: {attr: value} for each groupby attribute
 * (new reference). */
json_t *agg_lookup_group_of(const json_t *r, const char *const *attrs, int n);
/* The distinct groups of the resources in Gnocchi's order (sorted by the
 * attributes, NULL last).  New reference. */
json_t *agg_lookup_groups_of(const json_t *resources, const char *const *attrs, int n);
/* ?groupby=a&groupby=b (or "a,b") split into attrs (pointing into buf),
 * unique and sorted as Gnocchi sorts them.  Returns the count. */
int agg_lookup_groupby_args(struct http_req *req, char *buf, size_t buflen, const char **attrs, int max);
/* The metric row of a metric id (or gpuagg name) visible to the requester:
 * new reference, NULL when none; NULL with *failed and resp set on a
 * database error. */
json_t *agg_lookup_metric_row(struct http_req *req, struct http_resp *resp, const char *name,
                        int *failed);

#endif
