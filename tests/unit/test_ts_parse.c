/* test_ts_parse.c — RFC 3339 parsing (exact cases computed with Python's
 * calendar.timegm and integer fractions), invalid inputs with their reasons,
 * range edges, float seconds rounding against an exact 128-bit reference,
 * format → parse round trips on random instants; the looser ISO 8601 form,
 * decimal epoch seconds and durations. */
#include "tests/unit/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/ts_parse.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static int parse(const char *s, int64_t *ns, char *err, size_t errlen)
{
    /* exact-size copy, no NUL: the parser must honour len */
    size_t n = strlen(s);
    char *copy = malloc(n ? n : 1);
    memcpy(copy, s, n);
    int rc = ts_parse_rfc3339(copy, n, ns, err, errlen);
    free(copy);
    return rc;
}

static const struct { const char *s; int64_t ns; } good[] = {
    { "1970-01-01T00:00:00Z", 0LL },
    { "1970-01-01T00:00:00.000000001Z", 1LL },
    { "1969-12-31T23:59:59.999999999Z", -1LL },
    { "2026-11-21T15:04:05.123456789Z", 1795273445123456789LL },
    { "2026-11-21t15:04:05.1z", 1795273445100000000LL },
    { "2026-11-21T15:04:05.12Z", 1795273445120000000LL },
    { "2026-11-21T15:04:05.123Z", 1795273445123000000LL },
    { "2026-11-21T15:04:05.1234Z", 1795273445123400000LL },
    { "2026-11-21T15:04:05.12345Z", 1795273445123450000LL },
    { "2026-11-21T15:04:05.123456Z", 1795273445123456000LL },
    { "2026-11-21T15:04:05.1234567Z", 1795273445123456700LL },
    { "2026-11-21T15:04:05.12345678Z", 1795273445123456780LL },
    { "2026-11-21T17:04:05.123456789+02:00", 1795273445123456789LL },
    { "2026-11-21T10:34:05.5-04:30", 1795273445500000000LL },
    { "2026-11-21T15:04:05-00:00", 1795273445000000000LL },
    { "2000-02-29T12:00:00Z", 951825600000000000LL },
    { "2024-02-29T23:59:59.999999999Z", 1709251199999999999LL },
    { "1900-03-01T00:00:00Z", -2203891200000000000LL },
    { "2100-02-28T00:00:00Z", 4107456000000000000LL },
    { "2262-04-11T23:47:16.854775807Z", INT64_MAX },
    { "1677-09-21T00:12:43.145224192Z", INT64_MIN },
    { "2016-12-31T23:59:60Z", 1483228800000000000LL },
    { "2026-01-01T00:30:00+01:00", 1767223800000000000LL },
    { "2038-01-19T03:14:08Z", 2147483648000000000LL },
    { "1999-12-31T23:59:59+23:59", 946598459000000000LL },
    { "2001-09-09T01:46:40Z", 1000000000000000000LL },
    { "2026-06-30T00:00:00.000000100Z", 1782777600000000100LL },
};

static void test_rfc3339_exact(void)
{
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t ns = 42;
        char err[128] = "";
        int rc = parse(good[i].s, &ns, err, sizeof err);
        if (rc != 0 || ns != good[i].ns)
            harness_fail(__FILE__, __LINE__, "%s: rc %d (%s), ns %lld, expected %lld", good[i].s, rc,
                         err, (long long)ns, (long long)good[i].ns);
    }
}

static const struct { const char *s, *why; } bad[] = {
    { "", "year must be 4 digits" },
    { "2026", "ends after 4 characters, expected '-'" },
    { "2026-13-01T00:00:00Z", "month 13 out of range" },
    { "2026-00-01T00:00:00Z", "month 0 out of range" },
    { "2026-02-30T00:00:00Z", "day 30 out of range for 2026-02" },
    { "2026-02-29T00:00:00Z", "day 29 out of range for 2026-02" },
    { "1900-02-29T00:00:00Z", "day 29 out of range for 1900-02" },
    { "2026-04-31T00:00:00Z", "day 31 out of range for 2026-04" },
    { "2026-04-00T00:00:00Z", "day 0 out of range for 2026-04" },
    { "2026-11-21T25:00:00Z", "hour 25 out of range" },
    { "2026-11-21T24:00:00Z", "hour 24 out of range" },
    { "2026-11-21T23:60:00Z", "minute 60 out of range" },
    { "2026-11-21T23:59:61Z", "second 61 out of range" },
    { "2026-11-21T15:04:05", "missing time zone" },
    { "2026-11-21T15:04:05.123", "missing time zone" },
    { "2026-11-21T15:04:05Zjunk", "4 trailing characters after the time zone" },
    { "2026-11-21T15:04:05Z ", "1 trailing characters" },
    { " 2026-11-21T15:04:05Z", "year must be 4 digits" },
    { "2026-11-21 15:04:05Z", "expected 'T' at offset 10" },
    { "2026/11/21T15:04:05Z", "expected '-' at offset 4" },
    { "2026-11-21T15-04:05Z", "expected ':' at offset 13" },
    { "2026-11-21T15:04:05.Z", "no digits after '.'" },
    { "2026-11-21T15:04:05.1234567890Z", "more than 9 fractional digits" },
    { "2026-11-21T15:04:05+2:00", "offset must be +hh:mm" },
    { "2026-11-21T15:04:05+0200", "offset must be +hh:mm" },
    { "2026-11-21T15:04:05+24:00", "offset +24:00 out of range" },
    { "2026-11-21T15:04:05+02:60", "offset +02:60 out of range" },
    { "2026-11-21T15:04:05UTC", "missing time zone ('Z' or +hh:mm) at offset 19" },
    { "26-11-21T15:04:05Z", "year must be 4 digits" },
    { "2026-1-21T15:04:05Z", "month must be 2 digits" },
    { "2026-11-2T15:04:05Z", "day must be 2 digits" },
    { "2026-11-21T5:04:05Z", "hour must be 2 digits" },
    { "2026-11-21T15:4:05Z", "minute must be 2 digits" },
    { "2026-11-21T15:04:5Z", "second must be 2 digits" },
    { "1763737445", "expected '-' at offset 4" },
};

static void test_rfc3339_invalid(void)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ns = 4242;
        char err[128] = "";
        int rc = parse(bad[i].s, &ns, err, sizeof err);
        if (rc != GA_EINVAL || ns != 4242 || !strstr(err, bad[i].why))
            harness_fail(__FILE__, __LINE__, "\"%s\": rc %d, ns %lld, err \"%s\", expected \"%s\"",
                         bad[i].s, rc, (long long)ns, err, bad[i].why);
    }
    /* NULL err buffer is allowed */
    int64_t ns;
    CHECK_INT(ts_parse_rfc3339("x", 1, &ns, NULL, 0), GA_EINVAL);
    /* an embedded NUL is junk, not an end */
    CHECK_INT(ts_parse_rfc3339("2026-11-21T15:04:05Z\0", 21, &ns, NULL, 0), GA_EINVAL);
}

static void test_rfc3339_range(void)
{
    int64_t ns = 0;
    char err[128];
    CHECK_INT(parse("2262-04-11T23:47:16.854775808Z", &ns, err, sizeof err), GA_ERANGE);
    CHECK(ns == INT64_MAX);
    CHECK_CONTAINS(err, "int64 nanosecond range");
    ns = 0;
    CHECK_INT(parse("1677-09-21T00:12:43.145224191Z", &ns, err, sizeof err), GA_ERANGE);
    CHECK(ns == INT64_MIN);
    ns = 0;
    CHECK_INT(parse("9999-12-31T23:59:60.999999999-23:59", &ns, err, sizeof err), GA_ERANGE);
    CHECK(ns == INT64_MAX);
    ns = 0;
    CHECK_INT(parse("0000-01-01T00:00:00+23:59", &ns, err, sizeof err), GA_ERANGE);
    CHECK(ns == INT64_MIN);
    /* the edges themselves are fine, with an offset too */
    CHECK_INT(parse("2262-04-12T01:47:16.854775807+02:00", &ns, err, sizeof err), 0);
    CHECK(ns == INT64_MAX);
}

static void test_format(void)
{
    char buf[TS_RFC3339_LEN + 1];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK_INT(ts_format_rfc3339(good[i].ns, buf, sizeof buf), TS_RFC3339_LEN);
        CHECK_INT(strlen(buf), TS_RFC3339_LEN);
        int64_t back = 0;
        CHECK_INT(parse(buf, &back, NULL, 0), 0);
        CHECK(back == good[i].ns);
    }
    ts_format_rfc3339(0, buf, sizeof buf);
    CHECK_STR(buf, "1970-01-01T00:00:00.000000000Z");
    ts_format_rfc3339(1795273445123456789LL, buf, sizeof buf);
    CHECK_STR(buf, "2026-11-21T15:04:05.123456789Z");
    ts_format_rfc3339(-1, buf, sizeof buf);
    CHECK_STR(buf, "1969-12-31T23:59:59.999999999Z");
    ts_format_rfc3339(INT64_MIN, buf, sizeof buf);
    CHECK_STR(buf, "1677-09-21T00:12:43.145224192Z");
    ts_format_rfc3339(INT64_MAX, buf, sizeof buf);
    CHECK_STR(buf, "2262-04-11T23:47:16.854775807Z");
    ts_format_rfc3339(1483228800000000000LL, buf, sizeof buf);
    CHECK_STR(buf, "2017-01-01T00:00:00.000000000Z");
    CHECK_INT(ts_format_rfc3339_short(1483228800000000000LL, buf, sizeof buf), 20);
    CHECK_STR(buf, "2017-01-01T00:00:00Z");
    CHECK_INT(ts_format_rfc3339_short(1795273445500000000LL, buf, sizeof buf), 22);
    CHECK_STR(buf, "2026-11-21T15:04:05.5Z");
    ts_format_rfc3339_short(1795273445123456789LL, buf, sizeof buf);
    CHECK_STR(buf, "2026-11-21T15:04:05.123456789Z");
    ts_format_rfc3339_short(-1, buf, sizeof buf);
    CHECK_STR(buf, "1969-12-31T23:59:59.999999999Z");
    CHECK_INT(ts_format_rfc3339_short(0, buf, TS_RFC3339_LEN), GA_ERANGE);
    memset(buf, 'x', sizeof buf);
    CHECK_INT(ts_format_rfc3339(0, buf, TS_RFC3339_LEN), GA_ERANGE);
    CHECK(buf[0] == 'x');
}

/* random instants: format → parse, and the same instant written with a
 * random offset and fraction length parses to the same value */
static void test_random_round_trip(void)
{
    for (int i = 0; i < 200000; i++) {
        int64_t ns = (int64_t)rnd();
        char buf[TS_RFC3339_LEN + 1];
        ts_format_rfc3339(ns, buf, sizeof buf);
        int64_t back = 0;
        if (parse(buf, &back, NULL, 0) != 0 || back != ns) {
            harness_fail(__FILE__, __LINE__, "%lld → %s → %lld", (long long)ns, buf, (long long)back);
            return;
        }
        /* shift by an offset of whole minutes, keep the digits that are non-zero */
        int off = (int)(rnd() % (2 * 1439 + 1)) - 1439;         /* minutes */
        int64_t local;
        if (__builtin_add_overflow(ns, (int64_t)off * 60 * 1000000000LL, &local))
            continue;
        char lb[TS_RFC3339_LEN + 1], txt[64];
        ts_format_rfc3339(local, lb, sizeof lb);
        int nd = 1 + (int)(rnd() % 9);
        int frac = (int)(ns % 1000000000LL < 0 ? ns % 1000000000LL + 1000000000LL : ns % 1000000000LL);
        int keep = frac;
        for (int k = nd; k < 9; k++)
            keep /= 10;
        int64_t expect = ns - frac, scale = 1;
        for (int k = nd; k < 9; k++)
            scale *= 10;
        expect += (int64_t)keep * scale;
        snprintf(txt, sizeof txt, "%.19s.%0*d%c%02d:%02d", lb, nd, keep, off < 0 ? '-' : '+',
                 abs(off) / 60, abs(off) % 60);
        back = 0;
        if (parse(txt, &back, NULL, 0) != 0 || back != expect) {
            harness_fail(__FILE__, __LINE__, "%s → %lld, expected %lld", txt, (long long)back,
                         (long long)expect);
            return;
        }
    }
}

static const struct { double sec; int64_t ns; } secs[] = {
    { 0.0, 0LL },
    { 1.5, 1500000000LL },
    { 1e-09, 1LL },
    { 1763737445.123456789, 1763737445123456717LL },
    { 1700000000.5, 1700000000500000000LL },
    { 0.1, 100000000LL },
    { 1234.0000000005, 1234000000000LL },
    { 9223372036.0, 9223372036000000000LL },
    { 1000000000.25, 1000000000250000000LL },
    { 2.675, 2675000000LL },
    { 0.0009765625, 976563LL },         /* exactly 976562.5 ns: tie goes up */
    { -0.0009765625, -976562LL },
    { -0.5, -500000000LL },
    { -1e-9, -1LL },
    { 9223372036.854774, 9223372036854774475LL },
    { -9223372036.854774, -9223372036854774475LL },
};

static void test_seconds_exact(void)
{
    for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++) {
        int64_t ns = 42;
        int rc = ts_from_seconds(secs[i].sec, &ns);
        if (rc != 0 || ns != secs[i].ns)
            harness_fail(__FILE__, __LINE__, "%.17g: rc %d ns %lld, expected %lld", secs[i].sec, rc,
                         (long long)ns, (long long)secs[i].ns);
    }
    int64_t ns = 7;
    CHECK_INT(ts_from_seconds(NAN, &ns), GA_EINVAL);
    CHECK_INT(ts_from_seconds(INFINITY, &ns), GA_EINVAL);
    CHECK_INT(ts_from_seconds(-INFINITY, &ns), GA_EINVAL);
    CHECK_INT(ns, 7);
    CHECK_INT(ts_from_seconds(9223372037.0, &ns), GA_ERANGE);
    CHECK(ns == INT64_MAX);
    CHECK_INT(ts_from_seconds(1e300, &ns), GA_ERANGE);
    CHECK(ns == INT64_MAX);
    CHECK_INT(ts_from_seconds(-9223372037.5, &ns), GA_ERANGE);
    CHECK(ns == INT64_MIN);
}

/* random doubles in [1, 2^33): f = sec - floor(sec) is m / 2^52 exactly, so
 * the nearest nanosecond is (m * 1e9 + 2^51) >> 52 in 128-bit integers */
static void test_seconds_random(void)
{
    for (int i = 0; i < 500000; i++) {
        double sec = 1.0 + (double)(rnd() >> 11) / 9007199254740992.0 * 8589934591.0;
        double ip = floor(sec);
        unsigned __int128 m = (unsigned __int128)((sec - ip) * 4503599627370496.0);
        int64_t fr = (int64_t)((m * 1000000000u + ((unsigned __int128)1 << 51)) >> 52);
        int64_t expect = (int64_t)ip * 1000000000LL + fr;
        int64_t ns = 0;
        if (ts_from_seconds(sec, &ns) != 0 || ns != expect) {
            harness_fail(__FILE__, __LINE__, "%.17g → %lld, expected %lld", sec, (long long)ns,
                         (long long)expect);
            return;
        }
    }
}

/* Moved from the Ceilometer decoder, whose timestamps these are. */
static void test_iso8601(void)
{
    struct { const char *s; long long ns; } ok[] = {
        {"1970-01-01T00:00:00", 0},
        {"1970-01-01T00:00:00Z", 0},
        {"1970-01-01 00:00:00.000000001", 1},
        {"1969-12-31T23:59:59.999999999", -1},
        {"2026-11-21T15:04:05.123456", 1795273445123456000LL},
        {"2026-11-21T15:04:05.123456+00:00", 1795273445123456000LL},
        {"2026-11-21T16:34:05.123456+01:30", 1795273445123456000LL},
        {"2026-11-21T13:04:05.123456-0200", 1795273445123456000LL},
        {"2026-11-21T17:04:05.123456+02", 1795273445123456000LL},
        {"2026-11-21t15:04:05.1z", 1795273445100000000LL},
        {"2000-02-29T00:00:00", 951782400000000000LL},
        {"2262-04-11T23:47:16.854775807", INT64_MAX},
        {"1677-09-21T00:12:43.145224192", INT64_MIN},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ns = 42;
        int rc = ts_parse_iso8601(ok[i].s, strlen(ok[i].s), &ns, NULL, 0);
        if (rc != 0 || ns != ok[i].ns)
            harness_fail(__FILE__, __LINE__, "%s: rc %d ns %lld, expected %lld", ok[i].s, rc, (long long)ns, ok[i].ns);
    }
    int64_t ns;
    CHECK_INT(ts_parse_iso8601("2262-04-11T23:47:16.854775808", 29, &ns, NULL, 0), GA_ERANGE);
    CHECK_INT(ns, INT64_MAX);
    CHECK_INT(ts_parse_iso8601("9999-12-31T23:59:59", 19, &ns, NULL, 0), GA_ERANGE);
    CHECK_INT(ns, INT64_MAX);
    CHECK_INT(ts_parse_iso8601("1677-09-21T00:12:43.145224191", 29, &ns, NULL, 0), GA_ERANGE);
    CHECK_INT(ns, INT64_MIN);
    CHECK_INT(ts_parse_iso8601("2026-11-21T15:04:05", 18, &ns, NULL, 0), GA_EINVAL);      /* length counts */
    CHECK_INT(ts_parse_iso8601("1900-02-29T00:00:00", 19, &ns, NULL, 0), GA_EINVAL);
}

/* The ISO 8601 form where it differs from RFC 3339. */
static void test_iso8601_vs_rfc3339(void)
{
    int64_t ns = 0;
    char why[128];
    CHECK_INT(ts_parse_rfc3339("2026-11-21T15:04:60Z", 20, &ns, why, sizeof why), 0);     /* a leap second */
    CHECK_INT(ts_parse_iso8601("2026-11-21T15:04:60Z", 20, &ns, why, sizeof why), GA_EINVAL);
    CHECK_INT(ts_parse_rfc3339("0000-01-01T00:00:00Z", 20, &ns, why, sizeof why), GA_ERANGE);
    CHECK_INT(ts_parse_iso8601("0000-01-01T00:00:00Z", 20, &ns, why, sizeof why), GA_EINVAL);
    CHECK_INT(ts_parse_rfc3339("2026-11-21 15:04:05Z", 20, &ns, why, sizeof why), GA_EINVAL);
    CHECK_INT(ts_parse_rfc3339("2026-11-21T15:04:05", 19, &ns, why, sizeof why), GA_EINVAL);
    CHECK_INT(ts_parse_rfc3339("2026-11-21T15:04:05+02", 22, &ns, why, sizeof why), GA_EINVAL);
    CHECK_INT(ts_parse_iso8601("2026-11-21T17:04:05+02:", 23, &ns, NULL, 0), 0);
    CHECK(ns == 1795273445000000000LL);
    CHECK_INT(ts_parse_iso8601("2026-11-21T15:04:05+24", 22, &ns, NULL, 0), GA_EINVAL);
    CHECK_INT(ts_parse_iso8601("2026-11-21T15:04:05+0060", 24, &ns, NULL, 0), GA_EINVAL);
    CHECK_INT(ts_parse_iso8601("2026-11-21T15:04:05+020", 23, &ns, NULL, 0), GA_EINVAL);
    CHECK_INT(ts_parse_iso8601("2026-11-21T15:04:05.", 20, &ns, NULL, 0), GA_EINVAL);
    CHECK_INT(ts_parse_iso8601("2026-11-21T15:04:05.1234567891", 30, &ns, NULL, 0), GA_EINVAL);
    CHECK_INT(ts_parse_iso8601("2026-11-21T15:04:05 ", 20, &ns, NULL, 0), GA_EINVAL);
    CHECK_INT(ts_parse_iso8601("2026-11-21X15:04:05", 19, &ns, NULL, 0), GA_EINVAL);
}

/* Decimal epoch seconds, exactly. */
static void test_decimal_seconds(void)
{
    struct { const char *s; long long ns; } ok[] = {
        {"0", 0}, {"1767323045", 1767323045000000000LL}, {"-1.5", -1500000000LL},
        {"+2.000000001", 2000000001LL}, {".25", 250000000LL}, {"7.", 7000000000LL},
        {"9223372020.5", 9223372020500000000LL}, {"-9223372020.5", -9223372020500000000LL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ns = 42;
        int rc = ts_parse_seconds(ok[i].s, &ns);
        if (rc != 0 || ns != ok[i].ns)
            harness_fail(__FILE__, __LINE__, "%s: rc %d ns %lld, expected %lld", ok[i].s, rc,
                         (long long)ns, ok[i].ns);
    }
    int64_t ns;
    static const char *const refused[] = {"", "-", ".", "1.0000000001", "1e9", "12a", " 1", "1 ", "--1", "0x10"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (ts_parse_seconds(refused[i], &ns) != GA_EINVAL)
            harness_fail(__FILE__, __LINE__, "'%s' accepted", refused[i]);
    CHECK_INT(ts_parse_seconds("99999999999", &ns), GA_ERANGE);
}

static void test_durations(void)
{
    int64_t ns;
    int64_t k = 1 + rand() % 100000;
    char buf[64];
    snprintf(buf, sizeof buf, "%lld", (long long)k);
    CHECK_INT(ts_parse_duration(buf, &ns), 0);
    CHECK(ns == k * 1000000000LL);
    snprintf(buf, sizeof buf, "%lld min", (long long)k);
    CHECK_INT(ts_parse_duration(buf, &ns), 0);
    CHECK(ns == k * 60 * 1000000000LL);
    snprintf(buf, sizeof buf, "%lldms", (long long)k);
    CHECK_INT(ts_parse_duration(buf, &ns), 0);
    CHECK(ns == k * 1000000);
    CHECK_INT(ts_parse_duration("2.5", &ns), 0);
    CHECK(ns == 2500000000LL);
    CHECK_INT(ts_parse_duration("1 week", &ns), 0);
    CHECK(ns == 7 * 86400 * 1000000000LL);
    CHECK_INT(ts_parse_duration("5 fortnights", &ns), GA_EINVAL);
    CHECK_INT(ts_parse_duration("-5", &ns), GA_EINVAL);
    CHECK_INT(ts_parse_duration("", &ns), GA_EINVAL);
    CHECK_INT(ts_parse_duration("1e30", &ns), GA_ERANGE);
}

void run_tests(void)
{
    RUN(test_rfc3339_exact);
    RUN(test_rfc3339_invalid);
    RUN(test_rfc3339_range);
    RUN(test_format);
    RUN(test_random_round_trip);
    RUN(test_seconds_exact);
    RUN(test_seconds_random);
    RUN(test_iso8601);
    RUN(test_iso8601_vs_rfc3339);
    RUN(test_decimal_seconds);
    RUN(test_durations);
}
