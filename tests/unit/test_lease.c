/* Write leases: lease record before fence read, fenced logs refused, release. */
#include "testutil.h"
#include "tu_index.h"

#include <stdio.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/meta.h"
#include "tarn/testing.h"

/* The lease record: ephemeral, one distinct token per lease (the order of
 * LS-040, record before fence read, is checked in test_lease_steps.c). */
static void acquire_creates_ephemeral_record(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:lease1", &m), 0);
  tarn_lease *a, *b;
  assert_int_equal(tarn_lease_acquire(m, 7, &a), 0);
  assert_int_equal(tarn_lease_acquire(m, 7, &b), 0);
  assert_string_not_equal(tarn_lease_token(a), tarn_lease_token(b)); /* distinct tokens */
  assert_int_equal(tu_lease_count(m, 7), 2);
  char key[TARN_KEY_SLASH_MAX];
  tarn_key_lease(key, 7, tarn_lease_token(a));
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_get(m, "7", key, &r), 0);
  assert_memory_equal(r.value, tarn_lease_token(a), 36);
  tarn_meta_rec_free(&r);
  assert_int_equal(tarn_lease_release(a), 0);
  assert_int_equal(tu_lease_count(m, 7), 1);
  /* The record is ephemeral: it goes with the session. */
  tarn_meta *other;
  assert_int_equal(tarn_meta_open("mem:lease1", &other), 0);
  assert_int_equal(tarn_meta_close(m), 0);
  assert_int_equal(tu_lease_count(other, 7), 0);
  tarn_meta_close(other);
  tarn_lease_forget(b); /* its handle's session ended: nothing left to release */
}

/* Issue 12: a lease create held in flight that lands after the acquire gave
 * up (or after the release) leaves an ephemeral lease record of our live
 * session; the next acquire of the log, or its deletion's drain (LS-046),
 * through the same handle removes it instead of waiting on it forever. */
static void late_landing_lease_is_swept(void **state) {
  (void)state;
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:lease-late", &m), 0);
  tarn_lease *a, *c;
  /* the first create held, the retry holds the lease; the held one lands
   * after the release */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_DELAY_COMMIT, 1), 0);
  assert_int_equal(tarn_lease_acquire(m, 7, &a), 0);
  assert_int_equal(tarn_lease_release(a), 0);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), 0);
  assert_int_equal(tu_lease_count(m, 7), 1);
  assert_int_equal(tarn_lease_acquire(m, 7, &c), 0);
  assert_int_equal(tu_lease_count(m, 7), 1); /* c's own */
  assert_int_equal(tarn_lease_release(c), 0);
  assert_int_equal(tu_lease_count(m, 7), 0);
  /* the acquire's four creates held (not its Delete in case one landed):
   * it gives up; the first lands later */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_DELAY_COMMIT, 4), 0);
  assert_int_equal(tarn_lease_acquire(m, 7, &a), TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_NONE, 0), 0);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), 0);
  assert_int_equal(tu_lease_count(m, 7), 1);
  tarn_catalog_options o = {0};
  o.drain_timeout_ms = 300;
  o.drain_poll_ms = 20;
  assert_int_equal(tarn_log_delete(m, 7, &o, NULL), 0);
  assert_int_equal(tu_lease_count(m, 7), 0);
  tarn_meta_close(m);
}

/* LS-041: a fenced log gives no lease and keeps no lease record. */
static void fenced_log_refuses(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:lease2", &m), 0);
  char fence[TARN_KEY_SLASH_MAX];
  tarn_key_fence(fence, 9);
  assert_int_equal(tarn_meta_create(m, "9", fence, "\x01", 1, TARN_META_PERSISTENT, NULL), 0);
  tarn_lease *l = NULL;
  assert_int_equal(tarn_lease_acquire(m, 9, &l), TARN_EFENCED);
  assert_null(l);
  assert_int_equal(tu_lease_count(m, 9), 0);
  /* Another log is unaffected. */
  assert_int_equal(tarn_lease_acquire(m, 10, &l), 0);
  assert_int_equal(tarn_lease_release(l), 0);
  tarn_meta_close(m);
}

/* Issue 31 item 11: a fence already there refuses the lease before the
 * lease record's create: nothing is written to the fenced (drained, deleted)
 * log's partition — no write at all, so a write failure armed on the store
 * is not met and the store's change token stays. */
static void fenced_log_untouched(void **state) {
  (void)state;
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:lease-untouched", &m), 0);
  char fence[TARN_KEY_SLASH_MAX];
  tarn_key_fence(fence, 9);
  assert_int_equal(tarn_meta_create(m, "9", fence, "\x01", 1, TARN_META_PERSISTENT, NULL), 0);
  int64_t t0, t1;
  assert_int_equal(tarn_meta_change_token(m, &t0), 0);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_FAIL, 1), 0);
  tarn_lease *l = NULL;
  assert_int_equal(tarn_lease_acquire(m, 9, &l), TARN_EFENCED);
  assert_null(l);
  assert_int_equal(tarn_meta_change_token(m, &t1), 0);
  assert_true(t1 == t0);
  /* the armed failure is still there: the acquire wrote nothing */
  assert_int_equal(tarn_meta_put(m, "9", "/x", "v", 1, NULL), TARN_EUNAVAIL);
  tarn_meta_close(m);
}

/* A handle whose session has ended gets no lease and leaves no record. */
static void ended_session_gives_no_lease(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:lease3", &m), 0);
  tarn_lease *l = NULL;
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  assert_int_not_equal(tarn_lease_acquire(m, 3, &l), 0);
  assert_null(l);
  tarn_meta_close(m);
  assert_int_equal(tarn_meta_open("mem:lease3", &m), 0);
  assert_int_equal(tu_lease_count(m, 3), 0);
  tarn_meta_close(m);
}

/* LS-048: a holder learns that its session ended. */
static void session_end_is_seen(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:lease4", &m), 0);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(m, 4, &l), 0);
  assert_int_equal(tarn_lease_check(l), 0);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  assert_int_equal(tarn_lease_check(l), TARN_ESESSION);
  assert_int_equal(tu_lease_count(m, 4), 0);
  assert_int_equal(tarn_lease_release(l), 0);
  tarn_meta_close(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(acquire_creates_ephemeral_record),
      cmocka_unit_test(fenced_log_refuses),
      cmocka_unit_test(fenced_log_untouched),
      cmocka_unit_test(ended_session_gives_no_lease),
      cmocka_unit_test(session_end_is_seen),
      cmocka_unit_test(late_landing_lease_is_swept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
