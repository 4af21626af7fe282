/* http_admit.c — the HTTP listener's door: accept, the wait for a place,
 * the probes' places, the per-peer cap and the header deadline (see
 * http_admit.h). */
#include "daemon/http/http_admit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"

#define TICK_MS 100
#define ACCEPT_BATCH 64
#define PEEK_BYTES 2048
#define UNCONFIRMED_NS 5000000000LL    /* handed over, never started: forgotten */
#define LOG_EVERY_NS 1000000000LL
#define MS 1000000LL

/* What a waiting connection has shown of its request. */
enum wait_state {
    W_NOTHING = 0,                     /* no byte yet */
    W_PARTIAL,                         /* a probe's request line, or its start, so far */
    W_OTHER,                           /* not a probe; not a whole request so far */
    W_PROBE,                           /* a whole probe request */
    W_READY,                           /* a whole request, not a probe */
};

struct http_conn {
    struct http_conn *prev, *next;
    uint64_t seq;
    int fd;
    int64_t since_ns;                  /* accepted; once served: its header phase began */
    int64_t handed_ns;                 /* served: handed to libmicrohttpd */
    int in_headers;                    /* served: waiting for a request line and headers */
    int probe;                         /* served on a probe's place */
    int confirmed;                     /* served: libmicrohttpd started it */
    int shut;                          /* served: shut down at the header deadline */
    enum wait_state wait;              /* waiting: what it has sent */
    int family;                        /* AF_INET, AF_INET6; 0 other */
    unsigned char addr[16];
    struct sockaddr_storage sa;
    socklen_t salen;
};

struct list {
    struct http_conn *head, *tail;
    int n;
};

struct http_admit {
    struct http_admit_limits lim;
    int64_t header_ns;
    struct MHD_Daemon *mhd;
    int listen_fd, wake_fd;
    pthread_t thread;
    int running;
    atomic_int stop;
    /* the door thread's own */
    struct list waiting;
    atomic_int nwaiting;
    int64_t accept_after_ns;           /* accept paused (out of descriptors) until */
    struct http_admit_stats logged;
    int64_t logged_ns;
    char resp_full[512], resp_peer[512];
    size_t resp_full_len, resp_peer_len;
    /* under mu */
    pthread_mutex_t mu;
    struct list served;
    int counted, probes;               /* served on places / on the probes' places */
    uint64_t seq;
    struct http_admit_stats st;
    int last_family;                   /* the address of the last connection shed */
    unsigned char last_addr[16];
};

/* ---- lists and peers ----------------------------------------------------- */

static void list_append(struct list *l, struct http_conn *c)
{
    c->next = NULL;
    c->prev = l->tail;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->n++;
}

static void list_remove(struct list *l, struct http_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
    l->n--;
}

static void peer_set(struct http_conn *c)
{
    const struct sockaddr *sa = (const struct sockaddr *)&c->sa;
    c->family = 0;
    if (sa->sa_family == AF_INET) {
        c->family = AF_INET;
        memcpy(c->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {          /* ::ffff:a.b.c.d is a.b.c.d */
            c->family = AF_INET;
            memcpy(c->addr, a6->s6_addr + 12, 4);
        } else {
            c->family = AF_INET6;
            memcpy(c->addr, a6->s6_addr, 16);
        }
    }
}

static int same_peer(const struct http_conn *x, const struct http_conn *y)
{
    return x->family == y->family &&
           memcmp(x->addr, y->addr, x->family == AF_INET ? 4 : x->family ? 16 : 0) == 0;
}

/* Places (probe: the probes' places) that c's address holds.  Under mu. */
static int peer_held(const struct http_admit *a, const struct http_conn *c, int probe)
{
    int n = 0;
    for (const struct http_conn *x = a->served.head; x; x = x->next)
        n += x->probe == probe && !x->shut && same_peer(x, c);
    return n;
}

static void remember_peer(struct http_admit *a, const struct http_conn *c)
{
    a->last_family = c->family;
    memcpy(a->last_addr, c->addr, sizeof a->last_addr);
}

static void wake(struct http_admit *a)
{
    uint64_t one = 1;
    ssize_t w = write(a->wake_fd, &one, sizeof one);
    (void)w;                           /* full counter: the door wakes anyway */
}

/* ---- the waiting connections (door thread) ------------------------------- */

static void close_waiting(struct http_admit *a, struct http_conn *c, uint64_t *count)
{
    list_remove(&a->waiting, c);
    atomic_store(&a->nwaiting, a->waiting.n);
    close(c->fd);
    if (count) {
        pthread_mutex_lock(&a->mu);
        (*count)++;
        remember_peer(a, c);
        pthread_mutex_unlock(&a->mu);
    }
    free(c);
}

/* Answer 503 (the response prepared for why), read what the client sent so
 * that the close does not reset the answer away, and close. */
static void refuse_waiting(struct http_admit *a, struct http_conn *c, int peer_cap)
{
    const char *r = peer_cap ? a->resp_peer : a->resp_full;
    size_t n = peer_cap ? a->resp_peer_len : a->resp_full_len;
    ssize_t w = send(c->fd, r, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
    char sink[4096];
    for (int i = 0; i < 16 && recv(c->fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
        ;
    shutdown(c->fd, SHUT_WR);
    close_waiting(a, c, peer_cap ? &a->st.refused_peer : &a->st.refused_full);
}

/* The probes, as their request line starts; the next byte must end the
 * path (' ', '?' or '/'). */
static const char *const probe_lines[] = { "GET /healthz", "GET /readyz", "GET /metrics" };

static enum wait_state classify(const char *b, size_t n)
{
    int whole = n == PEEK_BYTES || memmem(b, n, "\r\n\r\n", 4) || memmem(b, n, "\n\n", 2);
    for (size_t i = 0; i < sizeof probe_lines / sizeof probe_lines[0]; i++) {
        size_t l = strlen(probe_lines[i]);
        if (n <= l ? memcmp(b, probe_lines[i], n) == 0
                   : memcmp(b, probe_lines[i], l) == 0 &&
                         (b[l] == ' ' || b[l] == '?' || b[l] == '/'))
            return n > l && whole ? W_PROBE : W_PARTIAL;
    }
    return whole ? W_READY : W_OTHER;
}

/* Peek at what c has sent.  0, or -1 when it is gone (closed here). */
static int look(struct http_admit *a, struct http_conn *c)
{
    char b[PEEK_BYTES];
    ssize_t n = recv(c->fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (n <= 0) {
        close_waiting(a, c, NULL);
        return -1;
    }
    c->wait = classify(b, (size_t)n);
    return 0;
}

static void accept_some(struct http_admit *a, int64_t now)
{
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(a->listen_fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                a->accept_after_ns = now + TICK_MS * MS;
            return;
        }
        struct http_conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->since_ns = now;
        c->sa = sa;
        c->salen = sl;
        peer_set(c);
        list_append(&a->waiting, c);
        if (a->waiting.n > HTTP_WAIT_MAX)
            close_waiting(a, a->waiting.head, &a->st.wait_evicted);
        atomic_store(&a->nwaiting, a->waiting.n);
    }
}

/* Hand c (waiting) to libmicrohttpd, on a place or a probe's place. */
static void hand_over(struct http_admit *a, struct http_conn *c, int probe)
{
    list_remove(&a->waiting, c);
    atomic_store(&a->nwaiting, a->waiting.n);
    pthread_mutex_lock(&a->mu);
    c->seq = ++a->seq;
    c->probe = probe;
    c->handed_ns = ga_now_mono_ns();
    c->in_headers = 1;
    c->wait = W_NOTHING;
    if (probe)
        a->probes++;
    else
        a->counted++;
    list_append(&a->served, c);
    uint64_t seq = c->seq;
    int fd = c->fd;
    struct sockaddr_storage sa = c->sa;
    socklen_t salen = c->salen;
    pthread_mutex_unlock(&a->mu);
    /* libmicrohttpd owns the socket from here, and closes it on failure;
     * c is the served list's (freed when libmicrohttpd closes it) */
    if (MHD_add_connection(a->mhd, fd, (const struct sockaddr *)&sa, salen) == MHD_YES)
        return;
    int e = errno;
    pthread_mutex_lock(&a->mu);
    for (struct http_conn *x = a->served.head; x; x = x->next)
        if (x->seq == seq && !x->confirmed) {
            list_remove(&a->served, x);
            if (!x->shut)
                x->probe ? a->probes-- : a->counted--;
            free(x);
            break;
        }
    pthread_mutex_unlock(&a->mu);
    ga_log(GA_LOG_WARN, "http_accept", "error=\"libmicrohttpd took no connection: %s\"",
           strerror(e));
}

/* Give the places that are free to the waiting connections, first come
 * first served; a probe takes a probe's place when no other is free. */
static void place(struct http_admit *a)
{
    struct http_conn *c = a->waiting.head;
    while (c) {
        struct http_conn *next = c->next;
        pthread_mutex_lock(&a->mu);
        int room = a->counted < a->lim.max_connections && peer_held(a, c, 0) < a->lim.per_peer;
        int probe_room = !room && c->wait == W_PROBE && a->probes < HTTP_PROBE_SLOTS &&
                         peer_held(a, c, 1) < HTTP_PROBE_SLOTS_PER_PEER;
        int full = a->counted >= a->lim.max_connections && a->probes >= HTTP_PROBE_SLOTS;
        pthread_mutex_unlock(&a->mu);
        if (room || probe_room)
            hand_over(a, c, probe_room);
        else if (full)
            break;
        c = next;
    }
}

/* The waiting connections whose wait is over. */
static void expire(struct http_admit *a, int64_t now)
{
    struct http_conn *c = a->waiting.head;
    while (c) {
        struct http_conn *next = c->next;
        if (now - c->since_ns < (int64_t)HTTP_WAIT_MS * MS)
            break;                     /* the list is in accept order */
        if (c->wait == W_OTHER && look(a, c) < 0) {
            c = next;                  /* gone meanwhile */
            continue;
        }
        if (c->wait == W_READY || c->wait == W_PROBE) {
            pthread_mutex_lock(&a->mu);
            int peer_cap = a->counted < a->lim.max_connections;
            pthread_mutex_unlock(&a->mu);
            refuse_waiting(a, c, peer_cap);
        } else {
            close_waiting(a, c, &a->st.wait_timeouts);
        }
        c = next;
    }
}

/* ---- the served connections ---------------------------------------------- */

/* The header deadline and the probes' places' hold; forget what
 * libmicrohttpd never started. */
static void sweep(struct http_admit *a, int64_t now)
{
    pthread_mutex_lock(&a->mu);
    struct http_conn *c = a->served.head;
    while (c) {
        struct http_conn *next = c->next;
        if (!c->confirmed) {
            if (now - c->since_ns >= UNCONFIRMED_NS) {
                list_remove(&a->served, c);
                if (!c->shut)
                    c->probe ? a->probes-- : a->counted--;
                free(c);
            }
        } else if (!c->shut && ((c->in_headers && now - c->since_ns >= a->header_ns) ||
                                (c->probe && now - c->handed_ns >= HTTP_PROBE_HOLD_MS * MS))) {
            shutdown(c->fd, SHUT_RDWR);  /* its thread reads the end and closes it */
            c->shut = 1;
            c->probe ? a->probes-- : a->counted--;
            c->probe ? a->st.probe_timeouts++ : a->st.header_timeouts++;
            remember_peer(a, c);
        }
        c = next;
    }
    pthread_mutex_unlock(&a->mu);
}

/* One line a second at most while connections are shed. */
static void log_shed(struct http_admit *a, int64_t now)
{
    if (now - a->logged_ns < LOG_EVERY_NS)
        return;
    pthread_mutex_lock(&a->mu);
    struct http_admit_stats s = a->st;
    int fam = a->last_family;
    unsigned char addr[16];
    memcpy(addr, a->last_addr, sizeof addr);
    pthread_mutex_unlock(&a->mu);
    struct http_admit_stats l = a->logged;
    if (s.header_timeouts == l.header_timeouts && s.probe_timeouts == l.probe_timeouts &&
        s.wait_timeouts == l.wait_timeouts &&
        s.wait_evicted == l.wait_evicted && s.refused_full == l.refused_full &&
        s.refused_peer == l.refused_peer)
        return;
    char peer[INET6_ADDRSTRLEN] = "other";
    if (fam)
        inet_ntop(fam, addr, peer, sizeof peer);
    a->logged = s;
    a->logged_ns = now;
    ga_log(GA_LOG_WARN, "http_shed",
           "header_timeouts=%llu probe_timeouts=%llu wait_timeouts=%llu wait_evicted=%llu "
           "refused_full=%llu refused_peer=%llu last_peer=%s",
           (unsigned long long)(s.header_timeouts - l.header_timeouts),
           (unsigned long long)(s.probe_timeouts - l.probe_timeouts),
           (unsigned long long)(s.wait_timeouts - l.wait_timeouts),
           (unsigned long long)(s.wait_evicted - l.wait_evicted),
           (unsigned long long)(s.refused_full - l.refused_full),
           (unsigned long long)(s.refused_peer - l.refused_peer), peer);
}

static void *door(void *arg)
{
    struct http_admit *a = arg;
    struct pollfd pfd[2 + HTTP_WAIT_MAX];
    struct http_conn *who[2 + HTTP_WAIT_MAX];
    int64_t swept = 0;
    while (!atomic_load(&a->stop)) {
        int n = 0, li = -1;
        int64_t now = ga_now_mono_ns();
        pfd[n++] = (struct pollfd){ .fd = a->wake_fd, .events = POLLIN };
        if (now >= a->accept_after_ns) {
            li = n;
            pfd[n++] = (struct pollfd){ .fd = a->listen_fd, .events = POLLIN };
        }
        /* a connection with bytes not taken stays readable: poll only for
         * the first byte, peek at the others every turn */
        for (struct http_conn *c = a->waiting.head; c; c = c->next)
            if (c->wait == W_NOTHING) {
                who[n] = c;
                pfd[n++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
            }
        if (poll(pfd, (nfds_t)n, TICK_MS) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(a->wake_fd, &v, sizeof v);
            (void)r;
        }
        now = ga_now_mono_ns();
        for (int i = li >= 0 ? li + 1 : 1; i < n; i++)
            if (pfd[i].revents)
                look(a, who[i]);
        int tick = now - swept >= TICK_MS * MS;
        if (tick)                      /* a probe's request line in pieces */
            for (struct http_conn *c = a->waiting.head, *next; c; c = next) {
                next = c->next;
                if (c->wait == W_PARTIAL)
                    look(a, c);
            }
        if (li >= 0 && (pfd[li].revents & POLLIN))
            accept_some(a, now);
        place(a);
        expire(a, now);
        if (tick) {
            sweep(a, now);
            swept = now;
        }
        log_shed(a, now);
    }
    return NULL;
}

/* ---- the API --------------------------------------------------------------- */

static size_t build_503(char *out, size_t cap, const char *why)
{
    char body[384];
    int bl = snprintf(body, sizeof body, "{\"code\":503,\"title\":\"Service Unavailable\","
                      "\"description\":\"%s\"}", why);
    int n = snprintf(out, cap, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                     "application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\n"
                     "Connection: close\r\n\r\n%s", bl, body);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

int http_admit_create(struct http_admit **out, const struct http_admit_limits *lim, char *err,
                      size_t errlen)
{
    struct http_admit *a = calloc(1, sizeof *a);
    if (!a)
        return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
    a->lim = *lim;
    a->header_ns = (int64_t)lim->header_timeout_s * 1000 * MS;
    a->listen_fd = -1;
    a->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (a->wake_fd < 0) {
        int e = errno;
        free(a);
        return ga_fail(GA_EIO, err, errlen, "http: eventfd: %s", strerror(e));
    }
    char why[256];
    snprintf(why, sizeof why, "http.max_connections (%d) connections are open; past them only "
             "/healthz, /readyz and /metrics are answered", lim->max_connections);
    a->resp_full_len = build_503(a->resp_full, sizeof a->resp_full, why);
    snprintf(why, sizeof why, "this client address holds http.max_connections_per_peer (%d) "
             "connections; past them only /healthz, /readyz and /metrics are answered",
             lim->per_peer);
    a->resp_peer_len = build_503(a->resp_peer, sizeof a->resp_peer, why);
    pthread_mutex_init(&a->mu, NULL);
    *out = a;
    return 0;
}

unsigned http_admit_mhd_limit(const struct http_admit *a)
{
    return (unsigned)a->lim.max_connections + 2 * HTTP_PROBE_SLOTS;
}

int http_admit_run(struct http_admit *a, struct MHD_Daemon *mhd, int listen_fd, char *err,
                   size_t errlen)
{
    a->mhd = mhd;
    a->listen_fd = listen_fd;
    int fl = fcntl(listen_fd, F_GETFL);
    if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return ga_fail(GA_EIO, err, errlen, "http: listening socket: %s", strerror(errno));
    int rc = pthread_create(&a->thread, NULL, door, a);
    if (rc != 0)
        return ga_fail(GA_EIO, err, errlen, "http: cannot start the door thread: %s",
                       strerror(rc));
    a->running = 1;
    return 0;
}

void http_admit_halt(struct http_admit *a)
{
    if (!a || !a->running)
        return;
    atomic_store(&a->stop, 1);
    wake(a);
    pthread_join(a->thread, NULL);
    a->running = 0;
    while (a->waiting.head)
        close_waiting(a, a->waiting.head, NULL);
}

void http_admit_free(struct http_admit *a)
{
    if (!a)
        return;
    http_admit_halt(a);
    while (a->served.head) {
        struct http_conn *c = a->served.head;
        list_remove(&a->served, c);
        free(c);
    }
    close(a->wake_fd);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

struct http_conn *http_admit_started(struct http_admit *a, int fd)
{
    struct http_conn *found = NULL;
    pthread_mutex_lock(&a->mu);
    for (struct http_conn *c = a->served.tail; c; c = c->prev)   /* the newest first */
        if (c->fd == fd && !c->confirmed) {
            c->confirmed = 1;
            found = c;
            break;
        }
    pthread_mutex_unlock(&a->mu);
    return found;
}

void http_admit_closed(struct http_admit *a, struct http_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&a->mu);
    list_remove(&a->served, c);
    if (!c->shut)
        c->probe ? a->probes-- : a->counted--;
    pthread_mutex_unlock(&a->mu);
    free(c);
    if (atomic_load(&a->nwaiting) > 0)
        wake(a);                       /* a place opened for one waiting */
}

enum http_admit_verdict http_admit_request(struct http_admit *a, struct http_conn *c, int probe)
{
    if (!c)
        return HTTP_ADMIT_SERVE;
    pthread_mutex_lock(&a->mu);
    c->in_headers = 0;
    int on_probe_place = c->probe;
    pthread_mutex_unlock(&a->mu);
    if (!on_probe_place)
        return HTTP_ADMIT_SERVE;
    return probe ? HTTP_ADMIT_PROBE_CLOSE : HTTP_ADMIT_NOT_PROBE;
}

void http_admit_done(struct http_admit *a, struct http_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&a->mu);
    c->in_headers = 1;
    c->since_ns = ga_now_mono_ns();
    pthread_mutex_unlock(&a->mu);
}

void http_admit_get_stats(struct http_admit *a, struct http_admit_stats *out)
{
    pthread_mutex_lock(&a->mu);
    *out = a->st;
    pthread_mutex_unlock(&a->mu);
}
