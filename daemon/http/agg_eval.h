/* agg_eval.h — the operations of POST /v1/aggregates over a grid of
 * (timestamps x series): Gnocchi's gnocchi/rest/aggregates/operations.py
 * (metric, aggregate, rolling, resample, the unary, binary and ternary
 * operators); their schema and string form are agg_schema.h's.
 * docs/API.md "Aggregates".  No I/O; safe from any thread. */
#ifndef GA_HTTP_AGG_EVAL_H
#define GA_HTTP_AGG_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define AGG_MAX_REFS 64                   /* (metric, aggregation) pairs in operations */
#define AGG_MAX_DEPTH 32

/* One (metric, aggregation) reference of the operations, in the order
 * Gnocchi's extract_references() gives (first appearance). */
struct agg_ref {
    const char *name;                     /* metric id, gpuagg name, or name wildcard */
    const char *agg;
};

struct agg_refs {
    int n;
    struct agg_ref r[AGG_MAX_REFS];
};

/* A grid: nt timestamps (ascending) x nc series, granularity g (ns). */
struct agg_grid {
    size_t nt;
    int nc;
    int64_t g;
    int64_t *t;
    double *v;                            /* v[i * nc + c] */
    int *cols;                            /* output column c comes from input series cols[c] */
    int aggregated;                       /* Gnocchi's is_aggregated: one "aggregated" series */
    int is_bool;                          /* values are comparison results (JSON true/false) */
};

/* The references of ops (checked by agg_ops_check) into rs.  0, or -1 with why set
 * (more than AGG_MAX_REFS). */
int agg_refs_collect(const json_t *ops, struct agg_refs *rs, char *why, size_t wl);

int agg_grid_alloc(struct agg_grid *g, size_t nt, int nc);
void agg_grid_free(struct agg_grid *g);

/* One evaluation.  in: the series grid (in->cols[c] indexes col_ref);
 * col_ref[s]: the reference (index in refs) of input series s. */
struct agg_eval {
    const struct agg_grid *in;
    const int *col_ref;
    const struct agg_refs *refs;
    int unaggregable;                     /* the error is Gnocchi's UnAggregableTimeseries */
    char why[512];
};

/* Evaluate ops over e->in into *out (allocated; agg_grid_free it).  0, or
 * a negative GA_E* with e->why set (e->unaggregable for the errors Gnocchi
 * reports as "Metrics can't being aggregated"). */
int agg_eval(struct agg_eval *e, const json_t *ops, struct agg_grid *out);

#endif
