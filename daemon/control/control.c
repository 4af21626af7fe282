/* control.c — control socket server (see control.h): sockets, framing,
 * dispatch, and each connection's FIFO of owed replies.  Deferred requests
 * and blocking work are in control_defer.c. */
#include "daemon/control/control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/control/control_priv.h"
#include "daemon/daemon.h"
#include "proto/base/log.h"
#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_frame.h"

#define CTL_READ_CHUNK 65536
#define CTL_BUF_MAX (CTL_MAX_FRAME + CTL_READ_CHUNK)

struct ctl_write {
    uv_write_t req;
    uv_buf_t buf;
    struct ctl_conn *conn;
};

static void conn_close(struct ctl_conn *c);

int ga_control_connections(const struct ga_control *c)
{
    return c ? c->nconns : 0;
}

static void on_server_handle_closed(uv_handle_t *h)
{
    struct ga_control *s = h->data;
    if (--s->handles_open == 0) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        free(s);
    }
}

void ctl_maybe_free_server(struct ga_control *s)
{
    if (!s->stopping || !s->server_closed || s->nconns != 0 || s->freeing)
        return;
    if (!ctl_defer_idle_close(s))
        return;                          /* completions still owed */
    s->freeing = 1;
    unlink(s->path);
    uv_close((uv_handle_t *)&s->async, on_server_handle_closed);
    uv_close((uv_handle_t *)&s->timer, on_server_handle_closed);
}

static void on_conn_closed(uv_handle_t *h)
{
    struct ctl_conn *c = h->data;
    struct ga_control *s = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    free(c->buf);
    free(c);
    ctl_maybe_free_server(s);
}

/* Drop every reply still owed (their requests are orphaned) and close. */
static void conn_close(struct ctl_conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    for (struct ctl_slot *sl = c->head, *next; sl; sl = next) {
        next = sl->next;
        if (sl->req)
            ctl_slot_orphan(sl);
        free(sl->data);
        free(sl);
    }
    c->head = c->tail = NULL;
    c->npending = 0;
    uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct ctl_conn *c = req->data;
    free(req);
    conn_close(c);
}

/* Close after the owed replies are written: at once when the FIFO is
 * empty, else once ctl_conn_pump empties it. */
static void conn_close_gracefully(struct ctl_conn *c)
{
    if (c->closing || c->shut)
        return;
    uv_read_stop((uv_stream_t *)&c->pipe);
    if (c->head) {
        c->close_after = 1;
        return;
    }
    c->close_after = 0;
    uv_shutdown_t *req = malloc(sizeof *req);
    if (req) {
        req->data = c;
        if (uv_shutdown(req, (uv_stream_t *)&c->pipe, on_shutdown) == 0) {
            c->shut = 1;
            return;
        }
        free(req);
    }
    conn_close(c);
}

static void on_written(uv_write_t *req, int status)
{
    struct ctl_write *w = (struct ctl_write *)req;
    if (status < 0 && status != UV_ECANCELED)
        ga_log(GA_LOG_DEBUG, "ctl_write_failed", "conn=%llu err=%s",
               (unsigned long long)w->conn->id, uv_strerror(status));
    free(w->buf.base);
    free(w);
}

/* Write data (taken over).  Returns 0 or -1 (c closed). */
static int conn_write(struct ctl_conn *c, char *data, size_t len)
{
    struct ctl_write *w = malloc(sizeof *w);
    if (!w) {
        free(data);
        conn_close(c);
        return -1;
    }
    w->conn = c;
    w->buf = uv_buf_init(data, (unsigned)len);
    int rc = uv_write(&w->req, (uv_stream_t *)&c->pipe, &w->buf, 1, on_written);
    if (rc < 0) {
        free(data);
        free(w);
        conn_close(c);
        return -1;
    }
    return 0;
}

struct ctl_slot *ctl_conn_push(struct ctl_conn *c, struct ga_ctl_req *req, char *data, size_t len)
{
    struct ctl_slot *sl = calloc(1, sizeof *sl);
    if (!sl) {
        free(data);
        return NULL;
    }
    sl->conn = c;
    sl->req = req;
    sl->data = data;
    sl->len = len;
    if (c->tail)
        c->tail->next = sl;
    else
        c->head = sl;
    c->tail = sl;
    if (req)
        c->npending++;
    return sl;
}

void ctl_conn_pump(struct ctl_conn *c)
{
    while (!c->closing && c->head && !c->head->req) {
        struct ctl_slot *sl = c->head;
        c->head = sl->next;
        if (!c->head)
            c->tail = NULL;
        char *data = sl->data;
        size_t len = sl->len;
        free(sl);
        if (conn_write(c, data, len) < 0)
            return;
    }
    if (!c->closing && c->close_after && !c->head)
        conn_close_gracefully(c);
}

/* Queue a ready response; pack failures close the connection. */
static void send_response(struct ctl_conn *c, uint64_t id, int rc, const char *result, size_t rlen,
                          const char *msg)
{
    size_t len = 0;
    char *data = ctl_pack_response(id, rc, result, rlen, msg, &len);
    if (!data || !ctl_conn_push(c, NULL, data, len)) {
        conn_close(c);
        return;
    }
    ctl_conn_pump(c);
}

static void send_error(struct ctl_conn *c, uint64_t id, int code, const char *msg)
{
    send_response(c, id, code, NULL, 0, msg);
}

static const struct ga_ctl_op *find_op(const struct ga_ctl_op *ops, const char *name, size_t len)
{
    for (const struct ga_ctl_op *op = ops; op->name; op++)
        if (strlen(op->name) == len && memcmp(op->name, name, len) == 0)
            return op;
    return NULL;
}

/* Run a known op: its reply is queued now or, deferred, owed in order. */
static void dispatch(struct ctl_conn *c, const struct ga_ctl_op *op, uint64_t id,
                     const msgpack_object *args)
{
    struct ga_control *s = c->srv;
    struct ga_daemon *d = s->d;
    char err[512] = "";
    if (c->npending >= CTL_MAX_PENDING) {
        d->counters.ctl_errors++;
        snprintf(err, sizeof err, "%d requests already pending on this connection", CTL_MAX_PENDING);
        send_error(c, id, GA_EBUSY, err);
        return;
    }
    struct ga_ctl_req *req = ctl_req_new(s, id, op->name, strlen(op->name));
    if (!req) {
        send_error(c, id, GA_ENOMEM, NULL);
        return;
    }
    msgpack_sbuffer result;
    msgpack_packer rpk;
    msgpack_sbuffer_init(&result);
    msgpack_packer_init(&rpk, &result, msgpack_sbuffer_write);
    int hrc = op->fn(d, args, req, &rpk, err, sizeof err);
    if (hrc == GA_CTL_DEFERRED) {
        msgpack_sbuffer_destroy(&result);
        struct ctl_slot *sl = ctl_conn_push(c, req, NULL, 0);
        ctl_req_deferred(s, req, sl);    /* sl NULL (no memory): orphaned */
        if (!sl)
            conn_close(c);
        return;
    }
    free(req);
    if (hrc < 0)
        d->counters.ctl_errors++;
    send_response(c, id, hrc < 0 ? hrc : 0, result.data, result.size,
                  err[0] ? err : NULL);
    msgpack_sbuffer_destroy(&result);
}

/* Decode and answer one complete frame.  Returns 0, or -1 when the
 * connection must close (protocol error already answered). */
static int handle_frame(struct ctl_conn *c, const char *frame, size_t flen)
{
    struct ga_daemon *d = c->srv->d;
    char err[512] = "";
    msgpack_unpacked msg;
    msgpack_unpacked_init(&msg);
    size_t off = 0;
    int rc = -1;
    if (msgpack_unpack_next(&msg, frame, flen, &off) != MSGPACK_UNPACK_SUCCESS) {
        d->counters.ctl_protocol_errors++;
        send_error(c, 0, GA_EPROTO, "request is not a decodable msgpack object");
        goto out;
    }
    uint64_t id = 0;
    const char *opname;
    size_t oplen;
    const msgpack_object *args;
    int prc = ctl_parse_request(&msg.data, &id, &opname, &oplen, &args, err, sizeof err);
    if (prc < 0) {
        d->counters.ctl_protocol_errors++;
        send_error(c, id, prc, err);
        goto out;
    }
    d->counters.ctl_requests++;
    rc = 0;
    const struct ga_ctl_op *op = find_op(c->srv->ops, opname, oplen);
    if (!op) {
        d->counters.ctl_errors++;
        snprintf(err, sizeof err, "unknown op '%.*s'", (int)(oplen > 64 ? 64 : oplen), opname);
        send_error(c, id, GA_EBADOP, err);
        goto out;
    }
    dispatch(c, op, id, args);
out:
    msgpack_unpacked_destroy(&msg);
    return rc;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ctl_conn *c = h->data;
    if (c->cap - c->len < CTL_READ_CHUNK && c->cap < CTL_BUF_MAX) {
        size_t ncap = c->cap ? c->cap * 2 : CTL_READ_CHUNK;
        if (ncap > CTL_BUF_MAX)
            ncap = CTL_BUF_MAX;
        char *nb = realloc(c->buf, ncap);
        if (nb) {
            c->buf = nb;
            c->cap = ncap;
        }
    }
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct ctl_conn *c = s->data;
    if (nread < 0) {
        conn_close(c);               /* EOF or error */
        return;
    }
    c->len += (size_t)nread;
    size_t pos = 0;
    while (pos < c->len && !c->closing && !c->close_after && !c->shut) {
        size_t flen = 0;
        int r = mp_frame_scan((const uint8_t *)c->buf + pos, c->len - pos, CTL_MAX_FRAME, &flen);
        if (r == 0) {
            if (c->len - pos >= CTL_MAX_FRAME) {
                r = GA_ETOOBIG;
            } else {
                break;
            }
        }
        if (r < 0) {
            char msg[128];
            snprintf(msg, sizeof msg, "%s (limit %u bytes per request)",
                     r == GA_ETOOBIG ? "request frame too large or too deeply nested"
                                     : "invalid msgpack type byte in request",
                     CTL_MAX_FRAME);
            c->srv->d->counters.ctl_protocol_errors++;
            ga_log(GA_LOG_WARN, "ctl_bad_frame", "conn=%llu err=%s", (unsigned long long)c->id,
                   ga_errname(r));
            send_error(c, 0, r == GA_ETOOBIG ? GA_ETOOBIG : GA_EPROTO, msg);
            conn_close_gracefully(c);
            return;
        }
        if (handle_frame(c, c->buf + pos, flen) < 0) {
            conn_close_gracefully(c);
            return;
        }
        pos += flen;
    }
    memmove(c->buf, c->buf + pos, c->len - pos);
    c->len -= pos;
}

static void on_connection(uv_stream_t *server, int status)
{
    struct ga_control *s = server->data;
    if (status < 0 || s->stopping)
        return;
    struct ctl_conn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->srv = s;
    uv_pipe_init(s->d->loop, &c->pipe, 0);
    c->pipe.data = c;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    c->id = ++s->d->counters.ctl_connections;
    if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0 ||
        uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) < 0)
        conn_close(c);
}

/* 1 if something accepts connections at path. */
static int socket_alive(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int alive = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return alive;
}

static void on_server_closed(uv_handle_t *h)
{
    struct ga_control *s = h->data;
    s->server_closed = 1;
    ctl_maybe_free_server(s);
}

int ga_control_start(struct ga_daemon *d, const char *path, int mode,
                     const struct ga_ctl_op *ops, struct ga_control **out, char *err,
                     size_t errlen)
{
    if (socket_alive(path)) {
        snprintf(err, errlen, "control socket %s is in use by a running process", path);
        return GA_EEXIST;
    }
    if (unlink(path) < 0 && errno != ENOENT) {
        int e = errno;
        snprintf(err, errlen, "cannot remove stale control socket %s: %s", path, strerror(e));
        return -e;
    }
    struct ga_control *s = calloc(1, sizeof *s);
    if (!s)
        return GA_ENOMEM;
    s->d = d;
    s->ops = ops;
    snprintf(s->path, sizeof s->path, "%s", path);
    if (ctl_defer_init(s) < 0) {
        free(s);
        return GA_ENOMEM;
    }
    uv_pipe_init(d->loop, &s->server, 0);
    s->server.data = s;
    int rc = uv_pipe_bind(&s->server, path);
    if (rc == 0 && chmod(path, (mode_t)mode) < 0)
        rc = uv_translate_sys_error(errno);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->server, 64, on_connection);
    if (rc < 0) {
        snprintf(err, errlen, "control socket %s: %s", path, uv_strerror(rc));
        s->stopping = 1;
        uv_close((uv_handle_t *)&s->server, on_server_closed);
        return GA_EIO;
    }
    *out = s;
    return 0;
}

void ga_control_stop(struct ga_control *s)
{
    if (!s || s->stopping)
        return;
    s->stopping = 1;
    for (struct ctl_conn *c = s->conns; c; c = c->next)
        conn_close_gracefully(c);
    uv_close((uv_handle_t *)&s->server, on_server_closed);
}
