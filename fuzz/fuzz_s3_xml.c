/* The S3 response reader: any bytes give elements, "none" or an error, never
 * a read outside the input. Walks the listing the way s3_list does. */
#include <stdint.h>
#include <string.h>

#include "store/s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *x = (const char *)data;
  tarn_buf b = TARN_BUF_INIT;
  size_t pos = 0, last = 0;
  const char *c;
  size_t cl;
  int got;
  while ((got = tarn__xml_next(x, size, &pos, "Contents", &c, &cl)) == 1) {
    if (c < x || c + cl > x + size || pos <= last)
      __builtin_trap(); /* content outside the input, or no progress */
    last = pos;
    tarn__xml_get(c, cl, "Key", &b);
    tarn__xml_get(c, cl, "Size", &b);
  }
  tarn__xml_get(x, size, "NextContinuationToken", &b);
  tarn__xml_get(x, size, "Code", &b);
  tarn_buf_reset(&b);
  if (tarn__xml_text(x, size, &b) == 0 && memchr(x, '&', size) == NULL &&
      (b.len != size || (size && memcmp(b.data, x, size) != 0)))
    __builtin_trap(); /* text without references must come back unchanged */
  tarn_buf_free(&b);
  return 0;
}
