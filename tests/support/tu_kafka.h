/* Test helpers for the Kafka binding: record batches built from the published
 * layouts, with CRC32C from ISA-L and CRC32 from zlib, so that the checksums
 * do not come from tarn. */
#ifndef TU_KAFKA_H
#define TU_KAFKA_H

#include <stdint.h>

#include "tarn/buf.h"

/* Appends a v2 batch with n records of values "v<i>"; count and delta as
 * declared; its records compressed with the codec in attrs' bits 0-2. */
void tu_kafka_v2_batch(tarn_buf *out, int64_t base, uint16_t attrs, int32_t n, int32_t count,
                       int32_t delta);
/* A v2 batch of n records, declared consistently. */
void tu_kafka_v2_simple(tarn_buf *out, int32_t n);
/* n records, keys "k<i>" for i < keyed, null keys from there. */
void tu_kafka_v2_keyed(tarn_buf *out, int32_t n, int32_t keyed);
/* A v2 batch of n records whose timestamps are first_ts, first_ts + 1, ...
 * (its max timestamp first_ts + n - 1). */
void tu_kafka_v2_timed(tarn_buf *out, int32_t n, int64_t first_ts);
/* Appends a v0/v1 message with the given value (NULL: null value). */
void tu_kafka_legacy_msg(tarn_buf *out, int magic, int64_t offset, uint8_t attrs, const void *value,
                         size_t vlen);
/* Appends n uncompressed messages of value "x". */
void tu_kafka_inner_set(tarn_buf *set, int magic, int n);
/* Append the gzip, xerial-framed snappy, or LZ4 frame of in. */
void tu_kafka_gzip_of(tarn_buf *out, const tarn_buf *in);
void tu_kafka_snappy_xerial_of(tarn_buf *out, const tarn_buf *in);
void tu_kafka_lz4_of(tarn_buf *out, const tarn_buf *in);
/* Appends a compressed wrapper (codec TARN_KAFKA_GZIP, SNAPPY or LZ4) of n inner messages. */
void tu_kafka_wrapper(tarn_buf *out, int magic, int codec, int n);

/* A Fetch request of partition 0 of topic from offset (max_wait_ms,
 * max_bytes; min_bytes 1, partition_max_bytes 1 MiB) into q, whose topic and
 * partition entries are ft and fp (the caller's storage). */
struct tarn__k_fetch_req;
struct tarn__k_fetch_fetch_topic;
struct tarn__k_fetch_fetch_partition;
void tu_kafka_fetch_req(struct tarn__k_fetch_req *q, struct tarn__k_fetch_fetch_topic *ft,
                        struct tarn__k_fetch_fetch_partition *fp, const char *topic, int64_t offset,
                        int32_t max_wait_ms, int32_t max_bytes);

#endif
