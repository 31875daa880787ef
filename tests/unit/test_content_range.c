/* The Content-Range parser the s3:// backend reads an object's size from:
 * the forms RFC 9110 §14.4 allows, and a clear fault for everything else. */
#include "testutil.h"

#include <string.h>

#include "store/content_range.h"
#include "tarn/error.h"

static int parse(const char *v, tarn__content_range *cr) {
  return tarn__content_range_parse(v, strlen(v), cr);
}

static void valid(void **st) {
  (void)st;
  tarn__content_range cr;
  assert_int_equal(parse("bytes 0-4/11", &cr), 0);
  assert_true(cr.has_range && cr.has_total);
  assert_int_equal(cr.first, 0);
  assert_int_equal(cr.last, 4);
  assert_int_equal(cr.total, 11);
  assert_int_equal(parse(" \tbytes 5-10/11\t ", &cr), 0); /* OWS around the value */
  assert_int_equal(cr.first, 5);
  assert_int_equal(cr.last, 10);
  assert_int_equal(cr.total, 11);
  assert_int_equal(parse("bytes */1000", &cr), 0); /* a 416's unsatisfied range */
  assert_false(cr.has_range);
  assert_true(cr.has_total);
  assert_int_equal(cr.total, 1000);
  assert_int_equal(parse("bytes 0-99/*", &cr), 0); /* length unknown to the server */
  assert_true(cr.has_range);
  assert_false(cr.has_total);
  assert_int_equal(parse("bytes 0-18446744073709551614/18446744073709551615", &cr), 0);
  assert_int_equal(cr.total, UINT64_MAX);
  assert_int_equal(parse("bytes 007-007/010", &cr), 0); /* 1*DIGIT allows leading zeros */
  assert_int_equal(cr.first, 7);
  assert_int_equal(cr.total, 10);
}

/* Each malformed value fails with TARN_ECORRUPT at the byte named. */
static void malformed(void **st) {
  (void)st;
  static const struct {
    const char *v;
    const char *msg; /* the start of tarn_errmsg() */
  } bad[] = {
      {"", "Content-Range: byte 0: "},
      {"bytes", "Content-Range: byte 0: "},
      {"items 0-4/11", "Content-Range: byte 0: "},
      {"Bytes 0-4/11", "Content-Range: byte 0: "},
      {"bytes  0-4/11", "Content-Range: byte 6: "},
      {"bytes 0-4/", "Content-Range: byte 10: "},
      {"bytes 0-4", "Content-Range: byte 9: "},
      {"bytes 0 -4/11", "Content-Range: byte 7: "},
      {"bytes -4/11", "Content-Range: byte 6: "},
      {"bytes +0-4/11", "Content-Range: byte 6: "},
      {"bytes 0-4/1x", "Content-Range: byte 11: "},
      {"bytes 0-4/11 12", "Content-Range: byte 12: "},
      {"bytes 5-4/11", "Content-Range: byte 9: "},
      {"bytes 0-11/11", "Content-Range: byte 13: "},
      {"bytes 0-4/0", "Content-Range: byte 11: "},
      {"bytes */*", "Content-Range: byte 8: "},
      {"bytes */", "Content-Range: byte 8: "},
      {"bytes 0-18446744073709551616/1", "Content-Range: byte 8: "},
      {"bytes 0-4/18446744073709551616", "Content-Range: byte 10: "},
      {"bytes 0-4/-1", "Content-Range: byte 10: "},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tarn__content_range cr;
    int rc = parse(bad[i].v, &cr);
    if (rc != TARN_ECORRUPT || strncmp(tarn_errmsg(), bad[i].msg, strlen(bad[i].msg)) != 0)
      fail_msg("\"%s\": %s, \"%s\"; want TARN_ECORRUPT, \"%s...\"", bad[i].v, tarn_errname(rc),
               tarn_errmsg(), bad[i].msg);
  }
  /* a NUL inside the value is a byte like any other, not its end */
  tarn__content_range cr;
  assert_int_equal(tarn__content_range_parse("bytes 0-4/11\0", 13, &cr), TARN_ECORRUPT);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(valid), cmocka_unit_test(malformed)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
