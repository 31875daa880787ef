/* `tarn fsck`'s "absorbed slots indexed once" against the index itself
 * (issue 14 acceptance; src/express/xfsck.c). Absorb records each run's
 * per-log offset range on the epoch record with the checkpoint, by the same
 * CAS (tarn__xepoch_end_absorb); fsck walks each log's index against those
 * ranges. Cases: a clean writer (ranges merged across runs; fsck finds
 * nothing, also for every star at once), settlement's absorb recording its
 * range too, a hand-made double index record (a slot's entries indexed a
 * second time), a missing range (the index lost a run's record), a range
 * whose cumulative size disagrees with the index, two ranges claiming the
 * same offsets, a checkpoint raised past slots never absorbed, and a
 * trimmed log (no fault). Each fault names the log, the epoch, the slots and the
 * offsets. Before the ranges (the check went only through the cursors), none
 * of these corruptions was reported. */
#include "testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "express/express_internal.h"
#include "express/xwriter_internal.h"
#include "tarn/express.h"
#include "tarn/express_fence.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/trim.h"
#include "tu_fixture.h"

#define STAR "star-f"

/* The fixture's deployment with express on 3 buckets (opened: d.b), and
 * star STAR's stepped express writer on it. */
typedef struct xstar {
  tu_fixture d;
  tarn_xwriter *w;
} xstar;

static void xstar_open(xstar *e, const char *name) {
  tu_fixture_open(&e->d, name);
  tu_fixture_express(&e->d, 3, 2, 8, 0, 1);
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = STAR;
  o.stepped = 1;
  o.reclaim_grace_ms = 0;
  assert_int_equal(tarn_xwriter_open(e->d.m, e->d.wal, &o, &e->w), 0);
}

/* One slot holding one entry of each log given, committed and released. */
static uint64_t slot_no;
static void slot(xstar *e, const uint64_t *logs, size_t n, const char *payload) {
  for (size_t i = 0; i < n; i++)
    assert_int_equal(tarn_xwriter_append(e->w, logs[i], payload, strlen(payload), 2, NULL, NULL),
                     0);
  assert_int_equal(tarn_xwriter_step(e->w, TARN_XSTEP_SEAL, 0, 0), 1);
  for (size_t b = 0; b < 3; b++)
    assert_int_equal(tarn_xwriter_step(e->w, TARN_XSTEP_PUT, slot_no, b), 1);
  assert_int_equal(tarn_xwriter_step(e->w, TARN_XSTEP_RELEASE, 0, 0), 1);
  slot_no++;
}

static void absorb(xstar *e) { assert_true(tarn_xwriter_step(e->w, TARN_XSTEP_ABSORB, 0, 0) >= 0); }

/* Slots 0, 1 (logs 5 and 6) absorbed in one run, slot 2 (log 5) in another,
 * slot 3 (log 6) in a third: log 5 [0, 4), log 6 [0, 4) from epoch 1. */
static void write_three_runs(xstar *e) {
  slot_no = 0;
  uint64_t both[] = {5, 6}, five[] = {5}, six[] = {6};
  slot(e, both, 2, "aa");
  slot(e, both, 2, "bbb");
  absorb(e);
  slot(e, five, 1, "cccc");
  absorb(e);
  slot(e, six, 1, "d");
  absorb(e);
}

static void fsck(xstar *e, tarn_fsck_report *r) {
  memset(r, 0, sizeof *r);
  assert_int_equal(tarn_express_fsck(e->d.m, STAR, r), 0);
  for (size_t i = 0; i < r->n_faults; i++)
    print_message("fault %s log %" PRIu64 " offset %" PRIu64 ": %s\n", r->faults[i].kind,
                  r->faults[i].log_id, r->faults[i].offset, r->faults[i].message);
}

static const tarn_fsck_fault *only_fault(const tarn_fsck_report *r, const char *kind) {
  assert_int_equal(r->n_faults, 1);
  assert_string_equal(r->faults[0].kind, kind);
  return &r->faults[0];
}

static void clean_writer_ranges_merged(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-clean");
  write_three_runs(&e);
  uint64_t epoch = tarn_xwriter_epoch(e.w);
  assert_int_equal(tarn_xwriter_close(e.w), 0);
  tarn__xepoch ep;
  assert_int_equal(tarn__xepoch_load(e.d.m, STAR, TARN__X_CLASS_EXPRESS, epoch, &ep), 0);
  assert_int_equal(ep.checkpoint, 4);
  /* one range per log: each run went on where the log's last one ended */
  assert_int_equal(ep.n_absorbed, 2);
  for (size_t i = 0; i < 2; i++) {
    const tarn__xrange *x = &ep.absorbed[i];
    assert_true(x->log_id == 5 || x->log_id == 6);
    assert_int_equal(x->start, 0);
    assert_int_equal(x->end, 6); /* three entries of two records each */
    assert_int_equal(x->cum0, 0);
    assert_int_equal(x->cum1, x->log_id == 5 ? 9 : 6);
    assert_int_equal(x->slot_from, 0);
    assert_int_equal(x->slot_to, x->log_id == 5 ? 3 : 4);
  }
  tarn__xepoch_free(&ep);
  tarn_fsck_report r;
  fsck(&e, &r);
  assert_int_equal(r.n_faults, 0);
  tarn_fsck_report_free(&r);
  memset(&r, 0, sizeof r);
  assert_int_equal(tarn_express_fsck_all(e.d.m, &r), 0);
  assert_int_equal(r.n_faults, 0);
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

/* A log trimmed (soft, then hard: its first index record deleted) leaves
 * ranges that begin below the index: not a fault. */
static void trimmed_log_is_clean(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-trim");
  write_three_runs(&e);
  assert_int_equal(tarn_xwriter_close(e.w), 0);
  /* log 6: B = 4, then its record [0, 4) deleted; its range is [0, 6) */
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(e.d.m, 6, &l), 0);
  uint64_t b;
  assert_int_equal(tarn_soft_trim(e.d.m, l, 3, &b), 0);
  assert_int_equal(b, 4);
  size_t removed = 0;
  assert_int_equal(tarn_hard_trim(e.d.m, l, 4, &removed), 0);
  assert_int_equal(removed, 1);
  tarn_lease_release(l);
  tarn_fsck_report r;
  fsck(&e, &r);
  assert_int_equal(r.n_faults, 0);
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

/* The last index record of log, its value and its entry's record count. */
static void last_record(xstar *e, uint64_t log, tarn_meta_rec *rec) {
  char part[TARN_KEY_PARTITION_LEN + 1], last[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log);
  tarn_key_format(last, log, TARN_KEY_MAX, TARN_KEY_MAX);
  assert_int_equal(tarn_meta_floor(e->d.m, part, last, rec), 0);
}

/* The index put of a run repeated (what a blind retry of an unknown put, or
 * a settlement without the intent, does): the same entries at new offsets. */
static void double_index_record_found(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-double");
  write_three_runs(&e);
  assert_int_equal(tarn_xwriter_close(e.w), 0);
  tarn_meta_rec rec = {0};
  last_record(&e, 5, &rec); /* slot 2's entry: [4, 6) */
  char part[TARN_KEY_PARTITION_LEN + 1], prefix[24];
  tarn_key_partition(part, 5);
  snprintf(prefix, sizeof prefix, "%020d", 5);
  tarn_meta_rec out = {0};
  assert_int_equal(
      tarn_meta_sequenced_put(e.d.m, part, prefix, 2, 4, rec.value, rec.value_len, &out), 0);
  tarn_meta_rec_free(&out);
  tarn_meta_rec_free(&rec);
  tarn_fsck_report r;
  fsck(&e, &r);
  const tarn_fsck_fault *f = only_fault(&r, "express-index-double");
  assert_int_equal(f->log_id, 5);
  assert_int_equal(f->offset, 6);
  assert_non_null(f->key);
  assert_non_null(strstr(f->message, "[6, 8)"));
  assert_non_null(strstr(f->message, "of epoch 1 slots [0, 3)")); /* the run it follows */
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

/* The index lost the record of a run: the range is on the epoch record, the
 * index ends below it. */
static void missing_range_found(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-missing");
  write_three_runs(&e);
  assert_int_equal(tarn_xwriter_close(e.w), 0);
  tarn_meta_rec rec = {0};
  last_record(&e, 6, &rec); /* slot 3's entry: [4, 6) */
  char part[TARN_KEY_PARTITION_LEN + 1];
  tarn_key_partition(part, 6);
  assert_int_equal(tarn_meta_delete(e.d.m, part, rec.key), 0);
  tarn_meta_rec_free(&rec);
  tarn_fsck_report r;
  fsck(&e, &r);
  const tarn_fsck_fault *f = only_fault(&r, "express-index-missing");
  assert_int_equal(f->log_id, 6);
  assert_int_equal(f->offset, 0);
  assert_non_null(strstr(f->message, "express star-f/1: log 6: slots [0, 4)"));
  assert_non_null(strstr(f->message, "offsets [0, 6), but the index ends at 4"));
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

/* Rewrites the epoch record through fn (a hand-made corruption of it). */
static void edit_epoch(xstar *e, uint64_t epoch, void (*fn)(tarn__xepoch *)) {
  tarn__xepoch ep;
  assert_int_equal(tarn__xepoch_load(e->d.m, STAR, TARN__X_CLASS_EXPRESS, epoch, &ep), 0);
  fn(&ep);
  tarn_buf b;
  tarn_buf_init(&b);
  assert_int_equal(tarn__xepoch_encode(&ep, &b), 0);
  char part[TARN__X_PART_MAX], key[TARN__X_KEY_MAX];
  tarn__xchain_partition(part, sizeof part, STAR);
  tarn__xepoch_key(key, sizeof key, TARN__X_CLASS_EXPRESS, epoch);
  assert_int_equal(tarn_meta_cas(e->d.m, part, key, b.data, b.len, ep.version, NULL), 0);
  tarn_buf_free(&b);
  tarn__xepoch_free(&ep);
}

static void wrong_cumulative(tarn__xepoch *ep) {
  for (size_t i = 0; i < ep->n_absorbed; i++)
    if (ep->absorbed[i].log_id == 5)
      ep->absorbed[i].cum1 += 1;
}

static void split_and_overlap(tarn__xepoch *ep) {
  /* log 6's [0, 6) claimed as [0, 4) and again [2, 6) */
  tarn__xrange *v = realloc(ep->absorbed, (ep->n_absorbed + 1) * sizeof *v);
  assert_non_null(v);
  ep->absorbed = v;
  for (size_t i = 0; i < ep->n_absorbed; i++)
    if (v[i].log_id == 6) {
      v[ep->n_absorbed] = v[i];
      v[ep->n_absorbed].start = 2;
      v[ep->n_absorbed].cum0 = 2;
      v[i].end = 4;
      v[i].cum1 = 4;
    }
  ep->n_absorbed++;
}

static void disagreeing_ranges_found(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-cum");
  write_three_runs(&e);
  uint64_t epoch = tarn_xwriter_epoch(e.w);
  assert_int_equal(tarn_xwriter_close(e.w), 0);
  edit_epoch(&e, epoch, wrong_cumulative);
  tarn_fsck_report r;
  fsck(&e, &r);
  const tarn_fsck_fault *f = only_fault(&r, "express-index-missing");
  assert_int_equal(f->log_id, 5);
  assert_int_equal(f->offset, 6);
  assert_non_null(strstr(f->message, "end 6 (cumulative 10)"));
  tarn_fsck_report_free(&r);

  edit_epoch(&e, epoch, wrong_cumulative); /* 11 */
  edit_epoch(&e, epoch, split_and_overlap);
  fsck(&e, &r);
  int overlap = 0;
  for (size_t i = 0; i < r.n_faults; i++)
    if (!strcmp(r.faults[i].kind, "express-index-overlap")) {
      overlap++;
      assert_int_equal(r.faults[i].log_id, 6);
      assert_int_equal(r.faults[i].offset, 2);
    }
  assert_int_equal(overlap, 1);
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

/* The checkpoint raised past slots nothing absorbed: a hole below it. */
static void checkpoint_past_absorbed_found(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-gap");
  write_three_runs(&e);
  uint64_t epoch = tarn_xwriter_epoch(e.w);
  assert_int_equal(tarn_xwriter_close(e.w), 0);
  tarn__xepoch ep;
  assert_int_equal(tarn__xepoch_load(e.d.m, STAR, TARN__X_CLASS_EXPRESS, epoch, &ep), 0);
  assert_int_equal(tarn__xepoch_advance(e.d.m, &ep, TARN__XCUR_CHECKPOINT, 6), 0);
  tarn__xepoch_free(&ep);
  tarn_fsck_report r;
  fsck(&e, &r);
  const tarn_fsck_fault *f = only_fault(&r, "express-index-gap");
  assert_int_equal(f->offset, 4);
  assert_non_null(strstr(f->message, "express star-f/1: slots [4, 6) are below the checkpoint 6"));
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

/* Settlement's absorb (a halted epoch fenced, its repaired slot absorbed by
 * tarn__xabsorb_flight) records its range like the writer's. */
static void settlement_records_its_range(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-settle");
  slot_no = 0;
  uint64_t five[] = {5};
  slot(&e, five, 1, "aa");
  absorb(&e);
  uint64_t epoch = tarn_xwriter_epoch(e.w);
  /* slot 1: one copy, then two buckets refuse it: the epoch halts */
  for (int i = 1; i < 3; i++)
    assert_int_equal(tarn_objstore_mem_fault(e.d.b[i], TARN_MEM_OP_PUT, 1, 1000000,
                                             TARN_MEM_FAULT_BEFORE, TARN_EUNAVAIL),
                     0);
  assert_int_equal(tarn_xwriter_append(e.w, 5, "bb", 2, 2, NULL, NULL), 0);
  assert_int_equal(tarn_xwriter_step(e.w, TARN_XSTEP_SEAL, 0, 0), 1);
  assert_int_equal(tarn_xwriter_step(e.w, TARN_XSTEP_PUT, 1, 0), 1);
  for (int t = 0; t < 3; t++)
    for (size_t b = 1; b < 3; b++)
      tarn_xwriter_step(e.w, TARN_XSTEP_PUT, 1, b);
  assert_true(tarn_xwriter_step(e.w, TARN_XSTEP_RELEASE, 0, 0) < 0);
  assert_true(tarn_xwriter_close(e.w) < 0);
  for (int i = 1; i < 3; i++)
    tarn_objstore_mem_reset_faults(e.d.b[i]);
  tarn_xfence_opts fo = {.timeout_ms = 5000, .retry_ms = 5};
  assert_int_equal(tarn_express_fence(e.d.m, STAR, epoch, &fo, NULL), 0);
  assert_int_equal(tarn_express_settle(e.d.m, e.d.wal, STAR, epoch, &fo, NULL), 0);
  tarn__xepoch ep;
  assert_int_equal(tarn__xepoch_load(e.d.m, STAR, TARN__X_CLASS_EXPRESS, epoch, &ep), 0);
  assert_int_equal(ep.n_absorbed, 1);
  assert_int_equal(ep.absorbed[0].start, 0);
  assert_int_equal(ep.absorbed[0].end, 4);
  assert_int_equal(ep.absorbed[0].slot_from, 0);
  assert_int_equal(ep.absorbed[0].slot_to, 2);
  tarn__xepoch_free(&ep);
  tarn_fsck_report r;
  fsck(&e, &r);
  assert_int_equal(r.n_faults, 0);
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

static void move_log5_up(tarn__xepoch *ep) {
  for (size_t i = 0; i < ep->n_absorbed; i++)
    if (ep->absorbed[i].log_id == 5) {
      ep->absorbed[i].start += 100;
      ep->absorbed[i].end += 100;
    }
}

static size_t count_kind(const tarn_fsck_report *r, const char *kind) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_faults; i++)
    n += !strcmp(r->faults[i].kind, kind);
  return n;
}

/* express-index-order (issue 30 item 3): the star's epoch 2 range of log 5
 * lies below its epoch 1 range (what settlement newest first produced: a
 * newer epoch's entries at an older one's offsets). Clean before the edit. */
static void misordered_epochs_found(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-order");
  write_three_runs(&e);
  assert_int_equal(tarn_xwriter_close(e.w), 0);
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = STAR;
  o.stepped = 1;
  o.reclaim_grace_ms = 0;
  assert_int_equal(tarn_xwriter_open(e.d.m, e.d.wal, &o, &e.w), 0);
  assert_int_equal(tarn_xwriter_epoch(e.w), 2);
  slot_no = 0;
  uint64_t five[] = {5};
  slot(&e, five, 1, "ee");
  absorb(&e);
  assert_int_equal(tarn_xwriter_close(e.w), 0);
  tarn_fsck_report r;
  fsck(&e, &r);
  assert_int_equal(r.n_faults, 0);
  tarn_fsck_report_free(&r);
  edit_epoch(&e, 1, move_log5_up);
  fsck(&e, &r);
  assert_int_equal(count_kind(&r, "express-index-order"), 1);
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

/* express-unsettled (issue 30 item 5): a fenced epoch below its cut, no
 * process of the star alive; not while one lives (a rolled writer absorbs
 * its own fenced epoch right after the roll), and not once settled. */
static void unsettled_epoch_found(void **state) {
  (void)state;
  xstar e;
  xstar_open(&e, "xfi-unsettled");
  slot_no = 0;
  uint64_t five[] = {5};
  slot(&e, five, 1, "aa");
  slot(&e, five, 1, "bb");
  tarn__xwriter_abandon(e.w); /* killed: nothing absorbed */
  tarn_xfence_opts fo = {1000, 1};
  assert_int_equal(tarn_express_fence(e.d.m, STAR, 1, &fo, NULL), 0);
  tarn_fsck_report r;
  fsck(&e, &r);
  assert_int_equal(count_kind(&r, "express-unsettled"), 0); /* its liveness record stands */
  tarn_fsck_report_free(&r);
  char part[TARN__X_PART_MAX];
  tarn__xchain_partition(part, sizeof part, STAR);
  assert_int_equal(tarn_meta_delete_range(e.d.m, part, "/alive/", "/alive/~", NULL), 0);
  fsck(&e, &r);
  assert_int_equal(count_kind(&r, "express-unsettled"), 1);
  tarn_fsck_report_free(&r);
  assert_int_equal(tarn_express_settle(e.d.m, e.d.wal, STAR, 1, &fo, NULL), 0);
  fsck(&e, &r);
  assert_int_equal(r.n_faults, 0);
  tarn_fsck_report_free(&r);
  tu_fixture_close(&e.d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(misordered_epochs_found),
      cmocka_unit_test(unsettled_epoch_found),
      cmocka_unit_test(clean_writer_ranges_merged),
      cmocka_unit_test(double_index_record_found),
      cmocka_unit_test(missing_range_found),
      cmocka_unit_test(disagreeing_ranges_found),
      cmocka_unit_test(checkpoint_past_absorbed_found),
      cmocka_unit_test(settlement_records_its_range),
      cmocka_unit_test(trimmed_log_is_clean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
