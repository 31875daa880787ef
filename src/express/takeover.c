/* The liveness of a star's process and the takeover of a star that died
 * (issue 15; the Epochs design, "Takeover, end to end", "Clean release versus
 * abandonment"; docs/express.md "Takeover").
 *
 * A star's leases say that it leads a log now; they do not say that it is
 * gone. A process that restarted under the same star (a serve node) mints its
 * epoch before it leads any log: judged by leases alone, a takeover in that
 * window fenced the live epoch (and, reading the head after its judgement, an
 * epoch newer than the one it judged), and the writer halted and rolled for
 * nothing. So a process records its liveness before its epoch exists, and the
 * takeover reads the head before it judges: an epoch at or below that head
 * with no lease and no liveness record left has no process that can write it. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "express/express_internal.h"
#include "tarn/error.h"
#include "tarn/key.h"
#include "util/error.h"
#include "util/planted.h"

#define ALIVE_PREFIX "/alive/"
#define EPOCHS_BACK 16 /* one open epoch per crash of a star restarted after several */

int tarn__xalive_put(tarn_meta *m, const char *star, char *key, size_t n) {
  /* a process-wide counter and the pid name it (no random draw: the
   * simulator's worlds replay their random stream); another host's record
   * with the same name is skipped past */
  static atomic_uint_fast64_t counter;
  char part[TARN__X_PART_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  for (int attempt = 0; !rc && attempt < 64; attempt++) {
    uint64_t c = (uint64_t)atomic_fetch_add(&counter, 1) + 1;
    int len = snprintf(key, n, ALIVE_PREFIX "%ld-%" PRIu64, (long)getpid(), c);
    if (len < 0 || (size_t)len >= n)
      return tarn__err(TARN_ERANGE, "liveness key does not fit");
    rc = tarn_meta_create(m, part, key, "1", 1, TARN_META_EPHEMERAL, NULL);
    if (rc != TARN_EEXIST)
      break;
    tarn_errclear();
    rc = 0;
    if (attempt == 63)
      rc = tarn__err(TARN_EEXIST, "no free liveness key for star %s", star);
  }
  return rc ? tarn__errctx(rc, "recording the liveness of star %s", star) : 0;
}

int tarn__xalive_del(tarn_meta *m, const char *star, const char *key) {
  char part[TARN__X_PART_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  if (!rc)
    rc = tarn_meta_delete(m, part, key);
  if (rc == TARN_ENOTFOUND) {
    tarn_errclear();
    rc = 0;
  }
  return rc ? tarn__errctx(rc, "deleting the liveness record of star %s", star) : 0;
}

int tarn__xalive_get(tarn_meta *m, const char *star, int *yes) {
  char part[TARN__X_PART_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  if (rc)
    return rc;
  tarn_meta_recs r;
  if ((rc = tarn_meta_scan(m, part, ALIVE_PREFIX, ALIVE_PREFIX "~", 0, 1, &r)))
    return tarn__errctx(rc, "reading the liveness of star %s", star);
  *yes = r.n > 0;
  tarn_meta_recs_free(&r);
  return 0;
}

int tarn__xlease_other(tarn_meta *m, uint64_t log_id, const char *except, int *yes) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_SLASH_MAX], b[TARN_KEY_SLASH_MAX + 2];
  int rc = tarn_key_partition(part, log_id);
  if (!rc)
    rc = tarn_key_lease_prefix(a, log_id);
  if (rc)
    return rc;
  snprintf(b, sizeof b, "%s~", a);
  tarn_meta_recs r;
  if ((rc = tarn_meta_scan(m, part, a, b, 0, 0, &r)))
    return tarn__errctx(rc, "reading the leases of express log %" PRIu64, log_id);
  *yes = 0;
  for (size_t i = 0; i < r.n; i++)
    *yes |= !except || strcmp(r.v[i].key, except) != 0;
  tarn_meta_recs_free(&r);
  return 0;
}

/* *st: 0 open or unsettled, 1 settled (fenced, checkpoint at the cut), -1 a
 * burned number (no record). */
static int epoch_settled(tarn_meta *m, const char *star, uint64_t e, int *st) {
  tarn__xepoch ep;
  int rc = tarn__xepoch_load(m, star, TARN__X_CLASS_EXPRESS, e, &ep);
  *st = -1;
  if (rc == TARN_ENOTFOUND) {
    tarn_errclear();
    return 0;
  }
  if (rc)
    return rc;
  *st = ep.state == TARN__XEPOCH_FENCED && ep.has_cut && ep.checkpoint >= ep.cut;
  tarn__xepoch_free(&ep);
  return 0;
}

int tarn__xsettle_epochs(tarn_meta *m, tarn_objstore *wal, const char *star, uint64_t lo,
                         uint64_t hi, const tarn_xfence_opts *fo, tarn_xsettle_report *sum,
                         uint64_t *epochs) {
  /* Oldest first (issue 30 item 3): a log's offsets run on from one epoch of
   * the star into the next (a roll carries the count over), so an epoch's
   * entries belong after every older epoch's; absorb places each section
   * exactly where it was acknowledged and refuses to place one while an
   * older epoch of the star is unsettled (absorb.c, older_unsettled). */
  if (lo < 1)
    lo = 1;
  int newest_first = TARN__PLANTED(TARN__BUG_XSETTLE_NEWEST_FIRST);
  for (uint64_t i = 0; lo <= hi && i <= hi - lo; i++) {
    uint64_t e = newest_first ? hi - i : lo + i;
    int st, rc = epoch_settled(m, star, e, &st);
    if (rc)
      return rc;
    if (st)
      continue;
    tarn_xsettle_report sr;
    /* the bug: the takeover's calls (the ones that ask for a report) settle
     * an epoch nobody fenced; settle refuses it (no published cut) */
    int skip_fence = TARN__PLANTED(TARN__BUG_XTAKEOVER_SETTLES_UNFENCED) && sum;
    if ((!skip_fence && (rc = tarn_express_fence(m, star, e, fo, NULL))) ||
        (rc = tarn_express_settle(m, wal, star, e, fo, &sr)))
      return tarn__errctx(rc, "settling epoch %" PRIu64 " of star %s", e, star);
    if (sum) {
      sum->cut = sum->cut > sr.cut ? sum->cut : sr.cut;
      sum->absorbed += sr.absorbed;
      sum->deleted += sr.deleted;
      sum->poison_kept += sr.poison_kept;
    }
    if (epochs)
      (*epochs)++;
  }
  return 0;
}

/* 1 when log_id's last writer is star and its tenure left a standing mark. */
static int marked_by(tarn_meta *m, uint64_t log_id, const char *star, int *yes) {
  char ws[TARN__X_STAR_MAX + 1], ms[TARN__X_STAR_MAX + 1];
  uint64_t we = 0, me = 0, end = 0;
  int64_t v = 0;
  *yes = 0;
  int rc = tarn__xwriter_rec_get(m, log_id, ws, &we, NULL);
  if (!rc)
    rc = tarn__xmark_get(m, log_id, ms, &me, &end, &v);
  if (rc == TARN_ENOTFOUND) {
    tarn_errclear();
    return 0;
  }
  if (rc)
    return rc;
  *yes = !strcmp(ws, star) && !strcmp(ms, star) && me == we;
  return 0;
}

/* The oldest epoch looked at below hi: down to the first settled one, at
 * most EPOCHS_BACK (the epochs of a star that restarted without leading a
 * log); recorded_floor reaches further down where a log needs it. */
static int walk_floor(tarn_meta *m, const char *star, uint64_t hi, uint64_t *lo) {
  *lo = hi + 1;
  for (uint64_t e = hi; e >= 1 && e + EPOCHS_BACK > hi; e--) {
    int st, rc = epoch_settled(m, star, e, &st);
    if (rc)
      return rc;
    if (st == 1)
      break;
    *lo = e;
  }
  return 0;
}

/* The oldest epoch one of the star's logs records as its last writer's
 * (the last-writer record, /express/writer). An unsettled epoch of the star
 * with acknowledgements on a log is at or above that log's recorded epoch:
 * an open that moved the record settled the epochs below it, or consumed a
 * mark that certified them. Epochs between may already be settled, though:
 * a restart's gate settles [recorded, its own) of the log it opens only, so
 * a settled epoch above does not settle a dead one below, recorded by
 * another log (takeover_walks_past_a_settled_epoch). */
static int recorded_floor(tarn_meta *m, const char *star, const uint64_t *logs, size_t n,
                          uint64_t *lo) {
  for (size_t i = 0; i < n; i++) {
    char ws[TARN__X_STAR_MAX + 1];
    uint64_t we = 0;
    int rc = tarn__xwriter_rec_get(m, logs[i], ws, &we, NULL);
    if (rc == TARN_ENOTFOUND) {
      tarn_errclear();
      continue;
    }
    if (rc)
      return rc;
    if (!strcmp(ws, star) && we >= 1 && we < *lo)
      *lo = we;
  }
  return 0;
}

int tarn__xtakeover(tarn_meta *m, tarn_objstore *wal, const char *star, const uint64_t *logs,
                    size_t n, const tarn_xfence_opts *fo, void (*judged)(void *arg), void *arg,
                    tarn_xtakeover_report *r) {
  memset(r, 0, sizeof *r);
  /* the head first: whatever the judgement below finds holds for every
   * epoch up to it, and for none minted after it. judged runs between the
   * head read and the liveness read (the window a restart may fall in). */
  int late_head = TARN__PLANTED(TARN__BUG_XTAKEOVER_JUDGES_BEFORE_HEAD), rc = 0;
  if (!late_head) {
    rc = tarn__xchain_head(m, star, TARN__X_CLASS_EXPRESS, &r->head);
    if (rc || !r->head)
      return rc;
    if (judged)
      judged(arg);
  }
  int leased = 0, marked = n > 0;
  for (size_t i = 0; !rc && !leased && i < n; i++)
    rc = tarn__xlease_other(m, logs[i], NULL, &leased);
  if (rc)
    return rc;
  if (leased) {
    r->verdict = TARN_XTAKE_LEASED;
    return 0;
  }
  /* item 5 of issue 15: a star whose every log it left through Finish
   * certified its coverage; nothing of it needs fencing */
  for (size_t i = 0; !rc && marked && i < n; i++)
    rc = marked_by(m, logs[i], star, &marked);
  if (rc)
    return rc;
  if (marked) {
    r->verdict = TARN_XTAKE_MARKED;
    return 0;
  }
  int alive = 0;
  if ((rc = tarn__xalive_get(m, star, &alive)))
    return rc;
  if (late_head) { /* the bug: the head read after the judgement */
    if (judged)
      judged(arg);
    if ((rc = tarn__xchain_head(m, star, TARN__X_CLASS_EXPRESS, &r->head)) || !r->head)
      return rc;
  }
  r->verdict = alive ? TARN_XTAKE_ALIVE : TARN_XTAKE_DEAD;
  /* alive: the process may write the head; the epochs below it are halted
   * (an in-process roll) or a dead process's, superseded either way */
  int below_head = alive && !TARN__PLANTED(TARN__BUG_XTAKEOVER_FENCES_LIVE_HEAD);
  uint64_t hi = below_head ? r->head - 1 : r->head, lo = 0;
  if (!hi)
    return 0;
  if ((rc = walk_floor(m, star, hi, &lo)) || (rc = recorded_floor(m, star, logs, n, &lo)))
    return rc;
  r->hi = hi;
  return lo > hi ? 0 : tarn__xsettle_epochs(m, wal, star, lo, hi, fo, &r->st, &r->epochs);
}

int tarn_express_takeover(tarn_meta *m, tarn_objstore *wal, const char *star, const uint64_t *logs,
                          size_t n, const tarn_xfence_opts *fo, tarn_xtakeover_report *r) {
  tarn_xtakeover_report x;
  return tarn__xtakeover(m, wal, star, logs, n, fo, NULL, NULL, r ? r : &x);
}
