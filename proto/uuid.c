/* uuid.c — RFC 4122 name-based UUIDs through libuuid (see uuid.h). */
#include "proto/uuid.h"

#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "proto/ga_err.h"

_Static_assert(GA_UUID_STR == UUID_STR_LEN, "libuuid's text form is 36 characters and a NUL");

int ga_uuid_named(int version, const uint8_t ns[16], const struct ga_uuid_part *parts, size_t n,
                  uint8_t out[16])
{
    char small[512], *name = small;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += parts[i].len;
    if (len > sizeof small && !(name = malloc(len)))
        return GA_ENOMEM;
    len = 0;
    for (size_t i = 0; i < n; i++) {
        if (parts[i].len)
            memcpy(name + len, parts[i].p, parts[i].len);
        len += parts[i].len;
    }
    if (version == 5)
        uuid_generate_sha1(out, ns, name, len);
    else
        uuid_generate_md5(out, ns, name, len);
    if (name != small)
        free(name);
    return 0;
}

void ga_uuid_format(const uint8_t u[16], char out[GA_UUID_STR])
{
    uuid_unparse_lower(u, out);
}

void ga_metric_uuid(const char *name, size_t len, uint8_t out[16])
{
    static const uint8_t ns[16] = { 0x5c, 0x1e, 0x5b, 0x8e, 0x07, 0xc5, 0x4c, 0x53,
                                    0xa2, 0xa5, 0x3f, 0x2b, 0x1d, 0x6e, 0x9a, 0x47 };
    uuid_generate_md5(out, ns, name, len);
}
