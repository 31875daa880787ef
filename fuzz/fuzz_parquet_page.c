/* A whole Parquet file in memory, read as a compacted object: open from the
 * footer, read every row, seek to a row chosen by the input and read on.
 * Any bytes must give rows or an error; never a crash, an overread or an
 * allocation beyond the reader's limits (kept small here). */
#include <stdint.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/parquet.h"

typedef struct src {
  const uint8_t *p;
  size_t n;
} src;

static int mem_read(void *ctx, uint64_t off, void *buf, size_t n) {
  src *s = ctx;
  if (off > s->n || n > s->n - off)
    return TARN_EIO;
  memcpy(buf, s->p + off, n);
  return 0;
}

static void drain(tarn_parquet_reader *r, int limit) {
  const uint8_t *p;
  size_t n;
  int is_null;
  for (int i = 0; i < limit && tarn_parquet_next(r, &p, &n, &is_null) == 0; i++)
    if (!is_null && n && (p[0] ^ p[n - 1]) == 0x100) /* touch the bytes */
      break;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  src s = {data, size};
  tarn_parquet_reader_opts o = {NULL, 0, 1u << 22, 1u << 20};
  tarn_parquet_reader *r;
  if (tarn_parquet_open(&r, mem_read, &s, size, &o) != 0)
    return 0;
  drain(r, 100000);
  uint64_t rows = (uint64_t)tarn_parquet_get_meta(r)->num_rows;
  if (rows > 0 && size > 0 && tarn_parquet_seek(r, data[size / 2] % rows) == 0)
    drain(r, 1000);
  tarn_parquet_close(r);
  return 0;
}
