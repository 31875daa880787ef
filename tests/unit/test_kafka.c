/* The Kafka binding's payload checks (LS-095 … LS-099) and the offset rewrite
 * of §3.11. Batches are built by tu_kafka.h from the published layouts, with
 * CRC32C from ISA-L and CRC32 from zlib, so the checksums do not come from tarn. */
#include "testutil.h"

#include <isa-l.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/kafka.h"
#include "tu_kafka.h"
#include "util/bytes.h"

static void expect_corrupt(const tarn_buf *p, int64_t count, const char *want) {
  int rc = tarn_kafka_check(p->data, p->len, count, NULL);
  if (rc != TARN_ECORRUPT || !strstr(tarn_errmsg(), want) ||
      strncmp(tarn_errmsg(), "kafka entry payload: byte ", 26) != 0)
    fail_msg("wanted a refusal with \"%s\", got rc %d: %s", want, rc, tarn_errmsg());
}

static void v2_batches_and_offsets(void **state) {
  /* LS-095, LS-099: three batches of 3, 1 and 5 records, entry at offset 100. */
  tarn_buf p = TARN_BUF_INIT;
  tu_kafka_v2_simple(&p, 3);
  tu_kafka_v2_simple(&p, 1);
  tu_kafka_v2_batch(&p, 0, TARN_KAFKA_GZIP, 5, 5,
                    4); /* compressed v2: the declared count is used */
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

  tu_kafka_v2_simple(&p, 2);
  p.data[30] ^= 1;                  /* a bit inside the CRC'd range */
  expect_corrupt(&p, -1, "CRC32C"); /* LS-095 */

  tarn_buf_reset(&p);
  tu_kafka_v2_simple(&p, 2);
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
  tu_kafka_v2_batch(&p, 5, 0, 2, 2, 1); /* LS-096: base offset 0 */
  expect_corrupt(&p, -1, "baseOffset is 5, not 0");
  tarn_buf_reset(&p);
  tu_kafka_v2_batch(&p, 0, 0, 2, 3, 1); /* LS-096: count == lastOffsetDelta + 1 */
  expect_corrupt(&p, -1, "record count 3 differs from lastOffsetDelta 1 + 1");
  tarn_buf_reset(&p);
  tu_kafka_v2_batch(&p, 0, 0, 0, 0, -1); /* LS-096: count > 0 */
  expect_corrupt(&p, -1, "record count 0 is not positive");
  tarn_buf_reset(&p);
  tu_kafka_v2_batch(&p, 0, TARN_KAFKA_ATTR_TRANSACTIONAL, 2, 2, 1); /* LS-098 */
  expect_corrupt(&p, -1, "transactional batch");
  tarn_buf_reset(&p);
  tu_kafka_v2_batch(&p, 0, TARN_KAFKA_ATTR_CONTROL, 1, 1, 0); /* LS-098 */
  expect_corrupt(&p, -1, "control batch");
  tarn_buf_reset(&p);
  tu_kafka_v2_batch(&p, 0, 5, 1, 1, 0);
  expect_corrupt(&p, -1, "unknown compression codec 5");

  tarn_buf_reset(&p);
  tu_kafka_v2_simple(&p, 1);
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
  tu_kafka_legacy_msg(&p, 0, 0, 0, "a", 1);
  tu_kafka_legacy_msg(&p, 1, 0, 0, NULL, 0);
  tu_kafka_wrapper(&p, 1, TARN_KAFKA_GZIP, 3);
  tu_kafka_wrapper(&p, 0, TARN_KAFKA_GZIP, 2);
  tu_kafka_wrapper(&p, 1, TARN_KAFKA_SNAPPY, 4);
  tu_kafka_wrapper(&p, 1, TARN_KAFKA_LZ4, 5);
  tu_kafka_v2_simple(&p, 2); /* mixed magics in one entry */
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
  assert_int_equal((uint32_t)crc32(0, p.data + pos[2] + 16, sz - 4),
                   tarn__ld_be32(p.data + pos[2] + 12));
  tarn_buf_free(&p);
}

static void legacy_refusals(void **state) {
  tarn_buf p = TARN_BUF_INIT, set = TARN_BUF_INIT, z = TARN_BUF_INIT;
  tu_kafka_legacy_msg(&p, 1, 0, 0, "abc", 3);
  p.data[p.len - 1] ^= 1;
  expect_corrupt(&p, -1, "byte 12: batch 0: CRC32");

  /* LS-097: a compressed wrapper with no inner message. */
  tarn_buf_reset(&p);
  tu_kafka_gzip_of(&z, &set);
  tu_kafka_legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, z.data, z.len);
  expect_corrupt(&p, -1, "compressed wrapper holds no record");

  tarn_buf_reset(&p);
  tu_kafka_legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, NULL, 0);
  expect_corrupt(&p, -1, "null value");
  tarn_buf_reset(&p);
  tu_kafka_legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, "garbage!", 8);
  expect_corrupt(&p, -1, "compressed wrapper (gzip): not a gzip stream");
  tarn_buf_reset(&p);
  tu_kafka_legacy_msg(&p, 1, 0, TARN_KAFKA_ZSTD, "x", 1);
  expect_corrupt(&p, -1, "compression codec 4 in a magic 1 message");

  /* Nested compression and magic mismatch inside a wrapper. */
  tarn_buf_reset(&set), tarn_buf_reset(&z), tarn_buf_reset(&p);
  tu_kafka_legacy_msg(&set, 1, 0, TARN_KAFKA_GZIP, "x", 1);
  tu_kafka_gzip_of(&z, &set);
  tu_kafka_legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, z.data, z.len);
  expect_corrupt(&p, -1, "is itself compressed");
  tarn_buf_reset(&set), tarn_buf_reset(&z), tarn_buf_reset(&p);
  tu_kafka_legacy_msg(&set, 0, 0, 0, "x", 1);
  tu_kafka_gzip_of(&z, &set);
  tu_kafka_legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, z.data, z.len);
  expect_corrupt(&p, -1, "magic 0 in a magic 1 wrapper");

  /* A truncated inner message. */
  tarn_buf_reset(&set), tarn_buf_reset(&z), tarn_buf_reset(&p);
  tu_kafka_inner_set(&set, 1, 2);
  set.len -= 1;
  tu_kafka_gzip_of(&z, &set);
  tu_kafka_legacy_msg(&p, 1, 0, TARN_KAFKA_GZIP, z.data, z.len);
  expect_corrupt(&p, -1, "inner message 1");

  /* The inflate cap: 1,000 inner messages with a cap below their size. */
  tarn_buf_reset(&p);
  tu_kafka_wrapper(&p, 1, TARN_KAFKA_GZIP, 1000);
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
    tu_kafka_inner_set(&set, magic, 2);
    tu_kafka_lz4_of(&z, &set);
    z.data[6] ^= 0x55; /* HC: magic, FLG, BD, then the checksum (no content size) */
    tu_kafka_legacy_msg(&p, magic, 0, TARN_KAFKA_LZ4, z.data, z.len);
    if (magic == 0) {
      assert_int_equal(tarn_kafka_check(p.data, p.len, -1, NULL), TARN_EUNSUPPORTED);
      assert_non_null(strstr(tarn_errmsg(), "before 0.10 is not supported"));
    } else {
      expect_corrupt(&p, -1, "compressed wrapper (lz4)");
    }
  }

  /* A value with bytes after it inside the message. */
  tarn_buf_reset(&p);
  tu_kafka_legacy_msg(&p, 0, 0, 0, "abc", 3);
  tarn__st_be32(p.data + p.len - 7, 2); /* value length 2 of 3 */
  tarn__st_be32(p.data + 12, (uint32_t)crc32(0, p.data + 16, (uInt)(p.len - 16)));
  expect_corrupt(&p, -1, "1 bytes after the value");
  tarn_buf_free(&p), tarn_buf_free(&set), tarn_buf_free(&z);
}

static void offset_overflow(void **state) {
  tarn_buf p = TARN_BUF_INIT;
  tu_kafka_v2_simple(&p, 2);
  assert_int_equal(tarn_kafka_rewrite_offsets(p.data, p.len, INT64_MAX, -1), TARN_ERANGE);
  assert_int_equal(tarn_kafka_rewrite_offsets(p.data, p.len, INT64_MAX - 1, -1), 0);
  tarn_buf_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(v2_batches_and_offsets), cmocka_unit_test(v2_refusals),
      cmocka_unit_test(legacy_messages),        cmocka_unit_test(legacy_refusals),
      cmocka_unit_test(offset_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
