/* The open gate of an express log (issue 15; the Epochs design, "Takeover,
 * end to end", "Clean release versus abandonment"; docs/express.md
 * "Leadership"). Run once per tenure, when a writer first appends to a log,
 * after it holds the log's lease and before it reads the log's end: a
 * successor never counts from an end that an unsettled predecessor may still
 * extend, so it never reassigns an acknowledged offset. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "express/xwriter_internal.h"
#include "tarn/express_fence.h"
#include "tarn/key.h"
#include "tarn/metrics.h"
#include "util/error.h"
#include "util/planted.h"

/* 1 when a lease record of the log other than ours exists: its holder's
 * session lives (leases are ephemeral), so the predecessor may still
 * acknowledge. The registry's word is only ever a reason to wait. */
static int other_lease(tarn_meta *m, uint64_t log_id, const tarn_lease *mine, int *yes) {
  char own[TARN_KEY_SLASH_MAX];
  int rc = tarn_key_lease(own, log_id, tarn_lease_token(mine));
  return rc ? rc : tarn__xlease_other(m, log_id, own, yes);
}

int tarn__xsettle_range(tarn_meta *m, tarn_objstore *wal, const char *star, uint64_t lo,
                        uint64_t hi) {
  tarn_xfence_opts fo = {TARN__X_GATE_FENCE_TIMEOUT_MS, 0};
  return tarn__xsettle_epochs(m, wal, star, lo, hi, &fo, NULL, NULL);
}

/* Settles [lo, hi] of star, oldest first, but never an epoch this writer
 * still holds flights of (issue 30 item 3): a rolled epoch of its own is
 * being absorbed by its absorber, from memory, at the offsets it counted,
 * and a settler racing it misplaced entries (tarn-sim --express seed 93986:
 * acknowledged at 351, read at 349). Not "[first epoch, current]": another
 * process of the same star may mint epochs in between (racing opens). */
#define OWN_MAX 64
static int settle_not_own(tarn_xwriter *w, const char *star, uint64_t lo, uint64_t hi) {
  uint64_t own[OWN_MAX];
  size_t n = 0;
  pthread_mutex_lock(&w->mu);
  for (const xflight *f = w->head; f && !TARN__PLANTED(TARN__BUG_XGATE_SETTLES_OWN); f = f->next)
    if (f->epoch >= lo && f->epoch <= hi && n < OWN_MAX) {
      size_t j = n;
      while (j > 0 && own[j - 1] > f->epoch) /* kept sorted, each once */
        j--;
      if (j > 0 && own[j - 1] == f->epoch)
        continue;
      memmove(&own[j + 1], &own[j], (n - j) * sizeof *own);
      own[j] = f->epoch;
      n++;
    }
  pthread_mutex_unlock(&w->mu);
  uint64_t from = lo;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i <= n; i++) {
    uint64_t to = i < n ? own[i] : hi + 1; /* settle [from, to) */
    if (to > from)
      rc = tarn__xsettle_range(w->meta, w->wal, star, from, to - 1);
    from = i < n ? own[i] + 1 : from;
  }
  return rc;
}

/* Counts an admission by its verdict (tarn_xwriter_stats.gate_*) once the
 * gate's record landed. */
static int counted(tarn_xwriter *w, int rc, uint64_t *verdict) {
  if (!rc) {
    pthread_mutex_lock(&w->mu);
    (*verdict)++;
    pthread_mutex_unlock(&w->mu);
    /* and for the operator (and tests that wait for a handover to finish):
     * tarn_express_gate_total{verdict, star} */
    const char *name = verdict == &w->st.gate_marked    ? "marked"
                       : verdict == &w->st.gate_restart ? "restart"
                       : verdict == &w->st.gate_settled ? "settled"
                                                        : "fresh";
    tarn_metrics_inc("tarn_express_gate_total", 1, "verdict", name, "star", w->star, NULL);
  }
  return rc;
}

int tarn__xgate_open(tarn_xwriter *w, xlog *l) {
  tarn_meta *m = w->meta;
  uint64_t log_id = l->log_id, my_epoch = w->ep.epoch;
  char pred[TARN__X_STAR_MAX + 1], ms[TARN__X_STAR_MAX + 1];
  uint64_t pe = 0, me = 0, mend = 0, pe_tail = 0, cum = 0;
  int64_t mver = 0, rver = 0;
  uint64_t *verdict = &w->st.gate_fresh;
  int rc = tarn__xwriter_rec_get(m, log_id, pred, &pe, &rver);
  int had_rec = rc == 0;
  if (TARN__PLANTED(TARN__BUG_XGATE_TRUSTS_INDEX) && !rc &&
      !tarn__xlog_tail(m, log_id, &pe_tail, &cum) && pe_tail == 0)
    rc = TARN_ENOTFOUND; /* the bug: an empty index read as a fresh log */
  if (rc == TARN_ENOTFOUND) {
    tarn_errclear();
    goto admit; /* nobody ever led it: a fresh log */
  }
  if (rc)
    return rc;
  /* a mark for exactly that tenure certifies it: consumed before the first
   * append, even by the tenure's own star (a later crash of ours must not
   * find it standing) */
  rc = tarn__xmark_get(m, log_id, ms, &me, &mend, &mver);
  if (rc && rc != TARN_ENOTFOUND)
    return rc;
  tarn_errclear();
  if (!rc && !strcmp(ms, pred) && me == pe) {
    if (!TARN__PLANTED(TARN__BUG_XMARK_NOT_CONSUMED) && (rc = tarn__xmark_consume(m, log_id, mver)))
      return rc == TARN_ECONFLICT ? tarn__err(TARN_EBUSY,
                                              "express log %" PRIu64 ": another open consumed the "
                                              "mark; retry",
                                              log_id)
                                  : rc;
    verdict = &w->st.gate_marked;
    goto admit;
  }
  if (!strcmp(pred, w->star)) {
    verdict = &w->st.gate_restart;
    if (pe == my_epoch)
      goto admit; /* our own tenure, already gated (a log reopened after Finish failed) */
    /* the same star restarted: its head moved past pe, so pe.. are superseded */
    if ((rc = settle_not_own(w, pred, pe, my_epoch - 1)))
      return rc;
    goto admit;
  }
  int alive = 0;
  if ((rc = other_lease(m, log_id, l->lease, &alive)))
    return rc;
  if (alive)
    return tarn__err(TARN_EBUSY,
                     "express log %" PRIu64 ": star %s leads it (or is finishing "
                     "it) and left no mark; retry",
                     log_id, pred);
  verdict = &w->st.gate_settled;
  if (!TARN__PLANTED(TARN__BUG_XGATE_TRUSTS_DEAD)) {
    uint64_t head = 0;
    if ((rc = tarn__xchain_head(m, pred, TARN__X_CLASS_EXPRESS, &head)) ||
        (rc = tarn__xsettle_range(m, w->wal, pred, pe, head)))
      return rc;
  }
admit:
  l->rec_epoch = my_epoch;
  if (TARN__PLANTED(TARN__BUG_XREC_AFTER_ACK))
    return 0; /* the bug: Finish writes it, after the tenure's acknowledgements */
  {
    /* Under the lease, and only over the record this gate judged: an open
     * that raced ours (inside our fence or settlement: a restarted star's,
     * which checks no leases, or one whose lease scan ran before our lease
     * existed) and was admitted first has moved it, and two leaders would
     * count from the same end. tarn-sim --express --race --seed 5. */
    tarn_meta_guard g[TARN_LEASE_GUARDS + 1];
    size_t ng = tarn_lease_guards(l->lease, g);
    g[ng++] = had_rec ? (tarn_meta_guard){TARN_META_GUARD_EXISTS, TARN__X_WRITER_KEY, rver}
                      : (tarn_meta_guard){TARN_META_GUARD_ABSENT, TARN__X_WRITER_KEY, 0};
    rc = tarn__xwriter_rec_put(m, log_id, w->star, my_epoch, g, ng);
    char now_star[TARN__X_STAR_MAX + 1];
    uint64_t now_epoch = 0;
    int64_t now_ver = 0;
    int moved = 0;
    if (rc == TARN_EGUARD) { /* the record's guard, or the lease's? */
      int r2 = tarn__xwriter_rec_get(m, log_id, now_star, &now_epoch, &now_ver);
      moved = had_rec ? r2 == 0 && now_ver != rver : r2 == 0;
    }
    if (moved)
      rc = tarn__err(TARN_EBUSY,
                     "express log %" PRIu64 ": %s's open was admitted while this "
                     "one judged the log; retry",
                     log_id, now_star);
    else if (rc == TARN_EGUARD)
      rc = tarn__err(TARN_EGUARD,
                     "express log %" PRIu64 ": the lease no longer guards the "
                     "last-writer record",
                     log_id);
  }
  return counted(w, rc, verdict);
}
