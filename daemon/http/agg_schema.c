/* agg_schema.c — the operations of POST /v1/aggregates as Gnocchi takes
 * them (agg_schema.h): the string form's parser, the operator names, and
 * api.py's OperationsSchema. */
#include "daemon/http/agg_schema.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/agg_eval.h"
#include "daemon/http/agg_series.h"
#include "daemon/http/api.h"

/* ---- the string form ----------------------------------------------------------- */

static json_t *sexp(const char **s, int depth, char *why, size_t wl)
{
    while (isspace((unsigned char)**s))
        (*s)++;
    if (depth > AGG_MAX_DEPTH) {
        snprintf(why, wl, "operations nested deeper than %d", AGG_MAX_DEPTH);
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
    /* words stay strings, as pyparsing gives them; the schema coerces numbers */
    json_t *str = json_stringn(b, (size_t)(*s - b));
    if (!str)
        snprintf(why, wl, "a word that is not valid UTF-8");
    return str;
}

json_t *agg_sexp_parse(const char *s, char *why, size_t wl)
{
    why[0] = '\0';
    json_t *j = sexp(&s, 0, why, wl);
    while (j && isspace((unsigned char)*s))
        s++;
    if (j && (*s || !json_is_array(j))) {
        snprintf(why, wl, *s ? "trailing text after the operations"
                             : "the operations are not a list");
        json_decref(j);
        return NULL;
    }
    return j;
}

/* ---- operator names ---------------------------------------------------------- */

int agg_binary_op(const char *op)
{
    static const struct { const char *name; int k; } ops[] = {
        { "=", OP_EQ }, { "==", OP_EQ }, { "eq", OP_EQ }, { "<", OP_LT }, { "lt", OP_LT },
        { ">", OP_GT }, { "gt", OP_GT }, { "<=", OP_LE }, { "\u2264", OP_LE }, { "le", OP_LE },
        { ">=", OP_GE }, { "\u2265", OP_GE }, { "ge", OP_GE }, { "!=", OP_NE }, { "\u2260", OP_NE },
        { "ne", OP_NE }, { "%", OP_MOD }, { "mod", OP_MOD }, { "+", OP_ADD }, { "add", OP_ADD },
        { "-", OP_SUB }, { "sub", OP_SUB }, { "*", OP_MUL }, { "\u00d7", OP_MUL },
        { "mul", OP_MUL },
        { "/", OP_DIV }, { "\u00f7", OP_DIV }, { "div", OP_DIV }, { "**", OP_POW }, { "^", OP_POW },
        { "pow", OP_POW }, { "clip_min", OP_CLIP_MIN }, { "clip_max", OP_CLIP_MAX },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i].name, op))
            return ops[i].k;
    return OP_NONE;
}

int agg_unary_op(const char *op)
{
    static const char *const ops[] = { "abs", "absolute", "neg", "negative", "cos", "sin", "tan",
                                       "floor", "ceil" };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i], op))
            return (int)i + 1;
    return 0;
}

/* A number where the schema takes one (voluptuous.Coerce(float)): a JSON
 * number or a string float() parses. */
int agg_as_number(const json_t *j, double *v)
{
    if (json_is_number(j)) {
        *v = json_number_value(j);
        return 1;
    }
    const char *s = json_string_value(j);
    if (!s || !*s)
        return 0;
    char *end;
    *v = strtod(s, &end);
    while (isspace((unsigned char)*end))
        end++;
    return *end == '\0' && !isspace((unsigned char)*s);
}

/* ---- the schema ------------------------------------------------------------------ */

static int is_pair(const json_t *p)
{
    return json_is_array(p) && json_array_size(p) == 2 && json_is_string(json_array_get(p, 0)) &&
           json_is_string(json_array_get(p, 1));
}

static int check_node(const json_t *n, int depth, int sub);

static int check_metric(const json_t *n)
{
    size_t na = json_array_size(n);
    if (na == 3 && json_is_string(json_array_get(n, 1)) && json_is_string(json_array_get(n, 2)))
        return 0;
    if (na < 2)
        return -1;
    for (size_t i = 1; i < na; i++)
        if (!is_pair(json_array_get(n, i)))
            return -1;
    return 0;
}

static int check_node(const json_t *n, int depth, int sub)
{
    double x;
    if (sub && agg_as_number(n, &x))
        return 0;
    if (!json_is_array(n) || depth > AGG_MAX_DEPTH || !json_array_size(n))
        return -1;
    const char *op = json_string_value(json_array_get(n, 0));
    size_t na = json_array_size(n);
    if (!op)
        return -1;
    if (!strcmp(op, "metric"))
        return check_metric(n);
    int rate;
    if (!strcmp(op, "aggregate") || !strcmp(op, "resample") || !strcmp(op, "rolling")) {
        const char *m = json_string_value(json_array_get(n, 1));
        if (!m || agg_red_parse(m, &rate) < 0)
            return -1;
        if (!strcmp(op, "aggregate"))
            return na == 3 ? check_node(json_array_get(n, 2), depth + 1, 1) : -1;
        if (na != 4)
            return -1;
        const json_t *a = json_array_get(n, 2);
        if (!strcmp(op, "resample")) {
            int64_t span;
            char buf[64];
            const char *s = json_string_value(a);
            if (json_is_number(a)) {
                snprintf(buf, sizeof buf, "%.17g", json_number_value(a));
                s = buf;
            }
            if (!s || api_parse_span(s, &span) < 0)
                return -1;
        } else if (!agg_as_number(a, &x) || !(x >= 1) || x > 1e9) {
            return -1;
        }
        return check_node(json_array_get(n, 3), depth + 1, 1);
    }
    if (!strcmp(op, "clip")) {
        if (na != 3 && na != 4)
            return -1;
    } else if (agg_binary_op(op)) {
        if (na != 3)
            return -1;
    } else if (agg_unary_op(op) || !strcmp(op, "rateofchange")) {
        if (na != 2)
            return -1;
    } else {
        return -1;
    }
    for (size_t i = 1; i < na; i++)
        if (check_node(json_array_get(n, i), depth + 1, 1) < 0)
            return -1;
    return 0;
}

int agg_ops_check(const json_t *ops, char *reason, size_t rl)
{
    if (json_is_array(ops) && !json_array_size(ops)) {
        snprintf(reason, rl, "Operation must not be empty for dictionary value @ "
                 "data['operations']");
        return -1;
    }
    if (!json_is_array(ops)) {
        snprintf(reason, rl, "Expected a tuple/list, got a %s for dictionary value @ "
                 "data['operations']", json_is_string(ops) ? "str" : json_is_number(ops) ?
                 "float" : json_is_object(ops) ? "dict" : "NoneType");
        return -1;
    }
    if (check_node(ops, 0, 0) == 0)
        return 0;
    const json_t *op = json_array_get(ops, 0);
    char *s = json_dumps(op, JSON_ENCODE_ANY);
    snprintf(reason, rl, "'%s' operation invalid for dictionary value @ data['operations']",
             json_is_string(op) ? json_string_value(op) : s ? s : "?");
    free(s);
    return -1;
}
