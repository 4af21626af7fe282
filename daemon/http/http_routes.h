/* http_routes.h — the handlers the route table (http_routes.c) names.
 * Each fills resp from req (http_server.h); none keeps either. */
#ifndef GA_HTTP_ROUTES_H
#define GA_HTTP_ROUTES_H

#include "daemon/http/http_server.h"

/* http_meta.c */
void http_versions(struct http_req *req, struct http_resp *resp);
void http_v1_index(struct http_req *req, struct http_resp *resp);
void http_capabilities(struct http_req *req, struct http_resp *resp);
void http_status(struct http_req *req, struct http_resp *resp);
void http_archive_policy_list(struct http_req *req, struct http_resp *resp);
void http_archive_policy_get(struct http_req *req, struct http_resp *resp);
void http_archive_policy_rule_list(struct http_req *req, struct http_resp *resp);
void http_archive_policy_rule_get(struct http_req *req, struct http_resp *resp);

/* api_metric.c */
void api_metric_list(struct http_req *req, struct http_resp *resp);
void api_metric_get(struct http_req *req, struct http_resp *resp);
void api_resource_metric_measures(struct http_req *req, struct http_resp *resp);
void api_resource_metric_get(struct http_req *req, struct http_resp *resp);

/* api_resource.c */
void api_resource_list(struct http_req *req, struct http_resp *resp);
void api_resource_get(struct http_req *req, struct http_resp *resp);
void api_resource_history(struct http_req *req, struct http_resp *resp);
void api_resource_search(struct http_req *req, struct http_resp *resp);
void api_resource_type_list(struct http_req *req, struct http_resp *resp);
void api_resource_type_get(struct http_req *req, struct http_resp *resp);

/* api_aggregates.c */
void api_aggregates_post(struct http_req *req, struct http_resp *resp);
void api_aggregation_metric(struct http_req *req, struct http_resp *resp);
void api_aggregation_resource(struct http_req *req, struct http_resp *resp);

/* http_ops.c: GET /metrics (Prometheus text), /healthz, /readyz (JSON) */
void http_metrics(struct http_req *req, struct http_resp *resp);
void http_healthz(struct http_req *req, struct http_resp *resp);
void http_readyz(struct http_req *req, struct http_resp *resp);

#endif
