/* Any bytes parse as an index key or are refused; a parsed key formats back to
 * the same 62 bytes and carries its own log's prefix. */
#include <stdlib.h>
#include <string.h>

#include "tarn/key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn_key k;
  if (tarn_key_parse((const char *)data, size, &k))
    return 0;
  char out[TARN_KEY_LEN + 1];
  if (size != TARN_KEY_LEN || tarn_key_format(out, k.log_id, k.end_offset, k.cumulative_size) ||
      memcmp(out, data, TARN_KEY_LEN) || !tarn_key_has_prefix((const char *)data, size, k.log_id) ||
      (k.log_id < TARN_KEY_MAX && tarn_key_has_prefix((const char *)data, size, k.log_id + 1)))
    abort();
  return 0;
}
