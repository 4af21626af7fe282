/* uuid.c — RFC 4122 name-based UUIDs through libuuid (see uuid.h). */
#include "proto/uuid.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

int ga_uuid_parse(const char *s, char out[GA_UUID_STR])
{
    char hex[33];
    int n = 0;
    if (strncasecmp(s, "urn:uuid:", 9) == 0)
        s += 9;
    size_t len = strlen(s);
    if (len && s[0] == '{') {
        if (s[len - 1] != '}')
            return 0;
        s++;
        len -= 2;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '-')
            continue;
        if (!isxdigit((unsigned char)s[i]) || n >= 32)
            return 0;
        hex[n++] = (char)tolower((unsigned char)s[i]);
    }
    if (n != 32)
        return 0;
    snprintf(out, GA_UUID_STR, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
    return 1;
}

/* Gnocchi's RESOURCE_ID_NAMESPACE, 0a7a15ff-aa13-4ac2-897c-9bdf30ce175b. */
static const unsigned char resource_ns[16] = { 0x0a, 0x7a, 0x15, 0xff, 0xaa, 0x13, 0x4a, 0xc2,
                                               0x89, 0x7c, 0x9b, 0xdf, 0x30, 0xce, 0x17, 0x5b };

int ga_resource_uuid(const char *value, const char *creator, char out[GA_UUID_STR], char *why,
                     size_t whylen)
{
    if (strchr(value, '/'))
        return ga_fail(GA_EINVAL, why, whylen, "'/' is not supported in resource id");
    if (ga_uuid_parse(value, out))
        return 0;
    if (strlen(value) > 255)
        return ga_fail(GA_EINVAL, why, whylen,
                       "transformable resource id >255 max allowed characters");
    static const char zero = 0;
    struct ga_uuid_part parts[3] = {
        { value, strlen(value) },
        { &zero, 1 },                          /* the "\x00" separator */
        { creator && creator[0] ? creator : &zero,
          creator && creator[0] ? strlen(creator) : 1 }, /* creator None is "\x00" */
    };
    uint8_t u[16];
    if (ga_uuid_named(5, resource_ns, parts, 3, u) < 0)
        return ga_fail(GA_ENOMEM, why, whylen, "out of memory deriving the resource id");
    ga_uuid_format(u, out);
    return 0;
}
