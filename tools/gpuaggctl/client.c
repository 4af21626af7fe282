/* client.c — blocking control-protocol client (see client.h). */
#include "tools/gpuaggctl/client.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_frame.h"

#define READ_CHUNK 65536

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ms(void)
{
    return now_ns() / 1000000;
}

/* Wait for events on fd until deadline_ms.  Returns revents, 0 on timeout,
 * or a negative errno. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = { .fd = fd, .events = events };
        int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n > 0)
            return p.revents;
    }
}

int ctl_client_connect(struct ctl_client *c, const char *path, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->timeout_ms = timeout_ms;
    c->next_id = 1;

    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, path, strlen(path) + 1);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int64_t deadline = now_ms() + timeout_ms;
    int rc;
    for (;;) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
            rc = 0;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN) {          /* Linux: the listen backlog is full; try again */
            if (now_ms() >= deadline) {
                rc = -ETIMEDOUT;
                break;
            }
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            continue;
        }
        if (errno != EINPROGRESS) {
            rc = -errno;
            break;
        }
        int ev = wait_fd(fd, POLLOUT, deadline);
        if (ev <= 0) {
            rc = ev < 0 ? ev : -ETIMEDOUT;
            break;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        rc = -soerr;
        break;
    }
    if (rc < 0) {
        close(fd);
        return rc;
    }
    c->fd = fd;
    return 0;
}

static int write_all(struct ctl_client *c, const char *p, size_t n, int64_t deadline,
                     char *err, size_t errlen)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN)
            return ga_fail(GA_EIO, err, errlen, "sending the request: %s", strerror(errno));
        int ev = wait_fd(c->fd, POLLOUT, deadline);
        if (ev == 0)
            return ga_fail(GA_ETIMEDOUT, err, errlen, "timed out after %g s sending the request",
                        c->timeout_ms / 1000.0);
        if (ev < 0)
            return ga_fail(GA_EIO, err, errlen, "sending the request: %s", strerror(-ev));
    }
    return 0;
}

/* Read until buf holds one complete frame; returns its length or GA_E*. */
static int64_t read_frame(struct ctl_client *c, int64_t deadline, char *err, size_t errlen)
{
    for (;;) {
        size_t fl = 0;
        int rc = mp_frame_scan(c->buf, c->len, CTL_MAX_FRAME, &fl);
        if (rc == 1)
            return (int64_t)fl;
        if (rc == GA_ETOOBIG)
            return ga_fail(GA_ETOOBIG, err, errlen, "response larger than %u bytes or nested too deep",
                        CTL_MAX_FRAME);
        if (rc < 0)
            return ga_fail(GA_EPROTO, err, errlen, "response is not valid msgpack");
        if (c->cap - c->len < READ_CHUNK) {
            size_t ncap = c->cap ? c->cap * 2 : 2 * READ_CHUNK;
            uint8_t *nb = realloc(c->buf, ncap);
            if (!nb)
                return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
            c->buf = nb;
            c->cap = ncap;
        }
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (n > 0) {
            c->len += (size_t)n;
            continue;
        }
        if (n == 0)
            return ga_fail(GA_EIO, err, errlen, "connection closed by gpuaggd%s",
                        c->len ? " in the middle of a response" : " before it responded");
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return ga_fail(GA_EIO, err, errlen, "reading the response: %s", strerror(errno));
        int ev = wait_fd(c->fd, POLLIN, deadline);
        if (ev == 0)
            return ga_fail(GA_ETIMEDOUT, err, errlen, "timed out after %g s waiting for a response",
                        c->timeout_ms / 1000.0);
        if (ev < 0)
            return ga_fail(GA_EIO, err, errlen, "reading the response: %s", strerror(-ev));
    }
}

static void copy_text(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

int ctl_client_call(struct ctl_client *c, const char *op, const void *args, size_t args_len,
                    struct ctl_reply *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (c->fd < 0)
        return ga_fail(GA_EIO, err, errlen, "not connected");
    uint64_t id = c->next_id++;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    ctl_pack_request_head(&pk, id, op, args != NULL);
    if (args)
        msgpack_sbuffer_write(&sb, args, args_len);
    int64_t start = now_ns();
    int64_t deadline = now_ms() + c->timeout_ms;
    int rc = sb.size > CTL_MAX_FRAME
        ? ga_fail(GA_ETOOBIG, err, errlen, "request larger than %u bytes", CTL_MAX_FRAME)
        : write_all(c, sb.data, sb.size, deadline, err, errlen);
    msgpack_sbuffer_destroy(&sb);
    if (rc < 0)
        return rc;

    int64_t fl = read_frame(c, deadline, err, errlen);
    if (fl < 0)
        return (int)fl;
    if (c->zone)
        msgpack_zone_free(c->zone);
    c->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
    if (!c->zone)
        return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
    size_t off = 0;
    int urc = msgpack_unpack((const char *)c->buf, (size_t)fl, &off, c->zone, &c->reply);
    memmove(c->buf, c->buf + fl, c->len - (size_t)fl);
    c->len -= (size_t)fl;
    if (urc != MSGPACK_UNPACK_SUCCESS)
        return ga_fail(GA_EPROTO, err, errlen, "response could not be decoded (msgpack error %d)", urc);

    uint64_t rid;
    const char *msg = NULL;
    size_t msglen = 0;
    char perr[128];
    if (ctl_parse_response(&c->reply, &rid, &r->ok, &r->result, &r->code, &msg, &msglen,
                           perr, sizeof perr) < 0)
        return ga_fail(GA_EPROTO, err, errlen, "%s", perr);
    if (rid != id && !(rid == 0 && !r->ok))
        return ga_fail(GA_EPROTO, err, errlen, "response id %llu does not match request id %llu",
                    (unsigned long long)rid, (unsigned long long)id);
    r->rtt_ms = (double)(now_ns() - start) / 1e6;
    if (!r->ok) {
        copy_text(r->message, sizeof r->message, msg, msglen);
        size_t nlen = 0;
        const char *name = ctl_response_error_name(&c->reply, &nlen);
        if (name && nlen)
            copy_text(r->name, sizeof r->name, name, nlen);
        else
            copy_text(r->name, sizeof r->name, ga_errname((int)r->code), strlen(ga_errname((int)r->code)));
    }
    return 0;
}

void ctl_client_close(struct ctl_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
    if (c->zone)
        msgpack_zone_free(c->zone);
    c->zone = NULL;
}
