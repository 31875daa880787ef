/* tarn — CRC32C (Castagnoli), the checksum of Kafka v2 record batches.
 *
 * The convention is zlib's crc32(): start with 0, feed the result of one call
 * to the next to checksum data in pieces; the value is the finished CRC
 * (pre- and post-inverted), so tarn_crc32c(0, "123456789", 9) == 0xe3069283. */
#ifndef TARN_CRC32C_H
#define TARN_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The CRC32C of n bytes at p, continuing from crc (0 to start). Uses the
 * SSE4.2 crc32 instruction when the CPU has it, else slicing-by-8 tables. */
uint32_t tarn_crc32c(uint32_t crc, const void *p, size_t n);

/* The same value computed by the portable table path only; for tests and
 * benchmarks that compare the two paths. */
uint32_t tarn_crc32c_portable(uint32_t crc, const void *p, size_t n);

/* True when tarn_crc32c() uses the hardware instruction on this CPU. */
int tarn_crc32c_hw(void);

#ifdef __cplusplus
}
#endif
#endif
