/* uuid.h — name-based UUIDs (RFC 4122 §4.3: version 3 with MD5, version 5
 * with SHA-1) and their text form, computed by libuuid
 * (uuid_generate_md5/uuid_generate_sha1).  The digests serve ids only; they
 * are no security boundary.
 *
 * Two ids are built with them: a metric's id (version 3 of its name in
 * GA_METRIC_NS, computed by the daemon and stored in metrics.uuid) and a
 * Gnocchi resource id (version 5, ga_resource_uuid). */
#ifndef GA_UUID_H
#define GA_UUID_H

#include <stddef.h>
#include <stdint.h>

#define GA_UUID_STR 37                   /* 36 characters and the NUL */

/* The namespace of metric ids (docs/API.md): a metric's id is
 * uuid.uuid3(uuid.UUID(GA_METRIC_NS), name) in Python, the column
 * metrics.uuid, and gpuagg_metric_uuid(name) in SQL
 * (storage/sql/0007_http_api.sql writes the namespace out in hex). */
#define GA_METRIC_NS "5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47"

/* One piece of a name: the name hashed is the pieces one after the other. */
struct ga_uuid_part {
    const void *p;
    size_t len;
};

/* The version-3 (MD5) or version-5 (SHA-1) UUID of namespace ns[16]
 * followed by parts[0..n), as 16 bytes in network order, into out.
 * version is 3 or 5.  Returns 0, or GA_ENOMEM when the pieces' total
 * (joined in a buffer of its own beyond 512 bytes) cannot be allocated. */
int ga_uuid_named(int version, const uint8_t ns[16], const struct ga_uuid_part *parts, size_t n,
                  uint8_t out[16]);
/* Its text form (lower-case, hyphenated) in out[GA_UUID_STR]. */
void ga_uuid_format(const uint8_t u[16], char out[GA_UUID_STR]);

/* A metric's id: the version-3 UUID of name[0..len) in GA_METRIC_NS. */
void ga_metric_uuid(const char *name, size_t len, uint8_t out[16]);

/* 1 if s is a UUID in any form Python's uuid.UUID() accepts that matters
 * here (32 hex digits with or without the 4 dashes, optional braces,
 * optional "urn:uuid:"); the canonical lower-case form in out.  0 else. */
int ga_uuid_parse(const char *s, char out[GA_UUID_STR]);
/* Gnocchi's ResourceUUID(value, creator): value itself when a UUID, else
 * uuid5(RESOURCE_ID_NAMESPACE, value + "\0" + creator), creator "" or
 * NULL for None.  Returns 0, or GA_EINVAL when value has a '/' or is
 * longer than 255 bytes, GA_ENOMEM (why set). */
int ga_resource_uuid(const char *value, const char *creator, char out[GA_UUID_STR], char *why,
                     size_t whylen);

#endif
