/* client.h — a blocking control-protocol client for gpuaggctl.
 *
 * One connection to gpuaggd's control socket; ctl_client_call() sends one
 * request (proto/PROTOCOL.md, "Control protocol") and waits for its
 * response, all under a deadline.  Responses are framed with mp_frame_scan
 * and decoded into a zone owned by the client. */
#ifndef GA_CTL_CLIENT_H
#define GA_CTL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

/* gpuaggctl's exit codes (docs/gpuaggctl.1). */
enum { EXIT_OK = 0, EXIT_DAEMON = 1, EXIT_USAGE = 2, EXIT_CONNECT = 3, EXIT_COMM = 4 };

struct ctl_client {
    int fd;                     /* -1 when closed */
    int timeout_ms;             /* per connect and per call */
    uint64_t next_id;           /* id of the next request; starts at 1 */
    uint8_t *buf;               /* bytes received and not yet consumed */
    size_t len, cap;
    msgpack_zone *zone;         /* holds the last decoded response */
    msgpack_object reply;       /* the last decoded response */
};

/* What a call got back.  Pointers point into the client's zone and stay
 * valid until the next call or ctl_client_close(). */
struct ctl_reply {
    int ok;                             /* 1 success, 0 the daemon returned an error */
    const msgpack_object *result;       /* ok: the result object */
    int64_t code;                       /* !ok: negative GA_E* */
    char message[1024];                 /* !ok: NUL-terminated copy of error.message */
    char name[32];                      /* !ok: error.name ("EBADOP"), or ga_errname(code) */
    double rtt_ms;                      /* request written → response decoded */
};

/* Connect to the Unix socket at path within timeout_ms milliseconds.
 * c is initialised here (ctl_client_close() is safe after any return).
 * Returns 0, or a negative errno (-ENOENT, -ECONNREFUSED, -EACCES,
 * -ENAMETOOLONG, -ETIMEDOUT ...) that the caller turns into text with
 * strerror(-rc). */
int ctl_client_connect(struct ctl_client *c, const char *path, int timeout_ms);

/* Send {"id", "op"[, "args"]} and wait for the matching response.
 *   op         operation name, e.g. "status"
 *   args       one packed msgpack map (the "args" value), or NULL for none
 *   args_len   its length in bytes
 *   r          out: the reply
 *   err        out: on failure, what went wrong ("timed out after 5 s waiting
 *              for a response", "connection closed by gpuaggd", ...)
 * Returns 0 when a response arrived (r->ok tells success from a daemon
 * error; a daemon complaint about the request frame itself, sent with id 0,
 * is returned as !ok too), or a negative GA_E* on a transport or protocol
 * failure: GA_ETIMEDOUT, GA_EIO (closed, read/write error), GA_EPROTO
 * (undecodable or mismatched response), GA_ETOOBIG, GA_ENOMEM. */
int ctl_client_call(struct ctl_client *c, const char *op, const void *args, size_t args_len,
                    struct ctl_reply *r, char *err, size_t errlen);

/* Close the connection and free the buffer and zone. */
void ctl_client_close(struct ctl_client *c);

#endif
