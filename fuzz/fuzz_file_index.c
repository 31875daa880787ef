/* File index: the binary decoder and the strict Base64 path; both re-encode to
 * the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/fileindex.h"
#include "util/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn_file_index fi;
  if (tarn_file_index_decode(data, size, &fi) == 0) {
    tarn_buf b = TARN_BUF_INIT;
    if (tarn_file_index_encode(fi.files, fi.n, &b) != 0 || b.len != size ||
        memcmp(b.data, data, size))
      abort();
    size_t idx;
    int64_t base;
    int64_t last = fi.files[fi.n - 1].last_offset;
    if (tarn_file_index_lookup(&fi, 0, last, &idx, &base) != 0 || idx != fi.n - 1)
      abort();
    tarn_buf_free(&b);
    tarn_file_index_free(&fi);
  }
  tarn_buf bin = TARN_BUF_INIT, text = TARN_BUF_INIT;
  if (tarn__b64_decode((const char *)data, size, &bin, "fuzz") == 0) {
    if (tarn__b64_encode(bin.data, bin.len, &text) != 0 || text.len != size ||
        memcmp(text.data, data, size))
      abort();
    if (tarn_file_index_decode_base64((const char *)data, size, &fi) == 0)
      tarn_file_index_free(&fi);
  }
  tarn_buf_free(&bin);
  tarn_buf_free(&text);
  return 0;
}
