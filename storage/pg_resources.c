/* pg_resources.c — the resource recorder's upsert (pg_resources.h). */
#include "storage/pg_resources.h"

#include "proto/ga_err.h"
#include "storage/pg_util.h"

static const char upsert_sql[] =
    "WITH r AS (\n"
    "  INSERT INTO resources AS o (id, original_resource_id, type, creator, project_id, user_id,\n"
    "                              attributes)\n"
    "  VALUES ($1::uuid, $2, $3, $4, nullif($5, ''), nullif($6, ''), $7::jsonb)\n"
    "  ON CONFLICT (id) DO UPDATE SET\n"
    "    project_id = EXCLUDED.project_id, user_id = EXCLUDED.user_id,\n"
    "    type = CASE WHEN o.type = 'generic' THEN EXCLUDED.type ELSE o.type END,\n"
    "    attributes = o.attributes || EXCLUDED.attributes,\n"
    "    revision_start = CASE WHEN o.attributes @> EXCLUDED.attributes THEN o.revision_start\n"
    "                          ELSE now() END\n"
    "  RETURNING id)\n"
    "INSERT INTO resource_metrics (resource, name, metric, unit)\n"
    "SELECT id, $8, $9, nullif($10, '') FROM r\n"
    "ON CONFLICT (resource, name) DO UPDATE SET metric = EXCLUDED.metric, unit = EXCLUDED.unit";

int pg_resources_upsert(PGconn *c, const struct pg_resources_sample *s, char *err, size_t errlen)
{
    const char *v[] = { s->id, s->original_id, s->type, s->creator, s->project, s->user,
                        s->attributes, s->meter, s->metric, s->unit };
    PGresult *r = PQexecParams(c, upsert_sql, 10, NULL, v, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        pg_util_result_error(err, errlen, c, r);
    PQclear(r);
    return ok ? 0 : GA_EDB;
}
