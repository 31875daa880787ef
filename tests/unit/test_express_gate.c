/* The express leadership protocol (issue 15; docs/express.md "Leadership"):
 * the last-writer record, Finish and its clean-release mark, and the open
 * gate. Two stars on two metadata handles of one mem: store; a crash is
 * tarn__xwriter_abandon (nothing more written) and, for a dead star, the
 * close of its handle (its session and lease records end). Every case checks
 * the rule that matters: a successor never reassigns an acknowledged offset.
 * ctest-wrap: tarn__xmark_consume */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "express/express_internal.h"
#include "express/xwriter_internal.h"
#include "tarn/express.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tu_fixture.h"
#include "util/error.h"

#define LOG 7

/* Two stars' metadata handles on one deployment: the fixture's (d.m, star
 * a) and mb (star b); express on 3 buckets, W = 2, WIN = 8. */
typedef struct stars {
  tu_fixture d;
  tarn_meta *mb;
} stars;

static void stars_open(stars *e, const char *name) {
  tu_fixture_open(&e->d, name);
  assert_int_equal(tarn_meta_open(e->d.meta_uri, &e->mb), 0);
  tu_fixture_express(&e->d, 3, 2, 8, 0, 0);
}

static void stars_close(stars *e) {
  tarn_meta_close(e->mb);
  tu_fixture_close(&e->d);
}

/* A dead star: its process is gone and its session ended. */
static void crash_dead(stars *e, tarn_xwriter *w) {
  tarn__xwriter_abandon(w);
  tarn_meta_close(e->d.m);
  e->d.m = NULL;
}

static tarn_xwriter *open_w(tarn_meta *m, stars *e, const char *star) {
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = star;
  o.stepped = 1;
  o.reclaim_grace_ms = 0;
  o.finish_retry_ms = 1;
  o.finish_attempts = 1;
  tarn_xwriter *w;
  assert_int_equal(tarn_xwriter_open(m, e->d.wal, &o, &w), 0);
  return w;
}

typedef struct ack {
  int done, rc;
  uint64_t off;
} ack;

static void on_ack(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  ack *a = arg;
  a->done = 1;
  a->rc = status;
  a->off = offset;
}

/* Appends one entry and drives it to its acknowledgement (not absorbed);
 * the offset it was acknowledged at. */
static uint64_t acked(tarn_xwriter *w) {
  ack a = {0};
  assert_int_equal(tarn_xwriter_append(w, LOG, "x", 1, 1, on_ack, &a), 0);
  assert_int_equal(tarn_xwriter_flush(w), 0);
  assert_true(a.done);
  assert_int_equal(a.rc, 0);
  return a.off;
}

static int append_rc(tarn_xwriter *w) {
  ack a = {0};
  return tarn_xwriter_append(w, LOG, "x", 1, 1, on_ack, &a);
}

static int epoch_state(tarn_meta *m, const char *star, uint64_t epoch) {
  tarn__xepoch ep;
  assert_int_equal(tarn__xepoch_load(m, star, TARN__X_CLASS_EXPRESS, epoch, &ep), 0);
  int s = ep.state;
  tarn__xepoch_free(&ep);
  return s;
}

static int mark_rc(tarn_meta *m, uint64_t *end) {
  char star[TARN__X_STAR_MAX + 1];
  uint64_t ep, e = 0;
  int64_t v;
  int rc = tarn__xmark_get(m, LOG, star, &ep, &e, &v);
  tarn_errclear();
  if (end)
    *end = e;
  return rc;
}

/* Clean release: Finish stamps the mark, the successor consumes it (no fence:
 * the predecessor's epoch stays open) and a second look finds none. */
static void successor_consumes_mark_once(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-mark");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  for (uint64_t i = 0; i < 3; i++)
    assert_int_equal(acked(a), i);
  assert_int_equal(tarn_xwriter_close(a), 0);
  uint64_t end;
  assert_int_equal(mark_rc(e.mb, &end), 0);
  assert_int_equal(end, 3);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  assert_int_equal(acked(b), 3);
  assert_int_equal(mark_rc(e.mb, NULL), TARN_ENOTFOUND);               /* single use */
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_OPEN); /* trusted, not fenced */
  assert_int_equal(tarn_xwriter_close(b), 0);
  stars_close(&e);
}

/* The mark certifies only the tenure that stamped it: a star that finishes a
 * log, leads it again in the same epoch and crashes must be settled, not
 * trusted on its old mark. */
static void reopened_tenure_does_not_reuse_mark(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-reuse");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked(a), 0);
  assert_int_equal(tarn_xwriter_finish(a, LOG), 0);
  assert_int_equal(acked(a), 1); /* the same epoch leads the log again */
  assert_int_equal(acked(a), 2);
  crash_dead(&e, a);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  assert_int_equal(acked(b), 3);
  assert_int_equal(tarn_xwriter_close(b), 0);
  stars_close(&e);
}

/* Abandonment between the first acknowledgement and the first absorb: the
 * index is empty, only the last-writer record names the predecessor. The
 * successor fences and settles it and counts on after its acknowledgements. */
static void crash_before_absorb_is_settled(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-crash");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked(a), 0);
  assert_int_equal(acked(a), 1);
  crash_dead(&e, a);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  assert_int_equal(acked(b), 2);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_FENCED);
  assert_int_equal(tarn_xwriter_close(b), 0);
  uint64_t end, cum;
  assert_int_equal(tarn__xlog_tail(e.mb, LOG, &end, &cum), 0);
  assert_int_equal(end, 3);
  stars_close(&e);
}

/* The same star restarted (its lease record not yet expired): its old epoch
 * is below the head, superseded, and settled inline. */
static void restarted_star_settles_inline(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-restart");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked(a), 0);
  assert_int_equal(acked(a), 1);
  tarn__xwriter_abandon(a); /* its session lives on a while */
  /* issue 30 item 2: while it does, the star is held (the process may only
   * be paused) and no second process of it is admitted */
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = "star-a";
  o.stepped = 1;
  tarn_xwriter *busy = NULL;
  assert_int_equal(tarn_xwriter_open(e.mb, e.d.wal, &o, &busy), TARN_EBUSY);
  assert_non_null(strstr(tarn_errmsg(), "held by a live process"));
  tarn_meta_close(e.d.m); /* its session ends: the star is free */
  e.d.m = NULL;
  tarn_xwriter *a2 = open_w(e.mb, &e, "star-a");
  assert_int_equal(acked(a2), 2);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_FENCED);
  assert_int_equal(tarn_xwriter_close(a2), 0);
  stars_close(&e);
}

/* An alive predecessor without a mark defers the open (retryable, nothing
 * fenced); once it finishes, the open passes on its mark. */
static void alive_unmarked_defers(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-alive");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked(a), 0);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  assert_int_equal(append_rc(b), TARN_EBUSY);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_OPEN);
  assert_int_equal(tarn_xwriter_close(a), 0);
  assert_int_equal(acked(b), 1);
  assert_int_equal(tarn_xwriter_close(b), 0);
  stars_close(&e);
}

/* A Finish whose mark cannot land keeps the lease: appends bounce, another
 * star's open bounces, and the retry lands it. */
static void finish_that_cannot_land_retries(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-finish");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked(a), 0);
  assert_int_equal(acked(a), 1);
  assert_int_equal(tarn_xwriter_absorb_sync(a), 0);
  assert_int_equal(tarn_meta_inject_fault(e.d.m, TARN_META_FAULT_FAIL, 1), 0);
  assert_int_not_equal(tarn_xwriter_finish(a, LOG), 0);
  assert_int_equal(mark_rc(e.mb, NULL), TARN_ENOTFOUND);
  assert_int_equal(append_rc(a), TARN_EUNAVAIL);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  assert_int_equal(append_rc(b), TARN_EBUSY);
  assert_int_equal(tarn_xwriter_finish(a, LOG), 0);
  assert_int_equal(acked(b), 2);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_OPEN); /* the mark sufficed */
  assert_int_equal(tarn_xwriter_close(a), 0);
  assert_int_equal(tarn_xwriter_close(b), 0);
  stars_close(&e);
}

/* The mark lands only after the release flush is durable: a Finish whose
 * absorb fails stamps nothing, and the successor settles instead. */
static void mark_only_after_release_flush(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-flush");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked(a), 0);
  assert_int_equal(acked(a), 1);
  /* one write passes (a planted early mark would be it), then none */
  assert_int_equal(tarn_meta_inject_fault_after(e.d.m, TARN_META_FAULT_FAIL, 1, 1000), 0);
  assert_int_not_equal(tarn_xwriter_finish(a, LOG), 0);
  crash_dead(&e, a);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  assert_int_equal(acked(b), 2);
  assert_int_equal(tarn_xwriter_close(b), 0);
  stars_close(&e);
}

/* Two opens race over a dead predecessor whose star has restarted: star-a's
 * gate finds star-c dead and fences its chain; inside that fence (a bucket
 * call) star-c's new instance opens the log, its gate takes the restart path,
 * settles the old epoch and is admitted. star-a's gate must then not admit
 * too (found by the racing-opens worlds, tarn-sim --express --race --seed 5:
 * before the last-writer record was written by compare-and-set, both were
 * admitted and both counted from the same end). */
static tarn_xwriter *race_c2;
static int race_fired, race_rc = 1;
static ack race_ack;

static void race_hook(void *arg, int op, const char *name) {
  (void)arg, (void)op, (void)name;
  if (race_fired || !race_c2)
    return;
  race_fired = 1;
  race_rc = tarn_xwriter_append(race_c2, LOG, "x", 1, 1, on_ack, &race_ack);
}

static void racing_open_over_restart_defers(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-race");
  tarn_meta *mc1, *mc2;
  assert_int_equal(tarn_meta_open("mem:gate-race", &mc1), 0);
  assert_int_equal(tarn_meta_open("mem:gate-race", &mc2), 0);
  tarn_xwriter *c1 = open_w(mc1, &e, "star-c");
  assert_int_equal(acked(c1), 0);
  assert_int_equal(acked(c1), 1);
  tarn__xwriter_abandon(c1); /* star-c's process dies; its session ends */
  tarn_meta_close(mc1);
  race_c2 = open_w(mc2, &e, "star-c"); /* star-c restarts, not yet on the log */
  tarn_objstore *b0;
  assert_int_equal(tarn_objstore_open("mem:gate-race-b0", &b0), 0);
  assert_int_equal(tarn_objstore_mem_hook(b0, race_hook, NULL), 0);
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  int a_rc = append_rc(a); /* its gate fences star-c; star-c's open runs inside */
  tarn_objstore_mem_hook(b0, NULL, NULL);
  assert_true(race_fired);
  assert_int_equal(race_rc, 0);       /* the restarted star settled its old epoch */
  assert_int_equal(a_rc, TARN_EBUSY); /* ... so star-a's open saw a moved record */
  char star[TARN__X_STAR_MAX + 1];
  uint64_t ep;
  assert_int_equal(tarn__xwriter_rec_get(e.mb, LOG, star, &ep, NULL), 0);
  assert_string_equal(star, "star-c");
  tarn__xwriter_abandon(a);
  tarn__xwriter_abandon(race_c2);
  race_c2 = NULL;
  tarn_objstore_close(b0);
  tarn_meta_close(mc2);
  stars_close(&e);
}

/* Issue 30 item 6, "the express mark's consume after a drain is an unguarded
 * write": refuted. star-a finishes the log (its mark stands, end 3); star-b's
 * gate reads the mark, and between that read and its consume star-c's open
 * runs whole: it consumes the same mark, is admitted, acknowledges offset 3
 * and finishes (a new mark, end 4). star-b's consume is a compare-and-set on
 * the version its gate read, so it fails: star-b is not admitted on a mark
 * another open used (TARN_EBUSY, nothing written, star-c's new mark left
 * standing), and its retry consumes star-c's mark and counts on from 4. With
 * an unconditional consume (checked) star-b overwrote star-c's fresh mark
 * with "consumed"; its guarded last-writer put still refused it, so no
 * offset was reassigned, but star-c's clean release was lost and the next
 * opener would fence and settle star-c's live epoch. */
int __real_tarn__xmark_consume(tarn_meta *m, uint64_t log_id, int64_t version);
int __wrap_tarn__xmark_consume(tarn_meta *m, uint64_t log_id, int64_t version);
static tarn_xwriter *consume_racer;
static uint64_t consume_racer_off = UINT64_MAX;

int __wrap_tarn__xmark_consume(tarn_meta *m, uint64_t log_id, int64_t version) {
  tarn_xwriter *c = consume_racer;
  if (c) { /* once: star-c's whole open and tenure run inside star-b's gate */
    consume_racer = NULL;
    consume_racer_off = acked(c);
    assert_int_equal(tarn_xwriter_finish(c, LOG), 0);
  }
  return __real_tarn__xmark_consume(m, log_id, version);
}

static void mark_consumed_once_under_race(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-consume");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  for (uint64_t i = 0; i < 3; i++)
    assert_int_equal(acked(a), i);
  assert_int_equal(tarn_xwriter_close(a), 0);
  tarn_meta *mc;
  assert_int_equal(tarn_meta_open("mem:gate-consume", &mc), 0);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  tarn_xwriter *c = open_w(mc, &e, "star-c");
  consume_racer = c;
  assert_int_equal(append_rc(b), TARN_EBUSY); /* its consume lost the race */
  assert_null(consume_racer);
  assert_int_equal(consume_racer_off, 3);
  uint64_t end;
  assert_int_equal(mark_rc(e.mb, &end), 0); /* star-c's mark, not consumed by star-b */
  assert_int_equal(end, 4);
  assert_int_equal(acked(b), 4); /* the retry consumes star-c's mark */
  assert_int_equal(mark_rc(e.mb, NULL), TARN_ENOTFOUND);
  assert_int_equal(tarn_xwriter_close(b), 0);
  assert_int_equal(tarn_xwriter_close(c), 0);
  tarn_meta_close(mc);
  stars_close(&e);
}

/* ---- the takeover (src/express/takeover.c) -------------------------------- */

static tarn_xtakeover_report takeover(tarn_meta *m, stars *e, const char *star,
                                      void (*judged)(void *), void *arg) {
  uint64_t logs[1] = {LOG};
  tarn_xfence_opts fo = {1000, 1};
  tarn_xtakeover_report r;
  assert_int_equal(tarn__xtakeover(m, e->d.wal, star, logs, 1, &fo, judged, arg, &r), 0);
  return r;
}

/* A dead star (no lease, no liveness record) is fenced and settled up to its
 * head: its acknowledged entries are indexed, and the next writer counts on
 * from them. */
static void takeover_settles_dead_star(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "take-dead");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  for (uint64_t i = 0; i < 3; i++)
    assert_int_equal(acked(a), i);
  crash_dead(&e, a);
  tarn_xtakeover_report r = takeover(e.mb, &e, "star-a", NULL, NULL);
  assert_int_equal(r.verdict, TARN_XTAKE_DEAD);
  assert_int_equal(r.epochs, 1);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_FENCED);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  assert_int_equal(acked(b), 3);
  assert_int_equal(tarn_xwriter_close(b), 0);
  stars_close(&e);
}

/* The safety suspicion of issue 15: a star that restarted (a serve node)
 * mints its epoch before it leads any log, so it holds no lease yet. Judged
 * by leases alone, the takeover fenced that live epoch. Its liveness record
 * spares the head: only the dead process's epoch below it is taken, and the
 * restarted writer acknowledges in the epoch it opened (no halt, no roll). */
static void takeover_spares_restarted_star(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "take-restart");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  for (uint64_t i = 0; i < 3; i++)
    assert_int_equal(acked(a), i);
  crash_dead(&e, a);
  tarn_meta *mc;
  assert_int_equal(tarn_meta_open("mem:take-restart", &mc), 0);
  tarn_xwriter *a2 = open_w(mc, &e, "star-a"); /* epoch 2, no log led yet */
  assert_int_equal(tarn_xwriter_epoch(a2), 2);
  tarn_xtakeover_report r = takeover(e.mb, &e, "star-a", NULL, NULL);
  assert_int_equal(r.verdict, TARN_XTAKE_ALIVE);
  assert_int_equal(r.head, 2);
  assert_int_equal(r.epochs, 1);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_FENCED);
  assert_int_equal(epoch_state(e.mb, "star-a", 2), TARN__XEPOCH_OPEN);
  assert_int_equal(acked(a2), 3);
  assert_int_equal(tarn_xwriter_epoch(a2), 2);
  assert_int_equal(epoch_state(e.mb, "star-a", 2), TARN__XEPOCH_OPEN);
  assert_int_equal(tarn_xwriter_close(a2), 0);
  tarn_meta_close(mc);
  stars_close(&e);
}

/* The head is read before the judgement: a star that restarts while the
 * takeover judges it (between the head and the liveness check) has its new
 * epoch above the head read, never fenced; the next pass takes the dead
 * epoch below it. */
static tarn_meta *judge_meta;
static stars *judge_env;
static tarn_xwriter *judge_w;

static void restart_while_judged(void *arg) {
  (void)arg;
  judge_w = open_w(judge_meta, judge_env, "star-a");
}

static void takeover_reads_head_before_judging(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "take-race");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  for (uint64_t i = 0; i < 2; i++)
    assert_int_equal(acked(a), i);
  crash_dead(&e, a);
  assert_int_equal(tarn_meta_open("mem:take-race", &judge_meta), 0);
  judge_env = &e;
  tarn_xtakeover_report r = takeover(e.mb, &e, "star-a", restart_while_judged, NULL);
  assert_non_null(judge_w);
  assert_int_equal(r.head, 1);
  assert_int_equal(r.verdict, TARN_XTAKE_ALIVE);
  assert_int_equal(r.epochs, 0);
  assert_int_equal(epoch_state(e.mb, "star-a", 2), TARN__XEPOCH_OPEN);
  r = takeover(e.mb, &e, "star-a", NULL, NULL);
  assert_int_equal(r.verdict, TARN_XTAKE_ALIVE);
  assert_int_equal(r.epochs, 1);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_FENCED);
  assert_int_equal(acked(judge_w), 2);
  assert_int_equal(tarn_xwriter_epoch(judge_w), 2);
  assert_int_equal(tarn_xwriter_close(judge_w), 0);
  judge_w = NULL;
  tarn_meta_close(judge_meta);
  stars_close(&e);
}

/* A settled epoch does not end the walk below it: star-a acknowledged on
 * log 8 in epoch 1 and died; epoch 2 led log 7 and died; epoch 3 reopened
 * log 7, whose gate settled only epoch 2 (the restart path settles from the
 * log's recorded epoch), and closed. Log 8 still records epoch 1: the
 * takeover must settle it (readers find its entries), though epoch 2 above
 * it is settled. Fails with the walk ending at the first settled epoch. */
static uint64_t acked_on(tarn_xwriter *w, uint64_t log) {
  ack a = {0};
  assert_int_equal(tarn_xwriter_append(w, log, "y", 1, 1, on_ack, &a), 0);
  assert_int_equal(tarn_xwriter_flush(w), 0);
  assert_true(a.done);
  assert_int_equal(a.rc, 0);
  return a.off;
}

static void takeover_walks_past_a_settled_epoch(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "take-floor");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked_on(a, LOG + 1), 0);
  assert_int_equal(acked_on(a, LOG + 1), 1);
  crash_dead(&e, a);
  tarn_meta *mc;
  assert_int_equal(tarn_meta_open("mem:take-floor", &mc), 0);
  tarn_xwriter *a2 = open_w(mc, &e, "star-a");
  assert_int_equal(acked(a2), 0);
  tarn__xwriter_abandon(a2);
  tarn_meta_close(mc);
  assert_int_equal(tarn_meta_open("mem:take-floor", &mc), 0);
  tarn_xwriter *a3 = open_w(mc, &e, "star-a");
  assert_int_equal(tarn_xwriter_epoch(a3), 3);
  assert_int_equal(acked(a3), 1);
  assert_int_equal(epoch_state(e.mb, "star-a", 2), TARN__XEPOCH_FENCED);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_OPEN);
  assert_int_equal(tarn_xwriter_close(a3), 0);
  tarn_meta_close(mc);
  uint64_t logs[2] = {LOG, LOG + 1}, end = 0, cum = 0;
  tarn_xfence_opts fo = {1000, 1};
  tarn_xtakeover_report r;
  assert_int_equal(tarn__xtakeover(e.mb, e.d.wal, "star-a", logs, 2, &fo, NULL, NULL, &r), 0);
  assert_int_equal(r.verdict, TARN_XTAKE_DEAD);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_FENCED);
  assert_int_equal(tarn__xlog_tail(e.mb, LOG + 1, &end, &cum), 0);
  assert_int_equal(end, 2);
  stars_close(&e);
}

/* The gate never settles its own writer's epochs (issue 30 item 3;
 * tarn-sim --express seed 93986): star-a's process of epoch 1 died on log 8;
 * the restarted process (epoch 2) acknowledges on log 7, sees its slot 1
 * dead (poison in K - W + 1 buckets) and rolls to epoch 3 with epoch 2's
 * slot 0 still its absorber's, from memory. Its first append to log 8 takes
 * the restart path: it settles epoch 1 and must leave epoch 2 alone (planted
 * xgate-settles-own: settled [1, 2], racing the writer's own absorber). */
static void gate_spares_own_epochs(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "gate-own");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked_on(a, LOG + 1), 0);
  /* dead with its session: the star lease (h-xlead) admits a second process
   * of the star only then */
  crash_dead(&e, a);
  char key[TARN__X_SLOT_KEY_MAX];
  tarn__xslot_key(key, sizeof key, "star-a", 2, 1);
  tarn_buf p;
  tarn_buf_init(&p);
  tarn__xpoison(&p, "star-a", 2, 1);
  for (int b = 1; b < 3; b++) {
    char uri[64];
    tarn_objstore *os;
    snprintf(uri, sizeof uri, "mem:gate-own-b%d", b);
    assert_int_equal(tarn_objstore_open(uri, &os), 0);
    assert_int_equal(tarn_objstore_put(os, key, p.data, p.len), 0);
    tarn_objstore_close(os);
  }
  tarn_buf_free(&p);
  tarn_xwriter *a2 = open_w(e.mb, &e, "star-a");
  assert_int_equal(tarn_xwriter_epoch(a2), 2);
  assert_int_equal(acked(a2), 0);
  ack dead = {0}; /* slot 1 is dead: its entry fails, the writer rolls */
  assert_int_equal(tarn_xwriter_append(a2, LOG, "x", 1, 1, on_ack, &dead), 0);
  tarn_xwriter_flush(a2);
  assert_true(dead.done);
  assert_int_not_equal(dead.rc, 0);
  assert_int_equal(tarn_xwriter_epoch(a2), 3);
  assert_int_equal(acked(a2), 1);
  tarn__xepoch ep;
  assert_int_equal(tarn__xepoch_load(e.mb, "star-a", TARN__X_CLASS_EXPRESS, 2, &ep), 0);
  int64_t before = ep.version;
  tarn__xepoch_free(&ep);
  assert_int_equal(acked_on(a2, LOG + 1), 1); /* the gate: restart, settles epoch 1 */
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_FENCED);
  assert_int_equal(tarn__xepoch_load(e.mb, "star-a", TARN__X_CLASS_EXPRESS, 2, &ep), 0);
  assert_int_equal(ep.version, before); /* untouched: neither fenced nor absorbed by the gate */
  assert_int_equal(ep.checkpoint, 0);
  tarn__xepoch_free(&ep);
  assert_int_equal(tarn_xwriter_close(a2), 0);
  uint64_t end = 0, cum = 0;
  assert_int_equal(tarn__xlog_tail(e.mb, LOG, &end, &cum), 0);
  assert_int_equal(end, 2);
  stars_close(&e);
}

/* Item 5 of issue 15: a star whose every log carries its standing
 * clean-release mark is left alone (nothing to fence: Finish certified the
 * coverage), dead or not; a lease on one of its logs leaves it alone too. */
static void takeover_skips_marked_and_leased(void **state) {
  (void)state;
  stars e;
  stars_open(&e, "take-mark");
  tarn_xwriter *a = open_w(e.d.m, &e, "star-a");
  assert_int_equal(acked(a), 0);
  tarn_xtakeover_report r = takeover(e.mb, &e, "star-a", NULL, NULL);
  assert_int_equal(r.verdict, TARN_XTAKE_LEASED);
  assert_int_equal(tarn_xwriter_finish(a, LOG), 0);
  crash_dead(&e, a); /* after the mark: its epoch stays open */
  r = takeover(e.mb, &e, "star-a", NULL, NULL);
  assert_int_equal(r.verdict, TARN_XTAKE_MARKED);
  assert_int_equal(r.epochs, 0);
  assert_int_equal(epoch_state(e.mb, "star-a", 1), TARN__XEPOCH_OPEN);
  tarn_xwriter *b = open_w(e.mb, &e, "star-b");
  assert_int_equal(acked(b), 1);
  assert_int_equal(tarn_xwriter_close(b), 0);
  stars_close(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(successor_consumes_mark_once),
      cmocka_unit_test(reopened_tenure_does_not_reuse_mark),
      cmocka_unit_test(crash_before_absorb_is_settled),
      cmocka_unit_test(restarted_star_settles_inline),
      cmocka_unit_test(alive_unmarked_defers),
      cmocka_unit_test(finish_that_cannot_land_retries),
      cmocka_unit_test(mark_only_after_release_flush),
      cmocka_unit_test(racing_open_over_restart_defers),
      cmocka_unit_test(mark_consumed_once_under_race),
      cmocka_unit_test(takeover_settles_dead_star),
      cmocka_unit_test(takeover_spares_restarted_star),
      cmocka_unit_test(takeover_reads_head_before_judging),
      cmocka_unit_test(takeover_skips_marked_and_leased),
      cmocka_unit_test(takeover_walks_past_a_settled_epoch),
      cmocka_unit_test(gate_spares_own_epochs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
