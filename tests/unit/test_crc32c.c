/* CRC32C against the check value and against ISA-L's crc32_iscsi. */
#include "testutil.h"

#include <isa-l.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/crc32c.h"

/* ISA-L neither inverts the seed nor the result: the standard CRC32C is
 * ~crc32_iscsi(buf, len, 0xffffffff). */
static uint32_t isal_crc32c(const uint8_t *p, size_t n) {
  return ~crc32_iscsi((unsigned char *)p, (int)n, 0xffffffffu);
}

static void check_value(void **state) {
  assert_int_equal(tarn_crc32c(0, "123456789", 9), 0xe3069283u);
  assert_int_equal(tarn_crc32c_portable(0, "123456789", 9), 0xe3069283u);
  assert_int_equal(isal_crc32c((const uint8_t *)"123456789", 9), 0xe3069283u);
  assert_int_equal(tarn_crc32c(0, "", 0), 0);
}

static void random_buffers_match_isal(void **state) {
  uint64_t seed = 42;
  enum { MAX = 4096 + 17 };
  uint8_t *buf = malloc(MAX + 8);
  assert_non_null(buf);
  for (size_t i = 0; i < MAX + 8; i++)
    buf[i] = (uint8_t)tu_rand(&seed);
  for (int iter = 0; iter < 2000; iter++) {
    size_t len = (size_t)(tu_rand(&seed) % MAX);
    size_t shift = (size_t)(tu_rand(&seed) % 8); /* every alignment */
    const uint8_t *p = buf + shift;
    uint32_t want = isal_crc32c(p, len);
    assert_int_equal(tarn_crc32c(0, p, len), want);
    assert_int_equal(tarn_crc32c_portable(0, p, len), want);
    /* In two pieces, continuing from the first piece's value. */
    size_t cut = len ? (size_t)(tu_rand(&seed) % len) : 0;
    assert_int_equal(tarn_crc32c(tarn_crc32c(0, p, cut), p + cut, len - cut), want);
    assert_int_equal(tarn_crc32c_portable(tarn_crc32c_portable(0, p, cut), p + cut, len - cut),
                     want);
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(check_value),
      cmocka_unit_test(random_buffers_match_isal),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
