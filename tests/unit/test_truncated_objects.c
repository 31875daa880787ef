/* A truncated object reads back as an error, never as short data (#11 part 6).
 *
 * A WAL object on file:// is cut at every length below its size; a fresh
 * reader (no caches) reading each log from 0 must return every entry intact
 * or fail naming the object — never end early, never return other bytes. The
 * file store itself answers a read that finds a file shorter than it was when
 * opened with an error, and a read past the end with TARN_ERANGE. */
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tarn/error.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/writer.h"

enum { LOGS = 2, PER_LOG = 3 };

static const char *payload(int log, int i) {
  static char b[64];
  snprintf(b, sizeof b, "log %d entry %d %.*s", log, i, 10 * i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  return b;
}

/* Reads log from 0: the number of intact entries before the end, or -1 on an
 * error (whose message must name the object). Fails the test on wrong bytes. */
static int read_log(tarn_meta *m, tarn_objstore *wal, int log, const char *obj) {
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(m, wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, (uint64_t)log, 0, &it), 0);
  int n = 0, rc;
  tarn_entry e;
  while ((rc = tarn_log_iter_next(it, &e, 0)) == 0) {
    const char *want = payload(log, n);
    assert_int_equal(e.offset, (uint64_t)n);
    assert_int_equal(e.payload_len, strlen(want));
    assert_memory_equal(e.payload, want, e.payload_len);
    n++;
  }
  if (rc != TARN_EEND) {
    if (!strstr(tarn_errmsg(), obj))
      fail_msg("the error does not name %s: %s", obj, tarn_errmsg());
    n = -1;
  }
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  return n;
}

static void truncated_wal_objects_fail(void **state) {
  (void)state;
  char dir[] = "/tmp/tarn-trunc-XXXXXX", uri[64];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file://%s", dir);
  tarn_meta *m;
  tarn_objstore *wal;
  char muri[64];
  snprintf(muri, sizeof muri, "mem:trunc-%d", (int)getpid());
  assert_int_equal(tarn_meta_open(muri, &m), 0);
  assert_int_equal(tarn_objstore_open(uri, &wal), 0);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 60000;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(m, wal, &o, &w), 0);
  for (int i = 0; i < PER_LOG; i++)
    for (int l = 1; l <= LOGS; l++)
      assert_int_equal(
          tarn_writer_append(w, (uint64_t)l, payload(l, i), strlen(payload(l, i)), 1, NULL, NULL),
          0);
  assert_int_equal(tarn_writer_close(w), 0); /* one object */
  tarn_objstore_listing page = {0};
  assert_int_equal(tarn_objstore_list(wal, "", "", 10, &page), 0);
  assert_int_equal(page.n, 1);
  char obj[1100], path[1200];
  snprintf(obj, sizeof obj, "%s", page.names[0]);
  uint64_t size = page.sizes[0];
  tarn_objstore_listing_free(&page);
  snprintf(path, sizeof path, "%s/%s", dir, obj);
  tarn_buf whole = TARN_BUF_INIT;
  assert_int_equal(tarn_objstore_get(wal, obj, &whole), 0);
  assert_int_equal(whole.len, size);
  for (int l = 1; l <= LOGS; l++)
    assert_int_equal(read_log(m, wal, l, obj), PER_LOG);

  for (uint64_t cut = 0; cut < size; cut++) {
    assert_int_equal(truncate(path, (off_t)cut), 0);
    int failed = 0;
    for (int l = 1; l <= LOGS; l++) {
      int n = read_log(m, wal, l, obj);
      if (n != -1 && n != PER_LOG)
        fail_msg("cut at %llu of %llu: log %d read %d of %d entries and no error",
                 (unsigned long long)cut, (unsigned long long)size, l, n, PER_LOG);
      failed |= n == -1;
    }
    /* the cut removed bytes some log needs */
    assert_true(failed);
    /* restore */
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, whole.data, whole.len), (ssize_t)whole.len);
    close(fd);
  }

  /* Past the end: TARN_ERANGE; at the end: nothing. */
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_objstore_get_range(wal, obj, size + 1, 4, &b), TARN_ERANGE);
  assert_int_equal(tarn_objstore_get_range(wal, obj, size, 4, &b), 0);
  assert_int_equal(b.len, 0);
  tarn_buf_free(&b);
  tarn_buf_free(&whole);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(truncated_wal_objects_fail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
