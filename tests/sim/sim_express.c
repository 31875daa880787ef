/* tarn-sim --express: the express worlds (issue 14, "Simulation and planted
 * bugs"; docs/simulation.md "Express worlds").
 *
 * The real stepped express writer (src/express/xwriter.c), the real fence
 * (fence.c, observe.c), settlement and absorb (settle.c, absorb.c) and the
 * writer's in-process roll run over mem: buckets and a mem: metadata store on
 * a simulated clock, one seeded scheduler choosing every unit of work. Faults:
 * a bucket unreachable (every call fails) for a while, failed PUTs, lost
 * replies (applied, reported unknown), delayed PUTs (held in flight, landing
 * later or never, create-only judged then), index puts of unknown outcome in
 * absorb, and crashes of the writer at step boundaries. A crashed writer
 * lives on as a partitioned zombie: cut off from the metadata store, it keeps
 * writing its slots into the buckets and acknowledging what it sees committed.
 * A crash is followed by two racing fencers (the second runs inside the
 * first's walk, between two of its bucket calls, through the mem: store's
 * hook; so do the zombie's PUTs and late landings), then settlement, then a
 * successor writer of the same star. K = 3 / W = 2 and K = W = 1 worlds.
 *
 * The properties (each named in a failure):
 *   XAckedNeverCut        no acknowledged slot is ever cut
 *   XNothingAckedPastCut  nothing at or past a published cut is acknowledged
 *   XOneCut               every published cut of an epoch is the same, and at
 *                         most one slot is dead (the cut, which stays dead)
 *   XBelowCutCommitted    every slot in [trimmed, cut) holds >= W flights
 *   XStragglersInWindow   flights at or past the cut lie in [cut, cut+WIN-1]
 *   XAckReadBack          after settlement every acknowledged entry is read
 *                         at its acknowledged offset, exactly once (and no
 *                         entry is read that was never appended or failed)
 *   XRollRepublishesExactly  a roll acknowledges the pooled payloads below
 *                         the cut and republishes exactly those at or above
 *                         it, never both */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_watchdog.h"
#include "express/express_internal.h"
#include "express/fence.h"
#include "express/xwriter_internal.h"
#include "tarn/error.h"
#include "tarn/express.h"
#include "tarn/express_fence.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/reader.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

#define XS_STAR "xstar"
#define XS_LOGS 2
#define XS_MAX_W                                                                                   \
  4096 /* writer processes of one world (every crash, pause and second                             \
          process starts one); 20,000 steps start a few hundred */

enum { XE_PENDING = 0, XE_ACKED, XE_FAILED, XE_UNKNOWN };

typedef struct xrec {
  uint64_t id, log, off, epoch, slot;
  uint32_t records;
  size_t len;
  int state, outcomes, wid, seen;
  int pooled; /* scratch of the roll check */
} xrec;

typedef struct xw {
  tarn_meta *m;
  tarn_xwriter *w;
  int zombie;   /* crashed: partitioned from the metadata store */
  int paused;   /* stopped (SIGSTOP): takes no step until it resumes */
  int expired;  /* its session ended at the store (it was not told) */
  int rival;    /* runs beside the leader with full access to the stores and the clock: a
                   paused writer that resumed, or a second process of the star (issue 30) */
  int late_log; /* it writes log 1 only until a later unit starts log 2: a first append
                   (a gate) after its rolls (issue 30 item 3: the gate and its own epochs) */
} xw;

/* The racing-opens worlds: XG_STARS stars, each run by one process at a
 * time (an instance: its own metadata session and writer). */
#define XG_STARS 3
#define XG_LOGS 2
#define XG_MAX_INST 8192 /* 20,000 steps start about 1,000 instances */
#define XN_NODES 3       /* the takeover nodes (tarn serve's express-takeover job) */
typedef struct xg_inst {
  int star;
  uint64_t first_epoch; /* the epoch it minted at its start */
  tarn_meta *m;         /* NULL once its session ended */
  tarn_xwriter *w;      /* NULL once closed or crashed */
  int paused;           /* stopped past its session: no step until it resumes (issue 30) */
  int expired;          /* its session ended at the store, it was not told */
  int rival;            /* not the star's running instance (gi_of), yet running with full
                           access: resumed after a pause, or a second process of the star */
} xg_inst;
typedef struct xg_tenure {
  int valid, star, inst;
  uint64_t epoch;
} xg_tenure;

typedef struct xsim xsim;
typedef struct xhk {
  xsim *s;
  uint32_t b;
} xhk;
/* Who is running, for the deletion checks. */
enum { ACT_OTHER = 0, ACT_RECLAIM, ACT_SETTLE };

struct xsim {
  uint64_t seed, rng;
  int steps, step, trace, bug;
  int64_t now;
  uint32_t k, wq, win;
  char meta_uri[128], wal_uri[128], b_uri[TARN__X_K_MAX][128];
  tarn_meta *m;     /* the checker's and the settler's session */
  tarn_meta *fm[2]; /* the two fencers' sessions */
  tarn_objstore *wal, *b[TARN__X_K_MAX];
  int down[TARN__X_K_MAX];
  xw *ws;       /* XS_MAX_W */
  int nw, live; /* live: index of the leading writer, -1 none */
  xrec *recs;
  size_t nrecs, caprecs;
  /* per epoch, grown as epochs are minted (no limit: a world of 20,000 steps
   * passes epoch 255; issue 30) */
  uint64_t *cut;    /* published cut + 1 (0: none seen) */
  uint8_t *pending; /* bucket checks owed (run while every bucket is up) */
  uint8_t *settled;
  size_t nep;
  int in_hook, fencing, racer_ran, check_all;
  /* issue 30's worlds: live zombies (paused writers that resume with full
   * access), second processes of one star, the timer thread's model, the
   * library's own settlement order; off with --classic (the worlds before
   * them, seed for seed) */
  int live_feats, rolling; /* rolling: the writer whose roll's fence runs, -1 none */
  int no_pause, no_twin, no_timer, no_libsettle; /* --without pause,twin,timer,libsettle
                                                    (the draws stay) */
  unsigned p_pause, p_twin;
  uint64_t pauses, resumes, twins, timers, rival_acks;
  unsigned p_fault, p_down, p_crash, p_unknown;
  char failure[1024];
  int failed;
  /* counters printed by a range run */
  uint64_t acks, fences, rolls, settles, crashes, lands, races;
  xhk hk[TARN__X_K_MAX];
  int actor;
  struct {
    uint64_t epoch, slot;
  } * reclaimed; /* flights deleted by reclamation */
  size_t nreclaimed;
  /* the racing-opens worlds (several stars) */
  xg_inst *gi;
  int ngi, gi_of[XG_STARS];     /* gi_of: a star's running instance, -1 none */
  xg_tenure ten[XG_LOGS + 1];   /* the last tenure admitted on each log */
  uint64_t *owner[XG_LOGS + 1]; /* offset -> entry id + 1 of its acknowledgement */
  size_t nowner[XG_LOGS + 1];
  uint64_t opens, deferrals, marks_used, preds_settled, finishes, restarts, expiries, nested;
  int opening; /* the instance whose open's gate runs (its bucket calls may interleave
                  another's), -1 none */
  /* the takeover nodes (issue 15 "Serving") */
  tarn_meta *node[XN_NODES];        /* its session; NULL while the node is down */
  tarn_meta *node_zombie[XN_NODES]; /* a crashed node's session, until it expires */
  int taking;                       /* a takeover runs: its bucket calls interleave opens */
  int quiet;                        /* the faults stopped: no more interleaving */
  int judging, tk_node;             /* the star a takeover judges (its judged window), the node */
  int node_expired[XN_NODES];       /* its session expired silently during this pass */
  unsigned p_node_crash;
  uint64_t tk_runs, tk_busy, tk_verdict[5], tk_epochs, tk_errors, tk_crashes, tk_expiries,
      tk_window, tk_final;
};

static xsim *X; /* the hooks' world (one run at a time) */

static uint64_t rnd(xsim *s) {
  uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static uint64_t below(xsim *s, uint64_t n) { return n ? rnd(s) % n : 0; }
static int per_mille(xsim *s, unsigned p) { return below(s, 1000) < p; }

static void trace(xsim *s, const char *fmt, ...) {
  if (!s->trace)
    return;
  va_list ap;
  va_start(ap, fmt);
  printf("[%d t=%" PRId64 "] ", s->step, s->now);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

static void fail(xsim *s, const char *prop, const char *fmt, ...) {
  if (s->failed)
    return;
  s->failed = 1;
  int n = snprintf(s->failure, sizeof s->failure, "%s: ", prop);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->failure + n, sizeof s->failure - (size_t)n, fmt, ap);
  va_end(ap);
}

/* ---- per-epoch state (no limit on epochs) ---------------------------------- */

/* Makes room for epoch's entries (zeroed). */
static void ep_grow(xsim *s, uint64_t epoch) {
  if (epoch < s->nep)
    return;
  size_t n = s->nep ? s->nep : 64;
  while (n <= epoch)
    n *= 2;
  s->cut = realloc(s->cut, n * sizeof *s->cut);
  s->pending = realloc(s->pending, n);
  s->settled = realloc(s->settled, n);
  if (!s->cut || !s->pending || !s->settled)
    abort();
  memset(s->cut + s->nep, 0, (n - s->nep) * sizeof *s->cut);
  memset(s->pending + s->nep, 0, n - s->nep);
  memset(s->settled + s->nep, 0, n - s->nep);
  s->nep = n;
}
/* The published cut + 1 the checker saw for epoch (0: none). */
static uint64_t cut_of(const xsim *s, uint64_t epoch) { return epoch < s->nep ? s->cut[epoch] : 0; }

/* ---- clock and randomness ------------------------------------------------- */

static void interleave(xsim *s);
static void timer_step(xsim *s, int wi, const char *when);
static void append_one(xsim *s, int wi, uint64_t log);
static int was_reclaimed(const xsim *s, uint64_t epoch, uint64_t slot);

static int64_t h_now(void *a) { return 1700000000000LL + ((xsim *)a)->now; }
static int64_t h_mono(void *a) { return ((xsim *)a)->now; }
static void h_sleep(void *a, int64_t ms) {
  xsim *s = a;
  s->now += ms > 0 ? ms : 1;
  /* time passing: while a fence blocks, an outage may end */
  if (s->fencing && !s->in_hook && per_mille(s, 150))
    for (uint32_t i = 0; i < s->k; i++)
      if (s->down[i] && per_mille(s, 500)) {
        tarn_objstore_mem_reset_faults(s->b[i]);
        s->down[i] = 0;
        trace(s, "bucket %u up (while a fence waits)", i);
      }
}
static void h_random(void *a, void *p, size_t n) {
  xsim *s = a;
  for (size_t i = 0; i < n; i++)
    ((uint8_t *)p)[i] = (uint8_t)rnd(s);
}

/* ---- entries --------------------------------------------------------------- */

static xrec *rec_new(xsim *s) {
  if (s->nrecs == s->caprecs) {
    s->caprecs = s->caprecs ? 2 * s->caprecs : 256;
    s->recs = realloc(s->recs, s->caprecs * sizeof *s->recs);
    if (!s->recs)
      abort();
  }
  xrec *r = &s->recs[s->nrecs];
  memset(r, 0, sizeof *r);
  r->id = s->nrecs++;
  return r;
}

/* id (8 bytes, little-endian), then bytes that are a function of it */
static void payload_of(uint64_t id, size_t len, uint8_t *p) {
  for (size_t i = 0; i < len; i++)
    p[i] = i < 8 ? (uint8_t)(id >> (8 * i)) : (uint8_t)(id * 31 + i);
}

/* The (epoch, slot) an entry of writer w went out in (the flight holding it). */
static int slot_of(tarn_xwriter *w, const void *arg, uint64_t *epoch, uint64_t *slot) {
  for (xflight *f = w->head; f; f = f->next)
    for (size_t i = 0; i < f->n; i++)
      if (f->ents[i].arg == arg && f->ents[i].cb) {
        *epoch = f->epoch, *slot = f->slot;
        return 1;
      }
  return 0;
}

static void saw_cut(xsim *s, uint64_t epoch, uint64_t cut, const char *who);

/* A cut some gate or takeover published (their fences are not the
 * checker's): learnt from the epoch record. */
static void learn_cut(xsim *s, uint64_t epoch) {
  if (cut_of(s, epoch))
    return;
  tarn__xepoch e;
  if (tarn__xepoch_load(s->m, XS_STAR, TARN__X_CLASS_EXPRESS, epoch, &e)) {
    tarn_errclear();
    return;
  }
  int has = e.state == TARN__XEPOCH_FENCED && e.has_cut;
  uint64_t cut = e.cut;
  tarn__xepoch_free(&e);
  if (has)
    saw_cut(s, epoch, cut, "a gate's fence");
}

static void check_ack_vs_cut(xsim *s, const xrec *r) {
  learn_cut(s, r->epoch);
  uint64_t c = cut_of(s, r->epoch);
  if (c && r->slot >= c - 1)
    fail(s, "XNothingAckedPastCut",
         "entry %" PRIu64 " acknowledged in epoch %" PRIu64 " slot %" PRIu64
         ", at or past the published cut %" PRIu64,
         r->id, r->epoch, r->slot, c - 1);
}

/* XNoOffsetTwice: the offset of an acknowledged entry was acknowledged to no
 * other entry before (across writers, processes of one star, stars). */
static const char *who_of(const xsim *s, const xrec *r);
static void own_offset(xsim *s, const xrec *r) {
  size_t *n = &s->nowner[r->log];
  if (r->off >= *n) {
    size_t nn = r->off + 64;
    s->owner[r->log] = realloc(s->owner[r->log], nn * sizeof *s->owner[r->log]);
    if (!s->owner[r->log])
      abort();
    memset(s->owner[r->log] + *n, 0, (nn - *n) * sizeof *s->owner[r->log]);
    *n = nn;
  }
  uint64_t *o = &s->owner[r->log][r->off];
  if (*o)
    fail(s, "XNoOffsetTwice",
         "log %" PRIu64 " offset %" PRIu64 " acknowledged to entry %" PRIu64 " (%s) and before "
         "to entry %" PRIu64 " (%s)",
         r->log, r->off, r->id, who_of(s, r), *o - 1, who_of(s, &s->recs[*o - 1]));
  *o = r->id + 1;
}

static void on_outcome(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  xsim *s = X;
  xrec *r = &s->recs[(uintptr_t)arg];
  r->outcomes++;
  if (r->outcomes > 1) {
    fail(s, "XAckReadBack", "entry %" PRIu64 " got a second outcome (%d)", r->id, status);
    return;
  }
  if (status == 0) {
    r->state = XE_ACKED;
    r->off = offset;
    s->acks++;
    if (!slot_of(s->ws[r->wid].w, arg, &r->epoch, &r->slot))
      fail(s, "XAckReadBack", "entry %" PRIu64 " acknowledged outside any flight", r->id);
    s->rival_acks += s->ws[r->wid].rival;
    check_ack_vs_cut(s, r);
    own_offset(s, r);
  } else {
    r->state = status == TARN_EUNKNOWN ? XE_UNKNOWN : XE_FAILED;
    trace(s, "  entry %" PRIu64 " fails: %d", r->id, status);
  }
}

/* ---- observing the buckets (the checker's view: every bucket up) ----------- */

static void count_slot(xsim *s, uint64_t epoch, uint64_t slot, uint32_t *flight, uint32_t *poison) {
  char key[TARN__X_SLOT_KEY_MAX + 1];
  tarn__xslot_key(key, sizeof key, XS_STAR, epoch, slot);
  tarn_buf got;
  tarn_buf_init(&got);
  *flight = *poison = 0;
  s->in_hook++; /* the checker's reads are no actor's: no interleaving */
  for (uint32_t i = 0; i < s->k; i++) {
    int st = tarn__xslot_observe(s->b[i], key, XS_STAR, epoch, slot, &got);
    *flight += st == TARN__XOBS_FLIGHT;
    *poison += st == TARN__XOBS_POISON;
  }
  s->in_hook--;
  tarn_buf_free(&got);
}

/* The checks of one fenced epoch's bucket state. The checker reads what the
 * buckets hold, so it waits for a moment when none is unreachable. */
static void check_epoch_buckets(xsim *s, uint64_t epoch) {
  ep_grow(s, epoch);
  for (uint32_t i = 0; i < s->k; i++)
    if (s->down[i]) {
      s->pending[epoch] = 1;
      return;
    }
  s->pending[epoch] = 0;
  tarn__xepoch e;
  if (tarn__xepoch_load(s->m, XS_STAR, TARN__X_CLASS_EXPRESS, epoch, &e))
    return;
  if (e.state != TARN__XEPOCH_FENCED || !e.has_cut) {
    tarn__xepoch_free(&e);
    return;
  }
  uint64_t cut = e.cut;
  uint32_t blocking = s->k - s->wq + 1;
  for (uint64_t slot = e.trimmed; slot < cut && !s->failed; slot++) {
    uint32_t f, p;
    count_slot(s, epoch, slot, &f, &p);
    if (f < s->wq && !(slot < e.checkpoint && was_reclaimed(s, epoch, slot)))
      fail(s, "XBelowCutCommitted",
           "epoch %" PRIu64 " slot %" PRIu64 " below the cut %" PRIu64 " holds %u flights (W=%u)",
           epoch, slot, cut, f, s->wq);
    if (p >= blocking)
      fail(s, "XOneCut", "epoch %" PRIu64 " slot %" PRIu64 " below the cut %" PRIu64 " is dead",
           epoch, slot, cut);
  }
  uint32_t f, p;
  count_slot(s, epoch, cut, &f, &p);
  if (p < blocking)
    fail(s, "XOneCut", "epoch %" PRIu64 " cut slot %" PRIu64 " holds %u poison (< K-W+1 = %u)",
         epoch, cut, p, blocking);
  /* stragglers: any flight at or past the cut within [cut, cut + WIN - 1];
   * a second dead slot anywhere past it */
  char prefix[TARN__X_SLOT_KEY_MAX + 1];
  tarn__xslot_epoch_prefix(prefix, sizeof prefix, XS_STAR, epoch);
  s->in_hook++;
  for (uint32_t i = 0; i < s->k && !s->failed; i++) {
    tarn_objstore_listing l;
    memset(&l, 0, sizeof l);
    if (tarn_objstore_list(s->b[i], prefix, "", 100000, &l) == 0) {
      for (size_t j = 0; j < l.n && !s->failed; j++) {
        char star[TARN__X_STAR_MAX + 1];
        uint64_t ep, slot;
        if (tarn__xslot_key_parse(l.names[j], star, &ep, &slot) || slot <= cut)
          continue;
        uint32_t ff, pp;
        s->in_hook--;
        count_slot(s, epoch, slot, &ff, &pp);
        s->in_hook++;
        if (pp >= blocking)
          fail(s, "XOneCut", "epoch %" PRIu64 ": slot %" PRIu64 " is dead past the cut %" PRIu64,
               epoch, slot, cut);
        if (ff > 0 && slot > cut + s->win - 1)
          fail(s, "XStragglersInWindow",
               "epoch %" PRIu64 ": a flight at slot %" PRIu64 ", past cut + WIN - 1 = %" PRIu64,
               epoch, slot, cut + s->win - 1);
      }
    }
    tarn_objstore_listing_free(&l);
  }
  s->in_hook--;
  tarn__xepoch_free(&e);
}

/* A cut just published (or read): the same as any before; no acknowledged
 * slot at or past it. */
static void saw_cut(xsim *s, uint64_t epoch, uint64_t cut, const char *who) {
  ep_grow(s, epoch);
  if (s->cut[epoch] && s->cut[epoch] - 1 != cut)
    fail(s, "XOneCut", "epoch %" PRIu64 ": %s got cut %" PRIu64 ", another %" PRIu64, epoch, who,
         cut, s->cut[epoch] - 1);
  s->cut[epoch] = cut + 1;
  for (size_t i = 0; i < s->nrecs && !s->failed; i++)
    if (s->recs[i].state == XE_ACKED && s->recs[i].epoch == epoch && s->recs[i].slot >= cut)
      fail(s, "XAckedNeverCut",
           "epoch %" PRIu64 ": %s cut at slot %" PRIu64 ", but entry %" PRIu64
           " was acknowledged in slot %" PRIu64,
           epoch, who, cut, s->recs[i].id, s->recs[i].slot);
  check_epoch_buckets(s, epoch);
}

/* ---- fencing ----------------------------------------------------------------- */

static int fence_one(xsim *s, tarn_meta *m, uint64_t epoch, int64_t timeout, const char *who) {
  tarn_xfence_opts o = {.timeout_ms = timeout, .retry_ms = 50 + (int64_t)below(s, 200)};
  tarn_xfence_report r;
  int was = s->fencing;
  s->fencing = 1;
  int rc = tarn_express_fence(m, XS_STAR, epoch, &o, &r);
  s->fencing = was;
  s->fences++;
  trace(s,
        "%s fences epoch %" PRIu64 ": rc %d cut %" PRIu64 " (estimate %" PRIu64 ", start %" PRIu64
        ", %" PRIu64 " poison)",
        who, epoch, rc, r.cut, r.estimate, r.start, r.poison_puts);
  if (rc == TARN_ECORRUPT)
    fail(s, "XOneCut", "epoch %" PRIu64 ": %s: %s", epoch, who, tarn_errmsg());
  else if (rc == 0)
    saw_cut(s, epoch, r.cut, who);
  return rc;
}

/* The writer's roll hook: the star fences its own halted epoch. A zombie is
 * cut off from the metadata store and cannot. */
static int roll_fence(void *arg, tarn_meta *m, const char *star, uint64_t epoch, uint64_t *cut) {
  (void)star;
  xsim *s = X;
  xw *w = &s->ws[(uintptr_t)arg];
  if (w->zombie)
    return tarn__err(TARN_EUNAVAIL, "partitioned from the metadata store");
  s->rolls++;
  s->racer_ran = 0;
  int was = s->rolling;
  s->rolling = (int)(uintptr_t)arg; /* its timer and appends may run inside (interleave) */
  char who[48];
  snprintf(who, sizeof who, "w%d's roll's fence", (int)(uintptr_t)arg);
  int rc = fence_one(s, m, epoch, 500 + (int64_t)below(s, 3000), who);
  s->rolling = was;
  if (rc == 0)
    *cut = cut_of(s, epoch) - 1;
  return rc;
}

/* One of the writer's sealed flights, drawn at random (NULL: none). */
static xflight *pick_flight(xsim *s, tarn_xwriter *w) {
  int n = 0;
  for (xflight *f = w->head; f; f = f->next)
    n++;
  xflight *f = w->head;
  for (int j = n ? (int)below(s, (uint64_t)n) : 0; f && j > 0; j--)
    f = f->next;
  return f;
}

/* Between two bucket calls of a fencing actor: another actor's step. */
static void interleave(xsim *s) {
  if (s->in_hook || !s->fencing || !per_mille(s, 80))
    return;
  s->in_hook++;
  if (s->live_feats && s->rolling >= 0 && s->ws[s->rolling].w && per_mille(s, 400)) {
    /* the rolling writer's other threads go on meanwhile: its timer (the
     * model of timer_main: it must wait, not go round holding the lock the
     * roll needs back), or an append */
    if (per_mille(s, 600)) {
      if (!s->no_timer)
        timer_step(s, s->rolling, "inside its roll");
    } else if (s->ws[s->rolling].w->logs)
      append_one(s, s->rolling, s->ws[s->rolling].w->logs->log_id);
    s->in_hook--;
    return;
  }
  uint64_t pick = below(s, 10);
  if (pick < 2 && !s->racer_ran) {
    /* the racing fencer: a whole fence of the same epoch, inside the walk */
    tarn__xepoch e;
    uint64_t head = 0;
    tarn__xchain_head(s->fm[1], XS_STAR, TARN__X_CLASS_EXPRESS, &head);
    for (uint64_t ep = head; ep >= 1; ep--)
      if (tarn__xepoch_load(s->fm[1], XS_STAR, TARN__X_CLASS_EXPRESS, ep, &e) == 0) {
        int open = e.state == TARN__XEPOCH_OPEN;
        tarn__xepoch_free(&e);
        if (open) {
          s->racer_ran = 1;
          s->races++;
          fence_one(s, s->fm[1], ep, 200 + (int64_t)below(s, 2000), "the racing fencer");
          break;
        }
      }
  } else if (pick < 7) {
    /* a writer's copy lands meanwhile (a zombie's, or the leader's own) */
    int wi = (int)below(s, (uint64_t)s->nw);
    tarn_xwriter *w = s->ws[wi].paused ? NULL : s->ws[wi].w;
    if (w) {
      xflight *f = pick_flight(s, w);
      if (f) {
        size_t b = below(s, s->k);
        uint64_t slot = f->slot;
        int rc = tarn_xwriter_step(w, TARN_XSTEP_PUT, slot, b);
        trace(s, "  (interleaved) w%d PUT slot %" PRIu64 " bucket %zu: %d", wi, slot, b, rc);
      }
    }
  } else {
    size_t b = below(s, s->k);
    if (tarn_objstore_mem_held(s->b[b])) {
      int rc = tarn_objstore_mem_land(s->b[b], 0);
      s->lands++;
      trace(s, "  (interleaved) a held PUT lands in bucket %zu: %d", b, rc);
    }
  }
  s->in_hook--;
}

static int was_reclaimed(const xsim *s, uint64_t epoch, uint64_t slot) {
  for (size_t i = 0; i < s->nreclaimed; i++)
    if (s->reclaimed[i].epoch == epoch && s->reclaimed[i].slot == slot)
      return 1;
  return 0;
}

/* A deletion in a bucket: poison never goes; below a published cut only
 * reclamation deletes (absorbed slots, after the grace), never settlement. */
static void on_delete(xsim *s, uint32_t b, const char *name) {
  char star[TARN__X_STAR_MAX + 1];
  uint64_t epoch, slot;
  if (tarn__xslot_key_parse(name, star, &epoch, &slot))
    return;
  tarn_buf got;
  tarn_buf_init(&got);
  int st = tarn__xslot_observe(s->b[b], name, star, epoch, slot, &got);
  tarn_buf_free(&got);
  trace(s, "  bucket %u: delete %s (%s)", b, name,
        st == TARN__XOBS_FLIGHT   ? "flight"
        : st == TARN__XOBS_POISON ? "poison"
                                  : "other");
  uint64_t cut = cut_of(s, epoch);
  /* A poison copy at a committed slot below the cut (a fencer's PUT that
   * lost the race to the flight) decides nothing: reclamation may take it
   * with the flights. Anywhere else poison stands. */
  if (st == TARN__XOBS_POISON && !(cut && slot < cut - 1 && s->actor == ACT_RECLAIM))
    fail(s, "XOneCut", "poison of epoch %" PRIu64 " slot %" PRIu64 " deleted from bucket %u", epoch,
         slot, b);
  if (st == TARN__XOBS_FLIGHT && cut && slot < cut - 1 && s->actor == ACT_SETTLE)
    fail(s, "XBelowCutCommitted",
         "settlement deleted the flight of epoch %" PRIu64 " slot %" PRIu64
         " below the cut %" PRIu64 " from bucket %u",
         epoch, slot, cut - 1, b);
  if (st == TARN__XOBS_FLIGHT && s->actor == ACT_RECLAIM && !was_reclaimed(s, epoch, slot)) {
    s->reclaimed = realloc(s->reclaimed, (s->nreclaimed + 1) * sizeof *s->reclaimed);
    if (!s->reclaimed)
      abort();
    s->reclaimed[s->nreclaimed].epoch = epoch;
    s->reclaimed[s->nreclaimed++].slot = slot;
  }
}

static void h_bucket(void *arg, int op, const char *name) {
  xhk *h = arg;
  xsim *s = h->s;
  if (op == TARN_MEM_OP_DELETE && !s->in_hook) {
    s->in_hook++;
    on_delete(s, h->b, name);
    s->in_hook--;
  }
  interleave(s);
}

/* ---- writers ------------------------------------------------------------------ */

/* A writer process of the star opens: the leader (a successor), or, with
 * rival, a second process of the star beside a running leader (issue 30
 * item 2: at most one live process per star; the open must refuse it). */
static int process_open(xsim *s, int rival) {
  if (s->nw == XS_MAX_W)
    return -1;
  xw *w = &s->ws[s->nw];
  memset(w, 0, sizeof *w);
  if (tarn_meta_open(s->meta_uri, &w->m))
    abort();
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = XS_STAR;
  o.stepped = 1;
  o.max_flight_bytes = 1 << 20;
  o.put_attempts = 1 + (int)below(s, 3);
  o.reclaim_grace_ms = 30000;
  o.max_rolls = 1000;
  o.fence = roll_fence;
  o.fence_arg = (void *)(uintptr_t)s->nw;
  int rc = tarn_xwriter_open(w->m, s->wal, &o, &w->w);
  if (rc) {
    trace(s, "%swriter open failed: %s", rival ? "a second process's " : "", tarn_errmsg());
    tarn_meta_close(w->m);
    w->m = NULL;
    w->w = NULL;
    return rc;
  }
  if (s->live_feats)
    w->late_log = per_mille(s, 500);
  trace(s, "w%d opens%s, epoch %" PRIu64, s->nw,
        rival ? " (a second process of the star, beside the leader)" : "",
        tarn_xwriter_epoch(w->w));
  w->rival = rival;
  if (rival) {
    s->twins++;
    s->nw++;
  } else
    s->live = s->nw++;
  return 0;
}
static int writer_open(xsim *s) { return process_open(s, 0); }

/* Heals every bucket: outages end, held PUTs land (or are dropped). */
static void heal(xsim *s) {
  for (uint32_t i = 0; i < s->k; i++) {
    tarn_objstore_mem_reset_faults(s->b[i]);
    s->down[i] = 0;
    while (tarn_objstore_mem_held(s->b[i]))
      tarn_objstore_mem_land(s->b[i], per_mille(s, 300));
  }
}

/* Fences (two racing fencers) and settles every unsettled epoch of the star. */
static void fence_and_settle_all(xsim *s) {
  uint64_t head = 0;
  tarn__xchain_head(s->m, XS_STAR, TARN__X_CLASS_EXPRESS, &head);
  /* half the time the settlement is the library's own loop over the
   * star's epochs (tarn__xsettle_range, the gate's and the takeover's), so
   * its order is judged (issue 30 item 3: oldest first), not the checker's */
  int lib = s->live_feats && per_mille(s, 500) && !s->no_libsettle;
  for (uint64_t ep = 1; ep <= head && !s->failed; ep++) {
    tarn__xepoch e;
    if (tarn__xepoch_load(s->m, XS_STAR, TARN__X_CLASS_EXPRESS, ep, &e))
      continue; /* a burned number */
    int fenced = e.state == TARN__XEPOCH_FENCED;
    tarn__xepoch_free(&e);
    int rc = 0;
    s->racer_ran = 0;
    if (!fenced) {
      for (int attempt = 0; attempt < 4 && !s->failed; attempt++) {
        rc = fence_one(s, s->fm[0], ep, (int64_t)below(s, 2000), "fencer 1");
        if (rc == 0)
          break;
        heal(s); /* undecided: the outage ends, the fence is retried */
      }
      if (rc == 0 && !s->failed)
        fence_one(s, s->fm[1], ep, 1000, "fencer 2"); /* a later fence is a read */
    }
    if (rc || s->failed || (ep < s->nep && s->settled[ep]) || lib)
      continue;
    heal(s);
    tarn_xsettle_report sr;
    tarn_xfence_opts o = {.timeout_ms = 1000, .retry_ms = 50};
    s->actor = ACT_SETTLE;
    rc = tarn_express_settle(s->m, s->wal, XS_STAR, ep, &o, &sr);
    s->actor = ACT_OTHER;
    s->settles++;
    trace(s, "settles epoch %" PRIu64 ": rc %d (%" PRIu64 " absorbed, %" PRIu64 " deleted)", ep, rc,
          sr.absorbed, sr.deleted);
    if (rc)
      fail(s, "XAckReadBack", "settling epoch %" PRIu64 ": %s", ep, tarn_errmsg());
    else {
      ep_grow(s, ep);
      s->settled[ep] = 1;
      check_epoch_buckets(s, ep);
    }
  }
  if (!lib || s->failed)
    return;
  heal(s);
  s->actor = ACT_SETTLE;
  int rc = tarn__xsettle_range(s->m, s->wal, XS_STAR, 1, head);
  s->actor = ACT_OTHER;
  s->settles++;
  trace(s, "settles epochs 1..%" PRIu64 " (the library's loop): rc %d", head, rc);
  if (rc)
    fail(s, "XAckReadBack", "settling epochs 1..%" PRIu64 " (tarn__xsettle_range): %s", head,
         tarn_errmsg());
  for (uint64_t ep = 1; ep <= head && !s->failed; ep++) {
    learn_cut(s, ep);
    if (cut_of(s, ep)) {
      s->settled[ep] = 1;
      check_epoch_buckets(s, ep);
    }
  }
}

static void crash(xsim *s) {
  xw *w = &s->ws[s->live];
  s->crashes++;
  trace(s, "w%d CRASHES: a zombie from now on, cut off from the metadata store", s->live);
  w->zombie = 1;
  tarn_meta_inject_fault(w->m, TARN_META_FAULT_EXPIRE_SILENT, 0);
  tarn_meta_inject_fault(w->m, TARN_META_FAULT_FAIL, 1 << 30);
  s->live = -1;
  fence_and_settle_all(s);
  if (!s->failed)
    writer_open(s);
}

/* The leader stops (SIGSTOP) past its session: the store ends the session
 * (its leases and liveness record vanish; it is not told), and a takeover
 * fences and settles its epoch now, or the successor's gate will at its
 * first append. Later it resumes with full access to the stores and the
 * clock (issue 30 item 1): resume(). */
static void pause_leader(xsim *s) {
  xw *w = &s->ws[s->live];
  s->pauses++;
  trace(s, "w%d PAUSES (SIGSTOP): its session ends at the store, it is not told", s->live);
  w->paused = w->expired = 1;
  tarn_meta_inject_fault(w->m, TARN_META_FAULT_EXPIRE_SILENT, 0);
  s->live = -1;
  if (per_mille(s, 500))
    fence_and_settle_all(s); /* a takeover; else the successor's gate settles it */
  if (!s->failed)
    writer_open(s);
}

/* A paused writer resumes (SIGCONT) and goes on appending, sealing,
 * rolling, absorbing: a rival of the leader with full access. */
static void resume(xsim *s) {
  int n = 0;
  for (int i = 0; i < s->nw; i++)
    n += s->ws[i].paused && s->ws[i].w;
  if (!n)
    return;
  int j = (int)below(s, (uint64_t)n);
  for (int i = 0; i < s->nw; i++)
    if (s->ws[i].paused && s->ws[i].w && j-- == 0) {
      s->ws[i].paused = 0;
      s->ws[i].rival = 1;
      s->resumes++;
      trace(s, "w%d RESUMES (SIGCONT), its session long expired", i);
      return;
    }
}

/* A process's end without a word (kill -9): nothing more is written. */
static void process_kill(xsim *s, int wi) {
  trace(s, "w%d ends (kill -9)", wi);
  tarn__xwriter_abandon(s->ws[wi].w);
  s->ws[wi].w = NULL;
}

/* One turn of writer wi's timer thread (timer_main's loop, stepped:
 * TARN_XSTEP_TIMER): it seals what is due and must then wait. A loop that
 * goes round without waiting holds the writer's lock, and while a roll is
 * under way the roll never gets it back: the writer hangs (issue 30 item 4). */
static void timer_step(xsim *s, int wi, const char *when) {
  tarn_xwriter *w = s->ws[wi].w;
  s->timers++;
  int rc = tarn_xwriter_step(w, TARN_XSTEP_TIMER, 0, 0);
  trace(s, "w%d TIMER (%s): %d", wi, when, rc);
  if (rc == TARN_EBUSY)
    fail(s, "XTimerBounded", "w%d's timer thread (%s, epoch %" PRIu64 ", a roll %s): %s", wi, when,
         w->ep.epoch, w->halting ? "under way" : "not under way", tarn_errmsg());
}

static const char *xg_star(int i);
static const char *who_of(const xsim *s, const xrec *r) {
  static char b[2][48];
  static int k;
  k ^= 1;
  if (s->gi)
    snprintf(b[k], sizeof b[k], "%s, instance %d", xg_star(s->gi[r->wid].star), r->wid);
  else
    snprintf(b[k], sizeof b[k], "w%d%s", r->wid, s->ws[r->wid].rival ? ", a rival" : "");
  return b[k];
}

static int leads(tarn_xwriter *w, uint64_t log) {
  for (xlog *l = w ? w->logs : NULL; l; l = l->next)
    if (l->log_id == log)
      return 1;
  return 0;
}

/* An append of writer wi to log. The first of a tenure runs the open gate:
 * XNoAdmitBesideLive, no open is admitted while another process of the star
 * whose session lives (not crashed, not paused past it, not failed) leads
 * the log. */
static void append_one(xsim *s, int wi, uint64_t log) {
  tarn_xwriter *w = s->ws[wi].w;
  xrec *r = rec_new(s);
  uint64_t rid = r->id;
  r->log = log;
  r->len = 8 + below(s, 40);
  r->records = 1 + (uint32_t)below(s, 3);
  r->wid = wi;
  int opening = !leads(w, log);
  uint8_t p[64];
  payload_of(r->id, r->len, p);
  int rc =
      tarn_xwriter_append(w, r->log, p, r->len, r->records, on_outcome, (void *)(uintptr_t)r->id);
  r = &s->recs[rid]; /* hooks may have grown s->recs */
  trace(s, "w%d append %" PRIu64 " to log %" PRIu64 ": %d", wi, r->id, r->log, rc);
  if (rc) {
    r->state = XE_FAILED;
    r->outcomes = 1;
  }
  if (!opening || !s->ws[wi].w || !leads(s->ws[wi].w, log))
    return;
  for (int j = 0; j < s->nw; j++) {
    xw *o = &s->ws[j];
    if (j != wi && o->w && !o->zombie && !o->expired && !o->w->failed_rc && leads(o->w, log))
      fail(s, "XNoAdmitBesideLive",
           "log %" PRIu64 ": w%d (epoch %" PRIu64 ") admitted while w%d (epoch %" PRIu64
           ", its session alive) leads it",
           log, wi, tarn_xwriter_epoch(s->ws[wi].w), j, tarn_xwriter_epoch(o->w));
  }
}

static void release_step(xsim *s, int wi);

/* A step of a rival (a resumed writer, a second process of the star): what
 * the leader does, through the same calls. */
static void rival_step(xsim *s) {
  int n = 0;
  for (int i = 0; i < s->nw; i++)
    n += s->ws[i].rival && !s->ws[i].paused && s->ws[i].w;
  if (!n)
    return;
  int wi = -1, j = (int)below(s, (uint64_t)n);
  for (int i = 0; i < s->nw && wi < 0; i++)
    if (s->ws[i].rival && !s->ws[i].paused && s->ws[i].w && j-- == 0)
      wi = i;
  tarn_xwriter *w = s->ws[wi].w;
  uint64_t pick = below(s, 100);
  if (pick < 30) {
    append_one(s, wi, 1 + below(s, XS_LOGS));
  } else if (pick < 40) {
    trace(s, "w%d SEAL: %d", wi, tarn_xwriter_step(w, TARN_XSTEP_SEAL, 0, 0));
  } else if (pick < 50) {
    if (!s->no_timer)
      timer_step(s, wi, "a rival's");
  } else if (pick < 75) {
    xflight *f = pick_flight(s, w);
    if (f) {
      uint64_t slot = f->slot;
      size_t b = below(s, s->k);
      trace(s, "w%d PUT slot %" PRIu64 " bucket %zu: %d", wi, slot, b,
            tarn_xwriter_step(w, TARN_XSTEP_PUT, slot, b));
    }
  } else if (pick < 88) {
    release_step(s, wi);
  } else if (pick < 97) {
    /* a rival's absorb that refuses (TARN_ECORRUPT: the index disagrees
     * with its offsets) refuses loudly, as it must; one that lands entries
     * at other offsets is seen by the read-back */
    int rc = tarn_xwriter_step(w, TARN_XSTEP_ABSORB, 0, 0);
    trace(s, "w%d ABSORB: %d%s%s", wi, rc, rc < 0 ? " " : "", rc < 0 ? tarn_errmsg() : "");
  } else {
    process_kill(s, wi);
  }
}

/* The roll check around one RELEASE step of the leader. */
static void release_step(xsim *s, int wi) {
  tarn_xwriter *w = s->ws[wi].w;
  uint64_t e0 = w->ep.epoch;
  for (size_t i = 0; i < s->nrecs; i++)
    s->recs[i].pooled = 0;
  for (xflight *f = w->head; f; f = f->next)
    for (size_t i = 0; i < f->n; i++)
      if (!f->released && f->ents[i].cb) {
        xrec *r = &s->recs[(uintptr_t)f->ents[i].arg];
        r->pooled = 1;
        r->epoch = f->epoch, r->slot = f->slot;
      }
  uint64_t saved_cut = cut_of(s, e0);
  int rc = tarn_xwriter_step(w, TARN_XSTEP_RELEASE, 0, 0);
  trace(s, "w%d RELEASE: %d", wi, rc);
  if (wi == s->live && w->failed_rc) {
    /* the leader gave up (its halted epoch could not be fenced): it closes,
     * the epochs are fenced and settled, and a successor takes over */
    trace(s, "w%d failed: %s", wi, w->err);
    s->actor = ACT_RECLAIM;
    tarn_xwriter_close(w);
    s->actor = ACT_OTHER;
    s->ws[wi].w = NULL;
    s->live = -1;
    fence_and_settle_all(s);
    if (!s->failed)
      writer_open(s);
    return;
  }
  if (s->ws[wi].rival && w->failed_rc) {
    /* a rival that lost its leadership stops (what it had pending failed) */
    trace(s, "w%d failed: %s", wi, w->err);
    process_kill(s, wi);
    return;
  }
  if (s->ws[wi].zombie || w->ep.epoch == e0 || !cut_of(s, e0) || saved_cut == cut_of(s, e0))
    return;
  /* a roll with a published cut: below it acknowledged now, at or above it
   * in the new epoch's flights and not acknowledged, never both */
  uint64_t cut = s->cut[e0] - 1;
  for (size_t i = 0; i < s->nrecs && !s->failed; i++) {
    xrec *r = &s->recs[i];
    if (!r->pooled || r->epoch != e0)
      continue;
    int in_new = 0;
    for (xflight *f = w->head; f; f = f->next)
      if (f->epoch == w->ep.epoch)
        for (size_t j = 0; j < f->n; j++)
          in_new |= (uintptr_t)f->ents[j].arg == r->id;
    if (r->slot < cut && (r->state != XE_ACKED || in_new))
      fail(s, "XRollRepublishesExactly",
           "entry %" PRIu64 " of slot %" PRIu64 " below the cut %" PRIu64 " %s", r->id, r->slot,
           cut, in_new ? "republished into the new epoch" : "not acknowledged by the roll");
    if (r->slot >= cut && (r->state == XE_ACKED || !in_new))
      fail(s, "XRollRepublishesExactly",
           "entry %" PRIu64 " of slot %" PRIu64 " at or above the cut %" PRIu64 " %s", r->id,
           r->slot, cut, r->state == XE_ACKED ? "acknowledged" : "not republished");
  }
}

/* The owed bucket checks, and now and then every fenced epoch's again (the
 * cut stays dead, nothing below it goes, no straggler appears past it). */
static void run_checks(xsim *s, int all) {
  for (uint64_t ep = 1; ep < s->nep && !s->failed; ep++)
    if (s->pending[ep] || (all && s->cut[ep]))
      check_epoch_buckets(s, ep);
}

static void read_back(xsim *s, uint64_t nlogs, int final);

/* Issue 30's units of work (--classic has none): a rival's step, a paused
 * writer's resumption, the leader's timer, the leader's pause, a second
 * process of the star. */
static void live_step(xsim *s) {
  uint64_t pick = below(s, 100);
  if (s->live < 0) {
    if (pick < 30)
      writer_open(s); /* a successor whose open was refused tries again */
  } else if (pick < 50) {
    rival_step(s);
  } else if (pick < 60) {
    resume(s);
  } else if (pick < 75) {
    if (!s->no_timer)
      timer_step(s, s->live, "the leader's");
  } else if (pick < 80) {
    if (s->ws[s->live].late_log) /* the leader starts on log 2: its gate, perhaps after rolls */
      trace(s, "w%d starts on log 2 (epoch %" PRIu64 ")", s->live,
            tarn_xwriter_epoch(s->ws[s->live].w));
    s->ws[s->live].late_log = 0;
  } else if (pick < 90) {
    if (per_mille(s, s->p_pause) && !s->no_pause)
      pause_leader(s);
  } else if (per_mille(s, s->p_twin) && !s->no_twin) {
    process_open(s, 1);
  }
}

/* One unit of work. */
static void step(xsim *s) {
  run_checks(s, s->step % 50 == 0 || s->check_all);
  if (s->live_feats && s->step % 200 == 0)
    read_back(s, XS_LOGS, 0); /* nothing read contradicts an acknowledgement */
  s->now += 1 + (int64_t)below(s, 5);
  if (s->live_feats && per_mille(s, 150)) {
    live_step(s);
    return;
  }
  uint64_t pick = below(s, 100);
  xw *L = s->live >= 0 ? &s->ws[s->live] : NULL;
  if (pick < 25 && L) {
    uint64_t log = 1 + below(s, XS_LOGS);
    append_one(s, s->live, L->late_log && log == 2 ? 1 : log);
  } else if (pick < 35 && L) {
    int rc = tarn_xwriter_step(L->w, TARN_XSTEP_SEAL, 0, 0);
    trace(s, "w%d SEAL: %d", s->live, rc);
  } else if (pick < 70) {
    /* a PUT of the leader (mostly) or a zombie */
    int wi = L && !per_mille(s, 200) ? s->live : (int)below(s, (uint64_t)s->nw);
    tarn_xwriter *w = s->ws[wi].paused ? NULL : s->ws[wi].w;
    xflight *f = w ? pick_flight(s, w) : NULL;
    if (!f)
      return;
    size_t b = below(s, s->k);
    if (per_mille(s, s->p_fault)) {
      uint64_t kind = below(s, 3);
      int when = kind == 0   ? TARN_MEM_FAULT_BEFORE
                 : kind == 1 ? TARN_MEM_FAULT_AFTER
                             : TARN_MEM_FAULT_HOLD;
      tarn_objstore_mem_fault(s->b[b], TARN_MEM_OP_PUT, 1, 1, when,
                              kind == 0   ? TARN_EIO
                              : kind == 1 ? TARN_EUNKNOWN
                                          : TARN_ETIMEDOUT);
      trace(s, "armed a %s on bucket %zu's next PUT",
            kind == 0   ? "failed PUT"
            : kind == 1 ? "lost reply"
                        : "delayed PUT",
            b);
    }
    uint64_t slot = f->slot;
    int rc = tarn_xwriter_step(w, TARN_XSTEP_PUT, slot, b);
    trace(s, "w%d PUT slot %" PRIu64 " bucket %zu: %d", wi, slot, b, rc);
  } else if (pick < 82) {
    int wi = L && !per_mille(s, 150) ? s->live : (int)below(s, (uint64_t)s->nw);
    if (s->ws[wi].w && !s->ws[wi].paused)
      release_step(s, wi);
  } else if (pick < 88 && L) {
    if (per_mille(s, s->p_unknown)) {
      int skip = (int)below(s, 3);
      tarn_meta_inject_fault_after(L->m, TARN_META_FAULT_COMMIT_UNKNOWN, skip, 1);
      trace(s, "armed an unknown outcome on w%d's metadata write %d", s->live, skip + 1);
    }
    int rc = tarn_xwriter_step(L->w, TARN_XSTEP_ABSORB, 0, 0);
    tarn_meta_inject_fault(L->m, TARN_META_FAULT_NONE, 0);
    trace(s, "w%d ABSORB: %d%s%s", s->live, rc, rc < 0 ? " " : "", rc < 0 ? tarn_errmsg() : "");
    if (rc == TARN_ECORRUPT)
      fail(s, "XAckReadBack", "absorb: %s", tarn_errmsg());
  } else if (pick < 90 && L) {
    s->actor = ACT_RECLAIM;
    int rc = tarn_xwriter_step(L->w, TARN_XSTEP_RECLAIM, 0, 0);
    s->actor = ACT_OTHER;
    trace(s, "w%d RECLAIM: %d", s->live, rc);
  } else if (pick < 95) {
    size_t b = below(s, s->k);
    if (s->down[b]) {
      tarn_objstore_mem_reset_faults(s->b[b]);
      s->down[b] = 0;
      trace(s, "bucket %zu up", b);
    } else if (per_mille(s, s->p_down)) {
      tarn_objstore_mem_fault(s->b[b], TARN_MEM_OP_ANY, 1, 1ULL << 40, TARN_MEM_FAULT_BEFORE,
                              TARN_EUNAVAIL);
      s->down[b] = 1;
      trace(s, "bucket %zu DOWN", b);
    }
  } else if (pick < 98) {
    size_t b = below(s, s->k);
    if (tarn_objstore_mem_held(s->b[b])) {
      int drop = per_mille(s, 250);
      int rc = tarn_objstore_mem_land(s->b[b], drop);
      s->lands++;
      trace(s, "a held PUT in bucket %zu %s: %d", b, drop ? "is dropped" : "lands", rc);
    }
  } else if (L && per_mille(s, s->p_crash)) {
    crash(s);
  }
}

/* Reads every log back: an entry read is one appended, with its bytes, at
 * its acknowledged offset, never twice, never one that failed; final: every
 * acknowledged entry is read (mid-run the index may lag, nothing more). */
static void read_back(xsim *s, uint64_t nlogs, int final) {
  for (size_t i = 0; i < s->nrecs; i++)
    s->recs[i].seen = 0;
  tarn_reader *rd;
  if (tarn_reader_open(s->m, s->wal, NULL, NULL, &rd)) {
    fail(s, "XAckReadBack", "reader: %s", tarn_errmsg());
    return;
  }
  for (uint64_t log = 1; log <= nlogs && !s->failed; log++) {
    tarn_log_iter *it;
    if (tarn_log_iter_open(rd, log, 0, &it)) {
      fail(s, "XAckReadBack", "log %" PRIu64 ": %s", log, tarn_errmsg());
      break;
    }
    tarn_entry en;
    int rc;
    while (!s->failed && (rc = tarn_log_iter_next(it, &en, 0)) == 0) {
      uint64_t id = 0;
      for (size_t i = 0; i < 8 && i < en.payload_len; i++)
        id |= (uint64_t)en.payload[i] << (8 * i);
      if (en.payload_len < 8 || id >= s->nrecs) {
        fail(s, "XAckReadBack", "log %" PRIu64 " offset %" PRIu64 ": an entry never appended", log,
             en.offset);
        break;
      }
      xrec *r = &s->recs[id];
      uint8_t p[64];
      payload_of(id, r->len, p);
      if (r->log != log || r->len != en.payload_len || memcmp(p, en.payload, r->len) ||
          r->records != en.record_count)
        fail(s, "XAckReadBack",
             "log %" PRIu64 " offset %" PRIu64 ": entry %" PRIu64
             " read with other bytes or records",
             log, en.offset, id);
      else if (++r->seen > 1)
        fail(s, "XAckReadBack",
             "entry %" PRIu64 " read twice (again at log %" PRIu64 " offset %" PRIu64 ")", id, log,
             en.offset);
      else if (r->state == XE_ACKED && r->off != en.offset)
        fail(s, "XAckReadBack",
             "entry %" PRIu64 " acknowledged at offset %" PRIu64 ", read at %" PRIu64, id, r->off,
             en.offset);
      else if (r->state == XE_FAILED)
        fail(s, "XAckReadBack", "entry %" PRIu64 " failed, but read at offset %" PRIu64, id,
             en.offset);
    }
    if (!s->failed && rc != TARN_EEND)
      fail(s, "XAckReadBack", "log %" PRIu64 ": read: %s", log, tarn_errmsg());
    tarn_log_iter_close(it);
  }
  tarn_reader_close(rd);
  for (size_t i = 0; i < s->nrecs && final && !s->failed; i++)
    if (s->recs[i].state == XE_ACKED && s->recs[i].seen != 1)
      fail(s, "XAckReadBack",
           "entry %" PRIu64 " acknowledged at log %" PRIu64 " offset %" PRIu64 " is not read back",
           s->recs[i].id, s->recs[i].log, s->recs[i].off);
}

/* After the run: outages end, zombies give up, every epoch is fenced and
 * settled, the leader closes; then every log is read back. */
static void finish(xsim *s) {
  heal(s);
  for (int i = 0; i < s->nw; i++)
    if ((s->ws[i].rival || s->ws[i].paused) && s->ws[i].w)
      process_kill(s, i); /* the rivals and the paused end without a word */
  for (int i = 0; i < s->nw; i++)
    if (s->ws[i].zombie && s->ws[i].w) {
      s->actor = ACT_RECLAIM; /* a closing writer reclaims what it absorbed */
      tarn_xwriter_close(s->ws[i].w);
      s->actor = ACT_OTHER;
      s->ws[i].w = NULL;
    }
  if (s->live >= 0) {
    xw *L = &s->ws[s->live];
    int rc = tarn_xwriter_flush(L->w);
    trace(s, "w%d flush: %d", s->live, rc);
    heal(s);
    s->actor = ACT_RECLAIM;
    rc = tarn_xwriter_close(L->w);
    s->actor = ACT_OTHER;
    L->w = NULL;
    trace(s, "w%d close: %d %s", s->live, rc, rc ? tarn_errmsg() : "");
  }
  if (s->failed)
    return;
  heal(s);
  fence_and_settle_all(s);
  run_checks(s, 1);
  if (s->failed)
    return;
  read_back(s, XS_LOGS, 1);
}

static unsigned run_no;

/* The world's clock, randomness, stores and deployed buckets (name: the
 * mem: stores' prefix; hook: the buckets' call hook, or NULL). */
static void world_open(xsim *s, const char *name, void (*hook)(void *, int, const char *)) {
  tarn__clock_hooks h = {h_now, h_mono, h_sleep, s};
  tarn__clock_set(&h);
  tarn__random_set_hook(h_random, s);
  run_no++;
  snprintf(s->meta_uri, sizeof s->meta_uri, "mem:%s-%u-%" PRIu64 "?session_timeout_ms=600000", name,
           run_no, s->seed);
  snprintf(s->wal_uri, sizeof s->wal_uri, "mem:%s-wal-%u-%" PRIu64, name, run_no, s->seed);
  if (tarn_meta_open(s->meta_uri, &s->m) || tarn_meta_open(s->meta_uri, &s->fm[0]) ||
      tarn_meta_open(s->meta_uri, &s->fm[1]) || tarn_objstore_open(s->wal_uri, &s->wal))
    abort();
  char bk[TARN__X_K_MAX][160];
  const char *bp[TARN__X_K_MAX];
  for (uint32_t i = 0; i < s->k; i++) {
    snprintf(s->b_uri[i], sizeof s->b_uri[i], "mem:%s-b%u-%u-%" PRIu64, name, i, run_no, s->seed);
    snprintf(bk[i], sizeof bk[i], "%s@z%u", s->b_uri[i], i);
    bp[i] = bk[i];
    if (tarn_objstore_open(s->b_uri[i], &s->b[i]))
      abort();
    s->hk[i] = (xhk){s, i};
    if (hook)
      tarn_objstore_mem_hook(s->b[i], hook, &s->hk[i]);
  }
  if (tarn_express_deploy(s->m, bp, s->k, s->wq, s->win, NULL))
    abort();
}

static void world_close(xsim *s) {
  for (uint32_t i = 0; i < s->k; i++) {
    tarn_objstore_mem_hook(s->b[i], NULL, NULL);
    tarn_objstore_close(s->b[i]);
    tarn_objstore_mem_drop(s->b_uri[i] + 4);
  }
  tarn_objstore_close(s->wal);
  tarn_objstore_mem_drop(s->wal_uri + 4);
  tarn_meta_close(s->fm[0]);
  tarn_meta_close(s->fm[1]);
  tarn_meta_close(s->m);
  free(s->recs);
  free(s->reclaimed);
  free(s->cut);
  free(s->pending);
  free(s->settled);
  for (int i = 0; i <= XG_LOGS; i++)
    free(s->owner[i]);
  tarn__clock_set(NULL);
  tarn__random_set_hook(NULL, NULL);
}

/* The seed's randomness, the planted bug, and the world's shape: one world
 * in four is K = W = 1; WIN 2..5. */
static void world_shape(xsim *s, uint64_t mul, uint64_t add) {
  X = s;
  s->rng = s->seed * mul + add;
#ifdef TARN_PLANTED_BUGS
  tarn__planted_bug = s->bug;
#endif
  if (below(s, 4) == 0)
    s->k = 1, s->wq = 1;
  else
    s->k = 3, s->wq = 2;
  s->win = 2 + (uint32_t)below(s, 4);
}

/* One seed: 1 on a violation (s->failure). */
static int xsim_run(xsim *s) {
  world_shape(s, 0x2545f4914f6cdd1dULL, 7);
  s->p_fault = (unsigned)below(s, 300);
  s->p_down = (unsigned)below(s, 600);
  s->p_crash = 20 + (unsigned)below(s, 200);
  s->p_unknown = (unsigned)below(s, 400);
  if (s->live_feats) {
    s->p_pause = 50 + (unsigned)below(s, 400);
    s->p_twin = 50 + (unsigned)below(s, 300);
  }
  s->live = -1;
  s->rolling = -1;
  s->ws = calloc(XS_MAX_W, sizeof *s->ws);
  if (!s->ws)
    abort();
  world_open(s, "xsim", h_bucket);
  trace(s, "seed %" PRIu64 ": K=%u W=%u WIN=%u faults %u down %u crash %u unknown %u%s%s", s->seed,
        s->k, s->wq, s->win, s->p_fault, s->p_down, s->p_crash, s->p_unknown, s->bug ? " bug " : "",
        s->bug ? tarn__planted_names[s->bug] : "");
  if (writer_open(s))
    fail(s, "XAckReadBack", "the first writer could not open: %s", tarn_errmsg());
  for (s->step = 1; s->step <= s->steps && !s->failed; s->step++) {
    sim_watchdog_pet(s->step);
    step(s);
  }
  sim_watchdog_pet(s->step);
  if (!s->failed)
    finish(s);
  for (int i = 0; i < s->nw; i++) {
    if (s->ws[i].w && s->failed)
      tarn__xwriter_abandon(s->ws[i].w); /* after a violation: no more steps of theirs */
    else if (s->ws[i].w)
      tarn_xwriter_close(s->ws[i].w);
    tarn_meta_close(s->ws[i].m);
  }
  free(s->ws);
  world_close(s);
  X = NULL;
  return s->failed;
}

/* ---- the racing-opens worlds (issue 15) ---------------------------------------
 *
 * XG_STARS stars lead XG_LOGS express logs in turn, each star one process at
 * a time: an instance, its own metadata session and stepped writer on one
 * mem: store. Steps: appends (the first of a tenure runs the open gate),
 * the writer's own steps, Finish of one log (now and then with the
 * metadata store failing inside it), graceful close, crash (abandon; the
 * session ends at once or lives on until a later expiry), restart of a star
 * (a new instance, a new epoch of the same star). The checker's ground
 * truth is the run itself: which instance lives, what each acknowledged,
 * which tenure last led each log. After the run the live instances close,
 * every session ends, every epoch of every star is fenced and settled, and
 * every log is read back. The properties:
 *   XNoOffsetTwice      no offset of an express log is acknowledged twice
 *   XAckReadBack        acknowledged entries are read at their offsets (every
 *                       100 steps: nothing read contradicts an acknowledgement;
 *                       at the settle: every one is read)
 *   XOpenJustified      an admitted open over a predecessor tenure consumed
 *                       that tenure's mark (which covered every acknowledged
 *                       offset: its end is the index's end), or left that
 *                       tenure's epoch fenced and settled; a refused open
 *                       (EBUSY) deferred, nothing more
 *   XRecordBeforeAck    an admitted open leaves the last-writer record naming
 *                       its tenure before its first append is queued
 *   XNoAdmitBesideLive  no open is admitted while another running instance
 *                       leads the log (unsettled, unmarked, alive) */

static const char *xg_star(int i) {
  static const char *n[XG_STARS] = {"gs-a", "gs-b", "gs-c"};
  return n[i];
}

static xlog *xg_leads(tarn_xwriter *w, uint64_t log) {
  for (xlog *l = w ? w->logs : NULL; l; l = l->next)
    if (l->log_id == log)
      return l;
  return NULL;
}

static void xg_outcome(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  xsim *s = X;
  xrec *r = &s->recs[(uintptr_t)arg];
  if (++r->outcomes > 1) {
    fail(s, "XAckReadBack", "entry %" PRIu64 " got a second outcome (%d)", r->id, status);
    return;
  }
  if (status) {
    r->state = status == TARN_EUNKNOWN ? XE_UNKNOWN : XE_FAILED;
    return;
  }
  r->state = XE_ACKED;
  r->off = offset;
  s->acks++;
  size_t *n = &s->nowner[r->log];
  if (offset >= *n) {
    size_t nn = offset + 64;
    s->owner[r->log] = realloc(s->owner[r->log], nn * sizeof *s->owner[r->log]);
    if (!s->owner[r->log])
      abort();
    memset(s->owner[r->log] + *n, 0, (nn - *n) * sizeof *s->owner[r->log]);
    *n = nn;
  }
  uint64_t *o = &s->owner[r->log][offset];
  if (*o)
    fail(s, "XNoOffsetTwice",
         "log %" PRIu64 " offset %" PRIu64 " acknowledged to entry %" PRIu64 " (%s) and before "
         "to entry %" PRIu64 " (%s)",
         r->log, offset, r->id, xg_star(s->gi[r->wid].star), *o - 1,
         xg_star(s->gi[s->recs[*o - 1].wid].star));
  *o = r->id + 1;
}

/* The log's records as the checker reads them. */
typedef struct xg_seen {
  int has_rec, has_mark; /* has_mark: a standing (unconsumed) mark */
  char rec_star[TARN__X_STAR_MAX + 1], mark_star[TARN__X_STAR_MAX + 1];
  uint64_t rec_epoch, mark_epoch, mark_end, tail, cum;
} xg_seen;

static void xg_look(xsim *s, uint64_t log, xg_seen *v) {
  memset(v, 0, sizeof *v);
  int64_t ver;
  v->has_rec = !tarn__xwriter_rec_get(s->m, log, v->rec_star, &v->rec_epoch, NULL);
  v->has_mark = !tarn__xmark_get(s->m, log, v->mark_star, &v->mark_epoch, &v->mark_end, &ver);
  if (tarn__xlog_tail(s->m, log, &v->tail, &v->cum))
    v->tail = 0;
  tarn_errclear();
}

static int xg_settled(xsim *s, const char *star, uint64_t epoch) {
  tarn__xepoch e;
  if (tarn__xepoch_load(s->m, star, TARN__X_CLASS_EXPRESS, epoch, &e)) {
    tarn_errclear();
    return 0;
  }
  int ok = e.state == TARN__XEPOCH_FENCED && e.has_cut && e.checkpoint >= e.cut;
  tarn__xepoch_free(&e);
  return ok;
}

/* An admitted open of log by instance ii: judged from the records, never
 * from the gate's own word. */
static void xg_check_open(xsim *s, int ii, uint64_t log, const xg_seen *before) {
  xg_inst *I = &s->gi[ii];
  xlog *l = xg_leads(I->w, log);
  const char *star = xg_star(I->star);
  uint64_t epoch = l->rec_epoch;
  xg_seen after;
  xg_look(s, log, &after);
  s->opens++;
  for (int j = 0; j < s->ngi; j++)
    if (j != ii && !s->gi[j].expired && xg_leads(s->gi[j].w, log) && !s->gi[j].w->failed_rc)
      fail(s, "XNoAdmitBesideLive",
           "log %" PRIu64 ": %s (epoch %" PRIu64 ") admitted while %s (running) leads it", log,
           star, epoch, xg_star(s->gi[j].star));
  if (!after.has_rec || strcmp(after.rec_star, star) || after.rec_epoch != epoch)
    fail(s, "XRecordBeforeAck",
         "log %" PRIu64 ": %s opened in epoch %" PRIu64 ", but the last-writer record says %s", log,
         star, epoch, after.has_rec ? after.rec_star : "nothing");
  xg_tenure *p = &s->ten[log];
  if (p->valid) {
    const char *ps = xg_star(p->star);
    uint64_t hi = 0;
    for (uint64_t o = 0; o < s->nowner[log]; o++)
      if (s->owner[log][o])
        hi = o + 1;
    int consumed = before->has_mark && !strcmp(before->mark_star, ps) &&
                   before->mark_epoch == p->epoch && !after.has_mark;
    if (consumed) {
      s->marks_used++;
      if (before->mark_end != before->tail || before->mark_end < hi)
        fail(s, "XOpenJustified",
             "log %" PRIu64 ": %s consumed the mark of %s epoch %" PRIu64 " ending at %" PRIu64
             ", but the index ends at %" PRIu64 " and offsets below %" PRIu64 " were acknowledged",
             log, star, ps, p->epoch, before->mark_end, before->tail, hi);
    } else if (xg_settled(s, ps, p->epoch)) {
      s->preds_settled++;
    } else {
      fail(s, "XOpenJustified",
           "log %" PRIu64 ": %s (epoch %" PRIu64 ") admitted over %s epoch %" PRIu64
           " without consuming its mark%s or settling it",
           log, star, epoch, ps, p->epoch, after.has_mark ? " (left standing)" : "");
    }
  }
  *p = (xg_tenure){1, I->star, ii, epoch};
  trace(s, "  %s opens log %" PRIu64 " in epoch %" PRIu64 " (index end %" PRIu64 ")", star, log,
        epoch, after.tail);
}

static int xg_roll_fence(void *arg, tarn_meta *m, const char *star, uint64_t epoch, uint64_t *cut) {
  xsim *s = X;
  tarn_xfence_opts o = {.timeout_ms = 1000, .retry_ms = 50};
  tarn_xfence_report r;
  int was = s->rolling;
  s->rolling = (int)(uintptr_t)arg; /* its timer may run inside (xg_hook) */
  int rc = tarn_express_fence(m, star, epoch, &o, &r);
  s->rolling = was;
  if (!rc)
    *cut = r.cut;
  return rc;
}

static void xg_start(xsim *s, int star) {
  if (s->ngi == XG_MAX_INST)
    return;
  xg_inst *I = &s->gi[s->ngi];
  I->star = star;
  if (tarn_meta_open(s->meta_uri, &I->m))
    abort();
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = xg_star(star);
  o.stepped = 1;
  o.reclaim_grace_ms = 30000;
  o.max_rolls = 1000;
  o.fence = xg_roll_fence;
  o.fence_arg = (void *)(uintptr_t)s->ngi;
  o.finish_retry_ms = 100;
  o.finish_attempts = 2;
  if (tarn_xwriter_open(I->m, s->wal, &o, &I->w)) {
    trace(s, "%s cannot start: %s", o.star, tarn_errmsg());
    tarn_meta_close(I->m);
    return;
  }
  I->first_epoch = tarn_xwriter_epoch(I->w);
  if (s->gi_of[star] >= 0) { /* a second process of a running star (issue 30 item 2) */
    I->rival = 1;
    s->twins++;
    s->ngi++;
    trace(s, "%s starts a second process (instance %d) beside instance %d, epoch %" PRIu64, o.star,
          s->ngi - 1, s->gi_of[star], I->first_epoch);
    return;
  }
  s->gi_of[star] = s->ngi++;
  s->restarts++;
  trace(s, "%s starts (instance %d), epoch %" PRIu64, o.star, s->ngi - 1, tarn_xwriter_epoch(I->w));
}

/* The instance's process ends: nothing more written; its session ends now
 * (dead) or lives on (its lease records stand until the expiry). */
static void xg_crash(xsim *s, int ii, int session_ends) {
  xg_inst *I = &s->gi[ii];
  tarn__xwriter_abandon(I->w);
  I->w = NULL;
  if (s->gi_of[I->star] == ii)
    s->gi_of[I->star] = -1;
  s->crashes++;
  if (session_ends) {
    tarn_meta_close(I->m);
    I->m = NULL;
  }
  trace(s, "%s CRASHES (instance %d)%s", xg_star(I->star), ii,
        session_ends ? ", its session ends" : ", its session lives on");
}

static void xg_append(xsim *s, int ii) {
  xg_inst *I = &s->gi[ii];
  xrec *r = rec_new(s);
  uint64_t rid = r->id;
  r->log = 1 + below(s, XG_LOGS);
  r->len = 8 + below(s, 40);
  r->records = 1;
  r->wid = ii;
  xg_seen before;
  int opening = !xg_leads(I->w, r->log);
  if (opening)
    xg_look(s, r->log, &before);
  uint8_t p[64];
  payload_of(r->id, r->len, p);
  int was = s->opening;
  s->opening = opening ? ii : -1;
  int rc = tarn_xwriter_append(I->w, r->log, p, r->len, r->records, xg_outcome,
                               (void *)(uintptr_t)r->id);
  /* the open's fence runs the storage hook, which appends for other stars and
   * may grow s->recs: r must be found again */
  r = &s->recs[rid];
  s->opening = was;
  trace(s, "%s append %" PRIu64 " to log %" PRIu64 ": %d%s%s", xg_star(I->star), r->id, r->log, rc,
        rc ? " " : "", rc ? tarn_errmsg() : "");
  if (rc) {
    r->state = XE_FAILED;
    r->outcomes = 1;
  }
  /* the gate admitted the open when the writer leads the log now (an append
   * may still fail after it: a failed writer); EBUSY before it defers */
  if (opening && xg_leads(I->w, r->log))
    xg_check_open(s, ii, r->log, &before);
  else if (opening && rc == TARN_EBUSY)
    s->deferrals++;
}

/* A bucket call while an open's gate fences or settles a predecessor: now
 * and then another running instance appends (mostly an open of its own),
 * inside the first gate, between its reads and its last-writer record. */
static void xg_timer(xsim *s, int ii, const char *when);
static void xg_hook(void *arg, int op, const char *name) {
  (void)op, (void)name;
  xsim *s = ((xhk *)arg)->s;
  if (s->live_feats && s->rolling >= 0 && !s->in_hook && !s->failed && s->gi[s->rolling].w &&
      per_mille(s, 300)) {
    s->in_hook++; /* the rolling writer's timer thread goes on meanwhile */
    xg_timer(s, s->rolling, "inside its roll");
    s->in_hook--;
    return;
  }
  if ((s->opening < 0 && !s->taking) || s->in_hook || s->failed || s->quiet || !per_mille(s, 60))
    return;
  int ii = s->gi_of[below(s, XG_STARS)];
  if (ii < 0 || ii == s->opening) /* the opener's writer holds the open's lock */
    return;
  s->in_hook++;
  s->nested++;
  if (s->opening >= 0)
    trace(s, "  (inside the gate of %s's open)", xg_star(s->gi[s->opening].star));
  else
    trace(s, "  (inside a takeover of %s)", xg_star(s->judging));
  xg_append(s, ii);
  s->in_hook--;
}

/* Graceful close: Finish for every log, then the writer and its session end. */
static void xg_close(xsim *s, int ii) {
  xg_inst *I = &s->gi[ii];
  int rc = tarn_xwriter_flush(I->w);
  int rc2 = tarn_xwriter_close(I->w);
  trace(s, "%s closes: flush %d, close %d", xg_star(I->star), rc, rc2);
  I->w = NULL;
  if (s->gi_of[I->star] == ii)
    s->gi_of[I->star] = -1;
  tarn_meta_close(I->m);
  I->m = NULL;
}

/* ---- the takeover nodes (issue 15 "Serving") ---------------------------------
 *
 * XN_NODES nodes run the pass of tarn serve's express-takeover job
 * (takeover_job in src/server/jobs_express.c, static there and bound to a
 * deployment, so its loop is restated here over the same calls): read the
 * star recorded for each log (tarn-xlog), group the logs by star and, under
 * the ephemeral record tarn-xserve /takeover/{star} (one node per star at a
 * time), hand each star to the real tarn__xtakeover on the node's own
 * session. Between its head read and its liveness read (the judged window)
 * the judged star may restart or crash, an instance may append (an open of
 * its own), or the node's session may expire silently and another node take
 * the same star over inside it; its bucket calls interleave other
 * instances' appends (xg_hook). A pass may crash the node after its 0th-5th
 * metadata write; the crashed node's session ends then or lives on (its
 * /takeover records stand) until a later step expires it. */

static int xg_star_index(const char *name) {
  for (int i = 0; i < XG_STARS; i++)
    if (!strcmp(name, xg_star(i)))
      return i;
  return -1;
}

static void xn_take(xsim *s, int n, int star, const uint64_t *logs, size_t nl);

/* The judged window: between the takeover's head read and its liveness read. */
static void xn_judged(void *arg) {
  xsim *s = arg;
  if (s->failed || s->in_hook || s->quiet || !per_mille(s, 300))
    return;
  int star = s->judging, ii = s->gi_of[star];
  uint64_t pick = below(s, 100);
  s->tk_window++;
  trace(s, "  (in the judged window of a takeover of %s)", xg_star(star));
  if (ii < 0 && pick < 60) {
    xg_start(s, star); /* a restart racing the judgement */
  } else if (ii >= 0 && pick < 25) {
    xg_crash(s, ii, per_mille(s, 500));
  } else if (ii >= 0 && pick < 60) {
    xg_append(s, ii);
  } else if (pick < 80) {
    /* another node takes the same star over, after this node's session
     * expired (its /takeover record vanished) or not (it finds it taken) */
    int me = s->tk_node, other = (int)below(s, XN_NODES);
    if (other == me || !s->node[other] || s->taking > 1)
      return;
    if (per_mille(s, 500) && !s->node_expired[me]) {
      tarn_meta_inject_fault(s->node[me], TARN_META_FAULT_EXPIRE_SILENT, 0);
      s->node_expired[me] = 1;
      trace(s, "  the session of node %d expires (it is not told)", me);
    }
    uint64_t l2[XG_LOGS];
    size_t n2 = 0;
    for (uint64_t log = 1; log <= XG_LOGS; log++) {
      char st[TARN__X_STAR_MAX + 1];
      if (tarn__xlog_star_get(s->m, log, st, sizeof st)) {
        tarn_errclear();
        continue;
      }
      if (xg_star_index(st) == star)
        l2[n2++] = log;
    }
    char key[TARN__X_STAR_MAX + 16];
    snprintf(key, sizeof key, "/takeover/%s", xg_star(star));
    int rc =
        tarn_meta_create(s->node[other], "tarn-xserve", key, "1", 1, TARN_META_EPHEMERAL, NULL);
    trace(s, "  node %d tries the same star: %d", other, rc);
    if (rc) {
      s->tk_busy += rc == TARN_EEXIST;
      tarn_errclear();
      return;
    }
    xn_take(s, other, star, l2, n2);
    tarn_meta_delete(s->node[other], "tarn-xserve", key);
    tarn_errclear();
  }
}

static void xn_take(xsim *s, int n, int star, const uint64_t *logs, size_t nl) {
  /* the instance running now holds the head (one instance per star mints) */
  int ii0 = s->gi_of[star];
  uint64_t ep0 = ii0 >= 0 ? tarn_xwriter_epoch(s->gi[ii0].w) : 0;
  int was = s->judging, was_node = s->tk_node;
  s->judging = star;
  s->tk_node = n;
  s->taking++;
  tarn_xfence_opts fo = {.timeout_ms = 1000, .retry_ms = 50};
  tarn_xtakeover_report r;
  int rc = tarn__xtakeover(s->node[n], s->wal, xg_star(star), logs, nl, &fo,
                           s->taking == 1 ? xn_judged : NULL, s, &r);
  s->taking--;
  s->judging = was;
  s->tk_node = was_node;
  s->tk_runs++;
  if (rc) {
    s->tk_errors++;
    trace(s, "node %d takeover of %s: %d %s", n, xg_star(star), rc, tarn_errmsg());
    tarn_errclear();
  } else {
    s->tk_verdict[r.verdict >= 0 && r.verdict < 5 ? r.verdict : 0]++;
    s->tk_epochs += r.epochs;
    trace(s,
          "node %d takeover of %s: head %" PRIu64 " verdict %d, %" PRIu64 " epochs up to %" PRIu64,
          n, xg_star(star), r.head, r.verdict, r.epochs, r.hi);
  }
  /* XTakeoverSparesLive: a running instance's epochs are never in a
   * takeover's range (the head of a live process is never fenced by a node;
   * an epoch minted after the head read is above it) */
  int cur = s->gi_of[star];
  if (cur >= 0 && r.hi) {
    uint64_t held = cur == ii0 ? ep0 : s->gi[cur].first_epoch;
    if (r.hi >= held)
      fail(s, "XTakeoverSparesLive",
           "node %d's takeover of %s (head %" PRIu64 ", verdict %d) reached epoch %" PRIu64
           ", but instance %d of the star runs in epoch %" PRIu64,
           n, xg_star(star), r.head, r.verdict, r.hi, cur, held);
  }
}

/* One pass of node n's express-takeover job. */
static void xn_pass(xsim *s, int n, int may_crash) {
  tarn_meta *m = s->node[n];
  uint64_t logs[XG_STARS][XG_LOGS];
  size_t nl[XG_STARS] = {0};
  for (uint64_t log = 1; log <= XG_LOGS; log++) {
    char st[TARN__X_STAR_MAX + 1];
    if (tarn__xlog_star_get(m, log, st, sizeof st)) { /* never written */
      tarn_errclear();
      continue;
    }
    int i = xg_star_index(st);
    if (i >= 0)
      logs[i][nl[i]++] = log;
  }
  int crash = may_crash && per_mille(s, s->p_node_crash);
  if (crash) /* the node dies after its 0th-5th write of the pass */
    tarn_meta_inject_fault_after(m, TARN_META_FAULT_FAIL, (int)below(s, 6), 1000);
  int first = (int)below(s, XG_STARS);
  for (int k = 0; k < XG_STARS && !s->failed; k++) {
    int i = (first + k) % XG_STARS;
    if (!nl[i])
      continue;
    char key[TARN__X_STAR_MAX + 16];
    snprintf(key, sizeof key, "/takeover/%s", xg_star(i));
    int rc = tarn_meta_create(m, "tarn-xserve", key, "1", 1, TARN_META_EPHEMERAL, NULL);
    if (rc) {
      trace(s, "node %d: /takeover/%s: %d", n, xg_star(i), rc);
      s->tk_busy += rc == TARN_EEXIST;
      tarn_errclear();
      if (rc == TARN_EEXIST)
        continue; /* another node takes it over now */
      break;
    }
    xn_take(s, n, i, logs[i], nl[i]);
    if (!crash && tarn_meta_delete(m, "tarn-xserve", key))
      tarn_errclear();
  }
  if (!crash && s->node_expired[n]) { /* the node notices and reconnects */
    tarn_meta_close(m);
    if (tarn_meta_open(s->meta_uri, &s->node[n]))
      abort();
    s->tk_expiries++;
  }
  s->node_expired[n] = 0;
  if (!crash)
    return;
  tarn_meta_inject_fault(m, TARN_META_FAULT_NONE, 0);
  s->node[n] = NULL;
  s->tk_crashes++;
  if (per_mille(s, 500) || s->node_zombie[n]) {
    tarn_meta_close(m);
    trace(s, "node %d CRASHES, its session ends", n);
  } else {
    s->node_zombie[n] = m;
    trace(s, "node %d CRASHES, its session lives on", n);
  }
}

/* A node's step: down, it restarts (a new session); up, it runs a pass; a
 * crashed node's session expires. */
static void xn_step(xsim *s) {
  int n = (int)below(s, XN_NODES);
  if (s->node_zombie[n] && per_mille(s, 300)) {
    tarn_meta_close(s->node_zombie[n]);
    s->node_zombie[n] = NULL;
    s->tk_expiries++;
    trace(s, "the session of crashed node %d expires", n);
    return;
  }
  if (!s->node[n]) {
    if (tarn_meta_open(s->meta_uri, &s->node[n]))
      abort();
    trace(s, "node %d starts", n);
    return;
  }
  xn_pass(s, n, 1);
}

static void xg_act(xsim *s, int ii, uint64_t pick);
static void xg_live_step(xsim *s);
static void xg_step(xsim *s) {
  s->now += 1 + (int64_t)below(s, 5);
  if (per_mille(s, 100)) {
    xn_step(s);
    return;
  }
  if (s->live_feats && per_mille(s, 100)) {
    xg_live_step(s);
    return;
  }
  int star = (int)below(s, XG_STARS);
  int ii = s->gi_of[star];
  xg_inst *I = ii >= 0 ? &s->gi[ii] : NULL;
  uint64_t pick = below(s, 100);
  if (!I) {
    if (pick < 8)
      xg_start(s, star);
    else if (pick < 12) {
      /* a crashed instance's session expires */
      for (int j = 0; j < s->ngi; j++)
        if (!s->gi[j].w && s->gi[j].m) {
          tarn_meta_close(s->gi[j].m);
          s->gi[j].m = NULL;
          s->expiries++;
          trace(s, "the session of %s (instance %d) expires", xg_star(s->gi[j].star), j);
          break;
        }
    }
    return;
  }
  xg_act(s, ii, pick);
}

/* Issue 30's units in the racing-opens worlds (--classic has none). */
static void xg_live_step(xsim *s) {
  uint64_t pick = below(s, 100);
  int star = (int)below(s, XG_STARS), ii = s->gi_of[star];
  if (pick < 40) { /* a rival acts: a resumed instance, a second process */
    int n = 0;
    for (int j = 0; j < s->ngi; j++)
      n += s->gi[j].rival && s->gi[j].w && !s->gi[j].paused;
    int k = n ? (int)below(s, (uint64_t)n) : -1;
    for (int j = 0; j < s->ngi && k >= 0; j++)
      if (s->gi[j].rival && s->gi[j].w && !s->gi[j].paused && k-- == 0) {
        trace(s, "  (a rival: %s instance %d)", xg_star(s->gi[j].star), j);
        xg_act(s, j, below(s, 100));
        if (s->gi[j].w && s->gi[j].w->failed_rc)
          xg_crash(s, j, 0); /* it lost its leadership and stops */
      }
  } else if (pick < 55) { /* a paused instance resumes with full access */
    for (int j = 0; j < s->ngi; j++)
      if (s->gi[j].paused && s->gi[j].w && per_mille(s, 500)) {
        s->gi[j].paused = 0;
        s->gi[j].rival = 1;
        s->resumes++;
        trace(s, "%s instance %d RESUMES (SIGCONT), its session long expired",
              xg_star(s->gi[j].star), j);
        break;
      }
  } else if (pick < 70) {
    if (ii >= 0 && !s->no_timer)
      xg_timer(s, ii, "a running instance's");
  } else if (pick < 85) {
    if (ii >= 0 && per_mille(s, s->p_pause) && !s->no_pause) {
      /* paused past its session: the store ends it, the star may restart */
      xg_inst *I = &s->gi[ii];
      tarn_meta_inject_fault(I->m, TARN_META_FAULT_EXPIRE_SILENT, 0);
      I->paused = I->expired = 1;
      s->gi_of[star] = -1;
      s->pauses++;
      trace(s, "%s instance %d PAUSES (SIGSTOP): its session ends at the store", xg_star(star), ii);
    }
  } else if (ii >= 0 && per_mille(s, s->p_twin) && !s->no_twin) {
    xg_start(s, star); /* a second process of the running star */
  }
}

static void xg_timer(xsim *s, int ii, const char *when) {
  tarn_xwriter *w = s->gi[ii].w;
  s->timers++;
  int rc = tarn_xwriter_step(w, TARN_XSTEP_TIMER, 0, 0);
  trace(s, "%s TIMER (%s): %d", xg_star(s->gi[ii].star), when, rc);
  if (rc == TARN_EBUSY)
    fail(s, "XTimerBounded", "%s instance %d's timer thread (%s, epoch %" PRIu64 ", a roll %s): %s",
         xg_star(s->gi[ii].star), ii, when, w->ep.epoch, w->halting ? "under way" : "not under way",
         tarn_errmsg());
}

/* One action of a running instance (pick: 0..99). */
static void xg_act(xsim *s, int ii, uint64_t pick) {
  xg_inst *I = &s->gi[ii];
  if (pick < 30) {
    xg_append(s, ii);
  } else if (pick < 45) {
    int rc = tarn_xwriter_step(I->w, TARN_XSTEP_SEAL, 0, 0);
    for (xflight *f = I->w->head; f && rc >= 0; f = f->next)
      for (size_t b = 0; b < s->k; b++)
        if (per_mille(s, 700))
          tarn_xwriter_step(I->w, TARN_XSTEP_PUT, f->slot, b);
    rc = tarn_xwriter_step(I->w, TARN_XSTEP_RELEASE, 0, 0);
    trace(s, "%s seal, puts, release: %d", xg_star(I->star), rc);
  } else if (pick < 55) {
    int rc = tarn_xwriter_flush(I->w);
    trace(s, "%s flush: %d", xg_star(I->star), rc);
  } else if (pick < 65) {
    int rc = tarn_xwriter_step(I->w, TARN_XSTEP_ABSORB, 0, 0);
    trace(s, "%s ABSORB: %d", xg_star(I->star), rc);
  } else if (pick < 75) {
    uint64_t log = 1 + below(s, XG_LOGS);
    if (!xg_leads(I->w, log))
      return;
    int faulty = per_mille(s, s->p_unknown);
    if (faulty) /* the metadata store fails inside the Finish */
      tarn_meta_inject_fault_after(I->m, TARN_META_FAULT_FAIL, (int)below(s, 4), 1000);
    int rc = tarn_xwriter_finish(I->w, log);
    tarn_meta_inject_fault(I->m, TARN_META_FAULT_NONE, 0);
    s->finishes += rc == 0;
    trace(s, "%s finishes log %" PRIu64 "%s: %d", xg_star(I->star), log,
          faulty ? " (store failing)" : "", rc);
  } else if (pick < 79) {
    xg_close(s, ii);
  } else if (pick < 79 + s->p_crash / 20) {
    xg_crash(s, ii, per_mille(s, 500));
  } else if (pick < 90 && I->w->failed_rc) {
    xg_crash(s, ii, per_mille(s, 500)); /* a failed writer's process gives up */
  }
}

/* Liveness, once the faults stopped and every star is dead: one takeover
 * pass settles every star, so every acknowledged entry is in the index
 * before any new open (XTakeoverSettles: the takeover's promise, readers
 * and the next writer find them there); then every log is writable again:
 * a new instance's open of each log is admitted and its append is
 * acknowledged (XWritableAgain). */
static void xg_liveness(xsim *s) {
  if (!s->node[0] && tarn_meta_open(s->meta_uri, &s->node[0]))
    abort();
  trace(s, "the faults stop; node 0's last pass");
  xn_pass(s, 0, 0);
  s->tk_final++;
  if (s->failed)
    return;
  read_back(s, XG_LOGS, 1);
  if (s->failed) {
    char was[sizeof s->failure];
    snprintf(was, sizeof was, "%s", s->failure);
    snprintf(s->failure, sizeof s->failure,
             "XTakeoverSettles: after the faults stopped and a takeover pass, before any new "
             "open: %.900s",
             was);
    return;
  }
  int star = (int)below(s, XG_STARS);
  xg_start(s, star);
  int ii = s->gi_of[star];
  if (ii < 0) {
    fail(s, "XWritableAgain", "%s cannot start: %s", xg_star(star), tarn_errmsg());
    return;
  }
  size_t first = s->nrecs;
  for (uint64_t log = 1; log <= XG_LOGS && !s->failed; log++) {
    for (int t = 0; t < 64 && !xg_leads(s->gi[ii].w, log); t++)
      xg_append(s, ii); /* it picks the log */
    if (!xg_leads(s->gi[ii].w, log))
      fail(s, "XWritableAgain", "log %" PRIu64 ": %s's open is not admitted: %s", log,
           xg_star(star), tarn_errmsg());
  }
  if (s->failed)
    return;
  int rc = tarn_xwriter_flush(s->gi[ii].w);
  for (size_t i = first; i < s->nrecs && !s->failed; i++)
    if (s->recs[i].state != XE_ACKED)
      fail(s, "XWritableAgain",
           "entry %zu to log %" PRIu64 " of %s is not acknowledged (state %d, flush %d)", i,
           s->recs[i].log, xg_star(star), s->recs[i].state, rc);
  xg_close(s, ii);
}

/* One racing-opens world: 1 on a violation. */
static int xgate_run(xsim *s) {
  world_shape(s, 0x9e3779b97f4a7c15ULL, 11);
  s->p_crash = 20 + (unsigned)below(s, 200);
  s->p_unknown = (unsigned)below(s, 500);
  s->p_node_crash = (unsigned)below(s, 200);
  if (s->live_feats) {
    s->p_pause = 50 + (unsigned)below(s, 400);
    s->p_twin = 50 + (unsigned)below(s, 300);
  }
  s->rolling = -1;
  s->gi = calloc(XG_MAX_INST, sizeof *s->gi);
  if (!s->gi)
    abort();
  for (int i = 0; i < XG_STARS; i++)
    s->gi_of[i] = -1;
  s->opening = -1;
  world_open(s, "xgate", xg_hook);
  trace(s, "seed %" PRIu64 " (racing opens): K=%u W=%u WIN=%u crash %u finish faults %u%s%s",
        s->seed, s->k, s->wq, s->win, s->p_crash, s->p_unknown, s->bug ? " bug " : "",
        s->bug ? tarn__planted_names[s->bug] : "");
  for (s->step = 1; s->step <= s->steps && !s->failed; s->step++) {
    sim_watchdog_pet(s->step);
    xg_step(s);
    if (s->step % 100 == 0 && !s->failed)
      read_back(s, XG_LOGS, 0);
  }
  /* The faults stop: every instance ends (closes, or crashes), every
   * session ends, the crashed nodes' sessions expire. */
  s->quiet = 1;
  for (int i = 0; i < s->ngi; i++) {
    if (s->gi[i].w && !s->failed && per_mille(s, 500) && !s->gi[i].rival && !s->gi[i].paused)
      xg_close(s, i);
    else if (s->gi[i].w)
      xg_crash(s, i, 1);
    if (s->gi[i].m)
      tarn_meta_close(s->gi[i].m);
    s->gi[i].w = NULL, s->gi[i].m = NULL;
  }
  for (int n = 0; n < XN_NODES; n++) {
    if (s->node_zombie[n])
      tarn_meta_close(s->node_zombie[n]);
    s->node_zombie[n] = NULL;
  }
  if (!s->failed)
    xg_liveness(s);
  for (int n = 0; n < XN_NODES; n++) {
    if (s->node[n])
      tarn_meta_close(s->node[n]);
    s->node[n] = NULL;
  }
  /* the settle: every epoch of every star is settled */
  for (int st = 0; st < XG_STARS && !s->failed; st++) {
    uint64_t head = 0;
    if (tarn__xchain_head(s->m, xg_star(st), TARN__X_CLASS_EXPRESS, &head) || head == 0) {
      tarn_errclear();
      continue;
    }
    if (tarn__xsettle_range(s->m, s->wal, xg_star(st), 1, head))
      fail(s, "XAckReadBack", "settling %s: %s", xg_star(st), tarn_errmsg());
    s->settles += head;
  }
  if (!s->failed)
    read_back(s, XG_LOGS, 1);
  free(s->gi);
  world_close(s);
  X = NULL;
  return s->failed;
}

int sim_express_main(int argc, char **argv);
int sim_express_main(int argc, char **argv) {
  uint64_t a = 1, b = 1;
  int steps = 1000, tr = 0, expect_fail = 0, bug = 0, race_only = 0, classic = 0, one_star = 0;
  const char *without = "";
  int keep_going = 0, nfailed = 0;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--seed") && v) {
      a = b = strtoull(v, NULL, 10);
      i++;
    } else if (!strcmp(argv[i], "--seeds") && v) {
      char *end;
      a = strtoull(v, &end, 10);
      b = strncmp(end, "..", 2) ? a : strtoull(end + 2, NULL, 10);
      i++;
    } else if (!strcmp(argv[i], "--steps") && v) {
      steps = atoi(v);
      i++;
    } else if (!strcmp(argv[i], "--bug") && v) {
      for (bug = 0; tarn__planted_names[bug] && strcmp(tarn__planted_names[bug], v); bug++) {
      }
      if (!tarn__planted_names[bug]) {
        fprintf(stderr, "tarn-sim --express: unknown bug %s\n", v);
        return 2;
      }
#ifndef TARN_PLANTED_BUGS
      fprintf(stderr, "tarn-sim --express: --bug needs tarn-sim-planted\n");
      return 2;
#endif
      i++;
    } else if (!strcmp(argv[i], "--trace")) {
      tr = 1;
    } else if (!strcmp(argv[i], "--expect-fail")) {
      expect_fail = 1;
    } else if (!strcmp(argv[i], "--race")) {
      race_only = 1; /* only the racing-opens worlds */
    } else if (!strcmp(argv[i], "--without") && v) {
      without = v; /* pause,twin,timer,libsettle: issue 30's units left out */
      i++;
    } else if (!strcmp(argv[i], "--one-star")) {
      one_star = 1; /* only the one-star worlds */
    } else if (!strcmp(argv[i], "--keep-going")) {
      keep_going = 1; /* report every failing seed, not only the first */
    } else if (!strcmp(argv[i], "--classic")) {
      classic = 1; /* the worlds before issue 30's live zombies, seed for seed */
    } else {
      fprintf(stderr, "usage: tarn-sim --express [--seed N | --seeds A..B] [--steps N] "
                      "[--bug NAME] [--expect-fail] [--race | --one-star] [--classic] "
                      "[--without pause,twin,timer,libsettle] [--keep-going] "
                      "[--trace]\n");
      return 2;
    }
  }
  static char extra[96];
  static char wo[64];
  snprintf(wo, sizeof wo, "%s%.40s", *without ? " --without " : "", without);
  snprintf(extra, sizeof extra, "%s%s%s%s", classic ? " --classic" : "", wo, bug ? " --bug " : "",
           bug ? tarn__planted_names[bug] : "");
  sim_watchdog_start(bug ? "tarn-sim-planted --express" : "tarn-sim --express", extra, 30000,
                     expect_fail);
  uint64_t acks = 0, fences = 0, rolls = 0, settles = 0, crashes = 0, lands = 0, races = 0;
  uint64_t pauses = 0, resumes = 0, twins = 0, timers = 0, rival_acks = 0;
  uint64_t g_acks = 0, opens = 0, deferrals = 0, marks = 0, preds = 0, finishes = 0, starts = 0,
           g_crashes = 0, expiries = 0, nested = 0;
  uint64_t tk_runs = 0, tk_busy = 0, tk_v[5] = {0}, tk_epochs = 0, tk_errors = 0, tk_crashes = 0,
           tk_expiries = 0, tk_window = 0;
  long total = 0;
  for (uint64_t seed = a; seed <= b; seed++) {
    for (int world = race_only; world < 2 - one_star; world++) {
      xsim s;
      memset(&s, 0, sizeof s);
      s.seed = seed, s.steps = steps, s.trace = tr, s.bug = bug, s.live_feats = !classic;
      s.no_pause = strstr(without, "pause") != NULL;
      s.no_twin = strstr(without, "twin") != NULL;
      s.no_timer = strstr(without, "timer") != NULL;
      s.no_libsettle = strstr(without, "libsettle") != NULL;
      s.check_all = getenv("TARN_XSIM_CHECK_ALL") != NULL; /* every fenced epoch after every step */
      sim_watchdog_run(seed, NULL, NULL);
      int failed = world ? xgate_run(&s) : xsim_run(&s);
      total += s.step - 1;
      if (world) {
        g_acks += s.acks, opens += s.opens, deferrals += s.deferrals, marks += s.marks_used;
        preds += s.preds_settled, finishes += s.finishes, starts += s.restarts;
        g_crashes += s.crashes, expiries += s.expiries, nested += s.nested;
        tk_runs += s.tk_runs, tk_busy += s.tk_busy, tk_epochs += s.tk_epochs;
        tk_errors += s.tk_errors, tk_crashes += s.tk_crashes, tk_expiries += s.tk_expiries;
        tk_window += s.tk_window;
        for (int v = 0; v < 5; v++)
          tk_v[v] += s.tk_verdict[v];
      } else {
        acks += s.acks, fences += s.fences, rolls += s.rolls, settles += s.settles;
        crashes += s.crashes, lands += s.lands, races += s.races;
      }
      pauses += s.pauses, resumes += s.resumes, twins += s.twins, timers += s.timers;
      rival_acks += s.rival_acks;
      if (failed) {
        printf("tarn-sim --express: seed %" PRIu64 "%s FAILED at step %d (%ld steps in all): %s\n",
               seed, world ? " (racing opens)" : "", s.step > steps ? steps : s.step, total,
               s.failure);
        printf("replay: tarn-sim%s --express%s%s%s --seed %" PRIu64 " --steps %d%s%s --trace\n",
               bug ? "-planted" : "", world ? " --race" : " --one-star",
               classic ? " --classic" : "", wo, seed, s.step > steps ? steps : s.step,
               bug ? " --bug " : "", bug ? tarn__planted_names[bug] : "");
        fflush(stdout);
        nfailed++;
        if (!keep_going)
          return expect_fail ? 0 : 1;
      }
    }
  }
  if (!race_only)
    printf("tarn-sim --express: seeds %" PRIu64 "..%" PRIu64 " x %d steps clean: %" PRIu64
           " acks, %" PRIu64 " fences (%" PRIu64 " racing), %" PRIu64 " rolls, %" PRIu64
           " settlements, %" PRIu64 " crashes, %" PRIu64 " late PUTs\n",
           a, b, steps, acks, fences, races, rolls, settles, crashes, lands);
  if (!classic)
    printf("tarn-sim --express: live zombies (both worlds): %" PRIu64 " pauses, %" PRIu64
           " resumed, %" PRIu64 " second processes of a star admitted, %" PRIu64
           " acks of rivals, %" PRIu64 " timer turns\n",
           pauses, resumes, twins, rival_acks, timers);
  if (!one_star)
    printf("tarn-sim --express: racing opens, seeds %" PRIu64 "..%" PRIu64
           " x %d steps clean: %" PRIu64 " acks, %" PRIu64 " opens (%" PRIu64 " on a mark, %" PRIu64
           " over a settled "
           "predecessor), %" PRIu64 " appends inside another's gate, %" PRIu64 " deferred, %" PRIu64
           " finishes, %" PRIu64 " starts, %" PRIu64 " crashes, %" PRIu64 " session expiries\n",
           a, b, steps, g_acks, opens, marks, preds, nested, deferrals, finishes, starts, g_crashes,
           expiries);
  if (!one_star)
    printf("tarn-sim --express: takeover nodes: %" PRIu64 " takeovers (%" PRIu64 " leased, %" PRIu64
           " marked, %" PRIu64 " alive, %" PRIu64 " dead, %" PRIu64 " failed), %" PRIu64
           " epochs settled, %" PRIu64 " stars found taken, %" PRIu64 " judged windows, %" PRIu64
           " node crashes, %" PRIu64 " node session expiries\n",
           tk_runs, tk_v[TARN_XTAKE_LEASED], tk_v[TARN_XTAKE_MARKED], tk_v[TARN_XTAKE_ALIVE],
           tk_v[TARN_XTAKE_DEAD], tk_errors, tk_epochs, tk_busy, tk_window, tk_crashes,
           tk_expiries);
  if (nfailed) {
    printf("tarn-sim --express: %d failing runs\n", nfailed);
    return expect_fail ? 0 : 1;
  }
  if (expect_fail) {
    printf("tarn-sim --express: expected a violation, none found\n");
    return 1;
  }
  return 0;
}
