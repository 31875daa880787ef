/* Issue 31 item 6: a writer whose metadata-store session ended and was
 * renewed (tarn serve's health job) appends again under a NEW lease of the
 * new session. Before, it kept the old session's lease, so every append to
 * a log it had written before failed until the process restarted. The old
 * lease record is never revived: after the renewal exactly one lease record
 * of the log exists, and it is not the old one. */
#include "testutil.h"
#include "tu_compact.h"

#include <stdio.h>
#include <string.h>

#include "tarn/key.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/writer.h"

/* The keys of log_id's lease records (one expected): the first in key. */
static size_t leases(tarn_meta *m, uint64_t log_id, char *key, size_t n) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_SLASH_MAX], b[TARN_KEY_SLASH_MAX + 2];
  assert_int_equal(tarn_key_partition(part, log_id), 0);
  assert_int_equal(tarn_key_lease_prefix(a, log_id), 0);
  snprintf(b, sizeof b, "%s\xff", a);
  tarn_meta_recs r = {0};
  assert_int_equal(tarn_meta_list(m, part, a, b, 0, 0, &r), 0);
  size_t c = r.n;
  if (c)
    snprintf(key, n, "%s", r.v[0].key);
  tarn_meta_recs_free(&r);
  return c;
}

static void append_after_renewal(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "renew", 0, 1, NULL);
  tarn_meta *m = E.m;
  uint64_t L = E.log;
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 5;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(m, E.wal, &o, &w), 0);
  uint64_t off = 99;
  assert_int_equal(tarn_writer_append_sync(w, L, "a", 1, 1, &off, NULL), 0);
  assert_int_equal(off, 0);
  char old[TARN_KEY_SLASH_MAX] = "", now[TARN_KEY_SLASH_MAX] = "";
  assert_int_equal(leases(m, L, old, sizeof old), 1);
  /* the session expires: nothing can be appended while it is ended */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  assert_int_not_equal(tarn_writer_append_sync(w, L, "b", 1, 1, &off, NULL), 0);
  assert_int_equal(leases(m, L, now, sizeof now), 0); /* the lease went with the session */
  /* renewed: a new session, and the next append takes a new lease */
  assert_int_equal(tarn_meta_session_renew(m), 0);
  assert_int_equal(tarn_writer_append_sync(w, L, "c", 1, 1, &off, NULL), 0);
  assert_int_equal(off, 1);
  assert_int_equal(leases(m, L, now, sizeof now), 1);
  assert_string_not_equal(now, old); /* never the old lease come back */
  /* a second loss and renewal: the same again */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  assert_int_equal(tarn_meta_session_renew(m), 0);
  assert_int_equal(tarn_writer_append_sync(w, L, "d", 1, 1, &off, NULL), 0);
  assert_int_equal(off, 2);
  assert_int_equal(tarn_writer_close(w), 0);
  assert_int_equal(leases(m, L, now, sizeof now), 0); /* close released the new one */
  tu_cenv_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(append_after_renewal)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
