/* test_pystr.c — Python str()/repr() of msgpack values (proto/pystr.c):
 * float repr against CPython on the doubles of
 * tests/ceilometer/data/float_repr.txt (made by tests/ceilometer/
 * gen_vectors.py; $GA_FLOAT_VECTORS names another file), every value type
 * in both plain and Ceilometer decode_unicode form, key order, and UTF-8
 * validation. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include <msgpack.h>

#include "proto/ga_err.h"
#include "proto/pystr.h"


/* str() / repr() of the msgpack object in hex. */
static void render_hex(const char *hex, int repr, unsigned flags, char *out, size_t outlen)
{
    size_t n;
    uint8_t *raw = harness_unhex(hex, &n);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    struct pystr_buf b;
    pystr_buf_init(&b);
    int rc = -1;
    if (msgpack_unpack_next(&u, (const char *)raw, n, NULL) == MSGPACK_UNPACK_SUCCESS)
        rc = repr ? pystr_repr(&b, &u.data, flags) : pystr_str(&b, &u.data, flags);
    snprintf(out, outlen, "%s", rc ? "<error>" : b.len ? b.p : "");
    pystr_buf_free(&b);
    msgpack_unpacked_destroy(&u);
    free(raw);
}

static void test_float_repr_vs_python(void)
{
    FILE *f = harness_open_data("GA_FLOAT_VECTORS", "tests/ceilometer/data/float_repr.txt");
    if (!f)
        return;
    char line[256], hex[64], want[64], got[PYSTR_FLOAT_MAX];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%63s %63s", hex, want) != 2)
            continue;
        uint64_t bits = strtoull(hex, NULL, 16);
        double d;
        memcpy(&d, &bits, sizeof d);
        size_t len = pystr_float_repr(d, got);
        n++;
        if (strcmp(got, want) != 0 || len != strlen(want)) {
            if (bad++ < 10)
                harness_fail(__FILE__, __LINE__, "bits %s: \"%s\", Python says \"%s\"", hex, got, want);
        }
    }
    fclose(f);
    CHECK(n > 3000);
    CHECK_INT(bad, 0);
}

static void test_pystr_values(void)
{
    static const struct { const char *hex; int repr; unsigned flags; const char *want; } c[] = {
        {"c0", 0, 0, "None"}, {"c3", 0, 0, "True"}, {"c2", 1, 0, "False"},
        {"cfffffffffffffffff", 0, 0, "18446744073709551615"}, {"d38000000000000000", 0, 0, "-9223372036854775808"},
        {"cb3fb999999999999a", 0, 0, "0.1"}, {"ca3dcccccd", 0, 0, "0.10000000149011612"},
        {"a0", 0, 0, ""}, {"a0", 1, 0, "''"}, {"a3c3a921", 0, 0, "\xc3\xa9!"},
        {"a3697427", 1, 0, "\"it'\""}, {"a3272227", 1, 0, "'\\'\"\\''"},
        {"a5095c0a0d7f", 1, 0, "'\\t\\\\\\n\\r\\x7f'"},
        {"c403410022", 0, 0, "b'A\\x00\"'"}, {"c0", 0, PYSTR_CEILO_DECODE, "None"},
        {"c401ff", 1, 0, "b'\\xff'"}, {"c401ff", 1, PYSTR_CEILO_DECODE, "<error>"},
        {"94 01 a161 c0 cb3ff0000000000000", 0, 0, "[1, 'a', None, 1.0]"},
        {"93 a161 c40162 90", 0, PYSTR_CEILO_DECODE, "[b'a', 'b', []]"},
        {"92 a2c3a9 91a178", 0, PYSTR_CEILO_DECODE, "[b'\\xc3\\xa9', [b'x']]"},
        {"82 a162 01 a161 92c0c3", 0, 0, "{'b': 1, 'a': [None, True]}"},
        {"82 a162 01 a161 92c0c3", 0, PYSTR_CEILO_DECODE, "{b'a': [None, True], b'b': 1}"},
        {"80", 0, 0, "{}"}, {"90", 0, 0, "[]"}, {"d40100", 0, 0, "<error>"},
        {"91 a2c3a9", 0, 0, "<error>"},                 /* non-ASCII str needs repr */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char hex[128], out[256];
        size_t k = 0;
        for (const char *p = c[i].hex; *p; p++)
            if (*p != ' ')
                hex[k++] = *p;
        hex[k] = '\0';
        render_hex(hex, c[i].repr, c[i].flags, out, sizeof out);
        if (strcmp(out, c[i].want) != 0)
            harness_fail(__FILE__, __LINE__, "%s: \"%s\", expected \"%s\"", c[i].hex, out, c[i].want);
    }
}

static void test_sorted_keys(void)
{
    size_t n;
    /* {"b": 0, "a0": 0, "a": 0, "\u00e9": 0, "B": 0}: code point order B a a0 b é */
    uint8_t *raw = harness_unhex("85a16200a2613000a16100a2c3a900a14200", &n);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    uint32_t *order = NULL;
    const char *why = NULL;
    CHECK(msgpack_unpack_next(&u, (const char *)raw, n, NULL) == MSGPACK_UNPACK_SUCCESS);
    CHECK_INT(pystr_sorted_keys(&u.data, &order, &why), 0);
    if (order) {
        CHECK_INT(order[0], 4);
        CHECK_INT(order[1], 2);
        CHECK_INT(order[2], 1);
        CHECK_INT(order[3], 0);
        CHECK_INT(order[4], 3);
    }
    free(order);
    msgpack_unpacked_destroy(&u);
    free(raw);
}

static void test_buf(void)
{
    struct pystr_buf b;
    pystr_buf_init(&b);
    for (int i = 0; i < 1000; i++)
        CHECK_INT(pystr_append(&b, "abc", 3), 0);
    CHECK_INT(b.len, 3000);
    CHECK_INT(b.p[3000], 0);
    CHECK(memcmp(b.p + 2997, "abc", 3) == 0);
    pystr_buf_free(&b);
    CHECK(b.p == NULL && b.len == 0);
}

static void test_utf8(void)
{
    CHECK_INT(pystr_utf8_valid("", 0), 1);
    CHECK_INT(pystr_utf8_valid("a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80", 10), 1);
    CHECK_INT(pystr_utf8_valid("\xc0\x80", 2), 0);              /* overlong NUL */
    CHECK_INT(pystr_utf8_valid("\xe0\x9f\xbf", 3), 0);          /* overlong */
    CHECK_INT(pystr_utf8_valid("\xed\xa0\x80", 3), 0);          /* surrogate */
    CHECK_INT(pystr_utf8_valid("\xf4\x90\x80\x80", 4), 0);      /* > U+10FFFF */
    CHECK_INT(pystr_utf8_valid("\xf4\x8f\xbf\xbf", 4), 1);
    CHECK_INT(pystr_utf8_valid("\xe4\xb8", 2), 0);              /* truncated */
    CHECK_INT(pystr_utf8_valid("\x80", 1), 0);
}

void run_tests(void)
{
    RUN(test_float_repr_vs_python);
    RUN(test_pystr_values);
    RUN(test_sorted_keys);
    RUN(test_buf);
    RUN(test_utf8);
}
