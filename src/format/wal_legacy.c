/* Legacy WAL objects of format versions 1 and 2 (spec Appendix C, informative):
 * int64 index_length, 32-byte tuples (log_id, entry_id, payload_offset,
 * payload_length) in no particular order, then the payload region. Decoded into
 * the same view as version 3; record counts are not in the object (each legacy
 * entry's index record carries its message_count), so they read as 0. */
#include <stdlib.h>
#include <string.h>

#include "format/wal_internal.h"
#include "tarn/error.h"
#include "util/bytes.h"
#include "util/error.h"

#define TUPLE 32

typedef struct tuple {
  uint64_t log_id, entry_id, off, len;
  size_t pos;   /* tuple index in the index region */
  size_t first; /* the smallest tuple index of its log, for section order */
} tuple;

static int cmp_log_entry(const void *a, const void *b) {
  const tuple *x = a, *y = b;
  if (x->log_id != y->log_id)
    return x->log_id < y->log_id ? -1 : 1;
  if (x->entry_id != y->entry_id)
    return x->entry_id < y->entry_id ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int cmp_section_order(const void *a, const void *b) {
  const tuple *x = a, *y = b;
  if (x->first != y->first)
    return x->first < y->first ? -1 : 1;
  if (x->entry_id != y->entry_id)
    return x->entry_id < y->entry_id ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Reads the n index tuples into t, each checked against the payload region. */
static int read_tuples(const uint8_t *p, size_t n, uint64_t region_size, tuple *t) {
  for (size_t i = 0; i < n; i++) {
    const uint8_t *q = p + 8 + i * TUPLE;
    size_t pos = 8 + i * TUPLE;
    t[i] = (tuple){
        tarn__ld_be64(q), tarn__ld_be64(q + 8), tarn__ld_be64(q + 16), tarn__ld_be64(q + 24), i, 0};
    if (t[i].log_id > TARN_WAL_LOG_ID_MAX || t[i].entry_id > TARN_WAL_LOG_ID_MAX)
      return tarn__corrupt(TARN__WAL_WHAT, pos + (t[i].log_id > TARN_WAL_LOG_ID_MAX ? 0 : 8),
                           "legacy %s is negative",
                           t[i].log_id > TARN_WAL_LOG_ID_MAX ? "log_id" : "entry_id");
    if (t[i].off > region_size || t[i].len > region_size - t[i].off)
      return tarn__corrupt(TARN__WAL_WHAT, pos + 16,
                           "legacy payload [%llu, +%llu) lies outside the %llu-byte payload region",
                           (unsigned long long)t[i].off, (unsigned long long)t[i].len,
                           (unsigned long long)region_size);
  }
  return 0;
}

/* Groups the tuples by log, each log's entries in entry_id order (the order
 * added), and marks each with its log's first tuple index; counts the logs. */
static int group_by_log(tuple *t, size_t n, size_t *nsec_out) {
  qsort(t, n, sizeof *t, cmp_log_entry);
  size_t nsec = 0;
  for (size_t i = 0, start = 0; i < n; i++) {
    if (i > start && t[i].entry_id == t[i - 1].entry_id)
      return tarn__corrupt(TARN__WAL_WHAT, 8 + t[i].pos * TUPLE + 8,
                           "legacy entry_id %llu of log %llu appears twice",
                           (unsigned long long)t[i].entry_id, (unsigned long long)t[i].log_id);
    if (i + 1 == n || t[i + 1].log_id != t[i].log_id) {
      size_t first = SIZE_MAX;
      for (size_t j = start; j <= i; j++)
        first = t[j].pos < first ? t[j].pos : first;
      for (size_t j = start; j <= i; j++)
        t[j].first = first;
      nsec++;
      start = i + 1;
    }
  }
  *nsec_out = nsec;
  return 0;
}

int tarn__wal_decode_legacy(const uint8_t *p, size_t avail, uint64_t object_size, int with_payloads,
                            tarn_wal *out) {
  uint64_t index_length = tarn__ld_be64(p);
  if (index_length % TUPLE)
    return tarn__corrupt(TARN__WAL_WHAT, 0,
                         "legacy index_length %llu is not a multiple of the 32-byte tuple",
                         (unsigned long long)index_length);
  if (index_length == 0)
    return tarn__corrupt(TARN__WAL_WHAT, 0, "legacy index region holds no entry");
  if (index_length > object_size - 8)
    return tarn__corrupt(TARN__WAL_WHAT, 0,
                         "legacy index_length %llu exceeds the %llu bytes after the length field",
                         (unsigned long long)index_length, (unsigned long long)object_size - 8);
  if (avail < 8 + index_length)
    return tarn__err(TARN_EINVAL, "wal object: %zu head bytes given, the index region ends at %llu",
                     avail, 8 + (unsigned long long)index_length);
  uint64_t region_off = 8 + index_length;
  uint64_t region_size = object_size - region_off;
  size_t n = (size_t)(index_length / TUPLE); /* backed by index_length bytes already present */
  tuple *t = malloc(n * sizeof *t);
  if (!t)
    return tarn__err(TARN_ENOMEM, "wal object: out of memory for %zu legacy tuples", n);
  int rc = 0;
  if ((rc = read_tuples(p, n, region_size, t)))
    goto out;
  size_t nsec = 0;
  if ((rc = group_by_log(t, n, &nsec)))
    goto out;
  /* Sections in the order their logs first appear among the tuples. */
  qsort(t, n, sizeof *t, cmp_section_order);
  tarn_wal w;
  memset(&w, 0, sizeof w);
  if ((rc = tarn__wal_alloc(&w, nsec, n)))
    goto out;
  size_t s = 0;
  for (size_t i = 0; i < n; i++) {
    tarn_wal_section *sec = &w.sections[s];
    if (!sec->entries) {
      sec->log_id = t[i].log_id;
      sec->entries = &w.entry_store_[i];
      sec->index_pos = 8 + t[i].first * TUPLE;
    }
    tarn_wal_entry *e = &sec->entries[sec->entry_count++];
    e->payload_offset = t[i].off;
    e->payload_size = t[i].len;
    e->payload_pos = region_off + t[i].off;
    e->payload = with_payloads ? p + region_off + t[i].off : NULL;
    e->record_count = 0;
    e->entry_id = t[i].entry_id;
    e->index_pos = 8 + t[i].pos * TUPLE;
    sec->payload_total += t[i].len;
    if (i + 1 < n && t[i + 1].log_id != t[i].log_id)
      s++;
  }
  if ((rc = tarn__wal_index_logs(&w))) {
    tarn_wal_free(&w);
    goto out;
  }
  w.version = TARN_WAL_LEGACY;
  w.index_version = 0;
  w.index_length = index_length;
  w.object_size = object_size;
  w.payload_region_offset = region_off;
  w.payload_region_size = region_size;
  w.has_payloads = with_payloads;
  *out = w;
out:
  free(t);
  return rc;
}
