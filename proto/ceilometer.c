/* ceilometer.c — Ceilometer udp:// publisher datagrams: decode, verify the
 * signature, extract one sample (see ceilometer.h).
 *
 * The signature is reproduced from ceilometer/publisher/utils.py
 * (Ceilometer 19, Debian 12):
 *     for name, value in recursive_keypairs(message):   # sorted, "a:b"
 *         if name == 'message_signature': continue
 *         hmac.update(str(name).encode()); hmac.update(str(value).encode())
 * where recursive_keypairs yields decode_unicode(value) for lists and
 * tuples.  proto/pystr.c renders the str() forms; nettle computes the
 * HMAC-SHA256 and compares it in constant time. */
#include "proto/ceilometer.h"

#include <math.h>
#include <nettle/base16.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/ga_time.h"
#include "proto/mp_frame.h"
#include "proto/mp_util.h"
#include "proto/name_check.h"
#include "proto/pystr.h"
#include "proto/ts_parse.h"

static const char *const reject_names[CEILO_NREASONS] = {
    [CEILO_OK] = "ok",
    [CEILO_NOT_MSGPACK] = "not_msgpack",
    [CEILO_NOT_MAP] = "not_map",
    [CEILO_MISSING_FIELD] = "missing_field",
    [CEILO_BAD_FIELD] = "bad_field",
    [CEILO_UNSIGNED] = "unsigned",
    [CEILO_BAD_SIGNATURE] = "bad_signature",
    [CEILO_BAD_TIMESTAMP] = "bad_timestamp",
    [CEILO_BAD_VALUE] = "bad_value",
    [CEILO_OUT_OF_RANGE] = "out_of_range",
    [CEILO_FUTURE] = "future",
};

const char *ceilo_reject_name(int r)
{
    return r >= 0 && r < CEILO_NREASONS ? reject_names[r] : "unknown";
}

/* ---- timestamps ---- */

/* ---- signature ---- */

/* recursive_keypairs() over map m with names prefixed by prefix[0..plen),
 * feeding str(name) and str(value) of each leaf to the HMAC. */
static int sign_map(struct hmac_sha256_ctx *mac, const msgpack_object *m, struct pystr_buf *prefix,
                    struct pystr_buf *val, const char **why)
{
    uint32_t *order = NULL;
    size_t plen = prefix->len;
    int rc = pystr_sorted_keys(m, &order, why);
    for (uint32_t i = 0; i < m->via.map.size && rc == 0; i++) {
        const msgpack_object_kv *kv = &m->via.map.ptr[order[i]];
        prefix->len = plen;
        rc = pystr_str(prefix, &kv->key, 0);
        if (rc)
            break;
        if (kv->val.type == MSGPACK_OBJECT_MAP) {
            rc = pystr_append(prefix, ":", 1);
            if (rc == 0)
                rc = sign_map(mac, &kv->val, prefix, val, why);
            continue;
        }
        if (strcmp(prefix->p, "message_signature") == 0 && prefix->len == 17)
            continue;
        val->len = 0;
        rc = pystr_str(val, &kv->val, kv->val.type == MSGPACK_OBJECT_ARRAY ? PYSTR_CEILO_DECODE : 0);
        if (rc)
            break;
        hmac_sha256_update(mac, prefix->len, (const uint8_t *)prefix->p);
        hmac_sha256_update(mac, val->len, (const uint8_t *)val->p);
    }
    if (rc == GA_EBADARG && !*why)
        *why = prefix->why ? prefix->why : val->why;
    prefix->len = plen;
    free(order);
    return rc;
}

int ceilo_signature(const msgpack_object *msg, const char *secret, size_t secret_len,
                    char hex[65], const char **why)
{
    struct hmac_sha256_ctx mac;
    struct pystr_buf prefix, val;
    uint8_t d[SHA256_DIGEST_SIZE];
    *why = NULL;
    if (!msg || msg->type != MSGPACK_OBJECT_MAP)
        return GA_EINVAL;
    pystr_buf_init(&prefix);
    pystr_buf_init(&val);
    hmac_sha256_set_key(&mac, secret_len, (const uint8_t *)secret);
    int rc = sign_map(&mac, msg, &prefix, &val, why);
    if (rc == 0) {
        hmac_sha256_digest(&mac, sizeof d, d);
        base16_encode_update(hex, sizeof d, d);    /* lower-case, as Python's hexdigest() */
        hex[2 * sizeof d] = '\0';
    }
    pystr_buf_free(&prefix);
    pystr_buf_free(&val);
    return rc;
}

/* ---- decoding ---- */

static int reject(int reason, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int reject(int reason, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return reason;
}

/* Check message_signature against the one computed from msg. */
static int verify(const msgpack_object *msg, const char *secret, size_t secret_len, char *err,
                  size_t errlen)
{
    const msgpack_object *sig = mp_map_get(msg, "message_signature");
    if (!sig || sig->type == MSGPACK_OBJECT_NIL ||
        ((sig->type == MSGPACK_OBJECT_STR || sig->type == MSGPACK_OBJECT_BIN) && sig->via.bin.size == 0))
        return reject(CEILO_UNSIGNED, err, errlen, "message_signature absent or empty");
    if (sig->type != MSGPACK_OBJECT_STR && sig->type != MSGPACK_OBJECT_BIN)
        return reject(CEILO_BAD_SIGNATURE, err, errlen, "message_signature is not a string");
    char hex[65];
    const char *why = NULL;
    int rc = ceilo_signature(msg, secret, secret_len, hex, &why);
    if (rc == GA_ENOMEM)
        return reject(CEILO_BAD_FIELD, err, errlen, "out of memory computing the signature");
    if (rc)
        return reject(CEILO_BAD_FIELD, err, errlen, "cannot compute signature: %s", why ? why : "?");
    if (sig->via.bin.size != 64 || !memeql_sec(hex, sig->via.bin.ptr, 64))
        return reject(CEILO_BAD_SIGNATURE, err, errlen, "message_signature does not match");
    return CEILO_OK;
}

/* A required non-empty str field of the characters a name may hold
 * (name_check.h: valid UTF-8, no controls, no bidirectional or invisible
 * formatting characters). */
static int get_name(const msgpack_object *msg, const char *key, const char **s, size_t *n, char *err,
                    size_t errlen)
{
    char why[128];
    int rc = mp_get_str(msg, key, s, n);
    if (rc == GA_ENOENT)
        return reject(CEILO_MISSING_FIELD, err, errlen, "%s missing", key);
    if (rc)
        return reject(CEILO_BAD_FIELD, err, errlen, "%s is not a string", key);
    if (*n == 0)
        return reject(CEILO_BAD_FIELD, err, errlen, "%s is empty", key);
    if (name_check_reason(key, *s, *n, why, sizeof why))
        return reject(CEILO_BAD_FIELD, err, errlen, "%s", why);
    return CEILO_OK;
}

/* Fill out from the fields of msg. */
static int extract(const msgpack_object *msg, struct ceilo_sample *out, char *err, size_t errlen)
{
    const char *name, *rid, *type, *ts;
    size_t nname, nrid, ntype, nts;
    int rc = get_name(msg, "counter_name", &name, &nname, err, errlen);
    if (rc == CEILO_OK)
        rc = get_name(msg, "resource_id", &rid, &nrid, err, errlen);
    if (rc)
        return rc;
    if (nrid + 1 + nname >= sizeof out->metric)
        return reject(CEILO_BAD_FIELD, err, errlen, "resource_id/counter_name longer than %d bytes",
                      CEILO_METRIC_MAX - 1);
    rc = mp_get_str(msg, "counter_type", &type, &ntype);
    if (rc == GA_ENOENT)
        return reject(CEILO_MISSING_FIELD, err, errlen, "counter_type missing");
    if (rc || !((ntype == 5 && !memcmp(type, "gauge", 5)) || (ntype == 5 && !memcmp(type, "delta", 5)) ||
                (ntype == 10 && !memcmp(type, "cumulative", 10))))
        return reject(CEILO_BAD_FIELD, err, errlen, "counter_type is not gauge, delta or cumulative");

    const msgpack_object *vol = mp_map_get(msg, "counter_volume");
    if (!vol)
        return reject(CEILO_MISSING_FIELD, err, errlen, "counter_volume missing");
    double v;
    if (vol->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        v = (double)vol->via.u64;
    else if (vol->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        v = (double)vol->via.i64;
    else if (vol->type == MSGPACK_OBJECT_FLOAT32 || vol->type == MSGPACK_OBJECT_FLOAT64)
        v = vol->via.f64;
    else
        return reject(CEILO_BAD_VALUE, err, errlen, "counter_volume is not a number");
    if (!isfinite(v))
        return reject(CEILO_BAD_VALUE, err, errlen, "counter_volume is not finite");

    rc = mp_get_str(msg, "timestamp", &ts, &nts);
    if (rc == GA_ENOENT)
        return reject(CEILO_MISSING_FIELD, err, errlen, "timestamp missing");
    int64_t ns = 0;
    if (rc == 0 && (rc = ts_parse_iso8601(ts, nts, &ns, NULL, 0)) == GA_ERANGE && ns > 0)
        rc = 0;                         /* after 2262: past GA_TS_MAX too */
    if (rc)
        return reject(CEILO_BAD_TIMESTAMP, err, errlen, "timestamp is not ISO 8601 after 1677");
    if (ns > GA_TS_MAX)
        return reject(CEILO_OUT_OF_RANGE, err, errlen, "timestamp after " GA_TS_MAX_TEXT);

    memcpy(out->metric, rid, nrid);
    out->metric[nrid] = '/';
    memcpy(out->metric + nrid + 1, name, nname);
    out->metric[nrid + 1 + nname] = '\0';
    memcpy(out->counter_type, type, ntype);
    out->counter_type[ntype] = '\0';
    out->ts_ns = ns;
    out->value = v;
    return CEILO_OK;
}

int ceilo_decode(const void *buf, size_t len, const char *secret, size_t secret_len,
                 struct ceilo_sample *out, char *err, size_t errlen)
{
    msgpack_unpacked msg;
    size_t frame_len = 0, off = 0;
    uint32_t *order = NULL;
    const char *why = NULL;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    msgpack_unpacked_init(&msg);
    /* the scan bounds every declared length by the datagram before msgpack-c
     * allocates for it */
    rc = mp_frame_scan(buf, len, len, &frame_len);
    if (rc != 1 || frame_len != len) {
        rc = reject(CEILO_NOT_MSGPACK, err, errlen, "%s",
                    rc == 0 || rc == GA_ETOOBIG ? "truncated msgpack (or nested too deep)" : rc == 1 ? "bytes after the msgpack object" : "invalid msgpack");
        goto out;
    }
    if (msgpack_unpack_next(&msg, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len) {
        rc = reject(CEILO_NOT_MSGPACK, err, errlen, "msgpack does not decode (nested too deep?)");
        goto out;
    }
    if (msg.data.type != MSGPACK_OBJECT_MAP) {
        rc = reject(CEILO_NOT_MAP, err, errlen, "datagram is not a msgpack map");
        goto out;
    }
    /* a Python dict has unique keys: refuse what could be read two ways */
    int krc = pystr_sorted_keys(&msg.data, &order, &why);
    if (krc) {
        rc = reject(CEILO_BAD_FIELD, err, errlen, "%s", krc == GA_ENOMEM ? "out of memory" : why);
        goto out;
    }
    if (secret && secret_len) {
        rc = verify(&msg.data, secret, secret_len, err, errlen);
        if (rc)
            goto out;
    }
    rc = extract(&msg.data, out, err, errlen);
out:
    free(order);
    msgpack_unpacked_destroy(&msg);
    return rc;
}
