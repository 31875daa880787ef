/* The Kafka binding's payload checks (LS-095 … LS-099) and the offset rewrite
 * of §3.11. Batches are built here from the published layouts, with CRC32C
 * from ISA-L and CRC32 from zlib, so the checksums do not come from tarn. */
#include "testutil.h"

#include <isa-l.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/kafka.h"
#include "util/bytes.h"

static void put_zigzag(tarn_buf *b, int64_t v) {
  assert_int_equal(tarn_buf_put_uvarint(b, (uint64_t)v << 1 ^ (uint64_t)(v >> 63)), 0);
}

static void put_be16(tarn_buf *b, uint16_t v) {
  tarn_buf_putc(b, (uint8_t)(v >> 8));
  tarn_buf_putc(b, (uint8_t)v);
}

/* A v2 batch with n records of values "v<i>"; count and delta as declared. */
static void v2_batch(tarn_buf *out, int64_t base, uint16_t attrs, int32_t n, int32_t count,
                     int32_t delta) {
  tarn_buf recs = TARN_BUF_INIT;
  for (int32_t i = 0; i < n; i++) {
    tarn_buf r = TARN_BUF_INIT;
    tarn_buf_putc(&r, 0);     /* attributes */
    put_zigzag(&r, i);        /* timestampDelta */
    put_zigzag(&r, i);        /* offsetDelta */
    put_zigzag(&r, -1);       /* null key */
    put_zigzag(&r, 2);        /* value length */
    tarn_buf_putc(&r, 'v');
    tarn_buf_putc(&r, (uint8_t)('0' + i % 10));
    put_zigzag(&r, 0);        /* no headers */
    put_zigzag(&recs, (int64_t)r.len);
    tarn_buf_append(&recs, r.data, r.len);
    tarn_buf_free(&r);
  }
  size_t start = out->len;
  tarn_buf_put_be64(out, (uint64_t)base);
  tarn_buf_put_be32(out, (uint32_t)(49 + recs.len));
  tarn_buf_put_be32(out, 0);           /* partitionLeaderEpoch */
  tarn_buf_putc(out, 2);               /* magic */
  tarn_buf_put_be32(out, 0);           /* crc, below */
  put_be16(out, attrs);
  tarn_buf_put_be32(out, (uint32_t)delta);
  tarn_buf_put_be64(out, 1700000000000ULL);
  tarn_buf_put_be64(out, 1700000000000ULL + (uint64_t)(n ? n - 1 : 0));
  tarn_buf_put_be64(out, (uint64_t)-1); /* producerId */
  put_be16(out, 0xffff);
  tarn_buf_put_be32(out, 0xffffffffu);
  tarn_buf_put_be32(out, (uint32_t)count);
  tarn_buf_append(out, recs.data, recs.len);
  uint32_t crc = ~crc32_iscsi(out->data + start + 21, (int)(out->len - start - 21), 0xffffffffu);
  tarn__st_be32(out->data + start + 17, crc);
  tarn_buf_free(&recs);
}

static void v2_simple(tarn_buf *out, int32_t n) { v2_batch(out, 0, 0, n, n, n - 1); }

/* A v0/v1 message with the given value (NULL: null value). */
static void legacy_msg(tarn_buf *out, int magic, int64_t offset, uint8_t attrs, const void *value,
                       size_t vlen) {
  size_t start = out->len;
  tarn_buf_put_be64(out, (uint64_t)offset);
  tarn_buf_put_be32(out, 0); /* size, below */
  tarn_buf_put_be32(out, 0); /* crc, below */
  tarn_buf_putc(out, (uint8_t)magic);
  tarn_buf_putc(out, attrs);
  if (magic == 1)
    tarn_buf_put_be64(out, 1700000000000ULL);
  tarn_buf_put_be32(out, 0xffffffffu); /* null key */
  if (value) {
    tarn_buf_put_be32(out, (uint32_t)vlen);
    tarn_buf_append(out, value, vlen);
  } else {
    tarn_buf_put_be32(out, 0xffffffffu);
  }
  tarn__st_be32(out->data + start + 8, (uint32_t)(out->len - start - 12));
  tarn__st_be32(out->data + start + 12,
                (uint32_t)crc32(0, out->data + start + 16, (uInt)(out->len - start - 16)));
}

static void inner_set(tarn_buf *set, int magic, int n) {
  for (int i = 0; i < n; i++)
    legacy_msg(set, magic, i, 0, "x", 1);
}

static void gzip_of(tarn_buf *out, const tarn_buf *in) {
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  tarn_buf_reserve(out, deflateBound(&z, in->len) + 32);
  z.next_in = in->data, z.avail_in = (uInt)in->len;
  z.next_out = out->data + out->len, z.avail_out = (uInt)(out->cap - out->len);
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  out->len = out->cap - z.avail_out;
  deflateEnd(&z);
}

static void snappy_xerial_of(tarn_buf *out, const tarn_buf *in) {
  static const uint8_t hdr[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
  tarn_buf_append(out, hdr, 16);
  size_t max = snappy_max_compressed_length(in->len);
  tarn_buf_reserve(out, max + 4);
  size_t n = max;
  assert_int_equal(snappy_compress((const char *)in->data, in->len, (char *)out->data + out->len + 4, &n),
                   SNAPPY_OK);
  tarn__st_be32(out->data + out->len, (uint32_t)n);
  out->len += 4 + n;
}

static void lz4_of(tarn_buf *out, const tarn_buf *in) {
  size_t max = LZ4F_compressFrameBound(in->len, NULL);
  tarn_buf_reserve(out, max);
  size_t n = LZ4F_compressFrame(out->data + out->len, max, in->data, in->len, NULL);
  assert_false(LZ4F_isError(n));
  out->len += n;
}

static void wrapper(tarn_buf *out, int magic, int codec, int n) {
  tarn_buf set = TARN_BUF_INIT, z = TARN_BUF_INIT;
  inner_set(&set, magic, n);
  if (codec == TARN_KAFKA_GZIP)
    gzip_of(&z, &set);
  else if (codec == TARN_KAFKA_SNAPPY)
    snappy_xerial_of(&z, &set);
  else
    lz4_of(&z, &set);
  legacy_msg(out, magic, 0, (uint8_t)codec, z.data, z.len);
  tarn_buf_free(&set), tarn_buf_free(&z);
}

static void expect_corrupt(const tarn_buf *p, int64_t count, const char *want) {
  int rc = tarn_kafka_check(p->data, p->len, count, NULL);
  if (rc != TARN_ECORRUPT || !strstr(tarn_errmsg(), want) ||
      strncmp(tarn_errmsg(), "kafka entry payload: byte ", 26) != 0)
    fail_msg("wanted a refusal with \"%s\", got rc %d: %s", want, rc, tarn_errmsg());
}

static void v2_batches_and_offsets(void **state) {
  /* LS-095, LS-099: three batches of 3, 1 and 5 records, entry at offset 100. */
  tarn_buf p = TARN_BUF_INIT;
  v2_simple(&p, 3);
  v2_simple(&p, 1);
  v2_batch(&p, 0, TARN_KAFKA_GZIP, 5, 5, 4); /* compressed v2: the declared count is used */
  uint64_t records = 0;
  assert_int_equal(tarn_kafka_check(p.data, p.len, 9, &records), 0);
  assert_int_equal(records, 9);
  tarn_kafka_iter it;
  tarn_kafka_batch b;
  tarn_kafka_iter_init(&it, p.data, p.len, 100);
  const int64_t first[] = {100, 103, 104}, last[] = {102, 103, 108};
  size_t pos = 0;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(tarn_kafka_iter_next(&it, &b), 1);
    assert_int_equal(b.magic, 2);
    assert_int_equal(b.pos, pos);
    assert_int_equal(b.first_offset, first[i]);
    assert_int_equal(b.last_offset, last[i]);
    assert_int_equal(b.base_timestamp, 1700000000000LL);
    pos += b.len;
  }
  assert_int_equal(b.compression, TARN_KAFKA_GZIP);
  assert_int_equal(pos, p.len);
  assert_int_equal(tarn_kafka_iter_next(&it, &b), 0);

  /* LS-095: the entry's record count must equal the batches' total. */
  expect_corrupt(&p, 8, "its batches hold 9 records, the entry says 8");

  /* §3.11: baseOffset := next; CRCs untouched and still valid. */
  tarn_buf orig = TARN_BUF_INIT;
  tarn_buf_append(&orig, p.data, p.len);
  assert_int_equal(tarn_kafka_rewrite_offsets(p.data, p.len, 100, 9), 0);
  pos = 0;
  for (int i = 0; i < 3; i++) {
    assert_int_equal((int64_t)tarn__ld_be64(p.data + pos), first[i]);
    uint32_t blen = tarn__ld_be32(p.data + pos + 8);
    assert_memory_equal(p.data + pos + 8, orig.data + pos + 8, 4 + blen);
    uint32_t crc = ~crc32_iscsi(p.data + pos + 21, (int)(blen - 9), 0xffffffffu);
    assert_int_equal(crc, tarn__ld_be32(p.data + pos + 17));
    pos += 12 + blen;
  }
  /* A bad payload is left untouched. */
  tarn_buf_reset(&p);
  tarn_buf_append(&p, orig.data, orig.len);
  assert_int_equal(tarn_kafka_rewrite_offsets(p.data, p.len, 100, 8), TARN_ECORRUPT);
  assert_memory_equal(p.data, orig.data, p.len);
  tarn_buf_free(&p), tarn_buf_free(&orig);
}

static void v2_refusals(void **state) {
  tarn_buf p = TARN_BUF_INIT;
  expect_corrupt(&p, -1, "holds no record batch"); /* LS-095 */

  v2_simple(&p, 2);
  p.data[30] ^= 1; /* a bit inside the CRC'd range */
  expect_corrupt(&p, -1, "CRC32C"); /* LS-095 */

  tarn_buf_reset(&p);
  v2_simple(&p, 2);
  tarn_buf full = TARN_BUF_INIT;
  tarn_buf_append(&full, p.data, p.len);
  for (size_t cut = 1; cut < full.len; cut++) { /* LS-095: no truncation */
    tarn_buf_reset(&p);
    tarn_buf_append(&p, full.data, cut);
    expect_corrupt(&p, -1, "batch 0");
  }
  tarn_buf_reset(&p);
  tarn_buf_append(&p, full.data, full.len);
  tarn_buf_putc(&p, 0); /* LS-095: no trailing bytes */
  expect_corrupt(&p, -1, "batch 1: header needs at least 17 bytes, 1 left");

  tarn_buf_reset(&p);
  v2_batch(&p, 5, 0, 2, 2, 1); /* LS-096: base offset 0 */
  expect_corrupt(&p, -1, "baseOffset is 5, not 0");
  tarn_buf_reset(&p);
  v2_batch(&p, 0, 0, 2, 3, 1); /* LS-096: count == lastOffsetDelta + 1 */
  expect_corrupt(&p, -1, "record count 3 differs from lastOffsetDelta 1 + 1");
  tarn_buf_reset(&p);
  v2_batch(&p, 0, 0, 0, 0, -1); /* LS-096: count > 0 */
  expect_corrupt(&p, -1, "record count 0 is not positive");
  tarn_buf_reset(&p);
  v2_batch(&p, 0, TARN_KAFKA_ATTR_TRANSACTIONAL, 2, 2, 1); /* LS-098 */
  expect_corrupt(&p, -1, "transactional batch");
  tarn_buf_reset(&p);
  v2_batch(&p, 0, TARN_KAFKA_ATTR_CONTROL, 1, 1, 0); /* LS-098 */
  expect_corrupt(&p, -1, "control batch");
  tarn_buf_reset(&p);
  v2_batch(&p, 0, 5, 1, 1, 0);
  expect_corrupt(&p, -1, "unknown compression codec 5");

  tarn_buf_reset(&p);
  v2_simple(&p, 1);
  tarn__st_be32(p.data + 8, 10); /* batchLength below a header */
  expect_corrupt(&p, -1, "byte 8: batch 0: batchLength 10");
  p.data[16] = 3;
  expect_corrupt(&p, -1, "byte 16: batch 0: unknown magic 3");
  tarn_buf_free(&p), tarn_buf_free(&full);
}

static void legacy_messages(void **state) {
  /* LS-097, LS-099: v0 and v1 shallow messages are one record each; a
   * compressed wrapper is as many records as its inner messages. */
  tarn_buf p = TARN_BUF_INIT;
  legacy_msg(&p, 0, 0, 0, "a", 1);
  legacy_msg(&p, 1, 0, 0, NULL, 0);
  wrapper(&p, 1, TARN_KAFKA_GZIP, 3);
  wrapper(&p, 0, TARN_KAFKA_GZIP, 2);
  wrapper(&p, 1, TARN_KAFKA_SNAPPY, 4);
  wrapper(&p, 1, TARN_KAFKA_LZ4, 5);
  v2_simple(&p, 2); /* mixed magics in one entry */
  const uint32_t counts[] = {1, 1, 3, 2, 4, 5, 2};
  tarn_kafka_iter it;
  tarn_kafka_batch b;
  tarn_kafka_iter_init(&it, p.data, p.len, 10);
  int64_t next = 10;
  size_t pos[7];
  for (int i = 0; i < 7; i++) {
    assert_int_equal(tarn_kafka_iter_next(&it, &b), 1);
    assert_int_equal(b.record_count, counts[i]);
    assert_int_equal(b.first_offset, next);
    next += counts[i];
    pos[i] = b.pos;
  }
  assert_int_equal(tarn_kafka_iter_next(&it, &b), 0);
  assert_int_equal(tarn_kafka_check(p.data, p.len, 18, NULL), 0);
  /* §3.11: a v0/v1 wrapper's offset := its last offset; v2 base := first. */
  assert_int_equal(tarn_kafka_rewrite_offsets(p.data, p.len, 10, 18), 0);
  const int64_t want[] = {10, 11, 14, 16, 20, 25, 26};
  for (int i = 0; i < 7; i++)
    assert_int_equal((int64_t)tarn__ld_be64(p.data + pos[i]), want[i]);
  /* The v0/v1 CRC does not cover the offset: still valid after the rewrite. */
  uint32_t sz = tarn__ld_be32(p.data + pos[2] + 8);
  assert_int_equal((uint32_t)crc32(0, p.data + pos[2] + 16, sz - 4), tarn__ld_be32(p.data + pos[2] + 12));
  tarn_buf_free(&p);
}

static void legacy_refusals(void **state) {
  tarn_buf p = TARN_BUF_INIT, set = TARN_BUF_INIT, z = TARN_BUF_INIT;
  legacy_msg(&p, 1, 0, 0, "abc", 3);
  p.data[p.len - 1] ^= 1;
  expect_corrupt(&p, -1, "byte 12: batch 0: CRC32");

  /* LS-097: a compressed wrapper with no inner message. */
  tarn_buf_reset(&p);
  gzip_of(&z, &set);
  legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, z.data, z.len);
  expect_corrupt(&p, -1, "compressed wrapper holds no record");

  tarn_buf_reset(&p);
  legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, NULL, 0);
  expect_corrupt(&p, -1, "null value");
  tarn_buf_reset(&p);
  legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, "garbage!", 8);
  expect_corrupt(&p, -1, "compressed wrapper (gzip): not a gzip stream");
  tarn_buf_reset(&p);
  legacy_msg(&p, 1, 0, TARN_KAFKA_ZSTD, "x", 1);
  expect_corrupt(&p, -1, "compression codec 4 in a magic 1 message");

  /* Nested compression and magic mismatch inside a wrapper. */
  tarn_buf_reset(&set), tarn_buf_reset(&z), tarn_buf_reset(&p);
  legacy_msg(&set, 1, 0, TARN_KAFKA_GZIP, "x", 1);
  gzip_of(&z, &set);
  legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, z.data, z.len);
  expect_corrupt(&p, -1, "is itself compressed");
  tarn_buf_reset(&set), tarn_buf_reset(&z), tarn_buf_reset(&p);
  legacy_msg(&set, 0, 0, 0, "x", 1);
  gzip_of(&z, &set);
  legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, z.data, z.len);
  expect_corrupt(&p, -1, "magic 0 in a magic 1 wrapper");

  /* A truncated inner message. */
  tarn_buf_reset(&set), tarn_buf_reset(&z), tarn_buf_reset(&p);
  inner_set(&set, 1, 2);
  set.len -= 1;
  gzip_of(&z, &set);
  legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, z.data, z.len);
  expect_corrupt(&p, -1, "inner message 1");

  /* The inflate cap: 1,000 inner messages with a cap below their size. */
  tarn_buf_reset(&p);
  wrapper(&p, 1, TARN_KAFKA_GZIP, 1000);
  tarn_kafka_iter it;
  tarn_kafka_batch b;
  tarn_kafka_iter_init(&it, p.data, p.len, 0);
  it.max_inflate = 1000;
  assert_int_equal(tarn_kafka_iter_next(&it, &b), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "past the limit of 1000 bytes"));
  tarn_kafka_iter_init(&it, p.data, p.len, 0);
  assert_int_equal(tarn_kafka_iter_next(&it, &b), 1);
  assert_int_equal(b.record_count, 1000);

  /* lz4 frames with a wrong header checksum: corrupt in magic 1; in magic 0 it
   * is how Kafka before 0.10 wrote them, which tarn does not read. */
  for (int magic = 0; magic <= 1; magic++) {
    tarn_buf_reset(&set), tarn_buf_reset(&z), tarn_buf_reset(&p);
    inner_set(&set, magic, 2);
    lz4_of(&z, &set);
    z.data[6] ^= 0x55; /* HC: magic, FLG, BD, then the checksum (no content size) */
    legacy_msg(&p, magic, 0, TARN_KAFKA_LZ4, z.data, z.len);
    if (magic == 0) {
      assert_int_equal(tarn_kafka_check(p.data, p.len, -1, NULL), TARN_EUNSUPPORTED);
      assert_non_null(strstr(tarn_errmsg(), "before 0.10 is not supported"));
    } else {
      expect_corrupt(&p, -1, "compressed wrapper (lz4)");
    }
  }

  /* A value with bytes after it inside the message. */
  tarn_buf_reset(&p);
  legacy_msg(&p, 0, 0, 0, "abc", 3);
  tarn__st_be32(p.data + p.len - 7, 2); /* value length 2 of 3 */
  tarn__st_be32(p.data + 12, (uint32_t)crc32(0, p.data + 16, (uInt)(p.len - 16)));
  expect_corrupt(&p, -1, "1 bytes after the value");
  tarn_buf_free(&p), tarn_buf_free(&set), tarn_buf_free(&z);
}

static void offset_overflow(void **state) {
  tarn_buf p = TARN_BUF_INIT;
  v2_simple(&p, 2);
  assert_int_equal(tarn_kafka_rewrite_offsets(p.data, p.len, INT64_MAX, -1), TARN_ERANGE);
  assert_int_equal(tarn_kafka_rewrite_offsets(p.data, p.len, INT64_MAX - 1, -1), 0);
  tarn_buf_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(v2_batches_and_offsets),
      cmocka_unit_test(v2_refusals),
      cmocka_unit_test(legacy_messages),
      cmocka_unit_test(legacy_refusals),
      cmocka_unit_test(offset_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
