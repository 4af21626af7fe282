/* ingest_ceilo_tcp.c — Ceilometer's tcp:// publisher (listen.ceilometer_tcp):
 * 8-byte little-endian length + the msgpack meter message, over and over
 * on long-lived connections (framing: proto/ceilometer_tcp.h).
 *
 * The loop thread cuts frames out of each connection and gathers their
 * bodies, from every connection, into one item laid out as UDP's
 * ([u32 len][body]...), up to 4096 samples, 1 MiB or 20 ms; a decode
 * worker checks and decodes them exactly as datagrams (ceilo_decode, with
 * listen.telemetry_secret) and the batch goes through the journal like any
 * other.  The protocol has no acks; unlike UDP it has flow control: while
 * ingest is overloaded the connections are not read, so the publisher's
 * send() blocks instead of samples being dropped.
 *
 * A frame whose length is over limits.max_frame_bytes or 0, or whose body
 * does not start with a msgpack map, an end of stream inside a frame, and
 * a frame left incomplete for longer than limits.slow_client_timeout_s
 * close that connection alone (counted by reason); the samples before it
 * stay accepted.  Loop thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/ingest/ingest_priv.h"
#include "proto/base/log.h"
#include "proto/ceilometer.h"
#include "proto/ceilometer_tcp.h"
#include "proto/ga_err.h"

#define CT_BATCH_SAMPLES 4096
#define CT_BATCH_BYTES (1u << 20)
#define CT_FLUSH_MS 20
#define CT_READ_CHUNK 65536
#define CT_SWEEP_TICKS (1000 / CT_FLUSH_MS)

/* Why a connection was closed for a bad frame. */
enum { BAD_OVERSIZE, BAD_GARBAGE, BAD_TRUNCATED, BAD_SLOW, BAD_N };
static const char *const bad_names[BAD_N] = { "oversize", "garbage", "truncated", "slow" };

/* Its counters' slots (ctcp_counters below). */
enum {
    C_CONNS_OPEN, C_CONNS_TOTAL, C_CONNS_REFUSED, C_BYTES_IN, C_FRAMES, C_ACCEPTED,
    C_REJECTED,                        /* + reason, CEILO_NREASONS slots (0 unused) */
    C_BAD_FRAMES = C_REJECTED + CEILO_NREASONS,  /* + BAD_* */
    C_N = C_BAD_FRAMES + BAD_N
};
_Static_assert(C_N <= INGEST_MAX_COUNTERS, "listen.ceilometer_tcp's counters need more slots");

struct ct_conn {
    uv_tcp_t h;
    struct ingest_ceilo_tcp *l;
    uint64_t id;
    uint8_t *buf;
    size_t len, cap;
    int reading, closing;
    int64_t partial_since_ns;
    struct ct_conn *prev, *next;
};

struct ingest_ceilo_tcp {
    uv_tcp_t srv;
    uv_timer_t timer;
    struct ga_ingest *g;
    void **slot;                       /* ga_ingest.ls[] row, cleared when freed */
    uint64_t *c;                       /* its counters, by C_* */
    int port, srv_open, ticks;
    uint8_t *buf;                      /* gathered bodies: [u32 len][body]... */
    size_t len, cap;
    uint32_t n;
    struct pipeline_item *head, *tail;       /* items with the pipeline, in order */
    struct ct_conn *conns;
    int quiesced, stopping, handles;   /* handles: server, timer, connections */
    struct ga_ratelimit rl;
};

static void ctcp_pump(void *state);

static void on_decoded(struct pipeline_item *it)
{
    struct ingest_ceilo_tcp *l = it->owner;
    struct ga_ingest *g = l->g;
    g->st.decode_bytes_inflight -= it->len;
    ingest_ceilo_count_rejects(it, &l->c[C_REJECTED]);
    l->c[C_ACCEPTED] += it->accepted;
    ctcp_pump(*l->slot);
}

/* Hand the gathered bodies to a decode worker. */
static int flush(struct ingest_ceilo_tcp *l)
{
    struct ga_ingest *g = l->g;
    if (!l->n)
        return 0;
    struct pipeline_item *it = ingest_ceilo_item(g, l->buf, l->len, l->n);
    if (!it)
        return GA_ENOMEM;              /* kept: tried again on the next tick */
    it->owner = l;
    l->buf = NULL;
    l->len = l->cap = 0;
    l->n = 0;
    if (l->tail)
        l->tail->next = it;
    else
        l->head = it;
    l->tail = it;
    g->st.decode_bytes_inflight += it->len;
    if (pipeline_decode(g->pl, it, NULL, on_decoded) < 0) {
        it->state = PIPELINE_FAILED;
        g->st.decode_bytes_inflight -= it->len;
        ga_log(GA_LOG_ERROR, "ceilometer_tcp_decode_failed", "samples=%u", ingest_ceilo_samples(it));
    }
    return 0;
}

static int gather(struct ingest_ceilo_tcp *l, const uint8_t *body, size_t n)
{
    size_t need = l->len + 4 + n;
    if (need > l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 65536;
        while (ncap < need)
            ncap *= 2;
        uint8_t *nb = realloc(l->buf, ncap);
        if (!nb)
            return GA_ENOMEM;
        l->buf = nb;
        l->cap = ncap;
    }
    uint32_t len = (uint32_t)n;
    memcpy(l->buf + l->len, &len, 4);
    memcpy(l->buf + l->len + 4, body, n);
    l->len += 4 + n;
    if (++l->n >= CT_BATCH_SAMPLES || l->len >= CT_BATCH_BYTES)
        flush(l);
    return 0;
}

/* ---- connections ------------------------------------------------------------ */

static void on_conn_closed(uv_handle_t *h);
static void on_handle_closed(uv_handle_t *h);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void conn_close(struct ct_conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    c->reading = 0;
    uv_close((uv_handle_t *)&c->h, on_conn_closed);
}

static void conn_bad(struct ct_conn *c, int reason, const char *what)
{
    uint64_t suppressed;
    c->l->c[C_BAD_FRAMES + reason]++;
    if (ga_ratelimit_ok(&c->l->rl, &suppressed))
        ga_log(GA_LOG_WARN, "ceilometer_tcp_bad_frame", "conn=%llu reason=%s msg=\"%s\" "
               "suppressed_lines=%llu", (unsigned long long)c->id, bad_names[reason], what,
               (unsigned long long)suppressed);
    conn_close(c);
}

static int conn_wants_read(const struct ct_conn *c)
{
    struct ga_ingest *g = c->l->g;
    return !c->closing && !c->l->quiesced && !g->paused && !ingest_overloaded(g);
}

static void conn_update_reading(struct ct_conn *c)
{
    int want = conn_wants_read(c);
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read) == 0)
            c->reading = 1;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->h);
        c->reading = 0;
    }
}

static void update_reading(struct ingest_ceilo_tcp *l)
{
    for (struct ct_conn *c = l->conns; c; c = c->next)
        conn_update_reading(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ct_conn *c = h->data;
    ingest_read_buf(&c->buf, &c->cap, c->len, CT_READ_CHUNK,
                    c->l->g->lim.max_frame + CEILO_TCP_HDR + CT_READ_CHUNK, buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct ct_conn *c = s->data;
    struct ga_ingest *g = c->l->g;
    if (nread < 0) {
        if (c->len)
            conn_bad(c, BAD_TRUNCATED, "connection ended inside a frame");
        else
            conn_close(c);
        return;
    }
    if (nread == 0)
        return;
    c->len += (size_t)nread;
    c->l->c[C_BYTES_IN] += (uint64_t)nread;
    size_t pos = 0, body;
    while (pos < c->len) {
        int r = ceilo_tcp_frame(c->buf + pos, c->len - pos, g->lim.max_frame, &body);
        if (r == 0)
            break;
        if (r < 0) {
            char msg[128];
            if (r == GA_ETOOBIG)
                snprintf(msg, sizeof msg, "frame length over limits.max_frame_bytes (%zu)",
                         g->lim.max_frame);
            else
                snprintf(msg, sizeof msg, "not a msgpack map after the 8-byte length, or length 0");
            conn_bad(c, r == GA_ETOOBIG ? BAD_OVERSIZE : BAD_GARBAGE, msg);
            return;
        }
        if (gather(c->l, c->buf + pos + CEILO_TCP_HDR, body) < 0) {
            ga_log(GA_LOG_ERROR, "ceilometer_tcp_nomem", "conn=%llu", (unsigned long long)c->id);
            conn_close(c);
            return;
        }
        c->l->c[C_FRAMES]++;
        pos += CEILO_TCP_HDR + body;
    }
    memmove(c->buf, c->buf + pos, c->len - pos);
    c->len -= pos;
    if (!c->len)
        c->partial_since_ns = 0;
    else if (pos || !c->partial_since_ns)
        c->partial_since_ns = ga_now_mono_ns();   /* a frame started now */
    conn_update_reading(c);
}

static void on_connection(uv_stream_t *srv, int status)
{
    struct ingest_ceilo_tcp *l = srv->data;
    struct ga_ingest *g = l->g;
    if (status < 0 || l->quiesced)
        return;
    struct ct_conn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->l = l;
    uv_tcp_init(g->loop, &c->h);
    c->h.data = c;
    l->handles++;
    g->open_handles++;
    c->id = ++l->c[C_CONNS_TOTAL];
    c->next = l->conns;
    if (l->conns)
        l->conns->prev = c;
    l->conns = c;
    l->c[C_CONNS_OPEN]++;
    if (uv_accept(srv, (uv_stream_t *)&c->h) < 0) {
        conn_close(c);
        return;
    }
    if (l->c[C_CONNS_OPEN] > (uint64_t)g->d->cfg->limits.max_connections) {
        l->c[C_CONNS_REFUSED]++;
        ga_log(GA_LOG_WARN, "ceilometer_tcp_refused", "conn=%llu reason=\"too many connections "
               "(limits.max_connections)\"", (unsigned long long)c->id);
        conn_close(c);
        return;
    }
    conn_update_reading(c);
}

/* Flush the gathered bodies; once a second, end connections whose frame
 * has been incomplete for too long. */
static void on_timer(uv_timer_t *t)
{
    struct ingest_ceilo_tcp *l = t->data;
    flush(l);
    update_reading(l);
    if (++l->ticks < CT_SWEEP_TICKS)
        return;
    l->ticks = 0;
    int64_t now = ga_now_mono_ns();
    int64_t slow = (int64_t)l->g->d->cfg->limits.slow_client_timeout_s * 1000000000;
    for (struct ct_conn *c = l->conns, *next; c; c = next) {
        next = c->next;
        if (!c->closing && c->reading && c->partial_since_ns && now - c->partial_since_ns > slow)
            conn_bad(c, BAD_SLOW, "frame incomplete for longer than limits.slow_client_timeout_s");
    }
}

static void handle_gone(struct ingest_ceilo_tcp *l)
{
    struct ga_ingest *g = l->g;
    g->open_handles--;
    if (--l->handles == 0 && l->stopping) {
        *l->slot = NULL;
        free(l->buf);
        free(l);
    }
    ingest_check_stopped(g);
}

static void on_conn_closed(uv_handle_t *h)
{
    struct ct_conn *c = h->data;
    struct ingest_ceilo_tcp *l = c->l;
    if (c->prev)
        c->prev->next = c->next;
    else
        l->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    l->c[C_CONNS_OPEN]--;
    free(c->buf);
    free(c);
    handle_gone(l);
}

static void on_handle_closed(uv_handle_t *h)
{
    handle_gone(h->data);
}

/* ---- the FIFO and the drain ----------------------------------------------- */

static void ctcp_pump(void *state)
{
    struct ingest_ceilo_tcp *l = state;
    if (!l)
        return;
    struct ga_ingest *g = l->g;
    for (struct pipeline_item *it = l->head; it; it = it->next) {
        enum pipeline_item_state s = pipeline_item_state(g->pl, it);
        if (s == PIPELINE_DECODING)
            break;
        if (s == PIPELINE_DECODED)
            pipeline_submit(g->pl, it);
    }
    while (l->head) {
        enum pipeline_item_state s = pipeline_item_state(g->pl, l->head);
        if (s != PIPELINE_SEQUENCED && s != PIPELINE_FAILED)
            break;
        struct pipeline_item *it = l->head;
        l->head = it->next;
        if (!l->head)
            l->tail = NULL;
        pipeline_item_free(it);
    }
    update_reading(l);
}

static int ctcp_drain(void *state)
{
    struct ingest_ceilo_tcp *l = state;
    if (!l->quiesced) {                /* the drain begins: accept and read no more */
        l->quiesced = 1;
        if (l->srv_open) {
            l->srv_open = 0;
            uv_close((uv_handle_t *)&l->srv, on_handle_closed);
        }
        update_reading(l);
    }
    flush(l);
    return !l->head && !l->n;
}

static void ctcp_close(void *state)
{
    struct ingest_ceilo_tcp *l = state;
    if (l->stopping)
        return;
    l->stopping = 1;
    if (l->srv_open) {
        l->srv_open = 0;
        uv_close((uv_handle_t *)&l->srv, on_handle_closed);
    }
    uv_close((uv_handle_t *)&l->timer, on_handle_closed);
    for (struct ct_conn *c = l->conns; c; c = c->next)
        conn_close(c);
}

static int ctcp_port(const void *state)
{
    return ((const struct ingest_ceilo_tcp *)state)->port;
}

static int ctcp_start(struct ga_ingest *g, const char *hostport, void **slot, uint64_t *counters,
                      char *err, size_t errlen)
{
    char host[256];
    int port;
    struct sockaddr_storage ss;
    if (ga_parse_hostport(hostport, host, sizeof host, &port) < 0) {
        snprintf(err, errlen, "listen.ceilometer_tcp: cannot parse '%s'", hostport);
        return GA_EINVAL;
    }
    struct ingest_ceilo_tcp *l = calloc(1, sizeof *l);
    if (!l)
        return GA_ENOMEM;
    l->g = g;
    l->rl = (struct ga_ratelimit)GA_RATELIMIT_INIT(1000000000);
    l->slot = slot;
    l->c = counters;
    *slot = l;
    uv_tcp_init(g->loop, &l->srv);
    uv_timer_init(g->loop, &l->timer);
    l->srv.data = l->timer.data = l;
    l->srv_open = 1;
    l->handles = 2;
    g->open_handles += 2;
    int rc = uv_ip4_addr(host, port, (struct sockaddr_in *)&ss);
    if (rc < 0)
        rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss);
    if (rc == 0)
        rc = uv_tcp_bind(&l->srv, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->srv, 256, on_connection);
    if (rc < 0) {
        snprintf(err, errlen, "listen.ceilometer_tcp %s: %s", hostport, uv_strerror(rc));
        return GA_EIO;
    }
    int len = sizeof ss;
    uv_tcp_getsockname(&l->srv, (struct sockaddr *)&ss, &len);
    l->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                            : ((struct sockaddr_in6 *)&ss)->sin6_port);
    uv_timer_start(&l->timer, on_timer, CT_FLUSH_MS, CT_FLUSH_MS);
    ga_log(GA_LOG_INFO, "ceilometer_tcp_listen", "address=%s port=%d", hostport, l->port);
    return 0;
}

static const char *bad_name(int i)
{
    return bad_names[i];
}

static const struct listener_counter ctcp_counters[] = {
    { .name = "connections_open", .slot = C_CONNS_OPEN },
    { .name = "connections_total", .slot = C_CONNS_TOTAL },
    { .name = "connections_refused", .slot = C_CONNS_REFUSED },
    { .name = "bytes_in", .slot = C_BYTES_IN },
    { .name = "frames", .slot = C_FRAMES },
    { .name = "accepted", .slot = C_ACCEPTED },
    { .name = "rejected", .slot = C_REJECTED, .first = 1, .n = CEILO_NREASONS,
      .sub = ceilo_reject_name },
    { .name = "bad_frames", .slot = C_BAD_FRAMES, .n = BAD_N, .sub = bad_name },
    { .name = NULL },
};

static const char *ctcp_addr(const struct ga_config *cfg)
{
    return cfg->listen.ceilometer_tcp;
}

const struct listener_kind ingest_ceilo_tcp_listener = {
    .key = "ceilometer_tcp",
    .addr = ctcp_addr,
    .start = ctcp_start,
    .pump = ctcp_pump,
    .drain = ctcp_drain,
    .close = ctcp_close,
    .port = ctcp_port,
    .counters = ctcp_counters,
};
