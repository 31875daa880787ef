/* Entry-offsets decoder: total and strict, so a decoded array re-encodes to the
 * very same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/offsets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint32_t *a;
  size_t n;
  if (tarn_entry_offsets_decode(data, size, &a, &n) != 0)
    return 0;
  tarn_buf b = TARN_BUF_INIT;
  if (tarn_entry_offsets_encode(a, n, &b) != 0 || b.len != size || memcmp(b.data, data, size))
    abort();
  tarn_buf_free(&b);
  free(a);
  return 0;
}
