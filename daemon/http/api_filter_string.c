/* api_filter_string.c — Gnocchi's string filter syntax (the `filter`
 * query parameter of POST /v1/search/resource/{type}, what
 * `gnocchi resource search "host='x'"` sends) turned into the JSON filter
 * it means, as Gnocchi's QueryStringSearchAttrFilter does (docs/API.md
 * "The search filter language"). */
#include "daemon/http/api_filter_string.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

struct qs_ps {
    const char *s, *p;       /* the text, the read position */
    char *why;
    size_t whylen;
    int depth;
};

static json_t *qs_fail(struct qs_ps *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_t *qs_fail(struct qs_ps *ps, const char *fmt, ...)
{
    if (ps->why[0])             /* the first (innermost) reason wins */
        return NULL;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(ps->why, ps->whylen, "%s (at char %d)", msg, (int)(ps->p - ps->s));
    return NULL;
}

static void qs_skip_ws(struct qs_ps *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

/* Length of the word (letters, digits, '_') at p. */
static size_t qs_word_len(const char *p)
{
    size_t n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_')
        n++;
    return n;
}

/* 1 if the word at ps->p is w (and ends there); consumes it. */
static int qs_take_word(struct qs_ps *ps, const char *w)
{
    qs_skip_ws(ps);
    size_t n = strlen(w);
    if (strncmp(ps->p, w, n) == 0 && !isalnum((unsigned char)ps->p[n]) && ps->p[n] != '_') {
        ps->p += n;
        return 1;
    }
    return 0;
}

/* 1 if the text at ps->p is t; consumes it. */
static int qs_take(struct qs_ps *ps, const char *t)
{
    qs_skip_ws(ps);
    size_t n = strlen(t);
    if (strncmp(ps->p, t, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

/* Length of a UUID (32 hex digits, dashes optional in the 8-4-4-4-12
 * places) at p, 0 if none. */
static size_t qs_uuid_len(const char *p)
{
    static const int groups[] = { 8, 4, 4, 4, 12 };
    size_t n = 0;
    for (int g = 0; g < 5; g++) {
        if (g && p[n] == '-')
            n++;
        for (int k = 0; k < groups[g]; k++, n++)
            if (!isxdigit((unsigned char)p[n]))
                return 0;
    }
    return isalnum((unsigned char)p[n]) || p[n] == '_' ? 0 : n;
}

/* Length of a number ([+-]?digits(.digits*)?([eE][+-]?digits)?) at p, 0
 * if none. */
static size_t qs_number_len(const char *p)
{
    size_t n = 0;
    if (p[n] == '+' || p[n] == '-')
        n++;
    if (!isdigit((unsigned char)p[n]))
        return 0;
    while (isdigit((unsigned char)p[n]))
        n++;
    if (p[n] == '.')
        for (n++; isdigit((unsigned char)p[n]); n++) {}
    if (p[n] == 'e' || p[n] == 'E') {
        size_t m = n + 1;
        if (p[m] == '+' || p[m] == '-')
            m++;
        if (isdigit((unsigned char)p[m])) {
            while (isdigit((unsigned char)p[m]))
                m++;
            n = m;
        }
    }
    return n;
}

/* A value: null, a boolean, a UUID, a bare word, a number, a quoted
 * string or a [list]. */
static json_t *qs_term(struct qs_ps *ps)
{
    qs_skip_ws(ps);
    const char *p = ps->p;
    size_t n;
    if (*p == '\'' || *p == '"') {
        const char *end = strchr(p + 1, *p);
        if (!end)
            return qs_fail(ps, "unterminated quoted string");
        ps->p = end + 1;
        return json_stringn(p + 1, (size_t)(end - p - 1));
    }
    if (*p == '[') {
        ps->p++;
        json_t *list = json_array();
        if (qs_take(ps, "]"))
            return list;
        do {
            json_t *v = qs_term(ps);
            if (!v) {
                json_decref(list);
                return NULL;
            }
            json_array_append_new(list, v);
        } while (qs_take(ps, ","));
        if (!qs_take(ps, "]")) {
            json_decref(list);
            return qs_fail(ps, "expected ',' or ']' in a list");
        }
        return list;
    }
    if ((n = qs_uuid_len(p))) {
        ps->p += n;
        return json_stringn(p, n);
    }
    if (isalpha((unsigned char)*p)) {
        n = qs_word_len(p);
        ps->p += n;
        static const char *const nulls[] = { "None", "none", "null" };
        for (int i = 0; i < 3; i++)
            if (n == strlen(nulls[i]) && !strncmp(p, nulls[i], n))
                return json_null();
        if ((n == 4 && (!strncmp(p, "True", 4) || !strncmp(p, "true", 4))))
            return json_true();
        if ((n == 5 && (!strncmp(p, "False", 5) || !strncmp(p, "false", 5))))
            return json_false();
        return json_stringn(p, n);
    }
    if ((n = qs_number_len(p))) {
        char buf[64];
        if (n >= sizeof buf)
            return qs_fail(ps, "number too long");
        memcpy(buf, p, n);
        buf[n] = '\0';
        ps->p += n;
        return json_real(strtod(buf, NULL));
    }
    return qs_fail(ps, *p ? "expected a value" : "expected a value, found the end");
}

/* The comparison operator at ps->p (consumed), or NULL. */
static const char *qs_cmp_operator(struct qs_ps *ps)
{
    static const char *const sym[] = { ">=", "<=", "!=", "==", ">", "<", "=",
                                       "\xe2\x89\xa0", "\xe2\x89\xa5", "\xe2\x89\xa4" };
    static const char *const words[] = { "eq", "ne", "lt", "gt", "ge", "le", "in", "like" };
    for (size_t i = 0; i < sizeof sym / sizeof sym[0]; i++)
        if (qs_take(ps, sym[i]))
            return !strcmp(sym[i], "\xe2\x89\xa0") ? "!=" : sym[i];
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (qs_take_word(ps, words[i]))
            return words[i];
    return NULL;
}

static json_t *qs_or_expr(struct qs_ps *ps);

/* ( expr ) | not X | name OP value */
static json_t *qs_unary(struct qs_ps *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return qs_fail(ps, "nested deeper than %d", MAX_DEPTH);
    json_t *out = NULL;
    if (qs_take(ps, "(")) {
        out = qs_or_expr(ps);
        if (out && !qs_take(ps, ")")) {
            json_decref(out);
            out = qs_fail(ps, "expected ')'");
        }
    } else if (qs_take_word(ps, "not")) {
        json_t *x = qs_unary(ps);
        out = x ? json_pack("{s:o}", "not", x) : NULL;
    } else {
        qs_skip_ws(ps);
        const char *at = ps->p;
        json_t *lhs = qs_term(ps);
        if (!lhs)
            return NULL;
        if (!json_is_string(lhs)) {
            json_decref(lhs);
            ps->p = at;
            return qs_fail(ps, "expected an attribute name");
        }
        const char *op = qs_cmp_operator(ps);
        if (!op) {
            json_decref(lhs);
            return qs_fail(ps, "expected a comparison operator (=, ==, !=, <, <=, >, >=, like, in)");
        }
        json_t *rhs = qs_term(ps);
        if (!rhs) {
            json_decref(lhs);
            return NULL;
        }
        json_t *cmp = json_object();
        json_object_set_new(cmp, json_string_value(lhs), rhs);
        json_decref(lhs);
        out = json_pack("{s:o}", op, cmp);
    }
    ps->depth--;
    return out;
}

/* operand (OP operand)*, OP one of the two spellings in ops; one list
 * node per run of the same spelling, as Gnocchi's parser builds them. */
static json_t *qs_chain(struct qs_ps *ps, json_t *(*operand)(struct qs_ps *), const char *const ops[2])
{
    json_t *left = operand(ps);
    while (left) {
        int k = qs_take_word(ps, ops[0]) ? 0 : qs_take(ps, ops[1]) ? 1 : -1;
        if (k < 0)
            break;
        json_t *right = operand(ps);
        if (!right) {
            json_decref(left);
            return NULL;
        }
        json_t *list = json_object_get(left, ops[k]);
        if (json_object_size(left) == 1 && json_is_array(list)) {
            json_array_append_new(list, right);
        } else {
            json_t *node = json_pack("{s:[o, o]}", ops[k], left, right);
            left = node;
        }
    }
    return left;
}

static json_t *qs_and_expr(struct qs_ps *ps)
{
    static const char *const ops[2] = { "and", "\xe2\x88\xa7" };
    return qs_chain(ps, qs_unary, ops);
}

static json_t *qs_or_expr(struct qs_ps *ps)
{
    static const char *const ops[2] = { "or", "\xe2\x88\xa8" };
    return qs_chain(ps, qs_and_expr, ops);
}

json_t *api_filter_parse_string(const char *text, char *why, size_t whylen)
{
    struct qs_ps ps = { .s = text, .p = text, .why = why, .whylen = whylen };
    why[0] = '\0';
    json_t *out = qs_or_expr(&ps);
    if (out) {
        qs_skip_ws(&ps);
        if (*ps.p) {
            json_decref(out);
            out = qs_fail(&ps, "expected the end of the filter, found '%.20s'", ps.p);
        }
    }
    if (!out && !why[0])
        snprintf(why, whylen, "not a filter (a string is not valid UTF-8?)");
    return out;
}
