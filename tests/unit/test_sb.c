/* The sticky-error string builder (src/util/sb.h, issue 18): appends land in
 * order, appendf formats in place, and the first failure sticks — every later
 * call returns it, appends nothing, and leaves its message standing. */
/* ctest-wrap-alloc */
#include "testutil.h"
#include "tu_alloc_fail.h"

#include <stdint.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "util/sb.h"

static void appends_in_order(void **state) {
  (void)state;
  tarn_buf b = TARN_BUF_INIT;
  tarn__sb s;
  tarn__sb_init(&s, &b);
  tarn__sb_puts(&s, "GET");
  tarn__sb_putc(&s, '\n');
  tarn__sb_append(&s, "/bucket/key", 7);
  tarn__sb_appendf(&s, "?n=%d&s=%s", 42, "x y");
  tarn__sb_appendf(&s, "%s", ""); /* an empty format output appends nothing */
  assert_int_equal(tarn__sb_cstr(&s), 0);
  assert_int_equal(b.len, strlen("GET\n/bucket?n=42&s=x y"));
  assert_string_equal((char *)b.data, "GET\n/bucket?n=42&s=x y");
  /* The terminator is not counted: a later append overwrites it. */
  tarn__sb_putc(&s, '!');
  assert_int_equal(tarn__sb_cstr(&s), 0);
  assert_string_equal((char *)b.data, "GET\n/bucket?n=42&s=x y!");
  tarn_buf_free(&b);
}

static void appendf_grows_past_capacity(void **state) {
  (void)state;
  tarn_buf b = TARN_BUF_INIT;
  tarn__sb s;
  tarn__sb_init(&s, &b);
  char big[1000];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  for (int i = 0; i < 5; i++)
    tarn__sb_appendf(&s, "%d:%s|", i, big);
  assert_int_equal(tarn__sb_rc(&s), 0);
  assert_int_equal(b.len, 5 * (2 + 999 + 1));
  assert_memory_equal(b.data + 4 * 1002, "4:aaa", 5);
  assert_int_equal(b.data[b.len - 1], '|');
  tarn_buf_free(&b);
}

/* A length that would overflow size_t is refused before anything is added,
 * and the refusal sticks. */
static void overflow_refused_and_sticks(void **state) {
  (void)state;
  tarn_buf b = TARN_BUF_INIT;
  tarn__sb s;
  tarn__sb_init(&s, &b);
  assert_int_equal(tarn__sb_puts(&s, "ab"), 0);
  assert_int_equal(tarn__sb_append(&s, "x", SIZE_MAX), TARN_ERANGE);
  assert_non_null(strstr(tarn_errmsg(), "overflow"));
  assert_int_equal(tarn__sb_puts(&s, "cd"), TARN_ERANGE);
  assert_int_equal(tarn__sb_appendf(&s, "%d", 1), TARN_ERANGE);
  assert_int_equal(tarn__sb_cstr(&s), TARN_ERANGE);
  assert_int_equal(b.len, 2);
  assert_non_null(strstr(tarn_errmsg(), "overflow"));
  tarn_buf_free(&b);
}

/* The chain the builder replaces: SigV4's string to sign has this shape. */
static int chain(tarn_buf *b) {
  tarn__sb s;
  tarn__sb_init(&s, b);
  for (int i = 0; i < 40; i++) {
    tarn__sb_puts(&s, "AWS4-HMAC-SHA256\n");
    tarn__sb_appendf(&s, "%08d/%s/", i, "us-east-1");
    tarn__sb_putc(&s, '\n');
  }
  return tarn__sb_cstr(&s);
}

/* Each allocation of the chain fails in turn, once and from then on: the
 * chain returns TARN_ENOMEM (never 0 with a short text), and what it built
 * before the failure is an intact prefix of the full text. */
static void allocation_failure_in_turn(void **state) {
  (void)state;
  tarn_buf full = TARN_BUF_INIT;
  tu_alloc_fail_at(0);
  assert_int_equal(chain(&full), 0);
  uint64_t n = tu_alloc_calls();
  assert_true(n > 1);
  for (int persist = 0; persist < 2; persist++) {
    for (uint64_t k = 1; k <= n; k++) {
      tarn_buf b = TARN_BUF_INIT;
      if (persist)
        tu_alloc_fail_from(k);
      else
        tu_alloc_fail_at(k);
      int rc = chain(&b);
      int hit = tu_alloc_failed();
      tu_alloc_fail_at(0);
      assert_true(hit);
      assert_int_equal(rc, TARN_ENOMEM);
      assert_true(b.len < full.len);
      if (b.len)
        assert_memory_equal(b.data, full.data, b.len);
      tarn_buf_free(&b);
    }
  }
  tarn_buf_free(&full);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(appends_in_order),
      cmocka_unit_test(appendf_grows_past_capacity),
      cmocka_unit_test(overflow_refused_and_sticks),
      cmocka_unit_test(allocation_failure_in_turn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
