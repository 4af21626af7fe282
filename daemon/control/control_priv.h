/* control_priv.h — internals of the control server shared by control.c
 * (sockets, framing, dispatch, the per-connection reply FIFO) and
 * control_defer.c (deferred requests, their completion list, deadlines and
 * the blocking-work threads).  Not for op handlers: they use control.h.
 *
 * Threads and locks.  Everything here belongs to the loop thread except
 * what `mu` guards: the completion list `done` and the blocking-work queue.
 * A completer (any thread) fills its request's result fields, then links it
 * into `done` under `mu` and wakes the loop with uv_async_send; from then on
 * only the loop touches the request.  `mu` is a leaf lock: nothing else is
 * taken while it is held. */
#ifndef GA_CONTROL_PRIV_H
#define GA_CONTROL_PRIV_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/control/control.h"
#include "daemon/config/config.h"

#define CTL_MAX_PENDING 64               /* deferred replies owed on one connection */
#define CTL_MAX_JOBS 256                 /* blocking jobs queued, all connections */

struct ctl_conn;

/* One reply owed on a connection, in request order. */
struct ctl_slot {
    struct ctl_slot *next;
    struct ctl_conn *conn;
    struct ga_ctl_req *req;              /* non-NULL while the reply is pending */
    char *data;                          /* the packed response once ready */
    size_t len;
};

struct ctl_conn {
    uv_pipe_t pipe;                      /* first: the handle's data is the conn */
    struct ga_control *srv;
    char *buf;
    size_t len, cap;
    int closing;                         /* uv_close called */
    int close_after;                     /* close gracefully once the FIFO is empty */
    int shut;                            /* uv_shutdown issued: closes when written */
    uint64_t id;                         /* connection number, for logs */
    struct ctl_slot *head, *tail;        /* replies owed, oldest first */
    int npending;                        /* slots whose req is still pending */
    struct ctl_conn *prev, *next;
};

struct ga_ctl_req {
    struct ga_control *srv;              /* set at creation, then read-only */
    uint64_t id;
    char op[32];
    /* loop thread only */
    struct ctl_slot *slot;               /* NULL: orphaned (closed or timed out) */
    uint64_t deadline_ms;                /* uv_now() deadline, 0 none */
    char timeout_msg[256];
    /* written by the completer before it hands the request over */
    int rc;
    char *result;                        /* one packed object (rc 0), malloc'ed */
    size_t result_len;
    char message[512];
    ga_ctl_finish finish;
    struct ga_ctl_req *next_done;
};

struct ctl_job {
    void (*fn)(void *arg);
    void *arg;
    struct ctl_job *next;
};

struct ga_control {
    uv_pipe_t server;
    struct ga_daemon *d;
    const struct ga_ctl_op *ops;
    struct ctl_conn *conns;
    int nconns;
    int stopping, server_closed, freeing;
    int handles_open;                    /* async + timer not yet closed */
    uv_async_t async;                    /* completions waiting */
    uv_timer_t timer;                    /* the earliest deadline */
    uint64_t armed_ms;                   /* deadline the timer is set for, 0 none */
    uint64_t outstanding;                /* deferred, completion not yet processed */
    pthread_mutex_t mu;                  /* guards: done, jobs*, quit */
    pthread_cond_t cv;                   /* jobs queued or quit */
    struct ga_ctl_req *done, *done_tail;
    struct ctl_job *jobs, *jobs_tail;
    int njobs, quit;
    pthread_t *threads;
    int nthreads;
    char path[GA_SUN_PATH_MAX];
};

/* control.c: queue a ready response (data taken over) or pending slot. */
struct ctl_slot *ctl_conn_push(struct ctl_conn *c, struct ga_ctl_req *req, char *data, size_t len);
/* control.c: write the ready replies at the head of c's FIFO; close c if
 * it was waiting for the FIFO to empty. */
void ctl_conn_pump(struct ctl_conn *c);
/* control.c: free the server once stopped, closed and idle. */
void ctl_maybe_free_server(struct ga_control *s);

/* control_defer.c: init the async handle, timer and lock (loop thread). */
int ctl_defer_init(struct ga_control *s);
/* control_defer.c: a request for id/op, or NULL (out of memory). */
struct ga_ctl_req *ctl_req_new(struct ga_control *s, uint64_t id, const char *op, size_t oplen);
/* control_defer.c: a handler returned GA_CTL_DEFERRED: attach req to its
 * slot and arm its deadline. */
void ctl_req_deferred(struct ga_control *s, struct ga_ctl_req *req, struct ctl_slot *slot);
/* control_defer.c: the connection of slot closes: orphan its request. */
void ctl_slot_orphan(struct ctl_slot *slot);
/* control_defer.c: 1 when nothing deferred is outstanding; then stops the
 * threads and closes the handles (the server is freed in ctl_maybe_free_server
 * once they are closed). */
int ctl_defer_idle_close(struct ga_control *s);
/* control_defer.c: pack a whole response for id: rc 0 with result bytes, else
 * an error.  Returns malloc'ed bytes in *out, *len; NULL on out of memory. */
char *ctl_pack_response(uint64_t id, int rc, const char *result, size_t rlen, const char *msg,
                        size_t *len);

#endif
