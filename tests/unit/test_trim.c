/* Log bounds, soft trim and hard trim, against mem: and sqlite:. */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/trim.h"
#include "tarn/testing.h"
#include "tu_log.h"

static void put_marker(tarn_meta *m, uint64_t log, const char *v) {
  char part[32], k[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, log);
  tarn_key_trim_marker(k, log);
  assert_int_equal(tarn_meta_put(m, part, k, v, strlen(v), NULL), 0);
}

static uint64_t marker(tarn_meta *m, uint64_t log) {
  uint64_t b;
  assert_int_equal(tarn_trim_marker_read(m, log, &b, NULL), 0);
  return b;
}

/* LS-054 and the last record. */
static void bounds(void **state) {
  char *uri;
  tarn_meta *m = tu_meta_open(*state, &uri);
  tarn_log_bounds b;
  assert_int_equal(tarn_log_bounds_read(m, 3, &b), 0);
  assert_int_equal(b.first, 0);
  assert_int_equal(b.end, 0);
  assert_false(b.has_records);
  assert_false(b.has_marker);
  /* Neighbouring logs must not leak in through the lookups. */
  assert_int_equal(tu_publish(m, 2, 7, 70, NULL), 0);
  assert_int_equal(tu_publish(m, 4, 9, 90, NULL), 0);
  assert_int_equal(tarn_log_bounds_read(m, 3, &b), 0);
  assert_int_equal(b.end, 0);
  assert_false(b.has_records);
  uint64_t e;
  assert_int_equal(tu_publish(m, 3, 2, 20, &e), 0); /* [0,2) */
  assert_int_equal(e, 2);
  assert_int_equal(tu_publish(m, 3, 3, 30, NULL), 0); /* [2,5) */
  assert_int_equal(tu_publish(m, 3, 5, 50, NULL), 0); /* [5,10) */
  assert_int_equal(tarn_log_bounds_read(m, 3, &b), 0);
  assert_int_equal(b.first, 0);
  assert_int_equal(b.end, 10);
  assert_int_equal(b.last_start, 5);
  /* B inside [2,5): the first record above B starts at 2 < B, so B is first. */
  put_marker(m, 3, "4");
  assert_int_equal(tarn_log_bounds_read(m, 3, &b), 0);
  assert_int_equal(b.trim, 4);
  assert_int_equal(b.first, 4);
  /* B at a record boundary: Higher(K(L,B,MAX)) is the next record, starting at B. */
  put_marker(m, 3, "2");
  assert_int_equal(tarn_log_bounds_read(m, 3, &b), 0);
  assert_int_equal(b.first, 2);
  /* Records below B removed by a hard trim elsewhere: first = start of [5,10) > B. */
  char part[32], lo[TARN_KEY_LEN + 1], hi[TARN_KEY_LEN + 1];
  tarn_key_partition(part, 3);
  tarn_key_format(lo, 3, 0, 0);
  tarn_key_format(hi, 3, 5, TARN_KEY_MAX);
  assert_int_equal(tarn_meta_delete_range(m, part, lo, hi, NULL), 0);
  assert_int_equal(tarn_log_bounds_read(m, 3, &b), 0);
  assert_int_equal(b.first, 5);
  assert_int_equal(b.end, 10);
  tu_meta_done(m, uri);
}

/* LS-080, LS-079 */
static void soft_trim(void **state) {
  char *uri;
  tarn_meta *m = tu_meta_open(*state, &uri);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(m, 8, &l), 0);
  uint64_t st;
  /* No index records: nothing changes, no marker appears. */
  assert_int_equal(tarn_soft_trim(m, l, 100, &st), 0);
  assert_int_equal(st, 0);
  int64_t ver;
  uint64_t b;
  assert_int_equal(tarn_trim_marker_read(m, 8, &b, &ver), 0);
  assert_int_equal(ver, -1);
  assert_int_equal(tu_publish(m, 8, 4, 1, NULL), 0); /* [0,4) */
  assert_int_equal(tu_publish(m, 8, 4, 1, NULL), 0); /* [4,8) */
  assert_int_equal(tu_publish(m, 8, 4, 1, NULL), 0); /* [8,12) */
  /* Through 2: B' = min(3, 8) = 3, created. */
  assert_int_equal(tarn_soft_trim(m, l, 2, &st), 0);
  assert_int_equal(st, 3);
  assert_int_equal(marker(m, 8), 3);
  /* Through 100: capped at the last record's start, 8 (CompareAndSet). */
  assert_int_equal(tarn_soft_trim(m, l, 100, &st), 0);
  assert_int_equal(st, 8);
  assert_int_equal(marker(m, 8), 8);
  /* Through 0: B stays 8, and 8 is what is reported. */
  assert_int_equal(tarn_soft_trim(m, l, 0, &st), 0);
  assert_int_equal(st, 8);
  assert_int_equal(marker(m, 8), 8);
  /* Through MAX does not overflow. */
  assert_int_equal(tu_publish(m, 8, 4, 1, NULL), 0); /* [12,16) */
  assert_int_equal(tarn_soft_trim(m, l, UINT64_MAX, &st), 0);
  assert_int_equal(st, 12);
  /* A marker someone else set higher than ours is reported, not lowered. */
  put_marker(m, 8, "14");
  assert_int_equal(tarn_soft_trim(m, l, 12, &st), 0);
  assert_int_equal(st, 14);
  assert_int_equal(marker(m, 8), 14);
  /* A corrupt marker is an error, not B = 0. */
  put_marker(m, 8, "x");
  assert_int_equal(tarn_soft_trim(m, l, 12, &st), TARN_ECORRUPT);
  tarn_lease_release(l);
  tu_meta_done(m, uri);
}

/* Ursa's fault (field.md): a failed write must not be reported as the new B. */
static void soft_trim_reports_only_what_is_stored(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:trim-faults", &m), 0);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(m, 1, &l), 0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(tu_publish(m, 1, 5, 1, NULL), 0);
  uint64_t st = 12345;
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_FAIL, 1), 0);
  assert_int_equal(tarn_soft_trim(m, l, 3, &st), TARN_EUNAVAIL);
  assert_int_equal(st, 12345);
  assert_int_equal(marker(m, 1), 0);
  /* A write whose outcome is unknown is settled by reading the store. */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_COMMIT_UNKNOWN, 1), 0);
  assert_int_equal(tarn_soft_trim(m, l, 3, &st), 0);
  assert_int_equal(st, 4);
  assert_int_equal(marker(m, 1), 4);
  /* An ended session: no trim. */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  assert_int_equal(tarn_soft_trim(m, l, 8, &st), TARN_ESESSION);
  assert_int_equal(tarn_hard_trim(m, l, 4, NULL), TARN_ESESSION);
  assert_int_equal(marker(m, 1), 4);
  tarn_lease_release(l);
  tarn_meta_close(m);
}

typedef struct trim_arg {
  const char *uri;
  uint64_t seed;
  int bad;
  int err;
} trim_arg;

static void *trim_thread(void *p) {
  trim_arg *a = p;
  tarn_meta *m;
  if (tarn_meta_open(a->uri, &m)) {
    a->err = 1;
    return NULL;
  }
  tarn_lease *l;
  if (tarn_lease_acquire(m, 6, &l)) {
    a->err = 1;
    tarn_meta_close(m);
    return NULL;
  }
  uint64_t prev = 0;
  for (int i = 0; i < 40; i++) {
    uint64_t o = tu_rand(&a->seed) % 1100, st;
    int rc = tarn_soft_trim(m, l, o, &st);
    if (rc) {
      a->err = rc;
      break;
    }
    uint64_t want = o + 1 < 1000 ? o + 1 : 1000, now = marker(m, 6);
    /* What it returns was stored: at most what the store holds now (B only
     * grows), at least what this trim asked for, and never below an earlier
     * result. */
    if (st > now || st < want || st < prev)
      a->bad++;
    prev = st;
  }
  tarn_lease_release(l);
  tarn_meta_close(m);
  return NULL;
}

/* LS-079: concurrent soft trims never decrease B. */
static void concurrent_soft_trims(void **state) {
  char *uri;
  tarn_meta *m = tu_meta_open(*state, &uri);
  for (int i = 0; i < 11; i++)
    assert_int_equal(tu_publish(m, 6, 100, 1, NULL), 0); /* last record [1000,1100) */
  trim_arg a[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (trim_arg){.uri = uri, .seed = (uint64_t)i + 1};
    pthread_create(&t[i], NULL, trim_thread, &a[i]);
  }
  uint64_t last = 0;
  for (int k = 0; k < 200; k++) {
    uint64_t b = marker(m, 6);
    assert_true(b >= last);
    last = b;
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(a[i].err, 0);
    assert_int_equal(a[i].bad, 0);
  }
  assert_true(marker(m, 6) <= 1000);
  tu_meta_done(m, uri);
}

/* LS-081 */
static void hard_trim(void **state) {
  char *uri;
  tarn_meta *m = tu_meta_open(*state, &uri);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(m, 9, &l), 0);
  for (int i = 0; i < 4; i++)
    assert_int_equal(tu_publish(m, 9, 10, 1, NULL), 0); /* ends 10, 20, 30, 40 */
  uint64_t st;
  assert_int_equal(tarn_soft_trim(m, l, 24, &st), 0);
  assert_int_equal(st, 25);
  size_t n;
  /* Above B: refused, nothing removed. */
  assert_int_equal(tarn_hard_trim(m, l, 26, &n), TARN_EINVAL);
  assert_int_equal(tu_count_index(m, 9), 4);
  /* To 20: the records ending at or below 20 go. */
  assert_int_equal(tarn_hard_trim(m, l, 20, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(tu_count_index(m, 9), 2);
  tarn_log_bounds b;
  assert_int_equal(tarn_log_bounds_read(m, 9, &b), 0);
  assert_int_equal(b.first, 25);
  assert_int_equal(b.end, 40);
  /* A marker past every record (another implementation's): the last record stays. */
  put_marker(m, 9, "1000");
  assert_int_equal(tarn_hard_trim(m, l, 1000, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(tu_count_index(m, 9), 1);
  assert_int_equal(tarn_log_bounds_read(m, 9, &b), 0);
  assert_int_equal(b.end, 40);
  /* The next append continues from it. */
  uint64_t e;
  assert_int_equal(tu_publish(m, 9, 1, 1, &e), 0);
  assert_int_equal(e, 41);
  tarn_lease_release(l);
  /* The bound is exact (hard trim: the records ending at or below X go):
   * with records ending at 1, 2, 3, ... a hard
   * trim to 2 removes the two ending at or below 2 and keeps the one ending
   * at 3 (the record right above X, which an off-by-one bound would take). */
  assert_int_equal(tarn_lease_acquire(m, 10, &l), 0);
  for (int i = 0; i < 5; i++)
    assert_int_equal(tu_publish(m, 10, 1, 1, NULL), 0); /* ends 1, 2, 3, 4, 5 */
  assert_int_equal(tarn_soft_trim(m, l, 3, &st), 0);
  assert_int_equal(tarn_hard_trim(m, l, 2, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(tu_count_index(m, 10), 3);
  tarn_lease_release(l);
  tu_meta_done(m, uri);
}

/* The range of a record, from its key and value (v3 and legacy). */
static void record_span(void **state) {
  tarn_meta_rec r = {0};
  char key[TARN_KEY_LEN + 1];
  tarn_key_format(key, 5, 30, 100);
  r.key = key;
  /* Legacy v1: message_count 4. */
  tarn_legacy_index_value lv = {.version = 1,
                                .message_count = 4,
                                .entry_size_bytes = 9,
                                .location = "old.wal",
                                .entry_id = 2};
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_legacy_index_value_encode(&lv, &b), 0);
  r.value = b.data, r.value_len = b.len;
  uint64_t st, en;
  assert_int_equal(tarn_index_record_span(&r, 5, &st, &en), 0);
  assert_int_equal(st, 26);
  assert_int_equal(en, 30);
  /* Another log's key fails the prefix check. */
  assert_int_equal(tarn_index_record_span(&r, 6, &st, &en), TARN_ENOTFOUND);
  /* More records than the end offset allows. */
  tarn_key_format(key, 5, 3, 100);
  assert_int_equal(tarn_index_record_span(&r, 5, &st, &en), TARN_ECORRUPT);
  /* A value that is no index value. */
  r.value = (uint8_t *)"\xff\x01", r.value_len = 2;
  assert_true(tarn_index_record_span(&r, 5, &st, &en) < 0);
  tarn_buf_free(&b);
}

#define BOTH(fn)                                                                                   \
  cmocka_unit_test_prestate(fn, (void *)"mem"), cmocka_unit_test_prestate(fn, (void *)"sqlite"),   \
      cmocka_unit_test_prestate(fn, (void *)"etcd")

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(record_span),
      BOTH(bounds),
      BOTH(soft_trim),
      cmocka_unit_test(soft_trim_reports_only_what_is_stored),
      BOTH(concurrent_soft_trims),
      BOTH(hard_trim),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
