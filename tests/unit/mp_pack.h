/* mp_pack.h — tests: a msgpack packer into a fresh buffer, and the decoded
 * object of what was packed (pk_begin, pack, pk_decode, pk_end). */
#ifndef GA_TEST_MP_PACK_H
#define GA_TEST_MP_PACK_H

#include <msgpack.h>

#include "tests/unit/harness.h"

struct pk {
    msgpack_sbuffer sb;
    msgpack_packer p;
    msgpack_zone zone;
    msgpack_object obj;
};

static inline msgpack_packer *pk_begin(struct pk *k)
{
    msgpack_sbuffer_init(&k->sb);
    msgpack_packer_init(&k->p, &k->sb, msgpack_sbuffer_write);
    msgpack_zone_init(&k->zone, 1024);
    return &k->p;
}

static inline const msgpack_object *pk_decode(struct pk *k)
{
    size_t off = 0;
    int rc = msgpack_unpack(k->sb.data, k->sb.size, &off, &k->zone, &k->obj);
    CHECK_INT(rc, MSGPACK_UNPACK_SUCCESS);
    CHECK_INT(off, k->sb.size);
    return &k->obj;
}

static inline void pk_end(struct pk *k)
{
    msgpack_zone_destroy(&k->zone);
    msgpack_sbuffer_destroy(&k->sb);
}

#endif
