/* Compaction: 64 MiB of 1 KiB entries appended to one log (mem: stores), then
 * compacted WAL -> Parquet (ZSTD) + companions, against DuckDB converting the
 * same payloads to Parquet (COPY, ZSTD) in the same run; and reclamation's
 * scan rate (objects/s) over a WAL root of 20,000 objects, against a plain
 * listing of the same root. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "tarn/catalog.h"
#include "tarn/compactor.h"
#include "tarn/objstore_mem.h"
#include "tarn/reclaim.h"
#include "tarn/writer.h"

#define TOTAL ((size_t)64 << 20)
#define ENTRY 1024
#define OBJECTS 20000

int bench_compact(void);
int bench_compact(void) {
  char name[64], uri[96], wuri[96], curi[96];
  snprintf(name, sizeof name, "bench-compact-%d", (int)getpid());
  snprintf(uri, sizeof uri, "mem:%s", name);
  snprintf(wuri, sizeof wuri, "mem:%s-w", name);
  snprintf(curi, sizeof curi, "mem:%s-c", name);
  tarn_meta *m = NULL;
  tarn_objstore *wal = NULL, *cs = NULL;
  tarn_catalog *cat = NULL;
  tarn_catalog_record sr;
  memset(&sr, 0, sizeof sr);
  uint8_t *p = malloc(TOTAL);
  if (!p || tarn_meta_open(uri, &m) || tarn_objstore_open(wuri, &wal) ||
      tarn_objstore_open(curi, &cs) || tarn_catalog_open(m, NULL, &cat) ||
      tarn_catalog_init(cat, NULL) ||
      tarn_catalog_create_stream(cat, "bench", "s", 1, NULL, 0, &sr)) {
    fprintf(stderr, "bench compact: setup: %s\n", tarn_errmsg());
    return 1;
  }
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < TOTAL; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = (uint8_t)('a' + (s % 16));
  }
  tarn_writer_options wo;
  tarn_writer_options_default(&wo);
  wo.batch_ms = 20;
  tarn_writer *w;
  int rc = tarn_writer_open(m, wal, &wo, &w);
  for (size_t off = 0; !rc && off < TOTAL; off += ENTRY)
    rc = tarn_writer_append(w, sr.logs[0], p + off, ENTRY, 1, NULL, NULL);
  if (!rc)
    rc = tarn_writer_close(w);
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  tarn_compactor *c = NULL;
  if (!rc)
    rc = tarn_compactor_open(m, wal, cs, &o, &c);
  double t0 = bench_now();
  int did = 0;
  if (!rc)
    rc = tarn_compact_once(c, sr.logs[0], 1, NULL, &did);
  double tc = bench_now() - t0;
  if (rc || !did) {
    fprintf(stderr, "bench compact: %s\n", tarn_errmsg());
    return 1;
  }
  double dw, dr;
  if (bench_duckdb_copy(p, TOTAL, ENTRY, "zstd", &dw, &dr) == 0)
    bench_report("compact 1 KiB entries WAL -> parquet+index", TOTAL, tc, "duckdb COPY zstd", dw);
  else
    bench_report("compact 1 KiB entries WAL -> parquet+index", TOTAL, tc, "memcpy",
                 bench_memcpy_seconds(TOTAL));
  /* reclamation scan: many small objects, none named */
  for (int i = 0; i < OBJECTS && !rc; i++) {
    char n[64];
    snprintf(n, sizeof n, "%02x/orphan-%06d.wal", i % 256, i);
    rc = tarn_objstore_put(wal, n, "x", 1);
  }
  t0 = bench_now();
  size_t listed = 0;
  char *after = NULL;
  for (;;) {
    tarn_objstore_listing l;
    if (tarn_objstore_list(wal, "", after, 1000, &l))
      break;
    listed += l.n;
    free(after);
    after = l.truncated && l.n ? strdup(l.names[l.n - 1]) : NULL;
    tarn_objstore_listing_free(&l);
    if (!after)
      break;
  }
  double tl = bench_now() - t0;
  tarn_reclaim_options ro;
  tarn_reclaim_options_default(&ro);
  tarn_reclaim_stats st;
  t0 = bench_now();
  if (!rc)
    rc = tarn_reclaim_pass(m, wal, cs, &ro, &st);
  double tr = bench_now() - t0;
  if (rc) {
    fprintf(stderr, "bench compact: reclaim: %s\n", tarn_errmsg());
    return 1;
  }
  bench_report_ops("reclaim pass, objects/s (first seen)", (double)st.wal_listed, tr,
                   "objstore list", (double)listed / tl);
  free(p);
  tarn_compactor_close(c);
  tarn_catalog_record_free(&sr);
  tarn_catalog_close(cat);
  tarn_objstore_close(wal);
  tarn_objstore_close(cs);
  tarn_meta_close(m);
  tarn_objstore_mem_drop(name);
  snprintf(name + strlen(name), 8, "-w");
  tarn_objstore_mem_drop(name);
  name[strlen(name) - 2] = 0;
  snprintf(name + strlen(name), 8, "-c");
  tarn_objstore_mem_drop(name);
  return 0;
}
