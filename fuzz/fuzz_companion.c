/* Fuzzes the companion reader. The first byte selects the entry point: even →
 * the gzip file (with a 1 MiB cap on the stream), odd → the decompressed
 * stream, so the fuzzer reaches the JSON and Base64 layers directly.
 * A decoded companion is written again and must decode to the same rows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/companion.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const tarn_entry_header *a, const tarn_entry_header *b) {
  return a->offset == b->offset && a->record_count == b->record_count &&
         a->timestamp_ms == b->timestamp_ms && a->entry_size == b->entry_size &&
         a->cumulative_size == b->cumulative_size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  tarn_companion c;
  int rc = data[0] & 1 ? tarn_companion_decode_stream(&c, data + 1, size - 1)
                       : tarn_companion_decode(&c, data + 1, size - 1, (size_t)1 << 20);
  if (rc)
    return 0;
  for (size_t i = 0; i < c.nrows; i++) {
    size_t row;
    if (tarn_companion_floor(&c, c.rows[i].offset, &row) == 0 &&
        c.rows[row].offset > c.rows[i].offset)
      abort(); /* the floor never lies above the offset */
  }
  /* Round trip: every decoded row is valid input for the writer. */
  tarn_buf out = TARN_BUF_INIT;
  tarn_companion_writer *w;
  size_t block_rows = c.nblocks && c.blocks[0].rows ? c.blocks[0].rows : 0;
  if (tarn_companion_writer_open(&w, &out, block_rows,
                                 data[0] & 2 ? 0 : TARN_COMPANION_UNCOMPRESSED))
    abort();
  for (size_t i = 0; i < c.nrows; i++)
    if (tarn_companion_writer_add(w, &c.rows[i]))
      abort();
  if (tarn_companion_writer_close(w))
    abort();
  tarn_companion d;
  rc = data[0] & 2 ? tarn_companion_decode(&d, out.data, out.len, 0)
                   : tarn_companion_decode_stream(&d, out.data, out.len);
  if (rc || d.nrows != c.nrows)
    abort();
  for (size_t i = 0; i < c.nrows; i++)
    if (!same(&d.rows[i], &c.rows[i]))
      abort();
  for (size_t i = 0; i < c.nmap; i++) { /* the rewritten map names every row */
    size_t row;
    if (tarn_companion_floor(&d, c.map[i].offset, &row) || row != c.map[i].row)
      abort();
  }
  tarn_companion_free(&d);
  tarn_buf_free(&out);
  tarn_companion_free(&c);
  return 0;
}
