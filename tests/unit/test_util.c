/* The byte buffer, the bounds-checked cursor and the error plumbing. */
#include "testutil.h"

#include <string.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "util/bytes.h"

static void buf_grows_and_encodes(void **state) {
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_buf_put_be32(&b, 0x13), 0);
  assert_int_equal(tarn_buf_put_be64(&b, 7), 0);
  assert_int_equal(tarn_buf_put_uvarint(&b, 300), 0);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(tarn_buf_putc(&b, (uint8_t)i), 0);
  tu_assert_hex(b.data, 14, "00000013 00000000 00000007 ac02");
  assert_int_equal(b.len, 1014);
  tarn_buf_free(&b);
}

static void varint_limits(void **state) {
  /* 5 bytes at most, value at most 2^31-1: the varint32 rule of the WAL object. */
  static const uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  static const uint8_t big[] = {0x80, 0x80, 0x80, 0x80, 0x08}; /* 2^31 */
  static const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0x07}; /* 2^31-1 */
  tarn__rd r;
  uint64_t v;
  tarn__rd_init(&r, six, sizeof six, "test");
  assert_int_equal(tarn__rd_uvarint(&r, &v, 5, INT32_MAX, "x"), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "test: byte 0: x: varint longer than 5 bytes"));
  tarn__rd_init(&r, big, sizeof big, "test");
  assert_int_equal(tarn__rd_uvarint(&r, &v, 5, INT32_MAX, "x"), TARN_ECORRUPT);
  tarn__rd_init(&r, max, sizeof max, "test");
  assert_int_equal(tarn__rd_uvarint(&r, &v, 5, INT32_MAX, "x"), 0);
  assert_int_equal(v, INT32_MAX);
  tarn__rd_init(&r, max, 3, "test");
  assert_int_equal(tarn__rd_uvarint(&r, &v, 5, INT32_MAX, "x"), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "byte 3: x: varint truncated"));
}

static void cursor_refuses_overread(void **state) {
  static const uint8_t b[8] = {1, 2, 3}; /* only 3 given to the cursor */
  tarn__rd r;
  uint32_t v;
  tarn__rd_init(&r, b, 3, "thing");
  assert_int_equal(tarn__rd_be32(&r, &v, "length"), TARN_ECORRUPT);
  assert_string_equal(tarn_errmsg(), "thing: byte 0: length needs 4 bytes, 3 left");
  assert_string_equal(tarn_errname(TARN_ECORRUPT), "TARN_ECORRUPT");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(buf_grows_and_encodes),
      cmocka_unit_test(varint_limits),
      cmocka_unit_test(cursor_refuses_overread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
