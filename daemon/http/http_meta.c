/* http_meta.c — GET /: the API versions, as Gnocchi's VersionsController
 * answers them (docs/API.md). */
#include <stdio.h>
#include <string.h>

#include "daemon/http/http_routes.h"

/* "http://host:port" of this request (from the Host header). */
static void base_url(const struct http_req *req, char *buf, size_t n)
{
    const char *host = http_header(req, "Host");
    snprintf(buf, n, "http://%s", host ? host : "localhost");
}

void http_versions(struct http_req *req, struct http_resp *resp)
{
    char href[512];
    base_url(req, href, sizeof href - 8);
    snprintf(href + strlen(href), 8, "/v1/");
    http_json(resp, 200,
              json_pack("{s:s, s:[{s:s, s:[{s:s, s:s}], s:s, s:s}]}", "build", GA_VERSION,
                        "versions", "status", "CURRENT", "links", "rel", "self", "href", href,
                        "id", "v1.0", "updated", "2015-03-19"));
}
