/* Legacy v1/v2 index values: the parser is total; a parsed value re-encodes to
 * a string that parses to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/entryindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int dv = tarn_index_value_detect_version(data, size);
  tarn_legacy_index_value a, b;
  if (tarn_legacy_index_value_parse(data, size, &a) != 0)
    return 0;
  if (dv != a.version)
    abort();
  tarn_buf buf = TARN_BUF_INIT;
  if (tarn_legacy_index_value_encode(&a, &buf) != 0 ||
      tarn_legacy_index_value_parse(buf.data, buf.len, &b) != 0)
    abort();
  if (a.version != b.version || a.message_count != b.message_count ||
      a.entry_size_bytes != b.entry_size_bytes || strcmp(a.location, b.location) ||
      a.entry_id != b.entry_id || a.has_file_type != b.has_file_type || a.file_type != b.file_type)
    abort();
  tarn_buf_free(&buf);
  tarn_legacy_index_value_free(&a);
  tarn_legacy_index_value_free(&b);
  return 0;
}
