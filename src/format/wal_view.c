/* The decoded view of a WAL object that both decoders fill (wal.c for version 3,
 * wal_legacy.c for the legacy layout): its arrays, the log_id lookup and the
 * find by log_id. Apart from wal.c so that wal_legacy.c needs only this file
 * and wal.c only calls into wal_legacy.c, never the other way (issue 18). */
#include "tarn/wal.h"

#include <stdlib.h>
#include <string.h>

#include "format/wal_internal.h"
#include "tarn/error.h"
#include "util/error.h"

void tarn_wal_free(tarn_wal *w) {
  if (!w)
    return;
  free(w->sections);
  free(w->entry_store_);
  free(w->by_log_);
  memset(w, 0, sizeof *w);
}

int tarn__wal_alloc(tarn_wal *w, size_t nsec, size_t nent) {
  w->sections = calloc(nsec ? nsec : 1, sizeof *w->sections);
  w->entry_store_ = calloc(nent ? nent : 1, sizeof *w->entry_store_);
  w->by_log_ = calloc(nsec ? nsec : 1, sizeof *w->by_log_);
  if (!w->sections || !w->entry_store_ || !w->by_log_) {
    tarn_wal_free(w);
    return tarn__err(TARN_ENOMEM, "wal object: out of memory for %zu sections, %zu entries", nsec,
                     nent);
  }
  w->section_count = nsec;
  w->entry_total = nent;
  return 0;
}

static int cmp_log(const void *a, const void *b) {
  const tarn_wal_section *x = *(tarn_wal_section *const *)a, *y = *(tarn_wal_section *const *)b;
  if (x->log_id != y->log_id)
    return x->log_id < y->log_id ? -1 : 1;
  return x < y ? -1 : x > y; /* object order among equals, so a duplicate names the later one */
}

int tarn__wal_index_logs(tarn_wal *w) {
  for (size_t i = 0; i < w->section_count; i++)
    w->by_log_[i] = &w->sections[i];
  qsort(w->by_log_, w->section_count, sizeof *w->by_log_, cmp_log);
  for (size_t i = 1; i < w->section_count; i++)
    if (w->by_log_[i]->log_id == w->by_log_[i - 1]->log_id) /* LS-020 */
      return tarn__corrupt(TARN__WAL_WHAT, w->by_log_[i]->index_pos,
                           "log_id %llu has a second log section (the first is at byte %zu)",
                           (unsigned long long)w->by_log_[i]->log_id, w->by_log_[i - 1]->index_pos);
  return 0;
}

const tarn_wal_section *tarn_wal_find(const tarn_wal *w, uint64_t log_id) {
  /* LS-023: by log_id through the sorted lookup, never by position. */
  size_t lo = 0, hi = w->section_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint64_t id = w->by_log_[mid]->log_id;
    if (id == log_id)
      return w->by_log_[mid];
    if (id < log_id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}
