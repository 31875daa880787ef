/* The public error path (include/tarn/error.h): a callback's message reaches
 * tarn_errmsg(), every code has a name and a sentence, the codes stay out of
 * the -errno range; and tarn_catalog_partition_log, which resolves NS/NAME
 * and a partition to a log. */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/error.h"
#include "tarn/lease.h"
#include "tu_log.h"

/* A callback on a thread of its own reports through tarn_set_errmsg: its
 * message is that thread's, and leaves the caller's thread untouched. */
typedef struct cb_arg {
  int rc;
  char seen[256];
} cb_arg;

static int read_at_cb(void *ctx, unsigned long long at) {
  (void)ctx;
  return tarn_set_errmsg(TARN_EIO, "read-at callback: byte %llu: disk on fire", at);
}

static void *cb_thread(void *p) {
  cb_arg *a = p;
  tarn_errclear();
  a->rc = read_at_cb(NULL, 4096);
  snprintf(a->seen, sizeof a->seen, "%s", tarn_errmsg());
  return NULL;
}

static void callback_message_is_its_threads(void **state) {
  (void)state;
  assert_int_equal(tarn_set_errmsg(TARN_EINVAL, "caller: %d", 7), TARN_EINVAL);
  cb_arg a = {0};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, cb_thread, &a), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(a.rc, TARN_EIO);
  assert_string_equal(a.seen, "read-at callback: byte 4096: disk on fire");
  assert_string_equal(tarn_errmsg(), "caller: 7");
  tarn_errclear();
  assert_string_equal(tarn_errmsg(), "");
}

static void set_errno_maps_and_names_the_cause(void **state) {
  (void)state;
  assert_int_equal(tarn_set_errno(ENOENT, "open %s", "x.parquet"), TARN_ENOTFOUND);
  char want[128];
  snprintf(want, sizeof want, "open x.parquet: %s", strerror(ENOENT));
  assert_string_equal(tarn_errmsg(), want);
  assert_int_equal(tarn_set_errno(EEXIST, "a"), TARN_EEXIST);
  assert_int_equal(tarn_set_errno(ENOMEM, "a"), TARN_ENOMEM);
  assert_int_equal(tarn_set_errno(ETIMEDOUT, "a"), TARN_ETIMEDOUT);
  assert_int_equal(tarn_set_errno(EACCES, "a"), TARN_EIO);
}

/* The message buffer holds 1023 bytes: a longer message is cut there, never
 * written past. */
static void long_message_is_truncated(void **state) {
  (void)state;
  static char big[4000];
  memset(big, 'x', sizeof big - 1);
  assert_int_equal(tarn_set_errmsg(TARN_ECORRUPT, "%s!", big), TARN_ECORRUPT);
  size_t n = strlen(tarn_errmsg());
  assert_int_equal(n, 1023);
  assert_int_equal(strspn(tarn_errmsg(), "x"), 1023);
  /* a long errno message is cut the same way */
  tarn_set_errno(EACCES, "%s", big);
  assert_int_equal(strlen(tarn_errmsg()), 1023);
}

static const struct {
  int code;
  const char *name;
} all[] = {
    {TARN_EINVAL, "TARN_EINVAL"},
    {TARN_ENOMEM, "TARN_ENOMEM"},
    {TARN_ECORRUPT, "TARN_ECORRUPT"},
    {TARN_EVERSION, "TARN_EVERSION"},
    {TARN_ENOTFOUND, "TARN_ENOTFOUND"},
    {TARN_EEXIST, "TARN_EEXIST"},
    {TARN_EIO, "TARN_EIO"},
    {TARN_ECONFLICT, "TARN_ECONFLICT"},
    {TARN_ETIMEDOUT, "TARN_ETIMEDOUT"},
    {TARN_EUNKNOWN, "TARN_EUNKNOWN"},
    {TARN_EFENCED, "TARN_EFENCED"},
    {TARN_ESESSION, "TARN_ESESSION"},
    {TARN_EUNSUPPORTED, "TARN_EUNSUPPORTED"},
    {TARN_EBUSY, "TARN_EBUSY"},
    {TARN_ERANGE, "TARN_ERANGE"},
    {TARN_EUNAVAIL, "TARN_EUNAVAIL"},
    {TARN_EAUTH, "TARN_EAUTH"},
    {TARN_ECLOSED, "TARN_ECLOSED"},
    {TARN_ETRIMMED, "TARN_ETRIMMED"},
    {TARN_EEND, "TARN_EEND"},
    {TARN_EGUARD, "TARN_EGUARD"},
};
#define N_ALL (sizeof all / sizeof all[0])

static void every_code_has_a_name_and_a_sentence(void **state) {
  (void)state;
  /* the table above is every code: they fill [TARN_ELAST, TARN_ERRBASE) */
  assert_int_equal(TARN_ERRBASE - TARN_ELAST, (int)N_ALL);
  for (size_t i = 0; i < N_ALL; i++) {
    assert_string_equal(tarn_errname(all[i].code), all[i].name);
    const char *s = tarn_strerror(all[i].code);
    /* a sentence, not the name again */
    assert_true(strlen(s) > 10);
    assert_null(strstr(s, "TARN_"));
    for (size_t j = 0; j < i; j++) {
      assert_int_not_equal(all[i].code, all[j].code);
      assert_string_not_equal(s, tarn_strerror(all[j].code));
    }
  }
  assert_string_equal(tarn_strerror(TARN_EUNKNOWN),
                      "the operation may or may not have taken effect");
  assert_string_equal(tarn_errname(TARN_OK), "TARN_OK");
  /* unknown codes: never NULL, never a real code's text */
  int unknown[] = {1, -1, -22, TARN_ERRBASE, TARN_ELAST - 1, -4095, 31000};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    assert_string_equal(tarn_errname(unknown[i]), "TARN_E?");
    assert_string_equal(tarn_strerror(unknown[i]), "not a tarn error code");
  }
}

/* No code equals a negated errno, which lies in -1..-4095 (as LMDB keeps its
 * own below -30600). */
static void codes_are_disjoint_from_errno(void **state) {
  (void)state;
  for (size_t i = 0; i < N_ALL; i++) {
    assert_true(all[i].code < -4095);
    assert_true(all[i].code < TARN_ERRBASE && all[i].code >= TARN_ELAST);
  }
}

/* ---- tarn_catalog_partition_log ------------------------------------------ */

typedef tu_catalog_fx fx;

static fx open_fx(int drain_ms) { return tu_catalog_fx_open("mem", drain_ms); }

static void close_fx(fx *f) { tu_catalog_fx_close(f); }

static void partition_log_resolves_each_partition(void **state) {
  (void)state;
  fx f = open_fx(1000);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "events", 3, NULL, 0, &s), 0);
  for (uint32_t p = 0; p < 3; p++) {
    uint64_t log = 999999;
    assert_int_equal(tarn_catalog_partition_log(f.c, "ns", "events", p, &log), 0);
    assert_int_equal(log, s.logs[p]);
  }
  /* a partition added later resolves too */
  tarn_catalog_record s2;
  assert_int_equal(tarn_catalog_add_partitions(f.c, "ns", "events", 1, &s2), 0);
  uint64_t log = 0;
  assert_int_equal(tarn_catalog_partition_log(f.c, "ns", "events", 3, &log), 0);
  assert_int_equal(log, s2.logs[3]);
  tarn_catalog_record_free(&s2);
  tarn_catalog_record_free(&s);
  close_fx(&f);
}

static void partition_log_unknown_stream_and_bad_identity(void **state) {
  (void)state;
  fx f = open_fx(1000);
  uint64_t log = 12345;
  assert_int_equal(tarn_catalog_partition_log(f.c, "ns", "nope", 0, &log), TARN_ENOTFOUND);
  assert_non_null(strstr(tarn_errmsg(), "ns/nope"));
  assert_int_equal(log, 12345);
  assert_int_equal(tarn_catalog_partition_log(f.c, "ns", "a/b", 0, &log), TARN_EINVAL);
  assert_int_equal(tarn_catalog_partition_log(f.c, "", "x", 0, &log), TARN_EINVAL);
  assert_int_equal(log, 12345);
  close_fx(&f);
}

static void partition_log_out_of_range(void **state) {
  (void)state;
  fx f = open_fx(1000);
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "two", 2, NULL, 0, NULL), 0);
  uint64_t log = 12345;
  assert_int_equal(tarn_catalog_partition_log(f.c, "ns", "two", 2, &log), TARN_ERANGE);
  assert_non_null(strstr(tarn_errmsg(), "has 2 partitions; there is no partition 2"));
  assert_int_equal(tarn_catalog_partition_log(f.c, "ns", "two", UINT32_MAX, &log), TARN_ERANGE);
  assert_int_equal(log, 12345);
  close_fx(&f);
}

/* LS-087: a dropped stream's logs are no one's, and a stream being dropped
 * (a drop left half done by a held lease) hands out none either. */
static void partition_log_dropped_stream(void **state) {
  (void)state;
  fx f = open_fx(20);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "held", 1, NULL, 0, &s), 0);
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "gone", 1, NULL, 0, NULL), 0);
  tarn_lease *l = NULL;
  assert_int_equal(tarn_lease_acquire(f.m, s.logs[0], &l), 0);
  assert_int_equal(tarn_catalog_drop_stream(f.c, "ns", "held", NULL), TARN_EBUSY);
  tarn_catalog_record r;
  assert_int_equal(tarn_catalog_open_stream(f.c, "ns", "held", &r), 0);
  assert_int_equal(r.state, TARN_STREAM_DROPPING);
  tarn_catalog_record_free(&r);
  uint64_t log = 12345;
  assert_int_equal(tarn_catalog_partition_log(f.c, "ns", "held", 0, &log), TARN_ENOTFOUND);
  assert_non_null(strstr(tarn_errmsg(), "being dropped"));
  assert_int_equal(log, 12345);
  tarn_lease_release(l);

  assert_int_equal(tarn_catalog_drop_stream(f.c, "ns", "gone", NULL), 0);
  assert_int_equal(tarn_catalog_partition_log(f.c, "ns", "gone", 0, &log), TARN_ENOTFOUND);
  assert_int_equal(log, 12345);
  tarn_catalog_record_free(&s);
  close_fx(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(callback_message_is_its_threads),
      cmocka_unit_test(set_errno_maps_and_names_the_cause),
      cmocka_unit_test(long_message_is_truncated),
      cmocka_unit_test(every_code_has_a_name_and_a_sentence),
      cmocka_unit_test(codes_are_disjoint_from_errno),
      cmocka_unit_test(partition_log_resolves_each_partition),
      cmocka_unit_test(partition_log_unknown_stream_and_bad_identity),
      cmocka_unit_test(partition_log_out_of_range),
      cmocka_unit_test(partition_log_dropped_stream),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
