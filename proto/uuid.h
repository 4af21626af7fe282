/* uuid.h — name-based UUIDs (RFC 4122 §4.3: version 3 with MD5, version 5
 * with SHA-1) and their text form, written here so that ids need no crypto
 * library.  The digests serve ids only; they are no security boundary.
 *
 * Two ids are built with them: a metric's id (version 3 of its name in
 * GA_METRIC_NS, computed by the daemon and stored in metrics.uuid) and a
 * Gnocchi resource id (version 5, daemon/http/api_util.c). */
#ifndef GA_UUID_H
#define GA_UUID_H

#include <stddef.h>
#include <stdint.h>

#define GA_UUID_STR 37                   /* 36 characters and the NUL */

/* The namespace of metric ids (docs/API.md): a metric's id is
 * uuid.uuid3(uuid.UUID(GA_METRIC_NS), name) in Python, the column
 * metrics.uuid and gpuagg_metric_uuid(name) in SQL. */
#define GA_METRIC_NS "5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47"
#define GA_METRIC_NS_HEX "5c1e5b8e07c54c53a2a53f2b1d6e9a47"

/* One piece of a name: the name hashed is the pieces one after the other. */
struct ga_uuid_part {
    const void *p;
    size_t len;
};

/* The version-3 (MD5) or version-5 (SHA-1) UUID of namespace ns[16]
 * followed by parts[0..n), as 16 bytes in network order.  version is 3 or
 * 5. */
void ga_uuid_named(int version, const uint8_t ns[16], const struct ga_uuid_part *parts, size_t n,
                   uint8_t out[16]);
/* Its text form (lower-case, hyphenated) in out[GA_UUID_STR]. */
void ga_uuid_format(const uint8_t u[16], char out[GA_UUID_STR]);

/* A metric's id: ga_uuid_named(3, GA_METRIC_NS, name[0..len)). */
void ga_metric_uuid(const char *name, size_t len, uint8_t out[16]);

/* The raw MD5 (RFC 1321) and SHA-1 (FIPS 180-4) digests of the parts, for
 * the tests against published vectors. */
void ga_md5(const struct ga_uuid_part *parts, size_t n, uint8_t out[16]);
void ga_sha1(const struct ga_uuid_part *parts, size_t n, uint8_t out[20]);

#endif
