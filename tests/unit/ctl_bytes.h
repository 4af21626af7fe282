/* ctl_bytes.h — helpers of the tests that check the control protocol's
 * bytes against the hex examples of proto/PROTOCOL.md: pack into a buffer,
 * compare, and wrap a result in the server's response envelope. */
#ifndef GA_TEST_CTL_BYTES_H
#define GA_TEST_CTL_BYTES_H

#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control_priv.h"

struct buf {
    msgpack_sbuffer sb;
    msgpack_packer pk;
};

static msgpack_packer *begin(struct buf *b)
{
    msgpack_sbuffer_init(&b->sb);
    msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
    return &b->pk;
}

static int same(const char *got, size_t n, const uint8_t *want, size_t wn)
{
    return got && n == wn && memcmp(got, want, n) == 0;
}

/* The whole response as the server sends it: envelope around the result. */
static int response_is(uint64_t id, struct buf *result, const uint8_t *want, size_t wn)
{
    size_t len = 0;
    char *data = ctl_pack_response(id, 0, result->sb.data, result->sb.size, NULL, &len);
    int ok = same(data, len, want, wn);
    free(data);
    msgpack_sbuffer_destroy(&result->sb);
    return ok;
}

#endif
