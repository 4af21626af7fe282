/* agg_eval.c — Gnocchi's aggregates operations over a grid (agg_eval.h),
 * following gnocchi/rest/aggregates/operations.py node for node. */
#include "daemon/http/agg_eval.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/agg_schema.h"
#include "daemon/http/agg_series.h"
#include "daemon/http/api.h"
#include "proto/ga_err.h"

/* ---- operators ------------------------------------------------------------------ */
static int is_comparison(int k)
{
    return k >= OP_EQ && k <= OP_NE;
}

/* numpy's maximum/minimum: NaN in either gives NaN */
static double np_max(double a, double b)
{
    return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}

static double np_min(double a, double b)
{
    return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
}

static double binary(int k, double a, double b)
{
    switch (k) {
    case OP_EQ: return a == b;
    case OP_LT: return a < b;
    case OP_GT: return a > b;
    case OP_LE: return a <= b;
    case OP_GE: return a >= b;
    case OP_NE: return a != b;
    case OP_MOD: {                        /* numpy.mod: the sign of the divisor */
        double r = fmod(a, b);
        if (r != 0 && (r < 0) != (b < 0))
            r += b;
        return r;
    }
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    case OP_POW: return pow(a, b);
    case OP_CLIP_MIN: return np_max(a, b);
    default: return np_min(a, b);
    }
}

static double unary(int k, double x)
{
    switch (k) {
    case 1: case 2: return fabs(x);
    case 3: case 4: return -x;
    case 5: return cos(x);
    case 6: return sin(x);
    case 7: return tan(x);
    case 8: return floor(x);
    default: return ceil(x);
    }
}

/* ---- references --------------------------------------------------------------------- */

static int ref_index(const struct agg_refs *rs, const char *name, const char *agg)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->r[i].name, name) && !strcmp(rs->r[i].agg, agg))
            return i;
    return -1;
}

static int add_ref(struct agg_refs *rs, const json_t *pair0, const json_t *pair1, char *why,
                   size_t wl)
{
    const char *n = json_string_value(pair0), *a = json_string_value(pair1);
    if (!n || !a)
        return ga_fail(GA_EINVAL, why, wl, "a metric reference is [\"metric\", NAME-OR-ID, "
                       "AGGREGATION]");
    if (ref_index(rs, n, a) >= 0)
        return 0;
    if (rs->n >= AGG_MAX_REFS)
        return ga_fail(GA_EINVAL, why, wl, "more than %d metric references", AGG_MAX_REFS);
    rs->r[rs->n].name = n;
    rs->r[rs->n].agg = a;
    rs->n++;
    return 0;
}

int agg_refs_collect(const json_t *node, struct agg_refs *rs, char *why, size_t wl)
{
    if (!json_is_array(node))
        return 0;
    const char *op = json_string_value(json_array_get(node, 0));
    if (op && !strcmp(op, "metric")) {
        const json_t *a1 = json_array_get(node, 1);
        if (json_is_array(a1)) {
            for (size_t i = 1; i < json_array_size(node); i++) {
                const json_t *p = json_array_get(node, i);
                if (add_ref(rs, json_array_get(p, 0), json_array_get(p, 1), why, wl) < 0)
                    return -1;
            }
            return 0;
        }
        return add_ref(rs, a1, json_array_get(node, 2), why, wl);
    }
    for (size_t i = 1; i < json_array_size(node); i++)
        if (agg_refs_collect(json_array_get(node, i), rs, why, wl) < 0)
            return -1;
    return 0;
}

/* ---- grids ------------------------------------------------------------------------- */

void agg_grid_free(struct agg_grid *g)
{
    free(g->t);
    free(g->v);
    free(g->cols);
    memset(g, 0, sizeof *g);
}

int agg_grid_alloc(struct agg_grid *g, size_t nt, int nc)
{
    int64_t gran = g->g;
    memset(g, 0, sizeof *g);
    g->g = gran;
    g->nt = nt;
    g->nc = nc;
    g->t = malloc((nt ? nt : 1) * sizeof *g->t);
    size_t cells = nt * (size_t)nc;
    g->v = malloc((cells ? cells : 1) * sizeof *g->v);
    g->cols = malloc((nc ? (size_t)nc : 1) * sizeof *g->cols);
    return g->t && g->v && g->cols ? 0 : GA_ENOMEM;
}

/* out: a new grid of nt x nc shaped like src (granularity, flags). */
static int grid_like(struct agg_grid *out, const struct agg_grid *src, size_t nt, int nc,
                     char *why, size_t wl)
{
    out->g = src->g;
    if (agg_grid_alloc(out, nt, nc) < 0)
        return ga_fail(GA_ENOMEM, why, wl, "out of memory");
    out->aggregated = src->aggregated;
    out->is_bool = src->is_bool;
    return 0;
}

/* ---- evaluation ---------------------------------------------------------------------- */

static int eval(struct agg_eval *e, const json_t *node, struct agg_grid *out, int depth);

/* A series or a number (then *is_num). */
static int operand(struct agg_eval *e, const json_t *node, struct agg_grid *out, double *num,
                   int *is_num, int depth)
{
    *is_num = node && !json_is_array(node) && agg_as_number(node, num);
    if (*is_num)
        return 0;
    return eval(e, node, out, depth + 1);
}

static int unaggregable(struct agg_eval *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->why, sizeof e->why, fmt, ap);
    va_end(ap);
    e->unaggregable = 1;
    return GA_EINVAL;
}

static int eval_metric(struct agg_eval *e, const json_t *node, struct agg_grid *out)
{
    const struct agg_grid *in = e->in;
    int sel[AGG_MAX_REFS] = { 0 }, nsel = 0;
    const json_t *a1 = json_array_get(node, 1);
    if (json_is_array(a1)) {
        for (size_t i = 1; i < json_array_size(node); i++) {
            const json_t *p = json_array_get(node, i);
            int k = ref_index(e->refs, json_string_value(json_array_get(p, 0)),
                              json_string_value(json_array_get(p, 1)));
            if (k >= 0)
                sel[k] = 1;
        }
    } else {
        int k = ref_index(e->refs, json_string_value(a1),
                          json_string_value(json_array_get(node, 2)));
        if (k >= 0)
            sel[k] = 1;
    }
    for (int c = 0; c < in->nc; c++)
        nsel += sel[e->col_ref[in->cols[c]]];
    if (grid_like(out, in, in->nt, nsel, e->why, sizeof e->why) < 0)
        return GA_ENOMEM;
    out->aggregated = 0;
    out->is_bool = 0;
    memcpy(out->t, in->t, in->nt * sizeof *in->t);
    int o = 0;
    for (int c = 0; c < in->nc; c++) {
        if (!sel[e->col_ref[in->cols[c]]])
            continue;
        out->cols[o] = in->cols[c];
        for (size_t i = 0; i < in->nt; i++)
            out->v[i * (size_t)nsel + (size_t)o] = in->v[i * (size_t)in->nc + (size_t)c];
        o++;
    }
    return 0;
}

/* aggregate / rolling / resample: [OP, METHOD, (ARG,) NODE] */
static int eval_aggregation(struct agg_eval *e, const char *op, const json_t *node,
                            struct agg_grid *out, int depth)
{
    const char *m = json_string_value(json_array_get(node, 1));
    size_t na = json_array_size(node);
    struct agg_grid sub = { 0 };
    int rc = eval(e, json_array_get(node, na - 1), &sub, depth + 1);
    if (rc < 0)
        return rc;
    int rate, red = agg_red_parse(m, &rate);
    if (!strcmp(op, "aggregate")) {
        size_t nt = rate ? (sub.nt ? sub.nt - 1 : 0) : sub.nt;
        if ((rc = grid_like(out, &sub, nt, 1, e->why, sizeof e->why)) < 0)
            goto done;
        out->cols[0] = sub.nc ? sub.cols[0] : 0;
        out->aggregated = 1;
        out->is_bool = 0;
        double prev = 0;
        for (size_t i = 0; i < sub.nt; i++) {
            double v = agg_red_apply(red, sub.v + i * (size_t)sub.nc, (size_t)sub.nc, 1);
            if (!rate) {
                out->t[i] = sub.t[i];
                out->v[i] = v;
            } else if (i) {
                out->t[i - 1] = sub.t[i];
                out->v[i - 1] = v - prev;
            }
            prev = v;
        }
        goto done;
    }
    if (!strcmp(op, "rolling")) {
        double wd;
        agg_as_number(json_array_get(node, 2), &wd);
        size_t w = (size_t)wd;
        if (w > sub.nt) {
            rc = unaggregable(e, "Rolling window '%zu' is greater than serie length '%zu'", w,
                              sub.nt);
            goto done;
        }
        size_t skip = w - 1 + (size_t)rate;
        size_t nt = sub.nt > skip ? sub.nt - skip : 0;
        if ((rc = grid_like(out, &sub, nt, sub.nc, e->why, sizeof e->why)) < 0)
            goto done;
        out->is_bool = 0;
        memcpy(out->t, sub.t + skip, nt * sizeof *out->t);
        memcpy(out->cols, sub.cols, (size_t)sub.nc * sizeof *out->cols);
        for (int c = 0; c < sub.nc; c++)
            agg_rolling(red, rate, sub.v + c, sub.nt, (size_t)sub.nc, w, out->v + c,
                        (size_t)sub.nc);
        goto done;
    }
    /* resample: carbonara's, series by series */
    {
        const json_t *a = json_array_get(node, 2);
        char buf[64];
        const char *s = json_string_value(a);
        int64_t sampling;
        if (json_is_number(a)) {
            snprintf(buf, sizeof buf, "%.17g", json_number_value(a));
            s = buf;
        }
        api_parse_span(s, &sampling);
        int64_t *tt = malloc((sub.nt ? sub.nt : 1) * sizeof *tt);
        double *col = malloc((sub.nt ? sub.nt : 1) * sizeof *col);
        double *res = malloc((sub.nt ? sub.nt : 1) * sizeof *res);
        size_t nt = 0;
        if (!tt || !col || !res) {
            rc = ga_fail(GA_ENOMEM, e->why, sizeof e->why, "out of memory");
        } else {
            sub.g = sampling;
            for (int c = 0; c < sub.nc && rc == 0; c++) {
                for (size_t i = 0; i < sub.nt; i++)
                    col[i] = sub.v[i * (size_t)sub.nc + (size_t)c];
                rc = agg_resample(m, sub.t, col, sub.nt, sampling, tt, res, &nt);
                if (rc == GA_EINVAL) {
                    ga_fail(rc, e->why, sizeof e->why, "resample: carbonara has no aggregation "
                            "method '%s'", m);
                    break;
                }
                if (rc < 0) {
                    ga_fail(rc, e->why, sizeof e->why, "out of memory");
                    break;
                }
                if (c == 0) {
                    if ((rc = grid_like(out, &sub, nt, sub.nc, e->why, sizeof e->why)) < 0)
                        break;
                    memcpy(out->t, tt, nt * sizeof *tt);
                    memcpy(out->cols, sub.cols, (size_t)sub.nc * sizeof *out->cols);
                }
                for (size_t i = 0; i < nt; i++)
                    out->v[i * (size_t)sub.nc + (size_t)c] = res[i];
            }
            if (rc == 0 && sub.nc == 0 && grid_like(out, &sub, 0, 0, e->why, sizeof e->why) < 0)
                rc = GA_ENOMEM;
        }
        free(tt);
        free(col);
        free(res);
    }
done:
    agg_grid_free(&sub);
    return rc;
}

/* Binary and ternary operators: operands a (series), b and c (series or
 * numbers; c absent for clip with two). */
static int eval_operator(struct agg_eval *e, const char *op, const json_t *node,
                         struct agg_grid *out, int depth)
{
    size_t na = json_array_size(node);
    int k = agg_binary_op(op), clip = !strcmp(op, "clip");
    struct agg_grid g[3] = { { 0 }, { 0 }, { 0 } };
    double num[3] = { 0, 0, NAN };
    int isn[3] = { 1, 1, 1 }, rc = 0, nops = (int)na - 1;
    for (int i = 0; i < nops && rc == 0; i++)
        rc = operand(e, json_array_get(node, (size_t)i + 1), &g[i], &num[i], &isn[i], depth);
    if (rc < 0)
        goto done;
    int first = -1, nser = 0;
    for (int i = 0; i < nops; i++)
        if (!isn[i]) {
            nser++;
            if (first < 0)
                first = i;
        }
    if (first < 0) {
        rc = ga_fail(GA_EINVAL, e->why, sizeof e->why, "'%s' needs at least one series operand",
                     op);
        goto done;
    }
    /* the shape: Gnocchi's numpy broadcasting of (times x series) */
    const struct agg_grid *shape = &g[first];
    int nc = shape->nc;
    for (int i = 0; i < nops; i++) {
        if (isn[i] || i == first)
            continue;
        if (g[i].nt != shape->nt || g[i].g != shape->g ||
            memcmp(g[i].t, shape->t, shape->nt * sizeof *shape->t)) {
            char *s1 = json_dumps(json_array_get(node, (size_t)first + 1), JSON_ENCODE_ANY);
            char *s2 = json_dumps(json_array_get(node, (size_t)i + 1), JSON_ENCODE_ANY);
            rc = unaggregable(e, "Can't compute timeseries with different granularity %s <> %s",
                              s1 ? s1 : "?", s2 ? s2 : "?");
            free(s1);
            free(s2);
            goto done;
        }
        if (g[i].nc != nc && g[i].nc != 1 && nc != 1) {
            rc = ga_fail(GA_EINVAL, e->why, sizeof e->why, "'%s': operands of %d and %d series "
                         "cannot be combined", op, nc, g[i].nc);
            goto done;
        }
        if (g[i].nc > nc) {
            nc = g[i].nc;
            shape = &g[i];
        }
    }
    if ((rc = grid_like(out, shape, shape->nt, nc, e->why, sizeof e->why)) < 0)
        goto done;
    memcpy(out->t, shape->t, shape->nt * sizeof *out->t);
    memcpy(out->cols, shape->cols, (size_t)nc * sizeof *out->cols);
    out->aggregated = 0;
    for (int i = 0; i < nops; i++)
        out->aggregated |= !isn[i] && g[i].aggregated;
    if (nser > 1 && nser == nops)
        out->aggregated = 1;              /* Gnocchi: operands all series give one */
    out->is_bool = !clip && is_comparison(k);
    for (size_t t = 0; t < out->nt; t++)
        for (int c = 0; c < nc; c++) {
            double x[3];
            for (int i = 0; i < 3; i++)
                x[i] = i >= nops || isn[i] ? num[i]
                       : g[i].v[t * (size_t)g[i].nc + (size_t)(g[i].nc == 1 ? 0 : c)];
            double r;
            if (clip) {
                r = np_max(x[0], x[1]);
                if (nops == 3)
                    r = np_min(r, x[2]);
            } else {
                r = binary(k, x[0], x[1]);
            }
            out->v[t * (size_t)nc + (size_t)c] = r;
        }
done:
    for (int i = 0; i < 3; i++)
        agg_grid_free(&g[i]);
    return rc;
}

static int eval(struct agg_eval *e, const json_t *node, struct agg_grid *out, int depth)
{
    if (depth > AGG_MAX_DEPTH)
        return ga_fail(GA_EINVAL, e->why, sizeof e->why, "operations nested too deep");
    const char *op = json_string_value(json_array_get(node, 0));
    if (!json_is_array(node) || !op)
        return ga_fail(GA_EINVAL, e->why, sizeof e->why,
                       "an operation is a list starting with its name");
    if (!strcmp(op, "metric"))
        return eval_metric(e, node, out);
    if (!strcmp(op, "aggregate") || !strcmp(op, "rolling") || !strcmp(op, "resample"))
        return eval_aggregation(e, op, node, out, depth);
    if (agg_binary_op(op) || !strcmp(op, "clip"))
        return eval_operator(e, op, node, out, depth);
    int u = agg_unary_op(op);
    if (u || !strcmp(op, "rateofchange")) {
        struct agg_grid sub = { 0 };
        int rc = eval(e, json_array_get(node, 1), &sub, depth + 1);
        if (rc < 0)
            return rc;
        if (u) {
            for (size_t i = 0; i < sub.nt * (size_t)sub.nc; i++)
                sub.v[i] = unary(u, sub.v[i]);
            sub.is_bool = 0;
            *out = sub;
            return 0;
        }
        /* rateofchange: (t[1:], differences along time, series by series) */
        size_t nt = sub.nt ? sub.nt - 1 : 0;
        if ((rc = grid_like(out, &sub, nt, sub.nc, e->why, sizeof e->why)) == 0) {
            out->is_bool = 0;
            memcpy(out->t, sub.t + (sub.nt ? 1 : 0), nt * sizeof *out->t);
            memcpy(out->cols, sub.cols, (size_t)sub.nc * sizeof *out->cols);
            for (size_t i = 0; i < nt; i++)
                for (int c = 0; c < sub.nc; c++)
                    out->v[i * (size_t)sub.nc + (size_t)c] =
                        sub.v[(i + 1) * (size_t)sub.nc + (size_t)c] -
                        sub.v[i * (size_t)sub.nc + (size_t)c];
        }
        agg_grid_free(&sub);
        return rc;
    }
    return ga_fail(GA_EINVAL, e->why, sizeof e->why, "unknown operation '%s'", op);
}

int agg_eval(struct agg_eval *e, const json_t *ops, struct agg_grid *out)
{
    e->unaggregable = 0;
    e->why[0] = '\0';
    memset(out, 0, sizeof *out);
    return eval(e, ops, out, 0);
}

