/* Index keys K(L, e, c) (spec "Offset index keys", tables-and-vectors §4.2) and
 * the slash keys of a log (§3.2). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/key.h"

static void spec_keys(void **state) {
  static const struct {
    uint64_t l, e, c;
    const char *key;
  } v[] = {
      {7, 3, 0, "00000000000000000007-00000000000000000003-00000000000000000000"},
      {7, 5, 0, "00000000000000000007-00000000000000000005-00000000000000000000"},
      {7, 3, 8, "00000000000000000007-00000000000000000003-00000000000000000008"},
      {7, 7, 28, "00000000000000000007-00000000000000000007-00000000000000000028"},
      {7, 3, TARN_KEY_MAX, "00000000000000000007-00000000000000000003-09223372036854775807"},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    char k[TARN_KEY_LEN + 1];
    assert_int_equal(tarn_key_format(k, v[i].l, v[i].e, v[i].c), 0);
    assert_string_equal(k, v[i].key);
    assert_int_equal(strlen(k), TARN_KEY_LEN);
    tarn_key p;
    assert_int_equal(tarn_key_parse(v[i].key, strlen(v[i].key), &p), 0);
    assert_int_equal(p.log_id, v[i].l);
    assert_int_equal(p.end_offset, v[i].e);
    assert_int_equal(p.cumulative_size, v[i].c);
  }
  /* K(L, x, MAX) sorts after every key of L with end offset <= x and before any greater. */
  char a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1], c[TARN_KEY_LEN + 1];
  tarn_key_format(a, 7, 3, 8);
  tarn_key_format(b, 7, 3, TARN_KEY_MAX);
  tarn_key_format(c, 7, 4, 0);
  assert_true(strcmp(a, b) < 0 && strcmp(b, c) < 0);
}

static void parse_refusals(void **state) {
  static const struct {
    const char *key;
    const char *want;
  } bad[] = {
      {"00000000000000000007-00000000000000000003-0000000000000000000",
       "index key: byte 61: 61 bytes, an index key has exactly 62"},
      {"00000000000000000007-00000000000000000003-000000000000000000000",
       "index key: byte 62: 63 bytes"},
      {"00000000000000000007_00000000000000000003-00000000000000000000",
       "index key: byte 20: expected '-' between fields, found 0x5f"},
      {"00000000000000000007-00000000000000000003+00000000000000000000",
       "index key: byte 41: expected '-'"},
      {"0000000000000000000a-00000000000000000003-00000000000000000000",
       "index key: byte 19: log_id: expected a decimal digit, found 0x61"},
      {"00000000000000000007-0000000000000000000 -00000000000000000000",
       "index key: byte 40: end_offset: expected a decimal digit, found 0x20"},
      {"00000000000000000007-00000000000000000003-0000000000000000000-",
       "index key: byte 61: cumulative_size: expected a decimal digit"},
      {"09223372036854775808-00000000000000000003-00000000000000000000",
       "index key: byte 0: log_id exceeds MAX"},
      {"00000000000000000007-10000000000000000000-00000000000000000000",
       "index key: byte 21: end_offset exceeds MAX"},
      {"00000000000000000007-00000000000000000003-99999999999999999999",
       "index key: byte 42: cumulative_size exceeds MAX"},
      {"00000000000000000007-00000000000000000003-18446744073709551616",
       "index key: byte 42: cumulative_size exceeds MAX"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tarn_key k;
    int rc = tarn_key_parse(bad[i].key, strlen(bad[i].key), &k);
    if (rc != TARN_ECORRUPT || !strstr(tarn_errmsg(), bad[i].want))
      fail_msg("%s: got %d '%s', want '%s'", bad[i].key, rc, tarn_errmsg(), bad[i].want);
  }
  /* An embedded NUL is a fault at its byte, not the end of the key. */
  char k0[TARN_KEY_LEN + 1];
  tarn_key_format(k0, 1, 2, 3);
  k0[30] = 0;
  tarn_key k;
  assert_int_equal(tarn_key_parse(k0, TARN_KEY_LEN, &k), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "byte 30"));
  char out[TARN_KEY_LEN + 1];
  assert_int_equal(tarn_key_format(out, TARN_KEY_MAX + 1, 0, 0), TARN_ERANGE);
  assert_int_equal(tarn_key_format(out, 0, 0, UINT64_MAX), TARN_ERANGE);
}

static void random_round_trips(void **state) {
  uint64_t rng = 7;
  for (int i = 0; i < 20000; i++) {
    uint64_t f[3];
    for (int j = 0; j < 3; j++) {
      uint64_t r = tu_rand(&rng);
      f[j] = (r & 3) == 0 ? r % 1000 : (r & 3) == 1 ? TARN_KEY_MAX - r % 3 : r >> 1;
    }
    char k[TARN_KEY_LEN + 1], ref[64];
    assert_int_equal(tarn_key_format(k, f[0], f[1], f[2]), 0);
    snprintf(ref, sizeof ref, "%020llu-%020llu-%020llu", (unsigned long long)f[0],
             (unsigned long long)f[1], (unsigned long long)f[2]);
    assert_string_equal(k, ref);
    tarn_key p;
    assert_int_equal(tarn_key_parse(k, TARN_KEY_LEN, &p), 0);
    assert_int_equal(p.log_id, f[0]);
    assert_int_equal(p.end_offset, f[1]);
    assert_int_equal(p.cumulative_size, f[2]);
  }
}

/* LS-004: P(L) is decimal without leading zeros; LS-005: only index keys of L
 * carry L's prefix, and the slash keys never do. */
static void partition_prefix_and_slash_keys(void **state) {
  char p[TARN_KEY_PARTITION_LEN + 1], pre[TARN_KEY_PREFIX_LEN + 1], s[TARN_KEY_SLASH_MAX];
  assert_int_equal(tarn_key_partition(p, 7), 0);
  assert_string_equal(p, "7");
  assert_int_equal(tarn_key_partition(p, 0), 0);
  assert_string_equal(p, "0");
  assert_int_equal(tarn_key_partition(p, TARN_KEY_MAX), 0);
  assert_string_equal(p, "9223372036854775807");
  assert_int_equal(tarn_key_prefix(pre, 7), 0);
  assert_string_equal(pre, "00000000000000000007-");

  char k[TARN_KEY_LEN + 1];
  tarn_key_format(k, 7, 3, 8);
  assert_true(tarn_key_has_prefix(k, TARN_KEY_LEN, 7));
  assert_false(tarn_key_has_prefix(k, TARN_KEY_LEN, 70));
  assert_false(tarn_key_has_prefix(k, TARN_KEY_LEN, 0));
  tarn_key_format(k, 70, 3, 8);
  assert_false(tarn_key_has_prefix(k, TARN_KEY_LEN, 7));
  assert_false(tarn_key_has_prefix(k, 20, 70)); /* too short to hold the '-' */

  assert_int_equal(tarn_key_trim_marker(s, 7), 0);
  assert_string_equal(s, "/mark-deleted-offsets/7");
  assert_false(tarn_key_has_prefix(s, strlen(s), 7));
  assert_int_equal(tarn_key_fence(s, 12345), 0);
  assert_string_equal(s, "/stream-write-fences/12345");
  assert_int_equal(tarn_key_lease_prefix(s, 7), 0);
  assert_string_equal(s, "/stream-write-leases/7/");
  assert_int_equal(tarn_key_lease(s, 7, "0f8c7c2e-7a7e-4d7c-8a3e-0e4b6b4b1c2d"), 0);
  assert_string_equal(s, "/stream-write-leases/7/0f8c7c2e-7a7e-4d7c-8a3e-0e4b6b4b1c2d");
  assert_int_equal(tarn_key_lease(s, 7, ""), TARN_EINVAL);
  assert_int_equal(tarn_key_lease(s, 7, "a/b"), TARN_EINVAL);
  char longtok[200];
  memset(longtok, 'x', sizeof longtok - 1);
  longtok[sizeof longtok - 1] = 0;
  assert_int_equal(tarn_key_lease(s, 7, longtok), TARN_EINVAL);
  assert_int_equal(tarn_key_fence(s, TARN_KEY_MAX + 1), TARN_ERANGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spec_keys),
      cmocka_unit_test(parse_refusals),
      cmocka_unit_test(random_round_trips),
      cmocka_unit_test(partition_prefix_and_slash_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
