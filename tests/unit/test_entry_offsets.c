/* The entry-offsets codec against every vector of tables-and-vectors §4.7, its
 * refusals, and random round trips. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/offsets.h"

static void check_vector(const uint32_t *a, size_t n, const char *hex) {
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_offsets_encode(a, n, &b), 0);
  tu_assert_hex(b.data, b.len, hex);
  uint32_t *back;
  size_t m;
  assert_int_equal(tarn_entry_offsets_decode(b.data, b.len, &back, &m), 0);
  assert_int_equal(m, n);
  if (n)
    assert_memory_equal(back, a, n * sizeof *a);
  free(back);
  tarn_buf_free(&b);
}

/* LS-034: exactly the words IntegratedIntCompressor.compress(A) returns. */
static void appendix_d_vectors(void **state) {
  (void)state;
  uint32_t a[129];
  check_vector((const uint32_t[]){2, 3}, 2, "00000002 00000000 00008182");
  for (uint32_t i = 0; i < 40; i++)
    a[i] = i + 1;
  check_vector(a, 40, "00000028 00000001 ffffffff 81818181 81818181");
  check_vector((const uint32_t[]){1}, 1, "00000001 00000000 00000081");
  check_vector(a, 0, "00000000");
  check_vector((const uint32_t[]){300, 70000}, 2, "00000002 00000000 2044822c 00000084");
  check_vector((const uint32_t[]){5, 5}, 2, "00000002 00000000 00008085");
  for (uint32_t i = 0; i < 32; i++)
    a[i] = 5 * (i + 1);
  check_vector(a, 32, "00000020 00000003 6db6db6d db6db6db b6db6db6");
  for (uint32_t i = 0; i < 128; i++)
    a[i] = i + 1;
  check_vector(a, 128, "00000080 01010101 ffffffff ffffffff ffffffff ffffffff");
  for (uint32_t i = 0; i < 129; i++)
    a[i] = 2 * (i + 1);
  check_vector(a, 129,
               "00000081 02020202 aaaaaaaa aaaaaaaa aaaaaaaa aaaaaaaa aaaaaaaa aaaaaaaa aaaaaaaa "
               "aaaaaaaa 00000082");
  uint32_t s = 0;
  for (uint32_t i = 0; i < 33; i++)
    a[i] = s += i % 3 + 1;
  check_vector(a, 33, "00000021 00000002 79e79e79 9e79e79e 00000083");
}

static void expect_corrupt(const char *hex, const char *msg) {
  size_t len;
  uint8_t *p = tu_hex(hex, &len);
  uint32_t *a = NULL;
  size_t n;
  if (tarn_entry_offsets_decode(p, len, &a, &n) != TARN_ECORRUPT)
    fail_msg("accepted %s", hex);
  assert_null(a);
  if (!strstr(tarn_errmsg(), msg))
    fail_msg("message '%s' lacks '%s'", tarn_errmsg(), msg);
  assert_non_null(strstr(tarn_errmsg(), "entry offsets: byte "));
  free(p);
}

static void refusals(void **state) {
  (void)state;
  expect_corrupt("", "length word needs 4 bytes");
  expect_corrupt("00000002 00000000 000081", "not a multiple of 4");
  expect_corrupt("80000000", "exceeds 2^31-1");
  expect_corrupt("00000000 00000000", "words after the length 0");
  /* width above 32, in a group header and in a single-block header */
  expect_corrupt("00000080 21010101", "byte 4: bit width 33 exceeds 32");
  expect_corrupt("00000020 00000021", "byte 4: bit width 33 exceeds 32");
  /* n too large for the words: checked before any allocation */
  expect_corrupt("7fffffff 00000000 00000000", "needs at least");
  expect_corrupt("00000040 00000000", "needs at least");
  /* truncated packed part */
  expect_corrupt("00000020 00000003 6db6db6d db6db6db", "needs 3 words, 2 left");
  /* a width wider than the deltas need: never written by the encoder */
  expect_corrupt("00000020 00000002 55555555 55555555", "need 1 bits");
  /* marker not 0 */
  expect_corrupt("00000002 00000001 00008182", "marker word");
  /* truncated tail: second value has no terminating byte */
  expect_corrupt("00000002 00000000 00000282", "tail truncated");
  /* overlong tail value (a trailing zero group), and one beyond 32 bits */
  expect_corrupt("00000002 00000000 00800182 00000000", "overlong");
  expect_corrupt("00000001 00000000 7f7f7f7f 000000ff", "exceeds 32 bits");
  expect_corrupt("00000001 00000000 7f7f7f7f 0000007f", "exceeds 32 bits");
  /* non-zero padding, and trailing garbage words */
  expect_corrupt("00000002 00000000 01008182", "padding");
  expect_corrupt("00000002 00000000 00008182 00000000", "1 trailing words");
  expect_corrupt("00000020 00000003 6db6db6d db6db6db b6db6db6 00000000", "trailing words");
  /* n >= 32 with no words at all for the blocks */
  expect_corrupt("00000080", "needs at least");
}

static void max_width_and_wrap(void **state) {
  (void)state;
  /* deltas that need 32 bits, and a non-increasing array (unsigned wrap) */
  uint32_t a[160];
  uint64_t r = 7;
  for (size_t i = 0; i < 160; i++)
    a[i] = (uint32_t)tu_rand(&r);
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_offsets_encode(a, 160, &b), 0);
  uint32_t *back;
  size_t n;
  assert_int_equal(tarn_entry_offsets_decode(b.data, b.len, &back, &n), 0);
  assert_int_equal(n, 160);
  assert_memory_equal(back, a, sizeof a);
  free(back);
  tarn_buf_free(&b);
}

static void random_round_trips(void **state) {
  (void)state;
  uint64_t r = 42;
  size_t sizes[] = {2,   3,   31,  32,  33,  63,  64,   95,    96,
                    127, 128, 129, 255, 256, 257, 1000, 10000, 100000};
  uint32_t *a = malloc(100000 * sizeof *a);
  assert_non_null(a);
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    for (int rep = 0; rep < 3; rep++) {
      size_t n = sizes[si];
      uint32_t v = 0, spread = rep == 0 ? 2 : rep == 1 ? 300 : 20000;
      for (size_t i = 0; i < n; i++)
        a[i] = v += 1 + (uint32_t)(tu_rand(&r) % spread);
      tarn_buf b = TARN_BUF_INIT;
      assert_int_equal(tarn_entry_offsets_encode(a, n, &b), 0);
      uint32_t *back;
      size_t m;
      assert_int_equal(tarn_entry_offsets_decode(b.data, b.len, &back, &m), 0);
      assert_int_equal(m, n);
      assert_memory_equal(back, a, n * sizeof *a);
      free(back);
      /* the bytes without their last word are refused */
      size_t cut = b.len - 4;
      assert_int_equal(tarn_entry_offsets_decode(b.data, cut, &back, &m), TARN_ECORRUPT);
      tarn_buf_free(&b);
    }
  }
  free(a);
}

/* LS-035: boundaries derived from the log section's record counts equal the
 * entry_offsets the writer encodes (the running example: counts 2 and 1). */
static void boundaries_from_counts(void **state) {
  (void)state;
  uint32_t a[2];
  assert_int_equal(tarn_entry_offsets_from_counts((const uint32_t[]){2, 1}, 2, a), 0);
  assert_int_equal(a[0], 2);
  assert_int_equal(a[1], 3);
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_offsets_encode(a, 2, &b), 0);
  tu_assert_hex(b.data, b.len, "00000002 00000000 00008182");
  tarn_buf_free(&b);
  assert_int_equal(tarn_entry_offsets_from_counts((const uint32_t[]){2, 0}, 2, a), TARN_EINVAL);
  assert_int_equal(tarn_entry_offsets_from_counts((const uint32_t[]){0x7fffffff, 1}, 2, a),
                   TARN_ERANGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(appendix_d_vectors),     cmocka_unit_test(refusals),
      cmocka_unit_test(max_width_and_wrap),     cmocka_unit_test(random_round_trips),
      cmocka_unit_test(boundaries_from_counts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
