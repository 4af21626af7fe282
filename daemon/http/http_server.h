/* http_server.h — gpuaggd's HTTP listener (listen.http), shared by every
 * HTTP endpoint: the Gnocchi-compatible read API (docs/API.md) and the
 * operational endpoints.
 *
 * Built on libmicrohttpd with a thread per connection (MHD's own threads,
 * never the libuv loop thread), so a handler may block on PostgreSQL
 * without stalling ingest or other HTTP clients.  The connections come
 * through the door (http_admit.h), which accepts them and hands them over
 * only onto a place: http.max_connections at once, at most
 * http.max_connections_per_peer from one address, a short wait for one
 * and 8 places kept for /healthz, /readyz and /metrics; a served
 * connection has http.header_timeout_s for its headers.  Before routing,
 * the request target is held to http_target.h's rules (414, 400).  Other
 * bounds (etc/gpuaggd.yaml, section http): http.timeout_s of inactivity
 * closes a connection, http.max_body_bytes per request body (413 before
 * the body is read when Content-Length says so), and the API's own
 * PostgreSQL pool of http.pool_size connections.
 *
 * Adding an endpoint: one line in the route table (http_routes.c) naming
 * the method, the path pattern and a handler function; the handler fills
 * a struct http_resp.  Patterns are literal segments, "{}" for one path
 * segment (captured) and a final "{*}" for the rest of the path (captured,
 * may contain '/').
 *
 * Thread-safety: handlers run on connection threads, several at once; what
 * they touch must be thread-safe (the pg_query pool is). */
#ifndef GA_HTTP_SERVER_H
#define GA_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>

#include <jansson.h>

#include "daemon/config/config.h"
#include "daemon/http/auth_keystone.h"

#define HTTP_MAX_CAPTURES 4
#define HTTP_CREATOR_MAX 512

struct http_server;
struct pg_query;
struct ga_daemon;

/* Who is asking (docs/API.md "Authentication"). */
struct http_ident {
    char user[256];                   /* "" when the route needs no auth */
    char project[256];                /* "" when the credentials carry none */
    int admin;                        /* role admin: sees every project */
    char creator[HTTP_CREATOR_MAX];   /* Gnocchi's creator: "user:project" for
                                         header auth, the user name otherwise */
};

struct http_req {
    struct http_server *srv;
    void *conn;                       /* struct MHD_Connection */
    const char *method;               /* "GET", "POST", ... */
    const char *path;                 /* decoded path, no query string */
    int ncaptures;
    char *captures[HTTP_MAX_CAPTURES];/* "{}"/"{*}" parts, owned by the server */
    const char *body;                 /* request body (NUL-terminated), NULL if none */
    size_t body_len;
    struct http_ident ident;
};

struct http_resp {
    int status;                       /* HTTP status, 200 unless set */
    char *body;                       /* malloc'ed, owned by the server once set */
    size_t len;
    const char *content_type;         /* static string */
    char location[256];               /* Location header when set */
    char link[1024];                  /* Link header when set (pagination) */
    const char *www_authenticate;     /* WWW-Authenticate header when set (static) */
};

/* A route: method, pattern, handler and whether it needs credentials. */
typedef void (*http_handler_fn)(struct http_req *req, struct http_resp *resp);
struct http_route {
    const char *method;
    const char *pattern;
    http_handler_fn fn;
    int public_route;                 /* 1: no authentication (versions, health) */
};
extern const struct http_route http_routes[];
extern const int http_nroutes;

/* Counters (docs/COUNTERS.md, "http"); atomics, read with http_get_stats. */
struct http_stats {
    uint64_t requests, errors_4xx, errors_5xx, too_big, unauthorized;
    int connections;                  /* open now */
    /* the door's (http_admit.h): shut at the header deadline, probe
     * places shut at their hold, waiting connections closed (partial
     * request; evicted for a newer one), 503 for no place (the address's
     * places taken) */
    uint64_t header_timeouts, probe_timeouts, wait_timeouts, wait_evicted;
    uint64_t refused_full, refused_peer;
    struct auth_keystone_stats keystone;  /* http.auth keystone's (auth_keystone.h) */
};

/* Start listening on cfg->listen.http ("host:port", port 0 = any) with the
 * http.* limits.  app is the daemon (handlers reach it through
 * http_server_app()); q is the API's own query pool (not owned).
 * Returns 0 with *out set, or GA_EINVAL / GA_EIO / GA_ENOMEM with err. */
int http_server_start(struct http_server **out, const struct ga_config *cfg, struct ga_daemon *app,
                      struct pg_query *q, char *err, size_t errlen);
/* Stop accepting, close connections (running handlers finish), free.
 * NULL ok. */
void http_server_stop(struct http_server *s);
/* The bound port (useful with port 0). */
int http_server_port(const struct http_server *s);
void http_get_stats(const struct http_server *s, struct http_stats *out);
struct ga_daemon *http_server_app(const struct http_server *s);
struct pg_query *http_server_pgq(const struct http_server *s);
const struct ga_config *http_server_config(const struct http_server *s);

/* ---- helpers for handlers ---------------------------------------------- */

/* A query-string argument (decoded), NULL if absent. */
const char *http_arg(const struct http_req *r, const char *name);
/* Every value of a repeated argument (?metric=a&metric=b): up to max
 * pointers into the request; returns the count. */
int http_args(const struct http_req *r, const char *name, const char **vals, int max);
/* A request header, NULL if absent. */
const char *http_header(const struct http_req *r, const char *name);

/* Set resp to the JSON value j (reference stolen), status code. */
void http_json(struct http_resp *resp, int status, json_t *j);
/* Set resp to a Gnocchi-shaped error {"code", "title", "description"}. */
void http_error(struct http_resp *resp, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Set resp to plain text (copied). */
void http_text(struct http_resp *resp, int status, const char *content_type, const char *text,
               size_t len);

#endif
