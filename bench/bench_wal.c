/* WAL object encode and decode: 4 MiB objects of 1 KiB entries across 4 logs
 * (Ursa's object shape), against memcpy of the same bytes. Goal (issue 36,
 * item 4): encode >= 0.8x memcpy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tarn/buf.h"
#include "tarn/wal.h"

#define OBJ_BYTES (4u << 20)
#define ENTRY 1024u
#define LOGS 4u
#define ROUNDS 40

int bench_wal(void);
int bench_wal(void) {
  uint8_t *pool = malloc(OBJ_BYTES);
  if (!pool)
    return 1;
  for (size_t i = 0; i < OBJ_BYTES; i++)
    pool[i] = (uint8_t)(i * 131 + 7);
  tarn_wal_builder b;
  tarn_wal_builder_init(&b);
  tarn_buf out = TARN_BUF_INIT;
  /* The goal's baseline alternates with the encode, round by round (a
   * memcpy of the same payload bytes into a buffer already touched), and
   * each side's best is kept: one memcpy timed at the end met a different
   * machine on a shared host (ratios 0.67 .. 1.27 from one build). */
  uint8_t *dst = malloc(OBJ_BYTES);
  if (!dst)
    return 1;
  memset(dst, 0, OBJ_BYTES);
  double enc = 1e9, cpy = 1e9;
  for (int r = 0; r < ROUNDS; r++) { /* best of: the machine is shared */
    tarn_wal_builder_reset(&b);
    tarn_buf_reset(&out);
    double t = bench_now();
    for (size_t i = 0; i < OBJ_BYTES / ENTRY; i++)
      if (tarn_wal_builder_add(&b, 1000 + i % LOGS, pool + i * ENTRY, ENTRY, 1 + (uint32_t)(i % 3)))
        return 1;
    if (tarn_wal_builder_finish(&b, &out))
      return 1;
    bench_sink(out.data, out.len);
    t = bench_now() - t;
    enc = t < enc ? t : enc;
    double m = bench_now();
    memcpy(dst, pool, OBJ_BYTES);
    bench_sink(dst, OBJ_BYTES);
    m = bench_now() - m;
    cpy = m < cpy ? m : cpy;
  }
  free(dst);
  double dec = 1e9, idx = 1e9;
  for (int r = 0; r < ROUNDS; r++) {
    tarn_wal w;
    double t = bench_now();
    if (tarn_wal_decode(out.data, out.len, &w))
      return 1;
    t = bench_now() - t;
    /* Zero-copy: payloads point into the object itself. */
    const tarn_wal_entry *e = &tarn_wal_find(&w, 1003)->entries[0];
    if (e->payload < out.data || e->payload >= out.data + out.len)
      return 1;
    bench_sink(e->payload, (size_t)e->payload_size);
    tarn_wal_free(&w);
    dec = t < dec ? t : dec;
    uint64_t head;
    t = bench_now();
    if (tarn_wal_head_length(out.data, TARN_WAL_PROBE_LEN, out.len, &head) ||
        tarn_wal_decode_index(out.data, (size_t)head, out.len, &w))
      return 1;
    t = bench_now() - t;
    tarn_wal_free(&w);
    idx = t < idx ? t : idx;
  }
  double base = bench_memcpy_seconds(out.len);
  char what[96];
  snprintf(what, sizeof what, "wal encode (%u x %u B, %u logs)", OBJ_BYTES / ENTRY, ENTRY, LOGS);
  bench_report(what, out.len, enc, "memcpy", base);
  bench_report("wal decode (whole object, zero-copy)", out.len, dec, "memcpy", base);
  bench_report("wal decode (index only)", out.len, idx, "memcpy", base);
  /* issue 36, item 4: encode >= 0.8x memcpy of the same bytes */
  double ratio = cpy / enc;
  printf("goal: wal encode >= 0.8x memcpy (best of %d alternating rounds each): %.3f  %s\n", ROUNDS,
         ratio, ratio >= 0.8 ? "goal met" : "GOAL NOT MET");
  tarn_buf_free(&out);
  tarn_wal_builder_free(&b);
  free(pool);
  return 0;
}
