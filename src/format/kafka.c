/* The Kafka binding's entry payloads (spec Appendix A, LS-095 … LS-099;
 * tables-and-vectors §3.11). The layouts are Kafka's:
 *
 * magic 2 RecordBatch (61-byte header, then the records):
 *   0 baseOffset int64 | 8 batchLength int32 (bytes after this field)
 *   12 partitionLeaderEpoch int32 | 16 magic int8 | 17 crc uint32 (CRC32C of
 *   byte 21 to the end) | 21 attributes int16 | 23 lastOffsetDelta int32
 *   27 baseTimestamp int64 | 35 maxTimestamp int64 | 43 producerId int64
 *   51 producerEpoch int16 | 53 baseSequence int32 | 57 records count int32
 *
 * magic 0/1 message (one message-set entry):
 *   0 offset int64 | 8 messageSize int32 (bytes after this field)
 *   12 crc uint32 (CRC32 of byte 16 to the end) | 16 magic int8
 *   17 attributes int8 | [18 timestamp int64, magic 1] | key bytes | value bytes
 * where bytes = int32 length (-1 for null) and the data. A compressed message
 * (attributes bits 0-2) is a wrapper: its value is a compressed message set
 * of uncompressed inner messages, one record each. */
#include "tarn/kafka.h"

#define LZ4F_STATIC_LINKING_ONLY /* LZ4F_getErrorCode, exported by the shared library too */
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "format/gunzip.h"
#include "format/kafka_internal.h"
#include "tarn/buf.h"
#include "tarn/crc32c.h"
#include "util/bytes.h"
#include "util/error.h"

#define WHAT "kafka entry payload"
#define V2_HEADER 61
#define V2_MIN_LENGTH (V2_HEADER - 12)

void tarn_kafka_iter_init(tarn_kafka_iter *it, const void *payload, size_t len,
                          int64_t entry_offset) {
  memset(it, 0, sizeof *it);
  it->p = payload;
  it->len = len;
  it->next = entry_offset;
  it->max_inflate = TARN_KAFKA_MAX_INFLATE;
}

static int16_t ld_be16(const uint8_t *p) { return (int16_t)((uint16_t)p[0] << 8 | p[1]); }

/* ---- magic 2 ------------------------------------------------------------- */

static int parse_v2(tarn_kafka_iter *it, tarn_kafka_batch *b) {
  const uint8_t *p = it->p + it->off;
  size_t at = it->off, left = it->len - it->off, nb = it->batches;
  uint32_t blen = tarn__ld_be32(p + 8);
  if (blen < V2_MIN_LENGTH || blen > INT32_MAX)
    return tarn__corrupt(WHAT, at + 8, "batch %zu: batchLength %d is below the %d of a header", nb,
                         (int32_t)blen, V2_MIN_LENGTH);
  if (blen > left - 12) /* LS-095: complete batches only */
    return tarn__corrupt(WHAT, at + 8,
                         "batch %zu: batchLength %u runs past the payload's end (%zu bytes left)",
                         nb, blen, left - 12);
  b->len = 12 + (size_t)blen;
  b->base_offset = (int64_t)tarn__ld_be64(p);
  b->partition_leader_epoch = (int32_t)tarn__ld_be32(p + 12);
  b->crc = tarn__ld_be32(p + 17);
  b->attributes = (uint16_t)ld_be16(p + 21);
  b->last_offset_delta = (int32_t)tarn__ld_be32(p + 23);
  b->base_timestamp = (int64_t)tarn__ld_be64(p + 27);
  b->max_timestamp = (int64_t)tarn__ld_be64(p + 35);
  b->producer_id = (int64_t)tarn__ld_be64(p + 43);
  b->producer_epoch = ld_be16(p + 51);
  b->base_sequence = (int32_t)tarn__ld_be32(p + 53);
  int32_t count = (int32_t)tarn__ld_be32(p + 57);
  uint32_t crc = tarn_crc32c(0, p + 21, b->len - 21);
  if (crc != b->crc) /* LS-095: the bytes of a Kafka record batch */
    return tarn__corrupt(WHAT, at + 17, "batch %zu: CRC32C is %08x, the batch says %08x", nb, crc,
                         b->crc);
  b->compression = b->attributes & 7;
  if (b->compression > TARN_KAFKA_ZSTD)
    return tarn__corrupt(WHAT, at + 21, "batch %zu: unknown compression codec %d", nb,
                         b->compression);
  if (b->attributes & TARN_KAFKA_ATTR_CONTROL) /* LS-098 */
    return tarn__corrupt(WHAT, at + 21, "batch %zu: a control batch is not allowed in an entry",
                         nb);
  if (b->attributes & TARN_KAFKA_ATTR_TRANSACTIONAL) /* LS-098 */
    return tarn__corrupt(WHAT, at + 21,
                         "batch %zu: a transactional batch is not allowed in an entry", nb);
  if (b->base_offset != 0) /* LS-096 */
    return tarn__corrupt(WHAT, at, "batch %zu: baseOffset is %lld, not 0", nb,
                         (long long)b->base_offset);
  if (count <= 0) /* LS-096 */
    return tarn__corrupt(WHAT, at + 57, "batch %zu: record count %d is not positive", nb, count);
  if ((int64_t)b->last_offset_delta + 1 != count) /* LS-096 */
    return tarn__corrupt(WHAT, at + 23,
                         "batch %zu: record count %d differs from lastOffsetDelta %d + 1", nb,
                         count, b->last_offset_delta);
  b->record_count = (uint32_t)count;
  return 0;
}

/* ---- magic 0 and 1 ------------------------------------------------------- */

typedef tarn__kafka_legacy_msg legacy_msg;
#define parse_legacy tarn__kafka_parse_legacy

int tarn__kafka_parse_legacy(const uint8_t *p, size_t left, legacy_msg *m, size_t *fault, char *why,
                             size_t wl) {
  if (left < 17) {
    *fault = 0;
    snprintf(why, wl, "message header needs 17 bytes, %zu left", left);
    return -1;
  }
  uint32_t size = tarn__ld_be32(p + 8);
  m->magic = p[16];
  size_t min = m->magic == 0 ? 14 : 22;
  if (size < min || size > INT32_MAX) {
    *fault = 8;
    snprintf(why, wl, "messageSize %d is below the %zu of a magic %d message", (int32_t)size, min,
             m->magic);
    return -1;
  }
  if (size > left - 12) {
    *fault = 8;
    snprintf(why, wl, "messageSize %u runs past the end (%zu bytes left)", size, left - 12);
    return -1;
  }
  m->len = 12 + (size_t)size;
  m->offset = (int64_t)tarn__ld_be64(p);
  m->crc = tarn__ld_be32(p + 12);
  uint32_t crc = (uint32_t)crc32(0, p + 16, (uInt)size - 4);
  if (crc != m->crc) {
    *fault = 12;
    snprintf(why, wl, "CRC32 is %08x, the message says %08x", crc, m->crc);
    return -1;
  }
  m->attributes = p[17];
  size_t q = 18;
  m->timestamp = -1;
  if (m->magic == 1)
    m->timestamp = (int64_t)tarn__ld_be64(p + 18), q = 26;
  for (int k = 0; k < 2; k++) { /* key, then value */
    if (m->len - q < 4) {
      *fault = q;
      snprintf(why, wl, "%s length runs past the message", k ? "value" : "key");
      return -1;
    }
    int32_t n = (int32_t)tarn__ld_be32(p + q);
    q += 4;
    if (n < -1 || (n > 0 && (size_t)n > m->len - q)) {
      *fault = q - 4;
      snprintf(why, wl, "%s length %d does not fit the message", k ? "value" : "key", n);
      return -1;
    }
    if (k)
      m->value = p + q, m->value_len = n;
    else
      m->key = p + q, m->key_len = n;
    q += n > 0 ? (size_t)n : 0;
  }
  if (q != m->len) {
    *fault = q;
    snprintf(why, wl, "%zu bytes after the value inside the message", m->len - q);
    return -1;
  }
  return 0;
}

static int unsnappy_block(const uint8_t *in, size_t n, size_t max, tarn_buf *out, char *why,
                          size_t wl) {
  size_t u;
  if (snappy_uncompressed_length((const char *)in, n, &u) != SNAPPY_OK) {
    snprintf(why, wl, "snappy: bad block header");
    return -1;
  }
  if (u > max - out->len) {
    snprintf(why, wl, "decompresses past the limit of %zu bytes", max);
    return -1;
  }
  int rc = tarn_buf_reserve(out, u + 1);
  if (rc)
    return rc;
  size_t got = u;
  if (snappy_uncompress((const char *)in, n, (char *)out->data + out->len, &got) != SNAPPY_OK ||
      got != u) {
    snprintf(why, wl, "snappy: corrupt block");
    return -1;
  }
  out->len += got;
  return 0;
}

/* Kafka's snappy is xerial's stream framing: a 16-byte header (magic
 * 82 'SNAPPY' 00, version, compatible version), then [int32 BE n][n bytes of
 * a snappy block] chunks. Without the magic, xerial reads one raw block. */
static int unsnappy(const uint8_t *in, size_t n, size_t max, tarn_buf *out, char *why, size_t wl) {
  static const uint8_t magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
  if (n < 16 || memcmp(in, magic, 8) != 0)
    return unsnappy_block(in, n, max, out, why, wl);
  for (size_t q = 16; q < n;) {
    if (n - q < 4) {
      snprintf(why, wl, "snappy: chunk length truncated");
      return -1;
    }
    uint32_t c = tarn__ld_be32(in + q);
    q += 4;
    if (c > n - q) {
      snprintf(why, wl, "snappy: chunk of %u bytes runs past the value", c);
      return -1;
    }
    int rc = unsnappy_block(in + q, c, max, out, why, wl);
    if (rc)
      return rc;
    q += c;
  }
  return 0;
}

/* unlz4's result for a magic 0 frame with Kafka's old header checksum: apart
 * from every TARN_E* (TARN_ENOMEM is -2) and from -1, bad input. */
#define LZ4_OLD_CHECKSUM (-1000)

/* Kafka's lz4 is the LZ4 frame format. (Magic 0 wrappers from old clients
 * carry a wrong frame-header checksum; liblz4 refuses those.) */
static int unlz4(const uint8_t *in, size_t n, size_t max, int magic, tarn_buf *out, char *why,
                 size_t wl) {
  LZ4F_dctx *d;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
    return tarn__err(TARN_ENOMEM, "LZ4F_createDecompressionContext failed");
  int rc = 0;
  size_t q = 0, hint = 1;
  while (hint) {
    size_t room = max - out->len, chunk = room < 65535 ? room + 1 : 65536;
    if ((rc = tarn_buf_reserve(out, chunk)))
      break;
    size_t dst = chunk, src = n - q;
    hint = LZ4F_decompress(d, out->data + out->len, &dst, in + q, &src, NULL);
    if (LZ4F_isError(hint)) {
      snprintf(why, wl, "lz4: %s", LZ4F_getErrorName(hint));
      /* Kafka before 0.10 computed the frame-header checksum over the wrong
       * bytes (KAFKA-3160); liblz4 has no switch to read such frames. */
      rc = magic == 0 && LZ4F_getErrorCode(hint) == LZ4F_ERROR_headerChecksum_invalid
               ? LZ4_OLD_CHECKSUM
               : -1;
      break;
    }
    q += src;
    out->len += dst;
    if (out->len > max) {
      snprintf(why, wl, "decompresses past the limit of %zu bytes", max);
      rc = -1;
      break;
    }
    if (hint && q == n && dst == 0) {
      snprintf(why, wl, "lz4: frame truncated");
      rc = -1;
      break;
    }
  }
  if (!rc && q != n) {
    snprintf(why, wl, "%zu bytes after the lz4 frame", n - q);
    rc = -1;
  }
  LZ4F_freeDecompressionContext(d);
  return rc;
}

int tarn__kafka_inflate(int codec, int magic, const uint8_t *in, size_t n, size_t max,
                        tarn_buf *out, char *why, size_t wl) {
  size_t fault = 0;
  if (codec == TARN_KAFKA_GZIP)
    return tarn__gunzip(out, in, n, max, 0, &fault, why, wl);
  if (codec == TARN_KAFKA_SNAPPY)
    return unsnappy(in, n, max, out, why, wl);
  if (codec == TARN_KAFKA_LZ4)
    return unlz4(in, n, max, magic, out, why, wl);
  if (codec != TARN_KAFKA_ZSTD) {
    snprintf(why, wl, "unknown compression codec %d", codec);
    return -1;
  }
  /* zstd frames, streamed: the content size in a frame header is optional */
  ZSTD_DStream *z = ZSTD_createDStream();
  if (!z)
    return tarn__err(TARN_ENOMEM, "ZSTD_createDStream failed");
  ZSTD_inBuffer ib = {in, n, 0};
  size_t r = 1;
  int rc = 0;
  while (!rc && (ib.pos < ib.size || r != 0)) {
    if ((rc = tarn_buf_reserve(out, 65536)))
      break;
    ZSTD_outBuffer ob = {out->data + out->len, 65536, 0};
    size_t before = ib.pos;
    r = ZSTD_decompressStream(z, &ob, &ib);
    out->len += ob.pos;
    if (ZSTD_isError(r)) {
      snprintf(why, wl, "zstd: %s", ZSTD_getErrorName(r));
      rc = -1;
    } else if (out->len > max) {
      snprintf(why, wl, "decompresses past the limit of %zu bytes", max);
      rc = -1;
    } else if (r != 0 && ib.pos == ib.size && ib.pos == before && ob.pos == 0) {
      snprintf(why, wl, "zstd: frame truncated");
      rc = -1;
    }
  }
  ZSTD_freeDStream(z);
  return rc;
}

/* Counts the inner messages of a compressed wrapper (LS-097, §3.11). */
static int count_inner(tarn_kafka_iter *it, const legacy_msg *w, size_t at, size_t nb,
                       uint32_t *count) {
  char why[160];
  size_t fault = 0;
  if (w->value_len < 0)
    return tarn__corrupt(WHAT, at, "batch %zu: compressed wrapper has a null value", nb);
  tarn_buf raw = TARN_BUF_INIT;
  int codec = w->attributes & 7;
  int rc = tarn__kafka_inflate(codec, w->magic, w->value, (size_t)w->value_len, it->max_inflate,
                               &raw, why, sizeof why);
  if (rc == LZ4_OLD_CHECKSUM)
    rc = tarn__err(TARN_EUNSUPPORTED,
                   WHAT ": byte %zu: batch %zu: an lz4 wrapper of magic 0 with the frame-header "
                        "checksum of Kafka before 0.10 is not supported",
                   at, nb);
  if (rc == -1)
    rc = tarn__corrupt(WHAT, at, "batch %zu: compressed wrapper (%s): %s", nb,
                       codec == TARN_KAFKA_GZIP     ? "gzip"
                       : codec == TARN_KAFKA_SNAPPY ? "snappy"
                                                    : "lz4",
                       why);
  uint64_t n = 0;
  for (size_t q = 0; !rc && q < raw.len; n++) {
    legacy_msg m;
    if (parse_legacy(raw.data + q, raw.len - q, &m, &fault, why, sizeof why))
      rc = tarn__corrupt(
          WHAT, at, "batch %zu: compressed wrapper: inner message %llu (inflated byte %zu): %s", nb,
          (unsigned long long)n, q + fault, why);
    else if (m.magic != w->magic)
      rc = tarn__corrupt(WHAT, at,
                         "batch %zu: inner message %llu has magic %d in a magic %d wrapper", nb,
                         (unsigned long long)n, m.magic, w->magic);
    else if (m.attributes & 7)
      rc = tarn__corrupt(WHAT, at, "batch %zu: inner message %llu is itself compressed", nb,
                         (unsigned long long)n);
    else if (n >= INT32_MAX)
      rc = tarn__corrupt(WHAT, at, "batch %zu: more than 2^31-1 inner messages", nb);
    if (!rc) /* m is unset when parse_legacy failed */
      q += m.len;
  }
  tarn_buf_free(&raw);
  if (!rc && n == 0) /* LS-097 */
    rc = tarn__corrupt(WHAT, at, "batch %zu: compressed wrapper holds no record", nb);
  *count = (uint32_t)n;
  return rc;
}

static int parse_v01(tarn_kafka_iter *it, tarn_kafka_batch *b) {
  size_t at = it->off, nb = it->batches, fault;
  char why[160];
  legacy_msg m;
  if (parse_legacy(it->p + at, it->len - at, &m, &fault, why, sizeof why))
    return tarn__corrupt(WHAT, at + fault, "batch %zu: %s", nb, why);
  b->len = m.len;
  b->base_offset = m.offset;
  b->crc = m.crc;
  b->attributes = m.attributes;
  b->compression = m.attributes & 7;
  b->base_timestamp = b->max_timestamp = m.timestamp;
  b->partition_leader_epoch = -1, b->producer_id = -1, b->producer_epoch = -1;
  b->base_sequence = -1;
  if (b->compression > TARN_KAFKA_LZ4)
    return tarn__corrupt(WHAT, at + 17, "batch %zu: compression codec %d in a magic %d message", nb,
                         b->compression, m.magic);
  if (b->compression == TARN_KAFKA_NONE) {
    b->record_count = 1; /* a shallow message is one record (LS-097) */
  } else {
    int rc = count_inner(it, &m, at, nb, &b->record_count);
    if (rc)
      return rc;
  }
  b->last_offset_delta = (int32_t)(b->record_count - 1);
  return 0;
}

int tarn_kafka_iter_next(tarn_kafka_iter *it, tarn_kafka_batch *b) {
  if (it->off == it->len) {
    if (it->batches == 0) /* LS-095: one or more batches */
      return tarn__corrupt(WHAT, 0, "holds no record batch");
    return 0;
  }
  memset(b, 0, sizeof *b);
  size_t left = it->len - it->off;
  if (left < 17) /* offset, length, and the magic byte at 16 in every layout */
    return tarn__corrupt(WHAT, it->off, "batch %zu: header needs at least 17 bytes, %zu left",
                         it->batches, left);
  b->pos = it->off;
  b->magic = it->p[it->off + 16];
  int rc;
  if (b->magic == 2)
    rc = parse_v2(it, b);
  else if (b->magic <= 1)
    rc = parse_v01(it, b);
  else
    rc = tarn__corrupt(WHAT, it->off + 16, "batch %zu: unknown magic %d", it->batches, b->magic);
  if (rc)
    return rc;
  /* LS-099: the batch takes the next record_count offsets. */
  if (it->next < 0 || (uint64_t)it->next + b->record_count - 1 > INT64_MAX)
    return tarn__err(TARN_ERANGE, WHAT ": batch %zu: offsets from %lld overflow int64", it->batches,
                     (long long)it->next);
  b->first_offset = it->next;
  b->last_offset = it->next + ((int64_t)b->record_count - 1);
  /* After INT64_MAX no offset is left: a negative next fails the next batch. */
  it->next = b->last_offset == INT64_MAX ? -1 : b->last_offset + 1;
  it->records += b->record_count;
  it->off += b->len;
  it->batches++;
  return 1;
}

/* Walks the whole payload for an entry at entry_offset; collects each batch's
 * offset-field position and new value into *fix when fix is not NULL. */
typedef struct fixup {
  size_t pos;
  int64_t value;
} fixup;

static int walk(const void *payload, size_t len, int64_t entry_offset, int64_t record_count,
                uint64_t *records, fixup **fix, size_t *nfix) {
  tarn_kafka_iter it;
  tarn_kafka_batch b;
  int rc;
  size_t cap = 0;
  tarn_kafka_iter_init(&it, payload, len, entry_offset);
  while ((rc = tarn_kafka_iter_next(&it, &b)) == 1) {
    if (!fix)
      continue;
    if (it.batches > cap) {
      cap = cap ? 2 * cap : 8;
      fixup *f = realloc(*fix, cap * sizeof *f);
      if (!f) {
        rc = tarn__err(TARN_ENOMEM, "out of memory");
        break;
      }
      *fix = f;
    }
    /* §3.11: v2 baseOffset := first offset; v0/v1 offset := last offset. */
    (*fix)[it.batches - 1] = (fixup){b.pos, b.magic >= 2 ? b.first_offset : b.last_offset};
  }
  if (rc)
    return rc;
  if (record_count >= 0 && it.records != (uint64_t)record_count) /* LS-095 */
    return tarn__corrupt(WHAT, len, "its batches hold %llu records, the entry says %lld",
                         (unsigned long long)it.records, (long long)record_count);
  if (records)
    *records = it.records;
  if (nfix)
    *nfix = it.batches;
  return 0;
}

int tarn_kafka_check(const void *payload, size_t len, int64_t record_count, uint64_t *records) {
  return walk(payload, len, 0, record_count, records, NULL, NULL);
}

int tarn_kafka_rewrite_offsets(void *payload, size_t len, int64_t entry_offset,
                               int64_t record_count) {
  fixup *fix = NULL;
  size_t n = 0;
  int rc = walk(payload, len, entry_offset, record_count, NULL, &fix, &n);
  /* Everything was checked first, so a bad payload is left as it was. The
   * CRCs stay valid: neither field lies under its batch's CRC. */
  for (size_t i = 0; !rc && i < n; i++)
    tarn__st_be64((uint8_t *)payload + fix[i].pos, (uint64_t)fix[i].value);
  free(fix);
  return rc;
}
