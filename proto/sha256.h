/* sha256.h — SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), written here
 * so that signature checks need no crypto library.
 *
 * Used to verify Ceilometer's message_signature (proto/ceilometer.c).  The
 * contexts hold no pointers and need no cleanup; they may live on the stack.
 * Not hardened against side channels beyond sha256_ct_equal(). */
#ifndef GA_SHA256_H
#define GA_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BLOCK  64
#define SHA256_DIGEST 32

struct sha256_ctx {
    uint32_t h[8];
    uint64_t nbytes;                 /* message length so far */
    uint8_t buf[SHA256_BLOCK];
    size_t nbuf;                     /* bytes waiting in buf */
};

struct hmac_sha256_ctx {
    struct sha256_ctx inner, outer;
};

/* Start a new hash. */
void sha256_init(struct sha256_ctx *c);
/* Add len bytes at p (p may be NULL when len is 0). */
void sha256_update(struct sha256_ctx *c, const void *p, size_t len);
/* Finish: write the 32-byte digest to out.  c must be re-initialised before
 * further use. */
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST]);
/* One-shot SHA-256 of p[0..len). */
void sha256(const void *p, size_t len, uint8_t out[SHA256_DIGEST]);

/* Start an HMAC-SHA256 with key[0..keylen) (any length; keys longer than
 * the block are hashed first, as RFC 2104 says). */
void hmac_sha256_init(struct hmac_sha256_ctx *c, const void *key, size_t keylen);
/* Add message bytes. */
void hmac_sha256_update(struct hmac_sha256_ctx *c, const void *p, size_t len);
/* Finish: write the 32-byte MAC to out. */
void hmac_sha256_final(struct hmac_sha256_ctx *c, uint8_t out[SHA256_DIGEST]);

/* Write the digest as 64 lowercase hex digits and a NUL to hex[65] (the form
 * of Python's hexdigest()). */
void sha256_hex(const uint8_t d[SHA256_DIGEST], char hex[2 * SHA256_DIGEST + 1]);

/* Compare a[0..alen) with b[0..blen) in time that depends only on the
 * lengths, not on where they differ (Python's hmac.compare_digest).
 * Returns 1 when equal, else 0. */
int sha256_ct_equal(const void *a, size_t alen, const void *b, size_t blen);

#endif
