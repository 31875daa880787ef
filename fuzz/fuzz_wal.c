/* Any bytes decode as a WAL object or are refused. On success: every payload lies
 * in the payload region of the object; the head-only decoder agrees; and the
 * entries rebuilt by the builder decode again to the same sections. */
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/wal.h"

#define REENCODE_LIMIT (64u << 20) /* overlapping payloads could otherwise multiply */

static void check_bounds(const tarn_wal *w, size_t len) {
  for (size_t s = 0; s < w->section_count; s++) {
    const tarn_wal_section *sec = &w->sections[s];
    if (tarn_wal_find(w, sec->log_id) != sec)
      abort();
    for (size_t i = 0; i < sec->entry_count; i++) {
      const tarn_wal_entry *e = &sec->entries[i];
      if (e->payload_pos < w->payload_region_offset || e->payload_pos + e->payload_size > len ||
          e->payload_pos != w->payload_region_offset + e->payload_offset)
        abort();
      if (w->version == TARN_WAL_VERSION && e->record_count == 0)
        abort();
    }
  }
}

static void same_index(const tarn_wal *a, const tarn_wal *b) {
  if (a->section_count != b->section_count || a->version != b->version ||
      a->payload_region_offset != b->payload_region_offset)
    abort();
  for (size_t s = 0; s < a->section_count; s++) {
    const tarn_wal_section *x = &a->sections[s], *y = &b->sections[s];
    if (x->log_id != y->log_id || x->entry_count != y->entry_count ||
        x->record_total != y->record_total || x->payload_total != y->payload_total)
      abort();
    for (size_t i = 0; i < x->entry_count; i++)
      if (x->entries[i].payload_pos != y->entries[i].payload_pos ||
          x->entries[i].payload_size != y->entries[i].payload_size ||
          x->entries[i].record_count != y->entries[i].record_count || y->entries[i].payload)
        abort();
  }
}

static void round_trip(const tarn_wal *w) {
  uint64_t total = 0;
  for (size_t s = 0; s < w->section_count; s++)
    total += w->sections[s].payload_total;
  if (total > REENCODE_LIMIT)
    return;
  tarn_wal_builder b;
  tarn_wal_builder_init(&b);
  for (size_t s = 0; s < w->section_count; s++)
    for (size_t i = 0; i < w->sections[s].entry_count; i++) {
      const tarn_wal_entry *e = &w->sections[s].entries[i];
      uint32_t rc = e->record_count ? e->record_count : 1; /* legacy objects carry none */
      if (tarn_wal_builder_add(&b, w->sections[s].log_id, e->payload, (size_t)e->payload_size, rc))
        abort();
    }
  tarn_buf out = TARN_BUF_INIT;
  if (tarn_wal_builder_finish(&b, &out))
    abort();
  tarn_wal v;
  if (tarn_wal_decode(out.data, out.len, &v) || v.version != TARN_WAL_VERSION ||
      v.section_count != w->section_count)
    abort();
  check_bounds(&v, out.len);
  for (size_t s = 0; s < w->section_count; s++) {
    const tarn_wal_section *x = &w->sections[s], *y = &v.sections[s];
    if (x->log_id != y->log_id || x->entry_count != y->entry_count ||
        x->payload_total != y->payload_total)
      abort();
    for (size_t i = 0; i < x->entry_count; i++)
      if (x->entries[i].payload_size != y->entries[i].payload_size ||
          memcmp(x->entries[i].payload, y->entries[i].payload, x->entries[i].payload_size) ||
          (x->entries[i].record_count && x->entries[i].record_count != y->entries[i].record_count))
        abort();
  }
  tarn_wal_free(&v);
  tarn_buf_free(&out);
  tarn_wal_builder_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn_wal w;
  if (tarn_wal_decode(data, size, &w))
    return 0;
  check_bounds(&w, size);
  uint64_t head;
  tarn_wal h;
  if (tarn_wal_head_length(data, TARN_WAL_PROBE_LEN, size, &head) ||
      tarn_wal_decode_index(data, (size_t)head, size, &h))
    abort();
  same_index(&w, &h);
  tarn_wal_free(&h);
  round_trip(&w);
  tarn_wal_free(&w);
  return 0;
}
