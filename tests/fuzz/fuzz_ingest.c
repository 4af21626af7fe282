/* fuzz_ingest.c — libFuzzer target for the ingest protocol decoder
 * (proto/ingest_*.c, proto/INGEST.md).
 *
 * Each input is decoded twice: whole, as ing_decode() may be handed any
 * bytes, and as a stream — split into frames with mp_frame_scan() the way
 * the daemon reads a socket, each frame decoded from its own exact-size heap
 * copy (so ASan sees any over-read).  Besides the sanitizers' findings
 * (crash, over-read, leak, undefined behaviour), a broken promise aborts:
 *   - a failure without a reason, or with a code other than GA_EPROTO,
 *     GA_ETOOBIG, GA_ENOMEM;
 *   - an accepted batch whose names are not 1..255 bytes that
 *     name_check() accepts, whose points have a name index out of range, a
 *     negative timestamp, one more than max_future_s ahead of the limits'
 *     clock or a non-finite value, whose rejections are not in increasing
 *     index order with a reason, or that holds more points than max_points;
 *   - a decoded message that, encoded again with the ing_pack_* encoders
 *     (points as columnar), does not decode to the same thing. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "proto/ga_err.h"
#include "proto/ingest_proto.h"
#include "proto/mp_frame.h"
#include "proto/name_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The clock at 2026-11-21T15:04:05Z and limits.max_future_s one day, so
 * that the bound ahead of the clock is checked (seed: points_future). */
static const struct ing_limits lim = { .max_points = 4096, .max_names = 256,
                                       .max_frame = 1 << 16, .now_ns = 1795273445000000000LL,
                                       .max_future_s = 86400 };

static void check_batch(const struct ing_batch *b)
{
    if (b->n + b->nrejected > lim.max_points || b->nnames > lim.max_names)
        abort();
    for (uint32_t i = 0; i < b->nnames; i++)
        if (b->name_len[i] == 0 || b->name_len[i] > ING_NAME_MAX ||
            strlen(b->names[i]) != b->name_len[i] ||
            name_check(b->names[i], b->name_len[i], NULL, NULL) != NAME_CHECK_OK)
            abort();
    for (size_t k = 0; k < b->n; k++)
        if (b->name_idx[k] >= b->nnames || b->ts[k] < 0 || !isfinite(b->value[k]) ||
            ing_ts_too_far_ahead(&lim, b->ts[k]))
            abort();
    for (size_t i = 0; i < b->nrejected; i++)
        if (!b->rejected[i].reason[0] || strlen(b->rejected[i].reason) > ING_REASON_MAX ||
            (i && b->rejected[i].index <= b->rejected[i - 1].index))
            abort();
}

/* Pack m again and decode the result into *again; abort if that fails. */
static void repack(const struct ing_msg *m, struct ing_msg *again)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    char err[256];
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    const struct ing_batch *b = &m->u.points;
    switch (m->type) {
    case ING_HELLO:
        if (m->u.hello.from_server)
            ing_pack_hello_server(&pk, m->u.hello.server, m->u.hello.max_frame,
                                  m->u.hello.max_inflight);
        else
            ing_pack_hello_client(&pk, m->u.hello.client,
                                  m->u.hello.has_token ? m->u.hello.token : NULL);
        break;
    case ING_POINTS:
        ing_pack_points_columnar(&pk, b->seq, b->nnames, b->names, b->name_idx, NULL, b->n, b->ts,
                                 b->value);
        break;
    case ING_ACK:
        ing_pack_ack(&pk, m->u.ack.seq, m->u.ack.accepted, m->u.ack.nrejected, m->u.ack.rejected);
        break;
    case ING_ERROR:
        ing_pack_error(&pk, (int)m->u.error.code, m->u.error.message, m->u.error.has_seq,
                       m->u.error.seq);
        break;
    }
    struct ing_limits big = lim;
    big.max_frame = SIZE_MAX;           /* a re-encoded ack may be larger than its source */
    if (ing_decode(sb.data, sb.size, &big, again, err, sizeof err) != (int)m->type)
        abort();
    msgpack_sbuffer_destroy(&sb);
}

static void check_same(const struct ing_msg *a, const struct ing_msg *b)
{
    const struct ing_batch *x = &a->u.points, *y = &b->u.points;
    switch (a->type) {
    case ING_HELLO:
        if (memcmp(&a->u.hello, &b->u.hello, sizeof a->u.hello) != 0)
            abort();
        break;
    case ING_POINTS:
        if (x->seq != y->seq || x->n != y->n || x->nnames != y->nnames || y->nrejected)
            abort();
        for (uint32_t i = 0; i < x->nnames; i++)
            if (strcmp(x->names[i], y->names[i]) != 0)
                abort();
        if (x->n && (memcmp(x->ts, y->ts, x->n * 8) || memcmp(x->value, y->value, x->n * 8) ||
                     memcmp(x->name_idx, y->name_idx, x->n * 4)))
            abort();
        break;
    case ING_ACK:
        if (a->u.ack.seq != b->u.ack.seq || a->u.ack.accepted != b->u.ack.accepted ||
            a->u.ack.nrejected != b->u.ack.nrejected)
            abort();
        for (size_t i = 0; i < a->u.ack.nrejected; i++)
            if (a->u.ack.rejected[i].index != b->u.ack.rejected[i].index ||
                strcmp(a->u.ack.rejected[i].reason, b->u.ack.rejected[i].reason) != 0)
                abort();
        break;
    case ING_ERROR:
        if (a->u.error.code != b->u.error.code || a->u.error.has_seq != b->u.error.has_seq ||
            a->u.error.seq != b->u.error.seq)
            abort();
        break;
    }
}

static void check_one(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    struct ing_msg m, again;
    char err[256] = "";
    if (size)
        memcpy(copy, data, size);
    int rc = ing_decode(copy, size, &lim, &m, err, sizeof err);
    if (rc < 0) {
        if (!err[0] || (rc != GA_EPROTO && rc != GA_ETOOBIG && rc != GA_ENOMEM))
            abort();
    } else {
        if (rc > ING_ERROR || (int)m.type != rc)
            abort();
        if (rc == ING_POINTS)
            check_batch(&m.u.points);
        repack(&m, &again);
        check_same(&m, &again);
        ing_msg_free(&again);
    }
    ing_msg_free(&m);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_one(data, size);
    size_t off = 0, fl;
    while (off < size && mp_frame_scan(data + off, size - off, lim.max_frame, &fl) == 1) {
        if (fl != size)                 /* the whole input was checked above */
            check_one(data + off, fl);
        off += fl;
    }
    return 0;
}
