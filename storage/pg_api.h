/* pg_api.h — the SQL of the Gnocchi-compatible HTTP API (docs/API.md):
 * every statement its handlers (daemon/http/) run on the API's query pool
 * but the series reads (pg_read.h), and the pieces its resource search
 * assembles from a filter (docs/STORAGE.md).  The handlers parse the
 * request, choose the statement and its parameters, run it
 * (api_query_json) and render the answer; the text is here.
 *
 * Each statement answers one JSON value per row, in column 0; parameters
 * are text, numbered $1.. as each comment says.  A function that builds a
 * statement writes it into the caller's buf (n bytes) and returns buf;
 * none touches the database.  Thread-safe. */
#ifndef GA_PG_API_H
#define GA_PG_API_H

#include <stddef.h>

/* ---- who sees what ------------------------------------------------------------- */

/* The resource visibility rule over alias r: "true" for admin, else
 * "(r.creator = $k OR r.project_id = $k+1)" (a project only when not
 * empty), creator and project appended to vals from index *n (*n grows
 * by 2).  Room for it: 256 bytes. */
const char *pg_api_scope(int admin, const char *creator, const char *project, char *buf,
                         size_t n, const char **vals, int *nvals);

/* ---- status and archive policies --------------------------------------------- */

/* {"metrics": count of metrics}, one row. */
extern const char pg_api_metric_count_sql[];
/* Every archive_policies row as {name, back_window, definition, methods}. */
extern const char pg_api_policies_sql[];
/* The same for the policy named $1: one row or none. */
extern const char pg_api_policy_sql[];

/* ---- metrics --------------------------------------------------------------------
 * A metric row is {id, gpuagg_name, name, unit, resource_id, creator,
 * created_by_user_id, created_by_project_id, policy: {name, back_window,
 * definition, methods}}; api_metric_out() turns it into Gnocchi's
 * metric.  A metric of a resource is visible when scope (pg_api_scope)
 * sees its resource; one of no resource always is.  2048 bytes hold
 * any of these statements. */

/* Metric rows of the metrics whose ids are in $1, a JSON array of UUIDs
 * (visibility not checked: the ids come from visible resources). */
extern const char pg_api_metrics_by_ids_sql[];
/* The visible metric whose id is $1 (by_uuid) or whose gpuagg name is $1:
 * one row or none. */
const char *pg_api_metric(char *buf, size_t n, int by_uuid, const char *scope);
/* The visible metrics ordered by id, at most $limit_k of them: those
 * after the id $marker_k, named $name_k (each left out when 0). */
const char *pg_api_metric_list(char *buf, size_t n, int marker_k, int name_k, int limit_k,
                               const char *scope);
/* {"exists": true, "metric": row or null} when the visible resource $1
 * (UUID) is of type $2 ("generic": any), the metric its metric named
 * $name_k; no row when there is no such resource. */
const char *pg_api_resource_metric(char *buf, size_t n, int name_k, const char *scope);

/* ---- resource search --------------------------------------------------------------
 * GET /v1/resource and POST /v1/search/resource read one statement, in
 * this order:
 *     pg_api_search_head
 *     pg_api_search_type        when a type other than generic is asked
 *     pg_api_search_after       when a marker is given
 *     the condition             pg_api_search_bool(1) when no filter
 *     pg_api_search_scope
 *     pg_api_search_sort_*      for each ?sort key
 *     pg_api_search_end
 * A condition is a comparison below, or conditions joined:
 * pg_api_search_open, a condition, (pg_api_search_and or _or, a
 * condition)..., pg_api_search_close; or pg_api_search_not_open, a
 * condition, pg_api_search_not_close (NOT of an unknown counts as true).
 * Its row is {id, type, original_resource_id, project_id, user_id,
 * creator, created_by_user_id, created_by_project_id, started_at,
 * ended_at, revision_start, revision_end, attributes, metrics: {name:
 * metric id}}.  The parameters are the caller's, $k numbered as it adds
 * them.  A buf of PG_API_PIECE_MAX bytes holds any piece (column is one
 * of the resources' columns, which the caller checks). */
#define PG_API_PIECE_MAX 512

/* The comparisons of the filter language. */
enum pg_api_cmp { PG_API_EQ, PG_API_NE, PG_API_LT, PG_API_GT, PG_API_LE, PG_API_GE, PG_API_LIKE };

extern const char pg_api_search_head[];
const char *pg_api_search_type(char *buf, size_t n, int k);
/* After resource $k in the default order (revision_start, started_at, id). */
const char *pg_api_search_after(char *buf, size_t n, int k);
extern const char pg_api_search_open[], pg_api_search_and[], pg_api_search_or[],
    pg_api_search_close[], pg_api_search_not_open[], pg_api_search_not_close[];
/* A condition always true or false ("true", "false"). */
const char *pg_api_search_bool(int v);
/* column IS [NOT] NULL (cmp PG_API_EQ or PG_API_NE). */
const char *pg_api_search_column_null(char *buf, size_t n, const char *column, enum pg_api_cmp cmp);
/* The attribute named $k is [not] absent or JSON null (cmp EQ or NE). */
const char *pg_api_search_attr_null(char *buf, size_t n, int k, enum pg_api_cmp cmp);
/* The id, as text, LIKE $k. */
const char *pg_api_search_id_like(char *buf, size_t n, int k);
/* The id cmp $k, a UUID. */
const char *pg_api_search_id(char *buf, size_t n, enum pg_api_cmp cmp, int k);
/* The timestamp column (started_at, revision_start) cmp $k, ISO 8601. */
const char *pg_api_search_time(char *buf, size_t n, const char *column, enum pg_api_cmp cmp, int k);
/* Another column cmp $k, text; created_by_user_id and created_by_project_id
 * are the parts of creator. */
const char *pg_api_search_column(char *buf, size_t n, const char *column, enum pg_api_cmp cmp,
                                 int k);
/* The attribute named $kf, as text, cmp $k. */
const char *pg_api_search_attr_text(char *buf, size_t n, int kf, enum pg_api_cmp cmp, int k);
/* The attribute named $kf, when a JSON number, cmp $k, a number. */
const char *pg_api_search_attr_number(char *buf, size_t n, int kf, enum pg_api_cmp cmp, int k);
/* The attribute named $kf cmp the JSON boolean v (cmp EQ or NE). */
const char *pg_api_search_attr_bool(char *buf, size_t n, int kf, enum pg_api_cmp cmp, int v);
/* " AND scope ORDER BY " (scope from pg_api_scope). */
const char *pg_api_search_scope(char *buf, size_t n, const char *scope);
/* A sort key, column or the attribute named $k, ascending or desc. */
const char *pg_api_search_sort_column(char *buf, size_t n, const char *column, int desc);
const char *pg_api_search_sort_attr(char *buf, size_t n, int k, int desc);
/* The last sort keys and the limit: the default order then the id
 * (default_order), else the id alone. */
const char *pg_api_search_end(char *buf, size_t n, int default_order, long limit);

#endif
