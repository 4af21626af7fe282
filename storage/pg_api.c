/* pg_api.c — the SQL of the Gnocchi-compatible HTTP API: every statement
 * daemon/http/ runs, and the pieces of its resource search (pg_api.h). */
#include "storage/pg_api.h"

#include <stdio.h>
#include <string.h>

/* ---- who sees what ------------------------------------------------------------- */

const char *pg_api_scope(int admin, const char *creator, const char *project, char *buf,
                         size_t n, const char **vals, int *nvals)
{
    if (admin) {
        snprintf(buf, n, "true");
        return buf;
    }
    vals[*nvals] = creator;
    vals[*nvals + 1] = project;
    snprintf(buf, n, "(r.creator = $%d OR (r.project_id IS NOT NULL AND r.project_id <> '' "
             "AND r.project_id = $%d))", *nvals + 1, *nvals + 2);
    *nvals += 2;
    return buf;
}

/* ---- status and archive policies --------------------------------------------- */

const char pg_api_metric_count_sql[] = "SELECT json_build_object('metrics', count(*)) FROM metrics";

#define POLICIES_SQL                                                                     \
    "SELECT json_build_object('name', name, 'back_window', back_window, 'definition', definition," \
    " 'methods', methods) FROM archive_policies"

const char pg_api_policies_sql[] = POLICIES_SQL;
const char pg_api_policy_sql[] = POLICIES_SQL " WHERE name = $1";

/* ---- metrics --------------------------------------------------------------------- */

/* A metric's row as Gnocchi shows it, over metrics m, archive_policies p
 * and LEFT JOIN resource_metrics rm (its name and unit on its resource)
 * and resources r. */
#define METRIC_JSON_SQL                                                                  \
    "json_build_object('id', m.uuid, 'gpuagg_name', m.name,"                            \
    " 'name', coalesce(rm.name, m.name), 'unit', rm.unit, 'resource_id', rm.resource,"   \
    " 'creator', r.creator, 'created_by_user_id', r.user_id,"                           \
    " 'created_by_project_id', r.project_id,"                                            \
    " 'policy', json_build_object('name', p.name, 'back_window', p.back_window,"        \
    " 'definition', p.definition, 'methods', p.methods))"
#define METRIC_FROM_SQL                                                                  \
    " FROM metrics m JOIN archive_policies p ON p.name = m.policy"                       \
    " LEFT JOIN resource_metrics rm ON rm.metric = m.name"                               \
    " LEFT JOIN resources r ON r.id = rm.resource"

const char pg_api_metrics_by_ids_sql[] =
    "SELECT " METRIC_JSON_SQL METRIC_FROM_SQL
    " WHERE m.uuid IN (SELECT x::uuid FROM json_array_elements_text($1::json) x)";

const char *pg_api_metric(char *buf, size_t n, int by_uuid, const char *scope)
{
    snprintf(buf, n, "SELECT " METRIC_JSON_SQL METRIC_FROM_SQL
             " WHERE %s AND (rm.resource IS NULL OR %s) LIMIT 1",
             by_uuid ? "m.uuid = $1::uuid" : "m.name = $1", scope);
    return buf;
}

const char *pg_api_metric_list(char *buf, size_t n, int marker_k, int name_k, int limit_k,
                               const char *scope)
{
    char marker[48] = "", name[64] = "";
    if (marker_k)
        snprintf(marker, sizeof marker, " AND m.uuid > $%d::uuid", marker_k);
    if (name_k)
        snprintf(name, sizeof name, " AND coalesce(rm.name, m.name) = $%d", name_k);
    snprintf(buf, n, "SELECT " METRIC_JSON_SQL METRIC_FROM_SQL
             " WHERE true%s%s AND (rm.resource IS NULL OR %s)"
             " ORDER BY m.uuid LIMIT $%d::int8", marker, name, scope, limit_k);
    return buf;
}

const char *pg_api_resource_metric(char *buf, size_t n, int name_k, const char *scope)
{
    snprintf(buf, n, "SELECT json_build_object('exists', true, 'metric', (SELECT "
             METRIC_JSON_SQL METRIC_FROM_SQL " WHERE rm.resource = $1::uuid AND rm.name = $%d"
             " LIMIT 1)) FROM resources r WHERE r.id = $1::uuid"
             " AND ($2 = 'generic' OR r.type = $2) AND %s", name_k, scope);
    return buf;
}

/* ---- resource search -------------------------------------------------------------- */

/* A resource's row as Gnocchi shows it (the type's attributes still in
 * "attributes"), over resources r.  gpuagg keeps the current revision
 * only: ended_at and revision_end are always null. */
#define RESOURCE_JSON_SQL                                                                   \
    "json_build_object('id', r.id, 'type', r.type,"                                         \
    " 'original_resource_id', r.original_resource_id, 'project_id', r.project_id,"          \
    " 'user_id', r.user_id, 'creator', r.creator,"                                          \
    " 'created_by_user_id', split_part(r.creator, ':', 1),"                                 \
    " 'created_by_project_id', split_part(r.creator, ':', 2),"                              \
    " 'started_at', r.started_at, 'ended_at', NULL, 'revision_start', r.revision_start,"    \
    " 'revision_end', NULL, 'attributes', r.attributes,"                                    \
    " 'metrics', coalesce((SELECT json_object_agg(rm.name, gpuagg_metric_uuid(rm.metric))"  \
    "                       FROM resource_metrics rm WHERE rm.resource = r.id), '{}'))"

const char pg_api_search_head[] = "SELECT " RESOURCE_JSON_SQL " FROM resources r WHERE ";
const char pg_api_search_open[] = "(", pg_api_search_and[] = " AND ", pg_api_search_or[] = " OR ",
           pg_api_search_close[] = ")", pg_api_search_not_open[] = "(NOT coalesce(",
           pg_api_search_not_close[] = ", false))";

static const char *op_sql(enum pg_api_cmp cmp)
{
    static const char *const sql[] = {
        [PG_API_EQ] = "=", [PG_API_NE] = "<>", [PG_API_LT] = "<", [PG_API_GT] = ">",
        [PG_API_LE] = "<=", [PG_API_GE] = ">=", [PG_API_LIKE] = "LIKE",
    };
    return sql[cmp];
}

const char *pg_api_search_type(char *buf, size_t n, int k)
{
    snprintf(buf, n, "r.type = $%d AND ", k);
    return buf;
}

const char *pg_api_search_after(char *buf, size_t n, int k)
{
    snprintf(buf, n, "(r.revision_start, r.started_at, r.id) > (SELECT"
             " m.revision_start, m.started_at, m.id FROM resources m"
             " WHERE m.id = $%d::uuid) AND ", k);
    return buf;
}

const char *pg_api_search_bool(int v)
{
    return v ? "true" : "false";
}

const char *pg_api_search_column_null(char *buf, size_t n, const char *column, enum pg_api_cmp cmp)
{
    snprintf(buf, n, "(r.%s IS %sNULL)", column, cmp == PG_API_NE ? "NOT " : "");
    return buf;
}

/* absent (SQL NULL) and present as JSON null are both null to Gnocchi */
const char *pg_api_search_attr_null(char *buf, size_t n, int k, enum pg_api_cmp cmp)
{
    int ne = cmp == PG_API_NE;
    snprintf(buf, n, "(r.attributes->$%d IS %sNULL OR jsonb_typeof(r.attributes->$%d) %s 'null')",
             k, ne ? "NOT " : "", k, ne ? "<>" : "=");
    return buf;
}

const char *pg_api_search_id_like(char *buf, size_t n, int k)
{
    snprintf(buf, n, "(r.id::text LIKE $%d)", k);
    return buf;
}

const char *pg_api_search_id(char *buf, size_t n, enum pg_api_cmp cmp, int k)
{
    snprintf(buf, n, "(r.id %s $%d::uuid)", op_sql(cmp), k);
    return buf;
}

const char *pg_api_search_time(char *buf, size_t n, const char *column, enum pg_api_cmp cmp, int k)
{
    snprintf(buf, n, "(r.%s %s $%d::timestamptz)", column, op_sql(cmp), k);
    return buf;
}

const char *pg_api_search_column(char *buf, size_t n, const char *column, enum pg_api_cmp cmp,
                                 int k)
{
    const char *expr = column, *table = "r.";
    if (!strcmp(column, "created_by_user_id"))
        expr = "split_part(r.creator, ':', 1)", table = "";
    else if (!strcmp(column, "created_by_project_id"))
        expr = "split_part(r.creator, ':', 2)", table = "";
    snprintf(buf, n, "(%s%s %s $%d)", table, expr, op_sql(cmp), k);
    return buf;
}

const char *pg_api_search_attr_text(char *buf, size_t n, int kf, enum pg_api_cmp cmp, int k)
{
    snprintf(buf, n, "(r.attributes->>$%d %s $%d)", kf, op_sql(cmp), k);
    return buf;
}

/* a string that looks like a number is not one: compared only as JSON numbers */
const char *pg_api_search_attr_number(char *buf, size_t n, int kf, enum pg_api_cmp cmp, int k)
{
    snprintf(buf, n, "(CASE WHEN jsonb_typeof(r.attributes->$%d) = 'number' THEN "
             "(r.attributes->>$%d)::float8 END %s $%d::float8)", kf, kf, op_sql(cmp), k);
    return buf;
}

const char *pg_api_search_attr_bool(char *buf, size_t n, int kf, enum pg_api_cmp cmp, int v)
{
    snprintf(buf, n, "(r.attributes->$%d %s '%s'::jsonb)", kf, op_sql(cmp), v ? "true" : "false");
    return buf;
}

const char *pg_api_search_scope(char *buf, size_t n, const char *scope)
{
    snprintf(buf, n, " AND %s ORDER BY ", scope);
    return buf;
}

const char *pg_api_search_sort_column(char *buf, size_t n, const char *column, int desc)
{
    snprintf(buf, n, "r.%s %s, ", column, desc ? "DESC" : "ASC");
    return buf;
}

const char *pg_api_search_sort_attr(char *buf, size_t n, int k, int desc)
{
    snprintf(buf, n, "r.attributes->>$%d %s, ", k, desc ? "DESC" : "ASC");
    return buf;
}

/* Gnocchi's default order (revision_start, started_at), then the id */
const char *pg_api_search_end(char *buf, size_t n, int default_order, long limit)
{
    snprintf(buf, n, "%sr.id LIMIT %ld", default_order ? "r.revision_start, r.started_at, " : "",
             limit);
    return buf;
}
