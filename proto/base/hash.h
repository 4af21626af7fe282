/* hash.h — the hash mixers: one for 32-bit keys, one for 64-bit keys, one
 * for byte strings.  Stable: the engine places metrics on backends with
 * ga_hash_fmix32, so its values must never change. */
#ifndef GA_BASE_HASH_H
#define GA_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* MurmurHash3's 32-bit finaliser. */
static inline uint32_t ga_hash_fmix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

/* MurmurHash3's 64-bit finaliser. */
static inline uint64_t ga_hash_fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* FNV-1a's 64-bit prime over s[0..len), from the offset 1469598103934665603
 * (not the published basis; it mixes as well, and the string maps built on
 * it keep their layout). */
static inline uint64_t ga_hash_fnv1a(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

#endif
