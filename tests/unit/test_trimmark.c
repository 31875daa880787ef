/* The trim marker's value: B in ASCII decimal, parsed strictly. */
#include "testutil.h"

#include <string.h>

#include "tarn/error.h"
#include "tarn/trimmark.h"

static void parses_and_formats(void **state) {
  uint64_t b;
  assert_int_equal(tarn_trimmark_parse((const uint8_t *)"3", 1, &b), 0);
  assert_int_equal(b, 3);
  assert_int_equal(tarn_trimmark_parse((const uint8_t *)"9223372036854775807", 19, &b), 0);
  assert_int_equal(b, 9223372036854775807ull);
  char s[TARN_TRIMMARK_MAX_LEN + 1];
  assert_int_equal(tarn_trimmark_format(s, 0), 1);
  assert_string_equal(s, "0");
  assert_int_equal(tarn_trimmark_format(s, 9223372036854775807ull), 19);
}

static void refuses_bad_values(void **state) {
  uint64_t b;
  const char *bad[] = {
      "", "-1", "+1", "01", "1a", " 1", "9223372036854775808", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(tarn_trimmark_parse((const uint8_t *)bad[i], strlen(bad[i]), &b),
                     TARN_ECORRUPT);
  tarn_trimmark_parse((const uint8_t *)"1a", 2, &b);
  assert_string_equal(tarn_errmsg(), "trim marker: byte 1: 0x61 is not a decimal digit");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parses_and_formats),
      cmocka_unit_test(refuses_bad_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
