/* ingest_proto.h — ingest protocol v1: the one decoder and encoder of the
 * messages producers and gpuaggd exchange on ingest sockets (Unix and TCP
 * streams).  proto/INGEST.md is the specification, down to the byte.
 *
 *   hello   {"type":"hello","version":1,"client":str[,"token":str]}        client → server
 *           {"type":"hello","version":1,"server":str,"max_frame":uint,
 *            "max_inflight":uint}                                          server → client
 *   points  {"type":"points","seq":uint,"metrics":[{"metric":str,
 *            "points":[[ts,value],...]},...]}                              friendly form
 *           {"type":"points","seq":uint,"names":[str,...],
 *            "index":bin u32le[] | "counts":[uint,...],
 *            "ts":bin i64le[],"values":bin f64le[]}                        columnar form
 *   ack     {"type":"ack","seq":uint,"accepted":uint,
 *            "rejected":[{"index":uint,"reason":str},...]}                 server → client
 *   error   {"type":"error","code":int,"name":str,"message":str[,"seq":uint]}
 *
 * Messages follow each other on the stream with no extra framing; a reader
 * finds their ends with mp_frame_scan(buf, len, max_frame, &n) and passes
 * each whole frame to ing_decode().
 *
 * Decoding costs no msgpack object tree for points (the only big message):
 * a bounds-checked pull reader walks the frame once to validate and size it
 * and once to fill exact-size output arrays, so a batch needs its output
 * (20 bytes a point, the names, 16 bytes a rejection) plus, while decoding,
 * 24 bytes per "metrics" entry; columnar ts/values are memcpy'd.
 * hello/ack/error go through msgpack_unpack().  ing_decode() is safe on any
 * byte sequence (tests/fuzz/fuzz_ingest.c). */
#ifndef GA_INGEST_PROTO_H
#define GA_INGEST_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#define ING_PROTO_VERSION 1
#define ING_NAME_MAX 255            /* metric, client, server name and token, bytes */
#define ING_SMALL_FRAME_MAX 65536   /* hello and error frames, bytes */

/* Limits ing_decode() enforces; a frame over one of the first three is
 * GA_ETOOBIG.  The last two bound how far ahead of the receiver's clock a
 * point may be (proto/INGEST.md §4): a point with ts > now_ns +
 * max_future_s seconds is rejected (ING_R_FUTURE_*).  proto/ has no clock:
 * the receiver passes its own with each frame. */
struct ing_limits {
    size_t max_points;      /* points in one batch, accepted + rejected */
    size_t max_names;       /* entries of "metrics" / "names" */
    size_t max_frame;       /* bytes of one frame */
    int64_t now_ns;         /* the receiver's clock, ns since the epoch */
    int64_t max_future_s;   /* limits.max_future_s; 0 = no bound but GA_TS_MAX */
};
/* 4 Mi points, 1 Mi names, 128 MiB frames, no bound ahead of a clock. */
extern const struct ing_limits ing_default_limits;

/* 1 when ts is more than lim->max_future_s seconds after lim->now_ns (and
 * max_future_s > 0).  Any ts and clock; no overflow. */
int ing_ts_too_far_ahead(const struct ing_limits *lim, int64_t ts);

/* A point refused by ing_ts_too_far_ahead() gets the reason
 *   "timestamp 2199-01-01T00:00:00Z is more than limits.max_future_s =
 *    86400 s ahead"
 * (the timestamp exact, its fraction without trailing zeros).
 * ing_reason_is_future() tells such a reason apart from the others, for
 * counting. */
#define ING_R_FUTURE_MID " is more than limits.max_future_s = "
int ing_reason_is_future(const char *reason);

/* A rejected point: its flat index in the batch and a NUL-terminated reason
 * (at most ING_REASON_MAX bytes), owned by the batch or message. */
#define ING_REASON_MAX 95
struct ing_reject {
    uint64_t index;
    const char *reason;
};

struct ing_text;    /* private: storage of reasons that are not static */

/* A decoded points batch.  Owned: freed by ing_batch_free() (or
 * ing_msg_free() on the message holding it).
 *   names[i]      valid metric names (non-empty, <= 255 bytes, UTF-8
 *                 without the characters name_check.h refuses),
 *                 NUL-terminated copies, in input
 *                 order; rejected names are left out.  Not deduplicated: a
 *                 name sent twice appears twice.
 *   name_idx[k]   index into names of accepted point k; ts[k] ns since the
 *                 epoch (>= 0); value[k] finite.  Accepted points only, in
 *                 arrival order; ts/value 8-byte aligned; all three NULL
 *                 when the batch had no points.
 *   rejected      per-point rejections in index order (see INGEST.md §5). */
struct ing_batch {
    uint64_t seq;
    uint32_t nnames;
    const char **names;
    uint32_t *name_len;
    size_t n;
    uint32_t *name_idx;
    int64_t *ts;
    double *value;
    size_t nrejected;
    struct ing_reject *rejected;
    /* private */
    size_t rej_cap;
    struct ing_text *text;
};

struct ing_hello {
    int from_server;                    /* 1: server hello, 0: client hello */
    uint64_t version;
    char client[ING_NAME_MAX + 1];      /* client hello */
    char token[ING_NAME_MAX + 1];       /* client hello; "" when absent */
    int has_token;
    char server[ING_NAME_MAX + 1];      /* server hello */
    uint64_t max_frame, max_inflight;   /* server hello */
};

struct ing_ack {
    uint64_t seq, accepted;
    size_t nrejected;
    struct ing_reject *rejected;        /* reasons owned by the message */
    struct ing_text *text;              /* private */
};

struct ing_error {
    int64_t code;                       /* negative GA_E* */
    char name[32];                      /* "EPROTO"; truncated if longer */
    char message[512];                  /* truncated if longer */
    int has_seq;
    uint64_t seq;
};

enum ing_type { ING_HELLO, ING_POINTS, ING_ACK, ING_ERROR };

struct ing_msg {
    enum ing_type type;
    int has_seq;        /* points/ack/error: 'seq' was readable — also set when */
    uint64_t seq;       /* ing_decode() fails, so an error reply can carry it */
    union {
        struct ing_hello hello;
        struct ing_batch points;
        struct ing_ack ack;
        struct ing_error error;
    } u;
};

/* Decode one complete frame.
 *   frame, len   exactly one msgpack object (as delimited by mp_frame_scan);
 *                trailing bytes are an error.  Not retained: the result
 *                copies everything it needs.
 *   lim          limits; NULL for ing_default_limits
 *   out          out: the message; on success the caller owns it and must
 *                call ing_msg_free().  On failure it holds nothing to free
 *                (ing_msg_free() on it is harmless); out->has_seq/seq tell
 *                whether the frame's 'seq' was readable, for the error reply
 *   err          out: on failure a reason naming the field, e.g.
 *                "points: 'ts' is 24 bytes, expected 8 × 4 points";
 *                may be NULL when errlen is 0
 * Per-point problems (bad timestamp, one too far ahead of lim's clock,
 * value, metric name) do not fail the batch: they are listed in
 * out->u.points.rejected.
 * Returns the message type (ING_HELLO..ING_ERROR, >= 0), or GA_EPROTO for a
 * malformed frame, GA_ETOOBIG over a limit, GA_ENOMEM. */
int ing_decode(const void *frame, size_t len, const struct ing_limits *lim, struct ing_msg *out,
               char *err, size_t errlen);

/* Free what a decoded message owns and zero it.  NULL is fine. */
void ing_msg_free(struct ing_msg *m);
/* Free what a batch owns and zero it.  NULL is fine. */
void ing_batch_free(struct ing_batch *b);

/* Build a batch by hand (Ceilometer datagrams, tests) with the layout
 * ing_decode() gives, so ing_batch_free() frees it: room for nnames names
 * of name_bytes characters in all (NULs not counted) and n points.  Fill
 * names with ing_batch_add_name() (nnames counts them), then name_idx, ts,
 * value and n.  Returns 0 or GA_ENOMEM (b left empty). */
int ing_batch_init(struct ing_batch *b, uint32_t nnames, size_t name_bytes, size_t n);
/* Append a name (len bytes, copied) within the room ing_batch_init made. */
void ing_batch_add_name(struct ing_batch *b, const char *name, uint32_t len);

/* Take out of b every point of the names i with drop[i] != 0 (drop has
 * nnames entries) and those names: each point becomes a rejection with
 * `reason` (copied) at its flat index, among the others in order.  Returns
 * the points taken out (0: b unchanged), or GA_ENOMEM (b unchanged). */
long ing_batch_drop_names(struct ing_batch *b, const uint8_t *drop, const char *reason);

/* ---- encoders: each packs one whole message with pk ---- */

/* Client hello; token NULL leaves "token" out.  client non-NULL. */
void ing_pack_hello_client(msgpack_packer *pk, const char *client, const char *token);
/* Server hello; server non-NULL. */
void ing_pack_hello_server(msgpack_packer *pk, const char *server, uint64_t max_frame,
                           uint64_t max_inflight);

/* How the friendly form writes timestamps. */
enum ing_ts_form {
    ING_TS_NS,          /* int: ns since the epoch (exact) */
    ING_TS_SECONDS,     /* float64 seconds (rounded to the double) */
    ING_TS_RFC3339,     /* "2026-11-21T15:04:05.123456789Z" (exact) */
};

/* Friendly points: one {"metric","points"} entry per name; the points are
 * grouped by name in order, counts[i] of them for names[i].
 *   names      nnames NUL-terminated names
 *   counts     nnames counts; their sum is the number of points
 *   ts, value  the points, count-sum of each; values packed as float64 */
void ing_pack_points_friendly(msgpack_packer *pk, uint64_t seq, uint32_t nnames,
                              const char *const *names, const uint32_t *counts,
                              const int64_t *ts, const double *value, enum ing_ts_form form);

/* Columnar points.  At most one of index / counts is non-NULL:
 *   index      n per-point indexes into names ("index", u32 LE bin)
 *   counts     nnames counts, points grouped by name ("counts" array);
 *              both NULL packs counts of 0 (n must be 0: an empty batch,
 *              as a decoded batch of no points has name_idx NULL)
 *   ts, value  n each, packed as i64 LE / f64 LE bins */
void ing_pack_points_columnar(msgpack_packer *pk, uint64_t seq, uint32_t nnames,
                              const char *const *names, const uint32_t *index,
                              const uint32_t *counts, size_t n, const int64_t *ts,
                              const double *value);

/* Ack; rejected may be NULL when nrejected is 0. */
void ing_pack_ack(msgpack_packer *pk, uint64_t seq, uint64_t accepted, size_t nrejected,
                  const struct ing_reject *rejected);
/* The same with the accepted points known to be behind their metric's
 * window: key "late" (left out when nlate is 0), shaped as "rejected". */
void ing_pack_ack_late(msgpack_packer *pk, uint64_t seq, uint64_t accepted, size_t nrejected,
                       const struct ing_reject *rejected, size_t nlate, const struct ing_reject *late);

/* Error: code a negative GA_E*, "name" ga_errname(code), message NULL packs
 * ga_strerror(code); has_seq 0 leaves "seq" out. */
void ing_pack_error(msgpack_packer *pk, int code, const char *message, int has_seq, uint64_t seq);

#endif
