/* Settlement of a fenced epoch and the in-process roll's split (the Epochs
 * design, "Publishing the cut" and "The unratified tail"; epochs-model §7.6,
 * §7.7). Settlement is metadata and deletions only: it absorbs the committed
 * slots below the cut and deletes the stragglers in [cut, cut + WIN]. It never
 * deletes below the cut and never deletes poison: a zombie's PUT can land
 * arbitrarily late, and only standing poison keeps it harmless. */
#include "express/fence.h"

#include <string.h>

#include "tarn/error.h"
#include "tarn/metrics.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

/* Reads a flight of a slot below the cut, waiting out unreachable buckets
 * until the timeout: the published cut certifies W copies exist. */
static int flight_below_cut(const tarn__xbuckets *s, const tarn__xepoch *e, uint64_t slot,
                            const tarn_xfence_opts *o, tarn__xobs *ob) {
  int64_t retry = o && o->retry_ms > 0 ? o->retry_ms : 20;
  int64_t timeout = o && o->timeout_ms > 0 ? o->timeout_ms : 0;
  int64_t t0 = tarn__mono_ms();
  for (;;) {
    int rc = tarn__xobserve(s, e->star, e->epoch, slot, ob);
    if (rc)
      return rc;
    if (ob->have_flight_bytes)
      return 0;
    if (ob->poison >= s->k - s->w + 1)
      return tarn__err(TARN_ECORRUPT,
                       "express settle %s/%llu: slot %llu below the cut %llu is dead (%u poison): "
                       "a hole below a published cut",
                       e->star, (unsigned long long)e->epoch, (unsigned long long)slot,
                       (unsigned long long)e->cut, ob->poison);
    int64_t age = tarn__mono_ms() - t0;
    if (age >= timeout)
      return tarn__err(TARN_ETIMEDOUT,
                       "express settle %s/%llu: slot %llu below the cut: no flight readable "
                       "(%u empty, %u unreachable of %zu) for %lld ms",
                       e->star, (unsigned long long)e->epoch, (unsigned long long)slot, ob->empty,
                       ob->unknown, s->k, (long long)age);
    tarn__sleep_ms(retry < timeout - age ? retry : timeout - age);
  }
}

int tarn__xsettle(tarn_meta *m, tarn__xepoch *e, const tarn__xbuckets *s, tarn__xabsorb_fn absorb,
                  void *arg, const tarn_xfence_opts *o, tarn_xsettle_report *r) {
  memset(r, 0, sizeof *r);
  if (e->state != TARN__XEPOCH_FENCED || !e->has_cut)
    return tarn__err(TARN_EINVAL,
                     "express settle %s/%llu: the epoch is not fenced (no published cut): fence "
                     "it first",
                     e->star, (unsigned long long)e->epoch);
  uint64_t cut = e->cut;
  r->cut = cut;
  int rc = 0;
  /* Absorb: every committed slot below the cut, in slot order. */
  for (uint64_t slot = e->checkpoint; absorb && slot < cut && rc == 0; slot++) {
    if (slot < e->checkpoint)
      continue; /* another settler absorbed it (absorb re-read the record) */
    tarn__xobs ob;
    tarn__xobs_init(&ob);
    rc = flight_below_cut(s, e, slot, o, &ob);
    if (rc == 0)
      rc = absorb(arg, m, e, slot, ob.flight_bytes.data, ob.flight_bytes.len);
    if (rc == 0)
      r->absorbed++;
    tarn__xobs_free(&ob);
  }
  if (rc == 0 && absorb && cut > e->checkpoint)
    rc = tarn__xepoch_advance(m, e, TARN__XCUR_CHECKPOINT, cut);
  if (rc)
    return rc;
  /* Stragglers: flights in [cut, cut + WIN] (epochs-model §7.7: they lie in
   * [cut, cut + WIN - 1]; one slot spare). */
  uint64_t from = cut;
  if (TARN__PLANTED(TARN__BUG_XSETTLE_DELETES_BELOW_CUT) && from > 0)
    from--;
  char key[TARN__X_SLOT_KEY_MAX + 1];
  tarn_buf got;
  tarn_buf_init(&got);
  for (uint64_t slot = from; slot <= cut + s->win && rc == 0; slot++) {
    if ((rc = tarn__xslot_key(key, sizeof key, e->star, e->epoch, slot)))
      break;
    for (size_t i = 0; i < s->k && rc == 0; i++) {
      int st = tarn__xslot_observe(s->b[i].store, key, e->star, e->epoch, slot, &got);
      int del = st == TARN__XOBS_FLIGHT;
      if (st == TARN__XOBS_POISON) {
        r->poison_kept++;
        del = TARN__PLANTED(TARN__BUG_XSETTLE_DELETES_POISON);
      }
      if (!del)
        continue;
      rc = tarn_objstore_delete(s->b[i].store, key);
      if (rc == 0)
        r->deleted++;
    }
  }
  tarn_buf_free(&got);
  if (rc == 0)
    tarn_metrics_inc("tarn_express_settled_total", 1, "star", e->star, NULL);
  return rc;
}

int tarn_express_settle(tarn_meta *m, tarn_objstore *wal, const char *star, uint64_t epoch,
                        const tarn_xfence_opts *o, tarn_xsettle_report *r) {
  tarn_xsettle_report tmp;
  if (!r)
    r = &tmp;
  memset(r, 0, sizeof *r);
  tarn__xepoch e;
  tarn__xbuckets b;
  int rc = tarn__xepoch_open(m, star, epoch, "express settle", &e, &b);
  if (rc)
    return rc;
  if (!wal && e.has_cut && e.checkpoint < e.cut)
    rc = tarn__err(TARN_EINVAL,
                   "express settle %s/%llu: slots [%llu, %llu) below the cut are not absorbed "
                   "yet and no WAL root was given to absorb them into; nothing was deleted",
                   star, (unsigned long long)epoch, (unsigned long long)e.checkpoint,
                   (unsigned long long)e.cut);
  if (rc == 0)
    rc = tarn__xsettle(m, &e, &b, wal ? tarn__xabsorb_flight : NULL, wal, o, r);
  tarn__xbuckets_free(&b);
  tarn__xepoch_free(&e);
  return rc;
}

int tarn__xroll_split(uint64_t cut, const uint64_t *slot, size_t n, size_t *acked, size_t *n_acked,
                      size_t *republish, size_t *n_republish) {
  size_t na = 0, nr = 0;
  for (size_t i = 0; i < n; i++) {
    /* Below the cut: committed and absorbed, so acknowledged now; at or
     * above: never acknowledged, republished. Never both (§7.6). */
    int below = slot[i] < cut;
    if (below)
      acked[na++] = i;
    if (!below || (TARN__PLANTED(TARN__BUG_XROLL_REPUBLISHES_BELOW_CUT) && slot[i] + 1 == cut))
      republish[nr++] = i;
  }
  /* the new epoch's first slots take them in their old slot order */
  for (size_t i = 1; i < nr; i++)
    for (size_t j = i; j > 0 && slot[republish[j - 1]] > slot[republish[j]]; j--) {
      size_t t = republish[j];
      republish[j] = republish[j - 1];
      republish[j - 1] = t;
    }
  *n_acked = na;
  *n_republish = nr;
  return 0;
}
