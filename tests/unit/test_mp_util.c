/* test_mp_util.c — map getters (present, absent, nil, wrong type, range)
 * and packing helpers. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include <msgpack.h>

#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tests/unit/mp_pack.h"

static const msgpack_object *sample(struct pk *k)
{
    msgpack_packer *p = pk_begin(k);
    msgpack_pack_map(p, 12);
    mp_pack_kv_str(p, "name", "gpu0");
    mp_pack_kv_int(p, "neg", -42);
    mp_pack_kv_uint(p, "big", UINT64_MAX);
    mp_pack_kv_uint(p, "small", 7);
    mp_pack_kv_double(p, "ratio", 0.25);
    mp_pack_kv_bool(p, "on", 1);
    mp_pack_kv_bool(p, "off", 0);
    mp_pack_kv_str(p, "none", NULL);                    /* nil */
    mp_pack_cstr(p, "f32");
    msgpack_pack_float(p, 1.5f);
    mp_pack_cstr(p, "list");
    msgpack_pack_array(p, 0);
    mp_pack_kv_str(p, "", "empty key");
    mp_pack_kv_int(p, "name", 1);                       /* duplicate: first wins */
    return pk_decode(k);
}

static void test_map_get(void)
{
    struct pk k;
    const msgpack_object *m = sample(&k);
    CHECK(mp_map_get(m, "name") != NULL);
    CHECK(mp_str_eq(mp_map_get(m, "name"), "gpu0"));
    CHECK(mp_map_get(m, "nam") == NULL);                /* prefix is not a match */
    CHECK(mp_map_get(m, "names") == NULL);
    CHECK(mp_str_eq(mp_map_get(m, ""), "empty key"));
    CHECK(mp_map_get(m, "none") != NULL);               /* present, nil */
    CHECK_INT(mp_map_get(m, "none")->type, MSGPACK_OBJECT_NIL);
    CHECK(mp_map_get(NULL, "name") == NULL);
    CHECK(mp_map_get(mp_map_get(m, "list"), "x") == NULL);   /* not a map */
    CHECK(mp_map_get(m, NULL) == NULL);
    pk_end(&k);
}

static void test_get_str(void)
{
    struct pk k;
    const msgpack_object *m = sample(&k);
    const char *s = "untouched";
    size_t n = 99;
    CHECK_INT(mp_get_str(m, "name", &s, &n), 0);
    CHECK_INT(n, 4);
    CHECK(memcmp(s, "gpu0", 4) == 0);
    s = "untouched"; n = 99;
    CHECK_INT(mp_get_str(m, "missing", &s, &n), GA_ENOENT);
    CHECK_INT(mp_get_str(m, "none", &s, &n), GA_ENOENT);
    CHECK_INT(mp_get_str(m, "small", &s, &n), GA_EBADARG);
    CHECK_INT(mp_get_str(m, "list", &s, &n), GA_EBADARG);
    CHECK_INT(mp_get_str(NULL, "name", &s, &n), GA_ENOENT);
    CHECK_STR(s, "untouched");
    CHECK_INT(n, 99);
    pk_end(&k);
}

static void test_get_numbers(void)
{
    struct pk k;
    const msgpack_object *m = sample(&k);
    int64_t i = 5;
    uint64_t u = 5;
    double d = 5;
    CHECK_INT(mp_get_int(m, "neg", &i), 0);
    CHECK_INT(i, -42);
    CHECK_INT(mp_get_int(m, "small", &i), 0);
    CHECK_INT(i, 7);
    i = 5;
    CHECK_INT(mp_get_int(m, "big", &i), GA_ERANGE);      /* uint > INT64_MAX */
    CHECK_INT(mp_get_int(m, "ratio", &i), GA_EBADARG);
    CHECK_INT(mp_get_int(m, "name", &i), GA_EBADARG);
    CHECK_INT(mp_get_int(m, "on", &i), GA_EBADARG);
    CHECK_INT(mp_get_int(m, "missing", &i), GA_ENOENT);
    CHECK_INT(mp_get_int(m, "none", &i), GA_ENOENT);
    CHECK_INT(i, 5);

    CHECK_INT(mp_get_uint(m, "big", &u), 0);
    CHECK(u == UINT64_MAX);
    CHECK_INT(mp_get_uint(m, "small", &u), 0);
    CHECK_INT(u, 7);
    u = 5;
    CHECK_INT(mp_get_uint(m, "neg", &u), GA_ERANGE);
    CHECK_INT(mp_get_uint(m, "ratio", &u), GA_EBADARG);
    CHECK_INT(mp_get_uint(m, "missing", &u), GA_ENOENT);
    CHECK_INT(u, 5);

    CHECK_INT(mp_get_double(m, "ratio", &d), 0);
    CHECK(d == 0.25);
    CHECK_INT(mp_get_double(m, "f32", &d), 0);
    CHECK(d == 1.5);
    CHECK_INT(mp_get_double(m, "neg", &d), 0);           /* ints convert */
    CHECK(d == -42.0);
    CHECK_INT(mp_get_double(m, "big", &d), 0);
    CHECK(d == 18446744073709551615.0);
    d = 5;
    CHECK_INT(mp_get_double(m, "name", &d), GA_EBADARG);
    CHECK_INT(mp_get_double(m, "on", &d), GA_EBADARG);
    CHECK_INT(mp_get_double(m, "none", &d), GA_ENOENT);
    CHECK(d == 5);
    pk_end(&k);
}

static void test_get_bool_and_str_eq(void)
{
    struct pk k;
    const msgpack_object *m = sample(&k);
    int b = 7;
    CHECK_INT(mp_get_bool(m, "on", &b), 0);
    CHECK_INT(b, 1);
    CHECK_INT(mp_get_bool(m, "off", &b), 0);
    CHECK_INT(b, 0);
    b = 7;
    CHECK_INT(mp_get_bool(m, "small", &b), GA_EBADARG);  /* no int → bool coercion */
    CHECK_INT(mp_get_bool(m, "name", &b), GA_EBADARG);
    CHECK_INT(mp_get_bool(m, "missing", &b), GA_ENOENT);
    CHECK_INT(b, 7);

    CHECK(mp_str_eq(mp_map_get(m, "name"), "gpu0"));
    CHECK(!mp_str_eq(mp_map_get(m, "name"), "gpu"));
    CHECK(!mp_str_eq(mp_map_get(m, "name"), "gpu00"));
    CHECK(!mp_str_eq(mp_map_get(m, "small"), "7"));
    CHECK(!mp_str_eq(NULL, "x"));
    CHECK(!mp_str_eq(mp_map_get(m, "name"), NULL));
    pk_end(&k);
}

static void test_pack_bytes(void)
{
    /* the helpers write the smallest standard encodings */
    struct pk k;
    msgpack_packer *p = pk_begin(&k);
    mp_pack_kv_int(p, "a", -1);
    mp_pack_kv_uint(p, "b", 200);
    mp_pack_kv_bool(p, "c", 5);
    mp_pack_kv_str(p, "d", NULL);
    mp_pack_kv_double(p, "e", 1.0);
    static const uint8_t want[] = { 0xa1, 'a', 0xff, 0xa1, 'b', 0xcc, 200, 0xa1, 'c', 0xc3,
                                    0xa1, 'd', 0xc0, 0xa1, 'e', 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0 };
    CHECK_INT(k.sb.size, sizeof want);
    CHECK(k.sb.size == sizeof want && memcmp(k.sb.data, want, sizeof want) == 0);
    pk_end(&k);
}

void run_tests(void)
{
    RUN(test_map_get);
    RUN(test_get_str);
    RUN(test_get_numbers);
    RUN(test_get_bool_and_str_eq);
    RUN(test_pack_bytes);
}
