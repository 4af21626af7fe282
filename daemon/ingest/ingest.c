/* ingest.c — protocol v1 over Unix and TCP streams (see ingest.h). */
#include "daemon/ingest/ingest.h"

#include <nettle/memops.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/ingest/ingest_priv.h"
#include "daemon/latency.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/mp_frame.h"

#define INGEST_READ_CHUNK 65536

struct ingest_conn {
    union {
        uv_handle_t h;
        uv_stream_t s;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } u;
    struct ga_ingest *g;
    int tcp;
    uint64_t id;
    uint8_t *buf;
    size_t len, cap;
    int hello, reading, closing;
    int failed;                        /* no more input is processed */
    int finishing;                     /* shutdown requested: close after writes */
    int eof;                           /* the peer closed its side */
    int parsing;                       /* in conn_parse */
    uint8_t peer[17];                  /* the peer: [0] 'u' + uid, '4' / '6' + address */
    size_t inflight;                   /* items in the FIFO */
    struct pipeline_item *head, *tail;
    int64_t last_rx_ns, partial_since_ns;
    struct mp_scan scan;               /* progress through the frame at buf[0] */
    struct ingest_conn *prev, *next;
};

/* A protocol v1 server socket (listen.unix, listen.tcp); its connections
 * are the core's (g->conns).  Freed with the ingest. */
struct ingest_srv {
    union {
        uv_handle_t h;
        uv_stream_t s;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } u;
    struct ga_ingest *g;
    int tcp, port, closed;
};

struct ingest_write {
    uv_write_t req;
    uv_buf_t buf;
};

static void conn_pump(struct ingest_conn *c);
static void conn_maybe_free(struct ingest_conn *c);
static void conn_parse(struct ingest_conn *c);

/* ---- writes ------------------------------------------------------------ */

static void on_written(uv_write_t *req, int status)
{
    struct ingest_write *w = (struct ingest_write *)req;
    free(w->buf.base);
    free(w);
}

/* Send what sb holds (taken over). */
static void conn_send(struct ingest_conn *c, msgpack_sbuffer *sb)
{
    struct ingest_write *w = malloc(sizeof *w);
    if (!w || c->closing) {
        free(w);
        msgpack_sbuffer_destroy(sb);
        return;
    }
    w->buf = uv_buf_init(sb->data, (unsigned)sb->size);
    sb->data = NULL;
    if (uv_write(&w->req, &c->u.s, &w->buf, 1, on_written) < 0) {
        free(w->buf.base);
        free(w);
    }
}

static void send_error(struct ingest_conn *c, int code, const char *msg, int has_seq, uint64_t seq)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    ing_pack_error(&pk, code, msg, has_seq, seq);
    conn_send(c, &sb);
}

static void send_ack(struct ingest_conn *c, const struct pipeline_item *it)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    ing_pack_ack_late(&pk, it->seq, it->accepted, it->nrejected, it->rejected, it->nlate, it->late);
    conn_send(c, &sb);
}

/* ---- closing ------------------------------------------------------------- */

static void on_closed(uv_handle_t *h)
{
    struct ingest_conn *c = h->data;
    c->closing = 2;                    /* handle gone */
    conn_maybe_free(c);
}

/* Free the connection once its handle is closed and no item of it is with
 * a worker or the sequencer. */
static void conn_maybe_free(struct ingest_conn *c)
{
    struct ga_ingest *g = c->g;
    if (c->closing != 2)
        return;
    for (struct pipeline_item *it = c->head, *next; it; it = next) {
        next = it->next;
        enum pipeline_item_state s = pipeline_item_state(g->pl, it);
        if (s == PIPELINE_DECODING || s == PIPELINE_SEQUENCING)
            return;                    /* comes back later: freed then */
    }
    while (c->head) {
        struct pipeline_item *it = c->head;
        c->head = it->next;
        pipeline_item_free(it);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        g->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    g->st.conns_open--;
    free(c->buf);
    free(c);
    ingest_check_stopped(g);
}

static void conn_close(struct ingest_conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    c->reading = 0;
    uv_close(&c->u.h, on_closed);
}

/* Close without a reset: end our side, discard what the peer sent and we
 * will not read (unread input makes close(2) send RST, and the peer could
 * lose the error just written), then close. */
static void conn_close_gently(struct ingest_conn *c)
{
    uv_os_fd_t fd;
    if (!c->closing && uv_fileno(&c->u.h, &fd) == 0) {
        char junk[16384];
        shutdown(fd, SHUT_WR);
        for (int i = 0; i < 64 && recv(fd, junk, sizeof junk, MSG_DONTWAIT) > 0; i++)
            ;
    }
    conn_close(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct ingest_conn *c = req->data;
    free(req);
    conn_close(c);
}

/* Stop reading; close once queued writes are out. */
static void conn_finish(struct ingest_conn *c)
{
    if (c->closing || c->finishing)
        return;
    c->failed = 1;
    c->finishing = 1;
    uv_read_stop(&c->u.s);
    c->reading = 0;
    uv_shutdown_t *req = malloc(sizeof *req);
    if (req) {
        req->data = c;
        if (uv_shutdown(req, &c->u.s, on_shutdown) == 0)
            return;
        free(req);
    }
    conn_close(c);
}

/* A frame-level error: queued behind the acks before it. */
static void conn_fail(struct ingest_conn *c, int code, const char *msg, int has_seq, uint64_t seq)
{
    struct pipeline_item *it = calloc(1, sizeof *it);
    c->g->st.protocol_errors++;
    ga_log(GA_LOG_WARN, "ingest_error", "conn=%llu code=%s msg=\"%s\"", (unsigned long long)c->id,
           ga_errname(code), msg);
    uv_read_stop(&c->u.s);
    c->reading = 0;
    if (!it) {
        send_error(c, code, msg, has_seq, seq);
        conn_finish(c);
        return;
    }
    it->state = PIPELINE_FAILED;
    it->rc = code;
    it->has_seq = has_seq;
    it->seq = seq;
    snprintf(it->err, sizeof it->err, "%s", msg);
    it->owner = c;
    if (c->tail)
        c->tail->next = it;
    else
        c->head = it;
    c->tail = it;
    c->inflight++;
    conn_pump(c);
}

/* ---- backpressure -------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static int conn_wants_read(const struct ingest_conn *c)
{
    return !c->closing && !c->failed && !c->eof && !c->g->paused && !c->g->stopping &&
           c->inflight < c->g->max_inflight;
}

static void conn_update_reading(struct ingest_conn *c)
{
    int want = conn_wants_read(c);
    if (want && !c->reading) {
        if (uv_read_start(&c->u.s, on_alloc, on_read) == 0)
            c->reading = 1;
    } else if (!want && c->reading) {
        uv_read_stop(&c->u.s);
        c->reading = 0;
    }
}

int ingest_overloaded(struct ga_ingest *g)
{
    const struct ga_config *cfg = g->d->cfg;
    return pipeline_backlog(g->pl) >= (size_t)cfg->limits.queue_batches || pipeline_journal_full(g->pl) ||
           g->st.decode_bytes_inflight > (uint64_t)cfg->limits.memory_budget_bytes / 2;
}

static void update_backpressure(struct ga_ingest *g)
{
    int over = ingest_overloaded(g);
    if (over != g->paused) {
        g->paused = over;
        if (over) {
            g->st.pauses++;
            ga_log(GA_LOG_DEBUG, "ingest_paused", "backlog=%zu decoding_bytes=%llu",
                   pipeline_backlog(g->pl), (unsigned long long)g->st.decode_bytes_inflight);
        }
        for (struct ingest_conn *c = g->conns; c; c = c->next)
            conn_update_reading(c);
    }
    g->st.paused = (uint64_t)g->paused;
}

/* ---- the FIFO: submit in order, ack in order ------------------------------ */

static void conn_pump(struct ingest_conn *c)
{
    struct ga_ingest *g = c->g;
    for (struct pipeline_item *it = c->head; it; it = it->next) {
        enum pipeline_item_state s = pipeline_item_state(g->pl, it);
        if (s == PIPELINE_DECODING || s == PIPELINE_FAILED)
            break;                     /* later items wait for this one */
        if (s == PIPELINE_DECODED)
            pipeline_submit(g->pl, it);
    }
    uint64_t durable = pipeline_durable_lsn(g->pl);
    while (c->head && !c->closing) {
        struct pipeline_item *it = c->head;
        enum pipeline_item_state s = pipeline_item_state(g->pl, it);
        if (s == PIPELINE_SEQUENCED && it->end <= durable) {
            send_ack(c, it);
            if (it->recv_mono_ns)
                histo_observe_ns(&latency_ack, ga_now_mono_ns() - it->recv_mono_ns);
            g->st.batches_acked++;
            g->st.points_accepted += it->accepted;
            g->st.points_rejected += it->nrejected;
            g->st.points_late_noticed += it->nlate;
            for (size_t i = 0; i < it->nrejected; i++)
                g->st.points_rejected_future += ing_reason_is_future(it->rejected[i].reason);
        } else if (s == PIPELINE_FAILED) {
            send_error(c, it->rc, it->err, it->has_seq, it->seq);
            c->head = it->next;
            if (!c->head)
                c->tail = NULL;
            c->inflight--;
            pipeline_item_free(it);
            conn_finish(c);
            break;
        } else {
            break;
        }
        c->head = it->next;
        if (!c->head)
            c->tail = NULL;
        c->inflight--;
        pipeline_item_free(it);
    }
    /* acks made room: take the frames left buffered at max_inflight */
    if (c->len && !c->failed && !c->closing && c->hello && c->inflight < g->max_inflight)
        conn_parse(c);
    if (c->eof && !c->head)
        conn_close(c);
    else
        conn_update_reading(c);
    conn_maybe_free(c);
}

void ga_ingest_on_durable(struct ga_ingest *g, uint64_t durable_lsn)
{
    for (struct ingest_conn *c = g->conns, *next; c; c = next) {
        next = c->next;                /* pump may free c */
        conn_pump(c);
    }
    for (int i = 0; i < g->nls; i++)
        if (g->ls[i] && listeners[i]->pump)
            listeners[i]->pump(g->ls[i]);
    update_backpressure(g);
    ingest_check_stopped(g);
}

static void on_decoded(struct pipeline_item *it)
{
    struct ingest_conn *c = it->owner;
    struct ga_ingest *g = c->g;
    g->st.decode_bytes_inflight -= it->len;
    if (it->state == PIPELINE_FAILED)
        g->st.protocol_errors++;
    conn_pump(c);
    update_backpressure(g);
}

/* ---- frames -------------------------------------------------------------- */

/* want == got, in a time that depends on their lengths only. */
static int token_ok(const char *want, const char *got)
{
    size_t n = strlen(want);
    return n == strlen(got) && memeql_sec(want, got, n);
}

static void handle_hello(struct ingest_conn *c, const uint8_t *frame, size_t len)
{
    struct ga_ingest *g = c->g;
    const struct ga_config *cfg = g->d->cfg;
    char err[256];
    struct ing_msg m;
    int rc = ing_decode(frame, len, &g->lim, &m, err, sizeof err);
    if (rc < 0) {
        conn_fail(c, rc, err, 0, 0);
        return;
    }
    if (rc != ING_HELLO || m.u.hello.from_server) {
        ing_msg_free(&m);
        conn_fail(c, GA_EPROTO, "the first message must be a client 'hello'", 0, 0);
        return;
    }
    if (m.u.hello.version != ING_PROTO_VERSION) {
        snprintf(err, sizeof err, "protocol version %llu not supported (this server speaks 1)",
                 (unsigned long long)m.u.hello.version);
        ing_msg_free(&m);
        conn_fail(c, GA_EPROTO, err, 0, 0);
        return;
    }
    if (c->tcp && cfg->listen.token[0] && !token_ok(cfg->listen.token, m.u.hello.token)) {
        int had_token = m.u.hello.has_token;   /* ing_msg_free zeroes m */
        g->st.auth_failures++;
        ing_msg_free(&m);
        conn_fail(c, GA_EAUTH, had_token ? "hello: wrong token" : "hello: token required", 0, 0);
        return;
    }
    ga_log(GA_LOG_DEBUG, "ingest_hello", "conn=%llu client=\"%s\"", (unsigned long long)c->id,
           m.u.hello.client);
    ing_msg_free(&m);
    c->hello = 1;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    ing_pack_hello_server(&pk, "gpuaggd " GA_VERSION, g->lim.max_frame, g->max_inflight);
    conn_send(c, &sb);
}

struct ing_limits ingest_item_limits(const struct ga_ingest *g)
{
    struct ing_limits lim = g->lim;
    lim.now_ns = ga_now_real_ns();
    lim.max_future_s = g->d->cfg->limits.max_future_s;
    return lim;
}

static void handle_points(struct ingest_conn *c, const uint8_t *frame, size_t len)
{
    struct ga_ingest *g = c->g;
    struct pipeline_item *it = calloc(1, sizeof *it);
    uint8_t *copy = malloc(len);
    /* the item's own limits, with the clock as the frame arrived: the
     * decode worker reads them while the loop goes on (pipeline_item_free frees
     * them as the item's dctx) */
    struct ing_limits *lim = malloc(sizeof *lim);
    if (!it || !copy || !lim) {
        free(it);
        free(copy);
        free(lim);
        conn_fail(c, GA_ENOMEM, "out of memory for a batch", 0, 0);
        return;
    }
    memcpy(copy, frame, len);
    *lim = ingest_item_limits(g);
    it->dctx = lim;
    it->frame = copy;
    it->len = len;
    it->recv_mono_ns = ga_now_mono_ns();
    it->owner = c;
    if (c->tail)
        c->tail->next = it;
    else
        c->head = it;
    c->tail = it;
    c->inflight++;
    g->st.decode_bytes_inflight += len;
    if (pipeline_decode(g->pl, it, lim, on_decoded) < 0) {
        it->state = PIPELINE_FAILED;
        it->rc = GA_EIO;
        snprintf(it->err, sizeof it->err, "cannot queue the batch for decoding");
        g->st.decode_bytes_inflight -= len;
    }
}

void ingest_read_buf(uint8_t **b, size_t *cap, size_t len, size_t chunk, size_t max, uv_buf_t *out)
{
    if (*cap - len < chunk && *cap < max) {
        size_t ncap = *cap ? *cap * 2 : chunk;
        if (ncap > max)
            ncap = max;
        uint8_t *nb = realloc(*b, ncap);
        if (nb) {
            *b = nb;
            *cap = ncap;
        }
    }
    *out = uv_buf_init((char *)*b + len, (unsigned)(*cap - len));
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ingest_conn *c = h->data;
    ingest_read_buf(&c->buf, &c->cap, c->len, INGEST_READ_CHUNK, c->g->lim.max_frame + INGEST_READ_CHUNK, buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct ingest_conn *c = s->data;
    struct ga_ingest *g = c->g;
    if (nread < 0) {
        /* EOF: answer what is in flight, then close (the peer may have
         * only shut down its writing side). */
        uv_read_stop(s);
        c->reading = 0;
        c->eof = 1;
        if (!c->head) {                /* what is left is a partial frame */
            c->failed = 1;
            conn_close(c);
        }
        return;
    }
    if (nread == 0)
        return;
    c->len += (size_t)nread;
    g->st.bytes_in += (uint64_t)nread;
    c->last_rx_ns = ga_now_mono_ns();
    conn_parse(c);
}

/* Take the whole frames in c->buf, but no more than max_inflight batches
 * unacknowledged: the rest stays buffered (and reading stops) until acks
 * make room (conn_pump calls again). */
static void conn_parse(struct ingest_conn *c)
{
    struct ga_ingest *g = c->g;
    size_t pos = 0;
    if (c->parsing)
        return;
    c->parsing = 1;
    while (pos < c->len && !c->failed && !c->closing &&
           (!c->hello || c->inflight < g->max_inflight)) {
        size_t flen;
        int r = mp_frame_scan_resume(&c->scan, c->buf + pos, c->len - pos, g->lim.max_frame,
                                     &flen);
        if (r == 0 && c->len - pos >= g->lim.max_frame)
            r = GA_ETOOBIG;
        if (r == 0)
            break;
        if (r < 0) {
            char msg[160];
            if (r == GA_ETOOBIG && c->scan.depth >= MP_FRAME_MAX_DEPTH)
                snprintf(msg, sizeof msg, "frame: nested deeper than %d levels",
                         MP_FRAME_MAX_DEPTH);
            else if (r == GA_ETOOBIG)
                snprintf(msg, sizeof msg, "frame: %zu bytes or more, at most %zu (max_frame)",
                         c->len - pos > g->lim.max_frame ? c->len - pos : g->lim.max_frame + 1,
                         g->lim.max_frame);
            else
                snprintf(msg, sizeof msg, "frame: invalid msgpack (type byte 0xc1) at stream "
                         "offset %zu", pos);
            conn_fail(c, r, msg, 0, 0);
            break;
        }
        g->st.frames++;
        if (!c->hello) {
            if (flen > ING_SMALL_FRAME_MAX)
                conn_fail(c, GA_EPROTO, "the first message must be a client 'hello'", 0, 0);
            else
                handle_hello(c, c->buf + pos, flen);
        } else {
            handle_points(c, c->buf + pos, flen);
        }
        pos += flen;
    }
    if (pos < c->len && c->hello && c->inflight >= g->max_inflight && !c->failed)
        g->st.inflight_waits++;
    memmove(c->buf, c->buf + pos, c->len - pos);
    c->len -= pos;
    /* a partial frame's age counts from when the frames before it were taken */
    if (!c->len)
        c->partial_since_ns = 0;
    else if (pos || !c->partial_since_ns)
        c->partial_since_ns = ga_now_mono_ns();
    c->parsing = 0;
    if (!c->closing) {
        conn_update_reading(c);
        update_backpressure(g);
    }
}

/* ---- accept ------------------------------------------------------------------ */

/* Who is at the other end: the uid on the unix socket, the address over
 * TCP (peer[0] stays 0 when it cannot be told: not limited). */
static void peer_key(struct ingest_conn *c)
{
    memset(c->peer, 0, sizeof c->peer);
    if (!c->tcp) {
        uv_os_fd_t fd;
        struct ucred cr;
        socklen_t len = sizeof cr;
        if (uv_fileno(&c->u.h, &fd) == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0) {
            c->peer[0] = 'u';
            memcpy(c->peer + 1, &cr.uid, sizeof cr.uid);
        }
        return;
    }
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (uv_tcp_getpeername(&c->u.tcp, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        c->peer[0] = '4';
        memcpy(c->peer + 1, &((struct sockaddr_in *)&ss)->sin_addr, 4);
    } else if (ss.ss_family == AF_INET6) {
        c->peer[0] = '6';
        memcpy(c->peer + 1, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
    }
}

/* Open connections (c among them) from c's peer. */
static int peer_conns(struct ga_ingest *g, const struct ingest_conn *c)
{
    int n = 0;
    for (const struct ingest_conn *o = g->conns; o; o = o->next)
        n += !o->closing && !o->finishing && memcmp(o->peer, c->peer, sizeof c->peer) == 0;
    return n;
}

static void on_connection(uv_stream_t *srv, int status)
{
    struct ingest_srv *sv = srv->data;
    struct ga_ingest *g = sv->g;
    if (status < 0 || g->stopping)
        return;
    struct ingest_conn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->g = g;
    c->tcp = sv->tcp;
    if (c->tcp)
        uv_tcp_init(g->loop, &c->u.tcp);
    else
        uv_pipe_init(g->loop, &c->u.pipe, 0);
    c->u.h.data = c;
    c->id = ++g->st.conns_total;
    c->last_rx_ns = ga_now_mono_ns();
    c->next = g->conns;
    if (g->conns)
        g->conns->prev = c;
    g->conns = c;
    g->st.conns_open++;
    if (uv_accept(srv, &c->u.s) < 0) {
        conn_close(c);
        return;
    }
    if (c->tcp)
        uv_tcp_nodelay(&c->u.tcp, 1);
    if (g->st.conns_open > (uint64_t)g->d->cfg->limits.max_connections) {
        g->st.conns_refused++;
        send_error(c, GA_EBUSY, "too many connections (limits.max_connections)", 0, 0);
        conn_finish(c);
        return;
    }
    peer_key(c);
    if (c->peer[0] && peer_conns(g, c) > g->d->cfg->limits.max_connections_per_peer) {
        g->st.conns_refused_peer++;
        send_error(c, GA_EBUSY, c->tcp ? "too many connections from this address "
                   "(limits.max_connections_per_peer)" : "too many connections from this user "
                   "(limits.max_connections_per_peer)", 0, 0);
        conn_finish(c);
        return;
    }
    conn_update_reading(c);
}

/* Idle and slow clients, once a second. */
static void on_sweep(uv_timer_t *t)
{
    struct ga_ingest *g = t->data;
    const struct ga_config *cfg = g->d->cfg;
    int64_t now = ga_now_mono_ns();
    int64_t idle = (int64_t)cfg->limits.idle_timeout_s * 1000000000;
    int64_t slow = (int64_t)cfg->limits.slow_client_timeout_s * 1000000000;
    for (struct ingest_conn *c = g->conns, *next; c; c = next) {
        next = c->next;
        if (c->closing || c->failed)
            continue;
        if (c->partial_since_ns && now - c->partial_since_ns > slow && c->reading) {
            g->st.slow_timeouts++;
            conn_fail(c, GA_ETIMEDOUT, "frame incomplete for longer than "
                      "limits.slow_client_timeout_s", 0, 0);
        } else if (uv_stream_get_write_queue_size(&c->u.s) >
                   (size_t)cfg->limits.conn_buffer_bytes) {
            g->st.slow_timeouts++;
            ga_log(GA_LOG_WARN, "ingest_slow_reader", "conn=%llu", (unsigned long long)c->id);
            conn_close(c);
        } else if (!c->head && now - c->last_rx_ns > idle) {
            g->st.idle_timeouts++;
            send_error(c, GA_ETIMEDOUT, "idle for longer than limits.idle_timeout_s", 0, 0);
            conn_finish(c);
        }
    }
    update_backpressure(g);
    ingest_check_stopped(g);
}

static struct ingest_srv *srv_new(struct ga_ingest *g, int tcp, void **slot)
{
    struct ingest_srv *sv = calloc(1, sizeof *sv);
    if (!sv)
        return NULL;
    sv->g = g;
    sv->tcp = tcp;
    if (tcp)
        uv_tcp_init(g->loop, &sv->u.tcp);
    else
        uv_pipe_init(g->loop, &sv->u.pipe, 0);
    sv->u.h.data = sv;
    g->open_handles++;
    *slot = sv;
    return sv;
}

static int unix_start(struct ga_ingest *g, const char *path, void **slot, uint64_t *counters,
                      char *err, size_t errlen)
{
    unlink(path);
    struct ingest_srv *sv = srv_new(g, 0, slot);
    if (!sv)
        return GA_ENOMEM;
    int rc = uv_pipe_bind(&sv->u.pipe, path);
    if (rc == 0 && chmod(path, 0660) < 0)
        rc = uv_translate_sys_error(errno);
    if (rc == 0)
        rc = uv_listen(&sv->u.s, 256, on_connection);
    if (rc < 0)
        snprintf(err, errlen, "listen.unix %s: %s", path, uv_strerror(rc));
    return rc < 0 ? GA_EIO : 0;
}

static int tcp_start(struct ga_ingest *g, const char *hostport, void **slot, uint64_t *counters,
                     char *err, size_t errlen)
{
    char host[256];
    int port;
    struct sockaddr_storage ss;
    if (ga_parse_hostport(hostport, host, sizeof host, &port) < 0) {
        snprintf(err, errlen, "listen.tcp: cannot parse '%s'", hostport);
        return GA_EINVAL;
    }
    int rc = uv_ip4_addr(host, port, (struct sockaddr_in *)&ss);
    if (rc < 0)
        rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss);
    struct ingest_srv *sv = srv_new(g, 1, slot);
    if (!sv)
        return GA_ENOMEM;
    if (rc == 0)
        rc = uv_tcp_bind(&sv->u.tcp, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen(&sv->u.s, 256, on_connection);
    if (rc < 0) {
        snprintf(err, errlen, "listen.tcp %s: %s", hostport, uv_strerror(rc));
        return GA_EIO;
    }
    int len = sizeof ss;
    uv_tcp_getsockname(&sv->u.tcp, (struct sockaddr *)&ss, &len);
    sv->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                             : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

static void on_srv_closed(uv_handle_t *h)
{
    struct ingest_srv *sv = h->data;
    sv->g->open_handles--;
    ingest_check_stopped(sv->g);
}

/* The drain begins: accept no more (the connections drain in the core). */
static int srv_drain(void *state)
{
    struct ingest_srv *sv = state;
    if (!sv->closed) {
        sv->closed = 1;
        uv_close(&sv->u.h, on_srv_closed);
        if (!sv->tcp)
            unlink(sv->g->d->cfg->listen.unix_path);
    }
    return 1;
}

static int srv_port(const void *state)
{
    return ((const struct ingest_srv *)state)->port;
}

static const char *unix_addr(const struct ga_config *cfg)
{
    return cfg->listen.unix_path;
}

static const char *tcp_addr(const struct ga_config *cfg)
{
    return cfg->listen.tcp;
}

const struct listener_kind ingest_unix_listener = {
    .key = "unix", .addr = unix_addr, .start = unix_start, .drain = srv_drain,
};

const struct listener_kind ingest_tcp_listener = {
    .key = "tcp", .addr = tcp_addr, .start = tcp_start, .drain = srv_drain, .port = srv_port,
};

int ga_ingest_start(struct ga_daemon *d, struct ga_pipeline *pl, struct ga_ingest **out,
                    char *err, size_t errlen)
{
    const struct ga_config *cfg = d->cfg;
    struct ga_ingest *g = calloc(1, sizeof *g);
    if (!g)
        return GA_ENOMEM;
    g->d = d;
    g->pl = pl;
    g->loop = d->loop;
    g->lim = ing_default_limits;
    g->lim.max_frame = (size_t)cfg->limits.max_frame_bytes;
    g->max_inflight = (size_t)cfg->limits.queue_batches;
    uv_timer_init(g->loop, &g->sweep);
    g->sweep.data = g;
    g->open_handles++;
    uv_timer_start(&g->sweep, on_sweep, 1000, 1000);
    *out = g;
    int rc = 0;
    while (g->nls < INGEST_MAX_LISTENERS && listeners[g->nls])
        g->nls++;
    for (int i = 0; rc == 0 && i < g->nls; i++) {
        const char *addr = listeners[i]->addr(cfg);
        if (addr[0])
            rc = listeners[i]->start(g, addr, &g->ls[i], g->st.listener[i], err, errlen);
    }
    return rc;
}

static void on_server_closed(uv_handle_t *h)
{
    struct ga_ingest *g = h->data;
    g->open_handles--;
    ingest_check_stopped(g);
}

void ingest_check_stopped(struct ga_ingest *g)
{
    if (!g->stopping || g->stopping == 3)
        return;
    int64_t now = ga_now_mono_ns();
    int busy = 0;
    for (struct ingest_conn *c = g->conns; c; c = c->next)
        busy |= c->head != NULL;
    for (int i = 0; i < g->nls; i++)
        if (g->ls[i] && listeners[i]->drain)
            busy |= !listeners[i]->drain(g->ls[i]);
    if (g->stopping == 1 && (!busy || now > g->stop_deadline_ns)) {
        g->stopping = 2;               /* close everything */
        if (busy)                      /* items waiting for journal space give up */
            pipeline_drain(g->pl);
        for (struct ingest_conn *c = g->conns, *next; c; c = next) {
            next = c->next;
            if (!c->closing && !c->finishing)
                send_error(c, GA_ESHUTDOWN, "daemon shutting down: batches not acknowledged "
                           "were not accepted; resend them when it is back", 0, 0);
            conn_close_gently(c);
        }
        uv_close((uv_handle_t *)&g->sweep, on_server_closed);
        for (int i = 0; i < g->nls; i++)
            if (g->ls[i] && listeners[i]->close)
                listeners[i]->close(g->ls[i]);
    }
    if (g->stopping == 2 && !g->conns && g->open_handles == 0) {
        g->stopping = 3;
        g->stop_done(g->stop_ctx);     /* the owner frees g later: we are in its callbacks */
    }
}

void ga_ingest_stop(struct ga_ingest *g, int deadline_ms, void (*done)(void *ctx), void *ctx)
{
    if (g->stopping)
        return;
    g->stopping = 1;
    g->stop_done = done;
    g->stop_ctx = ctx;
    g->stop_deadline_ns = ga_now_mono_ns() + (int64_t)deadline_ms * 1000000;
    for (struct ingest_conn *c = g->conns; c; c = c->next)
        conn_update_reading(c);
    ingest_check_stopped(g);
}

void ga_ingest_free(struct ga_ingest *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nls; i++)
        if (g->ls[i] && listeners[i]->drain == srv_drain)
            free(g->ls[i]);            /* server sockets: closed, kept for their port */
    free(g);
}

void ga_ingest_get_stats(struct ga_ingest *g, struct ga_ingest_stats *st)
{
    *st = g->st;
}

int ga_ingest_port(const struct ga_ingest *g, const struct listener_kind *k)
{
    for (int i = 0; g && i < g->nls; i++)
        if (listeners[i] == k && g->ls[i] && k->port)
            return k->port(g->ls[i]);
    return 0;
}
