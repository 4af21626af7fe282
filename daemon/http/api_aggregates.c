/* api_aggregates.c — POST /v1/aggregates and the older /v1/aggregation/...
 * reads: series of several metrics on a grid of (time x series), Gnocchi's
 * operations evaluated over it (gnocchi/rest/aggregates/processor.py and
 * operations.py), with search / groupby / needed_overlap / fill
 * (docs/API.md "Aggregates"). */
#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/http/api.h"
#include "daemon/http/api_resource.h"
#include "daemon/http/http_routes.h"
#include "proto/ga_err.h"

#define MAX_REFS 64                       /* (metric, aggregation) pairs in operations */
#define MAX_COLS 4096                     /* series in one aggregate */
#define MAX_GRANS 32
#define MAX_DEPTH 32

/* ---- the string form: "(aggregate mean (metric cpu mean))" ----------------------- */

static json_t *sexp(const char **s, int depth, char *why, size_t wl)
{
    while (isspace((unsigned char)**s))
        (*s)++;
    if (depth > MAX_DEPTH) {
        snprintf(why, wl, "operations nested deeper than %d", MAX_DEPTH);
        return NULL;
    }
    if (**s == '(') {
        (*s)++;
        json_t *a = json_array();
        for (;;) {
            while (isspace((unsigned char)**s))
                (*s)++;
            if (**s == ')') {
                (*s)++;
                return a;
            }
            if (!**s) {
                snprintf(why, wl, "missing ')'");
                json_decref(a);
                return NULL;
            }
            json_t *e = sexp(s, depth + 1, why, wl);
            if (!e) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, e);
        }
    }
    const char *b = *s;
    if (*b == '"' || *b == '\'') {
        char q = *b;
        const char *e = strchr(b + 1, q);
        if (!e) {
            snprintf(why, wl, "unterminated string");
            return NULL;
        }
        *s = e + 1;
        json_t *str = json_stringn(b + 1, (size_t)(e - b - 1));
        if (!str)
            snprintf(why, wl, "a string that is not valid UTF-8");
        return str;
    }
    while (**s && !isspace((unsigned char)**s) && **s != '(' && **s != ')')
        (*s)++;
    if (*s == b) {
        snprintf(why, wl, "unexpected ')'");
        return NULL;
    }
    char tok[256];
    size_t n = (size_t)(*s - b) < sizeof tok - 1 ? (size_t)(*s - b) : sizeof tok - 1;
    memcpy(tok, b, n);
    tok[n] = '\0';
    char *end;
    double v = strtod(tok, &end);
    if (*end == '\0' && end != tok && isfinite(v))
        return json_real(v);
    json_t *str = json_string(tok);
    if (!str)
        snprintf(why, wl, "a word that is not valid UTF-8");
    return str;
}

/* ---- references ---------------------------------------------------------------- */

struct ref {
    const char *name;                     /* metric id, gpuagg name, or name wildcard */
    const char *agg;
};

struct refs {
    int n;
    struct ref r[MAX_REFS];
};

static int ref_index(const struct refs *rs, const char *name, const char *agg)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->r[i].name, name) && !strcmp(rs->r[i].agg, agg))
            return i;
    return -1;
}

static int add_ref(struct refs *rs, const json_t *pair0, const json_t *pair1, char *why, size_t wl)
{
    if (!json_is_string(pair0) || !json_is_string(pair1)) {
        snprintf(why, wl, "a metric reference is [\"metric\", NAME-OR-ID, AGGREGATION]");
        return -1;
    }
    const char *n = json_string_value(pair0), *a = json_string_value(pair1);
    if (ref_index(rs, n, a) >= 0)
        return 0;
    if (rs->n >= MAX_REFS) {
        snprintf(why, wl, "more than %d metric references", MAX_REFS);
        return -1;
    }
    rs->r[rs->n].name = n;
    rs->r[rs->n].agg = a;
    rs->n++;
    return 0;
}

static int collect(const json_t *node, struct refs *rs, int depth, char *why, size_t wl)
{
    if (depth > MAX_DEPTH) {
        snprintf(why, wl, "operations nested deeper than %d", MAX_DEPTH);
        return -1;
    }
    if (!json_is_array(node))
        return 0;
    const char *op = json_string_value(json_array_get(node, 0));
    if (op && !strcmp(op, "metric")) {
        const json_t *a1 = json_array_get(node, 1);
        if (json_is_array(a1)) {
            for (size_t i = 1; i < json_array_size(node); i++) {
                const json_t *p = json_array_get(node, i);
                if (!json_is_array(p) || json_array_size(p) != 2) {
                    snprintf(why, wl, "[\"metric\", [NAME, AGG], ...] takes pairs");
                    return -1;
                }
                if (add_ref(rs, json_array_get(p, 0), json_array_get(p, 1), why, wl) < 0)
                    return -1;
            }
            return 0;
        }
        if (json_array_size(node) != 3) {
            snprintf(why, wl, "a metric reference is [\"metric\", NAME-OR-ID, AGGREGATION]");
            return -1;
        }
        return add_ref(rs, a1, json_array_get(node, 2), why, wl);
    }
    for (size_t i = 1; i < json_array_size(node); i++)
        if (collect(json_array_get(node, i), rs, depth + 1, why, wl) < 0)
            return -1;
    return 0;
}

/* ---- the grid ----------------------------------------------------------------------- */

/* One series feeding the grid. */
struct col {
    int ref;                              /* index in refs */
    const json_t *metric;                 /* the metric row (API_METRIC_JSON_SQL) */
    const char *resource;                 /* resource id, NULL without search */
    const char *mname;                    /* output key: metric id, or name within the resource */
};

struct grid {
    size_t nt;
    int nc;
    int64_t *t;
    double *v;                            /* v[i * nc + c] */
    int *cols;                            /* output column c comes from series cols[c] */
    int aggregated;
};

static void grid_free(struct grid *g)
{
    free(g->t);
    free(g->v);
    free(g->cols);
    memset(g, 0, sizeof *g);
}

static int grid_alloc(struct grid *g, size_t nt, int nc)
{
    g->nt = nt;
    g->nc = nc;
    g->t = malloc((nt ? nt : 1) * sizeof *g->t);
    size_t cells = nt * (size_t)nc;
    g->v = malloc((cells ? cells : 1) * sizeof *g->v);
    g->cols = malloc((nc ? (size_t)nc : 1) * sizeof *g->cols);
    return g->t && g->v && g->cols ? 0 : GA_ENOMEM;
}

static double agg_row(const char *m, const double *x, int n, int stride)
{
    double s = 0, s2 = 0, mn = INFINITY, mx = -INFINITY;
    int k = 0;
    for (int i = 0; i < n; i++) {
        double v = x[i * stride];
        if (isnan(v))
            continue;
        s += v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        k++;
    }
    if (!strcmp(m, "count"))
        return k;
    if (!k)
        return !strcmp(m, "sum") ? 0.0 : NAN;
    if (!strcmp(m, "sum"))
        return s;
    if (!strcmp(m, "min"))
        return mn;
    if (!strcmp(m, "max"))
        return mx;
    double mean = s / k;
    if (!strcmp(m, "mean"))
        return mean;
    if (!strcmp(m, "std") || !strcmp(m, "var")) {
        for (int i = 0; i < n; i++) {
            double v = x[i * stride];
            if (!isnan(v))
                s2 += (v - mean) * (v - mean);
        }
        return !strcmp(m, "var") ? s2 / k : sqrt(s2 / k);   /* numpy's ddof=0 */
    }
    /* median */
    double *tmp = malloc((size_t)k * sizeof *tmp);
    if (!tmp)
        return NAN;
    int j = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i * stride]))
            tmp[j++] = x[i * stride];
    for (int a = 1; a < k; a++)
        for (int b = a; b > 0 && tmp[b] < tmp[b - 1]; b--) {
            double t = tmp[b];
            tmp[b] = tmp[b - 1];
            tmp[b - 1] = t;
        }
    double med = k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2;
    free(tmp);
    return med;
}

static int known_agg(const char *m)
{
    static const char *const aggs[] = { "mean", "median", "std", "min", "max", "sum", "var", "count" };
    if (!strncmp(m, "rate:", 5))
        m += 5;
    for (size_t i = 0; i < sizeof aggs / sizeof aggs[0]; i++)
        if (!strcmp(aggs[i], m))
            return 1;
    return 0;
}

static double unary(const char *op, double x, int *ok)
{
    *ok = 1;
    if (!strcmp(op, "abs") || !strcmp(op, "absolute")) return fabs(x);
    if (!strcmp(op, "neg") || !strcmp(op, "negative")) return -x;
    if (!strcmp(op, "cos")) return cos(x);
    if (!strcmp(op, "sin")) return sin(x);
    if (!strcmp(op, "tan")) return tan(x);
    if (!strcmp(op, "floor")) return floor(x);
    if (!strcmp(op, "ceil")) return ceil(x);
    if (!strcmp(op, "sqrt")) return sqrt(x);
    if (!strcmp(op, "exp")) return exp(x);
    if (!strcmp(op, "log")) return log(x);
    *ok = 0;
    return 0;
}

static int binary_op(const char *op)
{
    static const char *const ops[] = { "+", "add", "-", "sub", "*", "mul", "/", "truediv", "**",
                                       "pow", "mod", "%" };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i], op))
            return (int)i / 2 + 1;
    return 0;
}

static double binary(int k, double a, double b)
{
    switch (k) {
    case 1: return a + b;
    case 2: return a - b;
    case 3: return a * b;
    case 4: return a / b;
    case 5: return pow(a, b);
    default: return fmod(a, b);
    }
}

struct eval {
    const struct grid *in;                /* the series grid */
    const struct col *cols;
    const struct refs *refs;
    char why[512];
};

static int eval(struct eval *e, const json_t *node, struct grid *out, int depth);

static int eval_operand(struct eval *e, const json_t *node, struct grid *out, double *num,
                        int *is_num, int depth)
{
    if (json_is_number(node)) {
        *num = json_number_value(node);
        *is_num = 1;
        return 0;
    }
    *is_num = 0;
    return eval(e, node, out, depth + 1);
}

static int eval(struct eval *e, const json_t *node, struct grid *out, int depth)
{
    const struct grid *in = e->in;
    if (depth > MAX_DEPTH)
        return ga_fail(GA_EINVAL, e->why, sizeof e->why, "operations nested too deep");
    const char *op = json_string_value(json_array_get(node, 0));
    if (!json_is_array(node) || !op)
        return ga_fail(GA_EINVAL, e->why, sizeof e->why,
                       "an operation is a list starting with its name");
    size_t na = json_array_size(node);
    if (!strcmp(op, "metric")) {
        int sel[MAX_REFS] = { 0 }, nsel = 0;
        const json_t *a1 = json_array_get(node, 1);
        if (json_is_array(a1)) {
            for (size_t i = 1; i < na; i++) {
                const json_t *p = json_array_get(node, i);
                int k = ref_index(e->refs, json_string_value(json_array_get(p, 0)),
                                  json_string_value(json_array_get(p, 1)));
                if (k >= 0)
                    sel[k] = 1;
            }
        } else {
            int k = ref_index(e->refs, json_string_value(a1), json_string_value(json_array_get(node, 2)));
            if (k >= 0)
                sel[k] = 1;
        }
        for (int c = 0; c < in->nc; c++)
            nsel += sel[e->cols[in->cols[c]].ref];
        if (grid_alloc(out, in->nt, nsel) < 0)
            return ga_fail(GA_ENOMEM, e->why, sizeof e->why, "out of memory");
        memcpy(out->t, in->t, in->nt * sizeof *in->t);
        int o = 0;
        for (int c = 0; c < in->nc; c++) {
            if (!sel[e->cols[in->cols[c]].ref])
                continue;
            out->cols[o] = in->cols[c];
            for (size_t i = 0; i < in->nt; i++)
                out->v[i * (size_t)nsel + (size_t)o] = in->v[i * (size_t)in->nc + (size_t)c];
            o++;
        }
        return 0;
    }
    if (!strcmp(op, "aggregate")) {
        const char *m = json_string_value(json_array_get(node, 1));
        if (na != 3 || !m)
            return ga_fail(GA_EINVAL, e->why, sizeof e->why,
                           "aggregate takes [\"aggregate\", METHOD, OPERATION]");
        if (!known_agg(m))
            return ga_fail(GA_EINVAL, e->why, sizeof e->why, "unknown aggregation method '%s'", m);
        struct grid sub = { 0 };
        int rc = eval(e, json_array_get(node, 2), &sub, depth + 1);
        if (rc < 0)
            return rc;
        int rate = !strncmp(m, "rate:", 5);
        const char *base = rate ? m + 5 : m;
        size_t nt = rate ? (sub.nt ? sub.nt - 1 : 0) : sub.nt;
        if (grid_alloc(out, nt, 1) < 0) {
            grid_free(&sub);
            return ga_fail(GA_ENOMEM, e->why, sizeof e->why, "out of memory");
        }
        out->cols[0] = sub.nc ? sub.cols[0] : 0;
        out->aggregated = 1;
        double prev = 0;
        for (size_t i = 0; i < sub.nt; i++) {
            double v = agg_row(base, sub.v + i * (size_t)sub.nc, sub.nc, 1);
            if (!rate) {
                out->t[i] = sub.t[i];
                out->v[i] = v;
            } else if (i) {
                out->t[i - 1] = sub.t[i];
                out->v[i - 1] = v - prev;
            }
            prev = v;
        }
        grid_free(&sub);
        return 0;
    }
    if (!strcmp(op, "rolling") || !strcmp(op, "resample") || !strcmp(op, "clip") ||
        !strcmp(op, "clip_min") || !strcmp(op, "clip_max") || !strcmp(op, "rateofchange"))
        return ga_fail(GA_EINVAL, e->why, sizeof e->why,
                       "operation '%s' is not supported by gpuagg (docs/API.md)", op);
    int bk = binary_op(op);
    if (bk) {
        if (na != 3)
            return ga_fail(GA_EINVAL, e->why, sizeof e->why, "'%s' takes two operands", op);
        struct grid a = { 0 }, b = { 0 };
        double na_ = 0, nb_ = 0;
        int an, bn, rc;
        if ((rc = eval_operand(e, json_array_get(node, 1), &a, &na_, &an, depth)) < 0)
            return rc;
        if ((rc = eval_operand(e, json_array_get(node, 2), &b, &nb_, &bn, depth)) < 0) {
            grid_free(&a);
            return rc;
        }
        if (an && bn) {
            grid_free(&a);
            grid_free(&b);
            return ga_fail(GA_EINVAL, e->why, sizeof e->why, "'%s' needs at least one series", op);
        }
        const struct grid *shape = an ? &b : &a;
        if (!an && !bn && (a.nt != b.nt || (a.nc != b.nc && a.nc != 1 && b.nc != 1))) {
            grid_free(&a);
            grid_free(&b);
            return ga_fail(GA_EINVAL, e->why, sizeof e->why,
                           "'%s': the operands have different shapes", op);
        }
        int nc = an ? b.nc : bn ? a.nc : (a.nc > b.nc ? a.nc : b.nc);
        if (!an && !bn && b.nc > a.nc)
            shape = &b;
        if (grid_alloc(out, shape->nt, nc) < 0) {
            grid_free(&a);
            grid_free(&b);
            return ga_fail(GA_ENOMEM, e->why, sizeof e->why, "out of memory");
        }
        memcpy(out->t, shape->t, shape->nt * sizeof *shape->t);
        memcpy(out->cols, shape->cols, (size_t)nc * sizeof *out->cols);
        out->aggregated = shape->aggregated;
        for (size_t i = 0; i < shape->nt; i++)
            for (int c = 0; c < nc; c++) {
                double x = an ? na_ : a.v[i * (size_t)a.nc + (size_t)(a.nc == 1 ? 0 : c)];
                double y = bn ? nb_ : b.v[i * (size_t)b.nc + (size_t)(b.nc == 1 ? 0 : c)];
                out->v[i * (size_t)nc + (size_t)c] = binary(bk, x, y);
            }
        grid_free(&a);
        grid_free(&b);
        return 0;
    }
    int ok;
    unary(op, 0, &ok);
    if (ok) {
        if (na != 2)
            return ga_fail(GA_EINVAL, e->why, sizeof e->why, "'%s' takes one operand", op);
        int rc = eval(e, json_array_get(node, 1), out, depth + 1);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < out->nt * (size_t)out->nc; i++)
            out->v[i] = unary(op, out->v[i], &ok);
        return 0;
    }
    return ga_fail(GA_EINVAL, e->why, sizeof e->why, "unknown operation '%s'", op);
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

static int parse_params(struct http_req *req, struct http_resp *resp, struct params *p)
{
    if (api_range_args(req, resp, &p->start, &p->stop, &p->gran))
        return 400;
    p->has_start = http_arg(req, "start") != NULL;
    p->has_stop = http_arg(req, "stop") != NULL;
    const char *no = http_arg(req, "needed_overlap"), *fill = http_arg(req, "fill");
    const char *det = http_arg(req, "details");
    p->details = det && (!strcasecmp(det, "true") || !strcmp(det, "1"));
    p->needed_overlap = 100.0;
    if (no) {
        char *end;
        p->needed_overlap = strtod(no, &end);
        if (*end || !(p->needed_overlap >= 0 && p->needed_overlap <= 100)) {
            http_error(resp, 400, "Invalid value for needed_overlap: must be a number 0..100");
            return 400;
        }
    }
    p->fill_kind = (!fill && !no) ? 1 : 0;
    if (fill) {
        char *end;
        if (!strcmp(fill, "dropna"))
            p->fill_kind = 1;
        else if (!strcmp(fill, "null"))
            p->fill_kind = 2;
        else if ((p->fill = strtod(fill, &end)), *end == '\0' && end != fill && isfinite(p->fill))
            p->fill_kind = 3;
        else {
            http_error(resp, 400, "Invalid value for fill: a number, 'null' or 'dropna'");
            return 400;
        }
    }
    return 0;
}

static json_t *measure_triplet(int64_t t, int64_t g, double v)
{
    char iso[40];
    api_iso(t, iso);
    return json_pack("[s, f, o]", iso, (double)g / 1e9, isfinite(v) ? json_real(v) : json_null());
}

static int64_t floor_to(int64_t t, int64_t g)
{
    if (t == INT64_MIN)
        return t;
    int64_t r = t % g;
    return r < 0 ? t - r - g : t - r;
}

/* Compute the operations over cols; the Gnocchi-shaped "measures" value
 * in *out.  0, or the HTTP status with resp set. */
static int compute(struct http_req *req, struct http_resp *resp, const json_t *ops,
                   const struct refs *refs, const struct col *cols, int ncols,
                   const struct params *p, int by_resource, json_t **out)
{
    *out = NULL;
    /* the granularities asked, each column's check */
    int64_t grans[MAX_GRANS];
    int ng = 0;
    for (int c = 0; c < ncols; c++) {
        const json_t *pol = json_object_get(cols[c].metric, "policy");
        const char *agg = refs->r[cols[c].ref].agg;
        if (!api_policy_has_method(pol, agg)) {
            http_json(resp, 404, json_pack("{s:i, s:s, s:{s:s, s:[[s, s]]}}", "code", 404, "title",
                                           "Not Found", "description", "cause",
                                           "Metrics with unknown aggregation", "detail",
                                           json_string_value(json_object_get(cols[c].metric, "id")),
                                           agg));
            return 404;
        }
        int64_t g[MAX_GRANS];
        int n = api_policy_grans(pol, g, MAX_GRANS);
        if (p->gran) {
            int found = 0;
            for (int i = 0; i < n; i++)
                found |= g[i] == p->gran;
            if (!found) {
                http_error(resp, 400, "Granularity '%g' for metric %s does not exist",
                           (double)p->gran / 1e9,
                           json_string_value(json_object_get(cols[c].metric, "id")));
                return 400;
            }
            continue;
        }
        for (int i = 0; i < n; i++) {
            int have = 0;
            for (int k = 0; k < ng; k++)
                have |= grans[k] == g[i];
            if (!have && ng < MAX_GRANS)
                grans[ng++] = g[i];
        }
    }
    if (p->gran)
        grans[ng++] = p->gran;
    for (int a = 1; a < ng; a++)
        for (int b = a; b > 0 && grans[b] > grans[b - 1]; b--) {
            int64_t t = grans[b];
            grans[b] = grans[b - 1];
            grans[b - 1] = t;
        }
    int max_points = http_server_config(req->srv)->http.max_points;
    size_t budget = (size_t)max_points, used = 0;  /* points over every granularity */
    json_t *res = json_object();
    json_t *aggregated = NULL;
    int status = 0;
    for (int gi = 0; gi < ng && !status; gi++) {
        int64_t g = grans[gi];
        /* the series of this sampling */
        int64_t **ts = calloc((size_t)ncols, sizeof *ts);
        double **vs = calloc((size_t)ncols, sizeof *vs);
        size_t *ns = calloc((size_t)ncols, sizeof *ns);
        int *in_g = calloc((size_t)ncols, sizeof *in_g);
        struct grid grid = { 0 }, outg = { 0 };
        int nin = 0;
        size_t total = 0;
        if (!ts || !vs || !ns || !in_g) {
            http_error(resp, 500, "out of memory");
            status = 500;
            goto next;
        }
        for (int c = 0; c < ncols; c++) {
            int64_t pg[MAX_GRANS];
            int n = api_policy_grans(json_object_get(cols[c].metric, "policy"), pg, MAX_GRANS);
            for (int i = 0; i < n; i++)
                in_g[c] |= pg[i] == g;
            if (!in_g[c])
                continue;
            char err[512];
            int rc = api_series(http_server_pgq(req->srv),
                                json_string_value(json_object_get(cols[c].metric, "gpuagg_name")),
                                refs->r[cols[c].ref].agg,
                                g, floor_to(p->start, g), p->stop, &ts[c], &vs[c], &ns[c], err,
                                sizeof err);
            if (rc < 0) {
                api_db_error(resp, rc, err);
                status = resp->status;
                goto next;
            }
            total += ns[c];
            nin++;
            if (total > budget - used) {
                http_error(resp, 400, "more than http.max_points (%d) points: narrow start/stop, "
                           "give a granularity or fewer metrics", max_points);
                status = 400;
                goto next;
            }
        }
        used += total;
        if (!nin)
            goto next;
        /* union of the times (merge of sorted lists) */
        {
            int64_t *all = malloc((total ? total : 1) * sizeof *all);
            size_t na = 0;
            if (!all) {
                http_error(resp, 500, "out of memory");
                status = 500;
                goto next;
            }
            for (int c = 0; c < ncols; c++)
                if (in_g[c]) {
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
            if ((double)nu * nin > 4.0 * max_points) {
                free(all);
                http_error(resp, 400, "%zu timestamps x %d series is over 4 x http.max_points "
                           "(%d) cells: narrow start/stop, give a granularity or fewer metrics",
                           nu, nin, max_points);
                status = 400;
                goto next;
            }
            if (grid_alloc(&grid, nu, nin) < 0) {
                free(all);
                http_error(resp, 500, "out of memory");
                status = 500;
                goto next;
            }
            memcpy(grid.t, all, nu * sizeof *all);
            free(all);
            double filler = p->fill_kind == 3 ? p->fill : NAN;
            for (size_t i = 0; i < nu * (size_t)nin; i++)
                grid.v[i] = filler;
            int o = 0;
            for (int c = 0; c < ncols; c++) {
                if (!in_g[c])
                    continue;
                grid.cols[o] = c;
                size_t k = 0;
                for (size_t i = 0; i < ns[c]; i++) {
                    while (grid.t[k] < ts[c][i])
                        k++;
                    grid.v[k * (size_t)nin + (size_t)o] = vs[c][i];
                }
                o++;
            }
        }
        if (p->fill_kind == 0) {
            /* Gnocchi's overlap rule */
            size_t first = SIZE_MAX, last = 0, nover = 0;
            for (size_t i = 0; i < grid.nt; i++) {
                int full = 1;
                for (int c = 0; c < nin; c++)
                    full &= !isnan(grid.v[i * (size_t)nin + (size_t)c]);
                if (full) {
                    nover++;
                    first = first == SIZE_MAX ? i : first;
                    last = i;
                }
            }
            if (!nover && p->needed_overlap > 0) {
                http_error(resp, 400, "No overlap");
                status = 400;
                goto next;
            }
            size_t lo = 0, hi = grid.nt;
            if (nover && !p->has_stop)
                hi = last + 1;
            if (nover && !p->has_start)
                lo = first;
            if (hi > lo) {
                double pct = (double)nover * 100.0 / (double)(hi - lo);
                if (pct < p->needed_overlap) {
                    http_error(resp, 400, "Less than %f%% of datapoints overlap in this timespan "
                               "(%.2f%%)", p->needed_overlap, pct);
                    status = 400;
                    goto next;
                }
                if (lo) {
                    memmove(grid.t, grid.t + lo, (hi - lo) * sizeof *grid.t);
                    memmove(grid.v, grid.v + lo * (size_t)nin, (hi - lo) * (size_t)nin * sizeof *grid.v);
                }
                grid.nt = hi - lo;
            }
        }
        {
            struct eval e = { .in = &grid, .cols = cols, .refs = refs };
            if (eval(&e, ops, &outg, 0) < 0) {
                http_json(resp, 400, json_pack("{s:i, s:s, s:{s:s, s:s, s:O}}", "code", 400, "title",
                                               "Bad Request", "description", "cause",
                                               "Invalid operations", "reason", e.why, "detail",
                                               ops));
                status = 400;
                goto next;
            }
        }
        /* the output */
        for (int c = 0; c < outg.nc; c++) {
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
                json_array_append_new(list, measure_triplet(outg.t[i], g, v));
            }
        }
    next:
        grid_free(&grid);
        grid_free(&outg);
        for (int c = 0; ts && c < ncols; c++) {
            free(ts[c]);
            free(vs[c]);
        }
        free(ts);
        free(vs);
        free(ns);
        free(in_g);
    }
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

/* The 200 answer of an aggregates read: the legacy list (the "aggregated"
 * series alone) or {"measures": *out, "references": refs when given}.
 * Takes *out (set to NULL when moved) and refs. */
static void reply_measures(struct http_resp *resp, json_t **out, int legacy_list, json_t *refs)
{
    if (legacy_list) {
        json_t *a = json_object_get(*out, "aggregated");
        http_json(resp, 200, json_incref(a ? a : json_array()));
        json_decref(refs);
        return;
    }
    json_t *body = json_pack("{s:o}", "measures", *out);
    *out = NULL;
    if (refs)
        json_object_set_new(body, "references", refs);
    http_json(resp, 200, body);
}

static void error_json(struct http_resp *resp, int code, const char *cause, json_t *detail)
{
    http_json(resp, code, json_pack("{s:i, s:s, s:{s:s, s:o}}", "code", code, "title",
                                    code == 404 ? "Not Found" : "Bad Request", "description",
                                    "cause", cause, "detail", detail));
}

/* The columns of one group of resources: each (resource, metric whose name
 * matches a reference's wildcard).  Returns the count. */
static int resource_cols(const json_t *resources, const struct refs *refs, const json_t *metric_rows,
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

/* The whole aggregates request: operations (array), optional search and
 * resource_type, groupby attributes.  Sets resp. */
static void aggregates(struct http_req *req, struct http_resp *resp, const json_t *ops,
                       const json_t *search, const char *rtype, int has_search,
                       const char *const *groupby, int ngroupby, int legacy_list)
{
    struct params p;
    if (parse_params(req, resp, &p))
        return;
    struct refs refs = { 0 };
    char why[256];
    if (collect(ops, &refs, 0, why, sizeof why) < 0) {
        error_json(resp, 400, "Invalid operations", json_string(why));
        return;
    }
    if (!refs.n) {
        http_json(resp, 400, json_pack("{s:i, s:s, s:{s:s, s:s, s:O}}", "code", 400, "title",
                                       "Bad Request", "description", "cause", "Operations is invalid",
                                       "reason", "At least one 'metric' is required", "detail", ops));
        return;
    }
    struct col *cols = calloc(MAX_COLS, sizeof *cols);
    if (!cols) {
        http_error(resp, 500, "out of memory");
        return;
    }
    json_t *out = NULL, *keep = NULL, *metric_rows = NULL, *resources = NULL, *names = NULL;
    if (!has_search) {
        /* metric ids (or gpuagg names) */
        keep = json_array();
        json_t *missing = json_array();
        for (int k = 0; k < refs.n; k++) {
            char uuid[API_UUID_LEN], sq[256], sql[2048];
            const char *vals[3];
            int n = 1, is_id = api_uuid_parse(refs.r[k].name, uuid);
            vals[0] = is_id ? uuid : refs.r[k].name;
            snprintf(sql, sizeof sql, "SELECT " API_METRIC_JSON_SQL API_METRIC_FROM_SQL
                     " WHERE %s AND (rm.resource IS NULL OR %s) LIMIT 1",
                     is_id ? "m.uuid = $1::uuid" : "m.name = $1",
                     api_scope_sql(&req->ident, sq, sizeof sq, vals, &n));
            json_t *rows = api_query_json(req, resp, sql, n, vals);
            if (!rows) {
                json_decref(missing);
                goto out;
            }
            json_t *row = json_array_get(rows, 0);
            if (!row) {
                json_array_append_new(missing, json_string(refs.r[k].name));
            } else {
                json_array_append(keep, row);
                cols[k].ref = k;
                cols[k].metric = row;
                cols[k].mname = json_string_value(json_object_get(row, "id"));
            }
            json_decref(rows);
        }
        if (json_array_size(missing)) {
            http_json(resp, 404, json_pack("{s:i, s:s, s:{s:s, s:s, s:o}}", "code", 404, "title",
                                           "Not Found", "description", "cause", "Unknown metrics",
                                           "reason", "Provided metrics don't exists", "detail",
                                           missing));
            goto out;
        }
        json_decref(missing);
        if (compute(req, resp, ops, &refs, cols, refs.n, &p, 0, &out))
            goto out;
        json_t *refsj = NULL;
        if (p.details && !legacy_list) {
            size_t i;
            json_t *m;
            refsj = json_array();
            json_array_foreach(keep, i, m) json_array_append_new(refsj, api_metric_out(m));
        }
        reply_measures(resp, &out, legacy_list, refsj);
        goto out;
    }
    /* search: resources, their metrics by name */
    if (api_resources_query(req, resp, rtype, search, 1, &resources))
        goto out;
    if (!(metric_rows = metrics_of(req, resp, resources)))
        goto out;
    names = json_array();
    for (int k = 0; k < refs.n; k++)
        json_array_append_new(names, json_string(refs.r[k].name));
    if (!ngroupby) {
        int n = resource_cols(resources, &refs, metric_rows, cols, MAX_COLS);
        if (!n) {
            error_json(resp, 400, "Metrics not found", names);
            names = NULL;
            goto out;
        }
        if (compute(req, resp, ops, &refs, cols, n, &p, 1, &out))
            goto out;
        reply_measures(resp, &out, legacy_list, p.details ? json_incref(resources) : NULL);
        goto out;
    }
    /* groupby: one answer per distinct group, in the order of the groups' keys */
    json_t *groups = json_array(), *results = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(resources, i, r) {
        json_t *g = group_of(r, groupby, ngroupby);
        int seen = 0;
        for (size_t k = 0; k < json_array_size(groups) && !seen; k++)
            seen = json_equal(json_array_get(groups, k), g);
        if (!seen)
            json_array_append(groups, g);
        json_decref(g);
    }
    json_t *g;
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
            json_t *mv = legacy_list ? json_incref(json_object_get(m, "aggregated"))
                                     : json_pack("{s:O}", "measures", m);
            json_decref(m);
            json_array_append_new(results, json_pack("{s:O, s:o}", "group", g, "measures",
                                                     mv ? mv : json_array()));
        }
        json_decref(members);
    }
    json_decref(groups);
    if (!json_array_size(results)) {
        json_decref(results);
        error_json(resp, 400, "Metrics not found", names);
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
        http_error(resp, 400, "Invalid input: required key not provided @ data['operations']");
        json_decref(body);
        return;
    }
    if (json_is_string(ops)) {
        char why[128] = "";
        const char *s = json_string_value(ops);
        parsed = sexp(&s, 0, why, sizeof why);
        while (parsed && isspace((unsigned char)*s))
            s++;
        if (!parsed || *s || !json_is_array(parsed)) {
            http_json(resp, 400, json_pack("{s:i, s:s, s:{s:s, s:s, s:s}}", "code", 400, "title",
                                           "Bad Request", "description", "cause", "Invalid operations",
                                           "reason", "Fail to parse the operations string", "detail",
                                           why[0] ? why : "trailing text"));
            json_decref(parsed);
            json_decref(body);
            return;
        }
        ops = parsed;
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
               rt ? json_string_value(rt) : "generic", has_search, gb, ngb, 0);
done:
    json_decref(parsed);
    json_decref(body);
}

/* GET /v1/aggregation/metric?metric=ID&metric=ID&aggregation=&reaggregation= */
void api_aggregation_metric(struct http_req *req, struct http_resp *resp)
{
    const char *ids[MAX_REFS];
    int n = http_args(req, "metric", ids, MAX_REFS);
    const char *agg = http_arg(req, "aggregation"), *re = http_arg(req, "reaggregation");
    if (!agg)
        agg = "mean";
    if (!n) {
        http_error(resp, 400, "Invalid input: at least one metric= is required");
        return;
    }
    json_t *pairs = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(pairs, json_pack("[s, s]", ids[i], agg));
    json_t *metric = json_pack("[s]", "metric");
    json_array_extend(metric, pairs);
    json_decref(pairs);
    json_t *ops = json_pack("[s, s, o]", "aggregate", re ? re : agg, metric);
    aggregates(req, resp, ops, NULL, NULL, 0, NULL, 0, 1);
    json_decref(ops);
}

/* GET or POST /v1/aggregation/resource/{type}/metric/{name}: the body is
 * the search filter. */
void api_aggregation_resource(struct http_req *req, struct http_resp *resp)
{
    const char *agg = http_arg(req, "aggregation"), *re = http_arg(req, "reaggregation");
    if (!agg)
        agg = "mean";
    json_t *search = NULL;
    if (req->body_len) {
        json_error_t je;
        if (!(search = json_loadb(req->body, req->body_len, 0, &je))) {
            http_error(resp, 400, "Invalid JSON body: %s", je.text);
            return;
        }
    }
    json_t *ops = json_pack("[s, s, [s, s, s]]", "aggregate", re ? re : agg, "metric",
                            req->captures[1], agg);
    char gbuf[1024];
    const char *gb[16];
    int ngb = groupby_args(req, gbuf, sizeof gbuf, gb, 16);
    aggregates(req, resp, ops, search && json_object_size(search) ? search : NULL,
               req->captures[0], 1, gb, ngb, 1);
    json_decref(ops);
    json_decref(search);
}
