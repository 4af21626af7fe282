/* ingest_proto.c — ingest protocol v1 decoder entry: frame checks, message
 * type dispatch, hello/ack/error (through msgpack-c), freeing (see
 * ingest_proto.h and proto/INGEST.md).  Points are decoded in
 * ingest_points.c and ingest_columnar.c with the pull reader of
 * ingest_reader.c; the encoders are in ingest_pack.c. */
#include "proto/ingest_proto.h"

#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/ingest_priv.h"
#include "proto/mp_frame.h"
#include "proto/mp_util.h"

const struct ing_limits ing_default_limits = {
    .max_points = (size_t)4 << 20,
    .max_names = (size_t)1 << 20,
    .max_frame = (size_t)128 << 20,
};

#define BAD(...) ing_fail(GA_EPROTO, err, errlen, __VA_ARGS__)

/* Copy str field `key` of o into dst[ING_NAME_MAX + 1]: present, a string,
 * at most 255 bytes, no NUL.  what = message name for errors. */
static int name_field(const msgpack_object *o, const char *what, const char *key, char *dst,
                      int optional, char *err, size_t errlen)
{
    const char *s;
    size_t n;
    int rc = mp_get_str(o, key, &s, &n);
    if (rc == GA_ENOENT && optional)
        return 0;
    if (rc == GA_ENOENT)
        return BAD("%s: '%s' missing", what, key);
    if (rc < 0)
        return BAD("%s: '%s' must be a string", what, key);
    if (n > ING_NAME_MAX)
        return BAD("%s: '%s' is %zu bytes, at most %d", what, key, n, ING_NAME_MAX);
    if (memchr(s, '\0', n))
        return BAD("%s: '%s' contains a NUL byte", what, key);
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 1;
}

static int uint_field(const msgpack_object *o, const char *what, const char *key, uint64_t *v,
                      char *err, size_t errlen)
{
    int rc = mp_get_uint(o, key, v);
    if (rc == GA_ENOENT)
        return BAD("%s: '%s' missing", what, key);
    if (rc < 0)
        return BAD("%s: '%s' must be an unsigned integer", what, key);
    return 0;
}

static int str_field(const msgpack_object *o, const char *what, const char *key, const char **s,
                     size_t *n, char *err, size_t errlen)
{
    int rc = mp_get_str(o, key, s, n);
    if (rc == GA_ENOENT)
        return BAD("%s: '%s' missing", what, key);
    if (rc < 0)
        return BAD("%s: '%s' must be a string", what, key);
    return 0;
}

/* Copy a str object into dst[cap], truncating; NULs stay (harmless). */
static void copy_trunc(const char *s, size_t n, char *dst, size_t cap)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static int decode_hello(const msgpack_object *o, struct ing_hello *h, char *err, size_t errlen)
{
    int rc;
    if ((rc = uint_field(o, "hello", "version", &h->version, err, errlen)) < 0)
        return rc;
    if (h->version != ING_PROTO_VERSION)
        return BAD("hello: version %llu not supported (this end speaks %d)",
                   (unsigned long long)h->version, ING_PROTO_VERSION);
    const msgpack_object *sv = mp_map_get(o, "server");
    if (sv && sv->type != MSGPACK_OBJECT_NIL) {
        h->from_server = 1;
        if ((rc = name_field(o, "hello", "server", h->server, 0, err, errlen)) < 0 ||
            (rc = uint_field(o, "hello", "max_frame", &h->max_frame, err, errlen)) < 0 ||
            (rc = uint_field(o, "hello", "max_inflight", &h->max_inflight, err, errlen)) < 0)
            return rc;
        return 0;
    }
    if ((rc = name_field(o, "hello", "client", h->client, 0, err, errlen)) < 0)
        return rc;
    if ((rc = name_field(o, "hello", "token", h->token, 1, err, errlen)) < 0)
        return rc;
    h->has_token = rc == 1;
    return 0;
}

static int decode_ack(const msgpack_object *o, const struct ing_limits *lim, struct ing_msg *m,
                      char *err, size_t errlen)
{
    struct ing_ack *a = &m->u.ack;
    size_t cap = 0;
    int rc;
    if ((rc = uint_field(o, "ack", "seq", &a->seq, err, errlen)) < 0)
        return rc;
    m->has_seq = 1;
    m->seq = a->seq;
    if ((rc = uint_field(o, "ack", "accepted", &a->accepted, err, errlen)) < 0)
        return rc;
    const msgpack_object *rej = mp_map_get(o, "rejected");
    if (!rej || rej->type == MSGPACK_OBJECT_NIL)
        return BAD("ack: 'rejected' missing");
    if (rej->type != MSGPACK_OBJECT_ARRAY)
        return BAD("ack: 'rejected' must be an array");
    if (rej->via.array.size > lim->max_points)
        return ing_fail(GA_ETOOBIG, err, errlen, "ack: 'rejected' has %u entries, at most %zu",
                        rej->via.array.size, lim->max_points);
    for (uint32_t i = 0; i < rej->via.array.size; i++) {
        const msgpack_object *e = &rej->via.array.ptr[i];
        uint64_t index;
        const char *s, *copy;
        size_t n;
        if (e->type != MSGPACK_OBJECT_MAP)
            return BAD("ack: 'rejected'[%u] must be a map", i);
        if (mp_get_uint(e, "index", &index) < 0)
            return BAD("ack: 'rejected'[%u]: 'index' must be an unsigned integer", i);
        if (mp_get_str(e, "reason", &s, &n) < 0)
            return BAD("ack: 'rejected'[%u]: 'reason' must be a string", i);
        if (!(copy = ing_text_dup(&a->text, s, n)))
            return GA_ENOMEM;
        if ((rc = ing_reject_push(&a->rejected, &a->nrejected, &cap, index, copy)) < 0)
            return rc;
    }
    return 0;
}

static int decode_error(const msgpack_object *o, struct ing_msg *m, char *err, size_t errlen)
{
    struct ing_error *e = &m->u.error;
    const char *s;
    size_t n;
    int rc = mp_get_int(o, "code", &e->code);
    if (rc == GA_ENOENT)
        return BAD("error: 'code' missing");
    if (rc < 0 || e->code >= 0 || e->code < INT32_MIN)
        return BAD("error: 'code' must be a negative 32-bit integer");
    if ((rc = str_field(o, "error", "name", &s, &n, err, errlen)) < 0)
        return rc;
    copy_trunc(s, n, e->name, sizeof e->name);
    if ((rc = str_field(o, "error", "message", &s, &n, err, errlen)) < 0)
        return rc;
    copy_trunc(s, n, e->message, sizeof e->message);
    rc = mp_get_uint(o, "seq", &e->seq);
    if (rc != GA_ENOENT && rc < 0)
        return BAD("error: 'seq' must be an unsigned integer");
    e->has_seq = m->has_seq = rc == 0;
    m->seq = e->seq;
    return 0;
}

/* hello / ack / error: small maps, decoded with msgpack-c. */
static int decode_small(const void *frame, size_t len, enum ing_type type,
                        const struct ing_limits *lim, struct ing_msg *m, char *err, size_t errlen)
{
    static const char *const names[] = { "hello", "points", "ack", "error" };
    msgpack_unpacked u;
    size_t off = 0;
    int rc;

    if (type != ING_ACK && len > ING_SMALL_FRAME_MAX)
        return ing_fail(GA_ETOOBIG, err, errlen, "%s: frame is %zu bytes, at most %d",
                        names[type], len, ING_SMALL_FRAME_MAX);
    msgpack_unpacked_init(&u);
    if (msgpack_unpack_next(&u, frame, len, &off) != MSGPACK_UNPACK_SUCCESS) {
        /* the top-level walk limits the depth of each value, not of the
         * frame: a value at the limit inside the map is one too deep */
        size_t fl;
        if (mp_frame_scan(frame, len, SIZE_MAX, &fl) == GA_ETOOBIG)
            rc = ing_fail(GA_ETOOBIG, err, errlen, "frame: nested deeper than %d levels",
                          MP_FRAME_MAX_DEPTH);
        else
            rc = BAD("frame: msgpack-c cannot decode it");
        goto out;
    }
    switch (type) {
    case ING_HELLO: rc = decode_hello(&u.data, &m->u.hello, err, errlen); break;
    case ING_ACK: rc = decode_ack(&u.data, lim, m, err, errlen); break;
    default: rc = decode_error(&u.data, m, err, errlen); break;
    }
out:
    msgpack_unpacked_destroy(&u);
    return rc;
}

int ing_decode(const void *frame, size_t len, const struct ing_limits *lim, struct ing_msg *out,
               char *err, size_t errlen)
{
    static const char *const keys[] = { "type", "seq", "metrics", "names", "index", "counts",
                                        "ts", "values" };
    const uint8_t *v[8] = { NULL };
    const uint8_t *p = frame;
    struct ing_rd r = { p, p + len };
    struct ing_tok t;
    enum ing_type type;
    size_t fl = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if (!lim)
        lim = &ing_default_limits;
    if (len > lim->max_frame)
        return ing_fail(GA_ETOOBIG, err, errlen, "frame: %zu bytes, at most %zu", len,
                        lim->max_frame);
    /* one walk over the top-level map validates every value (they are
     * skipped with mp_frame_scan); only when it fails is the frame scanned
     * again to say why */
    t.kind = RK_NIL;
    if (ing_rd_next(&r, &t) < 0 || t.kind != RK_MAP || ing_rd_fields(&r, t.n, keys, v, 8) < 0) {
        rc = len ? mp_frame_scan(p, len, SIZE_MAX, &fl) : 0;
        if (rc == 0)
            return BAD("frame: truncated msgpack (%zu bytes)", len);
        if (rc == GA_EPROTO)
            return BAD("frame: invalid msgpack (type byte 0xc1)");
        if (rc < 0)
            return ing_fail(rc, err, errlen, "frame: nested deeper than %d levels",
                            MP_FRAME_MAX_DEPTH);
        if (fl == len)
            return BAD(t.kind != RK_MAP ? "message: not a map" : "frame: malformed msgpack");
        r.p = p + fl;
    }
    if (r.p != p + len)
        return BAD("frame: %zu bytes after the end of the message", (size_t)(p + len - r.p));
    if (!v[0])
        return BAD("message: 'type' missing");
    r = (struct ing_rd){ v[0], p + len };
    if (ing_rd_next(&r, &t) < 0 || t.kind != RK_STR)
        return BAD("message: 'type' must be a string");
    if (ing_tok_is(&t, "hello")) {
        type = ING_HELLO;
    } else if (ing_tok_is(&t, "points")) {
        type = ING_POINTS;
    } else if (ing_tok_is(&t, "ack")) {
        type = ING_ACK;
    } else if (ing_tok_is(&t, "error")) {
        type = ING_ERROR;
    } else {
        char shown[40];
        size_t k;
        for (k = 0; k < t.n && k + 1 < sizeof shown; k++)
            shown[k] = t.ptr[k] >= 0x20 && t.ptr[k] < 0x7f ? (char)t.ptr[k] : '?';
        shown[k] = '\0';
        return BAD("message: unknown type '%s'", shown);
    }
    out->type = type;
    if (type != ING_POINTS) {
        rc = decode_small(frame, len, type, lim, out, err, errlen);
    } else {
        struct ing_fields f = { v[1], v[2], v[3], v[4], v[5], v[6], v[7] };
        r = (struct ing_rd){ v[1], p + len };
        if (!v[1]) {
            rc = BAD("points: 'seq' missing");
        } else if (ing_rd_next(&r, &t) < 0 || t.kind != RK_UINT) {
            rc = BAD("points: 'seq' must be an unsigned integer");
        } else {
            out->has_seq = 1;
            out->seq = out->u.points.seq = t.u;
            rc = ing_decode_points(&f, p + len, lim, &out->u.points, err, errlen);
        }
    }
    if (rc < 0) {
        int has_seq = out->has_seq;
        uint64_t seq = out->seq;
        ing_msg_free(out);
        out->type = type;
        out->has_seq = has_seq;
        out->seq = seq;
        return rc;
    }
    return (int)type;
}

void ing_batch_free(struct ing_batch *b)
{
    if (!b)
        return;
    free((void *)b->names);     /* names, name_len and the characters */
    free(b->ts);                /* ts, value and name_idx */
    free(b->rejected);
    ing_text_free(&b->text);
    memset(b, 0, sizeof *b);
}

void ing_msg_free(struct ing_msg *m)
{
    if (!m)
        return;
    if (m->type == ING_POINTS) {
        ing_batch_free(&m->u.points);
    } else if (m->type == ING_ACK) {
        free(m->u.ack.rejected);
        ing_text_free(&m->u.ack.text);
    }
    memset(m, 0, sizeof *m);
}

/* Hand-built batches share the decoder's two blocks (ingest_points.c). */
int ing_batch_init(struct ing_batch *b, uint32_t nnames, size_t name_bytes, size_t n)
{
    memset(b, 0, sizeof *b);
    char *chars;
    if (ing_names_alloc(b, nnames, name_bytes, &chars) < 0)
        return GA_ENOMEM;
    if (ing_points_alloc(b, n) < 0) {
        free((void *)b->names);
        memset(b, 0, sizeof *b);
        return GA_ENOMEM;
    }
    (void)chars;                       /* ing_batch_add_name finds it again */
    return 0;
}

void ing_batch_add_name(struct ing_batch *b, const char *name, uint32_t len)
{
    char *chars;
    if (b->nnames == 0) {
        /* ing_names_alloc lays the characters after the length table, whose
         * size is the capacity passed to ing_batch_init: recompute it from
         * the block layout (name_len follows the pointers). */
        size_t cap = (size_t)((const char *)b->name_len - (const char *)b->names) / sizeof(char *);
        chars = (char *)(b->name_len + cap);
    } else {
        chars = (char *)b->names[b->nnames - 1] + b->name_len[b->nnames - 1] + 1;
    }
    ing_names_push(b, &chars, (const uint8_t *)name, len);
}
