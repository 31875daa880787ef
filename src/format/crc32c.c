/* CRC32C (Castagnoli, reflected polynomial 0x82f63b78): the checksum of Kafka
 * v2 record batches (Appendix A, LS-095). Slicing-by-8 tables for any CPU,
 * and the SSE4.2 crc32 instruction on x86-64 behind a runtime CPU check; the
 * instruction path is compiled with a per-function target attribute so the
 * build's flags need not enable SSE4.2 for the whole library. */
#include "tarn/crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82f63b78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? c >> 1 ^ POLY : c >> 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      table[t][i] = table[t - 1][i] >> 8 ^ table[0][table[t - 1][i] & 0xff];
}

/* Little-endian load whatever the host order, so the slicing tables apply. */
static inline uint32_t ld_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t sw_update(uint32_t c, const uint8_t *p, size_t n) {
  pthread_once(&table_once, table_init);
  while (n && ((uintptr_t)p & 7)) {
    c = c >> 8 ^ table[0][(c ^ *p++) & 0xff];
    n--;
  }
  while (n >= 8) {
    uint32_t lo = ld_le32(p) ^ c, hi = ld_le32(p + 4);
    c = table[7][lo & 0xff] ^ table[6][lo >> 8 & 0xff] ^ table[5][lo >> 16 & 0xff] ^
        table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][hi >> 8 & 0xff] ^
        table[1][hi >> 16 & 0xff] ^ table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--)
    c = c >> 8 ^ table[0][(c ^ *p++) & 0xff];
  return c;
}

uint32_t tarn_crc32c_portable(uint32_t crc, const void *p, size_t n) {
  return ~sw_update(~crc, p, n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_HW 1
__attribute__((target("sse4.2"))) static uint32_t hw_update(uint32_t c, const uint8_t *p,
                                                            size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = __builtin_ia32_crc32qi(c, *p++);
    n--;
  }
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8); /* x86-64 is little-endian, as the instruction expects */
    c64 = __builtin_ia32_crc32di(c64, w);
    p += 8;
    n -= 8;
  }
  c = (uint32_t)c64;
  while (n--)
    c = __builtin_ia32_crc32qi(c, *p++);
  return c;
}

int tarn_crc32c_hw(void) {
  static int hw = -1; /* every thread computes the same answer, so a race is harmless */
  int v = __atomic_load_n(&hw, __ATOMIC_RELAXED);
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    __atomic_store_n(&hw, v, __ATOMIC_RELAXED);
  }
  return v;
}
#else
int tarn_crc32c_hw(void) { return 0; }
#endif

uint32_t tarn_crc32c(uint32_t crc, const void *p, size_t n) {
#ifdef HAVE_HW
  if (tarn_crc32c_hw())
    return ~hw_update(~crc, p, n);
#endif
  return ~sw_update(~crc, p, n);
}
