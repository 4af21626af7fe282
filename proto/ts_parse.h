/* ts_parse.h — the one parser of times and durations: RFC 3339 (the ingest
 * protocol, proto/INGEST.md §4; the control protocol), the looser ISO 8601
 * that Ceilometer, Gnocchi and Keystone write, seconds since the epoch (text
 * or float) and durations ("300", "5min", "30 days"), all to int64
 * nanoseconds; and nanoseconds back to RFC 3339 text.
 *
 * The int64 nanosecond range is 1677-09-21T00:12:43.145224192Z ..
 * 2262-04-11T23:47:16.854775807Z; anything outside it is GA_ERANGE.  All
 * arithmetic is integer except the float-seconds input, which is rounded to
 * the nearest nanosecond exactly (no double-precision product error).  No
 * function allocates, reads the environment or the time zone database. */
#ifndef GA_TS_PARSE_H
#define GA_TS_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Length of ts_format_rfc3339() output, "2026-11-21T15:04:05.123456789Z". */
#define TS_RFC3339_LEN 30

/* Parse an RFC 3339 date-time (RFC 3339 §5.6, "date-time"):
 *   YYYY-MM-DD ('T'|'t') hh:mm:ss [ '.' 1*9DIGIT ] ( 'Z'|'z' | ('+'|'-') hh:mm )
 *   s, len     the text; not NUL-terminated, no leading/trailing space allowed
 *   ns         out: nanoseconds since 1970-01-01T00:00:00Z
 *   err        out: on failure a reason naming the bad part, e.g.
 *              "month 13 out of range", "day 30 out of range for 2026-02";
 *              may be NULL when errlen is 0
 * Fields are range-checked (day against the month, leap years by the
 * Gregorian rule); second 60 is accepted (a leap second) and counts as the
 * next minute's second 0, as POSIX time does; 61 is not.  More than 9
 * fractional digits are rejected rather than rounded.  The offset is
 * subtracted: "00:30:00+01:00" is 23:30:00Z of the day before; "-00:00" is
 * the same as "Z".
 * Returns 0; GA_EINVAL for text that is not such a date-time (*ns
 * untouched); GA_ERANGE for a valid date-time outside the int64 range, with
 * *ns set to INT64_MIN (too early) or INT64_MAX (too late) so that the
 * caller can tell the two apart. */
int ts_parse_rfc3339(const char *s, size_t len, int64_t *ns, char *err, size_t errlen);

/* Parse the ISO 8601 date-time of Ceilometer samples, Gnocchi requests and
 * Keystone tokens: as ts_parse_rfc3339 (same arguments and returns) but
 *   - a space may stand for the 'T';
 *   - the zone may be left out (UTC), or be 'Z', +hh, +hhmm or +hh:mm;
 *   - second 60 and year 0000 are refused. */
int ts_parse_iso8601(const char *s, size_t len, int64_t *ns, char *err, size_t errlen);

/* Parse seconds since the epoch written in decimal, "[+-]DIGITS[.1..9
 * DIGITS]" ("1767323045", "-1.5", ".25"), exactly (no float rounding).
 *   s   NUL-terminated, nothing around the number
 * Returns 0 with *ns; GA_EINVAL for other text or more than 9 decimals;
 * GA_ERANGE past the int64 nanosecond range (*ns untouched). */
int ts_parse_seconds(const char *s, int64_t *ns);

/* Parse a duration: "300", "2.5" (seconds), or a number and a unit: ns, us,
 * ms, s, sec, second(s), m, min, minute(s), h, hour(s), d, day(s), w,
 * week(s), with or without a space ("5min", "30 days"); spaces around are
 * ignored.  s is NUL-terminated.  Returns 0 with *ns (rounded to the
 * nearest nanosecond), GA_EINVAL for other text or a negative number,
 * GA_ERANGE past ~292 years. */
int ts_parse_duration(const char *s, int64_t *ns);

/* Convert float seconds since the epoch to nanoseconds, rounding to the
 * nearest nanosecond (ties toward +infinity) from the double's exact value.
 * Returns 0; GA_EINVAL for NaN or ±infinity (*ns untouched); GA_ERANGE
 * outside the int64 range, *ns saturated to INT64_MIN or INT64_MAX. */
int ts_from_seconds(double sec, int64_t *ns);

/* Write ns as RFC 3339 in UTC with exactly 9 fractional digits and 'Z',
 * e.g. "1970-01-01T00:00:00.000000000Z", plus a NUL.  Every int64 value is
 * representable.
 *   buf, len   output buffer; needs len >= TS_RFC3339_LEN + 1
 * Returns TS_RFC3339_LEN, or GA_ERANGE (buf untouched) when len is short. */
int ts_format_rfc3339(int64_t ns, char *buf, size_t len);
/* The same with the fraction's trailing zeros left out, and the '.' when
 * ns is a whole second: "2026-11-22T15:04:05.5Z", "2026-11-22T15:04:05Z".
 * Returns the length written, or GA_ERANGE as ts_format_rfc3339. */
int ts_format_rfc3339_short(int64_t ns, char *buf, size_t len);

#endif
