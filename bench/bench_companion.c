/* Companion files: writing and reading 10,000 rows (one full block plus the
 * empty last block), and CRC32C, each against memcpy of the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tarn/companion.h"
#include "tarn/crc32c.h"

int bench_companion(void);

enum { ROWS = 10000, REPS = 5 };

static int write_rows(tarn_buf *out, const tarn_entry_header *rows, int flags) {
  tarn_companion_writer *w;
  if (tarn_companion_writer_open(&w, out, 0, flags))
    return -1;
  for (int i = 0; i < ROWS; i++)
    if (tarn_companion_writer_add(w, &rows[i])) {
      tarn_companion_writer_abort(w);
      return -1;
    }
  return tarn_companion_writer_close(w) ? -1 : 0;
}

static int bench_rows(void) {
  tarn_entry_header *rows = malloc(ROWS * sizeof *rows);
  if (!rows)
    return -1;
  int64_t off = 0, cum = 0;
  for (int i = 0; i < ROWS; i++) {
    cum += 1000 + i % 4096;
    rows[i] = (tarn_entry_header){off, 1 + i % 50, 1700000000000LL + i * 250, 1000 + i % 4096, cum};
    off += rows[i].record_count;
  }
  tarn_buf raw = TARN_BUF_INIT, gz = TARN_BUF_INIT;
  int rc = write_rows(&raw, rows, TARN_COMPANION_UNCOMPRESSED);
  double best_w = 1e9, best_r = 1e9, best_rs = 1e9;
  for (int k = 0; !rc && k < REPS; k++) {
    tarn_buf_reset(&gz);
    double t = bench_now();
    rc = write_rows(&gz, rows, 0);
    t = bench_now() - t;
    if (t < best_w)
      best_w = t;
    tarn_companion c;
    t = bench_now();
    rc = rc ? rc : tarn_companion_decode(&c, gz.data, gz.len, 0);
    t = bench_now() - t;
    if (!rc) {
      bench_sink(c.rows, sizeof *c.rows);
      tarn_companion_free(&c);
    }
    if (t < best_r)
      best_r = t;
    t = bench_now();
    rc = rc ? rc : tarn_companion_decode_stream(&c, raw.data, raw.len);
    t = bench_now() - t;
    if (!rc)
      tarn_companion_free(&c);
    if (t < best_rs)
      best_rs = t;
  }
  if (!rc) {
    double base = bench_memcpy_seconds(raw.len);
    printf("companion: %d rows, %zu-byte stream, %zu bytes gzip (%.1f%%)\n", ROWS, raw.len, gz.len,
           100.0 * (double)gz.len / (double)raw.len);
    bench_report("companion write 10k rows (gzip), stream MB/s", raw.len, best_w, "memcpy", base);
    bench_report_ops("companion write 10k rows (gzip), rows/s", ROWS, best_w, "memcpy rows/s",
                     ROWS / base);
    bench_report("companion read 10k rows (gzip), stream MB/s", raw.len, best_r, "memcpy", base);
    bench_report_ops("companion read 10k rows (gzip), rows/s", ROWS, best_r, "memcpy rows/s",
                     ROWS / base);
    bench_report("companion read 10k rows (no gzip)", raw.len, best_rs, "memcpy", base);
  }
  tarn_buf_free(&raw), tarn_buf_free(&gz);
  free(rows);
  return rc;
}

static int bench_crc(void) {
  size_t n = (size_t)16 << 20;
  uint8_t *p = malloc(n);
  if (!p)
    return -1;
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(i * 2654435761u >> 13);
  double best_hw = 1e9, best_sw = 1e9;
  uint32_t a = 0, b = 0;
  for (int k = 0; k < REPS; k++) {
    double t = bench_now();
    a ^= tarn_crc32c(0, p, n);
    t = bench_now() - t;
    if (t < best_hw)
      best_hw = t;
    t = bench_now();
    b ^= tarn_crc32c_portable(0, p, n);
    t = bench_now() - t;
    if (t < best_sw)
      best_sw = t;
  }
  free(p);
  if (a != b)
    return -1;
  double base = bench_memcpy_seconds(n);
  bench_report(tarn_crc32c_hw() ? "crc32c 16 MiB (sse4.2)" : "crc32c 16 MiB (tables)", n, best_hw,
               "memcpy", base);
  bench_report("crc32c 16 MiB (slicing-by-8 tables)", n, best_sw, "memcpy", base);
  return 0;
}

int bench_companion(void) { return bench_rows() || bench_crc() ? -1 : 0; }
