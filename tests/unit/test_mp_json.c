/* test_mp_json.c — gpuaggctl's JSON output through jansson
 * (tools/gpuaggctl/mp_json.c): escapes, UTF-8 repair, bin/ext, floats,
 * non-string and repeated keys, pretty layout, write errors. */
#include "tests/unit/harness.h"

#include <math.h>
#include <stdlib.h>

#include <msgpack.h>

#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tools/gpuaggctl/mp_json.c"
#include "tests/unit/mp_pack.h"

/* JSON text of o; the caller frees it. */
static char *json(const msgpack_object *o, int pretty)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    int rc = mp_json_write(o, f, pretty);
    fclose(f);
    CHECK_INT(rc, 0);
    return text;
}

#define CHECK_JSON(o, pretty, expect) do { char *j_ = json((o), (pretty)); CHECK_STR(j_, (expect)); free(j_); } while (0)

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

static void test_json_scalars_and_layout(void)
{
    struct pk k;
    const msgpack_object *m = sample(&k);
    CHECK_JSON(m, 0,
        "{\"name\":\"gpu0\",\"neg\":-42,\"big\":1.8446744073709552e19,\"small\":7,\"ratio\":0.25,"
        "\"on\":true,\"off\":false,\"none\":null,\"f32\":1.5,\"list\":[],\"\":\"empty key\"}");
    pk_end(&k);

    msgpack_packer *p = pk_begin(&k);
    msgpack_pack_map(p, 3);
    mp_pack_cstr(p, "a");
    msgpack_pack_array(p, 2);
    msgpack_pack_int(p, 1);
    msgpack_pack_map(p, 1);
    mp_pack_kv_str(p, "b", "c");
    mp_pack_cstr(p, "e");
    msgpack_pack_map(p, 0);
    mp_pack_kv_int(p, "z", 0);
    CHECK_JSON(pk_decode(&k), 1,
        "{\n"
        "  \"a\": [\n"
        "    1,\n"
        "    {\n"
        "      \"b\": \"c\"\n"
        "    }\n"
        "  ],\n"
        "  \"e\": {},\n"
        "  \"z\": 0\n"
        "}");
    pk_end(&k);
}

static void test_json_strings(void)
{
    struct pk k;
    msgpack_packer *p = pk_begin(&k);
    static const char s[] = "q\"b\\/\n\r\t\b\f\x01\x1f\x7f" "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    msgpack_pack_array(p, 2);
    msgpack_pack_str_with_body(p, s, sizeof s - 1);
    msgpack_pack_str_with_body(p, "a\0b", 3);            /* NUL inside */
    CHECK_JSON(pk_decode(&k), 0,
        "[\"q\\\"b\\\\/\\n\\r\\t\\b\\f\\u0001\\u001F\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
        "\"a\\u0000b\"]");
    pk_end(&k);
}

static void test_json_invalid_utf8(void)
{
    static const struct { const char *in, *out; } cases[] = {
        { "\x80", "\xef\xbf\xbd" },                          /* lone continuation */
        { "a\xc3", "a\xef\xbf\xbd" },                        /* truncated at end */
        { "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },          /* overlong: C0 never valid */
        { "\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },  /* overlong 3-byte */
        { "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },  /* surrogate */
        { "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },  /* > U+10FFFF */
        { "\xe2\x82x", "\xef\xbf\xbdx" },                    /* maximal subpart E2 82: one U+FFFD */
        { "\xf0\x9f\x98", "\xef\xbf\xbd" },                  /* truncated 4-byte at end */
        { "\xff\xfe", "\xef\xbf\xbd\xef\xbf\xbd" },
        { "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf" },          /* U+10FFFF is valid */
        { "\xed\x9f\xbf", "\xed\x9f\xbf" },                  /* U+D7FF is valid */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pk k;
        msgpack_pack_str_with_body(pk_begin(&k), cases[i].in, strlen(cases[i].in));
        char *j = json(pk_decode(&k), 0);
        char want[64];
        snprintf(want, sizeof want, "\"%s\"", cases[i].out);
        if (strcmp(j, want) != 0)
            harness_fail(__FILE__, __LINE__, "case %zu: got %s", i, j);
        free(j);
        pk_end(&k);
    }
}

static void test_json_bin_ext_floats(void)
{
    struct pk k;
    msgpack_packer *p = pk_begin(&k);
    msgpack_pack_array(p, 13);
    msgpack_pack_bin_with_body(p, "", 0);
    msgpack_pack_bin_with_body(p, "f", 1);
    msgpack_pack_bin_with_body(p, "fo", 2);
    msgpack_pack_bin_with_body(p, "foo", 3);
    msgpack_pack_bin_with_body(p, "\xfb\xff", 2);
    msgpack_pack_ext_with_body(p, "\x01\x02\x03\x04", 4, -1);
    msgpack_pack_double(p, 0.1);
    msgpack_pack_float(p, 0.1f);                         /* widened exactly to double */
    msgpack_pack_double(p, 3.0);
    msgpack_pack_double(p, 1e300);
    msgpack_pack_double(p, NAN);
    msgpack_pack_double(p, -INFINITY);
    msgpack_pack_double(p, -0.0);
    CHECK_JSON(pk_decode(&k), 0,
        "[\"\",\"Zg==\",\"Zm8=\",\"Zm9v\",\"+/8=\",{\"ext\":-1,\"data\":\"AQIDBA==\"},"
        "0.10000000000000001,0.10000000149011612,3.0,1.0000000000000001e300,null,null,-0.0]");
    pk_end(&k);

    /* awkward doubles read back as they were */
    static const double vals[] = { 1.0 / 3, 2.0 / 3, 1e-310, 123456789.125, 5e-324, 1.7976931348623157e308 };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        msgpack_pack_double(pk_begin(&k), vals[i]);
        char *j = json(pk_decode(&k), 0);
        CHECK(strtod(j, NULL) == vals[i]);
        CHECK(strlen(j) <= 23);                           /* "%.17g", "e-308" at most */
        free(j);
        pk_end(&k);
    }
}

static void test_json_non_string_keys(void)
{
    struct pk k;
    msgpack_packer *p = pk_begin(&k);
    msgpack_pack_map(p, 6);
    msgpack_pack_int(p, 1);        mp_pack_cstr(p, "int");
    msgpack_pack_true(p);          mp_pack_cstr(p, "bool");
    msgpack_pack_nil(p);           mp_pack_cstr(p, "nil");
    msgpack_pack_array(p, 2); msgpack_pack_int(p, 1); mp_pack_cstr(p, "x");
                                   mp_pack_cstr(p, "array");
    msgpack_pack_bin_with_body(p, "hi", 2);
                                   mp_pack_cstr(p, "bin");
    msgpack_pack_double(p, 2.5);   mp_pack_cstr(p, "float");
    CHECK_JSON(pk_decode(&k), 0,
        "{\"1\":\"int\",\"true\":\"bool\",\"null\":\"nil\",\"[1,\\\"x\\\"]\":\"array\","
        "\"aGk=\":\"bin\",\"2.5\":\"float\"}");
    pk_end(&k);
}

/* Maps as keys of maps as keys, 30 deep: each level would escape the
 * text of the one below again (2^30 bytes); within a stringified key a
 * container key is "…", so the text stays small (found by fuzz_ctl). */
static void test_json_nested_container_keys(void)
{
    struct pk k;
    msgpack_packer *p = pk_begin(&k);
    for (int i = 0; i < 30; i++)
        msgpack_pack_map(p, 1);
    msgpack_pack_int(p, 1);
    for (int i = 0; i < 30; i++)
        mp_pack_cstr(p, "v");
    char *j = json(pk_decode(&k), 0);
    CHECK_STR(j, "{\"{\\\"\xe2\x80\xa6\\\":\\\"v\\\"}\":\"v\"}");
    free(j);
    pk_end(&k);
}

static void test_json_write_error(void)
{
    struct pk k;
    msgpack_pack_array(pk_begin(&k), 0);
    const msgpack_object *o = pk_decode(&k);
    FILE *ro = fopen("/dev/null", "r");                 /* writes to a read-only stream fail */
    CHECK(ro != NULL);
    if (ro) {
        CHECK_INT(mp_json_write(o, ro, 0), GA_EIO);
        fclose(ro);
    }
    pk_end(&k);
}

void run_tests(void)
{
    RUN(test_json_scalars_and_layout);
    RUN(test_json_strings);
    RUN(test_json_invalid_utf8);
    RUN(test_json_bin_ext_floats);
    RUN(test_json_non_string_keys);
    RUN(test_json_nested_container_keys);
    RUN(test_json_write_error);
}
