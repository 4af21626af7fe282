/* ctl_proto.h — the control protocol between gpuaggctl (or any client) and
 * gpuaggd: request/response msgpack maps over a Unix stream socket.
 * proto/PROTOCOL.md is the specification, down to the byte; this is the one
 * encoder/decoder of its envelope, shared by daemon/control/control*.c and the CLI.
 *
 *   request   {"id": uint, "op": str[, "args": map]}
 *   response  {"id": uint, "ok": true,  "result": any}
 *             {"id": uint, "ok": false, "error": {"code": int, "name": str, "message": str}}
 *
 * Messages follow each other on the stream with no extra framing; a reader
 * finds their ends with mp_frame_scan(buf, len, CTL_MAX_FRAME, &n). */
#ifndef GA_CTL_PROTO_H
#define GA_CTL_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#define CTL_PROTO_VERSION 1
#define CTL_MAX_FRAME (1u << 20)        /* largest request or response, bytes */

/* Pack the head of a request: a map header of 2 entries (3 with args), then
 * "id": id and "op": op.  If has_args, also packs the key "args"; the caller
 * must then pack exactly one map (the arguments).  op must be non-NULL. */
void ctl_pack_request_head(msgpack_packer *pk, uint64_t id, const char *op, int has_args);

/* Pack the head of a success response: a map header of 3 entries, "id": id,
 * "ok": true, and the key "result"; the caller packs the result object next
 * (any type; nil when there is nothing to say). */
void ctl_pack_ok_head(msgpack_packer *pk, uint64_t id);

/* Pack a whole error response: {"id": id, "ok": false, "error": {"code":
 * code, "name": ga_errname(code), "message": message}}.  code is a negative
 * GA_E*; message NULL packs ga_strerror(code). */
void ctl_pack_error(msgpack_packer *pk, uint64_t id, int code, const char *message);

/* Validate a decoded request object.
 *   o       the decoded message (msgpack_unpack result)
 *   id      out: the request id; set to 0 first, then to the id if readable
 *   op      out: the op name, pointing into o, NOT NUL-terminated; oplen bytes
 *   args    out: the "args" map, or NULL when absent or nil
 *   err     out: on failure a reason naming the field, e.g.
 *           "request: 'op' missing"; may be NULL when errlen is 0
 * Returns 0; GA_EPROTO for a bad envelope (not a map, 'id' missing or not an
 * unsigned integer, 'op' missing, not a string or empty); GA_EBADARG when
 * 'args' is not a map.  Unknown keys are ignored (forward compatibility). */
int ctl_parse_request(const msgpack_object *o, uint64_t *id, const char **op, size_t *oplen,
                      const msgpack_object **args, char *err, size_t errlen);

/* Validate a decoded response object.
 *   id      out: the id (0 first; the daemon answers undecodable frames with 0)
 *   ok      out: 1 for success, 0 for an error response
 *   result  out (ok=1): the result object, pointing into o
 *   code    out (ok=0): the negative GA_E* code
 *   msg     out (ok=0): the message, pointing into o, not NUL-terminated; msglen bytes
 *   err     out: on failure a reason, e.g. "response: 'result' missing"
 * Outputs not applicable to the response kind are left untouched.
 * Returns 0 or GA_EPROTO. */
int ctl_parse_response(const msgpack_object *o, uint64_t *id, int *ok, const msgpack_object **result,
                       int64_t *code, const char **msg, size_t *msglen, char *err, size_t errlen);

/* The error's "name" ("EBADOP") of an error response that passed
 * ctl_parse_response(), pointing into o and not NUL-terminated; NULL with
 * *len 0 if absent.  Clients show it; it is informational, code is the truth. */
const char *ctl_response_error_name(const msgpack_object *o, size_t *len);

#endif
