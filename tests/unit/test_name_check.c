/* test_name_check.c — the characters a metric name or resource id may hold
 * (proto/name_check.h): both edges of every refused range and the code
 * points just outside them, ill-formed UTF-8, the reason text, and names
 * in other scripts that must pass. */
#include "tests/unit/harness.h"

#include <stdlib.h>

#include "proto/name_check.h"

/* Encode cp as UTF-8 into out (room for 4); returns the length. */
static size_t utf8(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The refused code points, as the brief for the rule lists them. */
static int refused(uint32_t cp)
{
    return cp <= 0x1f || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c ||
           (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || cp == 0x2060 ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

/* "ab" + cp + "c": refused at byte 2 with cp, or accepted. */
static void check_cp(uint32_t cp)
{
    char s[8] = "ab";
    size_t n = 2 + utf8(cp, s + 2);
    s[n++] = 'c';
    uint32_t got = 0;
    size_t at = 99;
    enum name_check_rc rc = name_check(s, n, &got, &at);
    if (refused(cp)) {
        if (rc != NAME_CHECK_CHAR || got != cp || at != 2)
            harness_fail(__FILE__, __LINE__, "U+%04X: rc %d cp U+%04X at %zu, expected refused "
                         "at 2", (unsigned)cp, rc, (unsigned)got, at);
        if (!name_check_what(cp))
            harness_fail(__FILE__, __LINE__, "U+%04X refused without a name", (unsigned)cp);
    } else if (rc != NAME_CHECK_OK || name_check_what(cp)) {
        harness_fail(__FILE__, __LINE__, "U+%04X: rc %d, expected accepted", (unsigned)cp, rc);
    }
}

static void test_every_range_edge(void)
{
    for (size_t i = 0; i < name_check_nrefused; i++) {
        const struct name_check_range *r = &name_check_refused[i];
        CHECK(r->lo <= r->hi && r->what && r->what[0]);
        if (i)
            CHECK(name_check_refused[i - 1].hi < r->lo);
        check_cp(r->lo);
        check_cp(r->hi);
        if (r->lo > 0)
            check_cp(r->lo - 1);
        check_cp(r->hi + 1);
    }
    /* the table is exactly the rule: every code point of the BMP's first
     * 0x2100 and around U+FEFF, and the planes' edges */
    for (uint32_t cp = 0; cp < 0x2100; cp++)
        if (cp < 0xd800 || cp > 0xdfff)
            check_cp(cp);
    for (uint32_t cp = 0xfe00; cp <= 0xffff; cp++)
        check_cp(cp);
    check_cp(0x10000);
    check_cp(0x10ffff);
    check_cp(0xe0001);                         /* language tag: not refused */
}

static void test_names_the_ranges(void)
{
    CHECK_STR(name_check_what(0x00), "C0 control");
    CHECK_STR(name_check_what(0x1f), "C0 control");
    CHECK_STR(name_check_what(0x7f), "delete");
    CHECK_STR(name_check_what(0x85), "C1 control");
    CHECK_STR(name_check_what(0x061c), "Arabic letter mark");
    CHECK_STR(name_check_what(0x200b), "zero width space");
    CHECK_STR(name_check_what(0x200e), "left-to-right mark");
    CHECK_STR(name_check_what(0x200f), "right-to-left mark");
    CHECK_STR(name_check_what(0x202a), "left-to-right embedding");
    CHECK_STR(name_check_what(0x202e), "right-to-left override");
    CHECK_STR(name_check_what(0x2060), "word joiner");
    CHECK_STR(name_check_what(0x2066), "left-to-right isolate");
    CHECK_STR(name_check_what(0x2069), "pop directional isolate");
    CHECK_STR(name_check_what(0xfeff), "zero width no-break space");
    CHECK(name_check_what('a') == NULL);
    CHECK(name_check_what(0x202f) == NULL);    /* narrow no-break space */
}

static void test_reason(void)
{
    char buf[128];
    /* "cpu.ut" RLO "il": the override at byte 6 */
    CHECK_INT(name_check_reason("metric name", "cpu.ut\xe2\x80\xaeil", 11, buf, sizeof buf), 1);
    CHECK_STR(buf, "metric name contains U+202E (right-to-left override) at byte 6");
    CHECK_INT(name_check_reason("resource_id", "vm\x01", 3, buf, sizeof buf), 1);
    CHECK_STR(buf, "resource_id contains U+0001 (C0 control) at byte 2");
    CHECK_INT(name_check_reason("metric name", "\xef\xbb\xbfx", 4, buf, sizeof buf), 1);
    CHECK_STR(buf, "metric name contains U+FEFF (zero width no-break space) at byte 0");
    CHECK_INT(name_check_reason("metric name", "ab\xff", 3, buf, sizeof buf), 1);
    CHECK_STR(buf, "metric name not valid UTF-8 at byte 2");
    /* the first problem from the start decides */
    CHECK_INT(name_check_reason("m", "a\x7f\xff", 3, buf, sizeof buf), 1);
    CHECK_STR(buf, "m contains U+007F (delete) at byte 1");
    CHECK_INT(name_check_reason("m", "\xc0\xaf\x01", 3, buf, sizeof buf), 1);
    CHECK_STR(buf, "m not valid UTF-8 at byte 0");
    /* a short buffer is cut, NUL-terminated */
    char small[12];
    CHECK_INT(name_check_reason("metric name", "\x01", 1, small, sizeof small), 1);
    CHECK_STR(small, "metric name");
    /* accepted: buf untouched */
    strcpy(buf, "same");
    CHECK_INT(name_check_reason("m", "cpu.util", 8, buf, sizeof buf), 0);
    CHECK_STR(buf, "same");
}

static void test_ill_formed_utf8(void)
{
    static const struct { const char *s; size_t n, at; } bad[] = {
        { "\x80", 1, 0 },                      /* lone continuation byte */
        { "a\xc2", 2, 1 },                     /* cut short */
        { "ab\xe2\x80", 4, 2 },
        { "\xc0\x80", 2, 0 },                  /* overlong NUL */
        { "\xc1\xbf", 2, 0 },                  /* overlong */
        { "\xe0\x9f\xbf", 3, 0 },              /* overlong 3 bytes */
        { "\xf0\x8f\xbf\xbf", 4, 0 },          /* overlong 4 bytes */
        { "x\xed\xa0\x80", 4, 1 },             /* surrogate U+D800 */
        { "\xed\xbf\xbf", 3, 0 },              /* surrogate U+DFFF */
        { "\xf4\x90\x80\x80", 4, 0 },          /* above U+10FFFF */
        { "\xf5\x80\x80\x80", 4, 0 },
        { "\xff", 1, 0 },
        { "\xe2\x28\xa1", 3, 0 },              /* bad continuation */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t at = 99;
        int rc = name_check(bad[i].s, bad[i].n, NULL, &at);
        if (rc != NAME_CHECK_UTF8 || at != bad[i].at)
            harness_fail(__FILE__, __LINE__, "bad[%zu]: rc %d at %zu, expected UTF8 at %zu", i, rc,
                         at, bad[i].at);
    }
    CHECK_INT(name_check("\xed\x9f\xbf", 3, NULL, NULL), NAME_CHECK_OK);      /* U+D7FF */
    CHECK_INT(name_check("\xee\x80\x80", 3, NULL, NULL), NAME_CHECK_OK);      /* U+E000 */
    CHECK_INT(name_check("\xf4\x8f\xbf\xbf", 4, NULL, NULL), NAME_CHECK_OK);  /* U+10FFFF */
}

static void test_names_that_pass(void)
{
    static const char *const good[] = {
        "cpu.util",
        "cpu.util/h\xc3\xa9llo",                                   /* héllo */
        "\xe6\xb8\xa9\xe5\xba\xa6/\xe3\x83\x87\xe3\x82\xa3\xe3\x82\xb9\xe3\x82\xaf",  /* 温度/ディスク */
        "\xd8\xa7\xd9\x84\xd8\xb0\xd8\xa7\xd9\x83\xd8\xb1\xd8\xa9",  /* Arabic, no marks */
        "\xd7\xa2\xd7\x91\xd7\xa8\xd7\x99\xd7\xaa",               /* Hebrew */
        "gpu\xf0\x9f\x94\xa5.temp",                               /* emoji */
        "a b~!@#$%^&*()_+-=[]{};':\",./<>?\\|`",                   /* printable ASCII */
        "",                                                        /* empty: the caller's rule */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (name_check(good[i], strlen(good[i]), NULL, NULL) != NAME_CHECK_OK)
            harness_fail(__FILE__, __LINE__, "good[%zu] \"%s\" refused", i, good[i]);
}

void run_tests(void)
{
    RUN(test_every_range_edge);
    RUN(test_names_the_ranges);
    RUN(test_reason);
    RUN(test_ill_formed_utf8);
    RUN(test_names_that_pass);
}
