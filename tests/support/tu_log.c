#include "tu_log.h"

#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "tarn/buf.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "testutil.h"

int tu_publish(tarn_meta *m, uint64_t log_id, uint32_t n, uint32_t size, uint64_t *end_out) {
  char part[32], prefix[TARN_KEY_PREFIX_LEN + 1];
  tarn_key_partition(part, log_id);
  tarn_key_prefix(prefix, log_id);
  prefix[TARN_KEY_PREFIX_LEN - 1] = 0; /* without the '-' */
  uint32_t bound = n;
  tarn_raw_record r = {.location = "2026/01/01/test.wal",
                       .message_count = n,
                       .entry_size_bytes = size,
                       .file_size = size,
                       .boundaries = &bound,
                       .entry_count = 1};
  tarn_buf b = TARN_BUF_INIT;
  int rc = tarn_entry_index_build_raw(&r, &b);
  tarn_meta_rec out = {0};
  if (!rc)
    rc = tarn_meta_sequenced_put(m, part, prefix, n, size, b.data, b.len, &out);
  tarn_buf_free(&b);
  if (!rc && end_out) {
    tarn_key k;
    rc = tarn_key_parse(out.key, strlen(out.key), &k);
    *end_out = k.end_offset;
  }
  tarn_meta_rec_free(&out);
  return rc;
}

size_t tu_count_index(tarn_meta *m, uint64_t log_id) {
  char part[32], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log_id);
  tarn_key_format(a, log_id, 0, 0);
  tarn_key_format(b, log_id, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_recs r = {0};
  assert_int_equal(tarn_meta_list(m, part, a, b, 0, 0, &r), 0);
  size_t n = r.n;
  tarn_meta_recs_free(&r);
  return n;
}

tarn_meta *tu_meta_open(const char *backend, char **uri) {
  static int seq;
  char buf[512];
  if (strcmp(backend, "sqlite") == 0) {
    char *dir = tu_tmpdir("meta");
    snprintf(buf, sizeof buf, "sqlite:%s/meta.db", dir);
    free(dir);
  } else if (strcmp(backend, "etcd") == 0) {
    const char *ep = tu_env_required("TARN_TEST_ETCD");
    if (!ep) {
      print_message("TARN_TEST_ETCD not set: skipped\n");
      skip();
    }
    /* an empty store: a root of its own (etcd keeps earlier runs' records) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, sizeof buf, "etcd://%s?prefix=tarn-test/tu-%lld%09ld-%d-%d", ep,
             (long long)ts.tv_sec, ts.tv_nsec, (int)getpid(), ++seq);
  } else {
    snprintf(buf, sizeof buf, "mem:tu%d-%d", (int)getpid(), ++seq);
  }
  *uri = strdup(buf);
  tarn_meta *m = NULL;
  assert_int_equal(tarn_meta_open(*uri, &m), 0);
  return m;
}

void tu_meta_done(tarn_meta *m, char *uri) {
  tarn_meta_close(m);
  if (strncmp(uri, "sqlite:", 7) == 0) {
    char *dir = strdup(uri + 7);
    char *slash = strrchr(dir, '/');
    *slash = 0;
    tu_rmtree(dir);
    free(dir);
  }
  free(uri);
}

tu_catalog_fx tu_catalog_fx_open(const char *backend, int drain_ms) {
  tu_catalog_fx f;
  f.m = tu_meta_open(backend, &f.uri);
  tarn_catalog_options o = {.drain_timeout_ms = drain_ms, .drain_poll_ms = 5};
  assert_int_equal(tarn_catalog_open(f.m, &o, &f.c), 0);
  assert_int_equal(tarn_catalog_init(f.c, NULL), 0);
  return f;
}

void tu_catalog_fx_close(tu_catalog_fx *f) {
  tarn_catalog_close(f->c);
  tu_meta_done(f->m, f->uri);
}
