/* Big-endian loads and stores, and a bounds-checked cursor for total decoders.
 *
 * A decoder wraps its input in a tarn__rd, naming the structure; every read
 * checks the bytes left first and reports a fault through tarn__corrupt()
 * with the structure's name and the byte offset, so no decoder can overread. */
#ifndef TARN_UTIL_BYTES_H
#define TARN_UTIL_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

static inline uint32_t tarn__ld_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t tarn__ld_be64(const uint8_t *p) {
  return (uint64_t)tarn__ld_be32(p) << 32 | tarn__ld_be32(p + 4);
}
static inline uint32_t tarn__ld_le32(const uint8_t *p) {
  return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static inline void tarn__st_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}
static inline void tarn__st_be64(uint8_t *p, uint64_t v) {
  tarn__st_be32(p, (uint32_t)(v >> 32));
  tarn__st_be32(p + 4, (uint32_t)v);
}
static inline void tarn__st_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

typedef struct tarn__rd {
  const uint8_t *p;
  size_t len;
  size_t off;       /* next byte to read, relative to p */
  size_t base;      /* added to off in messages: the cursor's place in a larger input */
  const char *what; /* the structure's name, for messages */
} tarn__rd;

static inline void tarn__rd_init(tarn__rd *r, const void *p, size_t len, const char *what) {
  r->p = (const uint8_t *)p, r->len = len, r->off = 0, r->base = 0, r->what = what;
}
static inline size_t tarn__rd_left(const tarn__rd *r) { return r->len - r->off; }

/* Fails unless n more bytes are there; field names what was being read. */
static inline int tarn__rd_need(tarn__rd *r, size_t n, const char *field) {
  if (n > r->len - r->off)
    return tarn__corrupt(r->what, r->base + r->off, "%s needs %zu bytes, %zu left", field, n,
                         r->len - r->off);
  return 0;
}
static inline int tarn__rd_be32(tarn__rd *r, uint32_t *v, const char *field) {
  int rc = tarn__rd_need(r, 4, field);
  if (rc)
    return rc;
  *v = tarn__ld_be32(r->p + r->off);
  r->off += 4;
  return 0;
}
static inline int tarn__rd_be64(tarn__rd *r, uint64_t *v, const char *field) {
  int rc = tarn__rd_need(r, 8, field);
  if (rc)
    return rc;
  *v = tarn__ld_be64(r->p + r->off);
  r->off += 8;
  return 0;
}
static inline int tarn__rd_bytes(tarn__rd *r, size_t n, const uint8_t **out, const char *field) {
  int rc = tarn__rd_need(r, n, field);
  if (rc)
    return rc;
  *out = r->p + r->off;
  r->off += n;
  return 0;
}
/* An unsigned LEB128 of at most max_bytes bytes whose value fits in max_value. */
static inline int tarn__rd_uvarint(tarn__rd *r, uint64_t *v, unsigned max_bytes, uint64_t max_value,
                                   const char *field) {
  size_t start = r->off;
  uint64_t x = 0;
  for (unsigned i = 0;; i++) {
    if (i == max_bytes)
      return tarn__corrupt(r->what, r->base + start, "%s: varint longer than %u bytes", field,
                           max_bytes);
    if (r->off >= r->len)
      return tarn__corrupt(r->what, r->base + r->off, "%s: varint truncated", field);
    uint8_t c = r->p[r->off++];
    if (i == 9 && c > 1)
      return tarn__corrupt(r->what, r->base + start, "%s: varint overflows 64 bits", field);
    x |= (uint64_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80))
      break;
  }
  if (x > max_value)
    return tarn__corrupt(r->what, r->base + start, "%s: %llu exceeds %llu", field,
                         (unsigned long long)x, (unsigned long long)max_value);
  *v = x;
  return 0;
}

#endif
