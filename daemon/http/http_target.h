/* http_target.h — the rules a request target (the path and query string of
 * the request line) must meet before it is routed, and the escaping of
 * request text quoted in log lines (docs/API.md "The listener").
 *
 * A target is refused with
 *   414  when it is longer than HTTP_TARGET_MAX_BYTES or its query string
 *        has more than HTTP_TARGET_MAX_PARAMS parameters ('&'-separated);
 *   400  when its path or its query string, percent-decoded, is not
 *        well-formed UTF-8, holds a NUL (%00, which would cut the decoded
 *        string short) or another character proto/name_check.h refuses
 *        (controls, bidirectional overrides, zero-width characters): the
 *        same rule as metric names and resource ids at the ingest door.
 * Pure functions, no state: shared by the listener (http_server.c) and the
 * fuzzer (tests/fuzz/fuzz_api.c). */
#ifndef GA_HTTP_TARGET_H
#define GA_HTTP_TARGET_H

#include <stddef.h>

#define HTTP_TARGET_MAX_BYTES 8192
#define HTTP_TARGET_MAX_PARAMS 256

/* Check the raw (not yet decoded) target t[0..n).  Returns 0 when it may
 * be routed, else the HTTP status (400 or 414) with why[whylen] set to one
 * line naming the problem ("query string has 3000 parameters, more than
 * 256"). */
int http_target_check(const char *t, size_t n, char *why, size_t whylen);

/* The number of query parameters of raw target t[0..n): 0 without '?' or
 * with an empty query, else 1 + the '&' after the '?'. */
size_t http_target_params(const char *t, size_t n);

/* s[0..n) made safe to quote in a log line: every byte outside printable
 * ASCII (below 0x20, 0x7f and up), '%', '"' and '\' written as %XX (as a
 * URL would carry it), so the line holds only printable ASCII and a path
 * reads as the client could have sent it.  Writes at most cap - 1 bytes
 * and a NUL into out (cap >= 1); a cut never splits a %XX.  Returns the
 * length written. */
size_t http_log_escape(char *out, size_t cap, const char *s, size_t n);

#endif
