/* The simulated world: actors, faults and the scheduler (docs/simulation.md). */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_watchdog.h"
#include "tarn/catalog.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/testing.h"
#include "tarn/parquet.h"
#include "tarn/reclaim.h"
#include "tarn/timing.h"
#include "tarn/trim.h"
#include "util/clock.h"
#include "util/planted.h"
#include "util/random.h"

#define EPOCH_MS INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
/* longer than the stale reader's index cache (60 s) */

const char *const sim_fault_names[] = {"object", "meta",  "crash",   "expiry", "skew", "slow",
                                       "zombie", "stall", "c3crash", "read",   NULL};

/* ---- randomness, clock, trace ------------------------------------------------------- */

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

uint64_t sim_rand(sim *s) { return splitmix(&s->rng); }

uint64_t sim_below(sim *s, uint64_t n) { return n ? sim_rand(s) % n : 0; }

static int chance(sim *s, unsigned per_mille) { return sim_below(s, 1000) < per_mille; }

static sim *g_sim; /* the one simulation running: the hooks and callbacks find it here */

/* The running process's wall clock: true time plus its skew. */
int64_t sim_clock(void *ctx) {
  sim *s = ctx;
  return s->now + s->skew[s->proc];
}

static int64_t hook_now(void *arg) { return sim_clock(arg); }
/* Monotonic clocks never go back; each process's has its own origin. */
static int64_t hook_mono(void *arg) {
  sim *s = arg;
  return s->now - EPOCH_MS + 1000000 + 7919 * s->proc;
}
static int64_t hook_store_now(void *arg) {
  sim *s = arg;
  return s->now + s->store_skew;
}

/* The store's clock is the one the protocol trusts: its steps must stay
 * within the deployment's skew allowance (10 s), so its skew stays within
 * +-5 s; the processes' clocks may be off by up to a minute (max_skew). */
#define SIM_STORE_MAX_SKEW_MS 5000
static int64_t store_skew_of(const sim *s, int64_t v) {
  return s->max_skew > SIM_STORE_MAX_SKEW_MS ? v * SIM_STORE_MAX_SKEW_MS / s->max_skew : v;
}

/* Now and then one clock (a process's or the store's) is reset to another
 * skew within +-max_skew: an NTP step, forwards or backwards. */
static void clocks_drift(sim *s) {
  if (!chance(s, s->p_skew) || !s->max_skew)
    return;
  int p = (int)sim_below(s, SIM_NPROCS + 1);
  int64_t v = (int64_t)sim_below(s, (uint64_t)(2 * s->max_skew + 1)) - s->max_skew;
  if (p == SIM_NPROCS)
    sim_store_skew_set(s, v = store_skew_of(s, v));
  else if (p != PROC_CHECK)
    s->skew[p] = v;
  if (p == SIM_NPROCS)
    sim_trace(s, "the store's clock is set to skew %+" PRId64 " ms", v);
  else
    sim_trace(s, "process %d's clock is set to skew %+" PRId64 " ms", p, v);
}
static void hook_sleep(void *arg, int64_t ms) {
  if (ms > 0)
    ((sim *)arg)->now += ms;
}
static void hook_random(void *arg, void *p, size_t n) {
  sim *s = arg;
  uint8_t *b = p;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = splitmix(&s->lib_rng);
    for (size_t k = 0; k < 8 && i + k < n; k++)
      b[i + k] = (uint8_t)(v >> (8 * k));
  }
}

void sim_trace(sim *s, const char *fmt, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "[%d +%" PRId64 "ms] ", s->step, s->now - EPOCH_MS);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  size_t len = strlen(line);
  for (size_t i = 0; i < len; i++) { /* FNV-1a over every line */
    s->hash ^= (uint8_t)line[i];
    s->hash *= 0x100000001b3u;
  }
  if (s->tlen + len + 2 > s->tcap) {
    size_t nc = s->tcap ? s->tcap * 2 : 1 << 16;
    while (nc < s->tlen + len + 2)
      nc *= 2;
    char *t = realloc(s->trace, nc);
    if (!t)
      abort();
    s->trace = t;
    s->tcap = nc;
  }
  memcpy(s->trace + s->tlen, line, len);
  s->tlen += len;
  s->trace[s->tlen++] = '\n';
  s->trace[s->tlen] = 0;
  if (s->verbose)
    printf("%s\n", line);
}

#define SIM_PROP_NAME(name, src) #name,
#define SIM_PROP_SOURCE(name, src) src,
const char *const sim_prop_names[] = {SIM_PROPERTIES(SIM_PROP_NAME) NULL};
const char *const sim_prop_sources[] = {SIM_PROPERTIES(SIM_PROP_SOURCE) NULL};

void sim_fail(sim *s, int property, const char *fmt, ...) {
  if (s->failed)
    return;
  s->failed_prop = property;
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  s->failed = 1;
  snprintf(s->failure, sizeof s->failure, "%s: %s", sim_prop_names[property], msg);
  sim_trace(s, "VIOLATION %s", s->failure);
}

/* The bytes of entry id: its id (8 bytes, little-endian), then a stream drawn
 * from (id, log), so that any read-back names its append and its bytes. */
void sim_payload(uint64_t id, uint64_t log, uint8_t *out, size_t len) {
  uint64_t x = id * 0x2545f4914f6cdd1du ^ log;
  for (size_t i = 0; i < len; i++) {
    if (i < 8)
      out[i] = (uint8_t)(id >> (8 * i));
    else {
      if ((i - 8) % 8 == 0)
        x = splitmix(&x);
      out[i] = (uint8_t)(x >> (8 * ((i - 8) % 8)));
    }
  }
}

/* ---- actors ------------------------------------------------------------------------- */

static int open_meta(sim *s, tarn_meta **m) {
  int rc = tarn_meta_open(s->meta_uri, m);
  if (rc)
    fprintf(stderr, "tarn-sim: %s: %s\n", s->meta_uri, tarn_errmsg());
  return rc;
}

static void writer_start(sim *s, int i) {
  s->proc = PROC_W0 + i;
  sim_writer *w = &s->wr[i];
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.stepped = 1;
  o.batch_ms = (uint32_t)(20 + sim_below(s, 200));
  o.max_object_bytes = 256 + sim_below(s, 2048);
  o.max_logs_per_object = 1 + sim_below(s, 3);
  o.max_bytes_in_flight = 8192;
  o.object_retries = (int)sim_below(s, 3);
  o.max_publish_delay_ms = 30000; /* half the reclaimer's WAL grace (61 s) */
  o.max_put_ms = 10000;
  if (open_meta(s, &w->meta) || tarn_objstore_open(s->wal_uri, &w->wal) ||
      tarn_writer_open(w->meta, w->wal, &o, &w->w))
    abort();
  w->alive = 1;
  w->tell_at = 0;
  w->incarnation++;
  memset(w->have_last, 0, sizeof w->have_last);
  sim_trace(s, "w%d start (incarnation %d, batch %u ms, object %zu B, %zu logs/object, %d retries)",
            i, w->incarnation, o.batch_ms, o.max_object_bytes, o.max_logs_per_object,
            o.object_retries);
}

/* A clean stop: close flushes (every pending entry gets its outcome) and
 * releases the leases. */
static void writer_stop(sim *s, int i) {
  s->proc = PROC_W0 + i;
  sim_writer *w = &s->wr[i];
  int rc = tarn_writer_close(w->w);
  sim_trace(s, "w%d stop -> %d", i, rc);
  tarn_meta_close(w->meta);
  tarn_objstore_close(w->wal);
  w->w = NULL;
  w->meta = NULL;
  w->wal = NULL;
  w->alive = 0;
}

/* A crash: memory lost, stores kept; the session lives on until it expires. */
static void writer_crash(sim *s, int i) {
  s->proc = PROC_W0 + i;
  sim_writer *w = &s->wr[i];
  tarn_writer_discard(w->w);
  tarn_objstore_close(w->wal);
  int64_t ttl = 50 + (int64_t)sim_below(s, 3000);
  if (s->nzombies < SIM_MAX_ZOMBIES) {
    s->zombies[s->nzombies].meta = w->meta;
    s->zombies[s->nzombies++].expire_at = s->now + ttl;
  } else {
    tarn_meta_close(w->meta);
    ttl = 0;
  }
  size_t lost = 0;
  for (size_t k = 0; k < s->nents; k++)
    if (s->ents[k].status == E_PENDING && s->ents[k].writer == i) {
      s->ents[k].status = E_UNKNOWN; /* its outcome was never delivered */
      lost++;
    }
  s->st.crashes++;
  sim_trace(s, "w%d CRASH (%zu entries of unknown outcome; session expires in %" PRId64 " ms)", i,
            lost, ttl);
  w->w = NULL;
  w->meta = NULL;
  w->wal = NULL;
  w->alive = 0;
}

/* S1: no two acknowledged entries of a log share an offset — a deleted log's
 * offsets stay taken too (its acknowledged ranges are never forgotten). */
static void check_no_duplicate(sim *s, size_t id) {
  sim_entry *e = &s->ents[id];
  sim_log *lg = &s->logs[e->log - 1];
  uint64_t lo = e->offset, hi = e->offset + e->records;
  size_t a = 0, b = lg->nacked;
  while (a < b) { /* the first range starting at or above lo */
    size_t m = (a + b) / 2;
    if (lg->acked[m][0] < lo)
      a = m + 1;
    else
      b = m;
  }
  SIM_CHECKED(s, P_NoOffsetDuplicates);
  if ((a < lg->nacked && lg->acked[a][0] < hi) || (a > 0 && lg->acked[a - 1][1] > lo)) {
    sim_fail(s, P_NoOffsetDuplicates,
             "log %" PRIu64 ": entry %zu acknowledged at [%" PRIu64 ", %" PRIu64
             "), offsets already acknowledged to another entry",
             e->log, id, lo, hi);
    return;
  }
  if (lg->nacked == lg->capacked) {
    lg->capacked = lg->capacked ? lg->capacked * 2 : 256;
    if (!(lg->acked = realloc(lg->acked, lg->capacked * sizeof *lg->acked)))
      abort();
  }
  memmove(lg->acked + a + 1, lg->acked + a, (lg->nacked - a) * sizeof *lg->acked);
  lg->acked[a][0] = lo;
  lg->acked[a][1] = hi;
  lg->nacked++;
}

/* S2, per writer: a writer's entries of a log are acknowledged at offsets in
 * the order it accepted them. */
static void check_writer_order(sim *s, size_t id) {
  sim_entry *e = &s->ents[id];
  sim_writer *w = &s->wr[e->writer];
  size_t L = e->log - 1;
  SIM_CHECKED(s, P_MonotonicOffsets);
  if (w->have_last[L] && ((id > w->last_id[L]) != (e->offset > w->last_off[L])))
    sim_fail(s, P_MonotonicOffsets,
             "w%d log %" PRIu64 ": entry %zu acknowledged at %" PRIu64
             ", entry %zu (appended %s) at %" PRIu64,
             e->writer, e->log, w->last_id[L], w->last_off[L], id,
             id > w->last_id[L] ? "later" : "earlier", e->offset);
  if (!w->have_last[L] || id > w->last_id[L]) {
    w->have_last[L] = 1;
    w->last_id[L] = id;
    w->last_off[L] = e->offset;
  }
}

static void append_cb(void *arg, int status, uint64_t offset, int64_t ts) {
  sim *s = g_sim;
  size_t id = (size_t)(uintptr_t)arg;
  sim_entry *e = &s->ents[id];
  SIM_CHECKED(s, P_OneOutcome);
  if (e->status != E_PENDING) {
    sim_fail(s, P_OneOutcome, "entry %zu got a second outcome (%d)", id, status);
    return;
  }
  if (status == 0) {
    e->status = E_ACKED;
    s->st.acked++;
    e->offset = offset;
    e->ts = ts;
    sim_trace(s, "  ack id %zu log %" PRIu64 " offset %" PRIu64 " ts +%" PRId64, id, e->log, offset,
              ts - EPOCH_MS);
    /* S3 (004: FENCED => no AssignOffset), through the session-loss window
     * too: an entry acknowledged after the fence took effect must have had
     * its offsets assigned before it, at or below the end the log had then */
    SIM_CHECKED(s, P_FencedRejectsAppends);
    const sim_log *lg = &s->logs[e->log - 1];
    if (lg->fence_known && offset + e->records > lg->fence_end)
      sim_fail(s, P_FencedRejectsAppends,
               "entry %zu was acknowledged on log %" PRIu64 " at [%" PRIu64 ", %" PRIu64
               "), offsets assigned after its fence took effect (end then %" PRIu64 ")",
               id, e->log, offset, offset + e->records, lg->fence_end);
    else if (lg->delete_done)
      sim_fail(s, P_FencedRejectsAppends,
               "entry %zu was acknowledged on log %" PRIu64 " (offset %" PRIu64
               ") after its deletion drained the leases",
               id, e->log, offset);
    check_no_duplicate(s, id);
    check_writer_order(s, id);
  } else {
    e->status = status == TARN_EUNKNOWN ? E_UNKNOWN : E_FAILED;
    if (status == TARN_EUNKNOWN)
      s->st.unknown++;
    else
      s->st.failed++;
    sim_trace(s, "  %s id %zu log %" PRIu64 " (%d)", status == TARN_EUNKNOWN ? "unknown" : "failed",
              id, e->log, status);
  }
}

/* Appends one entry through writer i, to log (0: a random log); its id. */
static size_t append_to(sim *s, int i, uint64_t log) {
  s->proc = PROC_W0 + i;
  sim_writer *w = &s->wr[i];
  if (s->nents == s->capents) {
    s->capents = s->capents ? s->capents * 2 : 1024;
    if (!(s->ents = realloc(s->ents, s->capents * sizeof *s->ents)))
      abort();
  }
  size_t id = s->nents++;
  sim_entry *e = &s->ents[id];
  memset(e, 0, sizeof *e);
  e->log = log ? log : 1 + sim_below(s, SIM_NLOGS);
  e->len = (uint32_t)(8 + sim_below(s, chance(s, 50) ? 3000 : 120));
  e->records = (uint32_t)(1 + sim_below(s, 3));
  e->writer = i;
  uint8_t buf[4096];
  sim_payload(id, e->log, buf, e->len);
  int rc =
      tarn_writer_append(w->w, e->log, buf, e->len, e->records, append_cb, (void *)(uintptr_t)id);
  if (s->logs[e->log - 1].delete_done)
    SIM_CHECKED(s, P_FencedRejectsAppends);
  if (rc)
    e->status = E_FAILED; /* never queued: the callback never runs */
  else if (s->logs[e->log - 1].delete_done && !w->tell_at)
    /* a zombie (its session ended at the store, it is not told yet) cannot
     * know: it may queue the entry, which its guarded A3 then fails (checked
     * at every acknowledgement) */
    sim_fail(s, P_FencedRejectsAppends,
             "w%d: an append to log %" PRIu64 " was accepted after its deletion drained the leases",
             i, e->log);
  sim_trace(s, "w%d append id %zu log %" PRIu64 " len %u records %u -> %d", i, id, e->log, e->len,
            e->records, rc);
  return id;
}

static void act_append(sim *s, int i) { append_to(s, i, 0); }

/* The fault strikes the next metadata write, or the one after skip more
 * (the reclaimer's: past its pass marks). */
static void arm_meta_fault_after(sim *s, tarn_meta *m, int skip) {
  if (!s->faults_on || !chance(s, s->p_meta_fault) || (s->without & SIM_NO_META))
    return;
  uint64_t k = sim_below(s, 10);
  int kind = k < 4   ? TARN_META_FAULT_FAIL
             : k < 8 ? TARN_META_FAULT_COMMIT_UNKNOWN
                     : TARN_META_FAULT_DELAY_COMMIT;
  if (kind == TARN_META_FAULT_DELAY_COMMIT && (s->without & SIM_NO_SLOW))
    kind = TARN_META_FAULT_COMMIT_UNKNOWN;
  if (skip)
    tarn_meta_inject_fault_after(m, kind, skip, 1);
  else
    tarn_meta_inject_fault(m, kind, 1);
  sim_trace(s,
            skip ? "  fault: a metadata write past the pass marks %s"
                 : "  fault: next metadata write %s",
            kind == TARN_META_FAULT_FAIL ? "fails"
            : kind == TARN_META_FAULT_COMMIT_UNKNOWN
                ? "commits but reports unknown"
                : "is held in flight (reports unknown, lands later)");
  if (kind == TARN_META_FAULT_DELAY_COMMIT)
    s->st.held++;
}

static void arm_meta_fault(sim *s, tarn_meta *m) { arm_meta_fault_after(s, m, 0); }

/* A write held in flight lands (on etcd: a request the client timed out on,
 * applied late). */
/* A request lands within this long of being sent, or never (on etcd the
 * client's request deadline). */
#define SIM_MAX_INFLIGHT_MS 10000

static void land(sim *s, tarn_meta *m, const char *who) {
  if (m && tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, SIM_MAX_INFLIGHT_MS) == 0) {
    s->st.landed++;
    sim_trace(s, "  a held metadata write of %s LANDS", who);
  }
}

static void clear_meta_fault(tarn_meta *m) { tarn_meta_inject_fault(m, TARN_META_FAULT_NONE, 0); }

static void arm_object_fault(sim *s) {
  if (!s->faults_on || !chance(s, s->p_obj_fault) || (s->without & SIM_NO_OBJECT))
    return;
  uint64_t count = 1 + sim_below(s, 3);
  int after = chance(s, 300);
  int code = after            ? TARN_EUNKNOWN
             : chance(s, 300) ? TARN_EUNAVAIL /* throttled: S3's 503 SlowDown */
             : chance(s, 500) ? TARN_EIO
                              : TARN_ETIMEDOUT;
  tarn_objstore_mem_fault(s->cwal, TARN_MEM_OP_PUT, 1, count,
                          after ? TARN_MEM_FAULT_AFTER : TARN_MEM_FAULT_BEFORE, code);
  sim_trace(s, "  fault: next %" PRIu64 " object puts fail %s (%d)", count,
            after ? "after writing" : "before writing", code);
}

int sim_arm_read_fault(sim *s, tarn_objstore *st, tarn_meta *m) {
  if (!s->faults_on || (s->without & SIM_NO_READ) || !chance(s, s->p_obj_fault))
    return 0;
  static const char *what[] = {"a GET fails",        "a throttling burst (503) on every call",
                               "a GET is cut short", "a GET's first byte is damaged",
                               "a LIST fails",       "a HEAD fails",
                               "a DELETE fails",     "a metadata read fails"};
  uint64_t k = sim_below(s, 8), nth = 1 + sim_below(s, 3);
  int rc = 0;
  switch (k) {
  case 0:
    rc = tarn_objstore_mem_fault(st, TARN_MEM_OP_GET, nth, 1, TARN_MEM_FAULT_BEFORE,
                                 chance(s, 500) ? TARN_EIO : TARN_ETIMEDOUT);
    break;
  case 1:
    rc = tarn_objstore_mem_fault(st, TARN_MEM_OP_ANY, nth, 2 + sim_below(s, 6),
                                 TARN_MEM_FAULT_BEFORE, TARN_EUNAVAIL);
    break;
  case 2:
  case 3:
    rc = tarn_objstore_mem_fault(st, TARN_MEM_OP_GET, nth, 1,
                                 k == 2 ? TARN_MEM_FAULT_TRUNCATE : TARN_MEM_FAULT_CORRUPT, 0);
    break;
  case 4:
  case 5:
    rc = tarn_objstore_mem_fault(st, k == 4 ? TARN_MEM_OP_LIST : TARN_MEM_OP_HEAD, nth, 1,
                                 TARN_MEM_FAULT_BEFORE, TARN_EIO);
    break;
  case 6: /* before, or applied with the reply lost */
    rc = tarn_objstore_mem_fault(st, TARN_MEM_OP_DELETE, nth, 1,
                                 chance(s, 500) ? TARN_MEM_FAULT_BEFORE : TARN_MEM_FAULT_AFTER,
                                 TARN_EIO);
    break;
  default: rc = m ? tarn_meta_inject_fault(m, TARN_META_FAULT_READ_FAIL, (int)nth) : -1;
  }
  if (rc)
    return 0;
  s->st.read_faults++;
  sim_trace(s, "  fault: %s (call %" PRIu64 ")", what[k], nth);
  return 1;
}

void sim_read_faults_clear(sim *s, tarn_meta *m) {
  tarn_objstore_mem_reset_faults(s->cwal);
  tarn_objstore_mem_reset_faults(s->ccmp);
  if (m)
    tarn_meta_inject_fault(m, TARN_META_FAULT_READ_FAIL, 0);
}

static void act_writer_step(sim *s, int i, int step) {
  s->proc = PROC_W0 + i;
  sim_writer *w = &s->wr[i];
  static const char *names[] = {"seal", "seal-due", "upload", "put"};
  if (step == TARN_WRITER_STEP_UPLOAD)
    arm_object_fault(s);
  if (step == TARN_WRITER_STEP_PUT)
    arm_meta_fault(s, w->meta);
  sim_trace(s, "w%d %s", i, names[step]);
  int rc = tarn_writer_step(w->w, step);
  SIM_CHECKED(s, P_StepError);
  if (rc < 0)
    sim_fail(s, P_StepError, "w%d step %s: %s", i, names[step], tarn_errmsg());
  tarn_objstore_mem_reset_faults(s->cwal);
  clear_meta_fault(w->meta);
}

static int acquire(sim *s, tarn_meta *m, uint64_t log, tarn_lease **l) {
  arm_meta_fault(s, m);
  int rc = tarn_lease_acquire(m, log, l);
  clear_meta_fault(m);
  /* LS-041, and S3's premise: no lease is granted once the fence exists */
  if (s->logs[log - 1].fence_known || s->logs[log - 1].delete_done)
    SIM_CHECKED(s, P_FencedRejectsAppends);
  if (rc == 0 && (s->logs[log - 1].fence_known || s->logs[log - 1].delete_done))
    sim_fail(
        s, P_FencedRejectsAppends, "a write lease on log %" PRIu64 " was granted after %s", log,
        s->logs[log - 1].fence_known ? "its fence took effect" : "its deletion drained the leases");
  if (rc)
    sim_trace(s, "  lease on log %" PRIu64 " -> %d", log, rc);
  return rc;
}

/* The trimmer restarts its session after a failed lease, whose record a
 * commit-unknown create could have left behind. */
static void trimmer_restart(sim *s) {
  s->proc = PROC_TRIM;
  tarn_meta_close(s->tmeta);
  if (open_meta(s, &s->tmeta))
    abort();
}

static uint64_t acked_end(sim *s, uint64_t log) {
  uint64_t end = 0;
  for (size_t k = 0; k < s->nents; k++) {
    sim_entry *e = &s->ents[k];
    if (e->log == log && e->status == E_ACKED && e->offset + e->records > end)
      end = e->offset + e->records;
  }
  return end;
}

static void act_soft_trim(sim *s) {
  s->proc = PROC_TRIM;
  uint64_t log = 1 + sim_below(s, SIM_NLOGS);
  tarn_lease *l;
  if (acquire(s, s->tmeta, log, &l)) {
    trimmer_restart(s);
    return;
  }
  uint64_t through = sim_below(s, acked_end(s, log) + 2);
  uint64_t stored = 0;
  arm_meta_fault(s, s->tmeta);
  int rc = tarn_soft_trim(s->tmeta, l, through, &stored);
  clear_meta_fault(s->tmeta);
  sim_trace(s, "trimmer soft trim log %" PRIu64 " through %" PRIu64 " -> %d stored %" PRIu64, log,
            through, rc, stored);
  sim_log *lg = &s->logs[log - 1];
  if (rc == 0 && stored > lg->soft_reported) {
    lg->soft_reported = stored;
    s->st.soft_trims++;
  }
  tarn_lease_release(l);
}

static void act_hard_trim(sim *s) {
  s->proc = PROC_TRIM;
  uint64_t log = 1 + sim_below(s, SIM_NLOGS);
  tarn_lease *l;
  if (acquire(s, s->tmeta, log, &l)) {
    trimmer_restart(s);
    return;
  }
  uint64_t b = 0;
  int rc = tarn_trim_marker_read(s->tmeta, log, &b, NULL);
  /* now and then a caller's mistake: x above B (LS-081: refused) */
  uint64_t x = rc ? 0 : chance(s, 100) ? b + 1 + sim_below(s, 20) : sim_below(s, b + 1);
  size_t removed = 0;
  arm_meta_fault(s, s->tmeta);
  if (!rc)
    rc = tarn_hard_trim(s->tmeta, l, x, &removed);
  clear_meta_fault(s->tmeta);
  s->st.hard_trimmed += removed;
  sim_trace(s, "trimmer hard trim log %" PRIu64 " to %" PRIu64 " (B %" PRIu64 ") -> %d removed %zu",
            log, x, b, rc, removed);
  tarn_lease_release(l);
}

/* The log's end offset now: the end of its greatest index key (0: none).
 * A3 creates a key at the new end in the same atomic step that advances the
 * counters, and no trim removes the last record, so this is the offset the
 * next assignment would start at. Read through the checker's session (no
 * fault is armed on it between checks); draws nothing from the seed. */
static uint64_t index_end(sim *s, uint64_t log) {
  char part[TARN_KEY_PARTITION_LEN + 1], z[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log);
  tarn_key_format(z, log, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_rec r = {0};
  tarn_key k;
  uint64_t end = 0;
  if (tarn_meta_floor(s->cmeta, part, z, &r) == 0 &&
      tarn_key_parse(r.key, strlen(r.key), &k) == 0 && k.log_id == log)
    end = k.end_offset;
  tarn_meta_rec_free(&r);
  return end;
}

/* S3 as 004 states it (FencedRejectsAppends: FENCED => no AssignOffset):
 * from the moment L's fence exists, not from the end of the deletion's drain.
 * Called after each step that can create the fence (the deleter's call, the
 * landing of a write the deleter had in flight) with L's end offset from
 * just before it: the first time the fence is there, that end is the fence's
 * (nothing else ran in between). sim_check.c and append_cb then demand that
 * no offset past it is ever assigned, and acquire() that no lease is granted.
 * (Stricter than the Storage Spec, whose fence only stops new leases and
 * lets leases taken before it publish until the drain: tarn's A3 is guarded
 * by the fence's absence, docs/durability.md §4.) */
static void fence_note(sim *s, uint64_t log, uint64_t end_before) {
  sim_log *lg = &s->logs[log - 1];
  if (lg->fence_known)
    return;
  char part[TARN_KEY_PARTITION_LEN + 1], fence[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, log);
  tarn_key_fence(fence, log);
  tarn_meta_rec f = {0};
  int there = tarn_meta_get(s->cmeta, part, fence, &f) == 0;
  tarn_meta_rec_free(&f);
  if (!there)
    return;
  lg->fence_known = 1;
  lg->fence_end = end_before;
  sim_trace(s, "  log %" PRIu64 " fenced at end %" PRIu64, log, end_before);
}

static void act_delete(sim *s) {
  s->proc = PROC_DEL;
  tarn_catalog_options o = {.drain_timeout_ms = 40, .drain_poll_ms = 10};
  size_t removed = 0;
  s->delete_started = 1;
  uint64_t end = index_end(s, SIM_DELETED_LOG);
  arm_meta_fault(s, s->dmeta);
  int rc = tarn_log_delete(s->dmeta, SIM_DELETED_LOG, &o, &removed);
  clear_meta_fault(s->dmeta);
  sim_trace(s, "deleter delete log %d -> %d removed %zu", SIM_DELETED_LOG, rc, removed);
  fence_note(s, SIM_DELETED_LOG, end);
  if (rc == 0) {
    s->logs[SIM_DELETED_LOG - 1].delete_done = 1;
    s->st.deletions++;
  }
}

static void reopen_stale(sim *s) {
  s->proc = PROC_CHECK;
  if (s->stale) {
    tarn_reader_stats rs;
    tarn_reader_stats_get(s->stale, &rs);
    s->st.stale_hits += rs.index_hits;
  }
  tarn_reader_close(s->stale);
  tarn_reader_options o;
  tarn_reader_options_default(&o);
  o.index_ttl_ms = 60000; /* holds index records across trims and compactions */
  if (tarn_reader_open(s->cmeta, s->cwal, s->ccmp, &o, &s->stale))
    abort();
  sim_trace(s, "stale reader reopened");
}

static void expire_zombies(sim *s) {
  for (size_t k = 0; k < s->nzombies;) {
    if (s->zombies[k].expire_at <= s->now) {
      tarn_meta_inject_fault(s->zombies[k].meta, TARN_META_FAULT_EXPIRE_SESSION, 0);
      /* a write the dead process had in flight may land after its session ended */
      if (chance(s, 500))
        land(s, s->zombies[k].meta, "a crashed process");
      tarn_meta_close(s->zombies[k].meta);
      sim_trace(s, "a crashed process's session expired");
      s->zombies[k] = s->zombies[--s->nzombies];
    } else
      k++;
  }
}

/* ---- compactors and the reclaimer --------------------------------------------------- */

static void act_reclaim(sim *s);
static void check_lock_holders(sim *s, uint64_t log, int ti, int ci);

/* Called by C2 after each entry: now and then C2 stalls for 5-150 s, and
 * reclamation passes run meanwhile — a C2 that spans reclamation passes. */
static void c2_progress(void *ctx, uint64_t done, uint64_t total) {
  sim *s = ctx;
  (void)done, (void)total;
  if (s->c2_paused || !s->faults_on || !chance(s, 40) || (s->without & SIM_NO_STALL))
    return;
  s->c2_paused = 1;
  s->st.c2_pauses++;
  int proc = s->proc;
  int64_t d = 5000 + (int64_t)sim_below(s, 145000);
  for (int k = 0; k < 3; k++) {
    s->now += d / 3;
    sim_trace(s, "  C2 stalls %" PRId64 " ms; a reclamation pass runs meanwhile", d / 3);
    act_reclaim(s);
  }
  s->proc = proc;
}

static void compactor_start(sim *s, int i) {
  s->proc = PROC_C0 + i;
  sim_compactor *c = &s->cp[i];
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  o.max_range_bytes = 500 + sim_below(s, 6000);
  o.max_age_ms = 200 + (int64_t)sim_below(s, 3000);
  o.max_file_bytes = 300 + sim_below(s, 3000);
  o.install_attempts = 1; /* a failed step stays visible until the next attempt */
  /* zstd's context setup dominated a step's cost; one compactor in eight uses it */
  static const int codecs[] = {TARN_PARQUET_UNCOMPRESSED, TARN_PARQUET_SNAPPY, TARN_PARQUET_SNAPPY,
                               TARN_PARQUET_UNCOMPRESSED, TARN_PARQUET_GZIP,   TARN_PARQUET_SNAPPY,
                               TARN_PARQUET_UNCOMPRESSED, TARN_PARQUET_ZSTD};
  o.codec = codecs[sim_below(s, 8)];
  o.progress = c2_progress;
  o.progress_ctx = s;
  if (open_meta(s, &c->meta) || tarn_objstore_open(s->wal_uri, &c->wal) ||
      tarn_objstore_open(s->cmp_uri, &c->cmp) ||
      tarn_compactor_open(c->meta, c->wal, c->cmp, &o, &c->c))
    abort();
  c->alive = 1;
  c->tell_at = 0;
  c->state = CP_IDLE;
  c->incarnation++;
  sim_trace(
      s, "c%d start (incarnation %d, range %" PRIu64 " B, age %" PRId64 " ms, file %" PRIu64 " B)",
      i, c->incarnation, o.max_range_bytes, o.max_age_ms, o.max_file_bytes);
}

/* Back to idle: the range is forgotten, the lock released. */
static void compactor_idle(sim_compactor *c) {
  tarn_compact_range_free(&c->r);
  memset(&c->r, 0, sizeof c->r);
  tarn_compact_lock_release(c->lock);
  c->lock = NULL;
  c->state = CP_IDLE;
}

/* A crash loses the range and keeps the session (and so the lock) until it
 * expires. Only before C3 may have taken effect: a range whose install began
 * must be finished (LS-078), which is the task layer's job (tarn/tasks.h),
 * not driven here. */
static void compactor_crash(sim *s, int i) {
  s->proc = PROC_C0 + i;
  sim_compactor *c = &s->cp[i];
  /* a crash inside an install (between C3 and C4, after a failed C4 left the
   * window open): the next compactor's plan finds it and repairs it */
  if (c->state == CP_INSTALLING && (s->without & SIM_NO_C3CRASH))
    return;
  tarn_compact_range_free(&c->r);
  memset(&c->r, 0, sizeof c->r);
  if (c->lock) {   /* the lock's record stays with the session */
    free(c->lock); /* (an opaque handle; freeing it touches no store) */
    c->lock = NULL;
  }
  tarn_compactor_close(c->c);
  tarn_objstore_close(c->wal);
  tarn_objstore_close(c->cmp);
  int64_t ttl = 50 + (int64_t)sim_below(s, 3000);
  if (s->nzombies < SIM_MAX_ZOMBIES) {
    s->zombies[s->nzombies].meta = c->meta;
    s->zombies[s->nzombies++].expire_at = s->now + ttl;
  } else
    tarn_meta_close(c->meta);
  s->st.crashes++;
  sim_trace(s, "c%d CRASH (session expires in %" PRId64 " ms)", i, ttl);
  memset(c, 0, offsetof(sim_compactor, incarnation));
}

/* After its session ended, a compactor reconnects; a range whose install
 * began is kept and retried (LS-078). */
static void compactor_reconnect(sim *s, int i) {
  s->proc = PROC_C0 + i;
  sim_compactor *c = &s->cp[i];
  tarn_compact_range keep = c->r;
  int state = c->state;
  int64_t written_at = c->written_at;
  memset(&c->r, 0, sizeof c->r);
  tarn_compact_lock_release(c->lock); /* the record went with the session */
  c->lock = NULL;
  tarn_compactor_close(c->c);
  tarn_objstore_close(c->wal);
  tarn_objstore_close(c->cmp);
  tarn_meta_close(c->meta);
  compactor_start(s, i);
  if (state == CP_INSTALLING) {
    c->r = keep;
    c->state = CP_INSTALLING;
    c->written_at = written_at;
  } else
    tarn_compact_range_free(&keep);
}

/* Has C3 of c's range taken effect (K(L, e, c_e) holds its value)? */
static int c3_took(sim *s, sim_compactor *c) {
  char part[TARN_KEY_PARTITION_LEN + 1], k[TARN_KEY_LEN + 1];
  tarn_key_partition(part, c->r.log_id);
  tarn_key_format(k, c->r.log_id, c->r.e, c->r.c_e);
  tarn_buf v = TARN_BUF_INIT;
  tarn_meta_rec rec = {0};
  int took = tarn_compact_value(&c->r, &v) == 0 && tarn_meta_get(s->cmeta, part, k, &rec) == 0 &&
             rec.value_len == v.len && memcmp(rec.value, v.data, v.len) == 0;
  tarn_meta_rec_free(&rec);
  tarn_buf_free(&v);
  return took;
}

/* The reclaimer deletes compacted files no record names after its orphan
 * grace (61 s). A real compaction in progress is protected by its task record
 * (LS-084); the simulated compactors have none, so one that stalled for 30 s
 * after C2 gives its range up unless C3 already took effect. */
#define SIM_RANGE_EXPIRY_MS 30000

static void act_compactor(sim *s, int i, int force) {
  s->proc = PROC_C0 + i;
  sim_compactor *c = &s->cp[i];
  if (!c->alive) {
    compactor_start(s, i);
    return;
  }
  if (tarn_meta_session_ok(c->meta)) {
    sim_trace(s, "c%d notices its session ended", i);
    compactor_reconnect(s, i);
    return;
  }
  char owner[32];
  snprintf(owner, sizeof owner, "c%d.%d", i, c->incarnation);
  int rc, outcome = 0;
  switch (c->state) {
  case CP_IDLE: {
    uint64_t log = s->logs[sim_below(s, SIM_NLOGS)].id;
    rc = tarn_compact_lock_acquire(c->meta, log, owner, &c->lock);
    if (rc) {
      sim_trace(s, "c%d lock log %" PRIu64 " -> %d", i, log, rc);
      return;
    }
    check_lock_holders(s, log, -1, i);
    rc = tarn_compact_plan(c->c, log, force, &c->r);
    sim_trace(s, "c%d C1 plan log %" PRIu64 " -> %d [%" PRIu64 ", %" PRIu64 ")", i, log, rc, c->r.s,
              c->r.e);
    if (rc == TARN_EBUSY) {
      /* An install that died between C3 and C4: finish its C4 (LS-078), as
       * tarn_compact_once does, before planning anything new. */
      int done = 0;
      rc = tarn_compact_repair(c->c, log, &done);
      sim_trace(s, "c%d repairs log %" PRIu64 " -> %d (done %d)", i, log, rc, done);
      if (rc == 0)
        rc = TARN_EBUSY; /* plan again next time */
    }
    if (rc)
      compactor_idle(c);
    else
      c->state = CP_PLANNED;
    return;
  }
  case CP_PLANNED:
    if (s->faults_on && chance(s, s->p_obj_fault) && !(s->without & SIM_NO_OBJECT)) {
      tarn_objstore_mem_fault(s->ccmp, TARN_MEM_OP_PUT, 1 + sim_below(s, 3), 1,
                              TARN_MEM_FAULT_BEFORE, TARN_EIO);
      sim_trace(s, "  fault: a compacted-object put fails");
    }
    s->c2_paused = 0;
    sim_arm_read_fault(s, s->cwal, c->meta);
    rc = tarn_compact_write(c->c, &c->r);
    tarn_objstore_mem_reset_faults(s->ccmp);
    sim_read_faults_clear(s, c->meta);
    sim_trace(s, "c%d C2 write log %" PRIu64 " [%" PRIu64 ", %" PRIu64 ") -> %d (%zu files)", i,
              c->r.log_id, c->r.s, c->r.e, rc, c->r.n_files);
    if (rc)
      compactor_idle(c);
    else {
      c->state = CP_WRITTEN;
      c->written_at = s->now;
    }
    return;
  default:
    if (s->now - c->written_at >= SIM_RANGE_EXPIRY_MS && !c3_took(s, c)) {
      sim_trace(s,
                "c%d gives up range [%" PRIu64 ", %" PRIu64 ") of log %" PRIu64 " written %" PRId64
                " ms ago",
                i, c->r.s, c->r.e, c->r.log_id, s->now - c->written_at);
      compactor_idle(c);
      return;
    }
    if (!c->lock) { /* after a reconnect: the lock went with the old session */
      rc = tarn_compact_lock_acquire(c->meta, c->r.log_id, owner, &c->lock);
      sim_trace(s, "c%d relock log %" PRIu64 " -> %d", i, c->r.log_id, rc);
      if (rc)
        return;
      check_lock_holders(s, c->r.log_id, -1, i);
    }
    if (s->faults_on && chance(s, s->p_meta_fault * 2) && !(s->without & SIM_NO_META)) {
      int skip = (int)sim_below(s, 5);
      int kind = chance(s, 500) ? TARN_META_FAULT_FAIL : TARN_META_FAULT_COMMIT_UNKNOWN;
      tarn_meta_inject_fault_after(c->meta, kind, skip, 1);
      sim_trace(s, "  fault: metadata write %d of the install %s", skip + 1,
                kind == TARN_META_FAULT_FAIL ? "fails" : "commits but reports unknown");
    }
    c->state = CP_INSTALLING;
    rc = tarn_compact_install(c->c, &c->r, &outcome);
    clear_meta_fault(c->meta);
    sim_trace(s, "c%d C3-C5 install log %" PRIu64 " [%" PRIu64 ", %" PRIu64 ") -> %d%s", i,
              c->r.log_id, c->r.s, c->r.e, rc,
              !rc && outcome == TARN_INSTALL_STALE ? " (stale)" : "");
    if (rc == 0 && outcome == TARN_INSTALL_DONE)
      s->st.installs++;
    if (rc == 0 || rc == TARN_EFENCED) {
      compactor_idle(c);
    } else if (chance(s, 300) && !(s->without & (SIM_NO_C3CRASH | SIM_NO_CRASH)) && c3_took(s, c)) {
      sim_trace(s, "c%d crashes between C3 and C4", i);
      compactor_crash(s, i);
    }
    return; /* otherwise retried by a later step, with the same range */
  }
}

/* A reclamation pass, on one of two nodes (each `tarn serve` node runs one),
 * whose clocks differ: only the store's clock may judge a grace period. */
static void reclaim_report(void *ctx, const char *kind, const char *name, uint64_t bytes) {
  (void)bytes;
  if (!strcmp(kind, "wal"))
    sim_check_wal_delete(ctx, name);
}

static void act_reclaim(sim *s) {
  s->proc = chance(s, 500) ? PROC_RECL : PROC_RECL2;
  tarn_reclaim_options o;
  tarn_reclaim_options_default(&o);
  o.wal_grace_ms = SIM_WAL_GRACE_MS;
  o.orphan_grace_ms = 61000;
  o.report = reclaim_report;
  o.report_ctx = s;
  tarn_reclaim_stats st = {0};
  /* past the pass's first four writes, its marks l-, p-w-, p-c- and the
   * p-w- mark's range for the first page (src/log/reclaim.c "pass marks",
   * issue 31 item 7): a fault there only stops the pass
   * before its scan, so striking the next write made every fault one of
   * those; this one strikes the pass's own writes (stamps, confirmations,
   * forgets, hard trims, the marks' removal), as before the marks */
  int pin = s->late_stamp_at && s->step >= s->late_stamp_at && s->late_stamp == 0;
  if (pin) {
    tarn_meta_inject_fault_after(s->rmeta, TARN_META_FAULT_DELAY_COMMIT, 4, 1);
    sim_trace(s, "  pinned (--late-stamp-at): the pass's fifth metadata write is held in flight");
  } else {
    arm_meta_fault_after(s, s->rmeta, 4);
  }
  sim_arm_read_fault(s, chance(s, 500) ? s->cwal : s->ccmp, s->rmeta);
  int rc = tarn_reclaim_pass(s->rmeta, s->cwal, s->ccmp, &o, &st);
  if (pin && rc)
    s->late_stamp = 1; /* held: the session becomes the zombie, below */
  clear_meta_fault(s->rmeta);
  sim_read_faults_clear(s, s->rmeta);
  s->reclaim_epoch++;
  s->st.reclaimed += st.wal_deleted;
  sim_trace(s,
            "reclaimer pass -> %d: %" PRIu64 " WAL objects deleted, %" PRIu64
            " compacted deleted, %" PRIu64 " trimmed files, %" PRIu64 " records hard-trimmed",
            rc, st.wal_deleted, st.compacted_deleted, st.trimmed_files_deleted,
            st.records_hard_trimmed);
  if (!rc)
    sim_check_reclaim_passed(s);
  /* --late-stamp-at: the held write lands after a pass that succeeded */
  if (!rc && s->late_stamp == 1) {
    s->late_stamp = -1;
    if (s->rzombie &&
        tarn_meta_inject_fault(s->rzombie, TARN_META_FAULT_LAND, SIM_MAX_INFLIGHT_MS) == 0) {
      s->st.landed++;
      sim_trace(s, "  pinned (--late-stamp-at): the zombie reclaimer's held write LANDS");
    }
  }
  if (rc) {
    /* A failed pass may leave a lease: the node gives up this session and
     * opens a new one. What it sent is not recalled, though: a write of
     * unknown outcome (a held first-seen stamp, a confirmation) may still
     * land, up to the client's deadline, as on etcd when `tarn serve`'s
     * reclaim job moves on (issue 12's zombie reclaimer). So the old session
     * ends at the store now (its lease goes) and its handle is kept as a
     * zombie whose held writes land at a later landing step, or never. */
    if (s->rzombie)
      tarn_meta_close(s->rzombie);
    tarn_meta_inject_fault(s->rmeta, TARN_META_FAULT_EXPIRE_SILENT, 0);
    s->rzombie = s->rmeta;
    if (open_meta(s, &s->rmeta))
      abort();
  }
}

/* ---- task nodes (tasks.c) ----------------------------------------------------------- */

static void tnode_start(sim *s, int i) {
  s->proc = PROC_T0 + i;
  sim_tnode *n = &s->tn[i];
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  o.max_range_bytes = 500 + sim_below(s, 6000);
  o.max_age_ms = 200 + (int64_t)sim_below(s, 3000);
  o.max_file_bytes = 300 + sim_below(s, 3000);
  o.install_attempts = 1;
  o.codec = chance(s, 500) ? TARN_PARQUET_SNAPPY : TARN_PARQUET_UNCOMPRESSED;
  if (open_meta(s, &n->meta) || tarn_objstore_open(s->wal_uri, &n->wal) ||
      tarn_objstore_open(s->cmp_uri, &n->cmp) ||
      tarn_compactor_open(n->meta, n->wal, n->cmp, &o, &n->c))
    abort();
  n->alive = 1;
  n->incarnation++;
  n->tell_at = 0;
  sim_trace(s, "t%d start (incarnation %d)", i, n->incarnation);
}

/* Ends a node: cleanly (its lock released) or by a crash (its lock record
 * left to its session, which lives on until it expires). */
static void tnode_end(sim *s, int i, int crash) {
  s->proc = PROC_T0 + i;
  sim_tnode *n = &s->tn[i];
  if (n->have) {
    if (crash) {
      free(n->lock); /* an opaque handle; freeing it touches no store */
      s->crashed_claims[n->t.log_id <= SIM_NLOGS ? n->t.log_id : 0] = 1;
    } else
      tarn_compact_lock_release(n->lock);
    tarn_task_free(&n->t);
  }
  n->lock = NULL;
  n->have = 0;
  tarn_compactor_close(n->c);
  tarn_objstore_close(n->wal);
  tarn_objstore_close(n->cmp);
  int64_t ttl = 50 + (int64_t)sim_below(s, 3000);
  if (crash && s->nzombies < SIM_MAX_ZOMBIES) {
    s->zombies[s->nzombies].meta = n->meta;
    s->zombies[s->nzombies++].expire_at = s->now + ttl;
  } else
    tarn_meta_close(n->meta);
  if (crash)
    s->st.crashes++;
  sim_trace(s, "t%d %s", i, crash ? "CRASH" : "stops");
  n->alive = 0;
  n->meta = NULL;
}

/* MutualExclusion: no two processes whose sessions live (at the store) hold the compaction
 * lock of one log (task nodes and the plain compactors share it); checked when
 * task node ti (or compactor ci) has just taken it (the other index is -1). */
static void check_lock_holders(sim *s, uint64_t log, int ti, int ci) {
  SIM_CHECKED(s, P_MutualExclusion);
  for (int k = 0; k < SIM_NTNODES && !s->failed; k++)
    if (k != ti && s->tn[k].alive && s->tn[k].have && s->tn[k].t.log_id == log &&
        !s->tn[k].tell_at && tarn_meta_session_ok(s->tn[k].meta) == 0)
      sim_fail(s, P_MutualExclusion, "%c%d and t%d both hold the compaction lock of log %" PRIu64,
               ti >= 0 ? 't' : 'c', ti >= 0 ? ti : ci, k, log);
  for (int k = 0; k < SIM_NCOMPACTORS && !s->failed; k++)
    /* a zombie (its session ended at the store, it is not told yet) holds
     * nothing: its lock went with the session, and its guarded writes fail */
    if (k != ci && s->cp[k].alive && s->cp[k].lock && s->cp[k].state != CP_IDLE &&
        !s->cp[k].tell_at && s->cp[k].r.log_id == log && tarn_meta_session_ok(s->cp[k].meta) == 0)
      sim_fail(s, P_MutualExclusion, "%c%d and c%d both hold the compaction lock of log %" PRIu64,
               ti >= 0 ? 't' : 'c', ti >= 0 ? ti : ci, k, log);
}

static void check_exclusion(sim *s, int i) { check_lock_holders(s, s->tn[i].t.log_id, i, -1); }

/* A task's state as it stands: DLQOnlyAfterMaxFailures, NoDoubleExecution. */
static void check_task(sim *s, const tarn_task *t, int just_committed) {
  SIM_CHECKED(s, P_DLQOnlyAfterMaxFailures);
  if (t->state == TARN_TASK_DEAD && t->failures < s->topt.max_failures)
    sim_fail(s, P_DLQOnlyAfterMaxFailures,
             "the task of log %" PRIu64 " is DEAD after %u "
             "failures (max %u)",
             t->log_id, t->failures, s->topt.max_failures);
  if (!just_committed)
    return;
  SIM_CHECKED(s, P_NoDoubleExecution);
  uint64_t id[4] = {t->log_id, (uint64_t)t->created_ms, t->range.s, t->range.e};
  for (size_t k = 0; k < s->ncommitted; k++)
    if (!memcmp(s->committed[k], id, sizeof id))
      sim_fail(s, P_NoDoubleExecution,
               "the task of log %" PRIu64 " [%" PRIu64 ", %" PRIu64 ") created at %" PRId64
               " was committed twice",
               t->log_id, t->range.s, t->range.e, t->created_ms);
  if (s->ncommitted == s->capcommitted) {
    s->capcommitted = s->capcommitted ? 2 * s->capcommitted : 64;
    if (!(s->committed = realloc(s->committed, s->capcommitted * sizeof *s->committed)))
      abort();
  }
  memcpy(s->committed[s->ncommitted++], id, sizeof id);
}

/* Log L's task record as the checker reads it. */
static int task_record_get(sim *s, uint64_t log, tarn_task *t) {
  char k[64];
  snprintf(k, sizeof k, "/tasks/%020" PRIu64, log);
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(s->cmeta, TARN_COMPACTION_PARTITION, k, &r);
  if (!rc)
    rc = tarn_task_decode(r.value, r.value_len, t);
  if (!rc)
    t->version = r.stat.version;
  tarn_meta_rec_free(&r);
  return rc;
}

/* The version of log L's task record, -1 if none. */
static int64_t task_record_version(sim *s, uint64_t log) {
  tarn_task t;
  if (task_record_get(s, log, &t))
    return -1;
  int64_t v = t.version;
  tarn_task_free(&t);
  return v;
}

/* NoDoubleExecution, on the records: a task (its log, created_ms and range) only
 * moves forward, INIT -> PREPARED -> COMMITTED; a record seen back at an
 * earlier state (a late write of a holder that gave up, landing over the
 * next holder's) has its work run a second time. */
static void check_task_records(sim *s) {
  tarn_task *v = NULL;
  size_t n = 0;
  if (tarn_tasks_list(s->cmeta, &v, &n))
    return;
  for (size_t k = 0; k < n && !s->failed; k++) {
    uint64_t L = v[k].log_id;
    if (L < 1 || L > SIM_NLOGS || v[k].state == TARN_TASK_DEAD)
      continue;
    SIM_CHECKED(s, P_NoDoubleExecution);
    /* an INIT record is a new plan (one may be stamped in the same ms as
     * the task it replaces) */
    int same = s->task_created[L] == v[k].created_ms && s->task_range[L][0] == v[k].range.s &&
               s->task_range[L][1] == v[k].range.e;
    if (same && v[k].state != TARN_TASK_INIT && v[k].state < s->task_state[L])
      sim_fail(s, P_NoDoubleExecution,
               "the task of log %" PRIu64 " created at %" PRId64
               " is %s again after it was %s: its work runs twice",
               L, v[k].created_ms, tarn_task_state_name(v[k].state),
               tarn_task_state_name(s->task_state[L]));
    if (!same || v[k].state > s->task_state[L] || v[k].state == TARN_TASK_INIT) {
      s->task_created[L] = v[k].created_ms;
      s->task_range[L][0] = v[k].range.s;
      s->task_range[L][1] = v[k].range.e;
      s->task_state[L] = v[k].state;
    }
  }
  tarn_tasks_free(v, n);
}

/* One step of task node i: plan, claim, or step its claimed task. */
static void act_tnode(sim *s, int i) {
  sim_tnode *n = &s->tn[i];
  if (!n->alive) {
    tnode_start(s, i);
    return;
  }
  s->proc = PROC_T0 + i;
  if (tarn_meta_session_ok(n->meta)) {
    sim_trace(s, "t%d notices its session ended", i);
    tnode_end(s, i, 1); /* its lock went with the session */
    tnode_start(s, i);
    return;
  }
  int rc;
  if (!n->have) {
    if (chance(s, 300)) {
      size_t created = 0;
      arm_meta_fault(s, n->meta);
      rc = tarn_tasks_plan(n->c, &s->topt, chance(s, 300), &created);
      clear_meta_fault(n->meta);
      sim_trace(s, "t%d plans -> %d (%zu tasks created)", i, rc, created);
      check_task_records(s); /* sees every new plan at INIT */
      return;
    }
    /* --late-lock-at: the claim's first write (its lock create, when there
     * is a task to claim) is held in flight, landed two steps later */
    int pin = s->late_lock_at && s->step >= s->late_lock_at && !s->late_lock_land;
    if (pin) {
      tarn_meta_inject_fault(n->meta, TARN_META_FAULT_DELAY_COMMIT, 1);
      sim_trace(s, "  pinned (--late-lock-at): t%d's next metadata write is held in flight", i);
    }
    rc = tarn_tasks_claim(n->meta, &s->topt, &n->lock, &n->t);
    if (pin) {
      clear_meta_fault(n->meta);
      s->late_lock_land = s->step + 2;
      s->late_lock_node = i;
    }
    sim_trace(s, "t%d claims -> %d%s%" PRIu64, i, rc, rc ? "" : " the task of log ",
              rc ? 0 : n->t.log_id);
    if (rc == 0) {
      n->have = 1;
      check_exclusion(s, i);
      check_task(s, &n->t, 0);
    }
    return;
  }
  /* NoOrphanExecution: a task moves on only under a lock its session holds */
  SIM_CHECKED(s, P_NoOrphanExecution);
  SIM_CHECKED(s, P_LockConsistency);
  int before = n->t.state;
  /* a metadata fault strikes any of the step's writes: the intent, C3, C4,
   * C5 or the task record's own */
  if (s->faults_on && chance(s, s->p_meta_fault) && !(s->without & SIM_NO_META)) {
    int skip = (int)sim_below(s, 5);
    uint64_t k = sim_below(s, 10);
    /* or it is held in flight and lands later (a holder that gave up on its
     * task write, which commits after another holder moved the task on) */
    int kind = k < 4                                 ? TARN_META_FAULT_FAIL
               : k < 8 || (s->without & SIM_NO_SLOW) ? TARN_META_FAULT_COMMIT_UNKNOWN
                                                     : TARN_META_FAULT_DELAY_COMMIT;
    tarn_meta_inject_fault_after(n->meta, kind, skip, 1);
    if (kind == TARN_META_FAULT_DELAY_COMMIT)
      s->st.held++;
    sim_trace(s, "  fault: metadata write %d of the task step %s", skip + 1,
              kind == TARN_META_FAULT_FAIL             ? "fails"
              : kind == TARN_META_FAULT_COMMIT_UNKNOWN ? "commits but reports unknown"
                                                       : "is held in flight (lands later)");
  }
  if (s->faults_on && chance(s, s->p_obj_fault) && !(s->without & SIM_NO_OBJECT))
    tarn_objstore_mem_fault(s->ccmp, TARN_MEM_OP_PUT, 1 + sim_below(s, 3), 1, TARN_MEM_FAULT_BEFORE,
                            TARN_EIO);
  sim_arm_read_fault(s, s->cwal, NULL);
  /* the task record as it stands: a zombie (its session, and so its lock,
   * ended at the store; it is not told yet) must not change it */
  int64_t rec_before = task_record_version(s, n->t.log_id);
  /* NoDoubleExecution: the holder's view is the record's, so it never runs
   * a state its task has passed (a write landing under another holder's
   * lock would move the record on behind its back); a zombie's lock is
   * gone, the next holder's may have moved it on (NoOrphanExecution holds
   * the zombie's writes to nothing) */
  tarn_task rt;
  if (!n->tell_at && task_record_get(s, n->t.log_id, &rt) == 0) {
    SIM_CHECKED(s, P_NoDoubleExecution);
    if (rt.created_ms == n->t.created_ms && rt.state != TARN_TASK_DEAD && rt.state > before)
      sim_fail(s, P_NoDoubleExecution,
               "t%d runs the task of log %" PRIu64 " from %s, but its "
               "record is %s: that work was done",
               i, n->t.log_id, tarn_task_state_name(before), tarn_task_state_name(rt.state));
    tarn_task_free(&rt);
  }
  if (s->failed)
    return;
  int zombie = n->tell_at != 0;
  rc = tarn_tasks_step(n->c, &s->topt, &n->t);
  tarn_objstore_mem_reset_faults(s->ccmp);
  sim_read_faults_clear(s, NULL);
  clear_meta_fault(n->meta);
  sim_trace(s, "t%d steps the task of log %" PRIu64 " %s -> %s: %d", i, n->t.log_id,
            tarn_task_state_name(before), tarn_task_state_name(n->t.state), rc);
  if (n->t.state != before && tarn_meta_session_ok(n->meta) != 0)
    sim_fail(s, P_NoOrphanExecution,
             "t%d moved the task of log %" PRIu64 " on after its "
             "session ended",
             i, n->t.log_id);
  if (zombie && !s->failed && task_record_version(s, n->t.log_id) != rec_before)
    sim_fail(s, P_NoOrphanExecution,
             "t%d's session ended at the store (it is not told yet), "
             "but its write of the task of log %" PRIu64 " (%s) took effect",
             i, n->t.log_id, tarn_task_state_name(n->t.state));
  /* LockConsistency: the task's record and what its holder believes agree */
  tarn_task *cur = NULL;
  size_t nt = 0;
  if (tarn_tasks_list(s->cmeta, &cur, &nt) == 0) {
    for (size_t k = 0; k < nt; k++)
      if (cur[k].log_id == n->t.log_id && rc == 0 && cur[k].state != n->t.state)
        sim_fail(s, P_LockConsistency,
                 "t%d holds the task of log %" PRIu64 " as %s, its record "
                 "says %s",
                 i, n->t.log_id, tarn_task_state_name(n->t.state),
                 tarn_task_state_name(cur[k].state));
    tarn_tasks_free(cur, nt);
  }
  check_task_records(s);
  check_task(s, &n->t,
             rc == 0 && before != TARN_TASK_COMMITTED && n->t.state == TARN_TASK_COMMITTED &&
                 !n->t.stale);
  if (rc == 0 && n->t.state == TARN_TASK_COMMITTED && n->t.log_id <= SIM_NLOGS &&
      s->crashed_claims[n->t.log_id]) {
    SIM_CHECKED(s, P_CrashRecovery); /* the crashed claim was recovered */
    s->crashed_claims[n->t.log_id] = 0;
  }
  if (rc || n->t.state == TARN_TASK_COMMITTED || n->t.state == TARN_TASK_DEAD) {
    tarn_compact_lock_release(n->lock);
    tarn_task_free(&n->t);
    n->lock = NULL;
    n->have = 0;
  }
}

/* After the faults stop: the nodes run every open task to its end
 * (TaskCompletion), tasks whose claimant crashed included (CrashRecovery), and
 * every log's task is run (NoStarvation). */
static void settle_tasks(sim *s) {
  for (int i = 0; i < SIM_NTNODES; i++)
    if (!s->tn[i].alive)
      tnode_start(s, i);
  /* NoStarvation: one more entry on every live log, so that each has
   * something to compact, then a forced plan: every one of them must get a
   * task that runs (COMMITTED above the cursor compaction left) */
  uint64_t cursor[SIM_NLOGS] = {0};
  for (int k = 0; k < SIM_NLOGS && !s->failed; k++) {
    if (s->logs[k].delete_done || s->logs[k].fenced)
      continue;
    tarn_compact_progress_read(s->cmeta, s->logs[k].id, &cursor[k]);
    int wi = k % SIM_NWRITERS;
    writer_start(s, wi);
    append_to(s, wi, s->logs[k].id);
    writer_stop(s, wi);
  }
  /* the nodes run the open tasks; when none is left a forced plan (a
   * planner of `tarn serve` plans again and again) makes new ones, until it
   * finds nothing to plan */
  for (int round = 0, quiet = 0; round < 100 && !s->failed; round++) {
    sim_watchdog_pet(s->step);
    int open = 0;
    for (int i = 0; i < SIM_NTNODES; i++)
      act_tnode(s, i);
    tarn_task *v = NULL;
    size_t n = 0;
    if (tarn_tasks_list(s->cmeta, &v, &n) == 0) {
      for (size_t k = 0; k < n; k++)
        open += v[k].state == TARN_TASK_INIT || v[k].state == TARN_TASK_PREPARED;
      tarn_tasks_free(v, n);
    }
    if (open) {
      quiet = 0;
      continue;
    }
    /* time passes between plans: a task another node's clock stamped
     * (updated_ms, skewed up to 2 x max_skew ahead) is kept until it is past */
    s->now += 5000;
    s->proc = PROC_T0;
    size_t created = 0;
    int prc = tarn_tasks_plan(s->tn[0].c, &s->topt, 1, &created);
    sim_trace(s, "settle: t0 plans every log -> %d (%zu tasks created)", prc, created);
    check_task_records(s);
    /* quiet for 10 plans, and for longer than two nodes' clocks can differ
     * (seed 854: a stale task COMMITTED by a node 50-odd s ahead of t0's
     * clock was still kept after 10 plans, 50 s) */
    if (!created && ++quiet > 9 && quiet * 5000 > 2 * s->max_skew)
      break;
  }
  tarn_task *v = NULL;
  size_t n = 0;
  if (s->failed || tarn_tasks_list(s->cmeta, &v, &n))
    return;
  int ran[SIM_NLOGS + 1] = {0};
  for (size_t k = 0; k < n && !s->failed; k++) {
    int open = v[k].state == TARN_TASK_INIT || v[k].state == TARN_TASK_PREPARED;
    uint64_t L = v[k].log_id;
    int fenced = L >= 1 && L <= SIM_NLOGS && (s->logs[L - 1].fenced || s->logs[L - 1].delete_done);
    if (L >= 1 && L <= SIM_NLOGS &&
        (v[k].state == TARN_TASK_DEAD ||
         (v[k].state == TARN_TASK_COMMITTED && v[k].range.e > cursor[L - 1])))
      ran[L] = 1;
    /* a task whose claimant crashed is CrashRecovery's; every other one
     * TaskCompletion's (checked first, in a pass of its own) */
    int crashed = L >= 1 && L <= SIM_NLOGS && s->crashed_claims[L];
    SIM_CHECKED(s, crashed ? P_CrashRecovery : P_TaskCompletion);
    if (open && !fenced && !crashed)
      sim_fail(s, P_TaskCompletion,
               "with faults stopped, the task of log %" PRIu64 " is still "
               "%s",
               L, tarn_task_state_name(v[k].state));
    if (!s->failed)
      check_task(s, &v[k], 0);
  }
  for (size_t k = 0; k < n && !s->failed; k++) {
    uint64_t L = v[k].log_id;
    int open = v[k].state == TARN_TASK_INIT || v[k].state == TARN_TASK_PREPARED;
    if (open && L >= 1 && L <= SIM_NLOGS && s->crashed_claims[L] && !s->logs[L - 1].fenced &&
        !s->logs[L - 1].delete_done)
      sim_fail(s, P_CrashRecovery,
               "the task of log %" PRIu64 ", whose claimant crashed, "
               "is still %s",
               L, tarn_task_state_name(v[k].state));
  }
  for (int k = 0; k < SIM_NLOGS && !s->failed; k++) {
    if (s->logs[k].delete_done || s->logs[k].fenced)
      continue;
    SIM_CHECKED(s, P_NoStarvation);
    if (!ran[k + 1])
      sim_fail(s, P_NoStarvation,
               "log %" PRIu64 " has entries above its compaction cursor %" PRIu64
               " but no task of it ran after the faults stopped",
               s->logs[k].id, cursor[k]);
  }
  tarn_tasks_free(v, n);
}

/* ---- the scheduler ------------------------------------------------------------------ */

static int pick_alive(sim *s) {
  int n = 0, ids[SIM_NWRITERS];
  for (int i = 0; i < SIM_NWRITERS; i++)
    if (s->wr[i].alive)
      ids[n++] = i;
  return n ? ids[sim_below(s, (uint64_t)n)] : -1;
}

/* Processes whose session ended silently are told when their time comes;
 * now and then a held write of some process lands. */
static void zombies_and_landings(sim *s) {
  for (int k = 0; k < SIM_NWRITERS; k++)
    if (s->wr[k].alive && s->wr[k].tell_at && s->wr[k].tell_at <= s->now) {
      tarn_meta_inject_fault(s->wr[k].meta, TARN_META_FAULT_EXPIRE_SESSION, 0);
      s->wr[k].tell_at = 0;
      sim_trace(s, "w%d is told its session ended", k);
    }
  for (int k = 0; k < SIM_NCOMPACTORS; k++)
    if (s->cp[k].alive && s->cp[k].tell_at && s->cp[k].tell_at <= s->now) {
      tarn_meta_inject_fault(s->cp[k].meta, TARN_META_FAULT_EXPIRE_SESSION, 0);
      s->cp[k].tell_at = 0;
      sim_trace(s, "c%d is told its session ended", k);
    }
  for (int k = 0; k < SIM_NTNODES; k++)
    if (s->tn[k].alive && s->tn[k].tell_at && s->tn[k].tell_at <= s->now) {
      tarn_meta_inject_fault(s->tn[k].meta, TARN_META_FAULT_EXPIRE_SESSION, 0);
      s->tn[k].tell_at = 0;
      sim_trace(s, "t%d is told its session ended", k);
    }
  /* --late-lock-at: the pinned claim's held write lands (none held, or its
   * node gone: the next claim is pinned again) */
  if (s->late_lock_land > 0 && s->step >= s->late_lock_land) {
    sim_tnode *n = &s->tn[s->late_lock_node];
    if (n->alive &&
        tarn_meta_inject_fault(n->meta, TARN_META_FAULT_LAND, SIM_MAX_INFLIGHT_MS) == 0) {
      s->st.landed++;
      sim_trace(s, "  pinned (--late-lock-at): t%d's held metadata write LANDS", s->late_lock_node);
      s->late_lock_land = -1;
    } else {
      s->late_lock_land = 0;
    }
  }
  if (!chance(s, 40))
    return;
  uint64_t k = sim_below(s, SIM_NWRITERS + SIM_NCOMPACTORS + 3 + SIM_NTNODES);
  if (k >= SIM_NWRITERS + SIM_NCOMPACTORS + 3) {
    sim_tnode *n = &s->tn[k - (SIM_NWRITERS + SIM_NCOMPACTORS + 3)];
    land(s, n->alive ? n->meta : NULL, "a task node");
    check_task_records(s);
  } else if (k < SIM_NWRITERS)
    land(s, s->wr[k].alive ? s->wr[k].meta : NULL, "a writer");
  else if (k < SIM_NWRITERS + SIM_NCOMPACTORS)
    land(s, s->cp[k - SIM_NWRITERS].alive ? s->cp[k - SIM_NWRITERS].meta : NULL, "a compactor");
  else if (k == SIM_NWRITERS + SIM_NCOMPACTORS)
    land(s, s->tmeta, "the trimmer");
  else if (k == SIM_NWRITERS + SIM_NCOMPACTORS + 1) {
    /* the deleter's held fence create may land now (S3 from the fence) */
    uint64_t end = index_end(s, SIM_DELETED_LOG);
    land(s, s->dmeta, "the deleter");
    fence_note(s, SIM_DELETED_LOG, end);
  } else {
    land(s, s->rmeta, "the reclaimer");
    land(s, s->rzombie, "the reclaimer's failed session (a zombie)");
  }
}

static void one_step(sim *s) {
  s->proc = PROC_CHECK;
  s->now += (int64_t)sim_below(s, 15);
  clocks_drift(s);
  zombies_and_landings(s);
  uint64_t r = sim_below(s, 1000);
  int i = pick_alive(s);
  int ci = (int)sim_below(s, SIM_NCOMPACTORS);
  if (r < 260) {
    if (i >= 0)
      act_append(s, i);
  } else if (r < 290) {
    if (i >= 0)
      act_writer_step(s, i, TARN_WRITER_STEP_SEAL);
  } else if (r < 340) {
    int64_t d = 1 + (int64_t)sim_below(s, 300);
    s->now += d;
    sim_trace(s, "time passes: %" PRId64 " ms", d);
    for (int k = 0; k < SIM_NWRITERS; k++)
      if (s->wr[k].alive)
        act_writer_step(s, k, TARN_WRITER_STEP_SEAL_DUE);
  } else if (r < 470) {
    if (i >= 0)
      act_writer_step(s, i, TARN_WRITER_STEP_UPLOAD);
  } else if (r < 620) {
    if (i >= 0)
      act_writer_step(s, i, TARN_WRITER_STEP_PUT);
  } else if (r < 620 + s->p_crash) {
    if (s->without & SIM_NO_CRASH) {
    } else if (s->faults_on && chance(s, 500)) {
      if (i >= 0)
        writer_crash(s, i);
    } else if (s->faults_on && s->cp[ci].alive)
      compactor_crash(s, ci);
  } else if (r < 640 + s->p_crash) {
    if (s->faults_on && chance(s, s->p_expire * 10) && !(s->without & SIM_NO_EXPIRY)) {
      int wsel = chance(s, 500) && i >= 0;
      tarn_meta *m = wsel ? s->wr[i].meta : s->cp[ci].alive ? s->cp[ci].meta : NULL;
      int64_t *tell = wsel ? &s->wr[i].tell_at : &s->cp[ci].tell_at;
      /* half of them silently: the store ends the session, the process is
       * told only 0.1-8 s later and runs on meanwhile (a zombie) */
      int silent = chance(s, 500) && !(s->without & SIM_NO_ZOMBIE);
      if (m && !*tell) {
        tarn_meta_inject_fault(
            m, silent ? TARN_META_FAULT_EXPIRE_SILENT : TARN_META_FAULT_EXPIRE_SESSION, 0);
        s->st.expiries++;
        if (silent) {
          *tell = s->now + 100 + (int64_t)sim_below(s, 8000);
          s->st.silent++;
        }
        sim_trace(s, "%s session EXPIRES while it runs%s", wsel ? "a writer's" : "a compactor's",
                  silent ? " (it is not told yet)" : "");
      }
    }
  } else if (r < 680) {
    /* start a stopped writer; a running one whose session ended notices and
     * restarts; now and then a running one stops cleanly */
    int k = (int)sim_below(s, SIM_NWRITERS);
    if (!s->wr[k].alive)
      writer_start(s, k);
    else if (tarn_meta_session_ok(s->wr[k].meta) || chance(s, 150)) {
      writer_stop(s, k);
      writer_start(s, k);
    }
  } else if (r < 730) {
    act_soft_trim(s);
  } else if (r < 745) {
    act_hard_trim(s);
  } else if (r < 760) {
    if (s->step > 300 && !s->logs[SIM_DELETED_LOG - 1].delete_done && chance(s, 300))
      act_delete(s);
  } else if (r < 775) {
    reopen_stale(s);
  } else if (r < 860) {
    act_compactor(s, ci, chance(s, 300));
  } else if (r < 900) {
    int ti = (int)sim_below(s, SIM_NTNODES);
    /* a node crashes, more often while it holds a task (its state changes
     * are then left half done: CrashRecovery) */
    if (s->tn[ti].alive && s->faults_on && !(s->without & SIM_NO_CRASH) &&
        chance(s, s->tn[ti].have ? 50 + 10 * s->p_crash : 2 * s->p_crash))
      tnode_end(s, ti, 1);
    else if (s->tn[ti].alive && s->tn[ti].have && !s->tn[ti].tell_at && s->faults_on &&
             !(s->without & SIM_NO_EXPIRY) && chance(s, s->p_expire + 10)) {
      /* a holder's session ends while it runs; half the time silently: the
       * store drops its lock, the node is told only 0.1-8 s later and steps
       * its task on meanwhile (a lock holder that keeps running) */
      int silent = chance(s, 500) && !(s->without & SIM_NO_ZOMBIE);
      tarn_meta_inject_fault(
          s->tn[ti].meta, silent ? TARN_META_FAULT_EXPIRE_SILENT : TARN_META_FAULT_EXPIRE_SESSION,
          0);
      s->st.expiries++;
      if (silent) {
        s->tn[ti].tell_at = s->now + 100 + (int64_t)sim_below(s, 8000);
        s->st.silent++;
      }
      sim_trace(s, "t%d's session EXPIRES while it holds a task%s", ti,
                silent ? " (it is not told yet)" : "");
    } else
      act_tnode(s, ti);
  } else if (r < 915) {
    act_reclaim(s);
  } else if (chance(s, 100)) {
    /* a long pause (a stalled process, a slow store): caches expire, grace
     * periods and compaction ages elapse */
    int64_t d = 5000 + (int64_t)sim_below(s, 20000);
    s->now += d;
    sim_trace(s, "a long pause: %" PRId64 " ms", d);
  } else {
    s->now += (int64_t)sim_below(s, 50);
  }
  expire_zombies(s);
}

/* L3: once faults stop, every acknowledged entry above B is readable, by a
 * fresh reader and by the stale one (not reopened: settling took longer than
 * its caches' lifetime). */
static void settle_reads(sim *s, tarn_reader *held) {
  s->proc = PROC_CHECK;
  for (size_t id = 0; id < s->nents && !s->failed; id++) {
    sim_entry *e = &s->ents[id];
    const sim_log *lg = &s->logs[e->log - 1];
    if (e->status != E_ACKED || lg->delete_done || lg->fenced || e->offset + e->records <= lg->b)
      continue;
    tarn_reader *rs[3] = {s->fresh, s->stale, held};
    for (int k = 0; k < 3 && rs[k] && !s->failed; k++) {
      tarn_log_iter *it = NULL;
      tarn_entry ent;
      int rc = tarn_log_iter_open(rs[k], e->log, e->offset, &it);
      if (!rc)
        rc = tarn_log_iter_next(it, &ent, 0);
      SIM_CHECKED(s, P_ReaderEventuallySucceeds);
      if (rc || ent.offset != e->offset)
        sim_fail(s, P_ReaderEventuallySucceeds,
                 "with faults stopped, acknowledged entry %zu "
                 "(log %" PRIu64 " offset %" PRIu64 ") is unreadable: %d %s",
                 id, e->log, e->offset, rc, rc ? tarn_errmsg() : "another entry");
      tarn_log_iter_close(it);
    }
  }
}

static void zombies_and_landings(sim *s);
static void settle_tasks(sim *s);

/* A reader whose index cache outlives the settle (an hour), filled with
 * every acknowledged entry's record before the settle's compaction and
 * reclamation: at the settle's reads each of its cached RAW records names a
 * WAL object that is gone, a state only the settle reaches (during the run
 * the stale reader's 60 s cache is shorter than the 61 s grace), so L3 is
 * where its relookup (LS-055) is tested. */
static tarn_reader *settle_held_reader(sim *s) {
  s->proc = PROC_CHECK;
  tarn_reader_options o;
  tarn_reader_options_default(&o);
  o.index_ttl_ms = 3600000;
  tarn_reader *r;
  if (tarn_reader_open(s->cmeta, s->cwal, s->ccmp, &o, &r))
    abort();
  for (size_t id = 0; id < s->nents; id++) {
    sim_entry *e = &s->ents[id];
    const sim_log *lg = &s->logs[e->log - 1];
    if (e->status != E_ACKED || lg->delete_done || lg->fenced || e->offset + e->records <= lg->b)
      continue;
    tarn_log_iter *it = NULL;
    tarn_entry ent;
    if (tarn_log_iter_open(r, e->log, e->offset, &it) == 0)
      (void)tarn_log_iter_next(it, &ent, 0); /* only to fill the cache */
    tarn_log_iter_close(it);
  }
  return r;
}

/* Liveness: once faults stop, every pending append gets an outcome. */
static void settle(sim *s) {
  s->faults_on = 0;
  sim_trace(s, "faults stop; every writer flushes and stops");
  for (int k = 0; k < SIM_NWRITERS; k++)
    s->wr[k].tell_at = s->wr[k].tell_at ? s->now : 0;
  for (int k = 0; k < SIM_NCOMPACTORS; k++)
    s->cp[k].tell_at = s->cp[k].tell_at ? s->now : 0;
  for (int k = 0; k < SIM_NTNODES; k++)
    s->tn[k].tell_at = s->tn[k].tell_at ? s->now : 0;
  zombies_and_landings(s);
  for (int k = 0; k < SIM_NWRITERS; k++)
    if (s->wr[k].alive)
      writer_stop(s, k);
  for (size_t k = 0; k < s->nents && !s->failed; k++) {
    SIM_CHECKED(s, P_AppendProgress);
    if (s->ents[k].status == E_PENDING)
      sim_fail(s, P_AppendProgress,
               "entry %zu of log %" PRIu64 " has no outcome after the "
               "writers stopped",
               k, s->ents[k].log);
  }
  s->now += 61000; /* past every cache's lifetime */
  for (size_t k = 0; k < s->nzombies; k++)
    s->zombies[k].expire_at = s->now;
  expire_zombies(s);
  /* L1: with faults stopped, an append to every live log is acknowledged */
  for (int k = 0; k < SIM_NLOGS && !s->failed; k++) {
    if (s->logs[k].delete_done || s->logs[k].fenced)
      continue;
    int wi = k % SIM_NWRITERS;
    writer_start(s, wi);
    size_t id = append_to(s, wi, s->logs[k].id);
    writer_stop(s, wi);
    SIM_CHECKED(s, P_AppendProgress);
    if (s->ents[id].status != E_ACKED)
      sim_fail(s, P_AppendProgress, "log %" PRIu64 ": with faults stopped, append %zu %s",
               s->logs[k].id, id,
               s->ents[id].status == E_FAILED ? "failed" : "was not acknowledged");
  }
  tarn_reader *held = s->failed ? NULL : settle_held_reader(s);
  /* ... and compaction catches up: pending installs finish, then every
   * log's RAW records are compacted */
  SIM_CHECKED(s, P_CompactionCompletes);
  for (int round = 0; round < 200 && !s->failed; round++) {
    sim_watchdog_pet(s->step);
    int busy = 0, refused = 0;
    for (int k = 0; k < SIM_NCOMPACTORS; k++) {
      sim_compactor *c = &s->cp[k];
      if (c->alive && c->state != CP_IDLE) {
        act_compactor(s, k, 1);
        busy = 1;
        refused |= c->alive && c->state != CP_IDLE && !c->lock;
      }
    }
    if (refused) {
      /* A compactor's relock was refused: another holder has the log's
       * lock — a task node's claim (seed 20546: c1's session ended silently
       * with its C3 taken, t1 claimed log 2, and c1, back at the settle,
       * retried its relock 199 times at one instant while t1 was never run)
       * or a crashed holder whose session has not expired yet. In `tarn
       * serve` those nodes run on and time passes: each task node gets a
       * turn, and a second passes, so a dead holder's session expires. */
      for (int i = 0; i < SIM_NTNODES && !s->failed; i++)
        act_tnode(s, i);
      s->now += 1000;
      expire_zombies(s);
    }
    if (busy)
      continue;
    for (int k = 0; k < SIM_NLOGS && !busy; k++) {
      if (s->logs[k].delete_done || s->logs[k].fenced)
        continue;
      sim_compactor *c = &s->cp[0];
      if (!c->alive)
        compactor_start(s, 0);
      else if (c->state == CP_IDLE && tarn_meta_session_ok(c->meta))
        compactor_reconnect(s, 0); /* told at the settle that its session ended */
      tarn_compact_range r = {0};
      int prc = tarn_compact_plan(c->c, s->logs[k].id, 1, &r);
      if (prc == TARN_EBUSY) { /* an unfinished install: repair it, then plan again */
        int done = 0;
        int rrc = tarn_compact_repair(c->c, s->logs[k].id, &done);
        sim_trace(s, "settle: c0 repairs log %" PRIu64 " -> %d (done %d)", s->logs[k].id, rrc,
                  done);
        busy = 1;
      } else if (prc == 0) {
        tarn_compact_range_free(&r);
        /* the compactor plans for itself: run its steps on this log */
        int rc = tarn_compact_lock_acquire(c->meta, s->logs[k].id, "settle", &c->lock);
        if (rc == 0 && tarn_compact_plan(c->c, s->logs[k].id, 1, &c->r) == 0) {
          c->state = CP_PLANNED;
          sim_trace(s, "settle: c0 compacts log %" PRIu64 " [%" PRIu64 ", %" PRIu64 ")",
                    s->logs[k].id, c->r.s, c->r.e);
          busy = 1;
        } else if (rc == 0)
          compactor_idle(c);
      }
    }
    if (!busy) {
      settle_tasks(s);
      /* every unreferenced object may go: a pass marks them, one after the
       * grace deletes them; readers holding cached records past their
       * lifetime would then fail (L3) */
      act_reclaim(s);
      s->now += SIM_WAL_GRACE_MS + 1000;
      act_reclaim(s);
      settle_reads(s, held);
      tarn_reader_close(held);
      return;
    }
  }
  tarn_reader_close(held);
  if (!s->failed)
    sim_fail(s, P_CompactionCompletes, "compaction did not catch up after the faults stopped");
}

int sim_run(sim *s) {
  static unsigned run_no;
  g_sim = s;
  sim_watchdog_run(s->seed, &s->trace, &s->tlen);
  s->rng = s->seed * 0x9e3779b97f4a7c15u + 1;
  s->lib_rng = s->seed ^ 0x5851f42d4c957f2du;
  s->now = EPOCH_MS;
  s->hash = 0xcbf29ce484222325u;
  s->faults_on = 1;
  /* fault rates vary by seed, so that some runs are calm and some stormy */
  s->p_obj_fault = (unsigned)sim_below(s, 250);
  s->p_meta_fault = (unsigned)sim_below(s, 150);
  s->p_crash = (unsigned)sim_below(s, 8);
  s->p_expire = (unsigned)sim_below(s, 60);
#ifdef TARN_PLANTED_BUGS
  tarn__planted_bug = s->bug;
#endif
  run_no++;
  snprintf(s->meta_uri, sizeof s->meta_uri, "mem:sim-%u-%" PRIu64 "?session_timeout_ms=600000",
           run_no, s->seed);
  snprintf(s->wal_uri, sizeof s->wal_uri, "mem:sim-wal-%u-%" PRIu64, run_no, s->seed);
  snprintf(s->cmp_uri, sizeof s->cmp_uri, "mem:sim-cmp-%u-%" PRIu64, run_no, s->seed);
  /* clocks: a skew of up to max_skew per process and for the store */
  s->max_skew = (int64_t)sim_below(s, chance(s, 250) ? 60001 : 2001);
  s->p_skew = (unsigned)sim_below(s, 10);
  for (int p = 0; p <= SIM_NPROCS; p++) {
    int64_t v = (int64_t)sim_below(s, (uint64_t)(2 * s->max_skew + 1)) - s->max_skew;
    if (p == SIM_NPROCS)
      s->store_skew = store_skew_of(s, v);
    else if (p != PROC_CHECK)
      s->skew[p] = v;
  }
  if (s->without & SIM_NO_SKEW) {
    s->max_skew = 0;
    s->store_skew = 0;
    memset(s->skew, 0, sizeof s->skew);
  }
  sim_store_skew_set(s, s->store_skew);
  tarn__clock_hooks h = {hook_now, hook_mono, hook_sleep, s};
  tarn__clock_set(&h);
  tarn__clock_set_store(hook_store_now, s);
  tarn__random_set_hook(hook_random, s);
  for (int k = 0; k < SIM_NLOGS; k++)
    s->logs[k].id = (uint64_t)k + 1;
  tarn_tasks_options_default(&s->topt);
  s->topt.max_failures = 3;
  s->topt.owner = "sim";
  if (open_meta(s, &s->cmeta) || open_meta(s, &s->tmeta) || open_meta(s, &s->dmeta) ||
      open_meta(s, &s->rmeta) || tarn_objstore_open(s->wal_uri, &s->cwal) ||
      tarn_objstore_open(s->cmp_uri, &s->ccmp))
    return -1;
  /* a catalog stream of SIM_NLOGS partitions: logs 1..SIM_NLOGS in a fresh store */
  tarn_catalog *cat;
  tarn_catalog_record rec;
  if (tarn_catalog_open(s->cmeta, NULL, &cat) || tarn_catalog_init(cat, NULL) ||
      tarn_catalog_create_stream(cat, "sim", "s", SIM_NLOGS, NULL, 0, &rec)) {
    fprintf(stderr, "tarn-sim: catalog: %s\n", tarn_errmsg());
    return -1;
  }
  for (size_t k = 0; k < rec.n_logs; k++)
    if (rec.logs[k] != k + 1)
      abort();
  tarn_catalog_record_free(&rec);
  tarn_catalog_close(cat);
  /* the deployment's timing, legal: 61 s > 30 + 10 + 10 s; writers open
   * against it (docs/compaction.md "Grace arithmetic") */
  tarn_timing tm = {.wal_grace_ms = SIM_WAL_GRACE_MS,
                    .max_publish_delay_ms = 30000,
                    .max_put_ms = 10000,
                    .skew_allowance_ms = 10000};
  if (tarn_timing_record(s->cmeta, &tm, NULL)) {
    fprintf(stderr, "tarn-sim: timing: %s\n", tarn_errmsg());
    return -1;
  }
  tarn_reader_options o;
  tarn_reader_options_default(&o);
  o.index_ttl_ms = 0;
  o.head_cache_bytes = 0;
  if (tarn_reader_open(s->cmeta, s->cwal, s->ccmp, &o, &s->fresh))
    return -1;
  reopen_stale(s);
  sim_trace(s,
            "seed %" PRIu64 " bug %s: object faults %u/1000, metadata faults %u/1000, "
            "crashes %u/1000, expiries %u/10000, clock skew up to %" PRId64 " ms (%u/1000 steps "
            "reset one)",
            s->seed, sim_bug_names[s->bug], s->p_obj_fault, s->p_meta_fault, s->p_crash,
            s->p_expire, s->max_skew, s->p_skew);
  for (int k = 0; k < SIM_NWRITERS; k++)
    writer_start(s, k);
  for (int k = 0; k < SIM_NCOMPACTORS; k++)
    compactor_start(s, k);
  for (s->step = 1; s->step <= s->steps && !s->failed; s->step++) {
    sim_watchdog_pet(s->step);
    SIM_CHECKED(s, P_Hang);
    /* the watchdog's self-test: a step whose role call never returns */
    while (s->step == s->hang_at)
      (void)tarn_meta_session_ok(s->cmeta);
    one_step(s);
    if (!s->failed)
      sim_check_step(s);
    if (!s->failed && s->step % 64 == 0)
      sim_check_full(s);
  }
  if (!s->failed) {
    s->step = s->steps + 1;
    sim_watchdog_pet(s->step);
    SIM_CHECKED(s, P_Hang);
    settle(s);
  }
  if (!s->failed)
    sim_check_step(s);
  if (!s->failed)
    sim_check_full(s);
  sim_trace(s, "end: %s", s->failed ? "FAILED" : "ok");
  return s->failed;
}

void sim_free(sim *s) {
  for (int k = 0; k < SIM_NWRITERS; k++)
    if (s->wr[k].alive)
      writer_crash(s, k);
  for (int k = 0; k < SIM_NCOMPACTORS; k++)
    if (s->cp[k].alive) {
      s->cp[k].state = CP_IDLE;
      compactor_crash(s, k);
    }
  for (int k = 0; k < SIM_NTNODES; k++)
    if (s->tn[k].alive)
      tnode_end(s, k, 0);
  free(s->committed);
  for (size_t k = 0; k < s->nzombies; k++)
    tarn_meta_close(s->zombies[k].meta);
  tarn_reader_close(s->fresh);
  tarn_reader_close(s->stale);
  tarn_meta_close(s->cmeta);
  tarn_meta_close(s->tmeta);
  tarn_meta_close(s->dmeta);
  tarn_meta_close(s->rmeta);
  if (s->rzombie)
    tarn_meta_close(s->rzombie);
  tarn_objstore_close(s->cwal);
  tarn_objstore_close(s->ccmp);
  tarn_objstore_mem_drop(s->wal_uri + 4);
  tarn_objstore_mem_drop(s->cmp_uri + 4);
  for (int k = 0; k < SIM_NLOGS; k++) {
    free(s->logs[k].spans);
    free(s->logs[k].acked);
  }
  free(s->ents);
  sim_wnames_free(s);
  free(s->trace);
  tarn__clock_set(NULL);
  tarn__clock_set_store(NULL, NULL);
  tarn__random_set_hook(NULL, NULL);
  g_sim = NULL;
}
