/* ingest_udp.c — Ceilometer's udp:// publisher: one msgpack sample per
 * datagram, signature checked with listen.telemetry_secret.  Datagrams are
 * gathered on the loop thread (up to 4096 or 20 ms) and decoded as one item
 * on the thread pool; the batch goes through the journal like any other.
 * UDP has no acks and no backpressure: datagrams that arrive while the
 * pipeline is overloaded are dropped and counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/ingest/ingest_priv.h"
#include "proto/base/log.h"
#include "proto/ceilometer.h"
#include "proto/ga_err.h"

#define UDP_BATCH_DATAGRAMS 4096
#define UDP_BATCH_BYTES (1u << 20)
#define UDP_FLUSH_MS 20

/* Its counters' slots (udp_counters below). */
enum {
    C_DATAGRAMS, C_ACCEPTED, C_DROPPED_BACKPRESSURE,
    C_REJECTED,                        /* + reason, CEILO_NREASONS slots (0 unused) */
    C_N = C_REJECTED + CEILO_NREASONS
};
_Static_assert(C_N <= INGEST_MAX_COUNTERS, "listen.udp's counters need more slots");

struct ingest_udp {
    uv_udp_t h;
    uv_timer_t timer;
    struct ga_ingest *g;
    void **slot;                       /* ga_ingest.ls[] row, cleared when freed */
    uint64_t *c;                       /* its counters, by C_* */
    int port;
    uint8_t *buf;
    size_t len, cap;
    uint32_t n;
    struct pipeline_item *head, *tail;
    char recvbuf[65536];
    int quiesced, closing;
};

static void udp_pump(void *state);

static void on_udp_decoded(struct pipeline_item *it)
{
    struct ingest_udp *u = it->owner;
    struct ga_ingest *g = u->g;
    g->st.decode_bytes_inflight -= it->len;
    ingest_ceilo_count_rejects(it, &u->c[C_REJECTED]);
    u->c[C_ACCEPTED] += it->accepted;
    udp_pump(*u->slot);
}

/* Hand the gathered datagrams to a decode worker. */
static void flush(struct ingest_udp *u)
{
    struct ga_ingest *g = u->g;
    if (!u->n)
        return;
    struct pipeline_item *it = ingest_ceilo_item(g, u->buf, u->len, u->n);
    if (!it) {
        u->c[C_DROPPED_BACKPRESSURE] += u->n;
        u->len = u->n = 0;
        return;
    }
    it->owner = u;
    u->buf = NULL;
    u->len = u->cap = 0;
    u->n = 0;
    if (u->tail)
        u->tail->next = it;
    else
        u->head = it;
    u->tail = it;
    g->st.decode_bytes_inflight += it->len;
    if (pipeline_decode(g->pl, it, NULL, on_udp_decoded) < 0) {
        it->state = PIPELINE_FAILED;
        g->st.decode_bytes_inflight -= it->len;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ingest_udp *u = h->data;
    *buf = uv_buf_init(u->recvbuf, sizeof u->recvbuf);
}

static void on_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
                    unsigned flags)
{
    struct ingest_udp *u = h->data;
    struct ga_ingest *g = u->g;
    if (nread <= 0 || !addr)
        return;
    u->c[C_DATAGRAMS]++;
    if ((flags & UV_UDP_PARTIAL) || g->paused || ingest_overloaded(g)) {
        if (flags & UV_UDP_PARTIAL)
            u->c[C_REJECTED + CEILO_NOT_MSGPACK]++;
        else
            u->c[C_DROPPED_BACKPRESSURE]++;
        return;
    }
    size_t need = u->len + 4 + (size_t)nread;
    if (need > u->cap) {
        size_t ncap = u->cap ? u->cap * 2 : 65536;
        while (ncap < need)
            ncap *= 2;
        uint8_t *nb = realloc(u->buf, ncap);
        if (!nb) {
            u->c[C_DROPPED_BACKPRESSURE]++;
            return;
        }
        u->buf = nb;
        u->cap = ncap;
    }
    uint32_t len = (uint32_t)nread;
    memcpy(u->buf + u->len, &len, 4);
    memcpy(u->buf + u->len + 4, buf->base, (size_t)nread);
    u->len += 4 + (size_t)nread;
    if (++u->n >= UDP_BATCH_DATAGRAMS || u->len >= UDP_BATCH_BYTES)
        flush(u);
}

static void on_timer(uv_timer_t *t)
{
    flush(t->data);
}

static void udp_pump(void *state)
{
    struct ingest_udp *u = state;
    if (!u)
        return;
    struct ga_ingest *g = u->g;
    for (struct pipeline_item *it = u->head; it; it = it->next) {
        enum pipeline_item_state s = pipeline_item_state(g->pl, it);
        if (s == PIPELINE_DECODING)
            break;
        if (s == PIPELINE_DECODED)
            pipeline_submit(g->pl, it);
    }
    while (u->head) {
        enum pipeline_item_state s = pipeline_item_state(g->pl, u->head);
        if (s != PIPELINE_SEQUENCED && s != PIPELINE_FAILED)
            break;
        struct pipeline_item *it = u->head;
        u->head = it->next;
        if (!u->head)
            u->tail = NULL;
        pipeline_item_free(it);
    }
}

static int udp_drain(void *state)
{
    struct ingest_udp *u = state;
    if (!u->quiesced) {               /* the drain begins: take no more, flush the rest */
        u->quiesced = 1;
        uv_udp_recv_stop(&u->h);
        flush(u);
    }
    return !u->head && !u->n;
}

static int udp_port(const void *state)
{
    return ((const struct ingest_udp *)state)->port;
}

static void on_closed(uv_handle_t *h)
{
    struct ingest_udp *u = h->data;
    struct ga_ingest *g = u->g;
    g->open_handles--;
    if (++u->closing == 3) {          /* both handles closed */
        free(u->buf);
        *u->slot = NULL;
        free(u);
    }
    ingest_check_stopped(g);
}

static void udp_close(void *state)
{
    struct ingest_udp *u = state;
    if (u->closing)
        return;
    u->closing = 1;
    uv_close((uv_handle_t *)&u->h, on_closed);
    uv_close((uv_handle_t *)&u->timer, on_closed);
}

static int udp_start(struct ga_ingest *g, const char *hostport, void **slot, uint64_t *counters,
                     char *err, size_t errlen)
{
    char host[256];
    int port;
    struct sockaddr_storage ss;
    if (ga_parse_hostport(hostport, host, sizeof host, &port) < 0) {
        snprintf(err, errlen, "listen.udp: cannot parse '%s'", hostport);
        return GA_EINVAL;
    }
    struct ingest_udp *u = calloc(1, sizeof *u);
    if (!u)
        return GA_ENOMEM;
    u->g = g;
    u->slot = slot;
    u->c = counters;
    *slot = u;
    uv_udp_init(g->loop, &u->h);
    uv_timer_init(g->loop, &u->timer);
    u->h.data = u->timer.data = u;
    g->open_handles += 2;
    int rc = uv_ip4_addr(host, port, (struct sockaddr_in *)&ss);
    if (rc < 0)
        rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss);
    if (rc == 0)
        rc = uv_udp_bind(&u->h, (struct sockaddr *)&ss, 0);
    if (rc == 0) {
        int size = 8 << 20;            /* absorb bursts while a batch is decoded */
        uv_recv_buffer_size((uv_handle_t *)&u->h, &size);
        rc = uv_udp_recv_start(&u->h, on_alloc, on_recv);
    }
    if (rc < 0) {
        snprintf(err, errlen, "listen.udp %s: %s", hostport, uv_strerror(rc));
        return GA_EIO;
    }
    int len = sizeof ss;
    uv_udp_getsockname(&u->h, (struct sockaddr *)&ss, &len);
    u->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                            : ((struct sockaddr_in6 *)&ss)->sin6_port);
    uv_timer_start(&u->timer, on_timer, UDP_FLUSH_MS, UDP_FLUSH_MS);
    return 0;
}

static const struct listener_counter udp_counters[] = {
    { .name = "datagrams", .slot = C_DATAGRAMS },
    { .name = "accepted", .slot = C_ACCEPTED, .status = 1 },
    { .name = "dropped_backpressure", .slot = C_DROPPED_BACKPRESSURE },
    { .name = "rejected", .slot = C_REJECTED, .first = 1, .n = CEILO_NREASONS,
      .sub = ceilo_reject_name },
    { .name = NULL },
};

static const char *udp_addr(const struct ga_config *cfg)
{
    return cfg->listen.udp;
}

const struct listener_kind ingest_udp_listener = {
    .key = "udp",
    .addr = udp_addr,
    .start = udp_start,
    .pump = udp_pump,
    .drain = udp_drain,
    .close = udp_close,
    .port = udp_port,
    .counters = udp_counters,
};
