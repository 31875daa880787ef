/* Magic 0/1 message sets at the Kafka listener's edges (issue 37: Produce
 * v0-2 and Fetch v0-3; docs/kafka.md "Magic 0 and 1 message sets").
 *
 * Produce: a compressed wrapper keeps its inner messages' offsets under the
 * compression. The binding's reader rewrites only the wrapper's offset field
 * (tables §3.11), so a client can read the inner offsets right only where
 * they are relative and 0 … n-1 (magic 1, KIP-31). A magic 0 wrapper's inner
 * offsets are absolute (Kafka's broker recompresses to set them) and a
 * magic 1 wrapper with other inner offsets would misplace its records: such a
 * wrapper is stored as its inner messages, each a shallow message whose
 * offset field the reader rewrites (LS-097, LS-099: one record, one offset).
 *
 * Fetch v0-3: the response holds a message set (magic 0 for v0/v1, at most
 * 1 for v2/v3), so every record is written as an uncompressed message of that
 * magic at its offset, as Kafka's down-conversion does (headers dropped). */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "format/kafka_internal.h"
#include "tarn/kafka.h"
#include "util/bytes.h"
#include "util/error.h"
#include "util/planted.h"

#define WHAT "kafka entry payload"

/* Whether the inflated inner messages raw (n of them) can stay under their
 * wrapper of magic `magic`: magic 1 with relative offsets 0 … n-1. */
static int inner_ok(int magic, const tarn_buf *raw) {
  if (magic == 0)
    return 0;
  int64_t k = 0;
  for (size_t q = 0; q + 12 <= raw->len; k++) {
    if ((int64_t)tarn__ld_be64(raw->data + q) != k)
      return 0;
    q += 12 + (size_t)tarn__ld_be32(raw->data + q + 8); /* checked by the iterator */
  }
  return 1;
}

int tarn_kafka_legacy_flatten(const void *payload, size_t len, tarn_buf *out, int *changed) {
  const uint8_t *p = payload;
  tarn_kafka_iter it;
  tarn_kafka_batch b;
  tarn_buf raw = TARN_BUF_INIT;
  char why[160];
  size_t copied = 0; /* payload bytes before it are in out already */
  int rc;
  *changed = 0;
  tarn_kafka_iter_init(&it, payload, len, 0);
  while ((rc = tarn_kafka_iter_next(&it, &b)) == 1) {
    if (b.magic >= 2 || b.compression == TARN_KAFKA_NONE)
      continue;
    tarn__kafka_legacy_msg m;
    size_t fault;
    tarn_buf_reset(&raw);
    /* the iterator parsed and inflated it already: these cannot fail but
     * for memory */
    if (tarn__kafka_parse_legacy(p + b.pos, b.len, &m, &fault, why, sizeof why) ||
        tarn__kafka_inflate(b.compression, b.magic, m.value, (size_t)m.value_len, it.max_inflate,
                            &raw, why, sizeof why)) {
      rc = tarn__err(TARN_ENOMEM, WHAT ": batch %zu: inflating the wrapper again failed",
                     it.batches - 1);
      break;
    }
    if (inner_ok(b.magic, &raw) || TARN__PLANTED(TARN__BUG_KAFKA_LEGACY_UNFLATTENED))
      continue;
    if ((rc = tarn_buf_append(out, p + copied, b.pos - copied)) ||
        (rc = tarn_buf_append(out, raw.data, raw.len)))
      break;
    copied = b.pos + b.len;
    *changed = 1;
  }
  if (!rc && *changed)
    rc = tarn_buf_append(out, p + copied, len - copied);
  tarn_buf_free(&raw);
  return rc;
}

/* ---- down-conversion ----------------------------------------------------- */

typedef struct down {
  tarn_buf *out;
  int magic;
  int64_t from;
  size_t max, start;
} down;

#define DOWN_FULL 1

static int down_record(void *arg, const tarn_kafka_record *r) {
  down *d = arg;
  if (r->offset < d->from)
    return 0;
  size_t klen = r->key_len > 0 ? (size_t)r->key_len : 0;
  size_t vlen = r->value_len > 0 ? (size_t)r->value_len : 0;
  size_t size = 4 + 1 + 1 + (d->magic ? 8 : 0) + 4 + klen + 4 + vlen; /* after messageSize */
  if (d->out->len > d->start && d->out->len - d->start + 12 + size > d->max)
    return DOWN_FULL; /* the first record goes in whatever its size (KIP-74) */
  int rc = tarn_buf_reserve(d->out, 12 + size);
  if (rc)
    return rc;
  size_t at = d->out->len;
  tarn_buf_put_be64(d->out, (uint64_t)r->offset);
  tarn_buf_put_be32(d->out, (uint32_t)size);
  tarn_buf_put_be32(d->out, 0); /* the CRC, below */
  tarn_buf_putc(d->out, (uint8_t)d->magic);
  tarn_buf_putc(d->out, 0); /* uncompressed, CreateTime */
  if (d->magic)
    tarn_buf_put_be64(d->out, (uint64_t)r->timestamp);
  tarn_buf_put_be32(d->out, (uint32_t)(r->key_len < 0 ? -1 : (int32_t)r->key_len));
  tarn_buf_append(d->out, r->key, klen);
  tarn_buf_put_be32(d->out, (uint32_t)(r->value_len < 0 ? -1 : (int32_t)r->value_len));
  tarn_buf_append(d->out, r->value, vlen);
  uint8_t *msg = d->out->data + at;
  tarn__st_be32(msg + 12, (uint32_t)crc32(0, msg + 16, (uInt)(size - 4)));
  return 0;
}

int tarn_kafka_down_convert(const void *data, size_t len, int magic, int64_t from, size_t max_bytes,
                            tarn_buf *out) {
  const uint8_t *p = data;
  down d = {out, magic ? 1 : 0, from, max_bytes, out->len};
  tarn_buf one = TARN_BUF_INIT;
  int rc = 0;
  for (size_t pos = 0; pos < len && !rc;) {
    if (len - pos < 17)
      return tarn__corrupt(WHAT, pos, "a batch header needs 17 bytes, %zu left", len - pos);
    size_t blen = 12 + (size_t)tarn__ld_be32(p + pos + 8);
    if (blen > len - pos || blen < 17)
      return tarn__corrupt(WHAT, pos + 8, "a batch of %zu bytes does not fit", blen);
    /* The offset fields are the rewritten ones (§3.11): v2 baseOffset is
     * the first offset, a v0/v1 offset the last; the check wants the v2
     * one 0 again (outside the CRC). */
    int bmagic = p[pos + 16];
    int64_t stored = (int64_t)tarn__ld_be64(p + pos);
    tarn_buf_reset(&one);
    if ((rc = tarn_buf_append(&one, p + pos, blen)))
      break;
    if (bmagic >= 2)
      tarn__st_be64(one.data, 0);
    tarn_kafka_iter it;
    tarn_kafka_batch b;
    tarn_kafka_iter_init(&it, one.data, one.len, 0);
    if ((rc = tarn_kafka_iter_next(&it, &b)) != 1)
      break;
    int64_t first = bmagic >= 2 ? stored : stored - ((int64_t)b.record_count - 1);
    rc = tarn_kafka_records(one.data, one.len, first, 0, down_record, &d);
    pos += blen;
  }
  tarn_buf_free(&one);
  return rc == DOWN_FULL ? 0 : rc;
}
