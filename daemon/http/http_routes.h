/* http_routes.h — the handlers the route table (http_routes.c) names.
 * Each fills resp from req (http_server.h); none keeps either. */
#ifndef GA_HTTP_ROUTES_H
#define GA_HTTP_ROUTES_H

#include "daemon/http/http_server.h"

/* http_meta.c: GET / (versions) */
void http_versions(struct http_req *req, struct http_resp *resp);

/* http_ops.c: GET /metrics (Prometheus text), /healthz, /readyz (JSON) */
void http_metrics(struct http_req *req, struct http_resp *resp);
void http_healthz(struct http_req *req, struct http_resp *resp);
void http_readyz(struct http_req *req, struct http_resp *resp);

#endif
