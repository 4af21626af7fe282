/* test_uuid.c — name-based UUIDs against RFC 4122's and Python's
 * uuid.uuid3/uuid5 (names empty, short, and longer than the stack buffer),
 * a name given in pieces at every split, and metric ids. */
#include "tests/unit/harness.h"

#include <stdio.h>
#include <string.h>

#include "proto/uuid.h"

/* uuid.NAMESPACE_DNS */
static const uint8_t dns[16] = { 0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1,
                                 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8 };

static void named(int version, const char *name, size_t len, char out[GA_UUID_STR])
{
    struct ga_uuid_part p = { name, len };
    uint8_t u[16];
    CHECK_INT(ga_uuid_named(version, dns, &p, 1, u), 0);
    ga_uuid_format(u, out);
}

/* uuid.uuid3/uuid5(uuid.NAMESPACE_DNS, '0123456789' * 100): a name joined
 * in a buffer of its own; and the empty name */
static void test_long_and_empty_names(void)
{
    char name[1001], s[GA_UUID_STR];
    for (int i = 0; i < 1000; i++)
        name[i] = (char)('0' + i % 10);
    named(3, name, 1000, s);
    CHECK_STR(s, "86e36b12-0544-3f43-89c0-887c5bd2ae7e");
    named(5, name, 1000, s);
    CHECK_STR(s, "dd989f56-087d-5bf6-8f51-65ed6ea3326c");
    named(3, "", 0, s);
    CHECK_STR(s, "c87ee674-4ddc-3efe-a74e-dfe25da5d7b3");
    named(5, "", 0, s);
    CHECK_STR(s, "4ebd0208-8328-5d69-8c44-ec50939c0967");
}

/* a name in two pieces is the name of their concatenation, at every split */
static void test_splits(void)
{
    const char *m = "12345678901234567890123456789012345678901234567890123456789012345678901234567890";
    size_t len = strlen(m);
    for (int version = 3; version <= 5; version += 2) {
        uint8_t whole[16], d[16];
        struct ga_uuid_part one = { m, len };
        CHECK_INT(ga_uuid_named(version, dns, &one, 1, whole), 0);
        for (size_t k = 0; k <= len; k++) {
            struct ga_uuid_part two[2] = { { m, k }, { m + k, len - k } };
            CHECK_INT(ga_uuid_named(version, dns, two, 2, d), 0);
            CHECK(memcmp(d, whole, 16) == 0);
        }
    }
}

/* Python's documented examples: uuid.uuid3/uuid5(uuid.NAMESPACE_DNS,
 * 'python.org') */
static void test_named_uuids(void)
{
    char s[GA_UUID_STR];
    named(3, "python.org", 10, s);
    CHECK_STR(s, "6fa459ea-ee8a-3ca4-894e-db77e160355e");
    named(5, "python.org", 10, s);
    CHECK_STR(s, "886313e1-3b8a-5372-9b90-0c9aee199e5d");
}

/* uuid.uuid3(uuid.UUID(GA_METRIC_NS), name) */
static void test_metric_ids(void)
{
    static const struct {
        const char *name, *id;
    } v[] = {
        { "cpu.util", "185243d1-7e66-37d7-af73-799196d3195f" },
        { "host-0000001.cpu.util", "56c544ae-a003-3310-8493-5edd4429b1db" },
        { "m\xc3\xbcnchen.temp", "1230374f-96d0-3302-b78b-966ba39beabf" },
        { "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
          "xxxxxxxxxxxxxxxxxxx", "82aad069-b85b-3f08-a630-76f3306b358d" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t u[16];
        char s[GA_UUID_STR];
        ga_metric_uuid(v[i].name, strlen(v[i].name), u);
        ga_uuid_format(u, s);
        CHECK_STR(s, v[i].id);
    }
}

void run_tests(void)
{
    RUN(test_named_uuids);
    RUN(test_long_and_empty_names);
    RUN(test_splits);
    RUN(test_metric_ids);
}
