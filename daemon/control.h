/* control.h — the control socket server (proto/PROTOCOL.md, "Control").
 *
 * A Unix stream socket, mode control.mode (0660), speaking msgpack request/
 * response maps.  The loop thread frames requests with mp_frame_scan and
 * dispatches them to the op table in daemon/control_ops.c; responses go out
 * in request order.  A malformed or oversized frame gets an error reply
 * (id 0) and closes that connection only. */
#ifndef GA_CONTROL_H
#define GA_CONTROL_H

#include <msgpack.h>
#include <stddef.h>

struct ga_daemon;
struct ga_control;

/* An op handler packs exactly one result object into pk and returns 0, or
 * returns a negative GA_E* code with a message in err (nothing packed). */
typedef int (*ga_ctl_handler)(struct ga_daemon *d, const msgpack_object *args,
                              msgpack_packer *pk, char *err, size_t errlen);

struct ga_ctl_op {
    const char *name;
    ga_ctl_handler fn;
};

/* The op table (daemon/control_ops.c), terminated by {NULL, NULL}. */
extern const struct ga_ctl_op ga_ctl_ops[];

/* Bind and listen on path (an existing stale socket is replaced; a live
 * one — another daemon answering — is an error).  Returns 0 or GA_E*
 * with a reason in err. */
int ga_control_start(struct ga_daemon *d, const char *path, int mode,
                     struct ga_control **out, char *err, size_t errlen);
/* Stop listening and close every connection once its pending replies are
 * written; frees the server in the close callbacks. */
void ga_control_stop(struct ga_control *c);
/* Open connections, for status. */
int ga_control_connections(const struct ga_control *c);

#endif
