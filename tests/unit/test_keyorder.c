/* The metadata store's key order (Oxia's compare_with_slash) and the
 * order-preserving key encoding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/meta.h"
#include "testutil.h"

static int sign(int x) { return x < 0 ? -1 : x > 0; }

static int enc_cmp(const char *a, const char *b) {
  uint8_t ea[256], eb[256];
  size_t na = tarn_meta_key_encode(a, ea), nb = tarn_meta_key_encode(b, eb);
  int c = memcmp(ea, eb, na < nb ? na : nb);
  if (c)
    return sign(c);
  return na < nb ? -1 : na > nb;
}

/* Cases worked out by hand from compare_with_slash.go. */
static void test_compare_cases(void **state) {
  (void)state;
  static const struct {
    const char *a, *b;
    int want;
  } cases[] = {
      {"a", "b", -1},
      {"a", "ab", -1},
      {"", "a", -1},
      {"", "/", -1},
      {"zzz", "/a", -1}, /* no '/' sorts before any '/' */
      {"00000000000000000007-1", "/mark-deleted-offsets/7", -1},
      {"a/b", "a/c", -1},
      {"a/b", "b/a", -1},
      {"a/z", "a/b/c", -1}, /* remainder without '/' first */
      {"a/", "a/b", -1},
      {"a/", "a//", -1},
      {"a", "a/", -1},
      {"/a", "/a/b", -1},
      {"b/", "a/b/c", 1},
      {"/stream-write-leases/7/x", "/stream-write-leases/7/\xef\xbf\xbf", -1},
      {"a/b", "a/b", 0},
      {"", "", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int got = sign(tarn_meta_key_compare(cases[i].a, cases[i].b));
    if (got != cases[i].want)
      fail_msg("compare(\"%s\", \"%s\") = %d, want %d", cases[i].a, cases[i].b, got, cases[i].want);
    assert_int_equal(sign(tarn_meta_key_compare(cases[i].b, cases[i].a)), -cases[i].want);
    assert_int_equal(enc_cmp(cases[i].a, cases[i].b), cases[i].want);
  }
}

static void test_encoding_bytes(void **state) {
  (void)state;
  uint8_t e[64];
  size_t n = tarn_meta_key_encode("/m/7", e);
  tu_assert_hex(e, n, "02 00 02 6d 00 01 37");
  n = tarn_meta_key_encode("ab", e);
  tu_assert_hex(e, n, "01 61 62");
  assert_int_equal(tarn_meta_key_encode("ab", NULL), 3);
  char out[64];
  assert_int_equal(tarn_meta_key_decode(e, n, out), 0);
  assert_string_equal(out, "ab");
  static const uint8_t bad1[] = {0x03, 'a'}, bad2[] = {0x02, 'a'}, bad3[] = {0x01, 'a', 0};
  assert_int_equal(tarn_meta_key_decode(bad1, 2, out), TARN_ECORRUPT);
  assert_int_equal(tarn_meta_key_decode(bad2, 2, out), TARN_ECORRUPT);
  assert_int_equal(tarn_meta_key_decode(bad3, 3, out), TARN_ECORRUPT);
  assert_int_equal(tarn_meta_key_decode(bad3, 0, out), TARN_ECORRUPT);
}

/* Random keys over a tiny alphabet with '/', so that empty segments, shared
 * prefixes and equal segments are common. */
static void rand_key(uint64_t *st, char *k) {
  static const char alpha[] = "ab/0-\x7f\xc3";
  size_t n = tu_rand(st) % 9;
  if (tu_rand(st) % 4 == 0) { /* an index-key-like prefix */
    memcpy(k, "00000000000000000007-", 21);
    k += 21;
  }
  for (size_t i = 0; i < n; i++)
    k[i] = alpha[tu_rand(st) % (sizeof alpha - 1)];
  k[n] = 0;
}

static void test_property(void **state) {
  (void)state;
  uint64_t st = 42;
  char a[64], b[64], d[64];
  uint8_t e[128];
  for (int i = 0; i < 200000; i++) {
    rand_key(&st, a);
    if (tu_rand(&st) % 3 == 0) { /* b extends or shares a prefix of a */
      strcpy(b, a);
      size_t cut = strlen(a) ? tu_rand(&st) % (strlen(a) + 1) : 0;
      b[cut] = 0;
      rand_key(&st, d);
      size_t bl = strlen(b), dl = strlen(d);
      if (dl > sizeof b - 1 - bl)
        dl = sizeof b - 1 - bl; /* b stays a 63-byte key at most */
      memcpy(b + bl, d, dl);
      b[bl + dl] = 0;
    } else {
      rand_key(&st, b);
    }
    int c = sign(tarn_meta_key_compare(a, b));
    if (c != enc_cmp(a, b))
      fail_msg("order differs for \"%s\" and \"%s\"", a, b);
    assert_int_equal(c == 0, strcmp(a, b) == 0);
    size_t n = tarn_meta_key_encode(a, e);
    size_t slashes = 0;
    for (const char *p = a; *p; p++)
      slashes += *p == '/';
    assert_int_equal(n, strlen(a) + 1 + slashes);
    assert_int_equal(tarn_meta_key_decode(e, n, d), 0);
    assert_string_equal(d, a);
  }
}

/* The spec's Key order property: no '/' key sorts between two keys without. */
static void test_key_order_property(void **state) {
  (void)state;
  uint64_t st = 7;
  char a[64], b[64], c[64];
  for (int i = 0; i < 50000; i++) {
    rand_key(&st, a), rand_key(&st, b), rand_key(&st, c);
    if (strchr(a, '/') || strchr(b, '/') || !strchr(c, '/'))
      continue;
    assert_true(tarn_meta_key_compare(c, a) > 0 && tarn_meta_key_compare(c, b) > 0);
    assert_int_equal(sign(tarn_meta_key_compare(a, b)), sign(strcmp(a, b)));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compare_cases),
      cmocka_unit_test(test_encoding_bytes),
      cmocka_unit_test(test_property),
      cmocka_unit_test(test_key_order_property),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
