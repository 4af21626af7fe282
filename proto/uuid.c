/* uuid.c — MD5 (RFC 1321 §3.4), SHA-1 (FIPS 180-4 §6.1) and the RFC 4122
 * name-based UUIDs built on them (see uuid.h). */
#include "proto/uuid.h"

#include <string.h>

static uint32_t rol(uint32_t x, int k)
{
    return (x << k) | (x >> (32 - k));
}

/* Both digests pad the same way and take 64-byte blocks; they differ in
 * the block function and in the byte order of the length and the state. */
struct md {
    uint32_t h[5];
    uint64_t len;
    uint8_t buf[64];
    size_t n;
    int big_endian;                      /* SHA-1 */
    void (*block)(uint32_t *h, const uint8_t *p);
};

/* RFC 1321: the per-step shifts and the sines' constants T[i]. */
static const int md5_s[64] = { 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                               5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                               4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                               6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21 };
static const uint32_t md5_t[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static void md5_block(uint32_t *h, const uint8_t *p)
{
    uint32_t x[16], a = h[0], b = h[1], c = h[2], d = h[3];
    for (int i = 0; i < 16; i++)
        x[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
               (uint32_t)p[4 * i + 3] << 24;
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        int g;
        if (i < 16)
            f = (b & c) | (~b & d), g = i;
        else if (i < 32)
            f = (d & b) | (~d & c), g = (5 * i + 1) & 15;
        else if (i < 48)
            f = b ^ c ^ d, g = (3 * i + 5) & 15;
        else
            f = c ^ (b | ~d), g = (7 * i) & 15;
        uint32_t t = d;
        d = c;
        c = b;
        b = b + rol(a + f + md5_t[i] + x[g], md5_s[i]);
        a = t;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d;
}

static void sha1_block(uint32_t *h, const uint8_t *p)
{
    uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20)
            f = (b & c) | (~b & d), k = 0x5A827999;
        else if (i < 40)
            f = b ^ c ^ d, k = 0x6ED9EBA1;
        else if (i < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
        else
            f = b ^ c ^ d, k = 0xCA62C1D6;
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static void md_update(struct md *m, const void *data, size_t len)
{
    const uint8_t *p = data;
    m->len += len;
    while (len) {
        size_t k = 64 - m->n < len ? 64 - m->n : len;
        memcpy(m->buf + m->n, p, k);
        m->n += k, p += k, len -= k;
        if (m->n == 64) {
            m->block(m->h, m->buf);
            m->n = 0;
        }
    }
}

/* Pad, append the length in bits, and write the first nwords state words. */
static void md_final(struct md *m, uint8_t *out, int nwords)
{
    uint64_t bits = m->len * 8;
    uint8_t pad[72] = { 0x80 };
    size_t npad = (m->n < 56 ? 56 : 120) - m->n;
    for (int i = 0; i < 8; i++)
        pad[npad + (size_t)i] = (uint8_t)(m->big_endian ? bits >> (56 - 8 * i) : bits >> (8 * i));
    md_update(m, pad, npad + 8);
    for (int i = 0; i < nwords; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(m->big_endian ? m->h[i] >> (24 - 8 * j) : m->h[i] >> (8 * j));
}

static void md_init(struct md *m, int sha1)
{
    static const uint32_t iv[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
    memset(m, 0, sizeof *m);
    memcpy(m->h, iv, sizeof iv);
    m->big_endian = sha1;
    m->block = sha1 ? sha1_block : md5_block;
}

/* The digest (SHA-1 when sha1, else MD5) of prefix[0..plen) then the
 * parts, its first nwords state words into out. */
static void digest(int sha1, const void *prefix, size_t plen, const struct ga_uuid_part *parts,
                   size_t n, uint8_t *out)
{
    struct md m;
    md_init(&m, sha1);
    md_update(&m, prefix, plen);
    for (size_t i = 0; i < n; i++)
        md_update(&m, parts[i].p, parts[i].len);
    md_final(&m, out, sha1 ? 5 : 4);
}

void ga_md5(const struct ga_uuid_part *parts, size_t n, uint8_t out[16])
{
    digest(0, NULL, 0, parts, n, out);
}

void ga_sha1(const struct ga_uuid_part *parts, size_t n, uint8_t out[20])
{
    digest(1, NULL, 0, parts, n, out);
}

void ga_uuid_named(int version, const uint8_t ns[16], const struct ga_uuid_part *parts, size_t n,
                   uint8_t out[16])
{
    uint8_t h[20];
    digest(version == 5, ns, 16, parts, n, h);
    h[6] = (uint8_t)((h[6] & 0x0f) | (version == 5 ? 0x50 : 0x30));
    h[8] = (uint8_t)((h[8] & 0x3f) | 0x80);
    memcpy(out, h, 16);
}

void ga_uuid_format(const uint8_t u[16], char out[GA_UUID_STR])
{
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[u[i] >> 4];
        *o++ = hex[u[i] & 15];
    }
    *o = '\0';
}

void ga_metric_uuid(const char *name, size_t len, uint8_t out[16])
{
    static const uint8_t ns[16] = { 0x5c, 0x1e, 0x5b, 0x8e, 0x07, 0xc5, 0x4c, 0x53,
                                    0xa2, 0xa5, 0x3f, 0x2b, 0x1d, 0x6e, 0x9a, 0x47 };
    struct ga_uuid_part p = { name, len };
    ga_uuid_named(3, ns, &p, 1, out);
}
