/* The bounded S3 XML reader: elements, empty elements, entity decoding, and
 * malformed input reported by byte offset. */
#include <string.h>

#include "store/s3_xml.h"
#include "tarn/error.h"
#include "testutil.h"

static const char list[] =
    "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"x\"><IsTruncated>true</IsTruncated>"
    "<NextContinuationToken>1a/b+c==</NextContinuationToken>"
    "<Contents><Key>p/a&amp;b&#x20;&#233;&lt;&gt;&quot;&apos;</Key><Size>10</Size></Contents>"
    "<ContentsX><Key>no</Key></ContentsX>"
    "<Contents ><Key>p/c</Key><Size>0</Size></Contents><Contents/></ListBucketResult>";

static void test_walk(void **st) {
  (void)st;
  tarn_buf b = TARN_BUF_INIT;
  size_t pos = 0, cl;
  const char *c;
  assert_int_equal(tarn__xml_next(list, strlen(list), &pos, "Contents", &c, &cl), 1);
  assert_int_equal(tarn__xml_get(c, cl, "Key", &b), 1);
  assert_string_equal((char *)b.data, "p/a&b \xc3\xa9<>\"'");
  assert_int_equal(tarn__xml_get(c, cl, "Size", &b), 1);
  assert_string_equal((char *)b.data, "10");
  /* <ContentsX> is another element, skipped */
  assert_int_equal(tarn__xml_next(list, strlen(list), &pos, "Contents", &c, &cl), 1);
  assert_int_equal(tarn__xml_get(c, cl, "Key", &b), 1);
  assert_string_equal((char *)b.data, "p/c");
  assert_int_equal(tarn__xml_next(list, strlen(list), &pos, "Contents", &c, &cl), 1);
  assert_int_equal(cl, 0);
  assert_int_equal(tarn__xml_next(list, strlen(list), &pos, "Contents", &c, &cl), 0);
  assert_int_equal(tarn__xml_get(list, strlen(list), "NextContinuationToken", &b), 1);
  assert_string_equal((char *)b.data, "1a/b+c==");
  assert_int_equal(tarn__xml_get(list, strlen(list), "Missing", &b), 0);
  tarn_buf_free(&b);
}

static void test_malformed(void **st) {
  (void)st;
  tarn_buf b = TARN_BUF_INIT;
  size_t pos = 0, cl;
  const char *c;
  const char *cut = "<a><Key>abc</Ke";
  assert_int_equal(tarn__xml_next(cut, strlen(cut), &pos, "Key", &c, &cl), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "byte 3"));
  pos = 0;
  assert_int_equal(tarn__xml_next("<Key", 4, &pos, "Key", &c, &cl), TARN_ECORRUPT);
  static const char *bad[] = {"&",        "&amp", "&bogus;",    "&#;",    "&#x;",
                              "&#xD800;", "&#0;", "&#x110000;", "&#12a;", "a&#99999999999;"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tarn_buf_reset(&b);
    assert_int_equal(tarn__xml_text(bad[i], strlen(bad[i]), &b), TARN_ECORRUPT);
  }
  tarn_buf_reset(&b);
  assert_int_equal(tarn__xml_text("&#x1F600;&#65;", 14, &b), 0);
  assert_int_equal(b.len, 5);
  assert_memory_equal(b.data,
                      "\xf0\x9f\x98\x80"
                      "A",
                      5);
  tarn_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_walk), cmocka_unit_test(test_malformed)};
  return cmocka_run_group_tests_name("s3 xml", tests, NULL, NULL);
}
