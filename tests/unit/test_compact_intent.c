/* Compactions in progress against the reclaimer, and compactions left
 * between C3 and C4 (durability issue #11, parts 1 and 5), on mem: stores.
 *
 * Reproductions (each fails on 4d5a889):
 *  - slow_c2_tasks: a task's C2 runs slowly (its throttle runs a reclamation
 *    pass with orphan grace 0 before every row); the files finished early
 *    were deleted as orphans and C3 installed a record naming them, so no
 *    entry read back after the WAL grace (LS-084);
 *  - slow_c2_once: the same through tarn_compact_once (`tarn compact`);
 *  - install_checks_files: C3 installed a file index naming a file that no
 *    longer exists;
 *  - roll_forward_before_plan: tarn-sim --seed 5095 --steps 14671: C3 of
 *    [s, e1) took effect and C4 failed; a compactor whose range closes
 *    before e1 planned [s, e2) over the RAW records the PARQUET record
 *    already covers and installed it (NoOverlappingRanges; LS-078);
 *  - install_after_foreign_c3: the same when the second range was planned
 *    (a task) before the first one's C3 and installed after it.
 * And: intent_lifetime — an intent protects its files while its lock lives
 * and for intent_grace_ms after the lock is seen gone, then goes. */
#include "testutil.h"
#include "tu_compact.h"
#include "tu_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/compactor.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/reclaim.h"
#include "tarn/tasks.h"

/* The reclaimer's clock (tu_reclaim_pass_at); the compactor keeps the real one. */
static int64_t now_ms = 1000000;

static void reclaim_opts(tarn_reclaim_options *o, int64_t orphan_grace) {
  tarn_reclaim_options_default(o);
  o->wal_grace_ms = 0;
  o->orphan_grace_ms = orphan_grace;
}

/* A throttle that runs a reclamation pass (orphan grace 0) before every row
 * from the third on: a C2 slower than any grace. */
typedef struct slow {
  tu_cenv *e;
  int rows, passes;
  uint64_t deleted;
} slow;

static int slow_throttle(void *ctx, uint64_t bytes) {
  (void)bytes;
  slow *s = ctx;
  if (++s->rows < 3)
    return 0;
  tarn_reclaim_options o;
  reclaim_opts(&o, 0);
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(now_ms, s->e->m, s->e->wal, s->e->compacted, &o, &st), 0);
  s->passes++;
  s->deleted += st.compacted_deleted;
  return 0;
}

/* Files of 200 bytes (several: the first ones finish early), throttled by
 * s when given. */
static tarn_compactor *small_files(tu_cenv *e, uint64_t range_bytes, slow *s) {
  tarn_compactor_options o;
  tu_compactor_options(&o, 200, range_bytes);
  if (s) {
    o.throttle = slow_throttle;
    o.throttle_ctx = s;
  }
  return tu_compactor(e, NULL, &o);
}

/* After the compaction: reclamation with every grace at 0, then every entry
 * must read back as it was. */
static void assert_survives(tu_cenv *e, const tu_snap *before) {
  tarn_reclaim_options o;
  reclaim_opts(&o, 0);
  tarn_reclaim_stats st;
  for (int i = 0; i < 2; i++)
    assert_int_equal(tu_reclaim_pass_at(now_ms, e->m, e->wal, e->compacted, &o, &st), 0);
  tu_snap after;
  tu_snapshot(e, e->log, &after);
  assert_int_equal(after.n, before->n);
  tu_snap_assert_same(before, &after);
  tu_snap_free(&after);
}

/* True when no index record of log starts below the end of the one before. */
static int no_overlap(tu_cenv *e, uint64_t log) {
  char part[32], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log);
  tarn_key_format(a, log, 0, 0);
  tarn_key_format(b, log, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_scan(e->m, part, a, b, 0, 0, &rs), 0);
  uint64_t prev = 0;
  int ok = 1;
  for (size_t i = 0; i < rs.n; i++) {
    tarn_key k;
    assert_int_equal(tarn_key_parse(rs.v[i].key, TARN_KEY_LEN, &k), 0);
    tarn_entry_index ei;
    assert_int_equal(tarn_entry_index_decode(rs.v[i].value, rs.v[i].value_len, &ei), 0);
    uint64_t start = k.end_offset - (uint64_t)ei.message_count;
    tarn_entry_index_free(&ei);
    if (i > 0 && start < prev)
      ok = 0;
    prev = k.end_offset;
  }
  tarn_meta_recs_free(&rs);
  return ok;
}

/* A compaction with a slow C2, through tasks or tarn_compact_once. */
static void slow_c2(const char *tag, int via_tasks) {
  tu_cenv E;
  tu_cenv_open(&E, tag, 0, 1, NULL);
  tu_append(&E, E.log, 0, 50, 5);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  slow s = {.e = &E};
  tarn_compactor *c = small_files(&E, 0, &s);
  if (via_tasks) {
    size_t created = 0;
    assert_int_equal(tarn_tasks_plan(c, NULL, 1, &created), 0);
    assert_int_equal(created, 1);
    int ran = 0;
    assert_int_equal(tarn_tasks_run_one(c, NULL, &ran), 0);
    assert_int_equal(ran, 1);
  } else {
    int did = 0;
    assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, &did), 0);
    assert_int_equal(did, 1);
  }
  assert_true(s.passes > 3);
  assert_int_equal(s.deleted, 0); /* nothing of the compaction in progress */
  assert_int_equal(tu_count_index(E.m, E.log), 1);
  assert_survives(&E, &before);
  tu_snap_free(&before);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* LS-084: the task path, as `tarn serve` runs it. */
static void slow_c2_tasks(void **state) {
  (void)state;
  slow_c2("intent-tasks", 1);
}

/* LS-084: tarn_compact_once (`tarn compact`), which writes no task. */
static void slow_c2_once(void **state) {
  (void)state;
  slow_c2("intent-once", 0);
}

/* C3 never installs a file index naming a file that does not exist: the
 * install is stale and changes nothing; the next compaction starts over. */
static void install_checks_files(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "intent-gone", 0, 1, NULL);
  tu_append(&E, E.log, 0, 30, 5);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  tarn_compactor *c = small_files(&E, 0, NULL);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r), 0);
  assert_int_equal(tarn_compact_write(c, &r), 0);
  assert_true(r.n_files > 1);
  char p[1400];
  snprintf(p, sizeof p, "%s%s", r.dir, r.files[r.n_files - 1].name);
  assert_int_equal(tarn_objstore_delete(E.compacted, p), 0);
  size_t n0 = tu_count_index(E.m, E.log);
  int out = -1;
  assert_int_equal(tarn_compact_install(c, &r, &out), 0);
  assert_int_equal(out, TARN_INSTALL_STALE);
  assert_int_equal(tu_count_index(E.m, E.log), n0);
  tarn_compact_range_free(&r);
  /* a companion gone counts the same */
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r), 0);
  assert_int_equal(tarn_compact_write(c, &r), 0);
  snprintf(p, sizeof p, "%s%.*s.index", r.dir, (int)(strlen(r.files[0].name) - 8), r.files[0].name);
  assert_int_equal(tarn_objstore_delete(E.compacted, p), 0);
  assert_int_equal(tarn_compact_install(c, &r, &out), 0);
  assert_int_equal(out, TARN_INSTALL_STALE);
  assert_int_equal(tu_count_index(E.m, E.log), n0);
  tarn_compact_range_free(&r);
  int did = 0;
  assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, &did), 0);
  assert_int_equal(did, 1);
  assert_survives(&E, &before);
  tu_snap_free(&before);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* C3 alone, as a compactor whose C4 failed (its session expired). */
static void c3_only(tu_cenv *e, const tarn_compact_range *r) {
  tarn_buf v = TARN_BUF_INIT;
  assert_int_equal(tarn_compact_value(r, &v), 0);
  char part[32], k[TARN_KEY_LEN + 1];
  tarn_key_partition(part, r->log_id);
  tarn_key_format(k, r->log_id, r->e, r->c_e);
  assert_int_equal(tarn_meta_put(e->m, part, k, v.data, v.len, NULL), 0);
  tarn_buf_free(&v);
}

/* LS-078 (seed 5095): a compaction whose C3 took effect is finished before
 * anyone plans over its offsets, whoever started it. */
static void roll_forward_before_plan(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "intent-5095", 0, 1, NULL);
  tu_append(&E, E.log, 0, 60, 3); /* 20 records */
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  tarn_compactor *a = small_files(&E, 0, NULL);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(a, E.log, 1, &r), 0);
  assert_int_equal(tarn_compact_write(a, &r), 0);
  c3_only(&E, &r);
  /* a second compactor whose ranges close after a few records */
  tarn_compactor *b = small_files(&E, 1, NULL);
  tarn_compact_range r2;
  assert_int_equal(tarn_compact_plan(b, E.log, 1, &r2), TARN_EBUSY);
  int did = 0;
  assert_int_equal(tarn_compact_once(b, E.log, 1, NULL, &did), 0);
  assert_true(no_overlap(&E, E.log));
  assert_int_equal(tu_count_index(E.m, E.log), 1); /* a's range, finished */
  uint64_t prog = 0;
  assert_int_equal(tarn_compact_progress_read(E.m, E.log, &prog), 0);
  assert_int_equal(prog, r.e);
  assert_survives(&E, &before);
  tarn_compact_range_free(&r);
  tu_snap_free(&before);
  tarn_compactor_close(a);
  tarn_compactor_close(b);
  tu_cenv_close(&E);
}

/* LS-078, LS-075: a range planned before another compaction's C3 over the
 * same offsets took effect is stale at install. */
static void install_after_foreign_c3(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "intent-late", 0, 1, NULL);
  tu_append(&E, E.log, 0, 60, 3);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  tarn_compactor *a = small_files(&E, 0, NULL), *b = small_files(&E, 1, NULL);
  tarn_compact_range ra, rb;
  assert_int_equal(tarn_compact_plan(b, E.log, 1, &rb), 0);
  assert_int_equal(tarn_compact_plan(a, E.log, 1, &ra), 0);
  assert_true(rb.e < ra.e);
  assert_int_equal(tarn_compact_write(a, &ra), 0);
  assert_int_equal(tarn_compact_write(b, &rb), 0);
  c3_only(&E, &ra);
  int out = -1;
  assert_int_equal(tarn_compact_install(b, &rb, &out), 0);
  assert_int_equal(out, TARN_INSTALL_STALE);
  assert_true(no_overlap(&E, E.log) == 0); /* only a's own C3-C4 overlap */
  assert_int_equal(tarn_compact_install(a, &ra, &out), 0);
  assert_int_equal(out, TARN_INSTALL_DONE);
  assert_true(no_overlap(&E, E.log));
  assert_survives(&E, &before);
  tarn_compact_range_free(&ra);
  tarn_compact_range_free(&rb);
  tu_snap_free(&before);
  tarn_compactor_close(a);
  tarn_compactor_close(b);
  tu_cenv_close(&E);
}

/* How many of r's files (and companions) exist. */
static int files_left(tu_cenv *e, const tarn_compact_range *r) {
  int n = 0;
  for (size_t i = 0; i < r->n_files; i++) {
    char p[1400];
    uint64_t sz;
    snprintf(p, sizeof p, "%s%s", r->dir, r->files[i].name);
    n += tarn_objstore_head(e->compacted, p, &sz) == 0;
    snprintf(p, sizeof p, "%s%.*s.index", r->dir, (int)(strlen(r->files[i].name) - 8),
             r->files[i].name);
    n += tarn_objstore_head(e->compacted, p, &sz) == 0;
  }
  return n;
}

/* LS-084: an intent protects its files for as long as its compaction holds
 * the log's lock, whatever the graces; once the lock is gone, for
 * intent_grace_ms more; then the intent goes and its files are orphans. */
static void intent_lifetime(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "intent-life", 0, 1, NULL);
  tu_append(&E, E.log, 0, 30, 5);
  tarn_compactor *c = small_files(&E, 0, NULL);
  tarn_compact_lock *lk;
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "t", &lk), 0);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r), 0);
  assert_int_equal(tarn_compact_write(c, &r), 0);
  int all = (int)r.n_files * 2;
  tarn_reclaim_options o;
  reclaim_opts(&o, 0);
  o.intent_grace_ms = 1000;
  for (int i = 0; i < 3; i++) {
    now_ms += 3600000; /* held: any time passes */
    assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, NULL), 0);
    assert_int_equal(files_left(&E, &r), all);
  }
  /* abandoned: the lock goes (its session ended), the intent stays */
  assert_int_equal(tarn_compact_lock_release(lk), 0);
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, NULL), 0);
  assert_int_equal(files_left(&E, &r), all);
  /* the next pass to see it gone confirms the first-seen stamp; the grace
   * counts from there */
  now_ms += 500;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, NULL), 0);
  assert_int_equal(files_left(&E, &r), all);
  now_ms += 999;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, NULL), 0);
  assert_int_equal(files_left(&E, &r), all);
  now_ms += 1;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, NULL), 0);
  assert_int_equal(files_left(&E, &r), 0);
  /* the compaction can no longer install: its files are gone, so it is stale */
  assert_int_equal(tarn_compact_lock_acquire(E.m, E.log, "t", &lk), 0);
  int out = -1;
  assert_int_equal(tarn_compact_install(c, &r, &out), 0);
  assert_int_equal(out, TARN_INSTALL_STALE);
  assert_int_equal(tarn_compact_lock_release(lk), 0);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(slow_c2_tasks),
      cmocka_unit_test(slow_c2_once),
      cmocka_unit_test(install_checks_files),
      cmocka_unit_test(roll_forward_before_plan),
      cmocka_unit_test(install_after_foreign_c3),
      cmocka_unit_test(intent_lifetime),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
