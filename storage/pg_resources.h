/* pg_resources.h — the resource recorder's write (daemon/ingest/
 * ceilo_resources.h): a Gnocchi resource learnt from a Ceilometer sample
 * and its metric, upserted in one statement (docs/API.md "Resources").
 *
 * The resource row is created, or its project, user and attributes
 * updated: the type moves from generic to the meter's type once, new
 * attributes are merged over the stored ones, and revision_start moves
 * only when they changed anything.  The (resource, meter name) row of
 * resource_metrics points at the metric. */
#ifndef GA_PG_RESOURCES_H
#define GA_PG_RESOURCES_H

#include <stddef.h>
#include <libpq-fe.h>

struct pg_resources_sample {
    const char *id;                   /* the resource's UUID (text form) */
    const char *original_id;          /* the id the sample named */
    const char *type;                 /* "instance", ..., "generic" */
    const char *creator;
    const char *project, *user;       /* "": NULL */
    const char *attributes;           /* a JSON object's text */
    const char *meter;                /* the resource_metrics name */
    const char *metric;               /* the metric's name */
    const char *unit;                 /* "": NULL */
};

/* Upsert s on c.  0, or GA_EDB with PostgreSQL's message in err. */
int pg_resources_upsert(PGconn *c, const struct pg_resources_sample *s, char *err, size_t errlen);

#endif
