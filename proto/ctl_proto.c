/* ctl_proto.c — control protocol envelope: pack requests/responses, validate
 * decoded ones (see ctl_proto.h and proto/PROTOCOL.md). */
#include "proto/ctl_proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/mp_util.h"

void ctl_pack_request_head(msgpack_packer *pk, uint64_t id, const char *op, int has_args)
{
    msgpack_pack_map(pk, has_args ? 3 : 2);
    mp_pack_kv_uint(pk, "id", id);
    mp_pack_kv_str(pk, "op", op);
    if (has_args)
        mp_pack_cstr(pk, "args");
}

void ctl_pack_ok_head(msgpack_packer *pk, uint64_t id)
{
    msgpack_pack_map(pk, 3);
    mp_pack_kv_uint(pk, "id", id);
    mp_pack_kv_bool(pk, "ok", 1);
    mp_pack_cstr(pk, "result");
}

void ctl_pack_error(msgpack_packer *pk, uint64_t id, int code, const char *message)
{
    msgpack_pack_map(pk, 3);
    mp_pack_kv_uint(pk, "id", id);
    mp_pack_kv_bool(pk, "ok", 0);
    mp_pack_cstr(pk, "error");
    msgpack_pack_map(pk, 3);
    mp_pack_kv_int(pk, "code", code);
    mp_pack_kv_str(pk, "name", ga_errname(code));
    mp_pack_kv_str(pk, "message", message ? message : ga_strerror(code));
}

/* Read "id" of a request or response map; what = "request"/"response". */
static int parse_id(const msgpack_object *o, uint64_t *id, const char *what, char *err, size_t errlen)
{
    int rc = mp_get_uint(o, "id", id);
    if (rc == GA_ENOENT)
        return ga_fail(GA_EPROTO, err, errlen, "%s: 'id' missing", what);
    if (rc < 0)
        return ga_fail(GA_EPROTO, err, errlen, "%s: 'id' must be an unsigned integer", what);
    return 0;
}

int ctl_parse_request(const msgpack_object *o, uint64_t *id, const char **op, size_t *oplen,
                      const msgpack_object **args, char *err, size_t errlen)
{
    *id = 0;
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return ga_fail(GA_EPROTO, err, errlen, "request: not a map");
    int rc = parse_id(o, id, "request", err, errlen);
    if (rc < 0)
        return rc;
    const char *s;
    size_t n;
    rc = mp_get_str(o, "op", &s, &n);
    if (rc == GA_ENOENT)
        return ga_fail(GA_EPROTO, err, errlen, "request: 'op' missing");
    if (rc < 0)
        return ga_fail(GA_EPROTO, err, errlen, "request: 'op' must be a string");
    if (n == 0)
        return ga_fail(GA_EPROTO, err, errlen, "request: 'op' is empty");
    const msgpack_object *a = mp_map_get(o, "args");
    if (a && a->type == MSGPACK_OBJECT_NIL)
        a = NULL;
    if (a && a->type != MSGPACK_OBJECT_MAP)
        return ga_fail(GA_EBADARG, err, errlen, "request: 'args' must be a map");
    *op = s;
    *oplen = n;
    *args = a;
    return 0;
}

int ctl_parse_response(const msgpack_object *o, uint64_t *id, int *ok, const msgpack_object **result,
                       int64_t *code, const char **msg, size_t *msglen, char *err, size_t errlen)
{
    *id = 0;
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return ga_fail(GA_EPROTO, err, errlen, "response: not a map");
    int rc = parse_id(o, id, "response", err, errlen);
    if (rc < 0)
        return rc;
    int b;
    rc = mp_get_bool(o, "ok", &b);
    if (rc == GA_ENOENT)
        return ga_fail(GA_EPROTO, err, errlen, "response: 'ok' missing");
    if (rc < 0)
        return ga_fail(GA_EPROTO, err, errlen, "response: 'ok' must be a boolean");
    if (b) {
        const msgpack_object *r = mp_map_get(o, "result");
        if (!r)
            return ga_fail(GA_EPROTO, err, errlen, "response: 'result' missing");
        *ok = 1;
        *result = r;
        return 0;
    }
    const msgpack_object *e = mp_map_get(o, "error");
    if (!e || e->type == MSGPACK_OBJECT_NIL)
        return ga_fail(GA_EPROTO, err, errlen, "response: 'error' missing");
    if (e->type != MSGPACK_OBJECT_MAP)
        return ga_fail(GA_EPROTO, err, errlen, "response: 'error' must be a map");
    int64_t c;
    rc = mp_get_int(e, "code", &c);
    if (rc == GA_ENOENT)
        return ga_fail(GA_EPROTO, err, errlen, "response: 'error.code' missing");
    if (rc < 0 || c >= 0)
        return ga_fail(GA_EPROTO, err, errlen, "response: 'error.code' must be a negative integer");
    const char *m;
    size_t mlen;
    rc = mp_get_str(e, "message", &m, &mlen);
    if (rc == GA_ENOENT)
        return ga_fail(GA_EPROTO, err, errlen, "response: 'error.message' missing");
    if (rc < 0)
        return ga_fail(GA_EPROTO, err, errlen, "response: 'error.message' must be a string");
    *ok = 0;
    *code = c;
    *msg = m;
    *msglen = mlen;
    return 0;
}

const char *ctl_response_error_name(const msgpack_object *o, size_t *len)
{
    const char *s = NULL;
    *len = 0;
    if (mp_get_str(mp_map_get(o, "error"), "name", &s, len) < 0) {
        *len = 0;
        return NULL;
    }
    return s;
}
