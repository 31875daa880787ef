/* Shared inside src/format: the v0/v1 message parser and the batch
 * decompressors of the Kafka binding (kafka.c), for the record decoder
 * (kafka_records.c). */
#ifndef TARN_FORMAT_KAFKA_INTERNAL_H
#define TARN_FORMAT_KAFKA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

typedef struct tarn__kafka_legacy_msg {
  size_t len; /* 12 + messageSize */
  int magic;
  uint8_t attributes;
  uint32_t crc;
  int64_t offset, timestamp;
  const uint8_t *key, *value;
  int64_t key_len, value_len; /* -1: null */
} tarn__kafka_legacy_msg;

/* Parses one v0/v1 message at p (left bytes), its CRC32 checked. On a fault
 * writes why and *fault (the byte offset of the fault, relative to p) and
 * returns -1. */
int tarn__kafka_parse_legacy(const uint8_t *p, size_t left, tarn__kafka_legacy_msg *m,
                             size_t *fault, char *why, size_t wl);

/* Appends the decompressed bytes of in (codec TARN_KAFKA_GZIP, SNAPPY in
 * xerial framing or raw, LZ4 frame, ZSTD) to out, at most max bytes: 0; -1
 * with why for bad input; another negative TARN_E* (e.g. TARN_ENOMEM, or
 * -1000 for a magic 0 LZ4 frame with Kafka's old header checksum). */
int tarn__kafka_inflate(int codec, int magic, const uint8_t *in, size_t n, size_t max,
                        tarn_buf *out, char *why, size_t wl);

#endif
