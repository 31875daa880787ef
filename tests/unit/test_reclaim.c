/* Reclamation: WAL objects after a grace period, never while named; files of
 * trimmed records before their records; orphans; dry runs. */
#include "testutil.h"
#include "tu_compact.h"
#include "tu_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tarn/catalog.h"
#include "tarn/compactor.h"
#include "tarn/deployment.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/reader.h"
#include "tarn/reclaim.h"
#include "tarn/tasks.h"
#include "tarn/testing.h"
#include "tarn/timing.h"
#include "tarn/trim.h"

static int64_t now_ms;

typedef struct rep {
  char kinds[64][16];
  char names[64][300];
  int n;
} rep;

static void on_report(void *ctx, const char *kind, const char *name, uint64_t bytes) {
  (void)bytes;
  rep *r = ctx;
  if (r->n < 64) {
    snprintf(r->kinds[r->n], 16, "%s", kind);
    snprintf(r->names[r->n], 300, "%s", name);
    r->n++;
  }
}

static void opts(tarn_reclaim_options *o, rep *r) {
  tarn_reclaim_options_default(o);
  o->wal_grace_ms = 10000;
  o->orphan_grace_ms = 20000;
  /* the C2-only compactions here hold no lock and never return: their
   * intents expire at once (test_compact_intent.c covers the grace) */
  o->intent_grace_ms = 0;
  o->report = on_report;
  o->report_ctx = r;
  memset(r, 0, sizeof *r);
}

static size_t count_objects(tarn_objstore *s) {
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(s, "", NULL, 100000, &l), 0);
  size_t n = l.n;
  tarn_objstore_listing_free(&l);
  return n;
}

/* LS-085, LS-086: WAL objects of compacted records go only after the grace
 * period from when they were first seen unnamed; a reader holding cached RAW
 * records reads them within it; objects still named always stay. */
static void wal_grace(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "walg", 0, 1, NULL);
  tu_append(&E, E.log, 0, 30, 5); /* 6 objects */
  tarn_reader_options ro;
  tarn_reader_options_default(&ro); /* 60 s index cache */
  tarn_reader *cached;
  assert_int_equal(tarn_reader_open(E.m, E.wal, E.compacted, &ro, &cached), 0);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(cached, E.log, 0, &it), 0);
  tarn_entry en;
  while (tarn_log_iter_next(it, &en, 0) == 0) {
  }
  tarn_log_iter_close(it);
  tarn_compactor *c = tu_compactor(&E, NULL, NULL);
  /* compact the first 4 records only: 2 objects stay named */
  tarn_compact_range r;
  tarn_compactor_options co;
  tarn_compactor_options_default(&co);
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &r), 0);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  co.max_range_bytes = 1;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &co, &c), 0);
  for (int i = 0; i < 4; i++)
    assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, NULL), 0);
  assert_int_equal(tu_count_index(E.m, E.log), 6);
  assert_int_equal(count_objects(E.wal), 6);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp);
  now_ms = 1000000;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_listed, 6);
  assert_int_equal(st.wal_unreferenced, 4);
  assert_int_equal(st.wal_deleted, 0);
  assert_int_equal(st.compacted_orphans, 0);
  /* the next pass confirms the first-seen stamps: the grace counts from it */
  now_ms += 5000;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_unreferenced, 4);
  assert_int_equal(st.wal_deleted, 0);
  now_ms += 9999; /* within the grace period */
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  /* the reader's cached RAW records still read */
  assert_int_equal(tarn_log_iter_open(cached, E.log, 0, &it), 0);
  size_t n = 0;
  while (tarn_log_iter_next(it, &en, 0) == 0)
    n++;
  assert_int_equal(n, before.n);
  tarn_log_iter_close(it);
  now_ms += 1;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 4);
  assert_int_equal(count_objects(E.wal), 2);
  tu_snap after;
  tu_snapshot(&E, E.log, &after);
  assert_int_equal(after.n, before.n);
  tu_snap_assert_same(&before, &after);
  tu_snap_free(&after);
  tu_snap_free(&before);
  tarn_reader_close(cached);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* Publishes a RAW record of e->log naming location; *key gets its index key. */
static void name_object(tu_cenv *e, const char *location, char **key) {
  char part[32], prefix[TARN_KEY_PREFIX_LEN + 1];
  tarn_key_partition(part, e->log);
  tarn_key_prefix(prefix, e->log);
  prefix[TARN_KEY_PREFIX_LEN - 1] = 0;
  uint32_t bound = 1;
  tarn_raw_record rr = {.location = location,
                        .message_count = 1,
                        .entry_size_bytes = 1,
                        .file_size = 1,
                        .boundaries = &bound,
                        .entry_count = 1};
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_index_build_raw(&rr, &b), 0);
  tarn_meta_rec out = {0};
  assert_int_equal(tarn_meta_sequenced_put(e->m, part, prefix, 1, 1, b.data, b.len, &out), 0);
  *key = strdup(out.key);
  tarn_meta_rec_free(&out);
  tarn_buf_free(&b);
}

/* LS-085: unnamed objects are found whatever their names; an object that
 * becomes named before its grace period ends is kept (re-checked before
 * deleting), and its first-seen record forgotten. */
static void any_name_and_recheck(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "anyn", 0, 1, NULL);
  tu_append(&E, E.log, 0, 5, 5);
  const char *odd[] = {"x", "deep/a/b/c/d.bin", "20260101T000000Z.wal", "ff/late.wal"};
  for (int i = 0; i < 4; i++)
    assert_int_equal(tarn_objstore_put(E.wal, odd[i], "z", 1), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp);
  now_ms = 5000000;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_unreferenced, 4);
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0); /* confirms */
  /* "ff/late.wal" is named by a record published after it was first seen */
  char *key;
  name_object(&E, "ff/late.wal", &key);
  free(key);
  now_ms += 10000;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 3);
  uint64_t sz;
  assert_int_equal(tarn_objstore_head(E.wal, "ff/late.wal", &sz), 0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(tarn_objstore_head(E.wal, odd[i], &sz), TARN_ENOTFOUND);
  /* the writer's object, named all along, is still there */
  assert_int_equal(count_objects(E.wal), 2);
  tu_cenv_close(&E);
}

/* LS-082, LS-083: the files of PARQUET records ending at or below B are
 * deleted, then those records are hard-trimmed, the last record kept; a dry
 * run changes nothing and says what would go. */
/* 20 entries compacted into a PARQUET record [0, r->e), 10 more RAW, then a
 * soft trim through r->e + through_from_e (B' = that + 1); returns B. */
static uint64_t compacted_then_trimmed(tu_cenv *E, const char *tag, tarn_compactor **c,
                                       tarn_compact_range *r, int through_from_e) {
  tu_cenv_open(E, tag, 0, 1, NULL);
  tu_append(E, E->log, 0, 20, 5);
  *c = tu_compactor(E, NULL, NULL);
  assert_int_equal(tarn_compact_once(*c, E->log, 1, r, NULL), 0);
  tu_append(E, E->log, 20, 10, 5);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(E->m, E->log, &l), 0);
  uint64_t b;
  assert_int_equal(tarn_soft_trim(E->m, l, (uint64_t)((int64_t)r->e + through_from_e), &b), 0);
  assert_int_equal(tarn_lease_release(l), 0);
  return b;
}

static void trimmed_files(void **state) {
  (void)state;
  tu_cenv E;
  tarn_compactor *c;
  tarn_compact_range r;
  uint64_t b = compacted_then_trimmed(&E, "trimf", &c, &r, 2);
  assert_true(b > r.e);
  size_t files = count_objects(E.compacted);
  assert_int_equal(files, 2 * r.n_files);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp);
  o.dry_run = 1;
  now_ms = 1;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(count_objects(E.compacted), files);
  assert_int_equal(tu_count_index(E.m, E.log), 3);
  assert_true(rp.n >= 3);
  o.dry_run = 0;
  memset(&rp, 0, sizeof rp);
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(count_objects(E.compacted), 0);
  assert_int_equal(st.trimmed_files_deleted, files);
  assert_int_equal(st.records_hard_trimmed, 1);
  assert_int_equal(tu_count_index(E.m, E.log), 2);
  /* the order: every file before the hard trim */
  assert_string_equal(rp.kinds[rp.n - 1], "hard-trim");
  for (int i = 0; i < rp.n - 1; i++)
    assert_string_equal(rp.kinds[i], "trimmed");
  tu_snap s;
  tu_snapshot(&E, E.log, &s);
  assert_true(s.n > 0 && s.v[0].offset + s.v[0].count > b);
  tu_snap_free(&s);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* LS-082: the boundary itself. A PARQUET record ending at B + 1 holds the
 * entry at B, still readable: its files stay (the scan is of records ending
 * at or below B, never B + 1). Issue 31: moving the bound by one was caught
 * by one simulator seed only; planted bug reclaim-trim-bound-plus-one. */
static void trimmed_files_boundary(void **state) {
  (void)state;
  tu_cenv E;
  tarn_compactor *c;
  tarn_compact_range r;
  uint64_t b = compacted_then_trimmed(&E, "trimb", &c, &r, -2); /* B' = e - 1 */
  assert_int_equal(b, r.e - 1);
  size_t files = count_objects(E.compacted);
  assert_true(files > 0);
  tarn_reclaim_stats st;
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp);
  assert_int_equal(tu_reclaim_pass_at(1, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.trimmed_files_deleted, 0);
  assert_int_equal(count_objects(E.compacted), files);
  /* every entry from B on still reads, B's from the compacted file */
  tu_snap s;
  tu_snapshot(&E, E.log, &s);
  assert_true(s.n > 0);
  assert_true(s.v[0].offset <= b && s.v[0].offset + s.v[0].count > b); /* the entry holding B */
  tu_snap_free(&s);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* LS-084: files written for a compaction that failed before C3 are orphans,
 * deleted after their grace period; files an open task can still install are
 * not; files of a dropped stream's logs are. */
static void orphans(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "orph", 0, 2, NULL);
  tu_append(&E, E.logs[0], 0, 10, 5);
  tu_append(&E, E.logs[1], 0, 10, 5);
  tarn_compactor *c = tu_compactor(&E, NULL, NULL);
  /* a failed compaction: C2 only */
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, E.logs[0], 1, &r), 0);
  assert_int_equal(tarn_compact_write(c, &r), 0);
  /* an open task past C2 on the other log */
  assert_int_equal(tarn_tasks_plan(c, NULL, 1, NULL), 0);
  tarn_compact_lock *lk;
  tarn_task t;
  assert_int_equal(tarn_tasks_claim(E.m, NULL, &lk, &t), 0);
  while (t.log_id != E.logs[1]) { /* take the second log's */
    tarn_task t2;
    tarn_compact_lock *lk2;
    assert_int_equal(tarn_tasks_claim(E.m, NULL, &lk2, &t2), 0);
    tarn_task_free(&t);
    tarn_compact_lock_release(lk);
    t = t2;
    lk = lk2;
  }
  assert_int_equal(tarn_tasks_step(c, NULL, &t), 0);
  assert_int_equal(t.state, TARN_TASK_PREPARED);
  size_t files = count_objects(E.compacted);
  assert_int_equal(files, 2 * (r.n_files + t.range.n_files));
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp);
  now_ms = 100;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.compacted_orphans, 2 * r.n_files);
  now_ms += 1000; /* confirms the stamps: the grace counts from here */
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.compacted_deleted, 0);
  now_ms += 19999;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.compacted_deleted, 0);
  now_ms += 1;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.compacted_deleted, 2 * r.n_files);
  assert_int_equal(count_objects(E.compacted), 2 * t.range.n_files);
  /* the task completes and its files stay named */
  assert_int_equal(tarn_tasks_step(c, NULL, &t), 0);
  assert_int_equal(t.state, TARN_TASK_COMMITTED);
  tarn_compact_lock_release(lk);
  now_ms += 100000;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(count_objects(E.compacted), 2 * t.range.n_files);
  /* drop the stream: its files and WAL objects become orphans */
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(E.m, NULL, &cat), 0);
  assert_int_equal(tarn_catalog_drop_stream(cat, "ns", "s1", NULL), 0);
  tarn_catalog_close(cat);
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.compacted_deleted, 0);
  now_ms += 1000; /* confirms */
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.compacted_deleted, 0);
  now_ms += 20000;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(count_objects(E.compacted), 0);
  assert_int_equal(count_objects(E.wal), 0);
  tarn_task_free(&t);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* LS-085: without a catalog, the logs named in an object's head are scanned
 * before it is deleted: a log the catalog never created keeps its objects;
 * bytes that are no WAL object go after the grace period. */
static void logs_outside_the_catalog(void **state) {
  (void)state;
  tu_cenv E;
  memset(&E, 0, sizeof E);
  snprintf(E.name, sizeof E.name, "rc-nocat-%d", (int)getpid());
  snprintf(E.meta_uri, sizeof E.meta_uri, "mem:%s", E.name);
  snprintf(E.wal_uri, sizeof E.wal_uri, "mem:%s-wal", E.name);
  snprintf(E.compacted_uri, sizeof E.compacted_uri, "mem:%s-c", E.name);
  assert_int_equal(tarn_meta_open(E.meta_uri, &E.m), 0);
  assert_int_equal(tarn_objstore_open(E.wal_uri, &E.wal), 0);
  assert_int_equal(tarn_objstore_open(E.compacted_uri, &E.compacted), 0);
  tu_append(&E, 77, 0, 12, 4); /* log 77: no catalog at all */
  size_t named = count_objects(E.wal);
  assert_int_equal(tarn_objstore_put(E.wal, "a.wal", "z", 1), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp);
  now_ms = 0;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0); /* confirms */
  now_ms = 1000000000;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 1);
  assert_int_equal(count_objects(E.wal), named);
  uint64_t sz;
  assert_int_equal(tarn_objstore_head(E.wal, "a.wal", &sz), TARN_ENOTFOUND);
  tu_snap s;
  tu_snapshot(&E, 77, &s);
  assert_int_equal(s.n, 12);
  tu_snap_free(&s);
  tu_cenv_close(&E);
}

/* LS-086 (issue 12): a first-seen stamp whose create was held in flight and
 * landed after a later pass had seen the object named (and forgotten the
 * stamp) must not date the grace: once the record naming the object is
 * retired, the object stays a full grace from then. Before the fix the late
 * stamp's old time counted and the object went one second after its record,
 * under a reader that had just looked the record up. */
static void late_stamp_cannot_shorten_grace(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "latest", 0, 1, NULL);
  assert_int_equal(tarn_objstore_put(E.wal, "late.wal", "z", 1), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp); /* WAL grace 10 s */
  int64_t t0 = 7000000;
  tarn_reclaim_stats st;
  /* pass 1 sees the object unreferenced (its writer between A2 and A3); the
   * stamp's create is held in flight and the pass gives up on it (its first
   * writes, its marks l-, p-w-, p-c- and the p-w- mark's first range, pass:
   * src/log/reclaim.c "pass marks") */
  assert_int_equal(tarn_meta_inject_fault_after(E.m, TARN_META_FAULT_DELAY_COMMIT, 4, 1), 0);
  assert_int_equal(tu_reclaim_pass_at(t0, E.m, E.wal, E.compacted, &o, &st), TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_NONE, 0), 0);
  /* the writer's record lands; pass 2 sees the object named */
  char *key;
  name_object(&E, "late.wal", &key);
  assert_int_equal(tu_reclaim_pass_at(t0 + 5000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_unreferenced, 0);
  /* now the held create lands: a stamp holding t0 */
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_LAND, 0), 0);
  /* the record is retired (as by C4) at t0 + 9 s */
  char part[32];
  tarn_key_partition(part, E.log);
  assert_int_equal(tarn_meta_delete(E.m, part, key), 0);
  free(key);
  /* one second later: the late stamp says 10 s, but the object has been
   * unreferenced for 1 s only */
  uint64_t sz;
  assert_int_equal(tu_reclaim_pass_at(t0 + 10000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_unreferenced, 1);
  assert_int_equal(st.wal_deleted, 0);
  assert_int_equal(tarn_objstore_head(E.wal, "late.wal", &sz), 0);
  /* still there just under a grace after the retirement */
  assert_int_equal(tu_reclaim_pass_at(t0 + 9000 + 9999, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  assert_int_equal(tarn_objstore_head(E.wal, "late.wal", &sz), 0);
  /* and gone a grace after the pass that confirmed the stamp */
  assert_int_equal(tu_reclaim_pass_at(t0 + 10000 + 10000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 1);
  assert_int_equal(tarn_objstore_head(E.wal, "late.wal", &sz), TARN_ENOTFOUND);
  tu_cenv_close(&E);
}

/* The first-seen record of a WAL object name (src/log/reclaim.c seen_key). */
static void seen_key_of(const char *name, char *out, size_t n) {
  snprintf(out, n, "w-");
  for (size_t i = 0; name[i] && 2 + 2 * i + 2 < n; i++)
    snprintf(out + 2 + 2 * i, 3, "%02x", (unsigned char)name[i]);
}

static void put_seen(tarn_meta *m, const char *name, const char *v, size_t len) {
  char k[128];
  seen_key_of(name, k, sizeof k);
  assert_int_equal(tarn_meta_put(m, TARN_RECLAIM_PARTITION, k, v, len, NULL), 0);
}

static void assert_seen(tarn_meta *m, const char *name, const char *want) {
  char k[128];
  seen_key_of(name, k, sizeof k);
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_get(m, TARN_RECLAIM_PARTITION, k, &r), 0);
  assert_int_equal(r.value_len, strlen(want));
  assert_memory_equal(r.value, want, r.value_len);
  tarn_meta_rec_free(&r);
}

/* LS-086: stamp values. An old one ("{ms}", as every stamp was written before
 * issue 12) or damaged bytes count as unconfirmed: the next pass confirms
 * them at its time ("{now} confirmed"), however old they say they are; a
 * confirmed stamp counts from its time; one from the store clock's future
 * (it stepped back) is confirmed again at now. */
static void stamp_values(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "stampv", 0, 1, NULL);
  const char *names[] = {"old.wal", "bad.wal", "confirmed.wal", "future.wal"};
  for (int i = 0; i < 4; i++)
    assert_int_equal(tarn_objstore_put(E.wal, names[i], "z", 1), 0);
  put_seen(E.m, "old.wal", "1", 1);
  put_seen(E.m, "bad.wal",
           "\xff"
           "12 confirmedx",
           14);
  put_seen(E.m, "confirmed.wal", "1 confirmed", 11);
  put_seen(E.m, "future.wal", "99999999999 confirmed", 21);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp); /* WAL grace 10 s */
  int64_t t0 = 9000000;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(t0, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_unreferenced, 4);
  assert_int_equal(st.wal_deleted, 1); /* only the confirmed one */
  uint64_t sz;
  assert_int_equal(tarn_objstore_head(E.wal, "confirmed.wal", &sz), TARN_ENOTFOUND);
  assert_seen(E.m, "old.wal", "9000000 confirmed");
  assert_seen(E.m, "bad.wal", "9000000 confirmed");
  assert_seen(E.m, "future.wal", "9000000 confirmed");
  assert_int_equal(tu_reclaim_pass_at(t0 + 9999, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 10000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 3);
  tu_cenv_close(&E);
}

/* The pass marks of kind k in the reclaim partition (src/log/reclaim.c,
 * "pass marks"). */
static size_t count_marks(tarn_meta *m, char k) {
  char a[8], b[8];
  snprintf(a, sizeof a, "p-%c-", k);
  snprintf(b, sizeof b, "p-%c.", k);
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_list(m, TARN_RECLAIM_PARTITION, a, b, 0, 0, &rs), 0);
  size_t n = rs.n;
  tarn_meta_recs_free(&rs);
  return n;
}

/* LS-086: a pass that SAW the name named and failed to forget its confirmed
 * stamp must not let a later pass count the grace from that stamp. P1
 * confirms the stamp while the object is unreferenced (its writer between
 * A2 and A3); A3 commits a record naming it; P2 sees it named, its forget
 * fails (the store refuses that one delete) and P2 aborts; the record is
 * retired (trim, compaction install); then the object must stay a full grace
 * from after the retirement. Before the fix P3 and later passes read the
 * stamp of P1 and deleted it 9 s after the retirement, under a reader that
 * had just resolved the record. */
static void failed_forget_keeps_grace(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "ffgt", 0, 1, NULL);
  assert_int_equal(tarn_objstore_put(E.wal, "named.wal", "z", 1), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp); /* WAL grace 10 s */
  int64_t t0 = 8000000;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(t0, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 1000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_seen(E.m, "named.wal", "8001000 confirmed"); /* P1's confirmation */
  char *key;
  name_object(&E, "named.wal", &key);
  /* P2: fail its writes one at a time, from the first, until the one that
   * fails comes after the pass listed the object: that is its forget (the
   * earlier ones, if any, fail before its scan: nothing seen) */
  int found = 0;
  for (int skip = 0; skip < 8 && !found; skip++) {
    assert_int_equal(tarn_meta_inject_fault_after(E.m, TARN_META_FAULT_FAIL, skip, 1), 0);
    memset(&st, 0, sizeof st);
    int rc = tu_reclaim_pass_at(t0 + 2000, E.m, E.wal, E.compacted, &o, &st);
    assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_NONE, 0), 0);
    assert_int_equal(rc, TARN_EUNAVAIL); /* some write of the pass failed */
    found = st.wal_listed == 1;
  }
  assert_true(found);
  assert_seen(E.m, "named.wal", "8001000 confirmed"); /* the forget did not happen */
  /* the record is retired at t0 + 3 s */
  char part[32];
  tarn_key_partition(part, E.log);
  assert_int_equal(tarn_meta_delete(E.m, part, key), 0);
  free(key);
  int64_t tr = t0 + 3000;
  uint64_t sz;
  /* P3 sees it unreferenced; passes until just under a grace after the
   * retirement leave it */
  for (int64_t t = tr + 1000; t < tr + 10000; t += 2000) {
    assert_int_equal(tu_reclaim_pass_at(t, E.m, E.wal, E.compacted, &o, &st), 0);
    assert_int_equal(st.wal_unreferenced, 1);
    assert_int_equal(st.wal_deleted, 0);
  }
  assert_int_equal(tu_reclaim_pass_at(tr + 9999, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  assert_int_equal(tarn_objstore_head(E.wal, "named.wal", &sz), 0);
  /* P2's mark was absorbed by P3, which confirmed the stamp again at its
   * time: the object goes a grace after that */
  assert_int_equal(count_marks(E.m, 'w'), 0);
  assert_int_equal(tu_reclaim_pass_at(tr + 1000 + 10000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 1);
  assert_int_equal(tarn_objstore_head(E.wal, "named.wal", &sz), TARN_ENOTFOUND);
  tu_cenv_close(&E);
}

/* LS-086: the mark of a pass still running (another reclaimer's, its
 * ephemeral "l-" record alive) blocks deletions of its kind — it may yet see
 * a name named and fail to forget it; once its session ends without it
 * removing the mark (a crash), the mark is dead: the next pass confirms every
 * stamp again at its time and absorbs the mark, and the object goes a grace
 * after that. Passes of another kind are not held up. */
static void live_and_dead_marks(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "lvdm", 0, 1, NULL);
  assert_int_equal(tarn_objstore_put(E.wal, "old.wal", "z", 1), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp); /* WAL grace 10 s */
  int64_t t0 = 6000000;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(t0, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 1000, E.m, E.wal, E.compacted, &o, &st), 0);
  /* another reclaimer, on its own session, is in the middle of a WAL pass */
  tarn_meta *other;
  assert_int_equal(tarn_meta_open(E.meta_uri, &other), 0);
  const char *id = "00112233445566778899aabbccddeeff";
  char l[48], p[48];
  snprintf(l, sizeof l, "l-%s", id);
  snprintf(p, sizeof p, "p-w-%s", id);
  assert_int_equal(
      tarn_meta_create(other, TARN_RECLAIM_PARTITION, l, "", 0, TARN_META_EPHEMERAL, NULL), 0);
  assert_int_equal(
      tarn_meta_create(other, TARN_RECLAIM_PARTITION, p, "", 0, TARN_META_PERSISTENT, NULL), 0);
  /* grace over from the stamp, but that pass is alive: nothing goes */
  assert_int_equal(tu_reclaim_pass_at(t0 + 20000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  assert_seen(E.m, "old.wal", "6001000 confirmed"); /* left as it was */
  assert_int_equal(count_marks(E.m, 'w'), 1);
  /* it crashes: its session ends, its mark stays, dead */
  assert_int_equal(tarn_meta_close(other), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 21000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  assert_seen(E.m, "old.wal", "6021000 confirmed");
  assert_int_equal(count_marks(E.m, 'w'), 0); /* absorbed */
  assert_int_equal(tu_reclaim_pass_at(t0 + 30999, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 31000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 1);
  tu_cenv_close(&E);
}

/* LS-086: a pass deletes nothing without its marks. It writes its live mark
 * (ephemeral "l-") first: when that write fails (a store error, or a session
 * that ended, even one the handle was not told of) the pass stops with an
 * error naming the mark, before its scan; the object, past its grace, stays
 * until a pass with a live session runs (`tarn serve` renews its session,
 * `tarn gc` opens one). The old code (no marks) deletes it at once. */
static void no_mark_no_pass(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "nmnp", 0, 1, NULL);
  assert_int_equal(tarn_objstore_put(E.wal, "old.wal", "z", 1), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp); /* WAL grace 10 s */
  int64_t t0 = 5000000;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(t0, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 1000, E.m, E.wal, E.compacted, &o, &st), 0);
  uint64_t sz;
  /* the grace is over; the store refuses the pass's first write, its mark */
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_FAIL, 1), 0);
  memset(&st, 0, sizeof st);
  assert_int_equal(tu_reclaim_pass_at(t0 + 20000, E.m, E.wal, E.compacted, &o, &st), TARN_EUNAVAIL);
  assert_non_null(strstr(tarn_errmsg(), "live mark"));
  assert_int_equal(st.wal_listed, 0); /* stopped before its scan */
  assert_int_equal(tarn_objstore_head(E.wal, "old.wal", &sz), 0);
  assert_seen(E.m, "old.wal", "5001000 confirmed");
  /* the session ends without the handle knowing: no ephemeral write lands */
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_EXPIRE_SILENT, 0), 0);
  assert_int_not_equal(tu_reclaim_pass_at(t0 + 21000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_non_null(strstr(tarn_errmsg(), "live mark"));
  assert_int_equal(tarn_objstore_head(E.wal, "old.wal", &sz), 0);
  /* told, it renews its session: the next pass deletes the object */
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 22000, E.m, E.wal, E.compacted, &o, &st), TARN_ESESSION);
  assert_int_equal(tarn_meta_session_renew(E.m), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 23000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 1);
  assert_int_equal(tarn_objstore_head(E.wal, "old.wal", &sz), TARN_ENOTFOUND);
  tu_cenv_close(&E);
}

/* Issue 31 item 5: one deployment per root. A root whose marker names another
 * deployment, a marked root under a metadata store without an id, and an
 * unmarked root under one with an id: the pass deletes nothing there
 * (TARN_EBUSY). A root of this deployment loses its garbage, never its
 * marker. Killed by planted bug roots-unchecked (the old code deleted). */
static void foreign_root_refused(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "frr", 0, 1, NULL);
  const char *ours = "0123456789abcdef0123456789abcdef";
  const char *theirs = "fedcba9876543210fedcba9876543210";
  assert_int_equal(tarn_objstore_put(E.wal, "old.wal", "z", 1), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp); /* WAL grace 10 s */
  int64_t t0 = 7000000;
  tarn_reclaim_stats st;
  uint64_t sz;
  /* a marked root, a metadata store without an id */
  assert_int_equal(tarn_objstore_put(E.wal, TARN_ROOT_MARKER, theirs, 32), 0);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(tu_reclaim_pass_at(t0 + i * 20000, E.m, E.wal, E.compacted, &o, &st),
                     TARN_EBUSY);
    assert_non_null(strstr(tarn_errmsg(), "another deployment"));
  }
  /* the store's id is not the root's */
  assert_int_equal(tarn_meta_create(E.m, TARN_DEPLOYMENT_ID_PARTITION, TARN_DEPLOYMENT_ID_KEY, ours,
                                    32, TARN_META_PERSISTENT, NULL),
                   0);
  for (int i = 3; i < 6; i++)
    assert_int_equal(tu_reclaim_pass_at(t0 + i * 20000, E.m, E.wal, E.compacted, &o, &st),
                     TARN_EBUSY);
  assert_non_null(strstr(tarn_errmsg(), theirs));
  assert_int_equal(tarn_objstore_head(E.wal, "old.wal", &sz), 0);
  /* the compacted root has no marker while the store has an id */
  assert_int_equal(tarn_objstore_delete(E.wal, TARN_ROOT_MARKER), 0);
  assert_int_equal(tarn_objstore_put(E.wal, TARN_ROOT_MARKER, ours, 32), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 200000, E.m, E.wal, E.compacted, &o, &st), TARN_EBUSY);
  assert_non_null(strstr(tarn_errmsg(), "no marker"));
  /* a WAL-only pass does not look at the compacted root: it deletes, after
   * the grace, everything but the marker */
  o.trimmed_files = o.orphans = 0;
  assert_int_equal(tu_reclaim_pass_at(t0 + 300000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 301000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 400000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 1);
  assert_int_equal(tarn_objstore_head(E.wal, "old.wal", &sz), TARN_ENOTFOUND);
  assert_int_equal(tarn_objstore_head(E.wal, TARN_ROOT_MARKER, &sz), 0);
  tu_cenv_close(&E);
}

static int stop_after_report(void *ctx) { return ((rep *)ctx)->n > 0; }

/* Issue 31 item 7: a killed pass's mark puts at risk only the names of the
 * page it was in, (lo, hi]: the next pass restamps those and deletes the
 * others past their grace (the old code restamped every name for any dead
 * mark, so a crash loop deleted nothing). A pass that handled the range sets
 * the dead mark to "none" before its deletions, so its own death does not
 * restart the grace again; and a stopped pass (the stop flag, `tarn serve`'s
 * shutdown) returns TARN_ECLOSED between deletions. */
static void killed_pass_progress(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "kpp", 0, 1, NULL);
  const char *names[] = {"a.wal", "n.wal", "z.wal"};
  for (int i = 0; i < 3; i++)
    assert_int_equal(tarn_objstore_put(E.wal, names[i], "z", 1), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp); /* WAL grace 10 s */
  o.trimmed_files = o.orphans = 0;
  int64_t t0 = 8000000;
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(t0, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 1000, E.m, E.wal, E.compacted, &o, &st), 0);
  /* a pass killed in the page (m, q]: its session ends, its mark stays */
  tarn_meta *other;
  assert_int_equal(tarn_meta_open(E.meta_uri, &other), 0);
  const char *id = "00112233445566778899aabbccddee00";
  char l[48], p[48];
  snprintf(l, sizeof l, "l-%s", id);
  snprintf(p, sizeof p, "p-w-%s", id);
  assert_int_equal(
      tarn_meta_create(other, TARN_RECLAIM_PARTITION, l, "", 0, TARN_META_EPHEMERAL, NULL), 0);
  assert_int_equal(
      tarn_meta_create(other, TARN_RECLAIM_PARTITION, p, "r\nm\nq", 5, TARN_META_PERSISTENT, NULL),
      0);
  assert_int_equal(tarn_meta_close(other), 0);
  /* the next pass is stopped after its first deletion (a.wal) */
  o.stop = stop_after_report;
  o.stop_ctx = &rp;
  assert_int_equal(tu_reclaim_pass_at(t0 + 20000, E.m, E.wal, E.compacted, &o, &st), TARN_ECLOSED);
  assert_int_equal(st.wal_deleted, 1);
  assert_string_equal(rp.names[0], "a.wal");
  assert_seen(E.m, "n.wal", "8020000 confirmed"); /* at risk: restamped */
  assert_seen(E.m, "z.wal", "8001000 confirmed"); /* not at risk */
  tarn_meta_rec r;
  assert_int_equal(tarn_meta_get(E.m, TARN_RECLAIM_PARTITION, p, &r), 0);
  assert_int_equal(r.value_len, 4); /* "none": handled, though not absorbed */
  assert_memory_equal(r.value, "none", 4);
  tarn_meta_rec_free(&r);
  o.stop = NULL;
  assert_int_equal(tu_reclaim_pass_at(t0 + 20001, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 1); /* z.wal */
  assert_int_equal(count_marks(E.m, 'w'), 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 29999, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  assert_int_equal(tu_reclaim_pass_at(t0 + 30000, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 1); /* n.wal */
  assert_int_equal(count_objects(E.wal), 0);
  tu_cenv_close(&E);
}

/* Issue 31 item 11: tarn_reclaim_pass refuses a WAL grace that the
 * deployment's timing record refuses (the processes' rule, LS-085/LS-086);
 * the old library took it and deleted after 10 s. */
static void library_refuses_short_grace(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "lrsg", 0, 1, NULL);
  assert_int_equal(tarn_objstore_put(E.wal, "old.wal", "z", 1), 0);
  tarn_timing t;
  tarn_timing_default(&t); /* grace 600 s > 300 + 60 + 60 s */
  assert_int_equal(tarn_timing_record(E.m, &t, NULL), 0);
  tarn_reclaim_options o;
  rep rp;
  opts(&o, &rp); /* WAL grace 10 s: below the record's limits */
  tarn_reclaim_stats st;
  for (int i = 0; i < 3; i++)
    assert_int_equal(tu_reclaim_pass_at(9000000 + i * 20000, E.m, E.wal, E.compacted, &o, &st),
                     TARN_EINVAL);
  uint64_t sz;
  assert_int_equal(tarn_objstore_head(E.wal, "old.wal", &sz), 0);
  o.wal_grace_ms = t.wal_grace_ms;
  assert_int_equal(tu_reclaim_pass_at(9100000, E.m, E.wal, E.compacted, &o, &st), 0);
  /* a pass without WAL reclamation needs no WAL grace */
  o.wal_grace_ms = 1;
  o.wal = 0;
  assert_int_equal(tu_reclaim_pass_at(9200000, E.m, E.wal, E.compacted, &o, &st), 0);
  tu_cenv_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wal_grace),
      cmocka_unit_test(any_name_and_recheck),
      cmocka_unit_test(trimmed_files),
      cmocka_unit_test(trimmed_files_boundary),
      cmocka_unit_test(orphans),
      cmocka_unit_test(logs_outside_the_catalog),
      cmocka_unit_test(late_stamp_cannot_shorten_grace),
      cmocka_unit_test(stamp_values),
      cmocka_unit_test(failed_forget_keeps_grace),
      cmocka_unit_test(live_and_dead_marks),
      cmocka_unit_test(no_mark_no_pass),
      cmocka_unit_test(foreign_root_refused),
      cmocka_unit_test(killed_pass_progress),
      cmocka_unit_test(library_refuses_short_grace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
