/* Finish: the one door out of leading an express log (issue 15; the Epochs
 * design, "Clean release versus abandonment"; docs/express.md "Leadership").
 * In-flight slots resolve, the release flush absorbs everything acknowledged
 * (from the writer's in-memory flights, so the epoch lives on for the other
 * logs), and only then the clean-release mark is stamped, the tenure's last
 * write: a successor that finds it trusts that every offset below its end is
 * indexed and settles nothing. */
#include <inttypes.h>
#include <stdlib.h>

#include "express/xwriter_internal.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

static xlog **find_link(tarn_xwriter *w, uint64_t log_id) {
  xlog **p = &w->logs;
  while (*p && (*p)->log_id != log_id)
    p = &(*p)->next;
  return *p ? p : NULL;
}

static int stamp(tarn_xwriter *w, xlog *l, uint64_t end) {
  tarn_meta_guard g[TARN_LEASE_GUARDS];
  size_t ng = tarn_lease_guards(l->lease, g);
  /* under the tenure's lease: a writer whose session ended certifies nothing */
  return tarn__xmark_put(w->meta, l->log_id, w->star, l->rec_epoch, end, g, ng);
}

int tarn_xwriter_finish(tarn_xwriter *w, uint64_t log_id) {
  pthread_mutex_lock(&w->mu);
  xlog **p = find_link(w, log_id);
  xlog *l = p ? *p : NULL;
  if (l)
    l->finishing = 1; /* from here, appends to the log bounce */
  uint64_t assigned = l ? l->next_off : 0;
  pthread_mutex_unlock(&w->mu);
  if (!l)
    return tarn__err(TARN_ENOTFOUND, "express writer %s does not lead log %" PRIu64, w->star,
                     log_id);
  int rc = 0;
  if (TARN__PLANTED(TARN__BUG_XMARK_BEFORE_FLUSH) && (rc = stamp(w, l, assigned)))
    return rc; /* the bug: the mark certifies coverage not yet durable */
  rc = tarn_xwriter_flush(w);
  if (!rc)
    rc = tarn_xwriter_absorb_sync(w);
  if (rc)
    return tarn__errctx(rc, "finishing express log %" PRIu64 ": the release flush", log_id);
  pthread_mutex_lock(&w->mu);
  uint64_t end = l->absorbed_end, released = l->released_end;
  int failed = w->failed_rc;
  pthread_mutex_unlock(&w->mu);
  if (failed || end != released || released != assigned)
    return tarn__err(TARN_EUNAVAIL, "finishing express log %" PRIu64 ": %s", log_id,
                     failed ? "the writer failed; the log must be settled"
                            : "acknowledged entries are not all absorbed yet; retry");
  if (TARN__PLANTED(TARN__BUG_XREC_AFTER_ACK)) {
    tarn_meta_guard g[TARN_LEASE_GUARDS];
    size_t ng = tarn_lease_guards(l->lease, g);
    if ((rc = tarn__xwriter_rec_put(w->meta, log_id, w->star, l->rec_epoch, g, ng)))
      return rc;
  }
  if (!TARN__PLANTED(TARN__BUG_XMARK_BEFORE_FLUSH) && (rc = stamp(w, l, end)))
    return tarn__errctx(rc,
                        "finishing express log %" PRIu64 ": the mark did not land (the "
                        "lease is kept; retry)",
                        log_id);
  pthread_mutex_lock(&w->mu);
  if ((p = find_link(w, log_id)))
    *p = l->next;
  pthread_mutex_unlock(&w->mu);
  rc = tarn_lease_release(l->lease);
  free(l);
  return rc;
}

int tarn__xwriter_finish_all(tarn_xwriter *w) {
  int first = 0;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    xlog *l = w->logs;
    while (l && l->finishing > 1) /* given up on below */
      l = l->next;
    uint64_t id = l ? l->log_id : 0;
    pthread_mutex_unlock(&w->mu);
    if (!l)
      return first;
    int rc = 0;
    for (int a = 0; a < w->o.finish_attempts; a++) {
      if (a)
        tarn__sleep_ms(w->o.finish_retry_ms);
      if (!(rc = tarn_xwriter_finish(w, id)))
        break;
      if (w->o.finish_note)
        w->o.finish_note(w->o.finish_note_arg, id, a + 1, rc, tarn_errmsg());
    }
    if (rc) {
      /* given up: close releases the lease unmarked and a successor settles */
      if (!first)
        first = rc;
      pthread_mutex_lock(&w->mu);
      xlog **p = find_link(w, id);
      if (p)
        (*p)->finishing = 2;
      pthread_mutex_unlock(&w->mu);
    }
  }
}
