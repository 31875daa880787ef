/* The etcd:// option prefix=ROOT: deployments under different roots (or none)
 * share one etcd without sharing a record. Needs TARN_TEST_ETCD for the etcd
 * part (skipped without it, failed in CI). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tarn/error.h"
#include "tarn/meta.h"

static void bad_prefixes_are_refused(void **state) {
  (void)state;
  tarn_meta *m = NULL;
  char *dir = tu_tmpdir("mprefix");
  char uri[600];
  snprintf(uri, sizeof uri, "sqlite:%s/meta.db?prefix=a", dir);
  assert_int_equal(tarn_meta_open(uri, &m), TARN_EINVAL);
  assert_non_null(strstr(tarn_errmsg(), "etcd:// only"));
  assert_int_equal(tarn_meta_open("mem:x?prefix=a", &m), TARN_EINVAL);
  assert_int_equal(tarn_meta_open("etcd://127.0.0.1:1?prefix=", &m), TARN_EINVAL);
  assert_int_equal(tarn_meta_open("etcd://127.0.0.1:1?prefix=a%20b", &m), TARN_EINVAL);
  assert_non_null(strstr(tarn_errmsg(), "prefix must be"));
  assert_null(m);
  tu_rmtree(dir);
  free(dir);
}

/* Writes key k = tag in partition "p" through a handle on uri. */
static tarn_meta *open_put(const char *uri, const char *tag) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open(uri, &m), 0);
  assert_int_equal(tarn_meta_create(m, "p", "k", tag, strlen(tag), TARN_META_PERSISTENT, NULL), 0);
  return m;
}

/* k holds want, and the root holds n records */
static void expect_only(tarn_meta *m, const char *want, size_t n) {
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_get(m, "p", "k", &r), 0);
  assert_int_equal(r.value_len, strlen(want));
  assert_memory_equal(r.value, want, r.value_len);
  tarn_meta_rec_free(&r);
  tarn_meta_recs l = {0};
  assert_int_equal(tarn_meta_list(m, "p", "", "\xff", 0, 0, &l), 0);
  assert_int_equal(l.n, n); /* lookups and lists see only their root */
  tarn_meta_recs_free(&l);
}

static void roots_do_not_share_records(void **state) {
  (void)state;
  const char *etcd = tu_env_required("TARN_TEST_ETCD");
  if (!etcd) {
    print_message("TARN_TEST_ETCD not set: skipped\n");
    skip();
  }
  char a[300], b[300];
  long long run = (long long)time(NULL) * 1000 + getpid() % 1000;
  /* "a" and "a/x": one root is not a prefix of another's keys */
  snprintf(a, sizeof a, "etcd://%s?prefix=t%lld/a", etcd, run);
  snprintf(b, sizeof b, "etcd://%s?session_timeout_ms=5000&prefix=t%lld/a/x", etcd, run);
  tarn_meta *ma = open_put(a, "in-a"), *mb = open_put(b, "in-b");
  expect_only(ma, "in-a", 1);
  expect_only(mb, "in-b", 1);
  /* a sequenced put under each root starts from nothing */
  tarn_meta_rec out = {0};
  assert_int_equal(tarn_meta_sequenced_put(ma, "p", "s", 1, 1, "v", 1, &out), 0);
  assert_string_equal(out.key, "s-00000000000000000001-00000000000000000001");
  tarn_meta_rec_free(&out);
  assert_int_equal(tarn_meta_sequenced_put(mb, "p", "s", 1, 1, "v", 1, &out), 0);
  assert_string_equal(out.key, "s-00000000000000000001-00000000000000000001");
  tarn_meta_rec_free(&out);
  /* a second handle on the same root sees the first's records */
  tarn_meta *ma2;
  assert_int_equal(tarn_meta_open(a, &ma2), 0);
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_get(ma2, "p", "s-00000000000000000001-00000000000000000001", &r), 0);
  tarn_meta_rec_free(&r);
  size_t n = 0;
  assert_int_equal(tarn_meta_delete_range(ma2, "p", "", "\xff", &n), 0);
  assert_int_equal(n, 2);
  expect_only(mb, "in-b", 2); /* untouched by a's DeleteRange */
  assert_int_equal(tarn_meta_delete_range(mb, "p", "", "\xff", &n), 0);
  tarn_meta_close(ma2);
  tarn_meta_close(ma);
  tarn_meta_close(mb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bad_prefixes_are_refused),
      cmocka_unit_test(roots_do_not_share_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
