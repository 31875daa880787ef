/* Every I/O call fails in turn, in the style of SQLite's I/O-error tests.
 *
 * For each procedure (a writer round, a compaction through the step API,
 * soft + hard trim, a reclamation pass pair, dropping a stream) a clean run on
 * fresh mem: stores counts the calls of each object store and the writes to
 * the metadata store. Then, for k = 1, 2, ..., a fresh deployment prepared the
 * same way gets exactly its k-th call failed, once BEFORE (not applied:
 * TARN_ETIMEDOUT from the object store, TARN_EUNAVAIL from the metadata store)
 * and once AFTER (applied, reply lost: TARN_EUNKNOWN), and the procedure runs.
 * It must return an error or success (never crash, ASan watching), leave the
 * spec's invariants holding (fsck finds no fault, the procedure's own checks
 * below), and after the faults are cleared a re-run must reach the same clean
 * state as the clean run. */
#include "testutil.h"
#include "tu_compact.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/compactor.h"
#include "tarn/fsck.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/testing.h"
#include "tarn/reader.h"
#include "tarn/reclaim.h"
#include "tarn/trim.h"
#include "tarn/writer.h"

/* ---- where the fault strikes --------------------------------------------- */

enum { TGT_NONE, TGT_WAL, TGT_COMPACTED, TGT_META };

typedef struct fault {
  int target;
  uint64_t k;  /* the k-th call (object store) or write (metadata) of the procedure */
  int after;   /* 0: BEFORE (not applied), 1: AFTER (applied, reply lost) */
  int persist; /* 1: every call from the k-th on fails (an outage), not only the k-th */
} fault;

#define OUTAGE 1000000 /* calls: longer than any procedure */

static const char *tgt_name(int t) {
  return t == TGT_WAL ? "wal" : t == TGT_COMPACTED ? "compacted" : t == TGT_META ? "meta" : "-";
}

static void arm(tu_cenv *e, const fault *f) {
  if (f->target == TGT_WAL || f->target == TGT_COMPACTED) {
    tarn_objstore *s = f->target == TGT_WAL ? e->wal : e->compacted;
    assert_int_equal(
        tarn_objstore_mem_fault(s, TARN_MEM_OP_ANY, f->k, f->persist ? OUTAGE : 1,
                                f->after ? TARN_MEM_FAULT_AFTER : TARN_MEM_FAULT_BEFORE,
                                f->after ? TARN_EUNKNOWN : TARN_ETIMEDOUT),
        0);
  } else if (f->target == TGT_META) {
    assert_int_equal(tarn_meta_inject_fault_after(
                         e->m, f->after ? TARN_META_FAULT_COMMIT_UNKNOWN : TARN_META_FAULT_FAIL,
                         (int)f->k - 1, f->persist ? OUTAGE : 1),
                     0);
  }
}

/* Whether the armed metadata fault struck inside the procedure: a procedure
 * that made j < k writes leaves k-1-j to skip, so one of the next k probe
 * writes takes the fault. Clears the fault either way. */
static int meta_fault_struck(tu_cenv *e, const fault *f) {
  int struck = 1;
  for (uint64_t i = 0; i < f->k && struck; i++) {
    int rc = tarn_meta_put(e->m, "iofault-probe", "probe", "x", 1, NULL);
    if (rc)
      struck = 0;
  }
  tarn_meta_inject_fault(e->m, TARN_META_FAULT_NONE, 0);
  return struck;
}

static void disarm(tu_cenv *e) {
  tarn_objstore_mem_reset_faults(e->wal);
  tarn_objstore_mem_reset_faults(e->compacted);
  tarn_meta_inject_fault(e->m, TARN_META_FAULT_NONE, 0);
}

static uint64_t calls(tarn_objstore *s) { return tarn_objstore_mem_calls(s, TARN_MEM_OP_ANY); }

static size_t count_objects(tarn_objstore *s) {
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(s, "", NULL, 100000, &l), 0);
  size_t n = l.n;
  tarn_objstore_listing_free(&l);
  return n;
}

/* No index record names a missing object and every entry at or above B reads
 * (LS-037: object before index; LS-069: files before C3; LS-085: nothing
 * named is reclaimed). */
static void assert_fsck_clean(tu_cenv *e, const fault *f, const char *when) {
  tarn_fsck_report rep;
  memset(&rep, 0, sizeof rep);
  int rc = tarn_fsck_run(e->m, e->wal, e->compacted, NULL, &rep);
  if (rc)
    fail_msg("%s, fault %s #%" PRIu64 " %s: fsck could not run: %s", when, tgt_name(f->target),
             f->k, f->after ? "after" : "before", tarn_errmsg());
  if (rep.n_faults)
    fail_msg("%s, fault %s #%" PRIu64 " %s: fsck: log %" PRIu64 " %s: %s", when,
             tgt_name(f->target), f->k, f->after ? "after" : "before", rep.faults[0].log_id,
             rep.faults[0].kind, rep.faults[0].message);
  tarn_fsck_report_free(&rep);
}

/* Entries of a snapshot have contiguous offsets from first. */
static void assert_contiguous(const tu_snap *s) {
  for (size_t i = 1; i < s->n; i++)
    assert_int_equal(s->v[i].offset, s->v[i - 1].offset + s->v[i - 1].count);
}

static uint64_t trim_of(tu_cenv *e, uint64_t log) {
  uint64_t b;
  assert_int_equal(tarn_trim_marker_read(e->m, log, &b, NULL), 0);
  return b;
}

static size_t index_count(tu_cenv *e, uint64_t log) {
  char part[32], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log);
  tarn_key_format(a, log, 0, 0);
  tarn_key_format(b, log, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_list(e->m, part, a, b, 0, 0, &rs), 0);
  size_t n = rs.n;
  tarn_meta_recs_free(&rs);
  return n;
}

/* The lease records of log: a leftover one (of our own live session) would
 * hold up the log's deletion (its drain, LS-046) until the session ends. */
static size_t lease_count(tu_cenv *e, uint64_t log) {
  char part[32], a[TARN_KEY_SLASH_MAX], b[TARN_KEY_SLASH_MAX + 1];
  tarn_key_partition(part, log);
  tarn_key_lease_prefix(a, log);
  snprintf(b, sizeof b, "%s\xff", a);
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_list(e->m, part, a, b, 0, 0, &rs), 0);
  size_t n = rs.n;
  tarn_meta_recs_free(&rs);
  return n;
}

static void assert_no_lease(tu_cenv *e, uint64_t log, const fault *f, const char *when) {
  size_t n = lease_count(e, log);
  if (n)
    fail_msg("%s, fault %s #%" PRIu64 " %s: %zu lease record(s) of log %" PRIu64 " left", when,
             tgt_name(f->target), f->k, f->after ? "after" : "before", n, log);
}

/* ---- a procedure --------------------------------------------------------- */

typedef struct proc {
  const char *name;
  uint32_t partitions;
  void (*prepare)(tu_cenv *e, void *st);
  /* Runs the procedure; returns its first error (0: success). */
  int (*run)(tu_cenv *e, void *st);
  /* Invariants right after a run that may have failed (faults cleared). */
  void (*check)(tu_cenv *e, void *st, const fault *f, int rc);
  /* Re-runs (faults cleared) until done, then checks the final state; clean
   * is the state of the clean run (NULL for the clean run itself). */
  void (*finish)(tu_cenv *e, void *st, const fault *f, void *clean);
  size_t st_size;
  void (*st_free)(void *st);
} proc;

typedef struct tally {
  unsigned runs, failed;
} tally;

/* One run of p with fault f on a fresh deployment; returns whether a
 * metadata fault struck (always 1 for the others). */
static int one(const proc *p, const fault *f, void *clean_st, tally *t) {
  tu_cenv E;
  tu_cenv_open(&E, "iof", 0, p->partitions, NULL);
  void *st = calloc(1, p->st_size);
  p->prepare(&E, st);
  arm(&E, f);
  int rc = p->run(&E, st);
  /* an outage is armed only at calls the clean run made */
  int struck = f->target == TGT_META && !f->persist ? meta_fault_struck(&E, f) : 1;
  if (getenv("TARN_IOFAULT_VERBOSE")) /* one line per faulted run */
    print_message("%s: %s #%" PRIu64 " %s: rc %d%s\n", p->name, tgt_name(f->target), f->k,
                  f->after ? "after" : "before", rc, struck ? "" : " (not reached)");
  disarm(&E);
  assert_true(rc <= 0);
  if (f->persist) {
    /* after an outage the process restarts: a new session, so the
     * ephemeral records (leases, locks) the outage stranded are gone */
    tarn_meta_close(E.m);
    assert_int_equal(tarn_meta_open(E.meta_uri, &E.m), 0);
  }
  if (struck) {
    t->runs++;
    t->failed += rc != 0;
    p->check(&E, st, f, rc);
    p->finish(&E, st, f, clean_st);
  }
  p->st_free(st);
  free(st);
  tu_cenv_close(&E);
  return struck;
}

/* The clean run: counts the calls, then every fault in turn. */
static void every_fault(const proc *p) {
  tu_cenv E;
  tu_cenv_open(&E, "iofc", 0, p->partitions, NULL);
  void *clean = calloc(1, p->st_size);
  p->prepare(&E, clean);
  uint64_t w0 = calls(E.wal), c0 = calls(E.compacted);
  fault none = {TGT_NONE, 0, 0, 0};
  int rc = p->run(&E, clean);
  if (rc)
    fail_msg("%s: the clean run failed: %s", p->name, tarn_errmsg());
  uint64_t nw = calls(E.wal) - w0, nc = calls(E.compacted) - c0;
  p->check(&E, clean, &none, 0);
  p->finish(&E, clean, &none, NULL);
  tu_cenv_close(&E);

  tally t = {0, 0}, to = {0, 0};
  uint64_t nm = 0;
  for (int after = 0; after <= 1; after++) {
    for (uint64_t k = 1; k <= nw; k++)
      one(p, &(fault){TGT_WAL, k, after, 0}, clean, &t);
    for (uint64_t k = 1; k <= nc; k++)
      one(p, &(fault){TGT_COMPACTED, k, after, 0}, clean, &t);
    uint64_t k = 1;
    while (one(p, &(fault){TGT_META, k, after, 0}, clean, &t)) {
      k++;
      assert_true(k < 1000);
    }
    nm = k - 1;
  }
  /* outages: the k-th call and every one after it fail */
  for (int after = 0; after <= 1; after++) {
    for (uint64_t k = 1; k <= nw; k++)
      one(p, &(fault){TGT_WAL, k, after, 1}, clean, &to);
    for (uint64_t k = 1; k <= nc; k++)
      one(p, &(fault){TGT_COMPACTED, k, after, 1}, clean, &to);
    for (uint64_t k = 1; k <= nm; k++)
      one(p, &(fault){TGT_META, k, after, 1}, clean, &to);
  }
  print_message("%s: %" PRIu64 " wal calls, %" PRIu64 " compacted calls, %" PRIu64
                " metadata writes; single faults: %u runs, %u reported an error; outages: %u "
                "runs, %u reported an error\n",
                p->name, nw, nc, nm, t.runs, t.failed, to.runs, to.failed);
  /* a procedure none of whose faults is reported tests nothing */
  assert_true(t.failed > 0);
  assert_true(to.failed > 0);
  p->st_free(clean);
  free(clean);
}

/* ---- writer round -------------------------------------------------------- */

#define W_ROUND 10 /* entries per round: 5 per log, over 2 objects */

typedef struct w_out {
  int done, status;
  uint64_t offset;
} w_out;

typedef struct w_st {
  w_out out[W_ROUND];
  int append_rc[W_ROUND];
  int sync; /* 1: a threaded writer, one append_sync after the other */
} w_st;

static uint64_t w_log(tu_cenv *e, int i) { return e->logs[i % 2]; }

/* Payload of entry i of round r: unique, so a read finds which entry it is. */
static size_t w_payload(int r, int i, uint8_t *buf) {
  int n = snprintf((char *)buf, 64, "round %d entry %d ", r, i);
  for (int j = 0; j < i * 7; j++)
    buf[n++] = (uint8_t)('a' + (j + i) % 26);
  return (size_t)n;
}

static void w_cb(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  w_out *o = arg;
  o->done++;
  o->status = status;
  o->offset = offset;
}

static void w_prepare(tu_cenv *e, void *st) {
  (void)e;
  (void)st;
}

static void w_prepare_sync(tu_cenv *e, void *st) {
  (void)e;
  ((w_st *)st)->sync = 1;
}

/* Appends round r with a threaded writer, one append_sync after the other
 * (each entry its own object, so the call order is fixed). */
static int w_round_sync(tu_cenv *e, w_st *s, int r) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 1;
  o.upload_threads = 1;
  o.put_threads = 1;
  tarn_writer *w;
  int rc = tarn_writer_open(e->m, e->wal, &o, &w);
  if (rc)
    return rc;
  int first = 0;
  uint8_t buf[256];
  for (int i = 0; i < W_ROUND; i++) { /* an object per entry, alternating logs */
    size_t n = w_payload(r, i, buf);
    s->out[i].status = tarn_writer_append_sync(w, w_log(e, i), buf, n, (uint32_t)(1 + i % 3),
                                               &s->out[i].offset, NULL);
    s->out[i].done = 1;
    if (s->out[i].status && !first)
      first = s->out[i].status;
  }
  rc = tarn_writer_close(w);
  return first ? first : rc;
}

/* Appends round r with a stepped writer (deterministic call order): 3 + 3
 * entries in one object with two sections, then 2 + 2 in a second. */
static int w_round(tu_cenv *e, w_st *s, int r) {
  if (s->sync)
    return w_round_sync(e, s, r);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.stepped = 1;
  o.object_retries = 0; /* a failed object write fails its entries (LS-038) */
  tarn_writer *w;
  int rc = tarn_writer_open(e->m, e->wal, &o, &w);
  if (rc)
    return rc;
  int first = 0;
  uint8_t buf[256];
  for (int i = 0; i < W_ROUND; i++) {
    size_t n = w_payload(r, i, buf);
    s->out[i].status = 1; /* never reported */
    s->append_rc[i] =
        tarn_writer_append(w, w_log(e, i), buf, n, (uint32_t)(1 + i % 3), w_cb, &s->out[i]);
    if (s->append_rc[i] && !first)
      first = s->append_rc[i];
    if (i == 5)
      tarn_writer_flush(w);
  }
  tarn_writer_flush(w);
  rc = tarn_writer_close(w);
  for (int i = 0; i < W_ROUND; i++) {
    if (s->append_rc[i] == 0) /* LS-039: queued entries get exactly one outcome */
      assert_int_equal(s->out[i].done, 1);
    else
      assert_int_equal(s->out[i].done, 0);
    if (!first && s->append_rc[i] == 0 && s->out[i].status)
      first = s->out[i].status;
  }
  return first ? first : rc;
}

static int w_run(tu_cenv *e, void *st) { return w_round(e, st, 0); }

/* Which entry of which round a payload is; -1 when none. */
static int w_which(const tu_snap_ent *x, int *round) {
  int r, i, n = 0;
  char tmp[64];
  size_t l = x->len < 63 ? x->len : 63;
  memcpy(tmp, x->payload, l);
  tmp[l] = 0;
  if (sscanf(tmp, "round %d entry %d %n", &r, &i, &n) != 2 || i < 0 || i >= W_ROUND)
    return -1;
  uint8_t buf[256];
  size_t want = w_payload(r, i, buf);
  if (want != x->len || memcmp(buf, x->payload, want) != 0)
    return -1;
  *round = r;
  return i;
}

/* LS-037, LS-038, LS-039: an acknowledged entry reads back exactly once at
 * its offset; an entry reported failed (other than TARN_EUNKNOWN) is not
 * readable; nothing else is readable; offsets are contiguous. */
static void w_check_round(tu_cenv *e, const w_st *s, int r, int all_ok) {
  for (int lg = 0; lg < 2; lg++) {
    tu_snap sn;
    tu_snapshot(e, e->logs[lg], &sn);
    assert_contiguous(&sn);
    int seen[W_ROUND] = {0};
    for (size_t j = 0; j < sn.n; j++) {
      int rr = -1, i = w_which(&sn.v[j], &rr);
      assert_true(i >= 0);
      assert_true(w_log(e, i) == e->logs[lg]);
      if (rr != r)
        continue;
      seen[i]++;
      assert_int_equal(sn.v[j].count, 1 + i % 3);
      if (s->out[i].status == 0)
        assert_int_equal(sn.v[j].offset, s->out[i].offset);
    }
    for (int i = 0; i < W_ROUND; i++) {
      if (w_log(e, i) != e->logs[lg])
        continue;
      if (s->append_rc[i] || (s->out[i].status && s->out[i].status != TARN_EUNKNOWN))
        assert_int_equal(seen[i], 0);
      else if (s->out[i].status == 0)
        assert_int_equal(seen[i], 1);
      else
        assert_true(seen[i] <= 1);
      if (all_ok && !s->append_rc[i])
        assert_int_equal(seen[i], 1);
    }
    tu_snap_free(&sn);
  }
}

static void w_check(tu_cenv *e, void *st, const fault *f, int rc) {
  w_st *s = st;
  if (rc == 0) /* the procedure reported success: every entry acknowledged */
    for (int i = 0; i < W_ROUND; i++)
      if (!s->append_rc[i])
        assert_int_equal(s->out[i].status, 0);
  w_check_round(e, s, 0, f->target == TGT_NONE);
  assert_fsck_clean(e, f, "writer round");
}

/* A new round after the faults appends every entry, after what is there. */
static void w_finish(tu_cenv *e, void *st, const fault *f, void *clean) {
  (void)clean;
  w_st s2;
  memset(&s2, 0, sizeof s2);
  s2.sync = ((w_st *)st)->sync;
  if (w_round(e, &s2, 1))
    fail_msg("writer round again after fault %s #%" PRIu64 ": %s", tgt_name(f->target), f->k,
             tarn_errmsg());
  w_check_round(e, &s2, 1, 1);
  w_check_round(e, st, 0, f->target == TGT_NONE);
  assert_fsck_clean(e, f, "writer round, after a retry");
  for (int i = 0; i < 2; i++)
    assert_no_lease(e, e->logs[i], f, "writer round, after a retry");
}

static void w_free(void *st) { (void)st; }

static void writer_round(void **state) {
  (void)state;
  proc p = {"writer round", 2, w_prepare, w_run, w_check, w_finish, sizeof(w_st), w_free};
  every_fault(&p);
}

static void writer_append_sync(void **state) {
  (void)state;
  proc p = {"writer append_sync", 2,     w_prepare_sync, w_run, w_check, w_finish,
            sizeof(w_st),         w_free};
  every_fault(&p);
}

/* ---- compaction through the step API ------------------------------------- */

typedef struct c_st {
  tu_snap before;
  size_t n_compacted; /* after the run: objects in the compacted root */
} c_st;

static void c_prepare(tu_cenv *e, void *st) {
  c_st *s = st;
  tu_append(e, e->log, 0, 12, 4); /* 3 RAW records */
  tu_snapshot(e, e->log, &s->before);
}

static tarn_compactor *c_open(tu_cenv *e) {
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  o.max_file_bytes = 1000; /* several files */
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(e->m, e->wal, e->compacted, &o, &c), 0);
  return c;
}

static int c_run(tu_cenv *e, void *st) {
  (void)st;
  tarn_compactor *c = c_open(e);
  tarn_compact_lock *lk = NULL;
  tarn_compact_range r;
  memset(&r, 0, sizeof r);
  int outcome = -1;
  int rc = tarn_compact_lock_acquire(e->m, e->log, "iofault", &lk);
  if (!rc)
    rc = tarn_compact_repair(c, e->log, NULL);
  if (!rc)
    rc = tarn_compact_plan(c, e->log, 1, &r);
  if (!rc)
    rc = tarn_compact_write(c, &r);
  if (!rc)
    rc = tarn_compact_install(c, &r, &outcome);
  if (!rc && outcome != TARN_INSTALL_DONE)
    rc = TARN_ECONFLICT;
  int rl = tarn_compact_lock_release(lk);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  return rc ? rc : rl;
}

/* No data lost whatever step failed: C2 before C3 (LS-069), C3 a Put of the
 * range's last key so the entries read from one record or the other (LS-070),
 * C4 only after C3 (LS-071). */
static void c_check(tu_cenv *e, void *st, const fault *f, int rc) {
  (void)rc;
  c_st *s = st;
  tu_snap now;
  tu_snapshot(e, e->log, &now);
  assert_int_equal(now.n, s->before.n);
  tu_snap_assert_same(&s->before, &now);
  assert_contiguous(&now);
  tu_snap_free(&now);
  assert_fsck_clean(e, f, "compaction");
}

/* A retry (tarn_compact_once, as a task would) finishes: no RAW record left
 * (LS-078 when C3 had taken effect), the entries the same. */
static void c_finish(tu_cenv *e, void *st, const fault *f, void *clean) {
  c_st *s = st;
  tarn_compactor *c = c_open(e);
  int did = 1;
  while (did) {
    int rc = tarn_compact_once(c, e->log, 1, NULL, &did);
    if (rc)
      fail_msg("compaction retry after fault %s #%" PRIu64 " %s: %s", tgt_name(f->target), f->k,
               f->after ? "after" : "before", tarn_errmsg());
  }
  tarn_compactor_close(c);
  tarn_compact_lag lag;
  assert_int_equal(tarn_compact_lag_read(e->m, e->log, 0, &lag), 0);
  assert_int_equal(lag.raw_records, 0);
  assert_int_equal(index_count(e, e->log), 1);
  uint64_t prog;
  assert_int_equal(tarn_compact_progress_read(e->m, e->log, &prog), 0);
  uint64_t end = s->before.v[s->before.n - 1].offset + s->before.v[s->before.n - 1].count;
  /* C5 (LS-072, a MAY) is retried within install; an outage that outlasts
   * those attempts leaves the progress record behind until the log's next
   * install (nothing reads it but tests), never ahead of the index */
  if (f->persist)
    assert_true(prog <= end);
  else
    assert_int_equal(prog, end);
  c_check(e, st, f, 0);
  assert_no_lease(e, e->log, f, "compaction, after a retry");
  s->n_compacted = count_objects(e->compacted);
  if (clean) /* a failed C2 leaves at most orphans, never fewer files */
    assert_true(s->n_compacted >= ((c_st *)clean)->n_compacted);
}

static void c_free(void *st) { tu_snap_free(&((c_st *)st)->before); }

static void compaction(void **state) {
  (void)state;
  proc p = {"compaction", 1, c_prepare, c_run, c_check, c_finish, sizeof(c_st), c_free};
  every_fault(&p);
}

/* ---- soft + hard trim ---------------------------------------------------- */

#define T_THROUGH 9 /* soft trim through this offset */

typedef struct t_st {
  tu_snap before;
  uint64_t b0;   /* B before */
  uint64_t want; /* B after a complete trim */
  int soft_rc;   /* the soft trim's result, and the marker it reported */
  uint64_t stored;
} t_st;

static void t_prepare(tu_cenv *e, void *st) {
  t_st *s = st;
  tu_append(e, e->log, 0, 16, 4); /* 4 RAW records */
  /* an earlier trim, so the run must not lower B */
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(e->m, e->log, &l), 0);
  assert_int_equal(tarn_soft_trim(e->m, l, 2, &s->b0), 0);
  assert_int_equal(tarn_lease_release(l), 0);
  tu_snapshot(e, e->log, &s->before);
  tarn_log_bounds bd;
  assert_int_equal(tarn_log_bounds_read(e->m, e->log, &bd), 0);
  s->want = T_THROUGH + 1 < bd.last_start ? T_THROUGH + 1 : bd.last_start;
  assert_true(s->want > s->b0);
}

static int t_run(tu_cenv *e, void *st) {
  t_st *s = st;
  s->soft_rc = 1; /* not run */
  tarn_lease *l;
  int rc = tarn_lease_acquire(e->m, e->log, &l);
  if (rc)
    return rc;
  uint64_t b = 0;
  rc = s->soft_rc = tarn_soft_trim(e->m, l, T_THROUGH, &b);
  s->stored = b;
  if (!rc)
    rc = tarn_hard_trim(e->m, l, b, NULL);
  int rl = tarn_lease_release(l);
  return rc ? rc : rl;
}

/* LS-079: B never decreases, and is the old or the new value; LS-081: the
 * last record stays and every entry above B reads as before. */
static void t_check(tu_cenv *e, void *st, const fault *f, int rc) {
  (void)rc;
  t_st *s = st;
  uint64_t b = trim_of(e, e->log);
  assert_true(b == s->b0 || b == s->want);
  if (s->soft_rc == 0) /* LS-080: the marker reported is the one stored */
    assert_int_equal(s->stored, b);
  tu_snap now;
  tu_snapshot(e, e->log, &now);
  assert_true(now.n > 0);
  assert_contiguous(&now);
  tu_snap_assert_same(&s->before, &now);
  /* every entry ending above B is still there */
  size_t above = 0;
  for (size_t i = 0; i < s->before.n; i++)
    above += s->before.v[i].offset + s->before.v[i].count > b;
  size_t got = 0;
  for (size_t i = 0; i < now.n; i++)
    got += now.v[i].offset + now.v[i].count > b;
  assert_int_equal(got, above);
  tu_snap_free(&now);
  assert_fsck_clean(e, f, "trim");
}

static void t_finish(tu_cenv *e, void *st, const fault *f, void *clean) {
  (void)clean;
  t_st *s = st;
  if (t_run(e, st))
    fail_msg("trim retry after fault %s #%" PRIu64 " %s: %s", tgt_name(f->target), f->k,
             f->after ? "after" : "before", tarn_errmsg());
  assert_int_equal(trim_of(e, e->log), s->want);
  /* the hard trim removed every record ending at or below B but the last */
  char part[32], a[TARN_KEY_LEN + 1], z[TARN_KEY_LEN + 1];
  tarn_key_partition(part, e->log);
  tarn_key_format(a, e->log, 0, 0);
  tarn_key_format(z, e->log, s->want, TARN_KEY_MAX);
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_list(e->m, part, a, z, 0, 0, &rs), 0);
  assert_int_equal(rs.n, 0);
  tarn_meta_recs_free(&rs);
  t_check(e, st, f, 0);
  assert_no_lease(e, e->log, f, "trim, after a retry");
}

static void t_free(void *st) { tu_snap_free(&((t_st *)st)->before); }

static void trim(void **state) {
  (void)state;
  proc p = {"soft + hard trim", 1, t_prepare, t_run, t_check, t_finish, sizeof(t_st), t_free};
  every_fault(&p);
}

/* ---- reclamation --------------------------------------------------------- */

static int64_t now_ms;

#define R_GRACE 10000

typedef struct r_st {
  tu_snap before;            /* entries above B */
  size_t n_wal, n_compacted; /* objects after the final pass */
} r_st;

/* One compacted record whose files are all trimmed (step 1), WAL objects only
 * the compacted record named (step 2), and one orphan range (step 3). */
static void r_prepare(tu_cenv *e, void *st) {
  r_st *s = st;
  now_ms = 1000000;
  tu_append(e, e->log, 0, 8, 4);
  tarn_compactor *c = c_open(e);
  int did;
  assert_int_equal(tarn_compact_once(c, e->log, 1, NULL, &did), 0);
  assert_int_equal(did, 1);
  tu_append(e, e->log, 8, 8, 4);
  /* an orphan: C2 of the RAW records, never installed */
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, e->log, 1, &r), 0);
  assert_int_equal(tarn_compact_write(c, &r), 0);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  tarn_lease *l;
  uint64_t b;
  assert_int_equal(tarn_lease_acquire(e->m, e->log, &l), 0);
  assert_int_equal(tarn_soft_trim(e->m, l, 9, &b), 0);
  assert_int_equal(tarn_lease_release(l), 0);
  tu_snapshot(e, e->log, &s->before);
}

static int r_pass(tu_cenv *e) {
  tarn_reclaim_options o;
  tarn_reclaim_options_default(&o);
  o.wal_grace_ms = R_GRACE;
  o.orphan_grace_ms = R_GRACE;
  return tu_reclaim_pass_at(now_ms, e->m, e->wal, e->compacted, &o, NULL);
}

/* The first pass marks what is unreferenced, the second confirms the marks
 * (LS-086: the grace counts from there); the third, past the grace period,
 * deletes. */
static int r_run(tu_cenv *e, void *st) {
  (void)st;
  now_ms = 1000000;
  int rc = r_pass(e);
  now_ms += 1000;
  int rc2 = r_pass(e);
  now_ms += R_GRACE + 1;
  int rc3 = r_pass(e);
  return rc ? rc : rc2 ? rc2 : rc3;
}

/* LS-085: nothing a record names is gone (fsck), the entries above B read as
 * before. */
static void r_check(tu_cenv *e, void *st, const fault *f, int rc) {
  (void)rc;
  r_st *s = st;
  tu_snap now;
  tu_snapshot(e, e->log, &now);
  assert_int_equal(now.n, s->before.n);
  tu_snap_assert_same(&s->before, &now);
  tu_snap_free(&now);
  assert_fsck_clean(e, f, "reclamation");
}

/* Passes after the faults (one more pass and grace period, for a first-seen
 * record a fault kept from being written or confirmed) leave exactly what
 * the clean run left. */
static void r_finish(tu_cenv *e, void *st, const fault *f, void *clean) {
  r_st *s = st;
  for (int i = 0; i < 3; i++) {
    now_ms += R_GRACE + 1;
    if (r_pass(e))
      fail_msg("reclamation retry after fault %s #%" PRIu64 " %s: %s", tgt_name(f->target), f->k,
               f->after ? "after" : "before", tarn_errmsg());
  }
  r_check(e, st, f, 0);
  s->n_wal = count_objects(e->wal);
  s->n_compacted = count_objects(e->compacted);
  if (clean) {
    assert_int_equal(s->n_wal, ((r_st *)clean)->n_wal);
    assert_int_equal(s->n_compacted, ((r_st *)clean)->n_compacted);
  }
  assert_true(index_count(e, e->log) >= 1); /* LS-081: the last record stays */
}

static void r_free(void *st) { tu_snap_free(&((r_st *)st)->before); }

static void reclamation(void **state) {
  (void)state;
  proc p = {"reclamation", 1, r_prepare, r_run, r_check, r_finish, sizeof(r_st), r_free};
  every_fault(&p);
}

/* ---- reading ------------------------------------------------------------- */

typedef struct rd_st {
  tu_snap all;   /* the log as a reader without faults returns it */
  size_t n_read; /* entries the faulted read returned before its error */
  int bad;       /* an entry that differs from all's */
} rd_st;

/* A PARQUET record (two files) and RAW records after it. */
static void rd_prepare(tu_cenv *e, void *st) {
  rd_st *s = st;
  tu_append(e, e->log, 0, 8, 4);
  tarn_compactor *c = c_open(e);
  int did;
  assert_int_equal(tarn_compact_once(c, e->log, 1, NULL, &did), 0);
  tarn_compactor_close(c);
  tu_append(e, e->log, 8, 6, 3);
  tu_snapshot(e, e->log, &s->all);
  assert_int_equal(s->all.n, 14);
}

/* Reads the whole log with a fresh reader (no caches); stops at an error. */
static int rd_run(tu_cenv *e, void *st) {
  rd_st *s = st;
  tarn_reader_options ro;
  tarn_reader_options_default(&ro);
  ro.index_ttl_ms = 0;
  ro.head_cache_bytes = 0;
  tarn_reader *r;
  int rc = tarn_reader_open(e->m, e->wal, e->compacted, &ro, &r);
  if (rc)
    return rc;
  tarn_log_iter *it = NULL;
  rc = tarn_log_iter_open(r, e->log, 0, &it);
  s->n_read = 0;
  while (!rc) {
    tarn_entry en;
    rc = tarn_log_iter_next(it, &en, 0);
    if (rc)
      break;
    const tu_snap_ent *x = s->n_read < s->all.n ? &s->all.v[s->n_read] : NULL;
    if (!x || x->offset != en.offset || x->count != en.record_count || x->ts != en.timestamp_ms ||
        x->len != en.payload_len || memcmp(x->payload, en.payload, x->len) != 0)
      s->bad = 1;
    s->n_read++;
  }
  if (it)
    tarn_log_iter_close(it);
  tarn_reader_close(r);
  return rc == TARN_EEND ? 0 : rc;
}

/* A failed call gives an error, never a wrong or a skipped entry: what was
 * read is a prefix of the log, all of it when the read succeeded. */
static void rd_check(tu_cenv *e, void *st, const fault *f, int rc) {
  (void)e;
  rd_st *s = st;
  if (s->bad)
    fail_msg("read, fault %s #%" PRIu64 " %s: entry %zu differs", tgt_name(f->target), f->k,
             f->after ? "after" : "before", s->n_read - 1);
  if (rc == 0)
    assert_int_equal(s->n_read, s->all.n);
  else
    assert_true(s->n_read < s->all.n);
}

static void rd_finish(tu_cenv *e, void *st, const fault *f, void *clean) {
  (void)clean;
  if (rd_run(e, st))
    fail_msg("read again after fault %s #%" PRIu64 ": %s", tgt_name(f->target), f->k,
             tarn_errmsg());
  rd_check(e, st, f, 0);
}

static void rd_free(void *st) { tu_snap_free(&((rd_st *)st)->all); }

static void reading(void **state) {
  (void)state;
  proc p = {"read", 1, rd_prepare, rd_run, rd_check, rd_finish, sizeof(rd_st), rd_free};
  every_fault(&p);
}

/* ---- dropping a stream (log deletion) ------------------------------------ */

typedef struct d_st {
  size_t records[2];
} d_st;

static void d_prepare(tu_cenv *e, void *st) {
  d_st *s = st;
  tu_append(e, e->logs[0], 0, 8, 4);
  tu_append(e, e->logs[1], 0, 4, 4);
  for (int i = 0; i < 2; i++)
    s->records[i] = index_count(e, e->logs[i]);
}

static int d_run(tu_cenv *e, void *st) {
  (void)st;
  tarn_catalog_options o = {.drain_timeout_ms = 50, .drain_poll_ms = 5};
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(e->m, &o, &cat), 0);
  int rc = tarn_catalog_drop_stream(cat, "ns", "s1", NULL);
  tarn_catalog_close(cat);
  return rc;
}

static int fenced(tu_cenv *e, uint64_t log) {
  tarn_lease *l;
  int rc = tarn_lease_acquire(e->m, log, &l);
  if (rc == 0)
    tarn_lease_release(l);
  assert_true(rc == 0 || rc == TARN_EFENCED);
  return rc == TARN_EFENCED;
}

/* LS-046: a log's records go only after its fence is in place; a log either
 * keeps all its records or none (one DeleteRange). */
static void d_check(tu_cenv *e, void *st, const fault *f, int rc) {
  d_st *s = st;
  for (int i = 0; i < 2; i++) {
    size_t n = index_count(e, e->logs[i]);
    assert_true(n == s->records[i] || n == 0);
    if (n == 0)
      assert_true(fenced(e, e->logs[i]));
  }
  if (rc == 0) {
    tarn_catalog *cat;
    assert_int_equal(tarn_catalog_open(e->m, NULL, &cat), 0);
    assert_int_equal(tarn_catalog_is_dropped(cat, "ns", "s1"), 1);
    tarn_catalog_record r;
    assert_int_equal(tarn_catalog_open_stream(cat, "ns", "s1", &r), TARN_ENOTFOUND);
    tarn_catalog_close(cat);
    for (int i = 0; i < 2; i++)
      assert_int_equal(index_count(e, e->logs[i]), 0);
  }
  assert_fsck_clean(e, f, "drop stream");
}

/* Dropping again completes: the stream gone, its logs fenced and empty. */
static void d_finish(tu_cenv *e, void *st, const fault *f, void *clean) {
  (void)clean;
  if (d_run(e, st))
    fail_msg("drop retry after fault %s #%" PRIu64 " %s: %s", tgt_name(f->target), f->k,
             f->after ? "after" : "before", tarn_errmsg());
  d_check(e, st, f, 0);
  for (int i = 0; i < 2; i++)
    assert_true(fenced(e, e->logs[i]));
}

static void d_free(void *st) { (void)st; }

static void drop_stream(void **state) {
  (void)state;
  proc p = {"drop stream", 2, d_prepare, d_run, d_check, d_finish, sizeof(d_st), d_free};
  every_fault(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(writer_round), cmocka_unit_test(writer_append_sync),
      cmocka_unit_test(compaction),   cmocka_unit_test(trim),
      cmocka_unit_test(reclamation),  cmocka_unit_test(drop_stream),
      cmocka_unit_test(reading),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
