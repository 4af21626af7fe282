/* crc32c.c — CRC-32C, slice-by-8 and SSE4.2 (see crc32c.h). */
#include "storage/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_X86 1
#include <nmmintrin.h>
#else
#define CRC32C_X86 0
#endif

#define POLY 0x82F63B78u   /* 0x1EDC6F41 bit-reversed */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

/* Little-endian load whatever the host order; compilers make it one load. */
static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    pthread_once(&table_once, table_init);
    crc = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint32_t one = load_le32(p) ^ crc, two = load_le32(p + 4);
        crc = table[7][one & 0xff] ^ table[6][(one >> 8) & 0xff] ^
              table[5][(one >> 16) & 0xff] ^ table[4][one >> 24] ^
              table[3][two & 0xff] ^ table[2][(two >> 8) & 0xff] ^
              table[1][(two >> 16) & 0xff] ^ table[0][two >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if CRC32C_X86
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = (uint32_t)~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

int crc32c_hw_available(void)
{
#if CRC32C_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
    return 0;
#endif
}

uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
#if CRC32C_X86
    if (crc32c_hw_available())
        return crc32c_sse42(crc, buf, len);
#endif
    return crc32c_sw(crc, buf, len);
}

/* 0 = not yet probed, 1 = software, 2 = hardware; a benign race at first
 * use (every thread computes the same answer). */
static int impl;

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
    int which = __atomic_load_n(&impl, __ATOMIC_RELAXED);
    if (which == 0) {
        which = crc32c_hw_available() ? 2 : 1;
        __atomic_store_n(&impl, which, __ATOMIC_RELAXED);
    }
#if CRC32C_X86
    if (which == 2)
        return crc32c_sse42(crc, buf, len);
#endif
    return crc32c_sw(crc, buf, len);
}
