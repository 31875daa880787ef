/* Compact every partition of a stream now: its RAW records become Parquet
 * files (and their companions) in the compacted root, installed in the index
 * (C1–C5 of the spec, under the log's compaction lock). What `tarn compact`
 * and `tarn serve` do, from a program.
 *
 *     cc compact.c $(pkg-config --cflags --libs tarn) -o compact
 *     ./compact /tmp/demo greetings
 */
#include <stdio.h>

#include <tarn/tarn.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: compact HOME STREAM\n");
    return 2;
  }
  tarn_deployment_config cfg = {.home = argv[1]};
  tarn_deployment_strings strs;
  tarn_deployment *dep;
  tarn_catalog *cat;
  tarn_compactor *c;
  tarn_catalog_record s;
  int rc;
  if ((rc = tarn_deployment_config_resolve(&cfg, &strs)) < 0 ||
      (rc = tarn_deployment_open(&cfg, 0, &dep)) < 0 ||
      (rc = tarn_catalog_open(tarn_deployment_meta(dep), NULL, &cat)) < 0 ||
      (rc = tarn_catalog_open_stream(cat, "default", argv[2], &s)) < 0 ||
      (rc = tarn_compactor_open(tarn_deployment_meta(dep), tarn_deployment_wal(dep),
                                tarn_deployment_compacted(dep), NULL, &c)) < 0) {
    fprintf(stderr, "compact: %s\n", tarn_errmsg());
    return 1;
  }
  int status = 0;
  for (size_t p = 0; p < s.n_logs; p++) {
    size_t ranges = 0;
    for (int did = 1; did;) {
      tarn_compact_range r;
      /* force: compact what is there, not only a range ready by size or age */
      if ((rc = tarn_compact_once(c, s.logs[p], 1, &r, &did)) < 0) {
        fprintf(stderr, "compact: partition %zu: %s\n", p, tarn_errmsg());
        status = 1;
        break;
      }
      if (did) {
        printf("partition %zu: offsets [%llu, %llu) -> %zu Parquet file(s) in %s\n", p,
               (unsigned long long)r.s, (unsigned long long)r.e, r.n_files, r.dir);
        tarn_compact_range_free(&r);
        ranges++;
      }
    }
    if (!ranges && !status)
      printf("partition %zu: nothing to compact\n", p);
  }
  tarn_compactor_close(c);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(cat);
  tarn_deployment_close(dep);
  tarn_deployment_config_free(&strs);
  return status;
}
