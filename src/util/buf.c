#include "tarn/buf.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

void tarn_buf_init(tarn_buf *b) { b->data = NULL, b->len = 0, b->cap = 0; }

void tarn_buf_free(tarn_buf *b) {
  free(b->data);
  tarn_buf_init(b);
}

void tarn_buf_reset(tarn_buf *b) { b->len = 0; }

int tarn_buf_reserve(tarn_buf *b, size_t extra) {
  if (extra > SIZE_MAX - b->len)
    return tarn__err(TARN_ERANGE, "buffer: size overflow");
  size_t need = b->len + extra;
  if (need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  uint8_t *p = realloc(b->data, cap);
  if (!p)
    return tarn__err(TARN_ENOMEM, "buffer: out of memory growing to %zu bytes", cap);
  b->data = p;
  b->cap = cap;
  return 0;
}

int tarn_buf_append(tarn_buf *b, const void *p, size_t n) {
  if (n == 0)
    return 0;
  int rc = tarn_buf_reserve(b, n);
  if (rc)
    return rc;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

int tarn_buf_putc(tarn_buf *b, uint8_t c) { return tarn_buf_append(b, &c, 1); }

int tarn_buf_put_be32(tarn_buf *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  return tarn_buf_append(b, x, 4);
}

int tarn_buf_put_be64(tarn_buf *b, uint64_t v) {
  uint8_t x[8];
  for (int i = 0; i < 8; i++)
    x[i] = (uint8_t)(v >> (56 - 8 * i));
  return tarn_buf_append(b, x, 8);
}

int tarn_buf_put_uvarint(tarn_buf *b, uint64_t v) {
  uint8_t x[10];
  size_t n = 0;
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    x[n++] = c | (v ? 0x80 : 0);
  } while (v);
  return tarn_buf_append(b, x, n);
}

uint8_t *tarn_buf_steal(tarn_buf *b, size_t *len) {
  uint8_t *p = b->data;
  if (len)
    *len = b->len;
  tarn_buf_init(b);
  return p;
}
