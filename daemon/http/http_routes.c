/* http_routes.c — the one route table of the HTTP listener.  A new
 * endpoint is one line here plus its handler (declared in http_routes.h).
 * Routes are tried in order, the first whose pattern and method match
 * answers; patterns are described in http_server.h.  public = 1: answered
 * without credentials. */
#include "daemon/http/http_routes.h"

const struct http_route http_routes[] = {
    /* method  pattern                                          handler                     public */
    { "GET",  "/",                                              http_versions,                1 },
    { "GET",  "/v1",                                            http_v1_index,                1 },
    { "GET",  "/v1/capabilities",                               http_capabilities,            0 },
    { "GET",  "/v1/status",                                     http_status,                  0 },
    { "GET",  "/v1/archive_policy",                             http_archive_policy_list,     0 },
    { "GET",  "/v1/archive_policy/{}",                          http_archive_policy_get,      0 },
    { "GET",  "/v1/archive_policy_rule",                        http_archive_policy_rule_list, 0 },
    { "GET",  "/v1/archive_policy_rule/{}",                     http_archive_policy_rule_get, 0 },
    { "GET",  "/v1/resource_type",                              api_resource_type_list,       0 },
    { "GET",  "/v1/resource_type/{}",                           api_resource_type_get,        0 },
    { "GET",  "/v1/metric",                                     api_metric_list,              0 },
    { "GET",  "/v1/metric/{*}",                                 api_metric_get,               0 },
    { "GET",  "/v1/resource/{}",                                api_resource_list,            0 },
    { "GET",  "/v1/resource/{}/{}",                             api_resource_get,             0 },
    { "GET",  "/v1/resource/{}/{}/history",                     api_resource_history,         0 },
    { "GET",  "/v1/resource/{}/{}/metric/{}",                   api_resource_metric_get,      0 },
    { "GET",  "/v1/resource/{}/{}/metric/{}/measures",          api_resource_metric_measures, 0 },
    { "POST", "/v1/search/resource/{}",                         api_resource_search,          0 },
    { "POST", "/v1/aggregates",                                 api_aggregates_post,          0 },
    { "GET",  "/v1/aggregation/metric",                         api_aggregation_metric,       0 },
    { "POST", "/v1/aggregation/metric",                         api_aggregation_metric,       0 },
    { "POST", "/v1/aggregation/resource/{}/metric/{}",          api_aggregation_resource,     0 },
    { "GET",  "/metrics",                                       http_metrics,                 1 },
    { "GET",  "/healthz",                                       http_healthz,                 1 },
    { "GET",  "/readyz",                                        http_readyz,                  1 },
};
const int http_nroutes = (int)(sizeof http_routes / sizeof http_routes[0]);
