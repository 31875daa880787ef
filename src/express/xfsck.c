/* fsck of express epochs (issue 14 acceptance: "no hole below a published
 * cut, absorbed slots indexed once"), in the style of src/log/fsck.c: reads
 * only, and reports each fault with its kind, slot, key and bucket. "Indexed
 * once" is checked as far as the epoch record shows it (the checkpoint never
 * passes the cut); absorbed WAL objects do not name their slots, so a slot
 * indexed twice inside [0, checkpoint) is not visible here.
 *
 * For every epoch of a star's express chain:
 *   - express-cursor: trimmed <= checkpoint, and with a published cut
 *     checkpoint <= cut (absorbing past the cut indexes slots that were never
 *     acknowledged; absorbing is exactly once per slot only if the checkpoint
 *     never passes the cut);
 *   - express-cut: the published cut slot is dead (K-W+1 poison seen);
 *   - express-hole: every slot in [trimmed, cut) is committed (W flights), or,
 *     below the checkpoint, reclaimed (every bucket empty); a slot with poison
 *     in the blocking set, or some flights but fewer than W, is a hole;
 *   - express-unreachable: a bucket could not be read (the check is then
 *     incomplete for that slot).
 * And per log, "absorbed slots indexed once" against the index itself, from
 * the per-log offset ranges absorb records on the epoch record with the
 * checkpoint (tarn__xepoch_end_absorb):
 *   - express-index-overlap: two absorbed ranges share offsets (a slot
 *     absorbed twice, at the same offsets);
 *   - express-index-missing: an absorbed range the index does not hold: it
 *     ends past the index's end, or an index record ends at one of its
 *     bounds with another cumulative size, or a bound falls inside a RAW
 *     record (inside a PARQUET one is compaction's merge: allowed). Ranges
 *     that end at or below the log's first record or its trim marker B are
 *     trimmed: skipped;
 *   - express-index-double: an index record inside the star's span of the
 *     log (from its first absorbed offset to the index's end while the star
 *     is the log's recorded writer, else to its last absorbed offset) that no
 *     absorbed range and no pending absorb intent claims: a slot indexed
 *     twice (a second put of the same entries at new offsets), or a writer
 *     beside the star.
 *   - express-index-gap: slots below the checkpoint that no absorbed range
 *     holds (the checkpoint passed them without indexing them).
 *   - express-index-order: a newer epoch's range of a log below an older
 *     epoch's (entries at offsets other than acknowledged; issue 30 item 3).
 * And express-unsettled: a fenced epoch below its cut's checkpoint while no
 * process of the star lives (issue 30 item 5).
 * The index is read after the epoch records and before they are read again:
 * every range read first was indexed before (the checkpoint moves after the
 * puts), and every index record read was claimed by an intent before its put,
 * so a live writer's absorb raises no fault. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "express/fence.h"
#include "log/index_scan.h"
#include "tarn/trim.h"
#include "tarn/error.h"
#include "tarn/express_fence.h"
#include "util/error.h"

static int add(tarn_fsck_report *r, const char *kind, uint64_t slot, const char *key,
               const char *object, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int add(tarn_fsck_report *r, const char *kind, uint64_t slot, const char *key,
               const char *object, const char *fmt, ...) {
  tarn_fsck_fault *v = realloc(r->faults, (r->n_faults + 1) * sizeof *v);
  if (!v)
    return tarn__err(TARN_ENOMEM, "express fsck: out of memory");
  r->faults = v;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tarn_fsck_fault f = {.offset = slot};
  snprintf(f.kind, sizeof f.kind, "%s", kind);
  f.key = key ? strdup(key) : NULL;
  f.object = object ? strdup(object) : NULL;
  f.message = strdup(msg);
  if (!f.message || (key && !f.key) || (object && !f.object)) {
    free(f.key), free(f.object), free(f.message);
    return tarn__err(TARN_ENOMEM, "express fsck: out of memory");
  }
  v[r->n_faults++] = f;
  return 0;
}

static int check_epoch(tarn_meta *m, const tarn__xepoch *e, tarn_fsck_report *r) {
  (void)m;
  const char *star = e->star;
  unsigned long long ep = (unsigned long long)e->epoch;
  int rc = 0;
  if (e->trimmed > e->checkpoint)
    rc = add(r, "express-cursor", e->trimmed, NULL, NULL,
             "express %s/%llu: trimmed %llu is past the checkpoint %llu (flights deleted before "
             "they were absorbed)",
             star, ep, (unsigned long long)e->trimmed, (unsigned long long)e->checkpoint);
  if (rc || !e->has_cut)
    return rc;
  if (e->checkpoint > e->cut)
    rc = add(r, "express-cursor", e->checkpoint, NULL, NULL,
             "express %s/%llu: checkpoint %llu is past the cut %llu (slots at or past the cut "
             "were absorbed: never acknowledged, or absorbed twice)",
             star, ep, (unsigned long long)e->checkpoint, (unsigned long long)e->cut);
  tarn__xbuckets b;
  memset(&b, 0, sizeof b);
  if (rc == 0 && (rc = tarn__xbuckets_copy(&e->buckets, &b)) == 0)
    rc = tarn__xbuckets_open(&b);
  uint32_t blocking = (uint32_t)b.k - b.w + 1;
  char key[TARN__X_SLOT_KEY_MAX + 1];
  for (uint64_t s = e->trimmed; rc == 0 && s <= e->cut; s++) {
    tarn__xobs o;
    tarn__xobs_init(&o);
    if ((rc = tarn__xobserve(&b, star, e->epoch, s, &o)) == 0)
      rc = tarn__xslot_key(key, sizeof key, star, e->epoch, s);
    for (size_t i = 0; rc == 0 && i < b.k; i++)
      if (o.st[i] == TARN__XOBS_UNKNOWN)
        rc = add(r, "express-unreachable", s, key, b.b[i].uri,
                 "express %s/%llu: slot %llu: bucket %zu could not be read: %s", star, ep,
                 (unsigned long long)s, i, tarn_errmsg());
    if (rc == 0 && s == e->cut && o.unknown == 0 && o.poison < blocking)
      rc = add(r, "express-cut", s, key, NULL,
               "express %s/%llu: the published cut %llu holds %u poison, fewer than the %u of "
               "the blocking set: it is not dead",
               star, ep, (unsigned long long)s, o.poison, blocking);
    int reclaimed = s < e->checkpoint && o.empty == b.k;
    if (rc == 0 && s < e->cut && o.unknown == 0 && o.flight < b.w && !reclaimed)
      rc =
          add(r, "express-hole", s, key, NULL,
              "express %s/%llu: slot %llu below the published cut %llu holds %u flight and %u "
              "poison copies (W = %u): a hole below the cut",
              star, ep, (unsigned long long)s, (unsigned long long)e->cut, o.flight, o.poison, b.w);
    tarn__xobs_free(&o);
  }
  tarn__xbuckets_free(&b);
  return rc;
}

/* Every slot below the checkpoint was absorbed by some run, and every run
 * indexed entries of some log: the ranges' slot spans cover [0, checkpoint).
 * A slot outside them was passed without being indexed (a checkpoint raised
 * past slots never absorbed: a hole). Epochs without ranges (absorbed before
 * ranges were recorded, or nothing absorbed yet) are not judged. */
static int range_slot_cmp(const void *a, const void *b) {
  const tarn__xrange *x = a, *y = b;
  return x->slot_from < y->slot_from ? -1 : x->slot_from > y->slot_from;
}

static int check_absorbed_slots(const tarn__xepoch *e, tarn_fsck_report *r) {
  if (e->n_absorbed == 0)
    return 0;
  tarn__xrange *v = malloc(e->n_absorbed * sizeof *v);
  if (!v)
    return tarn__err(TARN_ENOMEM, "express fsck: out of memory");
  memcpy(v, e->absorbed, e->n_absorbed * sizeof *v);
  qsort(v, e->n_absorbed, sizeof *v, range_slot_cmp);
  int rc = 0;
  uint64_t reach = 0;
  char key[TARN__X_SLOT_KEY_MAX + 1];
  for (size_t i = 0; rc == 0 && i <= e->n_absorbed; i++) {
    uint64_t from = i < e->n_absorbed ? v[i].slot_from : e->checkpoint;
    if (from > reach && reach < e->checkpoint) {
      uint64_t to = from < e->checkpoint ? from : e->checkpoint;
      if ((rc = tarn__xslot_key(key, sizeof key, e->star, e->epoch, reach)) == 0)
        rc = add(r, "express-index-gap", reach, key, NULL,
                 "express %s/%llu: slots [%llu, %llu) are below the checkpoint %llu, but no "
                 "absorbed range holds them: passed without being indexed",
                 e->star, (unsigned long long)e->epoch, (unsigned long long)reach,
                 (unsigned long long)to, (unsigned long long)e->checkpoint);
    }
    if (i < e->n_absorbed && v[i].slot_to > reach)
      reach = v[i].slot_to;
  }
  free(v);
  return rc;
}

/* express-unsettled (issue 30 item 5): a fenced epoch whose checkpoint is
 * below its cut holds committed, acknowledged slots that no reader finds
 * until it is settled. A star with a live process is passed over: a writer
 * that rolled absorbs its own fenced epoch from memory right after the roll
 * (a moment, not a fault); a dead one's waits for `tarn express settle` or
 * a takeover. */
static int check_unsettled(tarn_meta *m, const tarn__xepoch *e, tarn_fsck_report *r) {
  if (!e->has_cut || e->checkpoint >= e->cut)
    return 0;
  int alive = 0;
  int rc = tarn__xalive_get(m, e->star, &alive);
  if (rc || alive)
    return rc;
  char key[TARN__X_SLOT_KEY_MAX + 1];
  if ((rc = tarn__xslot_key(key, sizeof key, e->star, e->epoch, e->checkpoint)))
    return rc;
  return add(r, "express-unsettled", e->checkpoint, key, NULL,
             "express %s/%llu: fenced at cut %llu with the checkpoint at %llu: slots [%llu, "
             "%llu) are acknowledged and not in the index (no process of the star lives): run "
             "`tarn express settle --star %s`",
             e->star, (unsigned long long)e->epoch, (unsigned long long)e->cut,
             (unsigned long long)e->checkpoint, (unsigned long long)e->checkpoint,
             (unsigned long long)e->cut, e->star);
}

static int epoch_checks(tarn_meta *m, const tarn__xepoch *e, tarn_fsck_report *r) {
  int rc = check_epoch(m, e, r);
  if (!rc)
    rc = check_unsettled(m, e, r);
  return rc ? rc : check_absorbed_slots(e, r);
}

/* ---- absorbed ranges against the index ------------------------------------ */

/* A range of offsets claimed by an epoch: absorbed, or an absorb's pending
 * intent (its put may have landed). */
typedef struct claim {
  tarn__xrange x;
  uint64_t epoch;
  int pending;
} claim;

typedef struct claims {
  claim *v;
  size_t n;
} claims;

static int claim_add(claims *c, const tarn__xrange *x, uint64_t epoch, int pending) {
  claim *v = realloc(c->v, (c->n + 1) * sizeof *v);
  if (!v)
    return tarn__err(TARN_ENOMEM, "express fsck: out of memory");
  c->v = v;
  v[c->n++] = (claim){*x, epoch, pending};
  return 0;
}

static int claim_cmp(const void *a, const void *b) {
  const claim *x = a, *y = b;
  if (x->x.log_id != y->x.log_id)
    return x->x.log_id < y->x.log_id ? -1 : 1;
  if (x->x.start != y->x.start)
    return x->x.start < y->x.start ? -1 : 1;
  return x->pending - y->pending;
}

/* Every epoch's absorbed ranges and pending intents, sorted by log, then start;
 * with fn (may be NULL) called on each epoch record first. */
static int load_claims(tarn_meta *m, const char *star, claims *out,
                       int (*fn)(tarn_meta *, const tarn__xepoch *, tarn_fsck_report *),
                       tarn_fsck_report *r) {
  memset(out, 0, sizeof *out);
  uint64_t head = 0;
  int rc = tarn__xchain_head(m, star, TARN__X_CLASS_EXPRESS, &head);
  for (uint64_t ep = 1; rc == 0 && ep <= head; ep++) {
    tarn__xepoch e;
    memset(&e, 0, sizeof e);
    rc = tarn__xepoch_load(m, star, TARN__X_CLASS_EXPRESS, ep, &e);
    if (rc == TARN_ENOTFOUND) { /* a burned number: no record, nothing leaked */
      tarn_errclear();
      rc = 0;
      continue;
    }
    if (rc == 0 && fn)
      rc = fn(m, &e, r);
    for (size_t i = 0; rc == 0 && i < e.n_absorbed; i++)
      rc = claim_add(out, &e.absorbed[i], ep, 0);
    for (size_t i = 0; rc == 0 && i < e.n_absorbing; i++) {
      const tarn__xintent *x = &e.absorbing[i];
      tarn__xrange q = {x->log_id, x->start,     x->cum0,       x->end,
                        x->cum1,   e.checkpoint, e.absorbing_to};
      rc = claim_add(out, &q, ep, 1);
    }
    tarn__xepoch_free(&e);
  }
  if (rc == 0 && out->n)
    qsort(out->v, out->n, sizeof *out->v, claim_cmp);
  if (rc) {
    free(out->v);
    memset(out, 0, sizeof *out);
  }
  return rc;
}

/* One index record of the log, as fsck needs it. */
typedef struct irec {
  uint64_t start, end, cum;
  int parquet;
  char key[TARN_KEY_LEN + 1];
} irec;

typedef struct irecs {
  irec *v;
  size_t n;
} irecs;

static int collect(void *ctx, const tarn__ixrec *x) {
  irecs *c = ctx;
  irec *v = realloc(c->v, (c->n + 1) * sizeof *v);
  if (!v)
    return tarn__err(TARN_ENOMEM, "express fsck: out of memory");
  c->v = v;
  irec *q = &v[c->n++];
  *q = (irec){
      x->start, x->key.end_offset, x->key.cumulative_size, x->file_type == TARN_FILE_PARQUET, {0}};
  snprintf(q->key, sizeof q->key, "%s", x->rec->key);
  return 0;
}

static int add_log(tarn_fsck_report *r, uint64_t log_id, int rc) {
  if (rc == 0)
    r->faults[r->n_faults - 1].log_id = log_id;
  return rc;
}

/* One bound b of an absorbed range, with the cumulative size it must have:
 * 0 when the index agrees (or compaction merged across it), else a fault. */
static int check_bound(tarn_fsck_report *r, const char *star, const claim *c, const irecs *ix,
                       uint64_t b, uint64_t cum, const char *which) {
  for (size_t i = 0; i < ix->n; i++) {
    const irec *q = &ix->v[i];
    if (q->end == b && q->cum == cum)
      return 0;
    if (q->end == b || (q->start < b && b < q->end && !q->parquet))
      return add_log(r, c->x.log_id,
                     add(r, "express-index-missing", b, q->key, NULL,
                         "express %s/%llu: log %llu: slots [%llu, %llu) were absorbed at offsets "
                         "[%llu, %llu) (cumulative %llu..%llu), but its %s %llu (cumulative "
                         "%llu) is not a record bound of the index: record [%llu, %llu) ends "
                         "at cumulative %llu",
                         star, (unsigned long long)c->epoch, (unsigned long long)c->x.log_id,
                         (unsigned long long)c->x.slot_from, (unsigned long long)c->x.slot_to,
                         (unsigned long long)c->x.start, (unsigned long long)c->x.end,
                         (unsigned long long)c->x.cum0, (unsigned long long)c->x.cum1, which,
                         (unsigned long long)b, (unsigned long long)cum,
                         (unsigned long long)q->start, (unsigned long long)q->end,
                         (unsigned long long)q->cum));
    if (q->start < b && b < q->end)
      return 0; /* inside a PARQUET record: compaction merged the runs */
  }
  return 0;
}

/* A log's index against the claims on it (c1: read before the index, for
 * what must be there; c2: read after, for what may be). */
static int check_log(tarn_meta *m, const char *star, uint64_t log_id, const claim *c1, size_t n1,
                     const claim *c2, size_t n2, const irecs *ix, tarn_fsck_report *r) {
  uint64_t first = ix->n ? ix->v[0].start : 0, iend = ix->n ? ix->v[ix->n - 1].end : 0, trim;
  /* records ending at or below the trim marker B may be gone (trim) */
  int rc = tarn_trim_marker_read(m, log_id, &trim, NULL);
  if (rc)
    return rc;
  if (trim > first)
    first = trim;
  const claim *prev = NULL;
  for (size_t i = 0; rc == 0 && i < n1; i++) {
    const claim *c = &c1[i];
    if (c->pending)
      continue;
    if (prev && c->x.start < prev->x.end)
      rc = add_log(r, log_id,
                   add(r, "express-index-overlap", c->x.start, NULL, NULL,
                       "express %s: log %llu: offsets [%llu, %llu) absorbed by epoch %llu "
                       "(slots [%llu, %llu)) overlap [%llu, %llu) absorbed by epoch %llu "
                       "(slots [%llu, %llu)): absorbed twice",
                       star, (unsigned long long)log_id, (unsigned long long)c->x.start,
                       (unsigned long long)c->x.end, (unsigned long long)c->epoch,
                       (unsigned long long)c->x.slot_from, (unsigned long long)c->x.slot_to,
                       (unsigned long long)prev->x.start, (unsigned long long)prev->x.end,
                       (unsigned long long)prev->epoch, (unsigned long long)prev->x.slot_from,
                       (unsigned long long)prev->x.slot_to));
    if (!prev || c->x.end > prev->x.end)
      prev = c;
    if (rc || c->x.end <= first)
      continue; /* trimmed away */
    if (c->x.end > iend)
      rc = add_log(r, log_id,
                   add(r, "express-index-missing", c->x.start, NULL, NULL,
                       "express %s/%llu: log %llu: slots [%llu, %llu) were absorbed at offsets "
                       "[%llu, %llu), but the index ends at %llu",
                       star, (unsigned long long)c->epoch, (unsigned long long)log_id,
                       (unsigned long long)c->x.slot_from, (unsigned long long)c->x.slot_to,
                       (unsigned long long)c->x.start, (unsigned long long)c->x.end,
                       (unsigned long long)iend));
    else {
      /* below the first record the index was trimmed: no bound to compare */
      if (c->x.start > first)
        rc = check_bound(r, star, c, ix, c->x.start, c->x.cum0, "start");
      if (rc == 0)
        rc = check_bound(r, star, c, ix, c->x.end, c->x.cum1, "end");
    }
  }
  if (rc || n2 == 0)
    return rc;
  /* the span the star answers for */
  uint64_t lo = c2[0].x.start, hi = 0;
  for (size_t i = 0; i < n2; i++)
    hi = c2[i].x.end > hi ? c2[i].x.end : hi;
  char writer[TARN__X_STAR_MAX + 1];
  int wrc = tarn__xlog_star_get(m, log_id, writer, sizeof writer);
  if (wrc == 0 && !strcmp(writer, star) && iend > hi)
    hi = iend;
  else if (wrc && wrc != TARN_ENOTFOUND)
    return wrc;
  tarn_errclear();
  for (size_t i = 0; rc == 0 && i < ix->n; i++) {
    const irec *q = &ix->v[i];
    uint64_t a = q->start > lo ? q->start : lo, b = q->end < hi ? q->end : hi;
    if (a >= b)
      continue;
    /* covered when the claims, merged in start order, reach b from a */
    uint64_t reach = a;
    for (size_t j = 0; j < n2 && reach < b; j++)
      if (c2[j].x.start <= reach && c2[j].x.end > reach)
        reach = c2[j].x.end;
    if (reach >= b)
      continue;
    /* the claim it follows: the slots most likely indexed again */
    const claim *after = NULL;
    for (size_t j = 0; j < n2; j++)
      if (c2[j].x.end <= reach && (!after || c2[j].x.end > after->x.end))
        after = &c2[j];
    char prev_run[160] = "";
    if (after)
      snprintf(prev_run, sizeof prev_run,
               " (after offsets [%llu, %llu) of epoch %llu slots "
               "[%llu, %llu))",
               (unsigned long long)after->x.start, (unsigned long long)after->x.end,
               (unsigned long long)after->epoch, (unsigned long long)after->x.slot_from,
               (unsigned long long)after->x.slot_to);
    rc = add_log(r, log_id,
                 add(r, "express-index-double", reach, q->key, NULL,
                     "express %s: log %llu: index record [%llu, %llu) holds offsets from %llu "
                     "that no absorbed slot of the star claims%s: a slot indexed twice, or "
                     "another writer",
                     star, (unsigned long long)log_id, (unsigned long long)q->start,
                     (unsigned long long)q->end, (unsigned long long)reach, prev_run));
  }
  return rc;
}

/* express-index-order (issue 30 item 3): one star's entries of a log run on
 * from epoch to epoch (a roll carries the count over, a restart's gate
 * settles the older epochs first), so a range of a newer epoch indexed below
 * a range of an older one of the same log was placed at offsets other than
 * the ones acknowledged (settlement newest first did that). c is sorted by
 * log, then start. */
static int check_order(const char *star, const claims *c, tarn_fsck_report *r) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < c->n; i++)
    for (size_t j = i + 1; rc == 0 && j < c->n && c->v[j].x.log_id == c->v[i].x.log_id; j++) {
      const claim *lo = &c->v[i], *hi = &c->v[j]; /* lo starts first */
      if (lo->epoch <= hi->epoch || lo->pending || hi->pending)
        continue;
      rc = add(r, "express-index-order", lo->x.start, NULL, NULL,
               "express %s: log %llu: epoch %llu's entries are indexed at [%llu, %llu), below "
               "epoch %llu's at [%llu, %llu): a star's epochs follow one another, so entries "
               "sit at offsets other than the ones acknowledged",
               star, (unsigned long long)lo->x.log_id, (unsigned long long)lo->epoch,
               (unsigned long long)lo->x.start, (unsigned long long)lo->x.end,
               (unsigned long long)hi->epoch, (unsigned long long)hi->x.start,
               (unsigned long long)hi->x.end);
    }
  return rc;
}

static int check_index(tarn_meta *m, const char *star, const claims *c1, tarn_fsck_report *r) {
  int rc = 0;
  size_t nlogs = 0;
  uint64_t *logs = calloc(c1->n ? c1->n : 1, sizeof *logs);
  irecs *ix = calloc(c1->n ? c1->n : 1, sizeof *ix);
  if (!logs || !ix)
    rc = tarn__err(TARN_ENOMEM, "express fsck: out of memory");
  for (size_t i = 0; rc == 0 && i < c1->n; i++)
    if (nlogs == 0 || logs[nlogs - 1] != c1->v[i].x.log_id)
      logs[nlogs++] = c1->v[i].x.log_id;
  for (size_t l = 0; rc == 0 && l < nlogs; l++)
    rc = tarn__index_scan(m, logs[l], NULL, NULL, collect, &ix[l]);
  claims c2 = {0};
  if (rc == 0)
    rc = load_claims(m, star, &c2, NULL, NULL);
  size_t i1 = 0, i2 = 0;
  for (size_t l = 0; rc == 0 && l < nlogs; l++) {
    size_t a1 = i1, a2;
    while (i1 < c1->n && c1->v[i1].x.log_id == logs[l])
      i1++;
    while (i2 < c2.n && c2.v[i2].x.log_id < logs[l])
      i2++;
    a2 = i2;
    while (i2 < c2.n && c2.v[i2].x.log_id == logs[l])
      i2++;
    rc = check_log(m, star, logs[l], &c1->v[a1], i1 - a1, &c2.v[a2], i2 - a2, &ix[l], r);
  }
  for (size_t l = 0; ix && l < nlogs; l++)
    free(ix[l].v);
  free(ix);
  free(logs);
  free(c2.v);
  return rc;
}

int tarn_express_fsck(tarn_meta *m, const char *star, tarn_fsck_report *r) {
  claims c1;
  int rc = load_claims(m, star, &c1, epoch_checks, r);
  if (rc == 0)
    rc = check_order(star, &c1, r);
  if (rc == 0)
    rc = check_index(m, star, &c1, r);
  free(c1.v);
  return rc;
}

int tarn_express_fsck_all(tarn_meta *m, tarn_fsck_report *r) {
  /* the stars are those recorded as writers of express logs (tarn-xlog) */
  char **stars = NULL;
  size_t n = 0;
  int rc = 0;
  char cur[64] = "/";
  int flags = 0;
  for (;;) {
    tarn_meta_recs rs = {0};
    if ((rc = tarn_meta_scan(m, TARN__X_LOGSTAR_PARTITION, cur, "0", flags, 512, &rs)))
      break;
    for (size_t i = 0; rc == 0 && i < rs.n; i++) {
      char s[TARN__X_STAR_MAX + 1];
      snprintf(s, sizeof s, "%.*s", (int)rs.v[i].value_len, (const char *)rs.v[i].value);
      size_t j = 0;
      while (j < n && strcmp(stars[j], s))
        j++;
      if (j < n || tarn__xstar_check(s))
        continue;
      char **v = realloc(stars, (n + 1) * sizeof *v);
      if (!v || !(v[n] = strdup(s))) {
        if (v)
          stars = v;
        rc = tarn__err(TARN_ENOMEM, "express fsck: out of memory");
        break;
      }
      stars = v;
      n++;
    }
    int more = rs.more && rs.n > 0;
    if (rs.n > 0)
      snprintf(cur, sizeof cur, "%s", rs.v[rs.n - 1].key);
    tarn_meta_recs_free(&rs);
    if (rc || !more)
      break;
    flags = TARN_META_AFTER;
  }
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = tarn_express_fsck(m, stars[i], r);
  for (size_t i = 0; i < n; i++)
    free(stars[i]);
  free(stars);
  return rc;
}
