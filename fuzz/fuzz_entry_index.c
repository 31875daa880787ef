/* EntryIndex decoder: total; a decoded value re-encodes to bytes that decode to
 * the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/entryindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int str_eq(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void same(const tarn_entry_index *a, const tarn_entry_index *b) {
  int ok = a->version == b->version && str_eq(a->location, b->location) &&
           a->file_type == b->file_type && a->has_index_type == b->has_index_type &&
           (!a->has_index_type || a->index_type == b->index_type) &&
           a->message_count == b->message_count && a->entry_size_bytes == b->entry_size_bytes &&
           a->has_file_size == b->has_file_size &&
           (!a->has_file_size || a->file_size == b->file_size) &&
           a->has_offset_in_file == b->has_offset_in_file &&
           (!a->has_offset_in_file || a->offset_in_file == b->offset_in_file) &&
           a->entry_count == b->entry_count && a->has_entry_offsets == b->has_entry_offsets &&
           a->n_boundaries == b->n_boundaries && a->n_extra == b->n_extra &&
           a->compressed_payload_len == b->compressed_payload_len &&
           str_eq(a->file_index, b->file_index);
  if (ok && a->n_boundaries)
    ok = memcmp(a->boundaries, b->boundaries, a->n_boundaries * sizeof *a->boundaries) == 0;
  if (ok && a->compressed_payload_len)
    ok = memcmp(a->compressed_payload, b->compressed_payload, a->compressed_payload_len) == 0;
  for (size_t i = 0; ok && i < a->n_extra; i++)
    ok = str_eq(a->extra[i].key, b->extra[i].key) && str_eq(a->extra[i].value, b->extra[i].value);
  if (!ok)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)tarn_index_value_detect_version(data, size);
  tarn_entry_index a, b;
  if (tarn_entry_index_decode(data, size, &a) != 0)
    return 0;
  if (tarn_entry_index_read_kind(&a) < 0)
    abort();
  tarn_buf buf = TARN_BUF_INIT;
  if (tarn_entry_index_encode(&a, &buf) != 0 || tarn_entry_index_decode(buf.data, buf.len, &b) != 0)
    abort();
  same(&a, &b);
  tarn_buf_free(&buf);
  tarn_entry_index_free(&a);
  tarn_entry_index_free(&b);
  return 0;
}
