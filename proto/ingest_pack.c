/* ingest_pack.c — ingest protocol v1 encoders (see ingest_proto.h and
 * proto/INGEST.md).  Map keys are packed in the order the document shows,
 * so the output is byte-identical to msgpack-python's packb() of the same
 * dict (tests/unit/test_ingest_proto.c checks this). */
#include "proto/ingest_proto.h"

#include <string.h>

#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "proto/ts_parse.h"

void ing_pack_hello_client(msgpack_packer *pk, const char *client, const char *token)
{
    msgpack_pack_map(pk, token ? 4 : 3);
    mp_pack_kv_str(pk, "type", "hello");
    mp_pack_kv_uint(pk, "version", ING_PROTO_VERSION);
    mp_pack_kv_str(pk, "client", client);
    if (token)
        mp_pack_kv_str(pk, "token", token);
}

void ing_pack_hello_server(msgpack_packer *pk, const char *server, uint64_t max_frame,
                           uint64_t max_inflight)
{
    msgpack_pack_map(pk, 5);
    mp_pack_kv_str(pk, "type", "hello");
    mp_pack_kv_uint(pk, "version", ING_PROTO_VERSION);
    mp_pack_kv_str(pk, "server", server);
    mp_pack_kv_uint(pk, "max_frame", max_frame);
    mp_pack_kv_uint(pk, "max_inflight", max_inflight);
}

static void pack_ts(msgpack_packer *pk, int64_t ts, enum ing_ts_form form)
{
    char buf[TS_RFC3339_LEN + 1];
    switch (form) {
    case ING_TS_SECONDS:
        msgpack_pack_double(pk, (double)ts / 1e9);
        break;
    case ING_TS_RFC3339:
        ts_format_rfc3339(ts, buf, sizeof buf);
        msgpack_pack_str_with_body(pk, buf, TS_RFC3339_LEN);
        break;
    default:
        msgpack_pack_int64(pk, ts);
        break;
    }
}

void ing_pack_points_friendly(msgpack_packer *pk, uint64_t seq, uint32_t nnames,
                              const char *const *names, const uint32_t *counts,
                              const int64_t *ts, const double *value, enum ing_ts_form form)
{
    size_t k = 0;
    msgpack_pack_map(pk, 3);
    mp_pack_kv_str(pk, "type", "points");
    mp_pack_kv_uint(pk, "seq", seq);
    mp_pack_cstr(pk, "metrics");
    msgpack_pack_array(pk, nnames);
    for (uint32_t i = 0; i < nnames; i++) {
        msgpack_pack_map(pk, 2);
        mp_pack_kv_str(pk, "metric", names[i]);
        mp_pack_cstr(pk, "points");
        msgpack_pack_array(pk, counts[i]);
        for (uint32_t j = 0; j < counts[i]; j++, k++) {
            msgpack_pack_array(pk, 2);
            pack_ts(pk, ts[k], form);
            msgpack_pack_double(pk, value[k]);
        }
    }
}

/* Pack n elements of width 4 or 8 bytes as one little-endian bin body. */
static void pack_le_bin(msgpack_packer *pk, const void *src, size_t n, size_t width)
{
    msgpack_pack_bin(pk, n * width);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n)
        msgpack_pack_bin_body(pk, src, n * width);
#else
    const uint8_t *s = src;
    uint8_t buf[512];
    for (size_t i = 0; i < n; i += sizeof buf / width) {
        size_t m = n - i < sizeof buf / width ? n - i : sizeof buf / width;
        for (size_t j = 0; j < m; j++)
            for (size_t b = 0; b < width; b++)
                buf[j * width + b] = s[(i + j) * width + width - 1 - b];
        msgpack_pack_bin_body(pk, buf, m * width);
    }
#endif
}

void ing_pack_points_columnar(msgpack_packer *pk, uint64_t seq, uint32_t nnames,
                              const char *const *names, const uint32_t *index,
                              const uint32_t *counts, size_t n, const int64_t *ts,
                              const double *value)
{
    msgpack_pack_map(pk, 6);
    mp_pack_kv_str(pk, "type", "points");
    mp_pack_kv_uint(pk, "seq", seq);
    mp_pack_cstr(pk, "names");
    msgpack_pack_array(pk, nnames);
    for (uint32_t i = 0; i < nnames; i++)
        mp_pack_cstr(pk, names[i]);
    if (index) {
        mp_pack_cstr(pk, "index");
        pack_le_bin(pk, index, n, 4);
    } else {
        mp_pack_cstr(pk, "counts");
        msgpack_pack_array(pk, nnames);
        for (uint32_t i = 0; i < nnames; i++)
            msgpack_pack_uint32(pk, counts ? counts[i] : 0);
    }
    mp_pack_cstr(pk, "ts");
    pack_le_bin(pk, ts, n, 8);
    mp_pack_cstr(pk, "values");
    pack_le_bin(pk, value, n, 8);
}

static void pack_points(msgpack_packer *pk, const char *key, size_t n, const struct ing_reject *p)
{
    mp_pack_cstr(pk, key);
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) {
        msgpack_pack_map(pk, 2);
        mp_pack_kv_uint(pk, "index", p[i].index);
        mp_pack_kv_str(pk, "reason", p[i].reason);
    }
}

void ing_pack_ack_late(msgpack_packer *pk, uint64_t seq, uint64_t accepted, size_t nrejected,
                       const struct ing_reject *rejected, size_t nlate, const struct ing_reject *late)
{
    msgpack_pack_map(pk, nlate ? 5 : 4);
    mp_pack_kv_str(pk, "type", "ack");
    mp_pack_kv_uint(pk, "seq", seq);
    mp_pack_kv_uint(pk, "accepted", accepted);
    pack_points(pk, "rejected", nrejected, rejected);
    if (nlate)
        pack_points(pk, "late", nlate, late);
}

void ing_pack_ack(msgpack_packer *pk, uint64_t seq, uint64_t accepted, size_t nrejected,
                  const struct ing_reject *rejected)
{
    ing_pack_ack_late(pk, seq, accepted, nrejected, rejected, 0, NULL);
}

void ing_pack_error(msgpack_packer *pk, int code, const char *message, int has_seq, uint64_t seq)
{
    msgpack_pack_map(pk, has_seq ? 5 : 4);
    mp_pack_kv_str(pk, "type", "error");
    mp_pack_kv_int(pk, "code", code);
    mp_pack_kv_str(pk, "name", ga_errname(code));
    mp_pack_kv_str(pk, "message", message ? message : ga_strerror(code));
    if (has_seq)
        mp_pack_kv_uint(pk, "seq", seq);
}
