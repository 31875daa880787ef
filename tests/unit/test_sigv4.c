/* SigV4 signing against AWS's published examples: the four S3 header-auth
 * examples of the S3 API reference ("Signature Calculations for the
 * Authorization Header"), and cases of AWS's SigV4 test suite. */
#include <stdio.h>
#include <string.h>

#include "store/sigv4.h"
#include "tarn/error.h"
#include "testutil.h"

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static const tarn__sigv4_creds s3doc = {
    "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3"};
static const tarn__sigv4_creds suite = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                        "us-east-1", "service"};

static void expect(const tarn__sigv4_creds *c, const char *method, const char *uri,
                   const tarn__sigv4_kv *q, size_t nq, const tarn__sigv4_kv *h, size_t nh,
                   const char *payload, const char *date, const char *want_auth,
                   const char *want_canonical, const char *want_to_sign) {
  tarn_buf a = TARN_BUF_INIT, cr = TARN_BUF_INIT, sts = TARN_BUF_INIT;
  int rc = tarn__sigv4_sign(c, method, uri, q, nq, h, nh, payload, date, &a, &cr, &sts);
  if (rc)
    fail_msg("%s", tarn_errmsg());
  assert_string_equal((const char *)a.data, want_auth);
  if (want_canonical) {
    assert_int_equal(cr.len, strlen(want_canonical));
    assert_memory_equal(cr.data, want_canonical, cr.len);
  }
  if (want_to_sign) {
    assert_int_equal(sts.len, strlen(want_to_sign));
    assert_memory_equal(sts.data, want_to_sign, sts.len);
  }
  tarn_buf_free(&a), tarn_buf_free(&cr), tarn_buf_free(&sts);
}

/* S3 example "GET Object": a Range header, empty payload. */
static void test_s3_get_object(void **st) {
  (void)st;
  const tarn__sigv4_kv h[] = {{"Host", "examplebucket.s3.amazonaws.com"},
                              {"Range", "bytes=0-9"},
                              {"x-amz-content-sha256", EMPTY_SHA},
                              {"x-amz-date", "20130524T000000Z"}};
  expect(&s3doc, "GET", "/test.txt", NULL, 0, h, 4, EMPTY_SHA, "20130524T000000Z",
         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
         "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
         "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
         "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
         "x-amz-content-sha256:" EMPTY_SHA "\nx-amz-date:20130524T000000Z\n\n"
         "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA,
         "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
         "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
}

/* S3 example "PUT Object": '$' in the key is encoded, the payload is hashed,
 * headers arrive unsorted and in mixed case. */
static void test_s3_put_object(void **st) {
  (void)st;
  char hash[65];
  tarn__sha256_hex("Welcome to Amazon S3.", 21, hash);
  assert_string_equal(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  tarn_buf path = TARN_BUF_INIT;
  assert_int_equal(tarn_buf_putc(&path, '/'), 0);
  assert_int_equal(tarn__sigv4_encode(&path, "test$file.text", 14, 1), 0);
  assert_int_equal(tarn_buf_putc(&path, 0), 0);
  assert_string_equal((char *)path.data, "/test%24file.text");
  const tarn__sigv4_kv h[] = {{"X-Amz-Storage-Class", "REDUCED_REDUNDANCY"},
                              {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                              {"x-amz-date", "20130524T000000Z"},
                              {"Host", "examplebucket.s3.amazonaws.com"},
                              {"x-amz-content-sha256", hash}};
  expect(&s3doc, "PUT", (char *)path.data, NULL, 0, h, 5, hash, "20130524T000000Z",
         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
         "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
         "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
         "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\n"
         "host:examplebucket.s3.amazonaws.com\n"
         "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\n"
         "x-amz-date:20130524T000000Z\nx-amz-storage-class:REDUCED_REDUNDANCY\n\n"
         "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
         "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
         "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
         "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
  tarn_buf_free(&path);
}

/* S3 example "GET Bucket Lifecycle": a query parameter without a value. */
static void test_s3_lifecycle(void **st) {
  (void)st;
  const tarn__sigv4_kv q[] = {{"lifecycle", NULL}};
  const tarn__sigv4_kv h[] = {{"host", "examplebucket.s3.amazonaws.com"},
                              {"x-amz-date", "20130524T000000Z"},
                              {"x-amz-content-sha256", EMPTY_SHA}};
  expect(&s3doc, "GET", "/", q, 1, h, 3, EMPTY_SHA, "20130524T000000Z",
         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
         "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
         "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
         NULL, NULL);
}

/* S3 example "GET Bucket (List Objects)": parameters given out of order are signed sorted. */
static void test_s3_list(void **st) {
  (void)st;
  const tarn__sigv4_kv q[] = {{"prefix", "J"}, {"max-keys", "2"}};
  const tarn__sigv4_kv h[] = {{"host", "examplebucket.s3.amazonaws.com"},
                              {"x-amz-date", "20130524T000000Z"},
                              {"x-amz-content-sha256", EMPTY_SHA}};
  expect(&s3doc, "GET", "/", q, 2, h, 3, EMPTY_SHA, "20130524T000000Z",
         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
         "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
         "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
         NULL, NULL);
}

/* AWS SigV4 test suite: get-vanilla, get-vanilla-query-order-key-case, get-utf8. */
static void test_suite_vanilla(void **st) {
  (void)st;
  const tarn__sigv4_kv h[] = {{"Host", "example.amazonaws.com"},
                              {"X-Amz-Date", "20150830T123600Z"}};
  const char *pre = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                    "aws4_request,SignedHeaders=host;x-amz-date,Signature=";
  char want[512];
  snprintf(want, sizeof want, "%s%s", pre,
           "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  expect(&suite, "GET", "/", NULL, 0, h, 2, EMPTY_SHA, "20150830T123600Z", want,
         "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
         "host;x-amz-date\n" EMPTY_SHA,
         "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
         "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  const tarn__sigv4_kv q[] = {{"Param2", "value2"}, {"Param1", "value1"}};
  snprintf(want, sizeof want, "%s%s", pre,
           "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
  expect(&suite, "GET", "/", q, 2, h, 2, EMPTY_SHA, "20150830T123600Z", want, NULL, NULL);
  tarn_buf p = TARN_BUF_INIT;
  assert_int_equal(tarn__sigv4_encode(&p, "/\xe1\x88\xb4", 4, 1), 0);
  assert_int_equal(tarn_buf_putc(&p, 0), 0);
  snprintf(want, sizeof want, "%s%s", pre,
           "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
  expect(&suite, "GET", (char *)p.data, NULL, 0, h, 2, EMPTY_SHA, "20150830T123600Z", want, NULL,
         NULL);
  tarn_buf_free(&p);
}

static void test_encoding(void **st) {
  (void)st;
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn__sigv4_encode(&b, "a b/c+d=e~f_g.h-i!*'()%", 23, 1), 0);
  assert_int_equal(tarn_buf_putc(&b, 0), 0);
  assert_string_equal((char *)b.data, "a%20b/c%2Bd%3De~f_g.h-i%21%2A%27%28%29%25");
  tarn_buf_reset(&b);
  assert_int_equal(tarn__sigv4_encode(&b, "a/b\xc3\xa9", 5, 0), 0);
  assert_int_equal(tarn_buf_putc(&b, 0), 0);
  assert_string_equal((char *)b.data, "a%2Fb%C3%A9");
  tarn_buf_reset(&b);
  /* sorted by encoded name; the continuation token's '=' and '/' are encoded */
  const tarn__sigv4_kv q[] = {{"prefix", "a/b c"},
                              {"list-type", "2"},
                              {"continuation-token", "x/y+z=="},
                              {"uploads", NULL}};
  assert_int_equal(tarn__sigv4_query(&b, q, 4), 0);
  assert_int_equal(tarn_buf_putc(&b, 0), 0);
  assert_string_equal((char *)b.data,
                      "continuation-token=x%2Fy%2Bz%3D%3D&list-type=2&prefix=a%2Fb%20c&uploads=");
  tarn_buf_free(&b);
}

/* Header values are trimmed and inner runs of spaces folded; a bad date is refused. */
static void test_header_canon(void **st) {
  (void)st;
  const tarn__sigv4_kv h[] = {{"Host", "  example.amazonaws.com "},
                              {"My-Header1", "  value1   with  spaces "},
                              {"X-Amz-Date", "20150830T123600Z"}};
  tarn_buf a = TARN_BUF_INIT, cr = TARN_BUF_INIT;
  assert_int_equal(tarn__sigv4_sign(&suite, "GET", "/", NULL, 0, h, 3, EMPTY_SHA,
                                    "20150830T123600Z", &a, &cr, NULL),
                   0);
  const char *want = "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1 with spaces\n"
                     "x-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\n" EMPTY_SHA;
  assert_int_equal(cr.len, strlen(want));
  assert_memory_equal(cr.data, want, cr.len);
  /* the secret never appears in what the signer returns */
  assert_null(strstr((char *)a.data, suite.secret_key));
  assert_int_equal(
      tarn__sigv4_sign(&suite, "GET", "/", NULL, 0, h, 3, EMPTY_SHA, "2015-08-30", &a, NULL, NULL),
      TARN_EINVAL);
  tarn_buf_free(&a), tarn_buf_free(&cr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_s3_get_object), cmocka_unit_test(test_s3_put_object),
      cmocka_unit_test(test_s3_lifecycle),  cmocka_unit_test(test_s3_list),
      cmocka_unit_test(test_suite_vanilla), cmocka_unit_test(test_encoding),
      cmocka_unit_test(test_header_canon),
  };
  return cmocka_run_group_tests_name("sigv4", tests, NULL, NULL);
}
