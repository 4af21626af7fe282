/* crc32c.h — CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78),
 * the checksum of iSCSI, ext4 metadata and the gpuagg journal.
 *
 * Conventional form: initial value and final xor 0xFFFFFFFF, so
 * crc32c(0, "123456789", 9) == 0xE3069283 and chaining works:
 *   crc32c(crc32c(0, a, na), b, nb) == crc32c(0, a||b, na + nb).
 *
 * Two implementations: portable slice-by-8 tables, and the SSE4.2 crc32
 * instruction on x86-64 CPUs that have it (chosen once, at first call, with
 * __builtin_cpu_supports).  All functions are pure and thread-safe. */
#ifndef GA_CRC32C_H
#define GA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of buf[0..len) continuing from `crc` (0 to start).  buf may be
 * NULL when len is 0.  Uses the fastest implementation this CPU has. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable slice-by-8 implementation; same contract as crc32c(). */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* The SSE4.2 implementation; same contract as crc32c().  Call only when
 * crc32c_hw_available() returns 1 (otherwise it falls back to crc32c_sw). */
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len);

/* 1 when this CPU (and build) has the hardware instruction, else 0. */
int crc32c_hw_available(void);

#endif
