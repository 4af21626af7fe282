/* http_admit.h — the HTTP listener's door: it accepts the connections,
 * decides which ones libmicrohttpd serves, and for how long, so that slow
 * or idle clients cannot take the listener, or its probes, away
 * (docs/API.md "The listener").
 *
 * libmicrohttpd runs a thread per connection and closes a connection only
 * after http.timeout_s without a byte: a client that sends a byte of its
 * headers every second would hold a thread, and a place, for ever.  So the
 * listening socket is not libmicrohttpd's: the door thread accepts, and
 * hands a connection over (MHD_add_connection) only when it has a place:
 *
 *   places            http.max_connections connections are served at once,
 *                     at most http.max_connections_per_peer of them from one
 *                     client address;
 *   the wait          a connection accepted without a place waits, without
 *                     a thread, up to HTTP_WAIT_MS: it gets the first place
 *                     that opens (first come, first served), or, once it has
 *                     sent a whole probe request (GET /healthz, /readyz,
 *                     /metrics), one of HTTP_PROBE_SLOTS places kept for the
 *                     probes (HTTP_PROBE_SLOTS_PER_PEER at most from one
 *                     address), answered and closed within
 *                     HTTP_PROBE_HOLD_MS.  At the end of the wait, a whole
 *                     request is answered 503 and a partial one closed.  At
 *                     most HTTP_WAIT_MAX connections wait; past that the one
 *                     waiting longest is closed;
 *   header deadline   a served connection must complete a request line and
 *                     its headers within http.header_timeout_s of being
 *                     accepted, or of the answer to its previous request
 *                     (keep-alive), whatever it keeps sending: else its
 *                     socket is shut down, which wakes its thread to close
 *                     it.
 *
 * Thread-safety: the door thread owns the waiting connections; one mutex
 * guards the served ones, which libmicrohttpd's callbacks (any thread)
 * update.  No other lock is taken while it is held, and libmicrohttpd is
 * never called with it held. */
#ifndef GA_HTTP_ADMIT_H
#define GA_HTTP_ADMIT_H

#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#define HTTP_PROBE_SLOTS 8
#define HTTP_PROBE_SLOTS_PER_PEER 4
#define HTTP_PROBE_HOLD_MS 3000
#define HTTP_WAIT_MS 1000
#define HTTP_WAIT_MAX 256

struct http_admit;
struct http_conn;                      /* one served connection */

/* What a served connection whose headers are complete may do. */
enum http_admit_verdict {
    HTTP_ADMIT_SERVE = 0,              /* answer it; keep-alive as the client asks */
    HTTP_ADMIT_PROBE_CLOSE,            /* on a probe's place: answer, then close */
    HTTP_ADMIT_NOT_PROBE,              /* on a probe's place but not a probe: 503 */
};

/* Totals since start (the log line http_shed reports their increments). */
struct http_admit_stats {
    uint64_t header_timeouts;          /* served connections shut at the header deadline */
    uint64_t probe_timeouts;           /* probes' places shut after HTTP_PROBE_HOLD_MS */
    uint64_t wait_timeouts;            /* waiting ones closed with a partial request */
    uint64_t wait_evicted;             /* waiting ones closed to make room for a newer one */
    uint64_t refused_full;             /* 503: no place within HTTP_WAIT_MS */
    uint64_t refused_peer;             /* 503: the address held its places */
};

struct http_admit_limits {
    int max_connections;               /* http.max_connections */
    int per_peer;                      /* http.max_connections_per_peer */
    int header_timeout_s;              /* http.header_timeout_s */
};

/* Make the door for lim (copied).  Returns 0 with *out set, or GA_ENOMEM /
 * GA_EIO with err. */
int http_admit_create(struct http_admit **out, const struct http_admit_limits *lim, char *err,
                      size_t errlen);
/* libmicrohttpd's MHD_OPTION_CONNECTION_LIMIT: the places and the probes'
 * places, and as many again as a margin (a connection the door counts as
 * closed may still be libmicrohttpd's for a moment). */
unsigned http_admit_mhd_limit(const struct http_admit *a);
/* Start the door thread: accept on listen_fd (listening, not owned; made
 * non-blocking), hand connections to mhd (started with
 * MHD_USE_NO_LISTEN_SOCKET).  0, or GA_EIO with err. */
int http_admit_run(struct http_admit *a, struct MHD_Daemon *mhd, int listen_fd, char *err,
                   size_t errlen);
/* Stop the door thread and close the waiting connections; the served ones
 * stay libmicrohttpd's.  Before MHD_stop_daemon.  NULL ok. */
void http_admit_halt(struct http_admit *a);
/* Free the door, after MHD_stop_daemon.  NULL ok. */
void http_admit_free(struct http_admit *a);

/* ---- libmicrohttpd's callbacks report here ------------------------------ */

/* MHD_CONNECTION_NOTIFY_STARTED for socket fd: the entry the door made for
 * it (the connection's socket context), NULL if none (then not tracked). */
struct http_conn *http_admit_started(struct http_admit *a, int fd);
/* MHD_CONNECTION_NOTIFY_CLOSED (before libmicrohttpd closes the socket).
 * NULL ok. */
void http_admit_closed(struct http_admit *a, struct http_conn *c);
/* The request line and headers are complete; probe: the request is a
 * probe.  Ends the header phase; returns the verdict.  NULL c: SERVE. */
enum http_admit_verdict http_admit_request(struct http_admit *a, struct http_conn *c, int probe);
/* The request was answered or ended: the next one's headers are timed from
 * now.  NULL ok. */
void http_admit_done(struct http_admit *a, struct http_conn *c);

void http_admit_get_stats(struct http_admit *a, struct http_admit_stats *out);

#endif
