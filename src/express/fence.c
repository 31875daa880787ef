/* The fence: ends an epoch of a star's express chain at its cut (the Epochs
 * design, "Fencing an epoch" and "Publishing the cut"; epochs-model.md is the
 * checked account of which steps carry safety, §7.2). */
#include "express/fence.h"

#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/metrics.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

uint64_t tarn__xfence_estimate(const tarn__xbuckets *s, const char *star, uint64_t epoch,
                               uint64_t from) {
  /* Exponential step: from, from+1, from+3, from+7, ... while slots exist.
   * Only "seen to exist" raises lo, so E-1 was seen filled (§7.1 step 2). */
  if (!tarn__xslot_exists(s, star, epoch, from))
    return from;
  uint64_t lo = from, hi = 0, step = 1;
  for (;;) {
    uint64_t p = from + (2 * step - 1);
    if (p < lo || step > (UINT64_MAX >> 2))
      return lo + 1; /* no chain is that long; stay at what was seen */
    if (!tarn__xslot_exists(s, star, epoch, p)) {
      hi = p;
      break;
    }
    lo = p;
    step *= 2;
  }
  /* lo exists, hi did not: binary search for the last slot seen */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (tarn__xslot_exists(s, star, epoch, mid))
      lo = mid;
    else
      hi = mid;
  }
  return lo + 1;
}

/* Copies the remembered flight into every bucket seen empty; returns how
 * many copies landed as exactly these bytes (tarn__xslot_put reads back). */
static uint64_t repair(const tarn__xbuckets *s, const char *key, const tarn__xobs *o) {
  uint64_t landed = 0;
  for (size_t i = 0; i < s->k; i++)
    if (o->st[i] == TARN__XOBS_EMPTY &&
        tarn__xslot_put(s->b[i].store, key, o->flight_bytes.data, o->flight_bytes.len) == 0)
      landed++;
  return landed;
}

/* The gauge of how long the current slot has been undecided (0 once decided). */
static void undecided_gauge(const char *star, int64_t age_ms) {
  tarn_metrics_set("tarn_express_fence_undecided_age_ms", age_ms, "star", star, NULL);
}

/* Handles one slot until it is committed (*dead = 0) or dead (*dead = 1). */
static int walk_slot(const tarn__xbuckets *s, const char *star, uint64_t epoch, uint64_t slot,
                     const tarn_xfence_opts *o, int64_t deadline, tarn_xfence_report *r,
                     int *dead) {
  char key[TARN__X_SLOT_KEY_MAX + 1];
  int rc = tarn__xslot_key(key, sizeof key, star, epoch, slot);
  if (rc)
    return rc;
  tarn_buf poison;
  tarn_buf_init(&poison);
  if ((rc = tarn__xpoison(&poison, star, epoch, slot)))
    return rc;
  tarn__xobs ob;
  tarn__xobs_init(&ob);
  int64_t retry = o && o->retry_ms > 0 ? o->retry_ms : 20;
  int64_t stalled_since = -1;
  for (;;) {
    if ((rc = tarn__xobserve(s, star, epoch, slot, &ob)))
      break;
    r->observations++;
    int c = tarn__xobs_classify(&ob, s->w);
    if (c == TARN__XSLOT_COMMITTED || c == TARN__XSLOT_DEAD) {
      *dead = c == TARN__XSLOT_DEAD;
      break;
    }
    int progressed = 0;
    /* A fencer that has seen this slot's flight repairs from those bytes
     * even when the bucket holding it is now unreachable (§7.4). */
    if (c == TARN__XSLOT_REPAIR || (c == TARN__XSLOT_POISON && ob.have_flight_bytes)) {
      uint64_t n = repair(s, key, &ob);
      r->repair_puts += n;
      progressed = n > 0;
    } else if (c == TARN__XSLOT_POISON && TARN__PLANTED(TARN__BUG_XFENCE_NO_REOBSERVE)) {
      /* planted (epochs-model §6 "no re-observe"): sends K-W+1 poison PUTs
       * and declares the slot dead without looking again */
      uint32_t sent = ob.poison;
      for (size_t i = 0; i < s->k; i++)
        if (ob.st[i] == TARN__XOBS_EMPTY) {
          tarn_objstore_put(s->b[i].store, key, poison.data, poison.len);
          if (++sent >= s->k - s->w + 1) {
            *dead = 1;
            goto out;
          }
        }
    } else if (c == TARN__XSLOT_POISON) {
      /* One empty bucket, in the set's fixed order; the next one when a PUT
       * fails (§7.9: a bucket that reads but rejects writes must not stall
       * the fence). Then look again: a landed PUT is not a seen copy. */
      for (size_t i = 0; i < s->k && !progressed; i++)
        if (ob.st[i] == TARN__XOBS_EMPTY &&
            tarn_objstore_put(s->b[i].store, key, poison.data, poison.len) == 0)
          r->poison_puts++, progressed = 1;
    }
    if (progressed) {
      stalled_since = -1;
      continue;
    }
    /* Undecided, or nothing could be written: block and retry until the
     * caller's deadline, never guess (§6 "guess", §7.3). */
    int64_t now = tarn__mono_ms();
    if (stalled_since < 0)
      stalled_since = now;
    int64_t age = now - stalled_since;
    undecided_gauge(star, age);
    if (now >= deadline) {
      r->undecided_slot = slot;
      r->undecided_ms = age;
      tarn_metrics_inc("tarn_express_fence_undecided_total", 1, "star", star, NULL);
      rc = tarn__err(TARN_ETIMEDOUT,
                     "express fence %s/%llu: slot %llu undecided for %lld ms (%u flight, %u "
                     "poison, %u empty, %u unreachable of %zu; W=%u): the unreachable buckets "
                     "hold the deciding vote",
                     star, (unsigned long long)epoch, (unsigned long long)slot, (long long)age,
                     ob.flight, ob.poison, ob.empty, ob.unknown, s->k, s->w);
      break;
    }
    tarn__sleep_ms(retry < deadline - now ? retry : deadline - now);
  }
out:
  if (stalled_since >= 0 && rc == 0)
    undecided_gauge(star, 0);
  tarn__xobs_free(&ob);
  tarn_buf_free(&poison);
  return rc;
}

int tarn__xfence_walk(const tarn__xbuckets *s, const char *star, uint64_t epoch,
                      uint64_t checkpoint, const tarn_xfence_opts *o, tarn_xfence_report *r) {
  memset(r, 0, sizeof *r);
  uint64_t e = tarn__xfence_estimate(s, star, epoch, checkpoint);
  /* estimate - WIN, not WIN-1: every slot below is then committed, so the
   * walk cannot skip a hole or find a second dead slot (epochs-model §7.1). */
  uint64_t back = s->win;
  if (TARN__PLANTED(TARN__BUG_XFENCE_WALK_START_WIN_MINUS_1))
    back = s->win - 1;
  uint64_t start = e > back ? e - back : 0;
  if (start < checkpoint)
    start = checkpoint; /* below it every slot is committed and absorbed */
  r->estimate = e;
  r->start = start;
  /* the caller's deadline, for the whole walk */
  int64_t deadline = tarn__mono_ms() + (o && o->timeout_ms > 0 ? o->timeout_ms : 0);
  for (uint64_t slot = start;; slot++) {
    int dead = 0;
    r->slots_walked++;
    int rc = walk_slot(s, star, epoch, slot, o, deadline, r, &dead);
    if (rc)
      return rc;
    if (dead) {
      r->cut = slot;
      return 0;
    }
  }
}

int tarn_express_fence(tarn_meta *m, const char *star, uint64_t epoch, const tarn_xfence_opts *o,
                       tarn_xfence_report *r) {
  tarn_xfence_report tmp;
  if (!r)
    r = &tmp;
  memset(r, 0, sizeof *r);
  tarn__xepoch e;
  tarn__xbuckets b;
  int rc = tarn__xepoch_open(m, star, epoch, "express fence", &e, &b);
  if (rc)
    return rc;
  if (e.state == TARN__XEPOCH_FENCED && e.has_cut)
    r->cut = e.cut; /* once recorded, a later fence is a read */
  else if ((rc = tarn__xfence_walk(&b, star, epoch, e.checkpoint, o, r)) == 0) {
    rc = tarn__xepoch_publish_cut(m, &e, r->cut);
    if (rc == TARN_ECORRUPT)
      rc = tarn__err(TARN_ECORRUPT,
                     "express fence %s/%llu: computed cut %llu but another fencer published "
                     "%llu: a fencing bug (the cut must be stable); nothing was overwritten",
                     star, (unsigned long long)epoch, (unsigned long long)r->cut,
                     (unsigned long long)e.cut);
    else if (rc == 0)
      r->published = 1;
    if (rc == 0)
      tarn_metrics_inc("tarn_express_fences_total", 1, "star", star, NULL);
  }
  tarn__xbuckets_free(&b);
  tarn__xepoch_free(&e);
  return rc;
}

int tarn_express_fence_cut(void *arg, tarn_meta *m, const char *star, uint64_t epoch,
                           uint64_t *cut) {
  static const tarn_xfence_opts dflt = {.timeout_ms = 30000};
  const tarn_xfence_opts *o = arg ? (const tarn_xfence_opts *)arg : &dflt;
  tarn_xfence_report r;
  int rc = tarn_express_fence(m, star, epoch, o, &r);
  if (rc == 0)
    *cut = r.cut;
  return rc;
}
