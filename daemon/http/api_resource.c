/* api_resource.c — Gnocchi's resource reads: GET /v1/resource/{type}[/{id}],
 * POST /v1/search/resource/{type} with the filter language checked here
 * and compiled to a search of the resources table from the pieces of
 * storage/pg_api.h, GET /v1/resource_type[/{name}] (docs/API.md
 * "Resources"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/http/api.h"
#include "daemon/http/api_filter_string.h"
#include "daemon/http/api_resource.h"
#include "daemon/http/http_routes.h"
#include "proto/ga_err.h"
#include "proto/uuid.h"
#include "storage/pg_api.h"

#define LIST_MAX 1000
#define FILTER_MAX_PARAMS 128
#define FILTER_MAX_DEPTH 16
#define SQL_MAX 16384

/* ---- the filter language ---------------------------------------------------- */

struct fctx {
    struct http_req *req;
    const struct api_resource_type *type;   /* whose attributes a filter may name */
    int err_plain;                          /* err is the whole answer, no prefix */
    json_t *err_desc;                       /* else this object is, when set */
    char *sql;                              /* the statement, from pg_api's pieces */
    size_t len, cap;
    const char *vals[FILTER_MAX_PARAMS];
    char *owned[FILTER_MAX_PARAMS];     /* strings made here, freed after */
    int n;
    char err[512];
};

/* Append a piece of the statement (storage/pg_api.h "resource search"). */
static int put(struct fctx *f, const char *piece)
{
    size_t k = strlen(piece);
    if (k >= f->cap - f->len)
        return ga_fail(GA_ETOOBIG, f->err, sizeof f->err, "filter too large");
    memcpy(f->sql + f->len, piece, k + 1);
    f->len += k;
    return 0;
}

/* Add a parameter (copied); its $ number, or < 0. */
static int param(struct fctx *f, const char *v)
{
    if (f->n >= FILTER_MAX_PARAMS)
        return ga_fail(GA_ETOOBIG, f->err, sizeof f->err, "filter has more than %d values",
                       FILTER_MAX_PARAMS);
    char *c = strdup(v);
    if (!c)
        return ga_fail(GA_ENOMEM, f->err, sizeof f->err, "out of memory");
    f->owned[f->n] = c;
    f->vals[f->n] = c;
    return ++f->n;
}

static const char *const columns[] = { "id", "type", "project_id", "user_id",
                                       "original_resource_id", "creator", "started_at",
                                       "revision_start", "ended_at", "revision_end",
                                       "created_by_user_id", "created_by_project_id" };

static int is_column(const char *k)
{
    for (size_t i = 0; i < sizeof columns / sizeof columns[0]; i++)
        if (strcmp(columns[i], k) == 0)
            return 1;
    return 0;
}

/* The comparison an operator names, -1 if op is not one. */
static int cmp_op(const char *op)
{
    static const struct { const char *in; enum pg_api_cmp cmp; } ops[] = {
        { "=", PG_API_EQ }, { "==", PG_API_EQ }, { "eq", PG_API_EQ },
        { "!=", PG_API_NE }, { "ne", PG_API_NE },
        { "<", PG_API_LT }, { "lt", PG_API_LT }, { ">", PG_API_GT }, { "gt", PG_API_GT },
        { "<=", PG_API_LE }, { "le", PG_API_LE }, { "\xe2\x89\xa4", PG_API_LE },
        { ">=", PG_API_GE }, { "ge", PG_API_GE }, { "\xe2\x89\xa5", PG_API_GE },
        { "like", PG_API_LIKE },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(ops[i].in, op) == 0)
            return (int)ops[i].cmp;
    return -1;
}

/* One comparison field CMP value. */
static int compare(struct fctx *f, const char *field, enum pg_api_cmp cmp, const json_t *v)
{
    char buf[64], why[256], piece[PG_API_PIECE_MAX];
    int k, eq_ne = cmp == PG_API_EQ || cmp == PG_API_NE;
    if (json_is_null(v)) {
        if (!eq_ne)
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "null compares only with = and !=");
        if (!strcmp(field, "ended_at") || !strcmp(field, "revision_end"))
            return put(f, pg_api_search_bool(cmp == PG_API_EQ));
        if (is_column(field))
            return put(f, pg_api_search_column_null(piece, sizeof piece, field, cmp));
        if ((k = param(f, field)) < 0)
            return k;
        return put(f, pg_api_search_attr_null(piece, sizeof piece, k, cmp));
    }
    if (!strcmp(field, "ended_at") || !strcmp(field, "revision_end"))
        return put(f, pg_api_search_bool(0));     /* never set: resources are not ended */
    if (!strcmp(field, "id")) {
        char id[GA_UUID_STR];
        if (!json_is_string(v))
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "id must be a string");
        if (cmp == PG_API_LIKE) {
            if ((k = param(f, json_string_value(v))) < 0)
                return k;
            return put(f, pg_api_search_id_like(piece, sizeof piece, k));
        }
        if (ga_resource_uuid(json_string_value(v), f->req->ident.creator, id, why, sizeof why) < 0)
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "Invalid resource id: %s", why);
        if ((k = param(f, id)) < 0)
            return k;
        return put(f, pg_api_search_id(piece, sizeof piece, cmp, k));
    }
    if (!strcmp(field, "started_at") || !strcmp(field, "revision_start")) {
        int64_t ns;
        char iso[40];
        if (!json_is_string(v) && !json_is_number(v))
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "%s must be a timestamp", field);
        if (json_is_number(v))
            snprintf(buf, sizeof buf, "%.9f", json_number_value(v));
        if (api_parse_time(json_is_string(v) ? json_string_value(v) : buf, 0, &ns, why,
                           sizeof why) < 0)
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "%s: %s", field, why);
        api_iso(ns, iso);
        if ((k = param(f, iso)) < 0)
            return k;
        return put(f, pg_api_search_time(piece, sizeof piece, field, cmp, k));
    }
    if (is_column(field)) {
        if (json_is_number(v)) {
            snprintf(buf, sizeof buf, "%.17g", json_number_value(v));
            k = param(f, buf);
        } else if (json_is_string(v)) {
            k = param(f, json_string_value(v));
        } else {
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "%s must be compared with a string",
                           field);
        }
        if (k < 0)
            return k;
        return put(f, pg_api_search_column(piece, sizeof piece, field, cmp, k));
    }
    /* an attribute: text for strings, numbers as numbers, booleans as JSON */
    if (!api_resource_attr(f->type, field)) {
        f->err_plain = 1;
        return ga_fail(GA_EINVAL, f->err, sizeof f->err, "Resource type %s has no %s attribute",
                       f->type->name, field);
    }
    int kf = param(f, field);
    if (kf < 0)
        return kf;
    if (json_is_string(v)) {
        if ((k = param(f, json_string_value(v))) < 0)
            return k;
        return put(f, pg_api_search_attr_text(piece, sizeof piece, kf, cmp, k));
    }
    if (json_is_number(v)) {
        if (cmp == PG_API_LIKE)
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "like needs a string");
        snprintf(buf, sizeof buf, "%.17g", json_number_value(v));
        if ((k = param(f, buf)) < 0)
            return k;
        return put(f, pg_api_search_attr_number(piece, sizeof piece, kf, cmp, k));
    }
    if (json_is_boolean(v) && eq_ne)
        return put(f, pg_api_search_attr_bool(piece, sizeof piece, kf, cmp, json_is_true(v)));
    return ga_fail(GA_EINVAL, f->err, sizeof f->err, "cannot compare %s with this value", field);
}

static int compile(struct fctx *f, const json_t *node, int depth)
{
    if (depth > FILTER_MAX_DEPTH)
        return ga_fail(GA_EINVAL, f->err, sizeof f->err, "filter nested deeper than %d",
                       FILTER_MAX_DEPTH);
    if (!json_is_object(node) || json_object_size(node) != 1)
        return ga_fail(GA_EINVAL, f->err, sizeof f->err,
                       "each filter node must be an object with one operator");
    const char *op = json_object_iter_key(json_object_iter((json_t *)node));
    const json_t *arg = json_object_iter_value(json_object_iter((json_t *)node));
    int rc;
    if (!strcmp(op, "and") || !strcmp(op, "or") || !strcmp(op, "\xe2\x88\xa7") ||
        !strcmp(op, "\xe2\x88\xa8")) {
        int is_and = !strcmp(op, "and") || !strcmp(op, "\xe2\x88\xa7");
        if (!json_is_array(arg) || json_array_size(arg) == 0)
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "'%s' takes a non-empty list", op);
        if ((rc = put(f, pg_api_search_open)) < 0)
            return rc;
        size_t i;
        const json_t *c;
        json_array_foreach(arg, i, c) {
            if ((i && (rc = put(f, is_and ? pg_api_search_and : pg_api_search_or)) < 0) ||
                (rc = compile(f, c, depth + 1)) < 0)
                return rc;
        }
        return put(f, pg_api_search_close);
    }
    if (!strcmp(op, "not") || !strcmp(op, "\xc2\xac")) {
        if ((rc = put(f, pg_api_search_not_open)) < 0 || (rc = compile(f, arg, depth + 1)) < 0)
            return rc;
        return put(f, pg_api_search_not_close);
    }
    if (!json_is_object(arg) || json_object_size(arg) != 1)
        return ga_fail(GA_EINVAL, f->err, sizeof f->err, "'%s' takes {\"field\": value}", op);
    const char *field = json_object_iter_key(json_object_iter((json_t *)arg));
    const json_t *v = json_object_iter_value(json_object_iter((json_t *)arg));
    if (!strcmp(op, "in")) {
        if (json_is_array(v) && json_array_size(v) == 0 && depth == 0 && !f->err_desc)
            f->err_desc = json_pack("{s:s, s:s+++, s:[s, s]}", "cause", "Invalid input", "reason",
                                    "length of value must be at least 1 for dictionary value "
                                    "@ data['in']['", field, "']", "", "detail", "in", field);
        if (!json_is_array(v) || json_array_size(v) == 0)
            return ga_fail(GA_EINVAL, f->err, sizeof f->err, "'in' takes a non-empty list");
        if ((rc = put(f, pg_api_search_open)) < 0)
            return rc;
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e) {
            if ((i && (rc = put(f, pg_api_search_or)) < 0) ||
                (rc = compare(f, field, PG_API_EQ, e)) < 0)
                return rc;
        }
        return put(f, pg_api_search_close);
    }
    int cmp = cmp_op(op);
    if (cmp < 0) {
        if (depth == 0 && !f->err_desc)
            f->err_desc = json_pack("{s:s, s:s++, s:[s]}", "cause", "Invalid input", "reason",
                                    "extra keys not allowed @ data['", op, "']", "detail", op);
        return ga_fail(GA_EINVAL, f->err, sizeof f->err, "unknown filter operator '%s'", op);
    }
    return compare(f, field, (enum pg_api_cmp)cmp, v);
}

static void fctx_free(struct fctx *f)
{
    json_decref(f->err_desc);
    for (int i = 0; i < f->n; i++)
        free(f->owned[i]);
    free(f->sql);
}

/* ---- listing ------------------------------------------------------------------ */

/* Gnocchi's resource object from the row (attributes at the top level for
 * a typed listing or with details). */
static json_t *resource_out(json_t *row, int with_attrs)
{
    json_t *attrs = json_object_get(row, "attributes");
    const struct api_resource_type *t =
        api_resource_type(json_string_value(json_object_get(row, "type")) ?: "generic");
    if (with_attrs && t) {
        /* the type's attributes, null when the samples never gave one */
        for (const struct api_attr *a = t->attrs; a->name; a++) {
            json_t *v = json_is_object(attrs) ? json_object_get(attrs, a->name) : NULL;
            if (!json_object_get(row, a->name))
                json_object_set(row, a->name, v ? v : json_null());
        }
    }
    json_object_del(row, "attributes");
    return json_incref(row);
}

/* ?sort=key[:asc|:desc] (repeated), Gnocchi's: ORDER BY those keys (a
 * column or an attribute of the type), then the default order
 * (revision_start, started_at, id).  Returns 0, < 0 (SQL
 * too long), or 400 with f->err set (a bad key, or sort with a marker,
 * which pages by id only). */
static int order_by(struct fctx *f, struct http_req *req, int has_marker)
{
    const char *keys[16];
    int n = http_args(req, "sort", keys, 16), rc = 0;
    if (n > 0 && has_marker) {
        snprintf(f->err, sizeof f->err, "Invalid pagination: `marker pages by id: it cannot be "
                 "combined with sort'");
        return 400;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        char key[128], piece[PG_API_PIECE_MAX];
        snprintf(key, sizeof key, "%s", keys[i]);
        int desc = 0;
        char *colon = strchr(key, ':');
        if (colon) {
            *colon = '\0';
            if (!strcmp(colon + 1, "desc"))
                desc = 1;
            else if (strcmp(colon + 1, "asc")) {
                snprintf(f->err, sizeof f->err, "Invalid pagination: `Invalid sort direction "
                         "'%.40s''", colon + 1);
                return 400;
            }
        }
        if (!strcmp(key, "ended_at") || !strcmp(key, "revision_end"))
            continue;                     /* always null: nothing to order */
        if (is_column(key) && strcmp(key, "created_by_user_id") &&
            strcmp(key, "created_by_project_id")) {
            rc = put(f, pg_api_search_sort_column(piece, sizeof piece, key, desc));
        } else if (api_resource_attr(f->type, key)) {
            int k = param(f, key);
            rc = k < 0 ? k : put(f, pg_api_search_sort_attr(piece, sizeof piece, k, desc));
        } else {
            snprintf(f->err, sizeof f->err, "Invalid pagination: `Sort key supplied is "
                     "invalid: %.60s'", key);
            return 400;
        }
    }
    return rc;
}

int api_resources_query(struct http_req *req, struct http_resp *resp, const char *type,
                        const json_t *filter, int unlimited, json_t **out)
{
    struct fctx f = { .req = req, .cap = SQL_MAX, .type = api_resource_type(type) };
    char sq[256], piece[PG_API_PIECE_MAX];
    int rc;
    *out = NULL;
    if (!f.type) {
        http_error(resp, 404, "Resource type %s does not exist", type);
        return 404;
    }
    if (!(f.sql = malloc(f.cap))) {
        http_error(resp, 500, "out of memory");
        return 500;
    }
    const char *lim = http_arg(req, "limit"), *marker = http_arg(req, "marker");
    long limit = LIST_MAX;
    char mk[GA_UUID_STR] = "";
    if (lim) {
        char *end;
        limit = strtol(lim, &end, 10);
        if (*end || limit < 1 || limit > LIST_MAX) {
            http_error(resp, 400, "Invalid value for limit: must be an integer 1..%d", LIST_MAX);
            fctx_free(&f);
            return 400;
        }
    }
    if (marker && !ga_uuid_parse(marker, mk)) {
        http_error(resp, 400, "Invalid marker: '%.60s' is not a resource id", marker);
        fctx_free(&f);
        return 400;
    }
    rc = put(&f, pg_api_search_head);
    if (rc == 0 && strcmp(type, "generic") != 0) {
        int k = param(&f, type);
        rc = k < 0 ? k : put(&f, pg_api_search_type(piece, sizeof piece, k));
    }
    if (rc == 0 && mk[0]) {
        int k = param(&f, mk);
        /* the default order's keyset: after the marker's place in it */
        rc = k < 0 ? k : put(&f, pg_api_search_after(piece, sizeof piece, k));
    }
    if (rc == 0 && filter)
        rc = compile(&f, filter, 0);
    else if (rc == 0)
        rc = put(&f, pg_api_search_bool(1));
    if (rc == 0 && f.n + 2 <= FILTER_MAX_PARAMS) {
        const char *scope = api_scope(&req->ident, sq, sizeof sq, f.vals, &f.n);
        rc = put(&f, pg_api_search_scope(piece, sizeof piece, scope));
        int s_rc = rc == 0 && !unlimited ? order_by(&f, req, mk[0] != 0) : 0;
        if (s_rc > 0) {
            http_error(resp, 400, "%s", f.err);
            fctx_free(&f);
            return 400;
        }
        /* Gnocchi's default order (revision_start, started_at), then the id */
        rc = rc ? rc : s_rc ? s_rc : put(&f, pg_api_search_end(piece, sizeof piece, !unlimited,
                                                                unlimited ? 100000L : limit));
    } else if (rc == 0) {
        rc = ga_fail(GA_ETOOBIG, f.err, sizeof f.err, "filter has too many values");
    }
    if (rc < 0 && f.err_desc) {
        api_error_desc(resp, 400, f.err_desc);
        f.err_desc = NULL;
        fctx_free(&f);
        return 400;
    }
    if (rc < 0) {
        http_error(resp, 400, f.err_plain ? "%s" : "Invalid filter: %s", f.err);
        fctx_free(&f);
        return 400;
    }
    json_t *rows = api_query_json(req, resp, f.sql, f.n, f.vals);
    fctx_free(&f);
    if (!rows)
        return resp->status;
    *out = rows;
    return 0;
}

static void list_answer(struct http_req *req, struct http_resp *resp, const char *type,
                        const json_t *filter)
{
    json_t *rows;
    if (api_resources_query(req, resp, type, filter, 0, &rows))
        return;
    const char *details = http_arg(req, "details");
    int with_attrs = strcmp(type, "generic") != 0 ||
                     (details && (!strcasecmp(details, "true") || !strcmp(details, "1")));
    /* ?attrs=a&attrs=b: only those keys of each resource, as Gnocchi's */
    const char *attrs[64];
    int nattrs = http_args(req, "attrs", attrs, 64);
    json_t *out = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        json_t *r = resource_out(row, with_attrs);
        if (nattrs > 0) {
            json_t *sel = json_object();
            for (int k = 0; k < nattrs; k++) {
                json_t *v = json_object_get(r, attrs[k]);
                if (v)
                    json_object_set(sel, attrs[k], v);
            }
            json_decref(r);
            r = sel;
        }
        json_array_append_new(out, r);
    }
    json_decref(rows);
    http_json(resp, 200, out);
}

/* GET /v1/resource/{type} */
void api_resource_list(struct http_req *req, struct http_resp *resp)
{
    if (http_arg(req, "filter")) {
        http_error(resp, 400, "a listing takes no filter: POST it (JSON body, or ?filter= in "
                   "the string syntax) to /v1/search/resource/%s", req->captures[0]);
        return;
    }
    list_answer(req, resp, req->captures[0], NULL);
}

/* POST /v1/search/resource/{type} */
void api_resource_search(struct http_req *req, struct http_resp *resp)
{
    json_t *filter = NULL;
    const char *text = http_arg(req, "filter");
    if (text && !req->body_len) {
        char why[256];
        if (!(filter = api_filter_parse_string(text, why, sizeof why))) {
            http_error(resp, 400, "Invalid filter: %s", why);
            return;
        }
    } else if (req->body_len) {
        json_error_t je;
        filter = json_loadb(req->body, req->body_len, 0, &je);
        if (!filter) {
            char reason[256];
            snprintf(reason, sizeof reason, "%s (line %d, column %d)", je.text, je.line,
                     je.column);
            api_error_desc(resp, 400, json_pack("{s:s, s:s, s:[]}", "cause",
                                                "Unable to decode body", "reason", reason,
                                                "detail"));
            return;
        }
        if (json_is_object(filter) && json_object_size(filter) == 0) {
            json_decref(filter);
            filter = NULL;
        }
    }
    list_answer(req, resp, req->captures[0], filter);
    json_decref(filter);
}

/* The resource row of GET /v1/resource/{type}/{id}; NULL with resp set. */
static json_t *resource_row(struct http_req *req, struct http_resp *resp, const char *type,
                            const char *raw)
{
    char id[GA_UUID_STR], why[128];
    if (ga_resource_uuid(raw, req->ident.creator, id, why, sizeof why) < 0) {
        http_error(resp, 400, "Invalid resource id: %s", why);
        return NULL;
    }
    json_t *filter = json_pack("{s:{s:s}}", "=", "id", id);
    json_t *rows;
    int rc = api_resources_query(req, resp, type, filter, 0, &rows);
    json_decref(filter);
    if (rc)
        return NULL;
    json_t *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (!row)                 /* Gnocchi names the id it looked for */
        http_error(resp, 404, "Resource %s does not exist", id);
    return row;
}

/* GET /v1/resource/{type}/{id} */
void api_resource_get(struct http_req *req, struct http_resp *resp)
{
    json_t *row = resource_row(req, resp, req->captures[0], req->captures[1]);
    if (row)
        http_json(resp, 200, resource_out(row, strcmp(req->captures[0], "generic") != 0));
    json_decref(row);
}

/* GET /v1/resource/{type}/{id}/history: gpuagg keeps the current revision
 * of a resource only, so its history is that one revision. */
void api_resource_history(struct http_req *req, struct http_resp *resp)
{
    json_t *row = resource_row(req, resp, req->captures[0], req->captures[1]);
    if (row)
        http_json(resp, 200, json_pack("[o]", resource_out(row, strcmp(req->captures[0],
                                                                       "generic") != 0)));
    json_decref(row);
}

json_t *api_resource_object(struct http_req *req, struct http_resp *resp, const char *id)
{
    json_t *row = resource_row(req, resp, "generic", id);
    if (!row)
        return NULL;
    json_t *out = resource_out(row, 0);
    json_decref(row);
    json_object_del(out, "metrics");
    return out;
}

/* GET /v1/resource_type, GET /v1/resource_type/{name} */
void api_resource_type_list(struct http_req *req, struct http_resp *resp)
{
    (void)req;
    json_t *out = json_array();
    for (int i = 0; i < api_nresource_types; i++)
        json_array_append_new(out, api_resource_type_json(&api_resource_types[i]));
    http_json(resp, 200, out);
}

void api_resource_type_get(struct http_req *req, struct http_resp *resp)
{
    const struct api_resource_type *t = api_resource_type(req->captures[0]);
    if (!t) {
        http_error(resp, 404, "Resource type %s does not exist", req->captures[0]);
        return;
    }
    http_json(resp, 200, api_resource_type_json(t));
}
