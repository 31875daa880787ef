/* The checker: the protocol's properties, stated for format v3 (0-based
 * offsets, exclusive end keys), tested against the stores and the record of
 * what every actor was told (docs/simulation.md lists each with its source). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "tarn/reclaim.h"
#include "tarn/compactor.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/trim.h"

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static int chance_of(sim *s, unsigned per_mille) { return sim_below(s, 1000) < per_mille; }

static uint64_t fnv(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3u;
  }
  return h;
}

/* The span of the last check ending at end, or NULL. */
static const sim_span *old_span(const sim_log *lg, uint64_t end) {
  size_t lo = 0, hi = lg->nspans;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (lg->spans[mid].end < end)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < lg->nspans && lg->spans[lo].end == end ? &lg->spans[lo] : NULL;
}

/* ---- ReclaimAfterGrace: WAL object names and when they were last named ---- */

static uint64_t name_hash(const char *name) { return fnv((const uint8_t *)name, strlen(name)); }

/* 1 + the entry of name in s->wn, 0 if absent (add: inserted then). */
static uint32_t wname(sim *s, const char *name, int add) {
  if (add && 2 * (s->nwn + 1) > s->wnhcap) { /* grow: rehash every entry */
    size_t cap = s->wnhcap ? 2 * s->wnhcap : 1024;
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h)
      abort();
    for (size_t i = 0; i < s->nwn; i++) {
      size_t j = name_hash(s->wn[i].name) & (cap - 1);
      while (h[j])
        j = (j + 1) & (cap - 1);
      h[j] = (uint32_t)i + 1;
    }
    free(s->wnhash);
    s->wnhash = h;
    s->wnhcap = cap;
  }
  if (!s->wnhcap)
    return 0;
  size_t j = name_hash(name) & (s->wnhcap - 1);
  for (; s->wnhash[j]; j = (j + 1) & (s->wnhcap - 1))
    if (!strcmp(s->wn[s->wnhash[j] - 1].name, name))
      return s->wnhash[j];
  if (!add)
    return 0;
  if (s->nwn == s->capwn) {
    s->capwn = s->capwn ? 2 * s->capwn : 1024;
    if (!(s->wn = realloc(s->wn, s->capwn * sizeof *s->wn)))
      abort();
  }
  if (!(s->wn[s->nwn].name = strdup(name)))
    abort();
  s->wn[s->nwn].last_named = 0;
  s->wnhash[j] = (uint32_t)++s->nwn;
  return s->wnhash[j];
}

void sim_wnames_free(sim *s) {
  for (size_t i = 0; i < s->nwn; i++)
    free(s->wn[i].name);
  free(s->wn);
  free(s->wnhash);
  free(s->skewlog);
  s->wn = NULL;
  s->wnhash = NULL;
  s->skewlog = NULL;
  s->nwn = s->capwn = s->wnhcap = s->nskewlog = s->capskewlog = 0;
}

void sim_store_skew_set(sim *s, int64_t skew) {
  s->store_skew = skew;
  if (s->nskewlog == s->capskewlog) {
    s->capskewlog = s->capskewlog ? 2 * s->capskewlog : 64;
    if (!(s->skewlog = realloc(s->skewlog, s->capskewlog * sizeof *s->skewlog)))
      abort();
  }
  s->skewlog[s->nskewlog].at = s->now;
  s->skewlog[s->nskewlog++].skew = skew;
}

/* The least skew the store's clock had at any moment from true time t on. */
static int64_t least_store_skew_since(const sim *s, int64_t t) {
  int64_t least = s->store_skew;
  for (size_t i = s->nskewlog; i-- > 0;) {
    if (s->skewlog[i].skew < least)
      least = s->skewlog[i].skew;
    if (s->skewlog[i].at <= t) /* the setting in effect at t: none before counts */
      break;
  }
  return least;
}

/* After a successful reclamation pass: every WAL object a RAW record names
 * now was seen named by that pass (nothing but the reclaimer writes during a
 * pass, and it only removes records), so the pass forgot its first-seen
 * stamp. The pass's end, in true time, is the object's reference. */
void sim_check_reclaim_passed(sim *s) {
  for (int l = 0; l < SIM_NLOGS; l++) {
    char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], z[TARN_KEY_LEN + 1];
    uint64_t id = s->logs[l].id;
    tarn_key_partition(part, id);
    tarn_key_format(a, id, 0, 0);
    tarn_key_format(z, id, TARN_KEY_MAX, TARN_KEY_MAX);
    tarn_meta_recs r = {0};
    if (tarn_meta_scan(s->cmeta, part, a, z, 0, 0, &r)) {
      sim_fail(s, P_NoReaderError, "scanning log %" PRIu64 ": %s", id, tarn_errmsg());
      return;
    }
    for (size_t i = 0; i < r.n; i++) {
      tarn_entry_index ei;
      if (tarn_entry_index_decode(r.v[i].value, r.v[i].value_len, &ei))
        continue; /* NoReaderError's to report */
      if (ei.file_type != TARN_FILE_PARQUET && ei.location) {
        uint32_t w = wname(s, ei.location, 1); /* may move s->wn: index after */
        s->wn[w - 1].last_named = s->now;
      }
      tarn_entry_index_free(&ei);
    }
    tarn_meta_recs_free(&r);
  }
}

/* The time a first-seen stamp of WAL object name holds (reclaim.c's record
 * "w-" + the name in hex, TARN_RECLAIM_PARTITION; value "{ms}" or "{ms}
 * confirmed", store clock): 1 and *ms if there is one. */
static int wal_stamp(sim *s, const char *name, int64_t *ms) {
  size_t n = strlen(name);
  char *k = malloc(2 * n + 3);
  if (!k)
    abort();
  k[0] = 'w';
  k[1] = '-';
  for (size_t i = 0; i < n; i++)
    snprintf(k + 2 + 2 * i, 3, "%02x", (unsigned char)name[i]);
  tarn_meta_rec r = {0};
  int got = tarn_meta_get(s->cmeta, TARN_RECLAIM_PARTITION, k, &r) == 0;
  free(k);
  int64_t t = 0;
  size_t i = 0;
  for (; got && i < r.value_len && r.value[i] >= '0' && r.value[i] <= '9' && i < 18; i++)
    t = t * 10 + (r.value[i] - '0');
  got = got && i > 0;
  tarn_meta_rec_free(&r);
  *ms = t;
  return got;
}

/* LS-086: the reclaimer deletes a WAL object only a grace after a pass
 * confirmed it unreferenced, and a pass that sees it named forgets its
 * first-seen stamp, so no deletion comes sooner than the grace after the last
 * successful pass that saw a record name it (sim_check_reclaim_passed). (A
 * pass that failed may not have forgotten it; a record named and retired
 * between two passes was never seen by the reclaimer and counts from the
 * last pass before.) The grace is on the store's clock, whose readings may
 * step back: a confirmation read at true time c >= that pass's end t reads
 * at least t + the least skew the store had since t, so the deletion's
 * reading must be at least the grace above that — exact, with no allowance.
 * And for the same reason the stamp the deletion counts from (still there:
 * the reclaimer forgets it after the delete) must hold a time no earlier
 * than that: a stamp whose create was held in flight and landed after the
 * forgetting pass holds an older time, which says nothing (issue 12,
 * reclaim-trusts-late-stamp) — seen here whenever it is used, not only when
 * the deletion falls in the few seconds it shortens the grace by. */
void sim_check_wal_delete(sim *s, const char *name) {
  uint32_t i = wname(s, name, 0);
  SIM_CHECKED(s, P_ReclaimAfterGrace);
  if (!i)
    return; /* never seen named by a pass: an orphan (its grace is NoDanglingIndex's) */
  int64_t last = s->wn[i - 1].last_named, least = least_store_skew_since(s, last);
  int64_t now = s->now + s->store_skew, from = last + least, stamp;
  if (now - from < SIM_WAL_GRACE_MS)
    sim_fail(s, P_ReclaimAfterGrace,
             "WAL object %s deleted at %" PRId64 " ms (store clock), %" PRId64
             " ms after the last successful pass that saw a record name it (at %" PRId64
             " ms on the store's clock at its least since): less than the %d ms grace (LS-086)",
             name, now, now - from, from, SIM_WAL_GRACE_MS);
  else if (wal_stamp(s, name, &stamp) && stamp < from)
    sim_fail(s, P_ReclaimAfterGrace,
             "WAL object %s deleted on a first-seen stamp of %" PRId64 " ms (store clock), %" PRId64
             " ms before the last successful pass that saw a record"
             " name it (at %" PRId64 " ms): that pass forgot every earlier stamp (LS-086)",
             name, stamp, from - stamp, from);
}

/* Reads a record new to the checker (or changed since): its span and kind;
 * a RAW record's object must exist. */
static int read_record(sim *s, sim_log *lg, const char *part, const char *key, sim_span *sp) {
  tarn_meta_rec rec = {0};
  int rc = tarn_meta_get(s->cmeta, part, key, &rec);
  uint64_t end = 0;
  if (!rc)
    rc = tarn_index_record_span(&rec, lg->id, &sp->start, &end);
  if (rc) {
    sim_fail(s, P_NoReaderError, "index record %s of log %" PRIu64 ": %s", key, lg->id,
             tarn_errmsg());
    tarn_meta_rec_free(&rec);
    return -1;
  }
  sp->version = rec.stat.version;
  sp->vhash = fnv(rec.value, rec.value_len);
  tarn_entry_index ei;
  if (tarn_entry_index_decode(rec.value, rec.value_len, &ei) == 0) {
    sp->parquet = ei.file_type == TARN_FILE_PARQUET;
    tarn_entry_index_free(&ei);
  }
  tarn_meta_rec_free(&rec);
  return 0;
}

/* No object deleted while a record names it (checked again after every
 * reclaimer pass). */
static int check_object(sim *s, sim_log *lg, const char *part, const char *key, sim_span *sp) {
  if (sp->parquet || sp->epoch == s->reclaim_epoch + 1)
    return 0;
  tarn_meta_rec rec = {0};
  tarn_entry_index ei;
  int rc = tarn_meta_get(s->cmeta, part, key, &rec);
  if (!rc && tarn_entry_index_decode(rec.value, rec.value_len, &ei) == 0) {
    uint64_t size;
    SIM_CHECKED(s, P_NoDanglingIndex);
    if (ei.location && tarn_objstore_head(s->cwal, ei.location, &size) != 0)
      sim_fail(s, P_NoDanglingIndex,
               "index record %s of log %" PRIu64 " names WAL object %s, which does not exist", key,
               lg->id, ei.location);
    tarn_entry_index_free(&ei);
  }
  tarn_meta_rec_free(&rec);
  sp->epoch = s->reclaim_epoch + 1;
  return s->failed ? -1 : 0;
}

/* S6: the compaction cursor (tarn's progress record, C5: the first
 * uncompacted offset) never passes the log's greatest end offset and never
 * goes back. */
static void check_cursor(sim *s, sim_log *lg) {
  uint64_t e = 0;
  int rc = tarn_compact_progress_read(s->cmeta, lg->id, &e);
  SIM_CHECKED(s, P_CursorConsistency);
  if (rc)
    sim_fail(s, P_NoReaderError, "progress record of log %" PRIu64 ": %s", lg->id, tarn_errmsg());
  else if (e > lg->max_end)
    sim_fail(s, P_CursorConsistency,
             "log %" PRIu64 ": the compaction cursor is %" PRIu64
             " but the greatest end offset is %" PRIu64,
             lg->id, e, lg->max_end);
  else if (e < lg->cursor)
    sim_fail(s, P_CursorConsistency,
             "log %" PRIu64 ": the compaction cursor went back from %" PRIu64 " to %" PRIu64,
             lg->id, lg->cursor, e);
  else
    lg->cursor = e;
}

/* S5 as 004 states it (NoPhantomEntries: in UPDATING_CURSOR or DONE,
 * [CurRangeStart, CurRangeEnd - 1] is EMPTY), in v3's terms: once C5 of a
 * compaction of [s, e) took effect (the cursor is at or past e; C5 follows
 * C4), no index record ends in (s, e) — the records C3's PARQUET record
 * K(L, e, c_e) superseded were removed by C4 (LS-071). Before C5 the C3-C4
 * window may hold them (NoOverlappingRanges allows it); after, never. A
 * record ending at or below B (soft trim) is outside the log's readable
 * offsets, as in 004's model there is none. */
static void check_superseded_gone(sim *s, sim_log *lg) {
  for (size_t j = 1; j < lg->nspans && !s->failed; j++) {
    const sim_span *p = &lg->spans[j];
    if (!p->parquet || p->end > lg->cursor)
      continue;
    SIM_CHECKED(s, P_NoPhantomEntries);
    /* (a record ending at or below B is trimmed away already: a range
     * wholly below B is passed over by later plans, whose C5 then moves the
     * cursor past it while its C3-C4 window, if any, is still open —
     * tarn-sim --seed 7 --steps 639 before this exception) */
    if (lg->spans[j - 1].end > p->start && lg->spans[j - 1].end > lg->b)
      sim_fail(s, P_NoPhantomEntries,
               "log %" PRIu64 ": the compaction of [%" PRIu64 ", %" PRIu64
               ") is past C5 (cursor %" PRIu64 "), but the record ending at %" PRIu64
               " that its C3 superseded is still there (C4 did not remove it)",
               lg->id, p->start, p->end, lg->cursor, lg->spans[j - 1].end);
  }
}

static void check_log_records(sim *s, sim_log *lg) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], z[TARN_KEY_LEN + 1];
  char fence[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, lg->id);
  tarn_key_fence(fence, lg->id);
  tarn_meta_rec f = {0};
  lg->fenced = tarn_meta_get(s->cmeta, part, fence, &f) == 0;
  tarn_meta_rec_free(&f);

  uint64_t b = 0;
  int64_t ver = -1;
  if (tarn_trim_marker_read(s->cmeta, lg->id, &b, &ver)) {
    sim_fail(s, P_NoReaderError, "trim marker of log %" PRIu64 ": %s", lg->id, tarn_errmsg());
    return;
  }
  SIM_CHECKED(s, P_TrimMarkerMonotonic);
  SIM_CHECKED(s, P_SoftTrimStored);
  if (b < lg->b)
    sim_fail(s, P_TrimMarkerMonotonic,
             "log %" PRIu64 ": the trim marker went back from %" PRIu64 " to %" PRIu64, lg->id,
             lg->b, b);
  if (lg->soft_reported > b)
    sim_fail(s, P_SoftTrimStored,
             "log %" PRIu64 ": soft trim reported %" PRIu64
             " stored, but the marker holds %" PRIu64,
             lg->id, lg->soft_reported, b);
  if (b > lg->b)
    lg->b = b;

  tarn_key_format(a, lg->id, 0, 0);
  tarn_key_format(z, lg->id, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_recs keys = {0};
  if (tarn_meta_list(s->cmeta, part, a, z, 0, 0, &keys)) {
    sim_fail(s, P_NoReaderError, "listing log %" PRIu64 ": %s", lg->id, tarn_errmsg());
    return;
  }
  if (lg->delete_done) {
    SIM_CHECKED(s, P_DeletedLogStaysEmpty);
    /* (a lease record may appear: an acquire that found the fence and failed
     * to delete its record leaves it to its session; no lease is granted,
     * which sim_world.c checks where leases are acquired) */
    if (keys.n)
      sim_fail(s, P_DeletedLogStaysEmpty,
               "log %" PRIu64 " was deleted (leases drained) but has "
               "%zu index records",
               lg->id, keys.n);
    tarn_meta_recs_free(&keys);
    return;
  }
  /* S9: a PARQUET record above B stays (only hard trim and deletion remove
   * records); checked before the records' order, which its loss also breaks */
  for (size_t j = 0, q = 0; j < lg->nspans && !s->failed && !lg->fenced; j++) {
    const sim_span *o = &lg->spans[j];
    tarn_key k;
    while (q < keys.n &&
           (tarn_key_parse(keys.v[q].key, strlen(keys.v[q].key), &k) || k.end_offset < o->end))
      q++;
    if (!o->parquet || o->end <= b)
      continue;
    SIM_CHECKED(s, P_SequentialCompactionSafety);
    if (q == keys.n || k.end_offset != o->end)
      sim_fail(s, P_SequentialCompactionSafety,
               "log %" PRIu64 ": the PARQUET record ending at %" PRIu64 " (above B = %" PRIu64
               ") was removed",
               lg->id, o->end, b);
  }
  int had_window = lg->spans_window;
  lg->spans_window = 0;
  sim_span *cur = calloc(keys.n ? keys.n : 1, sizeof *cur);
  if (!cur)
    abort();
  uint64_t prev_end = 0;
  size_t n = 0;
  for (size_t i = 0; i < keys.n && !s->failed; i++, n++) {
    tarn_key k;
    if (tarn_key_parse(keys.v[i].key, strlen(keys.v[i].key), &k)) {
      sim_fail(s, P_NoReaderError, "bad index key %s", keys.v[i].key);
      break;
    }
    sim_span *sp = &cur[i];
    const sim_span *old = old_span(lg, k.end_offset);
    if (old && old->version == keys.v[i].stat.version)
      *sp = *old;
    else {
      sp->end = k.end_offset;
      if (read_record(s, lg, part, keys.v[i].key, sp))
        break;
      SIM_CHECKED(s, P_SequentialCompactionSafety);
      /* LS-076: a compaction never replaces a PARQUET record another installed
       * (a repeated C3 puts the same value again) */
      if (old && old->parquet && old->vhash != sp->vhash)
        sim_fail(s, P_SequentialCompactionSafety,
                 "log %" PRIu64 ": the PARQUET record %s was "
                 "replaced by another value",
                 lg->id, keys.v[i].key);
    }
    if (check_object(s, lg, part, keys.v[i].key, sp))
      break;
    uint64_t start = sp->start;
    SIM_CHECKED(s, P_NoOverlappingRanges);
    if (i == 0) {
      if (start > 0 && (ver < 0 || start > b))
        sim_fail(s, P_NoOverlappingRanges,
                 "log %" PRIu64 ": the first record starts at %" PRIu64
                 " but the trim marker is %" PRIu64 ": offsets below it were lost",
                 lg->id, start, b);
    } else if (start > prev_end) {
      sim_fail(s, P_NoOverlappingRanges,
               "log %" PRIu64 ": offsets [%" PRIu64 ", %" PRIu64
               ") have no index record (next: %s)",
               lg->id, prev_end, start, keys.v[i].key);
    } else if (start < prev_end) {
      /* only the C3–C4 window: a PARQUET record over RAW records that lie
       * wholly inside its range, not yet retired */
      int ok = sp->parquet;
      for (size_t j = i; ok && j-- > 0 && cur[j].end > start;)
        ok = !cur[j].parquet && cur[j].start >= start;
      if (ok && !had_window && !lg->spans_window)
        s->st.windows++;
      lg->spans_window = 1;
      if (!ok)
        sim_fail(s, P_NoOverlappingRanges,
                 "log %" PRIu64 ": record %s [%" PRIu64 ", %" PRIu64
                 ") overlaps the records before it (ending at %" PRIu64 ") outside a C3-C4 window",
                 lg->id, keys.v[i].key, start, k.end_offset, prev_end);
    }
    prev_end = k.end_offset;
  }
  free(lg->spans);
  lg->spans = cur;
  lg->nspans = n;
  if (!s->failed && !lg->fenced) {
    SIM_CHECKED(s, P_MonotonicOffsets);
    if (keys.n && prev_end < lg->max_end)
      sim_fail(s, P_MonotonicOffsets,
               "log %" PRIu64 ": the greatest end offset went back from %" PRIu64 " to %" PRIu64,
               lg->id, lg->max_end, prev_end);
    if (!keys.n && lg->max_end)
      sim_fail(s, P_MonotonicOffsets,
               "log %" PRIu64 ": every index record vanished (end was %" PRIu64 ")", lg->id,
               lg->max_end);
  }
  /* S3 from the fence (004: FENCED => no AssignOffset): no index record
   * ends past the end the log had when its fence took effect (noted by
   * sim_world.c's fence_note where the deleter acts; a fence first seen here
   * counts from the last check's end) */
  if (lg->fenced && !lg->fence_known) {
    lg->fence_known = 1;
    lg->fence_end = lg->max_end;
    sim_trace(s, "  log %" PRIu64 " fenced at end %" PRIu64 " (first seen by the checker)", lg->id,
              lg->max_end);
  }
  if (!s->failed && lg->fence_known) {
    SIM_CHECKED(s, P_FencedRejectsAppends);
    if (keys.n && prev_end > lg->fence_end)
      sim_fail(s, P_FencedRejectsAppends,
               "log %" PRIu64 ": an index record ends at %" PRIu64 ", past the end %" PRIu64
               " the log had when its fence took effect: offsets were assigned after the fence",
               lg->id, prev_end, lg->fence_end);
  }
  if (prev_end > lg->max_end)
    lg->max_end = prev_end;
  tarn_meta_recs_free(&keys);
  if (!s->failed && !lg->fenced)
    check_cursor(s, lg);
  if (!s->failed)
    check_superseded_gone(s, lg);
}

/* Compares an entry read back with what the simulation appended. */
static void check_read_entry(sim *s, const char *who, uint64_t log, const tarn_entry *ent) {
  if (ent->payload_len < 8) {
    sim_fail(s, P_NoPhantomEntries,
             "%s reader: log %" PRIu64 " offset %" PRIu64 ": a %zu-byte entry nobody appended", who,
             log, ent->offset, ent->payload_len);
    return;
  }
  uint64_t id = le64(ent->payload);
  if (id >= s->nents) {
    sim_fail(s, P_NoPhantomEntries,
             "%s reader: log %" PRIu64 " offset %" PRIu64 ": entry id %" PRIu64
             " was never appended",
             who, log, ent->offset, id);
    return;
  }
  sim_entry *e = &s->ents[id];
  SIM_CHECKED(s, P_NoPhantomEntries);
  SIM_CHECKED(s, P_AckMatchesRead);
  SIM_CHECKED(s, P_CompactionPreservesData);
  uint8_t want[4096];
  sim_payload(id, e->log, want, e->len);
  if (e->log != log || e->len != ent->payload_len || e->records != ent->record_count ||
      memcmp(want, ent->payload, e->len) != 0) {
    sim_fail(s, P_NoPhantomEntries,
             "%s reader: log %" PRIu64 " offset %" PRIu64 ": entry %" PRIu64
             " read with other bytes, size or record count than appended "
             "(log %" PRIu64 ", %u bytes, %u records)",
             who, log, ent->offset, id, e->log, e->len, e->records);
    return;
  }
  if (e->status == E_FAILED || e->status == E_PENDING) {
    sim_fail(s, P_NoPhantomEntries,
             "%s reader: entry %" PRIu64 " is readable at offset %" PRIu64 " but its append %s",
             who, id, ent->offset, e->status == E_FAILED ? "failed" : "has no outcome yet");
    return;
  }
  if (e->status == E_ACKED && (e->offset != ent->offset || e->ts != ent->timestamp_ms))
    sim_fail(s, P_AckMatchesRead,
             "%s reader: entry %" PRIu64 " acknowledged at offset %" PRIu64 " ts %" PRId64
             ", read at %" PRIu64 " ts %" PRId64,
             who, id, e->offset, e->ts, ent->offset, ent->timestamp_ms);
  if (e->seen && (e->seen_offset != ent->offset || e->seen_cum != ent->cumulative_size ||
                  e->seen_ts != ent->timestamp_ms))
    sim_fail(s, P_CompactionPreservesData,
             "%s reader: entry %" PRIu64 " was read at offset %" PRIu64 " cumulative %" PRIu64
             " ts %" PRId64 ", now at %" PRIu64 " cumulative %" PRIu64 " ts %" PRId64,
             who, id, e->seen_offset, e->seen_cum, e->seen_ts, ent->offset, ent->cumulative_size,
             ent->timestamp_ms);
  e->seen = 1;
  e->seen_offset = ent->offset;
  e->seen_cum = ent->cumulative_size;
  e->seen_ts = ent->timestamp_ms;
}

/* An acknowledged entry at or above B is readable where it was acknowledged.
 * Now and then a read-side fault strikes the read (a failed, throttled,
 * truncated or damaged GET, a failed metadata read): it may then fail, but
 * what it returns must still be the appended entry. */
static void read_at(sim *s, tarn_reader *r, const char *who, size_t id) {
  sim_entry *e = &s->ents[id];
  tarn_log_iter *it = NULL;
  tarn_entry ent;
  int armed = sim_arm_read_fault(s, chance_of(s, 500) ? s->cwal : s->ccmp, s->cmeta);
  int rc = tarn_log_iter_open(r, e->log, e->offset, &it);
  if (!rc)
    rc = tarn_log_iter_next(it, &ent, 0);
  if (armed) {
    sim_read_faults_clear(s, s->cmeta);
  }
  SIM_CHECKED(s, P_NoReaderError);
  if (rc && armed) {
    s->st.read_errors++;
    sim_trace(s, "  %s reader: entry %zu under a read fault -> %d", who, id, rc);
  } else if (rc)
    sim_fail(s, P_NoReaderError,
             "%s reader: acknowledged entry %zu (log %" PRIu64 " offset %" PRIu64 ", B %" PRIu64
             ") unreadable: %d %s",
             who, id, e->log, e->offset, s->logs[e->log - 1].b, rc, tarn_errmsg());
  else if (ent.offset != e->offset)
    sim_fail(s, P_NoReaderError,
             "%s reader: offset %" PRIu64 " of log %" PRIu64 " gave the entry at %" PRIu64
             ", not entry %zu",
             who, e->offset, e->log, ent.offset, id);
  else
    check_read_entry(s, who, e->log, &ent);
  tarn_log_iter_close(it);
}

static int readable_log(const sim_log *lg) { return !lg->delete_done && !lg->fenced; }

void sim_check_step(sim *s) {
  s->proc = PROC_CHECK;
  for (int k = 0; k < SIM_NLOGS && !s->failed; k++)
    check_log_records(s, &s->logs[k]);
  if (s->failed || !s->nents)
    return;
  /* a sampled acknowledged entry, by a fresh reader and by one with stale caches */
  for (int tries = 0; tries < 4; tries++) {
    size_t id = (size_t)sim_below(s, s->nents);
    sim_entry *e = &s->ents[id];
    const sim_log *lg = &s->logs[e->log - 1];
    if (e->status != E_ACKED || !readable_log(lg) || e->offset + e->records <= lg->b)
      continue;
    read_at(s, s->fresh, "fresh", id);
    if (!s->failed)
      read_at(s, s->stale, "stale", id);
    break;
  }
  /* R4: reading from 0 never returns an entry ending at or below B */
  sim_log *lg = &s->logs[sim_below(s, SIM_NLOGS)];
  tarn_log_iter *it = NULL;
  tarn_entry ent;
  if (s->failed || !readable_log(lg) || tarn_log_iter_open(s->fresh, lg->id, 0, &it))
    return;
  int rc = tarn_log_iter_next(it, &ent, 0);
  SIM_CHECKED(s, P_ReaderRespectsTrim);
  if (rc == 0 && ent.offset + ent.record_count <= lg->b)
    sim_fail(s, P_ReaderRespectsTrim,
             "log %" PRIu64 ": reading from 0 returned the entry [%" PRIu64 ", %" PRIu64
             ") although B = %" PRIu64,
             lg->id, ent.offset, ent.offset + ent.record_count, lg->b);
  else if (rc && rc != TARN_EEND)
    sim_fail(s, P_NoReaderError, "log %" PRIu64 ": reading from 0: %d %s", lg->id, rc,
             tarn_errmsg());
  tarn_log_iter_close(it);
}

void sim_check_full(sim *s) {
  s->proc = PROC_CHECK;
  s->pass++;
  for (int k = 0; k < SIM_NLOGS && !s->failed; k++) {
    sim_log *lg = &s->logs[k];
    if (!readable_log(lg))
      continue;
    tarn_log_iter *it = NULL;
    int rc = tarn_log_iter_open(s->fresh, lg->id, 0, &it);
    uint64_t prev_end = 0;
    int first = 1;
    tarn_entry ent;
    while (!rc && !s->failed && (rc = tarn_log_iter_next(it, &ent, 0)) == 0) {
      if (ent.offset + ent.record_count <= lg->b)
        sim_fail(s, P_ReaderRespectsTrim,
                 "log %" PRIu64 ": entry [%" PRIu64 ", %" PRIu64 ") returned although B = %" PRIu64,
                 lg->id, ent.offset, ent.offset + ent.record_count, lg->b);
      if (!first && ent.offset != prev_end)
        sim_fail(s, P_NoOverlappingRanges,
                 "log %" PRIu64 ": an entry at %" PRIu64 " follows one ending at %" PRIu64, lg->id,
                 ent.offset, prev_end);
      if (s->failed)
        break;
      check_read_entry(s, "full-pass", lg->id, &ent);
      if (s->failed)
        break;
      sim_entry *e = &s->ents[le64(ent.payload)];
      if (e->pass == s->pass)
        sim_fail(s, P_NoPhantomEntries, "log %" PRIu64 ": entry %" PRIu64 " read twice", lg->id,
                 le64(ent.payload));
      e->pass = s->pass;
      prev_end = ent.offset + ent.record_count;
      first = 0;
    }
    tarn_log_iter_close(it);
    if (s->failed)
      return;
    if (rc != TARN_EEND) {
      sim_fail(s, P_NoReaderError, "log %" PRIu64 ": full read stopped at %" PRIu64 ": %d %s",
               lg->id, prev_end, rc, tarn_errmsg());
      return;
    }
    for (size_t id = 0; id < s->nents; id++) {
      sim_entry *e = &s->ents[id];
      if (e->log == lg->id && e->status == E_ACKED && e->offset + e->records > lg->b)
        SIM_CHECKED(s, P_NoAckedEntryLost);
      if (e->log == lg->id && e->status == E_ACKED && e->offset + e->records > lg->b &&
          e->pass != s->pass) {
        sim_fail(s, P_NoAckedEntryLost,
                 "log %" PRIu64 ": acknowledged entry %zu at offset %" PRIu64 " (B %" PRIu64
                 ") is missing from a full read",
                 lg->id, id, e->offset, lg->b);
        return;
      }
    }
  }
}
