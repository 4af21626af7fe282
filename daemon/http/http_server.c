/* http_server.c — the libmicrohttpd listener, body accumulation, routing,
 * authentication and responses (see http_server.h). */
#include "daemon/http/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "daemon/http/auth_keystone.h"
#include "daemon/http/http_admit.h"
#include "daemon/http/http_target.h"
#include "daemon/latency.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/name_check.h"

struct http_server {
    struct MHD_Daemon *mhd;
    int fd;
    int port;
    const struct ga_config *cfg;
    struct ga_daemon *app;
    struct pg_query *q;
    struct http_admit *admit;
    struct auth_keystone *keystone;    /* http.auth keystone, else NULL */
    size_t max_body;
    _Atomic uint64_t requests, e4xx, e5xx, too_big, unauthorized;
    _Atomic int connections;
    struct ga_ratelimit refused_log;   /* the log lines of refused targets */
};

/* Per-request state kept across the access handler's calls: made by
 * on_uri (the request line) or on the handler's first call, freed by
 * on_completed. */
struct conn_state {
    char *body;
    size_t len, cap;
    int too_big;
    int started;                       /* the handler has seen the headers */
    int close;                         /* answer with Connection: close */
    int refuse;                        /* 400 or 414: the target broke a rule */
    char why[160];                     /* ... which one */
};

static const char *status_title(int code)
{
    switch (code) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 413: return "Request Entity Too Large";
    case 414: return "Request-URI Too Long";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

/* ---- response helpers ---------------------------------------------------- */

static void resp_set(struct http_resp *resp, int status, char *body, size_t len, const char *ct)
{
    free(resp->body);
    resp->status = status;
    resp->body = body;
    resp->len = len;
    resp->content_type = ct;
}

void http_json(struct http_resp *resp, int status, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!s) {
        http_error(resp, 500, "out of memory encoding the response");
        return;
    }
    resp_set(resp, status, s, strlen(s), "application/json");
}

void http_error(struct http_resp *resp, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *j = json_pack("{s:i, s:s, s:s}", "code", status, "title", status_title(status),
                          "description", msg);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        s = strdup("{\"code\": 500, \"title\": \"Internal Server Error\", "
                   "\"description\": \"out of memory\"}");
        status = 500;
    }
    resp_set(resp, status, s, s ? strlen(s) : 0, "application/json");
}

void http_text(struct http_resp *resp, int status, const char *content_type, const char *text,
               size_t len)
{
    char *s = malloc(len + 1);
    if (!s) {
        http_error(resp, 500, "out of memory");
        return;
    }
    memcpy(s, text, len);
    s[len] = '\0';
    resp_set(resp, status, s, len, content_type);
}

/* ---- request helpers ------------------------------------------------------ */

const char *http_arg(const struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_header(const struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

struct args_it {
    const char *name;
    const char **vals;
    int n, max;
};

static enum MHD_Result args_cb(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    struct args_it *it = cls;
    if (key && value && strcmp(key, it->name) == 0 && it->n < it->max)
        it->vals[it->n++] = value;
    return MHD_YES;
}

int http_args(const struct http_req *r, const char *name, const char **vals, int max)
{
    struct args_it it = { name, vals, 0, max };
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, args_cb, &it);
    return it.n;
}

/* ---- authentication --------------------------------------------------------- */

static void copy(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap - 1) : 0;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* http.auth keystone: the X-Auth-Token validated (auth_keystone.h); the
 * identity as noauth's headers would give it.  0, 401 or 503 with resp
 * set. */
static int authenticate_keystone(struct http_server *s, struct http_req *r,
                                 struct http_resp *resp)
{
    struct auth_keystone_ident kid;
    char why[512];
    int rc = auth_keystone_check(s->keystone, http_header(r, "X-Auth-Token"), &kid, why,
                                 sizeof why);
    if (rc != 0) {
        http_error(resp, rc, "%s", why);
        if (rc == 401)
            resp->www_authenticate = auth_keystone_challenge(s->keystone);
        return rc;
    }
    struct http_ident *id = &r->ident;
    copy(id->user, sizeof id->user, kid.user);
    copy(id->project, sizeof id->project, kid.project);
    snprintf(id->creator, sizeof id->creator, "%s:%s", kid.user, kid.project);
    id->admin = kid.admin;
    return 0;
}

/* Fill r->ident from the request per http.auth.  0, or an HTTP status (401;
 * 503 when Keystone cannot say) with resp set. */
static int authenticate_mode(struct http_server *s, struct http_req *r, struct http_resp *resp)
{
    struct http_ident *id = &r->ident;
    const char *mode = s->cfg->http.auth;
    if (strcmp(mode, "keystone") == 0)
        return authenticate_keystone(s, r, resp);
    if (strcmp(mode, "basic") == 0) {
        /* libmicrohttpd decodes the header; the password is not checked
         * (Gnocchi's basic mode: the user name is the user) */
        char *pass = NULL;
        char *user = MHD_basic_auth_get_username_password(r->conn, &pass);
        int ok = user && user[0] && pass;
        if (ok) {
            copy(id->user, sizeof id->user, user);
            copy(id->creator, sizeof id->creator, user);
            id->admin = strcmp(user, "admin") == 0;
        }
        MHD_free(user);
        MHD_free(pass);
        if (!ok) {
            http_error(resp, 401, "basic authentication required: send an Authorization: Basic "
                       "header whose user name is the user");
            return 401;
        }
        return 0;
    }
    if (strcmp(mode, "remoteuser") == 0) {
        const char *u = http_header(r, "X-Remote-User");
        if (!u || !u[0]) {
            http_error(resp, 401, "no X-Remote-User header: the front proxy must authenticate "
                       "the user (http.auth: remoteuser)");
            return 401;
        }
        copy(id->user, sizeof id->user, u);
        copy(id->creator, sizeof id->creator, u);
        id->admin = strcmp(u, "admin") == 0;
        return 0;
    }
    /* noauth: the X-User-Id / X-Project-Id / X-Roles headers, trusted */
    const char *u = http_header(r, "X-User-Id"), *p = http_header(r, "X-Project-Id");
    const char *roles = http_header(r, "X-Roles");
    if ((!u || !u[0]) && (!p || !p[0])) {
        http_error(resp, 401, "no X-User-Id or X-Project-Id header (http.auth: noauth)");
        return 401;
    }
    copy(id->user, sizeof id->user, u);
    copy(id->project, sizeof id->project, p);
    snprintf(id->creator, sizeof id->creator, "%s:%s", u ? u : "", p ? p : "");
    id->admin = 0;
    for (const char *x = roles; x && *x;) {
        size_t n = strcspn(x, ",");
        while (n && x[0] == ' ')
            x++, n--;
        if (n == 5 && strncmp(x, "admin", 5) == 0)
            id->admin = 1;
        x += n;
        if (*x == ',')
            x++;
    }
    return 0;
}

/* authenticate_mode, then the identity's text checked as a request target
 * is (http_target.h): a user, project or creator that is not UTF-8 would
 * reach PostgreSQL as a parameter and fail there.  0, or 400/401 with resp
 * set. */
static int authenticate(struct http_server *s, struct http_req *r, struct http_resp *resp)
{
    int rc = authenticate_mode(s, r, resp);
    if (rc != 0)
        return rc;
    const char *fields[][2] = { { "user name", r->ident.user },
                                { "project id", r->ident.project },
                                { "creator", r->ident.creator } };
    char why[160];
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (name_check_reason(fields[i][0], fields[i][1], strlen(fields[i][1]), why, sizeof why)) {
            http_error(resp, 400, "%s", why);
            return 400;
        }
    return 0;
}

/* ---- routing ---------------------------------------------------------------- */

/* Match path against pattern; fill captures (malloc'ed).  1 on match. */
static int match(const char *pattern, const char *path, struct http_req *r)
{
    const char *p = pattern, *u = path;
    int n = 0;
    while (*p) {
        if (p[0] == '{' && p[1] == '*' && p[2] == '}') {
            if (!*u || n >= HTTP_MAX_CAPTURES)
                goto no;
            r->captures[n++] = strdup(u);
            u += strlen(u);
            p += 3;
            continue;
        }
        if (p[0] == '{' && p[1] == '}') {
            size_t len = strcspn(u, "/");
            if (!len || n >= HTTP_MAX_CAPTURES)
                goto no;
            r->captures[n++] = strndup(u, len);
            u += len;
            p += 2;
            continue;
        }
        if (*p != *u)
            goto no;
        p++, u++;
    }
    /* a trailing slash is accepted as Gnocchi (pecan) accepts it */
    if (*u && !(u[0] == '/' && u[1] == '\0'))
        goto no;
    r->ncaptures = n;
    for (int i = 0; i < n; i++)
        if (!r->captures[i])
            goto no;
    return 1;
no:
    for (int i = 0; i < n; i++) {
        free(r->captures[i]);
        r->captures[i] = NULL;
    }
    r->ncaptures = 0;
    return 0;
}

static void dispatch(struct http_server *s, struct http_req *r, struct http_resp *resp)
{
    int path_matched = 0;
    for (int i = 0; i < http_nroutes; i++) {
        const struct http_route *rt = &http_routes[i];
        if (!match(rt->pattern, r->path, r))
            continue;
        if (strcmp(rt->method, r->method) != 0) {
            path_matched = 1;
            for (int k = 0; k < r->ncaptures; k++) {
                free(r->captures[k]);
                r->captures[k] = NULL;
            }
            r->ncaptures = 0;
            continue;
        }
        int arc = rt->public_route ? 0 : authenticate(s, r, resp);
        if (arc != 0) {
            if (arc == 401)
                s->unauthorized++;
            return;
        }
        rt->fn(r, resp);
        return;
    }
    if (path_matched)
        http_error(resp, 405, "method %s not allowed on %s", r->method, r->path);
    else
        http_error(resp, 404, "The resource could not be found.");
}

/* ---- libmicrohttpd callbacks ----------------------------------------------- */

/* Queue resp on c (Connection: close when close).  Frees resp->body. */
static enum MHD_Result send_resp(struct MHD_Connection *c, struct http_resp *resp, int close)
{
    struct MHD_Response *m = MHD_create_response_from_buffer(resp->len, resp->body,
                                                             MHD_RESPMEM_MUST_FREE);
    if (!m) {
        free(resp->body);
        return MHD_NO;
    }
    resp->body = NULL;
    if (resp->content_type)
        MHD_add_response_header(m, "Content-Type", resp->content_type);
    if (resp->location[0])
        MHD_add_response_header(m, "Location", resp->location);
    if (resp->link[0])
        MHD_add_response_header(m, "Link", resp->link);
    if (resp->www_authenticate)
        MHD_add_response_header(m, MHD_HTTP_HEADER_WWW_AUTHENTICATE, resp->www_authenticate);
    if (close)
        MHD_add_response_header(m, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)resp->status, m);
    MHD_destroy_response(m);
    return rc;
}

static void count_status(struct http_server *s, int status)
{
    s->requests++;
    if (status >= 500)
        s->e5xx++;
    else if (status >= 400)
        s->e4xx++;
}

/* The probes: answered on the connections held for them (http_admit.h). */
static int is_probe(const char *method, const char *url)
{
    static const char *const probes[] = { "/healthz", "/readyz", "/metrics" };
    if (strcmp(method, "GET") != 0)
        return 0;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        size_t n = strlen(probes[i]);
        if (strncmp(url, probes[i], n) == 0 && (url[n] == '\0' || (url[n] == '/' && !url[n + 1])))
            return 1;
    }
    return 0;
}

static struct http_conn *conn_entry(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The request line is in: check its target (http_target.h) before
 * libmicrohttpd splits the query string.  Returns the request's state. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls, (void)c;
    struct conn_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->refuse = http_target_check(uri, strlen(uri), st->why, sizeof st->why);
    if (st->refuse == 414) {
        /* libmicrohttpd (0.9.x) parses the query string right after this
         * callback, in this buffer, into records from the connection's
         * 64 KiB pool; thousands of parameters exhaust it and the
         * connection is closed without an answer.  The request is refused
         * anyway: end the string after the '?' so that nothing is parsed
         * and the 414 can be sent.  (tests/api/test_http_limits.py sends
         * 3,000 parameters and expects the 414.) */
        char *q = strchr(uri, '?');
        if (q)
            q[1] = '\0';
    }
    return st;
}

/* The headers are in: admission (http_admit.h), then the target's and the
 * body's bounds; queues the refusal if any. */
static enum MHD_Result first_call(struct http_server *s, struct MHD_Connection *c,
                                  struct conn_state *st, const char *url, const char *method)
{
    struct http_resp resp = { 0 };
    st->started = 1;
    switch (http_admit_request(s->admit, conn_entry(c), is_probe(method, url))) {
    case HTTP_ADMIT_SERVE:
        break;
    case HTTP_ADMIT_PROBE_CLOSE:
        st->close = 1;
        break;
    case HTTP_ADMIT_NOT_PROBE:
        http_error(&resp, 503, "this connection holds a place kept for /healthz, /readyz and "
                   "/metrics; http.max_connections (%d) connections are open",
                   s->cfg->http.max_connections);
        count_status(s, 503);
        return send_resp(c, &resp, 1);
    }
    if (st->refuse) {
        uint64_t sup;
        if (ga_ratelimit_ok(&s->refused_log, &sup)) {
            char path[3 * 200 + 1];
            http_log_escape(path, sizeof path, url, strnlen(url, 200));
            ga_log(GA_LOG_INFO, "http_refused", "status=%d reason=\"%s\" method=%.16s "
                   "path=\"%s\" suppressed=%llu", st->refuse, st->why, method, path,
                   (unsigned long long)sup);
        }
        http_error(&resp, st->refuse, "%s", st->why);
        count_status(s, st->refuse);
        return send_resp(c, &resp, 1);
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > s->max_body) {
        s->too_big++;
        http_error(&resp, 413, "request body of %s bytes is over http.max_body_bytes (%zu)",
                   cl, s->max_body);
        count_status(s, 413);
        return send_resp(c, &resp, st->close);
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    struct http_server *s = cls;
    struct conn_state *st = *con_cls;
    if (!st) {                         /* on_uri could not allocate it */
        if (!(st = calloc(1, sizeof *st)))
            return MHD_NO;
        *con_cls = st;
    }
    if (!st->started)
        return first_call(s, c, st, url, method);
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (st->too_big || st->len + n > s->max_body) {
            /* chunked and over the limit: stop reading; MHD closes the
             * connection (no response can be queued mid-body) */
            if (!st->too_big)
                s->too_big++;
            st->too_big = 1;
            return MHD_NO;
        }
        if (st->len + n + 1 > st->cap) {
            size_t cap = st->cap ? st->cap : 4096;
            while (cap < st->len + n + 1)
                cap *= 2;
            char *b = realloc(st->body, cap);
            if (!b)
                return MHD_NO;
            st->body = b;
            st->cap = cap;
        }
        memcpy(st->body + st->len, upload, n);
        st->len += n;
        st->body[st->len] = '\0';
        return MHD_YES;
    }
    struct http_req r = { .srv = s, .conn = c, .method = method, .path = url,
                          .body = st->body, .body_len = st->len };
    struct http_resp resp = { .status = 200 };
    int64_t t0 = ga_now_mono_ns();
    dispatch(s, &r, &resp);
    histo_observe_ns(&latency_http, ga_now_mono_ns() - t0);
    for (int i = 0; i < r.ncaptures; i++)
        free(r.captures[i]);
    if (!resp.body)
        http_text(&resp, resp.status, "text/plain", "", 0);
    count_status(s, resp.status);
    if (resp.status >= 500) {
        char path[3 * 200 + 1];
        http_log_escape(path, sizeof path, url, strnlen(url, 200));
        ga_log(GA_LOG_WARN, "http_error", "method=%.16s path=\"%s\" status=%d", method, path,
               resp.status);
    }
    return send_resp(c, &resp, st->close);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct http_server *s = cls;
    struct conn_state *st = *con_cls;
    http_admit_done(s->admit, conn_entry(c));
    if (st) {
        free(st->body);
        free(st);
        *con_cls = NULL;
    }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        s->connections++;
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_ctx = fd ? http_admit_started(s->admit, fd->connect_fd) : NULL;
    } else {
        s->connections--;
        http_admit_closed(s->admit, *socket_ctx);
        *socket_ctx = NULL;
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512], esc[3 * 512 + 1];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '"'))
        msg[--n] = '\0';
    http_log_escape(esc, sizeof esc, msg, n);
    ga_log(GA_LOG_DEBUG, "http_mhd", "msg=\"%s\"", esc);
}

/* ---- start / stop ------------------------------------------------------------ */

static int bind_listen(const char *hostport, int backlog, int *fd_out, int *port_out, char *err,
                       size_t errlen)
{
    char host[256];
    int port;
    if (ga_parse_hostport(hostport, host, sizeof host, &port) < 0)
        return ga_fail(GA_EINVAL, err, errlen, "listen.http: cannot parse '%s'", hostport);
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai = NULL;
    int rc = getaddrinfo(host[0] ? host : NULL, ps, &hints, &ai);
    if (rc != 0)
        return ga_fail(GA_EINVAL, err, errlen, "listen.http %s: %s", hostport, gai_strerror(rc));
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, backlog) < 0) {
        rc = ga_fail(GA_EIO, err, errlen, "listen.http %s: %s", hostport, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return rc;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    *fd_out = fd;
    return 0;
}

int http_server_start(struct http_server **out, const struct ga_config *cfg, struct ga_daemon *app,
                      struct pg_query *q, char *err, size_t errlen)
{
    struct http_server *s = calloc(1, sizeof *s);
    if (!s)
        return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
    s->cfg = cfg;
    s->app = app;
    s->q = q;
    s->max_body = (size_t)cfg->http.max_body_bytes;
    s->refused_log = (struct ga_ratelimit)GA_RATELIMIT_INIT(1000000000LL);
    struct http_admit_limits lim = { cfg->http.max_connections,
                                     cfg->http.max_connections_per_peer,
                                     cfg->http.header_timeout_s };
    int rc = strcmp(cfg->http.auth, "keystone") == 0
                 ? auth_keystone_create(&s->keystone, &cfg->http.keystone, err, errlen) : 0;
    if (rc < 0) {
        free(s);
        return rc;
    }
    rc = http_admit_create(&s->admit, &lim, err, errlen);
    if (rc < 0) {
        auth_keystone_free(s->keystone);
        free(s);
        return rc;
    }
    rc = bind_listen(cfg->listen.http, 128, &s->fd, &s->port, err, errlen);
    if (rc < 0) {
        http_admit_free(s->admit);
        auth_keystone_free(s->keystone);
        free(s);
        return rc;
    }
    /* poll(), not select(): the daemon's descriptors (ingest connections,
     * journal, PostgreSQL) may number past FD_SETSIZE.  The door
     * (http_admit.h) accepts and hands connections over: no listening
     * socket of libmicrohttpd's. */
    s->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                  MHD_USE_POLL | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET |
                                  MHD_USE_ERROR_LOG,
                              0, NULL, NULL, on_request, s,
                              MHD_OPTION_CONNECTION_LIMIT, http_admit_mhd_limit(s->admit),
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->http.timeout_s,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
                              MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                              MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                              MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
                              MHD_OPTION_END);
    if (!s->mhd) {
        close(s->fd);
        http_admit_free(s->admit);
        auth_keystone_free(s->keystone);
        free(s);
        return ga_fail(GA_EIO, err, errlen, "listen.http %s: libmicrohttpd did not start",
                       cfg->listen.http);
    }
    if ((rc = http_admit_run(s->admit, s->mhd, s->fd, err, errlen)) < 0) {
        MHD_stop_daemon(s->mhd);
        close(s->fd);
        http_admit_free(s->admit);
        auth_keystone_free(s->keystone);
        free(s);
        return rc;
    }
    ga_log(GA_LOG_INFO, "http_listen", "address=%s port=%d auth=%s max_connections=%d "
           "probe_slots=%d max_connections_per_peer=%d header_timeout_s=%d", cfg->listen.http,
           s->port, cfg->http.auth, cfg->http.max_connections, HTTP_PROBE_SLOTS,
           cfg->http.max_connections_per_peer, cfg->http.header_timeout_s);
    *out = s;
    return 0;
}

void http_server_stop(struct http_server *s)
{
    if (!s)
        return;
    http_admit_halt(s->admit);           /* no more connections accepted */
    close(s->fd);
    MHD_stop_daemon(s->mhd);             /* closes the served connections */
    http_admit_free(s->admit);
    auth_keystone_free(s->keystone);
    free(s);
}

int http_server_port(const struct http_server *s)
{
    return s->port;
}

void http_get_stats(const struct http_server *s, struct http_stats *o)
{
    struct http_server *m = (struct http_server *)s;
    o->requests = m->requests;
    o->errors_4xx = m->e4xx;
    o->errors_5xx = m->e5xx;
    o->too_big = m->too_big;
    o->unauthorized = m->unauthorized;
    o->connections = m->connections;
    struct http_admit_stats as = { 0 };
    if (m->admit)
        http_admit_get_stats(m->admit, &as);
    o->header_timeouts = as.header_timeouts;
    o->probe_timeouts = as.probe_timeouts;
    o->wait_timeouts = as.wait_timeouts;
    o->wait_evicted = as.wait_evicted;
    o->refused_full = as.refused_full;
    o->refused_peer = as.refused_peer;
    auth_keystone_get_stats(m->keystone, &o->keystone);
}

struct ga_daemon *http_server_app(const struct http_server *s)
{
    return s->app;
}

struct pg_query *http_server_pgq(const struct http_server *s)
{
    return s->q;
}

const struct ga_config *http_server_config(const struct http_server *s)
{
    return s->cfg;
}
