/* fuzz_ctl.c — libFuzzer target for the control protocol's decoding
 * (proto/PROTOCOL.md; proto/ctl_proto.c, proto/mp_util.c), as the daemon's
 * control server and gpuaggctl apply it: the input is a byte stream cut
 * into frames with mp_frame_scan(), each frame unpacked by msgpack-c and
 * read as a request (ctl_parse_request) and as a response
 * (ctl_parse_response, ctl_response_error_name); a request's args are read
 * with the mp_util getters the op handlers use, and printed as JSON as
 * gpuaggctl does (tools/gpuaggctl/mp_json.c, through jansson).  Besides
 * the sanitizers' findings, a broken promise aborts: a return code outside
 * the documented ones, an error text not NUL-terminated within its buffer,
 * an op of length 0 accepted, args that are not a map, a response error
 * code that is not negative.
 * fuzz-sources: tools/gpuaggctl/mp_json.c
 * fuzz-libs: -ljansson -lnettle
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_frame.h"
#include "proto/mp_util.h"
#include "tools/gpuaggctl/mp_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static void check_err(const char *err, size_t errlen)
{
    if (!memchr(err, '\0', errlen))
        abort();
}

/* The keys the op handlers read (daemon/control/control_ops*.c). */
static void read_args(const msgpack_object *args)
{
    static const char *const keys[] = { "metric", "granularity", "method", "from", "to", "limit",
                                        "kind", "id", "params", "input", "n", "wait", "prefix",
                                        "timeout_ms", "name" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *s;
        size_t len;
        int64_t iv;
        uint64_t uv;
        double dv;
        int bv;
        int r = mp_get_str(args, keys[i], &s, &len);
        if (r == 0 && len && !s)
            abort();
        (void)mp_get_int(args, keys[i], &iv);
        (void)mp_get_uint(args, keys[i], &uv);
        (void)mp_get_double(args, keys[i], &dv);
        (void)mp_get_bool(args, keys[i], &bv);
        const msgpack_object *v = mp_map_get(args, keys[i]);
        if (v)
            (void)mp_str_eq(v, keys[i]);
    }
    mp_json_write(args, devnull, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0;
    if (!devnull && !(devnull = fopen("/dev/null", "w")))
        abort();
    while (pos < size) {
        size_t fl = 0;
        int r = mp_frame_scan(data + pos, size - pos, 65536, &fl);
        if (r != 1)
            break;
        msgpack_unpacked msg;
        msgpack_unpacked_init(&msg);
        size_t off = 0;
        if (msgpack_unpack_next(&msg, (const char *)data + pos, fl, &off) ==
            MSGPACK_UNPACK_SUCCESS) {
            char err[256];
            uint64_t id = 7;
            const char *op = NULL;
            size_t oplen = 0;
            const msgpack_object *args = NULL;
            memset(err, 'x', sizeof err);
            int rc = ctl_parse_request(&msg.data, &id, &op, &oplen, &args, err, sizeof err);
            if (rc != 0 && rc != GA_EPROTO && rc != GA_EBADARG)
                abort();
            if (rc < 0)
                check_err(err, sizeof err);
            if (rc == 0 && (!op || oplen == 0))
                abort();
            if (rc == 0 && args) {
                if (args->type != MSGPACK_OBJECT_MAP)
                    abort();
                read_args(args);
            }
            int ok = -1;
            const msgpack_object *result = NULL;
            int64_t code = 0;
            const char *m = NULL;
            size_t mlen = 0;
            memset(err, 'x', sizeof err);
            rc = ctl_parse_response(&msg.data, &id, &ok, &result, &code, &m, &mlen, err,
                                    sizeof err);
            if (rc != 0 && rc != GA_EPROTO)
                abort();
            if (rc < 0)
                check_err(err, sizeof err);
            if (rc == 0 && ok == 1 && !result)
                abort();
            if (rc == 0 && ok == 0) {
                if (code >= 0 || (mlen && !m))
                    abort();
                size_t nlen = 0;
                const char *name = ctl_response_error_name(&msg.data, &nlen);
                if (!name && nlen)
                    abort();
            }
            if (rc == 0 && ok == 1)
                mp_json_write(result, devnull, 0);
        }
        msgpack_unpacked_destroy(&msg);
        pos += fl;
    }
    return 0;
}
