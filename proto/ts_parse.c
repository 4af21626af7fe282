/* ts_parse.c — the one parser of times and durations: RFC 3339, ISO 8601,
 * epoch seconds and durations to int64 nanoseconds, and back to RFC 3339 (see
 * ts_parse.h).  Civil-date arithmetic after H. Hinnant, "chrono-Compatible
 * Low-Level Date Algorithms" (days_from_civil / civil_from_days). */
#include "proto/ts_parse.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

#define NS_PER_SEC 1000000000LL

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return GA_EINVAL;
}

static int is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
    static const int dm[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                    /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;  /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;            /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* sec * 1e9 + frac (0 <= frac < 1e9) without intermediate overflow; on
 * overflow saturates *ns and returns GA_ERANGE. */
static int combine(int64_t sec, int64_t frac, int64_t *ns)
{
    if (sec < 0 && frac > 0) {      /* keep sec * 1e9 in range near INT64_MIN */
        sec += 1;
        frac -= NS_PER_SEC;
    }
    int64_t v;
    if (__builtin_mul_overflow(sec, NS_PER_SEC, &v) || __builtin_add_overflow(v, frac, &v)) {
        *ns = sec < 0 ? INT64_MIN : INT64_MAX;
        return GA_ERANGE;
    }
    *ns = v;
    return 0;
}

/* n decimal digits at s → *v; 0 if any is not a digit. */
static int digits(const char *s, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return 1;
}

/* Check that s[at] is the separator c; for the error message. */
static int sep(const char *s, size_t len, size_t at, char c, char *err, size_t errlen)
{
    if (at >= len)
        return fail(err, errlen, "ends after %zu characters, expected '%c'", len, c);
    if (s[at] != c)
        return fail(err, errlen, "expected '%c' at offset %zu", c, at);
    return 0;
}

/* The ISO 8601 zone of ts_parse_iso8601 at s[*pos..len): none (UTC), 'Z',
 * or +hh, +hhmm, +hh:mm (and "+hh:").  0 with *off in seconds, or -1. */
static int iso_zone(const char *s, size_t len, size_t *pos, int64_t *off)
{
    size_t i = *pos;
    int oh, om = 0;
    *off = 0;
    if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
        *pos = i + 1;
        return 0;
    }
    if (i >= len || (s[i] != '+' && s[i] != '-'))
        return 0;
    int sign = s[i] == '-' ? -1 : 1;
    i++;
    if (len - i < 2 || !digits(s + i, 2, &oh) || oh > 23)
        return -1;
    i += 2;
    if (i < len && s[i] == ':')
        i++;
    if (i < len) {
        if (len - i < 2 || !digits(s + i, 2, &om) || om > 59)
            return -1;
        i += 2;
    }
    *off = sign * (oh * 3600 + om * 60);
    *pos = i;
    return 0;
}

/* The RFC 3339 zone at s[*pos..len): 'Z' or +hh:mm.  0 with *off in
 * seconds, or GA_EINVAL with the reason in err. */
static int rfc3339_zone(const char *s, size_t len, size_t *pos, int64_t *off, char *err, size_t errlen)
{
    size_t i = *pos;
    int oh, om;
    if (i >= len)
        return fail(err, errlen, "missing time zone ('Z' or +hh:mm)");
    if (s[i] == 'Z' || s[i] == 'z') {
        *off = 0;
        *pos = i + 1;
        return 0;
    }
    if (s[i] != '+' && s[i] != '-')
        return fail(err, errlen, "missing time zone ('Z' or +hh:mm) at offset %zu", i);
    int sign = s[i] == '-' ? -1 : 1;
    if (len - i < 6 || !digits(s + i + 1, 2, &oh) || s[i + 3] != ':' || !digits(s + i + 4, 2, &om))
        return fail(err, errlen, "time zone offset must be +hh:mm or -hh:mm");
    if (oh > 23 || om > 59)
        return fail(err, errlen, "time zone offset %.6s out of range", s + i);
    *off = sign * (oh * 3600 + om * 60);
    *pos = i + 6;
    return 0;
}

/* Both forms: RFC 3339 (iso 0) or the ISO 8601 of ts_parse_iso8601 (iso 1). */
static int parse_datetime(const char *s, size_t len, int iso, int64_t *ns, char *err, size_t errlen)
{
    int y, mo, d, h, mi, se;
    int64_t frac = 0;
    size_t pos;

    /* date: YYYY-MM-DD */
    if (len < 4 || !digits(s, 4, &y))
        return fail(err, errlen, "year must be 4 digits");
    if (sep(s, len, 4, '-', err, errlen) < 0)
        return GA_EINVAL;
    if (len < 7 || !digits(s + 5, 2, &mo))
        return fail(err, errlen, "month must be 2 digits");
    if (sep(s, len, 7, '-', err, errlen) < 0)
        return GA_EINVAL;
    if (len < 10 || !digits(s + 8, 2, &d))
        return fail(err, errlen, "day must be 2 digits");
    if (mo < 1 || mo > 12)
        return fail(err, errlen, "month %d out of range", mo);
    if (d < 1 || d > days_in_month(y, mo))
        return fail(err, errlen, "day %d out of range for %04d-%02d", d, y, mo);
    if (iso && y < 1)
        return fail(err, errlen, "year %04d out of range", y);
    if (len < 11 || (s[10] != 'T' && s[10] != 't' && !(iso && s[10] == ' ')))
        return fail(err, errlen, "expected 'T' at offset 10");

    /* time: hh:mm:ss */
    if (len < 13 || !digits(s + 11, 2, &h))
        return fail(err, errlen, "hour must be 2 digits");
    if (sep(s, len, 13, ':', err, errlen) < 0)
        return GA_EINVAL;
    if (len < 16 || !digits(s + 14, 2, &mi))
        return fail(err, errlen, "minute must be 2 digits");
    if (sep(s, len, 16, ':', err, errlen) < 0)
        return GA_EINVAL;
    if (len < 19 || !digits(s + 17, 2, &se))
        return fail(err, errlen, "second must be 2 digits");
    if (h > 23)
        return fail(err, errlen, "hour %d out of range", h);
    if (mi > 59)
        return fail(err, errlen, "minute %d out of range", mi);
    if (se > (iso ? 59 : 60))
        return fail(err, errlen, "second %d out of range", se);
    pos = 19;

    /* fraction: '.' 1..9 digits */
    if (pos < len && s[pos] == '.') {
        size_t start = ++pos;
        while (pos < len && s[pos] >= '0' && s[pos] <= '9') {
            if (pos - start == 9)
                return fail(err, errlen, "more than 9 fractional digits");
            frac = frac * 10 + (s[pos] - '0');
            pos++;
        }
        if (pos == start)
            return fail(err, errlen, "no digits after '.'");
        for (size_t k = pos - start; k < 9; k++)
            frac *= 10;
    }

    int64_t off = 0;
    if (iso) {
        if (iso_zone(s, len, &pos, &off) < 0)
            return fail(err, errlen, "time zone offset at offset %zu must be Z, +hh, +hhmm or +hh:mm",
                        pos);
    } else if (rfc3339_zone(s, len, &pos, &off, err, errlen) < 0) {
        return GA_EINVAL;
    }
    if (pos != len)
        return fail(err, errlen, "%zu trailing characters after the time zone", len - pos);

    int64_t sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    int64_t v;
    if (combine(sec, frac, &v) < 0) {
        *ns = v;
        fail(err, errlen, "outside the int64 nanosecond range (years 1677..2262)");
        return GA_ERANGE;
    }
    *ns = v;
    return 0;
}

int ts_parse_rfc3339(const char *s, size_t len, int64_t *ns, char *err, size_t errlen)
{
    return parse_datetime(s, len, 0, ns, err, errlen);
}

int ts_parse_iso8601(const char *s, size_t len, int64_t *ns, char *err, size_t errlen)
{
    return parse_datetime(s, len, 1, ns, err, errlen);
}

int ts_parse_seconds(const char *s, int64_t *ns)
{
    int neg = *s == '-';
    const char *p = s + (neg || *s == '+');
    int64_t sec = 0, frac = 0;
    int nd = 0, nf = 0;
    for (; *p >= '0' && *p <= '9'; p++, nd++) {
        if (sec > (INT64_MAX / NS_PER_SEC - 9) / 10)
            return GA_ERANGE;
        sec = sec * 10 + (*p - '0');
    }
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, nf++) {
            if (nf == 9)
                return GA_EINVAL;
            frac = frac * 10 + (*p - '0');
        }
    if (*p || nd + nf == 0)
        return GA_EINVAL;
    for (int i = nf; i < 9; i++)
        frac *= 10;
    int64_t v = sec * NS_PER_SEC + frac;
    *ns = neg ? -v : v;
    return 0;
}

/* ---- durations -------------------------------------------------------- */

#define MIN_NS  (60 * NS_PER_SEC)
#define HOUR_NS (60 * MIN_NS)
#define DAY_NS  (24 * HOUR_NS)

static const struct { const char *unit; int64_t ns; } units[] = {
    { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
    { "s", NS_PER_SEC }, { "sec", NS_PER_SEC }, { "second", NS_PER_SEC }, { "seconds", NS_PER_SEC },
    { "m", MIN_NS }, { "min", MIN_NS }, { "minute", MIN_NS }, { "minutes", MIN_NS },
    { "h", HOUR_NS }, { "hour", HOUR_NS }, { "hours", HOUR_NS },
    { "d", DAY_NS }, { "day", DAY_NS }, { "days", DAY_NS },
    { "w", 7 * DAY_NS }, { "week", 7 * DAY_NS }, { "weeks", 7 * DAY_NS },
};

int ts_parse_duration(const char *s, int64_t *ns)
{
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s) && *s != '.')
        return GA_EINVAL;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0)
        return GA_EINVAL;
    while (isspace((unsigned char)*end))
        end++;
    int64_t mul = NS_PER_SEC;
    if (*end) {
        size_t ulen = strlen(end);
        while (ulen && isspace((unsigned char)end[ulen - 1]))
            ulen--;
        mul = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strlen(units[i].unit) == ulen && strncmp(units[i].unit, end, ulen) == 0)
                mul = units[i].ns;
        if (!mul)
            return GA_EINVAL;
    }
    double r = v * (double)mul;
    if (r > 9.2e18)
        return GA_ERANGE;
    *ns = (int64_t)llround(r);
    return 0;
}

int ts_from_seconds(double sec, int64_t *ns)
{
    if (!isfinite(sec))
        return GA_EINVAL;
    /* |sec| < 2^34: floor and the subtraction below are exact */
    if (sec < -9223372037.0 || sec >= 9223372037.0) {
        *ns = sec < 0 ? INT64_MIN : INT64_MAX;
        return GA_ERANGE;
    }
    double ip = floor(sec);
    double f = sec - ip;                /* [0, 1), exact */
    double p = f * 1e9;
    double e = fma(f, 1e9, -p);         /* f * 1e9 == p + e exactly */
    double r = floor(p);
    double rem = (p - r) + e;           /* p - r exact; sign vs 0.5 preserved */
    int64_t fr = (int64_t)r + (rem >= 0.5);
    return combine((int64_t)ip, fr, ns);
}

int ts_format_rfc3339(int64_t ns, char *buf, size_t len)
{
    if (len < TS_RFC3339_LEN + 1)
        return GA_ERANGE;
    int64_t sec = ns / NS_PER_SEC, frac = ns % NS_PER_SEC;
    if (frac < 0) {
        frac += NS_PER_SEC;
        sec -= 1;
    }
    int64_t days = sec / 86400, sod = sec % 86400;
    if (sod < 0) {
        sod += 86400;
        days -= 1;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09dZ", (int)y, m, d, (int)(sod / 3600),
             (int)(sod / 60 % 60), (int)(sod % 60), (int)frac);
    return TS_RFC3339_LEN;
}

int ts_format_rfc3339_short(int64_t ns, char *buf, size_t len)
{
    if (ts_format_rfc3339(ns, buf, len) < 0)
        return GA_ERANGE;
    size_t k = TS_RFC3339_LEN - 1;              /* the 'Z' */
    while (buf[k - 1] == '0')
        k--;
    if (buf[k - 1] == '.')
        k--;
    buf[k] = 'Z', buf[k + 1] = '\0';
    return (int)k + 1;
}
