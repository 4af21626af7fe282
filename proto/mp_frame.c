/* mp_frame.c — msgpack frame boundary scanner (see mp_frame.h).
 *
 * Each object starts with a type byte that fixes how many header bytes follow
 * (length fields, the ext type) and whether a body of declared length or a
 * number of child objects comes after it.  The scanner walks objects in
 * order, keeping per open container the number of children still to come,
 * and the sum of those ("owed"): each owed child needs at least one byte, so
 * pos + this object's known size + owed is a lower bound on the frame size
 * that can be compared with max_len before any of those bytes arrive. */
#include "proto/mp_frame.h"

#include "proto/ga_err.h"

enum kind { K_FIXED, K_BODY, K_ARRAY, K_MAP, K_BAD };

struct head {
    enum kind kind;
    unsigned hdr;       /* bytes before the body: type byte, length, ext type */
    unsigned nlen;      /* size of the big-endian length/count field: 0,1,2,4 */
    uint32_t inl;       /* body length or count held in a fix* type byte */
};

static struct head classify(uint8_t b)
{
    if (b <= 0x7f || b >= 0xe0)                 /* positive / negative fixint */
        return (struct head){ K_FIXED, 1, 0, 0 };
    if (b <= 0x8f)
        return (struct head){ K_MAP, 1, 0, b & 0x0fu };
    if (b <= 0x9f)
        return (struct head){ K_ARRAY, 1, 0, b & 0x0fu };
    if (b <= 0xbf)
        return (struct head){ K_BODY, 1, 0, b & 0x1fu };
    switch (b) {
    case 0xc0: case 0xc2: case 0xc3: return (struct head){ K_FIXED, 1, 0, 0 };
    case 0xc4: return (struct head){ K_BODY, 2, 1, 0 };      /* bin 8  */
    case 0xc5: return (struct head){ K_BODY, 3, 2, 0 };      /* bin 16 */
    case 0xc6: return (struct head){ K_BODY, 5, 4, 0 };      /* bin 32 */
    case 0xc7: return (struct head){ K_BODY, 3, 1, 0 };      /* ext 8: len, type */
    case 0xc8: return (struct head){ K_BODY, 4, 2, 0 };      /* ext 16 */
    case 0xc9: return (struct head){ K_BODY, 6, 4, 0 };      /* ext 32 */
    case 0xca: return (struct head){ K_FIXED, 5, 0, 0 };     /* float 32 */
    case 0xcb: return (struct head){ K_FIXED, 9, 0, 0 };     /* float 64 */
    case 0xcc: case 0xd0: return (struct head){ K_FIXED, 2, 0, 0 };
    case 0xcd: case 0xd1: return (struct head){ K_FIXED, 3, 0, 0 };
    case 0xce: case 0xd2: return (struct head){ K_FIXED, 5, 0, 0 };
    case 0xcf: case 0xd3: return (struct head){ K_FIXED, 9, 0, 0 };
    case 0xd4: return (struct head){ K_FIXED, 3, 0, 0 };     /* fixext 1: type + 1 */
    case 0xd5: return (struct head){ K_FIXED, 4, 0, 0 };
    case 0xd6: return (struct head){ K_FIXED, 6, 0, 0 };
    case 0xd7: return (struct head){ K_FIXED, 10, 0, 0 };
    case 0xd8: return (struct head){ K_FIXED, 18, 0, 0 };
    case 0xd9: return (struct head){ K_BODY, 2, 1, 0 };      /* str 8  */
    case 0xda: return (struct head){ K_BODY, 3, 2, 0 };      /* str 16 */
    case 0xdb: return (struct head){ K_BODY, 5, 4, 0 };      /* str 32 */
    case 0xdc: return (struct head){ K_ARRAY, 3, 2, 0 };
    case 0xdd: return (struct head){ K_ARRAY, 5, 4, 0 };
    case 0xde: return (struct head){ K_MAP, 3, 2, 0 };
    case 0xdf: return (struct head){ K_MAP, 5, 4, 0 };
    default:   return (struct head){ K_BAD, 1, 0, 0 };       /* 0xc1 */
    }
}

static uint64_t load_be(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

int mp_frame_scan_resume(struct mp_scan *st, const uint8_t *buf, size_t len, size_t max_len,
                         size_t *frame_len)
{
    uint64_t *remain = st->remain;          /* children still to start, per open container */
    uint64_t max = max_len;

    for (;;) {
        /* start of one object at st->pos */
        if (st->depth > 0) {
            remain[st->depth - 1]--;
            st->owed--;
        }
        size_t pos = st->pos;
        if ((uint64_t)pos + 1 + st->owed > max)
            return GA_ETOOBIG;
        if (pos >= len)
            goto suspend;
        struct head h = classify(buf[pos]);
        if (h.kind == K_BAD)
            return GA_EPROTO;
        if ((h.kind == K_ARRAY || h.kind == K_MAP) && st->depth >= MP_FRAME_MAX_DEPTH)
            return GA_ETOOBIG;
        if ((uint64_t)pos + h.hdr + st->owed > max)
            return GA_ETOOBIG;
        if (h.hdr > len - pos)
            goto suspend;
        uint64_t n = h.nlen ? load_be(buf + pos + 1, h.nlen) : h.inl;

        if (h.kind == K_FIXED) {
            st->pos += h.hdr;
        } else if (h.kind == K_BODY) {
            if ((uint64_t)pos + h.hdr + n + st->owed > max)
                return GA_ETOOBIG;
            if (h.hdr + n > len - pos)
                goto suspend;
            st->pos += h.hdr + (size_t)n;
        } else {
            uint64_t items = h.kind == K_MAP ? 2 * n : n;
            if ((uint64_t)pos + h.hdr + items + st->owed > max)
                return GA_ETOOBIG;
            st->pos += h.hdr;
            if (items > 0) {
                remain[st->depth++] = items;
                st->owed += items;
                continue;
            }
        }
        /* one object complete: close every container it completed */
        while (st->depth > 0 && remain[st->depth - 1] == 0)
            st->depth--;
        if (st->depth == 0) {
            *frame_len = st->pos;
            *st = (struct mp_scan){ 0 };     /* ready for the next frame */
            return 1;
        }
        continue;
suspend:
        /* Not all of this object is here: leave the state at its start. */
        if (st->depth > 0) {
            remain[st->depth - 1]++;
            st->owed++;
        }
        return 0;
    }
}

int mp_frame_scan(const uint8_t *buf, size_t len, size_t max_len, size_t *frame_len)
{
    struct mp_scan st = { 0 };
    return mp_frame_scan_resume(&st, buf, len, max_len, frame_len);
}
