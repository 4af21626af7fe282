/* http_target.c — request-target rules and log escaping (see
 * http_target.h). */
#include "daemon/http/http_target.h"

#include <stdio.h>
#include <string.h>

#include "proto/name_check.h"

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decode s[0..n) into out (room for n bytes) as libmicrohttpd
 * does: "%XX" with two hex digits is the byte, anything else itself.
 * ('+' in a query string is a space to libmicrohttpd: ASCII either way.)
 * Returns the decoded length. */
static size_t decode(const char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval((unsigned char)s[i + 1])) >= 0 &&
            (lo = hexval((unsigned char)s[i + 2])) >= 0) {
            out[o++] = (unsigned char)(hi << 4 | lo);
            i += 2;
        } else {
            out[o++] = (unsigned char)s[i];
        }
    }
    return o;
}

size_t http_target_params(const char *t, size_t n)
{
    const char *q = memchr(t, '?', n);
    if (!q || q + 1 == t + n)
        return 0;
    size_t k = 1;
    for (const char *p = q + 1; p < t + n; p++)
        k += *p == '&';
    return k;
}

int http_target_check(const char *t, size_t n, char *why, size_t whylen)
{
    if (n > HTTP_TARGET_MAX_BYTES) {
        snprintf(why, whylen, "request target of %zu bytes, more than %d", n,
                 HTTP_TARGET_MAX_BYTES);
        return 414;
    }
    size_t k = http_target_params(t, n);
    if (k > HTTP_TARGET_MAX_PARAMS) {
        snprintf(why, whylen, "query string has %zu parameters, more than %d", k,
                 HTTP_TARGET_MAX_PARAMS);
        return 414;
    }
    const char *q = memchr(t, '?', n);
    size_t plen = q ? (size_t)(q - t) : n;
    unsigned char dec[HTTP_TARGET_MAX_BYTES];
    size_t dn = decode(t, plen, dec);
    if (name_check_reason("request path", dec, dn, why, whylen))
        return 400;
    if (q) {
        dn = decode(q + 1, n - plen - 1, dec);
        if (name_check_reason("query string", dec, dn, why, whylen))
            return 400;
    }
    return 0;
}

size_t http_log_escape(char *out, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int plain = c >= 0x20 && c < 0x7f && c != '%' && c != '"' && c != '\\';
        size_t need = plain ? 1 : 3;
        if (o + need + 1 > cap)
            break;
        if (plain) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return o;
}
