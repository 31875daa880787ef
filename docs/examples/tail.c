/* Follow a stream's partition 0 as `tail -f` follows a file: print each new
 * entry as its index record commits (the reader waits on the metadata store's
 * change notification, not by polling).
 *
 *     cc tail.c $(pkg-config --cflags --libs tarn) -o tail
 *     ./tail /tmp/demo greetings [SECONDS]   # stops after SECONDS idle (default 10)
 */
#include <stdio.h>
#include <stdlib.h>

#include <tarn/tarn.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: tail HOME STREAM [IDLE_SECONDS]\n");
    return 2;
  }
  int idle_ms = (argc > 3 ? atoi(argv[3]) : 10) * 1000;
  tarn_deployment_config cfg = {.home = argv[1]};
  tarn_deployment_strings strs;
  tarn_deployment *dep;
  tarn_catalog *cat;
  tarn_reader *r;
  tarn_log_iter *it;
  tarn_catalog_record s;
  int rc;
  if ((rc = tarn_deployment_config_resolve(&cfg, &strs)) < 0 ||
      (rc = tarn_deployment_open(&cfg, 0, &dep)) < 0 ||
      (rc = tarn_catalog_open(tarn_deployment_meta(dep), NULL, &cat)) < 0 ||
      (rc = tarn_catalog_open_stream(cat, "default", argv[2], &s)) < 0) {
    fprintf(stderr, "tail: %s\n", tarn_errmsg());
    return 1;
  }
  if ((rc = tarn_reader_open(tarn_deployment_meta(dep), tarn_deployment_wal(dep),
                             tarn_deployment_compacted(dep), NULL, &r)) < 0 ||
      (rc = tarn_log_iter_open(r, s.logs[0], 0, &it)) < 0) {
    fprintf(stderr, "tail: %s\n", tarn_errmsg());
    return 1;
  }
  tarn_entry e;
  while ((rc = tarn_log_iter_next(it, &e, idle_ms)) == 0) {
    printf("%llu\t%.*s\n", (unsigned long long)e.offset, (int)e.payload_len,
           (const char *)e.payload);
    fflush(stdout);
  }
  int ok = rc == TARN_ETIMEDOUT; /* idle long enough: a normal end */
  if (!ok)
    fprintf(stderr, "tail: %s\n", tarn_errmsg());
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(cat);
  tarn_deployment_close(dep);
  tarn_deployment_config_free(&strs);
  return ok ? 0 : 1;
}
