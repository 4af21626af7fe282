/* harness.h — the tiny in-tree unit test harness.
 *
 * A test file defines test functions and one `void run_tests(void)` that
 * calls RUN(fn) for each.  A test passes when none of its CHECKs fail; a
 * test that calls harness_skip (and returns) counts as skipped instead,
 * unless a CHECK failed.  The binary prints one line per failed CHECK and
 * one "SKIP test: reason" per skipped test, and ends with
 *   test_name: N passed, N failed, N skipped
 * and exits non-zero if anything failed.  tests/run.sh sums the counts and
 * lists the skipped tests with their reasons. */
#ifndef GA_HARNESS_H
#define GA_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void harness_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void harness_run(const char *name, void (*fn)(void));
/* Mark the running test skipped, with the reason it could not run (what is
 * missing: "no GPU: <probe's message>"); the test then returns.  Outside a
 * test (before any RUN) it counts one skipped test named after the binary. */
void harness_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The closing line and the exit status: what main returns after
 * run_tests; a test that stops early (a missing server) returns this. */
int harness_finish(void);
void run_tests(void);

/* Open a test data file: the path in environment variable env if set, else
 * rel under $GA_ROOT (the repo root; "." when unset).  A failure is a
 * failed check and returns NULL. */
FILE *harness_open_data(const char *env, const char *rel);
/* Decode hex ("-" = empty) into a malloc'd, NUL-terminated buffer of *n
 * bytes; the caller frees it. */
uint8_t *harness_unhex(const char *hex, size_t *n);
/* xorshift64: a small, repeatable generator for test data; *s non-zero. */
static inline uint64_t harness_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define RUN(fn) harness_run(#fn, fn)
#define CHECK(c) do { if (!(c)) harness_fail(__FILE__, __LINE__, "CHECK(%s)", #c); } while (0)
#define CHECK_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
    if (_a != _b) harness_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, _a, #b, _b); } while (0)
#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); \
    if (!_a || !_b || strcmp(_a, _b) != 0) harness_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a, _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)
#define CHECK_CONTAINS(hay, needle) do { const char *_h = (hay), *_n = (needle); \
    if (!_h || !strstr(_h, _n)) harness_fail(__FILE__, __LINE__, "%s == \"%s\" lacks \"%s\"", #hay, _h ? _h : "(null)", _n); } while (0)
#define CHECK_NEAR(a, b, rel) do { double _a = (a), _b = (b); \
    if (!(fabs(_a - _b) <= (rel) * fmax(fabs(_a), fabs(_b))) && !(_a == _b)) \
        harness_fail(__FILE__, __LINE__, "%s == %.17g, expected %.17g (rel %g)", #a, _a, _b, (double)(rel)); } while (0)

#endif
