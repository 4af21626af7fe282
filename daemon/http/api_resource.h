/* api_resource.h — resource lookups shared by the resource and aggregates
 * handlers (api_resource.c). */
#ifndef GA_HTTP_API_RESOURCE_H
#define GA_HTTP_API_RESOURCE_H

#include <jansson.h>

#include "daemon/http/http_server.h"

/* The resource types answered (those the Ceilometer recorder creates;
 * "generic" is every resource). */
extern const char *const api_resource_types[];
extern const int api_nresource_types;
int api_resource_type_known(const char *type);

/* The visible resources of type matching filter (Gnocchi's JSON filter
 * language; NULL = all), ordered by id, as an array of row objects (each
 * with "attributes" and "metrics": {name: metric id}).  Honours ?limit and
 * ?marker unless unlimited (then at most 100000).  Returns 0 with *out (new
 * reference), or the HTTP status with resp set (404 unknown type, 400 bad
 * filter, 5xx database). */
int api_resources_query(struct http_req *req, struct http_resp *resp, const char *type,
                        const json_t *filter, int unlimited, json_t **out);

/* The resource with this id (a canonical UUID) as a metric's "resource"
 * shows it (Gnocchi's generic resource: no type attributes, no metrics),
 * new reference; NULL with resp set (404 when not visible). */
json_t *api_resource_object(struct http_req *req, struct http_resp *resp, const char *id);

#endif
