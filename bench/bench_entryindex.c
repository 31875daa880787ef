/* EntryIndex values and entry offsets: encode and decode throughput, each
 * against memcpy of the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tarn/buf.h"
#include "tarn/entryindex.h"
#include "tarn/error.h"
#include "tarn/offsets.h"

int bench_entryindex(void);

#define ENTRIES 10000

/* Building and decoding the RAW EntryIndex record r, reps times each:
 * bytes = the record. */
static int bench_raw(const tarn_raw_record *r, int reps, const char *what, tarn_buf *rec) {
  char label[96];
  double t = bench_now();
  for (int i = 0; i < reps; i++) {
    tarn_buf_reset(rec);
    if (tarn_entry_index_build_raw(r, rec))
      return 1;
    bench_sink(rec->data, rec->len);
  }
  t = bench_now() - t;
  snprintf(label, sizeof label, "EntryIndex RAW build, %s", what);
  bench_report(label, rec->len * (size_t)reps, t, "memcpy", bench_memcpy_seconds(rec->len) * reps);
  t = bench_now();
  for (int i = 0; i < reps; i++) {
    tarn_entry_index ei;
    if (tarn_entry_index_decode(rec->data, rec->len, &ei))
      return 1;
    bench_sink(ei.boundaries, ei.n_boundaries * 4);
    tarn_entry_index_free(&ei);
  }
  t = bench_now() - t;
  snprintf(label, sizeof label, "EntryIndex RAW decode, %s", what);
  bench_report(label, rec->len * (size_t)reps, t, "memcpy", bench_memcpy_seconds(rec->len) * reps);
  return 0;
}

int bench_entryindex(void) {
  uint32_t *a = malloc(ENTRIES * sizeof *a);
  if (!a)
    return 1;
  uint64_t x = 88172645463325252ull, v = 0;
  for (size_t i = 0; i < ENTRIES; i++) { /* 1..16 records per entry */
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    a[i] = (uint32_t)(v += 1 + x % 16);
  }
  tarn_buf words = TARN_BUF_INIT, rec = TARN_BUF_INIT;
  int rc = 1;
  if (tarn_entry_offsets_encode(a, ENTRIES, &words))
    goto out;

  /* entry offsets: bytes = the uncompressed int array (4n), as Ursa's uncompressed_size */
  int reps = 2000;
  size_t raw_bytes = ENTRIES * sizeof *a;
  double t = bench_now();
  for (int r = 0; r < reps; r++) {
    tarn_buf_reset(&words);
    if (tarn_entry_offsets_encode(a, ENTRIES, &words))
      goto out;
    bench_sink(words.data, words.len);
  }
  t = bench_now() - t;
  bench_report("entry offsets encode, 10000 entries (4n B)", raw_bytes * (size_t)reps, t, "memcpy",
               bench_memcpy_seconds(raw_bytes) * reps);
  t = bench_now();
  for (int r = 0; r < reps; r++) {
    uint32_t *back;
    size_t n;
    if (tarn_entry_offsets_decode(words.data, words.len, &back, &n))
      goto out;
    bench_sink(back, n * sizeof *back);
    free(back);
  }
  t = bench_now() - t;
  bench_report("entry offsets decode, 10000 entries (4n B)", raw_bytes * (size_t)reps, t, "memcpy",
               bench_memcpy_seconds(raw_bytes) * reps);
  printf("  compressed %zu bytes for %zu bytes of boundaries (%.2f bits/entry)\n", words.len,
         raw_bytes, 8.0 * (double)words.len / ENTRIES);

  /* RAW EntryIndex with the 10,000 boundaries: bytes = the record */
  tarn_raw_record r = {
      "2026/11/30/02/00/00/00000000-wal", 0, (int64_t)a[ENTRIES - 1], 1 << 20, 1 << 22, a, ENTRIES};
  if (bench_raw(&r, 1000, "10000 entries", &rec))
    goto out;
  /* small records, the common case: the 61-byte example */
  static const uint32_t a23[] = {2, 3};
  tarn_raw_record small = {"7-00000001.wal", 1, 3, 8, 8, a23, 2};
  if (bench_raw(&small, 200000, "61-byte record", &rec))
    goto out;
  rc = 0;
out:
  if (rc)
    fprintf(stderr, "bench_entryindex: %s\n", tarn_errmsg());
  tarn_buf_free(&words);
  tarn_buf_free(&rec);
  free(a);
  return rc;
}
