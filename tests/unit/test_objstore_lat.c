/* The lat: wrapper (include/tarn/objstore_lat.h): the latency it adds follows
 * the median and p99 it is given, the same seed gives the same delays, each
 * outage does what it says (down, slow, noput, lostput) and switches at run
 * time on every handle of a name, and TARN_OBJSTORE_LAT adds parameters. The
 * conformance suite (test_objstore_conformance, variant lat) runs the whole
 * object-store contract through the wrapper. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/error.h"
#include "tarn/objstore.h"
#include "tarn/objstore_lat.h"
#include "testutil.h"

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static tarn_objstore *open_ok(const char *uri) {
  tarn_objstore *s = NULL;
  int rc = tarn_objstore_open(uri, &s);
  if (rc)
    fail_msg("open %s: %s", uri, tarn_errmsg());
  assert_string_equal(tarn_objstore_scheme(s), "lat");
  return s;
}

/* The delays of n HEADs, each measured as the growth of the injected total. */
static void delays(const char *name, tarn_objstore *s, uint64_t *d, int n) {
  uint64_t prev = 0, cur = 0;
  assert_int_equal(tarn_objstore_lat_stats(name, NULL, &prev), 0);
  for (int i = 0; i < n; i++) {
    tarn_objstore_head(s, "nothing", NULL);
    assert_int_equal(tarn_objstore_lat_stats(name, NULL, &cur), 0);
    d[i] = cur - prev;
    prev = cur;
  }
}

static void t_distribution(void **st) {
  (void)st;
  /* small figures: every delay is really slept, and the test checks that too */
  tarn_objstore *s = open_ok("lat:name=dist,median=2ms,p99=6ms,seed=7;mem:lat-dist");
  enum { N = 400 };
  uint64_t d[N];
  int64_t t0 = now_us();
  delays("dist", s, d, N);
  int64_t wall = now_us() - t0;
  uint64_t sum = 0;
  for (int i = 0; i < N; i++)
    sum += d[i];
  /* the process really slept what it injected */
  assert_true(wall >= (int64_t)sum);
  qsort(d, N, sizeof d[0], cmp_u64);
  uint64_t p50 = d[N / 2], p99 = d[N * 99 / 100];
  printf("lat: median %llu us, p99 %llu us over %d calls\n", (unsigned long long)p50,
         (unsigned long long)p99, N);
  assert_in_range(p50, 1700, 2300);
  assert_in_range(p99, 4200, 8500);
  tarn_objstore_close(s);
}

static void t_seeded(void **st) {
  (void)st;
  uint64_t a[20], b[20], c[20];
  tarn_objstore *s = open_ok("lat:name=seed,median=200us,p99=2ms,seed=42;mem:lat-seed");
  delays("seed", s, a, 20);
  assert_int_equal(tarn_objstore_lat_control("seed", "seed=42"), 0);
  delays("seed", s, b, 20);
  assert_int_equal(tarn_objstore_lat_control("seed", "seed=43"), 0);
  delays("seed", s, c, 20);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
  /* fixed delay when p99 <= median */
  assert_int_equal(tarn_objstore_lat_set(s, "median=300us,p99=0"), 0);
  delays("seed", s, a, 5);
  for (int i = 0; i < 5; i++)
    assert_int_equal(a[i], 300);
  tarn_objstore_close(s);
}

static void t_outages(void **st) {
  (void)st;
  tarn_objstore *s = open_ok("lat:name=out;mem:lat-out");
  tarn_objstore *s2 = open_ok("lat:name=out;mem:lat-out"); /* the same state */
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_objstore_put(s, "a", "1", 1), 0);

  assert_int_equal(tarn_objstore_lat_control("out", "outage=down"), 0);
  assert_int_equal(tarn_objstore_get(s2, "a", &b), TARN_EUNAVAIL);
  assert_int_equal(tarn_objstore_put(s2, "b", "2", 1), TARN_EUNAVAIL);
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(s, "", NULL, 10, &l), TARN_EUNAVAIL);
  assert_int_equal(tarn_objstore_delete(s, "a"), TARN_EUNAVAIL);

  assert_int_equal(tarn_objstore_lat_control("out", "outage=noput"), 0);
  assert_int_equal(tarn_objstore_get(s2, "a", &b), 0);
  assert_int_equal(tarn_objstore_put(s2, "b", "2", 1), TARN_EIO);
  tarn_objstore_upload *u;
  assert_int_equal(tarn_objstore_put_begin(s, "c", &u), 0);
  assert_int_equal(tarn_objstore_put_write(u, "xyz", 3), 0);
  assert_int_equal(tarn_objstore_put_commit(u), TARN_EIO);
  assert_int_equal(tarn_objstore_head(s, "b", NULL), TARN_ENOTFOUND); /* nothing written */
  assert_int_equal(tarn_objstore_head(s, "c", NULL), TARN_ENOTFOUND);

  assert_int_equal(tarn_objstore_lat_control("out", "outage=lostput"), 0);
  assert_int_equal(tarn_objstore_put(s2, "b", "2", 1), TARN_EUNKNOWN);
  assert_int_equal(tarn_objstore_lat_control("out", "outage=none"), 0);
  assert_int_equal(tarn_objstore_get(s, "b", &b), 0); /* the lost reply's put landed */
  assert_int_equal(b.len, 1);

  assert_int_equal(tarn_objstore_lat_control("out", "outage=slow,slow=30ms"), 0);
  int64_t t0 = now_us();
  assert_int_equal(tarn_objstore_head(s, "a", NULL), 0);
  assert_true(now_us() - t0 >= 30000);

  assert_int_equal(tarn_objstore_lat_control("out", "outage=down,hang=20ms"), 0);
  t0 = now_us();
  assert_int_equal(tarn_objstore_head(s, "a", NULL), TARN_EUNAVAIL);
  assert_true(now_us() - t0 >= 20000);

  /* a bad parameter changes nothing */
  assert_int_equal(tarn_objstore_lat_control("out", "outage=none,median=fast"), TARN_EINVAL);
  assert_int_equal(tarn_objstore_head(s, "a", NULL), TARN_EUNAVAIL);
  assert_int_equal(tarn_objstore_lat_control("nobody", "outage=none"), TARN_ENOTFOUND);
  tarn_buf_free(&b);
  tarn_objstore_close(s);
  tarn_objstore_close(s2);
  /* the state goes with its last handle */
  assert_int_equal(tarn_objstore_lat_control("out", "outage=none"), TARN_ENOTFOUND);
}

static void t_uris_env(void **st) {
  (void)st;
  tarn_objstore *s = NULL;
  assert_int_equal(tarn_objstore_open("lat:median=3ms", &s), TARN_EINVAL);
  assert_int_equal(tarn_objstore_open("lat:median=3ms;", &s), TARN_EINVAL);
  assert_int_equal(tarn_objstore_open("lat:median=3parsecs;mem:x", &s), TARN_EINVAL);
  assert_int_equal(tarn_objstore_open("lat:color=red;mem:x", &s), TARN_EINVAL);
  assert_int_equal(tarn_objstore_open("lat:outage=sideways;mem:x", &s), TARN_EINVAL);
  assert_int_equal(tarn_objstore_open("lat:;ftp://x", &s), TARN_EUNSUPPORTED);
  assert_null(s);
  /* the default name is the inner URI */
  s = open_ok("lat:;mem:lat-env");
  assert_string_equal(tarn_objstore_lat_name(s), "mem:lat-env");
  tarn_objstore_close(s);
  setenv("TARN_OBJSTORE_LAT", "outage=down", 1);
  s = open_ok("lat:name=envd;mem:lat-env");
  unsetenv("TARN_OBJSTORE_LAT");
  assert_int_equal(tarn_objstore_put(s, "x", "1", 1), TARN_EUNAVAIL);
  tarn_objstore_close(s);
  char *dir = tu_tmpdir("lat");
  char uri[4200];
  snprintf(uri, sizeof uri, "lat:median=100us;file://%s", dir);
  s = open_ok(uri);
  assert_int_equal(tarn_objstore_put(s, "x", "1", 1), 0);
  assert_int_equal(tarn_objstore_put(s, "x", "1", 1), TARN_EEXIST);
  tarn_objstore_close(s);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_distribution),
      cmocka_unit_test(t_seeded),
      cmocka_unit_test(t_outages),
      cmocka_unit_test(t_uris_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
