/* ceilometer.h — decode and verify OpenStack Ceilometer udp:// publisher
 * datagrams.
 *
 * Ceilometer's UDPPublisher (ceilometer/publisher/udp.py) sends each sample
 * as one datagram holding one msgpack map, msgpack.dumps(msg,
 * use_bin_type=True), where msg is utils.meter_message_from_counter():
 *   source, counter_name, counter_type, counter_unit, counter_volume,
 *   user_id, project_id, resource_id, timestamp, resource_metadata,
 *   message_id, monotonic_time, message_signature
 * message_signature is hex(HMAC-SHA256(telemetry_secret, …)) over every
 * other field: keys sorted, nested maps flattened to "parent:child" names,
 * and for each (name, value) str(name) then str(value) as UTF-8
 * (utils.compute_signature / recursive_keypairs; lists are rendered as
 * str(decode_unicode(list)), where str and bytes swap).  An empty secret on
 * the sender gives "".  A key whose value is an empty dict adds nothing, so
 * it is not covered by the signature (Ceilometer's design, kept here).
 *
 * Worked example (tests/unit/test_ceilometer.c test_signature_example):
 *   84                                 map of 4
 *     a1 62  82                        "b": map of 2
 *        a1 63  92 01 a1 78              "c": [1, "x"]
 *        a1 64  cb 3fb999999999999a      "d": 0.1
 *     a1 61  01                        "a": 1
 *     a1 65  c0                        "e": None
 *     a1 66  c4 01 00                  "f": b"\x00"
 * hashes the bytes  a1b:c[1, b'x']b:d0.1eNonefb'\x00'  and with the secret
 * "k" gives f447730d10cba49dc98a54362edd4aa6bc5b763239d9adb41df1bb2646f94607.
 *
 * The sample becomes one point of the metric resource_id + "/" +
 * counter_name at the sample's timestamp. */
#ifndef GA_CEILOMETER_H
#define GA_CEILOMETER_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#define CEILO_METRIC_MAX 512            /* metric name incl. NUL */

struct ceilo_sample {
    char metric[CEILO_METRIC_MAX];      /* resource_id "/" counter_name */
    char counter_type[16];              /* "gauge", "delta" or "cumulative" */
    int64_t ts_ns;                      /* Unix time, ns */
    double value;                       /* counter_volume, finite */
};

/* Why a datagram was refused; CEILO_OK is 0.  Each has a stats name. */
enum ceilo_reject {
    CEILO_OK,
    CEILO_NOT_MSGPACK,      /* not exactly one well-formed msgpack object  */
    CEILO_NOT_MAP,          /* the object is not a map                     */
    CEILO_MISSING_FIELD,    /* a required field absent or nil              */
    CEILO_BAD_FIELD,        /* a field of the wrong type or form; a value
                               the signature cannot be computed over      */
    CEILO_UNSIGNED,         /* secret set, message_signature absent/empty  */
    CEILO_BAD_SIGNATURE,    /* secret set, signature does not match        */
    CEILO_BAD_TIMESTAMP,    /* timestamp not ISO 8601 or out of range      */
    CEILO_BAD_VALUE,        /* counter_volume None, not a number, NaN/inf  */
    CEILO_OUT_OF_RANGE,     /* timestamp after GA_TS_MAX (proto/ga_time.h) */
    CEILO_FUTURE,           /* timestamp more than limits.max_future_s ahead of
                               the receiver's clock: not ceilo_decode's (it has
                               no clock), the listener's, with
                               ing_ts_too_far_ahead() (ingest_proto.h) */
    CEILO_NREASONS
};

/* The stats key of a reason: "ok", "not_msgpack", "not_map",
 * "missing_field", "bad_field", "unsigned", "bad_signature",
 * "bad_timestamp", "bad_value", "out_of_range", "future"; "unknown" out
 * of range.
 * Static storage. */
const char *ceilo_reject_name(int r);

/* Decode one datagram.
 *   buf, len     the datagram (exactly one msgpack object, nothing after)
 *   secret       the telemetry secret, secret_len bytes; NULL or length 0
 *                means no verification (message_signature is ignored)
 *   out          the sample, filled only when CEILO_OK is returned
 *   err, errlen  a NUL-terminated reason naming the field at fault (may be
 *                NULL/0); "" on success
 * With a secret the signature is checked first (UNSIGNED, BAD_SIGNATURE),
 * before any field is trusted.  Required: counter_name, resource_id (non-
 * empty str, of the characters name_check.h allows: valid UTF-8 without
 * controls or bidirectional and invisible formatting characters; err names
 * the code point), counter_type, counter_volume (int or
 * float), timestamp (str: YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM|±HHMM],
 * no zone meaning UTC, as Ceilometer's isoformat()).  A timestamp after
 * GA_TS_MAX (2200-01-01T00:00:00Z, proto/ga_time.h) is OUT_OF_RANGE; one
 * before 1970 is decoded (the engine reports it as a late point,
 * before_epoch).
 * Returns CEILO_OK (0) or a reason > 0.  Allocates only temporarily; buf is
 * not kept. */
int ceilo_decode(const void *buf, size_t len, const char *secret, size_t secret_len,
                 struct ceilo_sample *out, char *err, size_t errlen);

/* Compute Ceilometer's signature of the decoded message map msg (any
 * message_signature key in it is skipped) into hex[65].
 * Returns 0, GA_EBADARG when a value cannot be rendered as Python would
 * (why set to static text), GA_ENOMEM, or GA_EINVAL if msg is not a map.
 * Exposed for tests and tools; ceilo_decode() calls it. */
int ceilo_signature(const msgpack_object *msg, const char *secret, size_t secret_len,
                    char hex[65], const char **why);

#endif
