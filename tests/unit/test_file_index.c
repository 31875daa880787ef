/* The file index (tables §3.8, §4.6): binary and Base64 forms, lookup, refusals. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/fileindex.h"

#define FI_HEX                                                                                     \
  "00000000 00000002 0000000b 372d302e 70617271 75657400 00000000 00000600 00000b37 2d332e70 "     \
  "61727175 6574"
#define FI_B64 "AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA=="

static const tarn_file_index_entry example[] = {{2, "7-0.parquet"}, {6, "7-3.parquet"}};

static void spec_example(void **state) {
  (void)state;
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_file_index_encode(example, 2, &b), 0);
  assert_int_equal(b.len, 46);
  tu_assert_hex(b.data, b.len, FI_HEX);
  tarn_buf_reset(&b);
  /* LS-066: ascending, last = e-1 for [0, 7) */
  assert_int_equal(tarn_file_index_build_base64(example, 2, 0, 7, &b), 0);
  assert_int_equal(b.len, 64);
  assert_memory_equal(b.data, FI_B64, 64);
  tarn_buf_free(&b);

  tarn_file_index fi;
  assert_int_equal(tarn_file_index_decode_base64(FI_B64, strlen(FI_B64), &fi), 0);
  assert_int_equal(fi.n, 2);
  assert_int_equal(fi.files[0].last_offset, 2);
  assert_string_equal(fi.files[0].name, "7-0.parquet");
  assert_int_equal(fi.files[1].last_offset, 6);
  assert_string_equal(fi.files[1].name, "7-3.parquet");

  size_t idx;
  int64_t base;
  int64_t want_idx[] = {0, 0, 0, 1, 1, 1, 1}, want_base[] = {0, 0, 0, 3, 3, 3, 3};
  for (int64_t o = 0; o < 7; o++) {
    assert_int_equal(tarn_file_index_lookup(&fi, 0, o, &idx, &base), 0);
    assert_int_equal(idx, want_idx[o]);
    assert_int_equal(base, want_base[o]);
  }
  assert_int_equal(tarn_file_index_lookup(&fi, 0, 7, &idx, &base), TARN_ENOTFOUND);
  assert_int_equal(tarn_file_index_lookup(&fi, 0, -1, &idx, &base), TARN_ENOTFOUND);
  /* a range starting above 0: the first file's base is s */
  assert_int_equal(tarn_file_index_lookup(&fi, 1, 1, &idx, &base), 0);
  assert_int_equal(base, 1);
  tarn_file_index_free(&fi);
}

static void expect_bin(const char *hex, const char *msg) {
  size_t len;
  uint8_t *p = tu_hex(hex, &len);
  tarn_file_index fi = {NULL, 0};
  if (tarn_file_index_decode(p, len, &fi) != TARN_ECORRUPT)
    fail_msg("accepted %s", hex);
  if (!strstr(tarn_errmsg(), msg))
    fail_msg("message '%s' lacks '%s'", tarn_errmsg(), msg);
  assert_non_null(strstr(tarn_errmsg(), "file index: byte "));
  free(p);
}

static void binary_refusals(void **state) {
  (void)state;
  expect_bin("", "no files");
  expect_bin("00000000 000000", "last_offset needs 8 bytes");
  expect_bin("00000000 00000002 0000", "name_length needs 4 bytes");
  expect_bin("00000000 00000002 0000000c 372d302e 70617271 756574",
             "byte 8: file 0: name_length 12 exceeds");
  expect_bin("00000000 00000002 ffffffff 372d302e 70617271 756574", "exceeds the bytes left");
  expect_bin("00000000 00000002 00000000", "name_length 0 is 0");
  expect_bin("00000000 00000002 00000003 370030", "byte 13: file 0: name contains a NUL");
  expect_bin("ffffffff ffffffff 00000001 37", "negative");
  /* LS-066: not ascending, equal, and a duplicate name */
  expect_bin("00000000 00000006 00000001 61 00000000 00000002 00000001 62",
             "byte 13: file 1: last_offset 2 not above");
  expect_bin("00000000 00000006 00000001 61 00000000 00000006 00000001 62", "not above");
  expect_bin("00000000 00000002 00000001 61 00000000 00000006 00000001 61",
             "byte 13: file 1 repeats the name 'a' of file 0");
}

static void base64_strict(void **state) {
  (void)state;
  tarn_file_index fi;
  const char *bad[] = {
      "AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA=",   /* length */
      "AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA",    /* no padding */
      "AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldB==",  /* stray bits */
      "AAAAAAAAAAIAAAAL*y0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA==",  /* alphabet */
      "AAAA=AAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA==",  /* inner '=' */
      "AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVld===",  /* three '=' */
      "AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA\n=", /* newline */
      "",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (tarn_file_index_decode_base64(bad[i], strlen(bad[i]), &fi) != TARN_ECORRUPT)
      fail_msg("accepted '%s'", bad[i]);
  assert_int_equal(tarn_file_index_decode_base64(bad[3], strlen(bad[3]), &fi), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "file index base64: byte 16:"));
  /* one '=' of padding: 2 bytes mod 3 */
  tarn_file_index_entry one[] = {{0, "a.parquet"}};
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_file_index_build_base64(one, 1, 0, 1, &b), 0);
  assert_int_equal(tarn_file_index_decode_base64((const char *)b.data, b.len, &fi), 0);
  assert_int_equal(fi.n, 1);
  assert_string_equal(fi.files[0].name, "a.parquet");
  tarn_file_index_free(&fi);
  tarn_buf_free(&b);
}

/* LS-066 and LS-013 on the compactor's side. */
static void builder_refusals(void **state) {
  (void)state;
  tarn_buf b = TARN_BUF_INIT;
  tarn_file_index_entry desc[] = {{6, "b.parquet"}, {2, "a.parquet"}};
  tarn_file_index_entry dup[] = {{2, "a.parquet"}, {6, "a.parquet"}};
  tarn_file_index_entry names[][1] = {
      {{6, "a.parquet.parquet"}}, {{6, "a.index"}}, {{6, ".parquet"}}, {{6, "a.parquetx"}}};
  assert_int_equal(tarn_file_index_build_base64(desc, 2, 0, 7, &b), TARN_EINVAL);
  assert_non_null(strstr(tarn_errmsg(), "LS-066"));
  assert_int_equal(tarn_file_index_build_base64(dup, 2, 0, 7, &b), TARN_EINVAL);
  assert_non_null(strstr(tarn_errmsg(), "repeats"));
  assert_int_equal(tarn_file_index_build_base64(example, 2, 0, 8, &b),
                   TARN_EINVAL); /* last != e-1 */
  assert_int_equal(tarn_file_index_build_base64(example, 2, 3, 7, &b),
                   TARN_EINVAL); /* file 0 empty */
  assert_int_equal(tarn_file_index_build_base64(example, 0, 0, 7, &b), TARN_EINVAL);
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(tarn_file_index_build_base64(names[i], 1, 0, 7, &b), TARN_EINVAL);
    assert_non_null(strstr(tarn_errmsg(), "LS-013"));
  }
  assert_int_equal(b.len, 0);
  tarn_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spec_example),
      cmocka_unit_test(binary_refusals),
      cmocka_unit_test(base64_strict),
      cmocka_unit_test(builder_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
