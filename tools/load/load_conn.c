/* load_conn.c — one ingest connection of gpuagg-load (load.h): connect,
 * hello, write frames, read acks and errors (framed with mp_frame_scan,
 * decoded with ing_decode). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/ga_err.h"
#include "proto/mp_frame.h"
#include "tools/load/load.h"

#define READ_CHUNK 65536
#define MAX_IN_FRAME (64u << 20)     /* an ack listing a whole batch of rejections */

static int connect_unix(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int connect_tcp(const char *hostport)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof host) {
        errno = EINVAL;
        return -1;
    }
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = '\0';
    char *h = host;
    if (h[0] == '[' && h[strlen(h) - 1] == ']') {
        h[strlen(h) - 1] = '\0';
        h++;
    }
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
    if (getaddrinfo(h, colon + 1, &hints, &res) != 0) {
        errno = EHOSTUNREACH;
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        if (fd >= 0) {
            int e = errno;
            close(fd);
            errno = e;
        }
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

/* Write all of buf, blocking (the hello). */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Wait up to timeout_ms for one complete frame in c->in.  1 with *flen, 0
 * on EOF/timeout/error (printed). */
static int read_frame(struct load_conn *c, int timeout_ms, size_t *flen)
{
    int64_t until = load_now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int r = mp_frame_scan(c->in, c->inlen, MAX_IN_FRAME, flen);
        if (r == 1)
            return 1;
        if (r < 0) {
            fprintf(stderr, "gpuagg-load: connection %u: bad frame from the daemon: %s\n", c->id,
                    ga_strerror(r));
            return 0;
        }
        int left = (int)((until - load_now_ns()) / 1000000);
        struct pollfd p = { c->fd, POLLIN, 0 };
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            fprintf(stderr, "gpuagg-load: connection %u: no answer to the hello\n", c->id);
            return 0;
        }
        if (c->incap - c->inlen < READ_CHUNK) {
            uint8_t *nb = realloc(c->in, c->incap + READ_CHUNK);
            if (!nb)
                return 0;
            c->in = nb;
            c->incap += READ_CHUNK;
        }
        ssize_t n = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
        if (n <= 0) {
            fprintf(stderr, "gpuagg-load: connection %u: closed by the daemon during the hello\n",
                    c->id);
            return 0;
        }
        c->inlen += (size_t)n;
    }
}

static void consume(struct load_conn *c, size_t flen)
{
    memmove(c->in, c->in + flen, c->inlen - flen);
    c->inlen -= flen;
}

static void print_error(const struct load_conn *c, const struct ing_error *e)
{
    char seq[32] = "";
    if (e->has_seq)
        snprintf(seq, sizeof seq, " (batch seq %llu)", (unsigned long long)e->seq);
    fprintf(stderr, "gpuagg-load: connection %u: daemon error %s (%lld): %s%s\n", c->id, e->name,
            (long long)e->code, e->message, seq);
}

int load_conn_open(struct load_conn *c, const struct load_opts *o, uint32_t id)
{
    memset(c, 0, sizeof *c);
    c->id = id;
    c->next_seq = 1;
    c->nslots = o->inflight;
    c->slots = calloc(c->nslots, sizeof *c->slots);
    if (!c->slots)
        return -1;
    c->fd = strchr(o->connect, '/') ? connect_unix(o->connect) : connect_tcp(o->connect);
    if (c->fd < 0) {
        fprintf(stderr, "gpuagg-load: cannot connect to %s: %s\n", o->connect, strerror(errno));
        return -1;
    }
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    ing_pack_hello_client(&pk, "gpuagg-load", o->token);
    int rc = write_all(c->fd, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    size_t flen;
    if (rc < 0) {
        fprintf(stderr, "gpuagg-load: connection %u: sending the hello: %s\n", id, strerror(errno));
        return -1;
    }
    if (!read_frame(c, (int)(o->connect_timeout_s * 1000), &flen))
        return -1;
    struct ing_msg m;
    char err[256];
    int t = ing_decode(c->in, flen, NULL, &m, err, sizeof err);
    consume(c, flen);
    rc = -1;
    if (t == ING_ERROR)
        print_error(c, &m.u.error);
    else if (t != ING_HELLO || !m.u.hello.from_server)
        fprintf(stderr, "gpuagg-load: connection %u: expected the server's hello: %s\n", id,
                t < 0 ? err : "another message");
    else
        rc = 0;
    if (rc == 0) {
        c->max_inflight = m.u.hello.max_inflight;
        if (c->max_inflight && c->nslots > c->max_inflight)
            c->nslots = (uint32_t)c->max_inflight;
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    }
    ing_msg_free(&m);
    return rc;
}

int load_conn_flush(struct load_conn *c)
{
    if (!c->count)
        return 1;
    struct load_batch *b = &c->slots[(c->head + c->count - 1) % c->nslots];
    while (b->off < b->frame.size) {
        ssize_t n = send(c->fd, b->frame.data + b->off, b->frame.size - b->off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0) {
            fprintf(stderr, "gpuagg-load: connection %u: write: %s\n", c->id, strerror(errno));
            c->failed = 1;
            return -1;
        }
        b->off += (size_t)n;
    }
    return 1;
}

/* One frame from the daemon after the hello: an ack of the oldest batch
 * or an error.  0, or -1 (printed). */
static int handle_frame(struct load_conn *c, size_t flen,
                        void (*cb)(void *, struct load_conn *, struct load_batch *,
                                   const struct ing_ack *), void *ctx)
{
    struct ing_msg m;
    char err[256];
    int t = ing_decode(c->in, flen, NULL, &m, err, sizeof err);
    int rc = -1;
    if (t == ING_ERROR) {
        print_error(c, &m.u.error);
    } else if (t != ING_ACK) {
        fprintf(stderr, "gpuagg-load: connection %u: unexpected frame from the daemon: %s\n",
                c->id, t < 0 ? err : "not an ack");
    } else if (!c->count || c->slots[c->head].seq != m.u.ack.seq) {
        fprintf(stderr, "gpuagg-load: connection %u: ack for seq %llu, expected %s%llu\n", c->id,
                (unsigned long long)m.u.ack.seq, c->count ? "" : "none; oldest sent was ",
                (unsigned long long)(c->count ? c->slots[c->head].seq : c->next_seq - 1));
    } else if (m.u.ack.accepted + m.u.ack.nrejected != c->slots[c->head].n) {
        fprintf(stderr, "gpuagg-load: connection %u: ack of seq %llu counts %llu + %zu points, "
                "the batch had %zu\n", c->id, (unsigned long long)m.u.ack.seq,
                (unsigned long long)m.u.ack.accepted, m.u.ack.nrejected, c->slots[c->head].n);
    } else {
        cb(ctx, c, &c->slots[c->head], &m.u.ack);
        c->head = (c->head + 1) % c->nslots;
        c->count--;
        rc = 0;
    }
    ing_msg_free(&m);
    return rc;
}

int load_conn_read(struct load_conn *c, void (*cb)(void *ctx, struct load_conn *c,
                                                   struct load_batch *b, const struct ing_ack *a),
                   void *ctx)
{
    for (;;) {
        if (c->incap - c->inlen < READ_CHUNK) {
            uint8_t *nb = realloc(c->in, c->incap + READ_CHUNK);
            if (!nb) {
                c->failed = 1;
                return -1;
            }
            c->in = nb;
            c->incap += READ_CHUNK;
        }
        ssize_t n = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            if (n < 0)
                fprintf(stderr, "gpuagg-load: connection %u: read: %s\n", c->id, strerror(errno));
            c->closed = 1;
            break;
        }
        c->inlen += (size_t)n;
        if ((size_t)n < READ_CHUNK)
            break;
    }
    size_t flen;
    int r;
    while ((r = mp_frame_scan(c->in, c->inlen, MAX_IN_FRAME, &flen)) == 1) {
        int hr = handle_frame(c, flen, cb, ctx);
        consume(c, flen);
        if (hr < 0) {
            c->failed = 1;
            return -1;
        }
    }
    if (r < 0) {
        fprintf(stderr, "gpuagg-load: connection %u: bad frame from the daemon: %s\n", c->id,
                ga_strerror(r));
        c->failed = 1;
        return -1;
    }
    if (c->closed) {
        if (!c->failed)
            fprintf(stderr, "gpuagg-load: connection %u: closed by the daemon with %u batch%s "
                    "unacknowledged\n", c->id, c->count, c->count == 1 ? "" : "es");
        c->failed = 1;
        return -1;
    }
    /* Give back a buffer a huge ack grew. */
    if (!c->inlen && c->incap > 4 * READ_CHUNK) {
        free(c->in);
        c->in = NULL;
        c->incap = 0;
    }
    return 0;
}

void load_conn_close(struct load_conn *c)
{
    if (c->fd > 0)
        close(c->fd);
    c->fd = -1;
    for (uint32_t i = 0; c->slots && i < c->nslots; i++)
        load_batch_free(&c->slots[i]);
    free(c->slots);
    free(c->in);
    load_gen_free(&c->gen);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}
