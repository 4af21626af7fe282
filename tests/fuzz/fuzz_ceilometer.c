/* fuzz_ceilometer.c — libFuzzer target for ceilo_decode() (proto/
 * ceilometer.c, with proto/pystr.c and proto/sha256.c behind it).
 *
 * Each input is one datagram, decoded without a secret and with the secret
 * the seed corpus (tests/fuzz/corpus/ceilometer/) was signed with, so
 * mutations reach the signature code (pystr rendering of every value type,
 * key sorting) and the field checks behind it.  The first input byte is also
 * used to pick an odd secret length, so long (hashed) keys are covered.
 * Besides the sanitizers' findings, a broken promise of the API aborts:
 * CEILO_OK with a metric shorter than "r/n" or without its "/", an unknown counter_type or
 * a non-finite value; a reason out of range; a reject without error text. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ceilometer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int r, const struct ceilo_sample *s, const char *err)
{
    if (r < 0 || r >= CEILO_NREASONS)
        abort();
    if (r != CEILO_OK) {
        if (!err[0] || strcmp(ceilo_reject_name(r), "unknown") == 0)
            abort();
        return;
    }
    size_t n = strnlen(s->metric, sizeof s->metric);
    if (n == sizeof s->metric || n < 3 || !strchr(s->metric + 1, '/'))   /* rid, '/', name: non-empty */
        abort();
    if (strcmp(s->counter_type, "gauge") && strcmp(s->counter_type, "delta") &&
        strcmp(s->counter_type, "cumulative"))
        abort();
    if (!isfinite(s->value))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char secret[] = "change this for valid signing";
    static char long_secret[200];
    struct ceilo_sample s;
    char err[256];
    if (!long_secret[0])
        memset(long_secret, 'k', sizeof long_secret - 1);

    int r0 = ceilo_decode(data, size, NULL, 0, &s, err, sizeof err);
    check(r0, &s, err);
    int r1 = ceilo_decode(data, size, secret, strlen(secret), &s, err, sizeof err);
    check(r1, &s, err);
    /* verification only ever removes samples */
    if (r0 != CEILO_OK && r1 == CEILO_OK)
        abort();
    size_t klen = size ? 65 + data[0] % 100 : 1;
    check(ceilo_decode(data, size, long_secret, klen, &s, err, sizeof err), &s, err);
    return 0;
}
