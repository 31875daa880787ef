/* Append three records to a stream and read the log back: deployment →
 * catalog → writer → reader, on the embedded default (a directory).
 *
 *     cc append_read.c $(pkg-config --cflags --libs tarn) -o append_read
 *     ./append_read /tmp/demo          # creates /tmp/demo on first use
 */
#include <stdio.h>
#include <string.h>

#include <tarn/tarn.h>

static int fail(const char *what, int rc) {
  fprintf(stderr, "append_read: %s: %s\n", what, tarn_errmsg());
  return rc < 0 ? 1 : rc;
}

int main(int argc, char **argv) {
  tarn_deployment_config cfg = {.home = argc > 1 ? argv[1] : "tarn-demo"};
  tarn_deployment_strings strs;
  tarn_deployment *dep = NULL;
  tarn_catalog *cat = NULL;
  tarn_writer *w = NULL;
  tarn_reader *r = NULL;
  tarn_log_iter *it = NULL;
  tarn_catalog_record s = {0};
  int rc;

  printf("libtarn %s\n", tarn_version());
  if ((rc = tarn_deployment_config_resolve(&cfg, &strs)) < 0)
    return fail("config", rc);
  if ((rc = tarn_deployment_open(&cfg, 1, &dep)) < 0)
    return fail("open", rc);
  if ((rc = tarn_catalog_open(tarn_deployment_meta(dep), NULL, &cat)) < 0)
    return fail("catalog", rc);
  if ((rc = tarn_catalog_init(cat, NULL)) < 0)
    return fail("init", rc);
  rc = tarn_catalog_create_stream(cat, "default", "greetings", 1, NULL, 0, &s);
  if (rc == TARN_EEXIST)
    rc = tarn_catalog_open_stream(cat, "default", "greetings", &s);
  if (rc < 0)
    return fail("stream", rc);
  uint64_t log = s.logs[0];

  if ((rc = tarn_writer_open(tarn_deployment_meta(dep), tarn_deployment_wal(dep), NULL, &w)) < 0)
    return fail("writer", rc);
  const char *words[] = {"hello", "from", "libtarn"};
  uint64_t first = 0;
  for (int i = 0; i < 3; i++) {
    uint64_t off;
    if ((rc = tarn_writer_append_sync(w, log, words[i], strlen(words[i]), 1, &off, NULL)) < 0)
      return fail("append", rc);
    if (i == 0)
      first = off;
    printf("appended %-8s at offset %llu\n", words[i], (unsigned long long)off);
  }
  if ((rc = tarn_writer_close(w)) < 0)
    return fail("close", rc);

  if ((rc = tarn_reader_open(tarn_deployment_meta(dep), tarn_deployment_wal(dep),
                             tarn_deployment_compacted(dep), NULL, &r)) < 0)
    return fail("reader", rc);
  if ((rc = tarn_log_iter_open(r, log, first, &it)) < 0)
    return fail("iter", rc);
  tarn_entry e;
  int n = 0;
  while ((rc = tarn_log_iter_next(it, &e, 0)) == 0) {
    printf("read offset %llu: %.*s\n", (unsigned long long)e.offset, (int)e.payload_len,
           (const char *)e.payload);
    n++;
  }
  if (rc != TARN_EEND)
    return fail("read", rc);
  printf("%d entries read\n", n);

  tarn_log_iter_close(it);
  tarn_reader_close(r);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(cat);
  tarn_deployment_close(dep);
  tarn_deployment_config_free(&strs);
  return n >= 3 ? 0 : 1;
}
