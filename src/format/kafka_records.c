/* The records of a Kafka entry payload, for display (`tarn read --format
 * kafka`). Kafka's v2 record layout, after the 61-byte batch header (whose
 * records section is compressed as a whole when the codec is not none):
 *   length varint | attributes int8 | timestampDelta varlong
 *   offsetDelta varint | keyLength varint | key | valueLength varint | value
 *   headers count varint | per header: keyLength varint, key, valueLength
 *   varint, value
 * where varints are zigzag-encoded and -1 is null. v0/v1 batches are one
 * message, or a compressed wrapper of inner messages (kafka.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/kafka_internal.h"
#include "tarn/kafka.h"
#include "util/error.h"

#define WHAT "kafka entry payload"
#define V2_HEADER 61
#define ATTR_LOG_APPEND_TIME 0x08

/* A zigzag varint of at most 10 bytes at p[*q..n); -1 at a fault. */
static int get_varlong(const uint8_t *p, size_t n, size_t *q, int64_t *v) {
  uint64_t u = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*q >= n)
      return -1;
    uint8_t b = p[(*q)++];
    u |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
      return 0;
    }
  }
  return -1;
}

/* A length-prefixed field: NULL data and -1 for null. */
static int get_bytes(const uint8_t *p, size_t n, size_t *q, const uint8_t **d, int64_t *len) {
  if (get_varlong(p, n, q, len) || *len < -1 || (*len > 0 && (uint64_t)*len > n - *q))
    return -1;
  *d = *len >= 0 ? p + *q : NULL;
  *q += *len > 0 ? (size_t)*len : 0;
  return 0;
}

typedef struct walk {
  tarn_kafka_record_cb cb;
  void *arg;
  tarn_kafka_header *hv;
  size_t hcap;
} walk;

static int v2_records(walk *w, const uint8_t *p, size_t n, const tarn_kafka_batch *b, size_t nb) {
  size_t q = 0;
  for (uint32_t i = 0; i < b->record_count; i++) {
    tarn_kafka_record r = {.batch = b};
    int64_t len, ts_delta, off_delta, nh;
    if (get_varlong(p, n, &q, &len) || len < 0 || (uint64_t)len > n - q)
      goto bad;
    size_t end = q + (size_t)len;
    q++; /* attributes: unused */
    if (q > end || get_varlong(p, end, &q, &ts_delta) || get_varlong(p, end, &q, &off_delta) ||
        get_bytes(p, end, &q, &r.key, &r.key_len) ||
        get_bytes(p, end, &q, &r.value, &r.value_len) || get_varlong(p, end, &q, &nh) || nh < 0 ||
        (uint64_t)nh > end - q)
      goto bad;
    if ((size_t)nh > w->hcap) {
      tarn_kafka_header *hv = realloc(w->hv, (size_t)nh * sizeof *hv);
      if (!hv)
        return tarn__err(TARN_ENOMEM, "out of memory");
      w->hv = hv, w->hcap = (size_t)nh;
    }
    for (int64_t h = 0; h < nh; h++) {
      int64_t kl;
      if (get_bytes(p, end, &q, &w->hv[h].key, &kl) || kl < 0 ||
          get_bytes(p, end, &q, &w->hv[h].value, &w->hv[h].value_len))
        goto bad;
      w->hv[h].key_len = (size_t)kl;
    }
    if (q != end)
      goto bad;
    r.headers = w->hv, r.n_headers = (size_t)nh;
    r.offset = b->first_offset + off_delta;
    r.timestamp =
        b->attributes & ATTR_LOG_APPEND_TIME ? b->max_timestamp : b->base_timestamp + ts_delta;
    int rc = w->cb(w->arg, &r);
    if (rc)
      return rc;
    continue;
  bad:
    return tarn__corrupt(WHAT, b->pos, "batch %zu: record %u does not decode", nb, i);
  }
  if (q != n)
    return tarn__corrupt(WHAT, b->pos, "batch %zu: %zu bytes after its %u records", nb, n - q,
                         b->record_count);
  return 0;
}

static int legacy_record(walk *w, const tarn__kafka_legacy_msg *m, int64_t offset,
                         const tarn_kafka_batch *b) {
  tarn_kafka_record r = {.batch = b,
                         .offset = offset,
                         .timestamp = m->timestamp,
                         .key = m->key,
                         .key_len = m->key_len,
                         .value = m->value,
                         .value_len = m->value_len};
  return w->cb(w->arg, &r);
}

int tarn_kafka_records(const void *payload, size_t len, int64_t entry_offset, size_t max_inflate,
                       tarn_kafka_record_cb cb, void *arg) {
  tarn_kafka_iter it;
  tarn_kafka_batch b;
  walk w = {.cb = cb, .arg = arg};
  tarn_buf raw = TARN_BUF_INIT;
  size_t max = max_inflate ? max_inflate : TARN_KAFKA_MAX_INFLATE;
  char why[160];
  int rc;
  tarn_kafka_iter_init(&it, payload, len, entry_offset);
  it.max_inflate = max;
  while ((rc = tarn_kafka_iter_next(&it, &b)) == 1) {
    const uint8_t *p = (const uint8_t *)payload + b.pos;
    size_t nb = it.batches - 1;
    tarn_buf_reset(&raw);
    tarn__kafka_legacy_msg m;
    size_t fault;
    if (b.magic == 2) {
      const uint8_t *recs = p + V2_HEADER;
      size_t rn = b.len - V2_HEADER;
      if (b.compression != TARN_KAFKA_NONE) {
        rc = tarn__kafka_inflate(b.compression, 2, recs, rn, max, &raw, why, sizeof why);
        if (rc == -1)
          rc = tarn__corrupt(WHAT, b.pos, "batch %zu: records: %s", nb, why);
        if (rc)
          break;
        recs = raw.data, rn = raw.len;
      }
      if ((rc = v2_records(&w, recs, rn, &b, nb)))
        break;
      continue;
    }
    /* v0/v1: checked by the iterator already */
    if (tarn__kafka_parse_legacy(p, b.len, &m, &fault, why, sizeof why)) {
      rc = tarn__corrupt(WHAT, b.pos + fault, "batch %zu: %s", nb, why);
      break;
    }
    if (b.compression == TARN_KAFKA_NONE) {
      if ((rc = legacy_record(&w, &m, b.first_offset, &b)))
        break;
      continue;
    }
    rc = tarn__kafka_inflate(b.compression, b.magic, m.value, (size_t)m.value_len, max, &raw, why,
                             sizeof why);
    if (rc == -1)
      rc = tarn__corrupt(WHAT, b.pos, "batch %zu: compressed wrapper: %s", nb, why);
    int64_t k = 0;
    for (size_t q = 0; !rc && q < raw.len; q += m.len, k++) {
      if (tarn__kafka_parse_legacy(raw.data + q, raw.len - q, &m, &fault, why, sizeof why))
        rc = tarn__corrupt(WHAT, b.pos, "batch %zu: inner message %lld: %s", nb, (long long)k, why);
      else
        rc = legacy_record(&w, &m, b.first_offset + k, &b);
    }
    if (rc)
      break;
  }
  tarn_buf_free(&raw);
  free(w.hv);
  return rc;
}
