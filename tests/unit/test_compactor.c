/* The compactor: C1–C5 on mem: stores, checked through the reader. */
#include "testutil.h"
#include "tu_compact.h"
#include "tu_log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tarn/catalog.h"
#include "tarn/companion.h"
#include "tarn/compactor.h"
#include "tarn/entryindex.h"
#include "tarn/fileindex.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/parquet.h"
#include "tarn/reader.h"
#include "tarn/trim.h"
#include "tarn/testing.h"
#include "util/clock.h"

/* The index records of a log: (end, file_type) pairs. */
static size_t records(tu_cenv *e, uint64_t log, uint64_t *ends, int *types, size_t cap,
                      tarn_meta_rec *last_parquet) {
  char part[32], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log);
  tarn_key_format(a, log, 0, 0);
  tarn_key_format(b, log, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_scan(e->m, part, a, b, 0, 0, &rs), 0);
  size_t n = 0;
  for (size_t i = 0; i < rs.n && n < cap; i++, n++) {
    tarn_key k;
    assert_int_equal(tarn_key_parse(rs.v[i].key, TARN_KEY_LEN, &k), 0);
    tarn_entry_index ei;
    assert_int_equal(tarn_entry_index_decode(rs.v[i].value, rs.v[i].value_len, &ei), 0);
    ends[n] = k.end_offset;
    types[n] = ei.file_type;
    tarn_entry_index_free(&ei);
    if (types[n] == TARN_FILE_PARQUET && last_parquet) {
      tarn_meta_rec_free(last_parquet);
      last_parquet->key = strdup(rs.v[i].key);
      last_parquet->value = malloc(rs.v[i].value_len);
      memcpy(last_parquet->value, rs.v[i].value, rs.v[i].value_len);
      last_parquet->value_len = rs.v[i].value_len;
      last_parquet->stat = rs.v[i].stat;
    }
  }
  tarn_meta_recs_free(&rs);
  return n;
}

/* LS-063, LS-064, LS-056, LS-058, LS-076, LS-068, LS-070, LS-071, LS-072:
 * every entry reads the same before and after, timestamps from the rows
 * (the reader finds the files in the stream's directory and their
 * companions by name: LS-015, LS-067). */
static void compact_keeps_entries(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "keep", 0, 1, NULL);
  tu_append(&E, E.log, 0, 60, 6); /* 10 records, distinct creation times */
  uint64_t ends0[64];
  int types0[64];
  size_t n0 = records(&E, E.log, ends0, types0, 64, NULL);
  assert_int_equal(n0, 10);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  assert_int_equal(before.n, 60);
  assert_true(before.v[0].ts != before.v[59].ts); /* else LS-064 would not be checked */
  tarn_compactor *c = tu_compactor_sized(&E, NULL, 0, 0);
  tarn_compact_range r;
  int did = 0;
  assert_int_equal(tarn_compact_once(c, E.log, 1, &r, &did), 0);
  assert_int_equal(did, 1);
  assert_int_equal(r.s, 0); /* LS-068 */
  assert_int_equal(r.e, ends0[n0 - 1]);
  assert_int_equal(r.n_records, 10);
  uint64_t ends[64];
  int types[64];
  tarn_meta_rec pq = {0};
  size_t n = records(&E, E.log, ends, types, 64, &pq);
  assert_int_equal(n, 1); /* LS-071: R_1..R_(k-1) gone */
  assert_int_equal(types[0], TARN_FILE_PARQUET);
  char k[TARN_KEY_LEN + 1];
  tarn_key_format(k, E.log, r.e, r.c_e);
  assert_string_equal(pq.key, k); /* LS-070: R_k's key kept */
  tu_snap after;
  tu_snapshot(&E, E.log, &after);
  assert_int_equal(after.n, 60);
  tu_snap_assert_same(&before, &after);
  uint64_t prog;
  assert_int_equal(tarn_compact_progress_read(E.m, E.log, &prog), 0);
  assert_int_equal(prog, r.e); /* LS-072: e, not e + 1 */
  /* LS-075, LS-068: the next range starts at the PARQUET record's end */
  tu_append(&E, E.log, 60, 12, 6);
  tarn_compact_range r2;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r2), 0);
  assert_int_equal(r2.s, r.e);
  assert_int_equal(r2.c_s, r.c_e);
  assert_int_equal(r2.n_records, 2);
  tarn_compact_range_free(&r2);
  assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, &did), 0);
  n = records(&E, E.log, ends, types, 64, NULL);
  assert_int_equal(n, 2);
  assert_int_equal(types[0], TARN_FILE_PARQUET); /* the earlier PARQUET record untouched */
  assert_int_equal(ends[0], r.e);
  tu_snap all;
  tu_snapshot(&E, E.log, &all);
  assert_int_equal(all.n, 72);
  tu_snap_assert_same(&all, &before);
  /* nothing left to compact */
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r2), TARN_ENOTFOUND);
  tu_snap_free(&all);
  tu_snap_free(&before);
  tu_snap_free(&after);
  tarn_meta_rec_free(&pq);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* LS-012 … LS-014, LS-066: files in the stream's directory, fresh names
 * ending in .parquet with .index companions; several files per range with
 * ascending last offsets ending at e - 1. */
static void files_and_names(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "names", 0, 1, NULL);
  tu_append(&E, E.log, 0, 80, 10);
  tarn_compactor *c = tu_compactor_sized(&E, NULL, 2000, 0); /* several files */
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r), 0);
  assert_string_equal(r.dir, "ns/s1/"); /* LS-012 */
  assert_int_equal(tarn_compact_write(c, &r), 0);
  assert_true(r.n_files >= 3);
  for (size_t i = 0; i < r.n_files; i++) {
    const char *nm = r.files[i].name, *d = strstr(nm, ".parquet");
    assert_non_null(d);
    assert_int_equal(d[8], 0); /* LS-013 */
    assert_null(strstr(nm, ".parquet") != d ? "x" : NULL);
    if (i)
      assert_true(r.files[i].last_offset > r.files[i - 1].last_offset); /* LS-066 */
    char p[512], ip[512];
    snprintf(p, sizeof p, "ns/s1/%s", nm);
    snprintf(ip, sizeof ip, "ns/s1/%.*s.index", (int)(d - nm), nm);
    uint64_t sz;
    assert_int_equal(tarn_objstore_head(E.compacted, p, &sz), 0);
    assert_int_equal(sz, r.files[i].size);
    tarn_buf gz = TARN_BUF_INIT;
    assert_int_equal(tarn_objstore_get(E.compacted, ip, &gz), 0);
    tarn_companion comp;
    assert_int_equal(tarn_companion_decode(&comp, gz.data, gz.len, 0), 0);
    assert_int_equal(comp.nrows, r.files[i].rows);
    assert_int_equal(comp.rows[comp.nrows - 1].offset + comp.rows[comp.nrows - 1].record_count - 1,
                     r.files[i].last_offset);
    tarn_companion_free(&comp);
    tarn_buf_free(&gz);
  }
  assert_int_equal(r.files[r.n_files - 1].last_offset, (int64_t)r.e - 1);
  /* the value's file index says the same */
  tarn_buf v = TARN_BUF_INIT;
  assert_int_equal(tarn_compact_value(&r, &v), 0);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(v.data, v.len, &ei), 0);
  tarn_file_index fi;
  assert_int_equal(tarn_file_index_decode_base64(ei.file_index, strlen(ei.file_index), &fi), 0);
  assert_int_equal(fi.n, r.n_files);
  tarn_file_index_free(&fi);
  tarn_entry_index_free(&ei);
  tarn_buf_free(&v);
  /* LS-013, LS-014: a second write of the same range uses new names and
   * leaves the first files as they were */
  tarn_buf first = TARN_BUF_INIT, again = TARN_BUF_INIT;
  char p0[512];
  snprintf(p0, sizeof p0, "ns/s1/%s", r.files[0].name);
  assert_int_equal(tarn_objstore_get(E.compacted, p0, &first), 0);
  tarn_compact_range r2;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r2), 0);
  assert_int_equal(tarn_compact_write(c, &r2), 0);
  for (size_t i = 0; i < r.n_files; i++)
    for (size_t j = 0; j < r2.n_files; j++)
      assert_string_not_equal(r.files[i].name, r2.files[j].name);
  assert_int_equal(tarn_objstore_get(E.compacted, p0, &again), 0);
  assert_int_equal(first.len, again.len);
  assert_memory_equal(first.data, again.data, first.len);
  tarn_buf_free(&first);
  tarn_buf_free(&again);
  int out;
  assert_int_equal(tarn_compact_install(c, &r, &out), 0);
  assert_int_equal(out, TARN_INSTALL_DONE);
  /* r2 covers the same records, now replaced: stale, nothing changes (LS-075) */
  assert_int_equal(tarn_compact_install(c, &r2, &out), 0);
  assert_int_equal(out, TARN_INSTALL_STALE);
  tu_snap s;
  tu_snapshot(&E, E.log, &s);
  assert_int_equal(s.n, 80);
  tu_snap_free(&s);
  tarn_compact_range_free(&r);
  tarn_compact_range_free(&r2);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* LS-077: entries ending at or below B are left out of the files; the
 * entries above B read the same. */
static void trimmed_entries_left_out(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "trim", 0, 1, NULL);
  tu_append(&E, E.log, 0, 30, 10);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(E.m, E.log, &l), 0);
  uint64_t b;
  assert_int_equal(tarn_soft_trim(E.m, l, 25, &b), 0);
  assert_int_equal(tarn_lease_release(l), 0);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  tarn_compactor *c = tu_compactor_sized(&E, NULL, 0, 0);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r), 0);
  assert_int_equal(r.trim, b);
  assert_int_equal(tarn_compact_write(c, &r), 0);
  uint64_t rows = 0;
  for (size_t i = 0; i < r.n_files; i++)
    rows += r.files[i].rows;
  assert_true(rows < 30); /* some left out */
  int out;
  assert_int_equal(tarn_compact_install(c, &r, &out), 0);
  tu_snap after;
  tu_snapshot(&E, E.log, &after);
  tu_snap_assert_same(&before, &after);
  assert_int_equal(after.n, before.n);
  tu_snap_free(&before);
  tu_snap_free(&after);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* LS-078: a compaction whose C3 took effect (the process died before C4) is
 * finished by running install again with the same range and value, although
 * C1 no longer holds for it. */
static void repeat_after_c3(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "rep", 0, 1, NULL);
  tu_append(&E, E.log, 0, 40, 8);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  tarn_compactor *c = tu_compactor_sized(&E, NULL, 0, 0);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r), 0);
  assert_int_equal(tarn_compact_write(c, &r), 0);
  /* C3 alone, as a compactor that died right after it */
  tarn_buf v = TARN_BUF_INIT;
  assert_int_equal(tarn_compact_value(&r, &v), 0);
  char part[32], k[TARN_KEY_LEN + 1];
  tarn_key_partition(part, E.log);
  tarn_key_format(k, E.log, r.e, r.c_e);
  assert_int_equal(tarn_meta_put(E.m, part, k, v.data, v.len, NULL), 0);
  assert_int_equal(tu_count_index(E.m, E.log), 5); /* overlap between C3 and C4 */
  tu_snap mid;
  tu_snapshot(&E, E.log, &mid);
  tu_snap_assert_same(&before, &mid);
  int out;
  assert_int_equal(tarn_compact_install(c, &r, &out), 0);
  assert_int_equal(out, TARN_INSTALL_DONE);
  assert_int_equal(tu_count_index(E.m, E.log), 1);
  tu_snap after;
  tu_snapshot(&E, E.log, &after);
  tu_snap_assert_same(&before, &after);
  assert_int_equal(after.n, before.n);
  tu_snap_free(&before);
  tu_snap_free(&mid);
  tu_snap_free(&after);
  tarn_buf_free(&v);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* Install needs a write lease (a fenced log gets none, LS-041) and a live
 * session, else it changes nothing; LS-074: one lock. When the lease is
 * held (LS-073) and where install stops (LS-049): test_lease_steps.c. */
static void lease_lock_session(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "lease", 0, 1, NULL);
  tu_append(&E, E.log, 0, 20, 5);
  tarn_compactor *c = tu_compactor_sized(&E, NULL, 0, 0);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r), 0);
  assert_int_equal(tarn_compact_write(c, &r), 0);
  /* LS-074: the lock is exclusive while held */
  tarn_compact_lock *lk, *lk2;
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "a", &lk), 0);
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "b", &lk2), TARN_EEXIST);
  assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, NULL), TARN_EEXIST);
  /* a second handle whose session ended: no change */
  tarn_meta *m2;
  assert_int_equal(tarn_meta_open(E.meta_uri, &m2), 0);
  tarn_compactor *c2;
  assert_int_equal(tarn_compactor_open(m2, E.wal, E.compacted, NULL, &c2), 0);
  assert_int_equal(tarn_meta_inject_fault(m2, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  int out;
  int rc = tarn_compact_install(c2, &r, &out);
  assert_true(rc == TARN_ESESSION);
  assert_int_equal(tu_count_index(E.m, E.log), 4);
  tarn_compactor_close(c2);
  tarn_meta_close(m2);
  /* LS-041: a fenced (deleted) log: no lease, no install */
  char part[32], fence[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, E.log);
  tarn_key_fence(fence, E.log);
  assert_int_equal(tarn_meta_create(E.m, part, fence, "x", 1, 0, NULL), 0);
  assert_int_equal(tarn_compact_install(c, &r, &out), TARN_EFENCED);
  assert_int_equal(tu_count_index(E.m, E.log), 4);
  assert_int_equal(tarn_compact_lock_release(lk), 0);
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "b", &lk2), 0);
  assert_int_equal(tarn_compact_lock_release(lk2), 0);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* Issue 12 (tarn-sim seed 10516): a lock create held in flight that lands
 * after the acquire returned must not leave an ephemeral record of our own
 * session that no one releases. Each case holds `held` creates of the
 * acquire, lands them at a point, and then compaction of the log must still
 * get the lock (before the fix: TARN_EEXIST for as long as the session
 * lives). */
static void lock_late_landing(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "latelock", 0, 1, NULL);
  tu_append(&E, E.log, 0, 20, 5);
  tarn_compactor *c = tu_compactor_sized(&E, NULL, 0, 0);
  tarn_compact_lock *lk;
  /* 1: every create held, the acquire gives up undecided; they land (the
   * first one creates) after it returned */
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_DELAY_COMMIT, 100), 0);
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "held", &lk), TARN_EUNKNOWN);
  assert_null(lk);
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_NONE, 0), 0);
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_LAND, 0), 0);
  char key[64];
  snprintf(key, sizeof key, "/locks/%020" PRIu64, E.log);
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_get(E.m, TARN_COMPACTION_PARTITION, key, &r), 0);
  tarn_meta_rec_free(&r);
  assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, NULL), 0);
  assert_int_equal(tarn_meta_get(E.m, TARN_COMPACTION_PARTITION, key, &r), TARN_ENOTFOUND);
  /* 2: the first create held, landing while the acquire's retry holds the
   * lock: the late landing fails its create-only condition */
  tu_append(&E, E.log, 20, 20, 5);
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_DELAY_COMMIT, 1), 0);
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "held", &lk), 0);
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_LAND, 0), 0);
  assert_int_equal(tarn_compact_lock_release(lk), 0);
  assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, NULL), 0);
  /* 3: the first create lands after the release: an orphan with our token,
   * which the next acquire through this handle deletes */
  tu_append(&E, E.log, 40, 20, 5);
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_DELAY_COMMIT, 1), 0);
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "held", &lk), 0);
  assert_int_equal(tarn_compact_lock_release(lk), 0);
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_LAND, 0), 0);
  assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, NULL), 0);
  /* another holder's record is never taken for an orphan */
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "a", &lk), 0);
  tarn_compact_lock *lk2;
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "b", &lk2), TARN_EEXIST);
  assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, NULL), TARN_EEXIST);
  assert_int_equal(tarn_compact_lock_release(lk), 0);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* The library's one clock, frozen at fake_now (wall and monotonic) while a
 * test needs it. */
static int64_t fake_now;
static int64_t fake_clock(void *ctx) {
  (void)ctx;
  return fake_now;
}
static void fake_clock_on(void) {
  tarn__clock_hooks h = {.now_ms = fake_clock, .mono_ms = fake_clock};
  tarn__clock_set(&h);
}

/* Ranges close at a size or an age; the lag is the oldest RAW entry's age. */
static void size_age_lag(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "age", 0, 1, NULL);
  tu_append(&E, E.log, 0, 40, 10);
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  o.max_range_bytes = 1u << 30;
  o.max_age_ms = 180000;
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &o, &c), 0);
  tarn_compact_lag lag;
  fake_now = tarn__now_ms();
  fake_clock_on();
  assert_int_equal(tarn_compact_lag_read(E.m, E.log, fake_now, &lag), 0);
  assert_int_equal(lag.raw_records, 4);
  assert_true(lag.lag_ms >= 0 && lag.lag_ms < 60000);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, E.log, 0, &r), TARN_ENOTFOUND); /* young, small */
  fake_now = lag.oldest_ms + 180000;
  assert_int_equal(tarn_compact_plan(c, E.log, 0, &r), 0); /* old enough */
  assert_int_equal(r.n_records, 4);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  /* by size: a range closes once it holds max_range_bytes */
  fake_now = lag.oldest_ms;
  o.max_range_bytes = 1;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &o, &c), 0);
  assert_int_equal(tarn_compact_plan(c, E.log, 0, &r), 0);
  assert_int_equal(r.n_records, 1);
  tarn_compact_range_free(&r);
  assert_int_equal(tarn_compact_once(c, E.log, 0, NULL, NULL), 0);
  assert_int_equal(tarn_compact_lag_read(E.m, E.log, fake_now, &lag), 0);
  assert_int_equal(lag.raw_records, 3);
  tarn__clock_set(NULL);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* LS-032: no range reaches entry_size_bytes 2^31. A range closes before the
 * record that would take it there, and a larger max_range_bytes is refused.
 * The records are index records only: planning reads no object. */
static void ranges_stay_below_2_31(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "ls032", 0, 1, NULL);
  for (int i = 0; i < 3; i++)
    assert_int_equal(tu_publish(E.m, E.log, 1, 1u << 30, NULL), 0);
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  tarn_compactor *c;
  o.max_range_bytes = (uint64_t)1 << 31;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &o, &c), TARN_EINVAL);
  o.max_range_bytes = TARN_COMPACT_RANGE_BYTES_MAX;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &o, &c), 0);
  tarn_compact_range r;
  /* Full (the next record does not fit), so ready though young and small. */
  assert_int_equal(tarn_compact_plan(c, E.log, 0, &r), 0);
  assert_int_equal(r.n_records, 1);
  assert_int_equal(r.bytes, 1u << 30);
  assert_int_equal(r.c_e - r.c_s, 1u << 30);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* Token bucket: takes what is there, then says how long to wait. */
static void token_bucket(void **state) {
  (void)state;
  tarn_token_bucket *b;
  fake_now = 1000;
  fake_clock_on();
  assert_int_equal(tarn_token_bucket_open(1000, 1000, &b), 0);
  int64_t w;
  assert_int_equal(tarn_token_bucket_try(b, 600, &w), 0);
  assert_int_equal(w, 0);
  assert_int_equal(tarn_token_bucket_try(b, 600, &w), 0);
  assert_true(w > 0 && w <= 201);
  fake_now += w;
  assert_int_equal(tarn_token_bucket_try(b, 600, &w), 0);
  assert_int_equal(w, 0);
  tarn_token_bucket_close(b);
  tarn__clock_set(NULL);
}

/* A Kafka stream's files carry the Kafka binding's identifiers; a stream
 * property overrides them; the reader accepts only configured ones (LS-059). */
static int contains(const tarn_buf *b, const char *s) {
  size_t n = strlen(s);
  for (size_t i = 0; i + n <= b->len; i++)
    if (memcmp(b->data + i, s, n) == 0)
      return 1;
  return 0;
}

static void serde_per_stream(void **state) {
  (void)state;
  const char *props[] = {"lakestream.kafka.topic.name", "t", NULL};
  tu_cenv E;
  tu_cenv_open(&E, "serde", 0, 1, props);
  tu_append(&E, E.log, 0, 10, 5);
  tarn_compactor *c = tu_compactor_sized(&E, NULL, 0, 0);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_once(c, E.log, 1, &r, NULL), 0);
  char p[512];
  snprintf(p, sizeof p, "%s%s", r.dir, r.files[0].name);
  tarn_buf f = TARN_BUF_INIT;
  assert_int_equal(tarn_objstore_get(E.compacted, p, &f), 0);
  assert_true(contains(&f, TARN_PARQUET_KAFKA_SERDE));
  assert_true(contains(&f, TARN_PARQUET_KAFKA_RECORD));
  tarn_buf_free(&f);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* Shared by the writer, the two readers and the test: atomics. */
typedef struct load {
  tu_cenv *e;
  atomic_int stop;
  atomic_int failures;
  atomic_uint_fast64_t reads;
} load;

static void *writer_thread(void *p) {
  load *L = p;
  uint64_t j = 5; /* after the first object's entries */
  while (!atomic_load(&L->stop)) {
    tu_append(L->e, L->e->log, j, 5, 5);
    j += 5;
  }
  return NULL;
}

/* Readers read every offset (and check payload and record count against the
 * deterministic payload of each entry's number) while compactions run. */
static void *reader_thread(void *p) {
  load *L = p;
  tarn_reader *r;
  tarn_reader_open(L->e->m, L->e->wal, L->e->compacted, NULL, &r);
  uint8_t buf[512];
  while (!atomic_load(&L->stop)) {
    tarn_log_iter *it;
    if (tarn_log_iter_open(r, L->e->log, 0, &it)) {
      atomic_fetch_add(&L->failures, 1);
      break;
    }
    uint64_t j = 0, expect_off = 0;
    for (;;) {
      tarn_entry en;
      int rc = tarn_log_iter_next(it, &en, 0);
      if (rc == TARN_EEND)
        break;
      if (rc) {
        fprintf(stderr, "read failed: %s\n", tarn_errmsg());
        atomic_fetch_add(&L->failures, 1);
        break;
      }
      size_t n = tu_payload(L->e->log, j, buf, sizeof buf);
      if (en.offset != expect_off || en.record_count != 1 + j % 3 || en.payload_len != n ||
          memcmp(en.payload, buf, n) != 0) {
        fprintf(stderr, "entry %llu differs\n", (unsigned long long)j);
        atomic_fetch_add(&L->failures, 1);
        break;
      }
      expect_off += en.record_count;
      j++;
      atomic_fetch_add(&L->reads, 1);
    }
    tarn_log_iter_close(it);
  }
  tarn_reader_close(r);
  return NULL;
}

static void under_load(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "load", 0, 1, NULL);
  tu_append(&E, E.log, 0, 5, 5);
  load L = {.e = &E};
  pthread_t w, rd[2];
  pthread_create(&w, NULL, writer_thread, &L);
  for (int i = 0; i < 2; i++)
    pthread_create(&rd[i], NULL, reader_thread, &L);
  tarn_compactor *c = tu_compactor_sized(&E, NULL, 3000, 0);
  int installed = 0;
  /* 40 rounds, and more while fewer than 5 installed (ThreadSanitizer slows the writer) */
  for (int i = 0; i < 400 && (i < 40 || installed < 5); i++) {
    int did = 0;
    assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, &did), 0);
    installed += did;
    usleep(10000);
  }
  atomic_store(&L.stop, 1);
  pthread_join(w, NULL);
  for (int i = 0; i < 2; i++)
    pthread_join(rd[i], NULL);
  assert_int_equal(atomic_load(&L.failures), 0);
  assert_true(installed >= 5);
  assert_true(atomic_load(&L.reads) > 0);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(compact_keeps_entries),
      cmocka_unit_test(files_and_names),
      cmocka_unit_test(trimmed_entries_left_out),
      cmocka_unit_test(repeat_after_c3),
      cmocka_unit_test(lease_lock_session),
      cmocka_unit_test(lock_late_landing),
      cmocka_unit_test(size_age_lag),
      cmocka_unit_test(ranges_stay_below_2_31),
      cmocka_unit_test(token_bucket),
      cmocka_unit_test(serde_per_stream),
      cmocka_unit_test(under_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
