/* tarn — a growable byte buffer that encoders write into. */
#ifndef TARN_BUF_H
#define TARN_BUF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_buf {
  uint8_t *data;
  size_t len;
  size_t cap;
} tarn_buf;

#define TARN_BUF_INIT                                                                              \
  { 0, 0, 0 }

void tarn_buf_init(tarn_buf *b);
void tarn_buf_free(tarn_buf *b);
/* Empties the buffer and keeps its memory. */
void tarn_buf_reset(tarn_buf *b);
/* Makes room for extra more bytes; TARN_ENOMEM or TARN_ERANGE on failure. */
int tarn_buf_reserve(tarn_buf *b, size_t extra);
int tarn_buf_append(tarn_buf *b, const void *p, size_t n);
int tarn_buf_putc(tarn_buf *b, uint8_t c);
int tarn_buf_put_be32(tarn_buf *b, uint32_t v);
int tarn_buf_put_be64(tarn_buf *b, uint64_t v);
/* Unsigned LEB128; values above 2^32-1 use up to 10 bytes. */
int tarn_buf_put_uvarint(tarn_buf *b, uint64_t v);
/* Hands the bytes to the caller (free() them) and empties the buffer. */
uint8_t *tarn_buf_steal(tarn_buf *b, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
