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
 * a non-finite value; a reason out of range; a reject without error text.
 *
 * The same input is also read as a stream of Ceilometer's tcp:// framing
 * (proto/ceilometer_tcp.h: 8-byte little-endian length + body) and every
 * body it yields is decoded; a frame outside the input, over the limit or
 * not starting with a map marker aborts. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ceilometer.h"
#include "proto/ceilometer_tcp.h"
#include "proto/ga_err.h"

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

    size_t pos = 0, body;
    for (;;) {
        int r = ceilo_tcp_frame(data + pos, size - pos, 4096, &body);
        if (r == 0 || r == GA_ETOOBIG || r == GA_EPROTO)
            break;
        if (r != 1 || body == 0 || body > 4096 || body > size - pos - CEILO_TCP_HDR)
            abort();
        uint8_t m = data[pos + CEILO_TCP_HDR];
        if ((m & 0xf0) != 0x80 && m != 0xde && m != 0xdf)
            abort();
        check(ceilo_decode(data + pos + CEILO_TCP_HDR, body, secret, strlen(secret), &s, err, sizeof err),
              &s, err);
        pos += CEILO_TCP_HDR + body;
    }
    return 0;
}
