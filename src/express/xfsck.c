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
 *     incomplete for that slot). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "express/xfence.h"
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
      rc = add(r, "express-hole", s, key, NULL,
               "express %s/%llu: slot %llu below the published cut %llu holds %u flight and %u "
               "poison copies (W = %u): a hole below the cut",
               star, ep, (unsigned long long)s, (unsigned long long)e->cut, o.flight, o.poison,
               b.w);
    tarn__xobs_free(&o);
  }
  tarn__xbuckets_free(&b);
  return rc;
}

int tarn_express_fsck(tarn_meta *m, const char *star, tarn_fsck_report *r) {
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
    if (rc == 0)
      rc = check_epoch(m, &e, r);
    tarn__xepoch_free(&e);
  }
  return rc;
}
