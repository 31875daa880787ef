/* tarn — the Kafka binding's entry payloads (spec Appendix A; tables §3.10, §3.11).
 *
 * A Kafka entry payload is exactly one or more complete Kafka record batches
 * (LS-095): magic 2 RecordBatch headers, or magic 0/1 message-set entries
 * (a shallow message, or a compressed wrapper whose value holds inner
 * messages). This module checks the binding's rules on a payload, assigns the
 * batches their offsets (LS-099), and rewrites their offset fields the way
 * UFK's reader does before handing batches to a Kafka client (§3.11). */
#ifndef TARN_KAFKA_H
#define TARN_KAFKA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The compression codec in a batch's attributes (bits 0-2). */
enum {
  TARN_KAFKA_NONE = 0,
  TARN_KAFKA_GZIP = 1,
  TARN_KAFKA_SNAPPY = 2,
  TARN_KAFKA_LZ4 = 3,
  TARN_KAFKA_ZSTD = 4 /* magic 2 only */
};

/* v2 attribute bits. */
#define TARN_KAFKA_ATTR_TRANSACTIONAL 0x10
#define TARN_KAFKA_ATTR_CONTROL 0x20

/* The default cap on the bytes one compressed v0/v1 wrapper may inflate to
 * while its inner messages are counted. */
#define TARN_KAFKA_MAX_INFLATE ((size_t)64 << 20)

typedef struct tarn_kafka_batch {
  size_t pos, len; /* the batch's bytes in the payload */
  int magic;
  int64_t base_offset;  /* as stored: baseOffset (v2) or the wrapper's offset (v0/v1) */
  int64_t first_offset; /* the offsets assigned to its records (LS-099) */
  int64_t last_offset;
  uint32_t record_count;          /* v2: declared; v0/v1: 1, or the inner messages of a wrapper */
  uint16_t attributes;            /* v0/v1: the message's 8-bit attributes */
  int compression;                /* TARN_KAFKA_* */
  uint32_t crc;                   /* stored; checked (CRC32C for v2, CRC32 for v0/v1) */
  int32_t partition_leader_epoch; /* v2 only, else -1 */
  int32_t last_offset_delta;      /* v2; v0/v1: record_count - 1 */
  int64_t base_timestamp;         /* v2 baseTimestamp; v1 the message timestamp; v0 -1 */
  int64_t max_timestamp;          /* v2 maxTimestamp; v1 the message timestamp; v0 -1 */
  int64_t producer_id;            /* v2 only, else -1 */
  int16_t producer_epoch;         /* v2 only, else -1 */
  int32_t base_sequence;          /* v2 only, else -1 */
} tarn_kafka_batch;

typedef struct tarn_kafka_iter {
  const uint8_t *p;
  size_t len, off;
  int64_t next;     /* the offset the next batch starts at */
  uint64_t records; /* records of the batches returned so far */
  size_t batches;
  size_t max_inflate; /* per compressed v0/v1 wrapper; set after init to change */
} tarn_kafka_iter;

/* Starts iterating over the batches of a payload whose entry starts at
 * entry_offset (use 0 when it is not known). */
void tarn_kafka_iter_init(tarn_kafka_iter *it, const void *payload, size_t len,
                          int64_t entry_offset);
/* Decodes and checks the next batch: 1 and *b filled, 0 at the end of the
 * payload, or a negative TARN_E* (TARN_ECORRUPT "kafka entry payload: byte
 * N: ..." for a payload that breaks the format or LS-095 … LS-098). An empty
 * payload is an error: it holds no batch. */
int tarn_kafka_iter_next(tarn_kafka_iter *it, tarn_kafka_batch *b);

/* Checks a whole payload; record_count < 0 means the entry's record count is
 * not known, else the batches' records must add up to it (LS-095). The total
 * goes to *records when records is not NULL. */
int tarn_kafka_check(const void *payload, size_t len, int64_t record_count, uint64_t *records);

/* Checks the payload as tarn_kafka_check() does, then rewrites each batch's
 * offset field in place for an entry at entry_offset (§3.11): v2 baseOffset
 * := the batch's first offset; v0/v1 offset := its last offset. CRCs are not
 * touched: neither field lies under its batch's CRC. Nothing is written when
 * the check fails. */
int tarn_kafka_rewrite_offsets(void *payload, size_t len, int64_t entry_offset,
                               int64_t record_count);

/* ---- magic 0/1 message sets at the listener (src/format/kafka_legacy.c) -- */

struct tarn_buf;
/* For Produce v0-2: a payload that passes tarn_kafka_check, its compressed
 * v0/v1 wrappers whose inner offsets the binding's reader cannot assign (magic
 * 0: absolute; magic 1: not 0 … n-1) replaced by their inner messages, into
 * out with *changed = 1; *changed = 0 and out untouched when none is. The
 * record count stays. */
int tarn_kafka_legacy_flatten(const void *payload, size_t len, struct tarn_buf *out, int *changed);
/* For Fetch v0-3: batches whose offset fields tarn_kafka_rewrite_offsets set
 * (one or more entries in a row), as a message set of uncompressed messages
 * of magic 0 or 1 appended to out: each record at or after offset from, in
 * order, while the set stays within max_bytes (its first record whatever its
 * size). Headers are dropped, as Kafka's down-conversion drops them. */
int tarn_kafka_down_convert(const void *data, size_t len, int magic, int64_t from, size_t max_bytes,
                            struct tarn_buf *out);

/* ---- records, for display (src/format/kafka_records.c) ------------------ */

typedef struct tarn_kafka_header {
  const uint8_t *key;
  size_t key_len;
  const uint8_t *value;
  int64_t value_len; /* -1: null */
} tarn_kafka_header;

typedef struct tarn_kafka_record {
  int64_t offset;    /* the batch's first offset (LS-099) + the record's delta */
  int64_t timestamp; /* -1 when the batch has none (magic 0) */
  const uint8_t *key, *value;
  int64_t key_len, value_len;       /* -1: null */
  const tarn_kafka_header *headers; /* magic 2 only */
  size_t n_headers;
  const tarn_kafka_batch *batch;
} tarn_kafka_record;

/* Calls cb for each record of the payload of an entry at entry_offset, in
 * order, decompressing compressed batches (gzip, snappy, lz4, zstd; at most
 * max_inflate bytes each, 0: TARN_KAFKA_MAX_INFLATE). The payload is checked
 * as tarn_kafka_iter_next does; a record that does not decode gives
 * TARN_ECORRUPT naming the batch and the record. cb's non-zero return stops
 * the walk and is returned. Pointers in *r are valid during the call. */
typedef int (*tarn_kafka_record_cb)(void *arg, const tarn_kafka_record *r);
int tarn_kafka_records(const void *payload, size_t len, int64_t entry_offset, size_t max_inflate,
                       tarn_kafka_record_cb cb, void *arg);

#ifdef __cplusplus
}
#endif
#endif
