/* http_routes.c — the one route table of the HTTP listener.  A new
 * endpoint is one line here plus its handler (declared in http_routes.h).
 * Routes are tried in order; patterns are described in http_server.h.
 * public_route = 1: answered without credentials. */
#include "daemon/http/http_routes.h"

const struct http_route http_routes[] = {
    /* method  pattern  handler  public */
    { "GET", "/", http_versions, 1 },
    { "GET", "/metrics", http_metrics, 1 },
    { "GET", "/healthz", http_healthz, 1 },
    { "GET", "/readyz", http_readyz, 1 },
};
const int http_nroutes = (int)(sizeof http_routes / sizeof http_routes[0]);
