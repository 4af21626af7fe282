/* control.h — the control socket server (proto/PROTOCOL.md, "Control").
 *
 * A Unix stream socket, mode control.mode (0660), speaking msgpack request/
 * response maps.  The loop thread frames requests with mp_frame_scan and
 * dispatches them to an op table (daemon/control/control_ops.c); responses go out
 * in request order.  A malformed or oversized frame gets an error reply
 * (id 0) and closes that connection only.
 *
 * Deferred replies.  A handler that cannot answer at once (a flush, a
 * database query) returns GA_CTL_DEFERRED and keeps the request handle; it
 * (or a thread it hands the work to) later completes the request exactly
 * once with ga_ctl_reply or ga_ctl_finish_on_loop, from any thread.  Each
 * connection keeps a FIFO of the replies it owes: a pending reply holds
 * back the replies of later requests on the same connection.  If the
 * connection closes first, the request is orphaned: the completion is
 * still required and its reply is dropped.  A deadline set with
 * ga_ctl_set_timeout answers ETIMEDOUT in the request's place; the late
 * completion is dropped likewise. */
#ifndef GA_CONTROL_H
#define GA_CONTROL_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

struct ga_daemon;
struct ga_control;
struct ga_ctl_req;

/* A handler's "I will answer later" return value (positive: not an error). */
#define GA_CTL_DEFERRED 1

/* An op handler, on the loop thread; it must not block.  args is the
 * request's "args" map or NULL; it is freed when the handler returns, so a
 * deferred handler copies what it needs.  Returns
 *   0                 exactly one result object packed into pk;
 *   GA_CTL_DEFERRED   nothing packed; req now belongs to the handler until
 *                     it is completed (see above);
 *   a negative GA_E*  with a message in err (nothing packed). */
typedef int (*ga_ctl_handler)(struct ga_daemon *d, const msgpack_object *args,
                              struct ga_ctl_req *req, msgpack_packer *pk, char *err,
                              size_t errlen);

struct ga_ctl_op {
    const char *name;
    ga_ctl_handler fn;
};

/* The daemon's op table (daemon/control/control_ops.c), terminated by {NULL, NULL}. */
extern const struct ga_ctl_op ga_ctl_ops[];

/* Bind and listen on path (an existing stale socket is replaced; a live
 * one — another daemon answering — is an error) and serve the op table ops
 * (borrowed; normally ga_ctl_ops).  Blocking work (ga_ctl_run_blocking) gets
 * d->cfg->storage.pool_size threads, started on first use.  Returns 0 or
 * GA_E* with a reason in err. */
int ga_control_start(struct ga_daemon *d, const char *path, int mode,
                     const struct ga_ctl_op *ops, struct ga_control **out, char *err,
                     size_t errlen);
/* Stop listening and close every connection once the replies it is owed
 * are written; the server is freed once every deferred request has been
 * completed and the handles are closed. */
void ga_control_stop(struct ga_control *c);
/* Open connections, for status. */
int ga_control_connections(const struct ga_control *c);

/* Complete a deferred request; any thread, once.  rc 0: result holds
 * exactly one packed msgpack object (the "result" value) whose bytes are
 * taken over (result->data is NULL afterwards; destroy the sbuffer as
 * usual).  rc < 0: an error response with code rc and message (NULL:
 * ga_strerror(rc)); result may be NULL. */
void ga_ctl_reply(struct ga_ctl_req *req, int rc, msgpack_sbuffer *result, const char *message);

/* Like ga_ctl_reply, but the response is made on the loop thread by
 * fn(d, rc, pk, err, errlen), which answers like a synchronous handler
 * (returns 0 with a result packed, or a negative code with err).  For a
 * completer that holds locks and wants to read loop-side state.  fn is not
 * called when the request was orphaned. */
typedef int (*ga_ctl_finish)(struct ga_daemon *d, int rc, msgpack_packer *pk, char *err,
                             size_t errlen);
void ga_ctl_finish_on_loop(struct ga_ctl_req *req, int rc, ga_ctl_finish fn);

/* From a handler about to return GA_CTL_DEFERRED (loop thread): if the
 * request is not completed within timeout_ms, answer GA_ETIMEDOUT with
 * message in its place.  timeout_ms 0: no deadline. */
void ga_ctl_set_timeout(struct ga_ctl_req *req, uint64_t timeout_ms, const char *message);

/* Run fn(arg) on one of the server's blocking-work threads (database
 * queries), never the loop's nor libuv's pool (ingest decodes there).  fn
 * must complete req.  From a handler (loop thread).  Returns 0, GA_EBUSY
 * (too many jobs queued) or GA_ENOMEM; on error fn is not called and req is
 * still the handler's to answer (it may return the error). */
int ga_ctl_run_blocking(struct ga_ctl_req *req, void (*fn)(void *arg), void *arg);

#endif
