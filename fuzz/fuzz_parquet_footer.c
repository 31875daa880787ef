/* The Parquet footer (FileMetaData) and page header decoders on any bytes.
 * The first byte selects: even, a FileMetaData; odd, a PageHeader. What
 * decodes is encoded again, and the encoding must decode to the same thing
 * and encode to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet_internal.h"

static void footer(const uint8_t *p, size_t n) {
  tarn_parquet_meta m, m2;
  int rc = tarn__pq_meta_decode(p, n, 0, &m);
  /* tarn encodes the payload column only: compare when it is the only column. */
  if (rc == 0 && m.n_schema == 2 && m.payload_column == 0) {
    tarn_buf a = TARN_BUF_INIT, b = TARN_BUF_INIT;
    if (tarn__pq_meta_encode(&m, &a) == 0) {
      if (tarn__pq_meta_decode(a.data, a.len, 0, &m2) != 0)
        abort();
      if (m2.num_rows != m.num_rows || m2.n_row_groups != m.n_row_groups || m2.n_kv != m.n_kv)
        abort();
      if (tarn__pq_meta_encode(&m2, &b) != 0 || a.len != b.len || memcmp(a.data, b.data, a.len))
        abort();
      tarn__pq_meta_free(&m2);
    }
    tarn_buf_free(&a);
    tarn_buf_free(&b);
  }
  tarn__pq_meta_free(&m);
}

static void page_header(const uint8_t *p, size_t n) {
  tarn__pq_page_header h, h2;
  size_t used, used2;
  if (tarn__pq_page_header_decode(p, n, 0, &h, &used) != 0)
    return;
  if (used > n)
    abort();
  if (h.type != TARN_PARQUET_DATA_PAGE && h.type != TARN_PARQUET_DICTIONARY_PAGE &&
      h.type != TARN_PARQUET_DATA_PAGE_V2)
    return;
  if (h.type == TARN_PARQUET_DICTIONARY_PAGE)
    h.num_nulls = -1; /* a dictionary page has no statistics of its own */
  tarn_buf b = TARN_BUF_INIT;
  if (tarn__pq_page_header_encode(&h, &b) == 0) {
    if (tarn__pq_page_header_decode(b.data, b.len, 0, &h2, &used2) != 0 || used2 != b.len)
      abort();
    if (h2.type != h.type || h2.uncompressed_size != h.uncompressed_size ||
        h2.compressed_size != h.compressed_size || h2.num_values != h.num_values ||
        h2.encoding != h.encoding)
      abort();
  }
  tarn_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if (data[0] & 1)
    page_header(data + 1, size - 1);
  else
    footer(data + 1, size - 1);
  return 0;
}
