/* api_resource.h — resource lookups shared by the resource and aggregates
 * handlers (api_resource.c). */
#ifndef GA_HTTP_API_RESOURCE_H
#define GA_HTTP_API_RESOURCE_H

#include <jansson.h>

#include "daemon/http/http_server.h"

/* One attribute of a resource type, as Gnocchi's resource type shows it:
 * type "string" (min/max: length), "uuid" or "datetime". */
struct api_attr {
    const char *name, *type;
    int required;
    int min, max;
};

/* A resource type: its name and attributes (ending with a NULL name). */
struct api_resource_type {
    const char *name;
    const struct api_attr *attrs;
};

/* The resource types answered (api_resource_types.c: those the Ceilometer
 * recorder creates, with Ceilometer's attributes; "generic" is every
 * resource and has none). */
extern const struct api_resource_type api_resource_types[];
extern const int api_nresource_types;
/* The type named name, NULL if none. */
const struct api_resource_type *api_resource_type(const char *name);
int api_resource_type_known(const char *type);
/* The attribute of t named name, NULL if t has none. */
const struct api_attr *api_resource_attr(const struct api_resource_type *t, const char *name);
/* GET /v1/resource_type/{name}'s object for t (new reference). */
json_t *api_resource_type_json(const struct api_resource_type *t);

/* The visible resources of type matching filter (Gnocchi's JSON filter
 * language; NULL = all), as an array of row objects (each
 * with "attributes" and "metrics": {name: metric id}).  Honours ?limit,
 * ?marker and ?sort, ordered as Gnocchi orders (revision_start, started_at,
 * then id), unless unlimited (then by id, at most 100000).  Returns 0 with *out (new
 * reference), or the HTTP status with resp set (404 unknown type, 400 bad
 * filter, 5xx database). */
int api_resources_query(struct http_req *req, struct http_resp *resp, const char *type,
                        const json_t *filter, int unlimited, json_t **out);

/* The resource with this id (a canonical UUID) as a metric's "resource"
 * shows it (Gnocchi's generic resource: no type attributes, no metrics),
 * new reference; NULL with resp set (404 when not visible). */
json_t *api_resource_object(struct http_req *req, struct http_resp *resp, const char *id);

#endif
