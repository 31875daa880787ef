/* Changes of a log commit only under its lease's guards (docs/log.md,
 * "Guarded changes"). Reproductions of the durability issue #11 it holds:
 *   part 4  a writer whose session has ended keeps publishing into a deleted
 *           log (sqlite: another client judges the writer's session expired,
 *           tarn_log_delete drains the leases and deletes the records, and the
 *           writer's next append was acknowledged at offset 0 of the deleted
 *           log) — writer_after_deletion_publishes_nothing;
 *   part 4  sqlite: a session's life must not follow the wall clock (a step
 *           of it expired sessions or kept dead ones alive) —
 *           sqlite_heartbeat_from_the_future_is_expired.
 * Both fail on 4d5a889. */
#include "testutil.h"
#include "tu_log.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/writer.h"

/* LS-046, LS-048: the writer's heartbeat is made stale, as a stalled process
 * or a long wait on the database's lock leaves it, and the writer's own
 * heartbeat thread (every timeout/4 = 15 s) has not yet noticed. Another
 * client then judges the session expired and deletes the log; the writer's
 * next append must fail (not be unknown) and nothing may land in the log. */
static void writer_after_deletion_publishes_nothing(void **state) {
  (void)state;
  char *dir = tu_tmpdir("lguard");
  char db[600], wuri[700], duri[700], wal_uri[700];
  snprintf(db, sizeof db, "%s/meta.db", dir);
  snprintf(wuri, sizeof wuri, "sqlite:%s?session_timeout_ms=60000", db);
  snprintf(duri, sizeof duri, "sqlite:%s", db);
  snprintf(wal_uri, sizeof wal_uri, "file://%s/wal", dir);
  const uint64_t L = 77;
  tarn_meta *wm, *dm;
  tarn_objstore *wal;
  assert_int_equal(tarn_meta_open(wuri, &wm), 0);
  assert_int_equal(tarn_objstore_open(wal_uri, &wal), 0);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 5;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(wm, wal, &o, &w), 0);
  uint64_t off = 99;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(tarn_writer_append_sync(w, L, "early", 5, 1, &off, NULL), 0);
    assert_int_equal(off, (uint64_t)i);
  }

  /* the writer's session looks stalled to every other client */
  sqlite3 *raw;
  assert_int_equal(sqlite3_open_v2(db, &raw, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  sqlite3_busy_timeout(raw, 10000);
  assert_int_equal(
      sqlite3_exec(raw, "UPDATE sessions SET heartbeat = heartbeat - 600000", NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(raw);

  assert_int_equal(tarn_meta_open(duri, &dm), 0);
  tarn_catalog_options co = {.drain_timeout_ms = 5000, .drain_poll_ms = 10};
  size_t removed = 0;
  int rc = tarn_log_delete(dm, L, &co, &removed);
  if (rc)
    fail_msg("tarn_log_delete: %s", tarn_errmsg());
  assert_int_equal(removed, 3);

  /* the next append is not acknowledged, and it is failed, not unknown */
  off = 99;
  rc = tarn_writer_append_sync(w, L, "late", 4, 1, &off, NULL);
  if (rc == 0)
    fail_msg("an append after the deletion was acknowledged at offset %llu of the deleted log",
             (unsigned long long)off);
  assert_int_not_equal(rc, TARN_EUNKNOWN);
  /* nothing landed in the deleted log */
  assert_int_equal(tu_count_index(dm, L), 0);
  tarn_writer_stats st;
  tarn_writer_stats_get(w, &st);
  assert_int_equal(st.entries_unknown, 0);
  tarn_writer_close(w);
  assert_int_equal(tu_count_index(dm, L), 0);
  tarn_objstore_close(wal);
  tarn_meta_close(wm);
  tarn_meta_close(dm);
  tu_rmtree(dir);
  free(dir);
}

/* #11 part 4, sqlite: a session must not depend on the wall clock (a step
 * of it expired every session at once, or kept dead ones alive): heartbeats
 * are on CLOCK_MONOTONIC, and one more than a timeout ahead of that clock (a
 * row from before a reboot, or a wall-clock heartbeat) is expired. */
static void sqlite_heartbeat_from_the_future_is_expired(void **state) {
  (void)state;
  char *dir = tu_tmpdir("lfuture");
  char db[600], uri[700];
  snprintf(db, sizeof db, "%s/meta.db", dir);
  snprintf(uri, sizeof uri, "sqlite:%s?session_timeout_ms=60000", db);
  tarn_meta *a, *b;
  assert_int_equal(tarn_meta_open(uri, &a), 0);
  assert_int_equal(tarn_meta_create(a, "p", "/e", "x", 1, TARN_META_EPHEMERAL, NULL), 0);
  assert_int_equal(tarn_meta_open(uri, &b), 0);
  tarn_meta_rec r;
  assert_int_equal(tarn_meta_get(b, "p", "/e", &r), 0);
  tarn_meta_rec_free(&r);
  sqlite3 *raw;
  assert_int_equal(sqlite3_open_v2(db, &raw, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  sqlite3_busy_timeout(raw, 10000);
  /* a fresh heartbeat by the wall clock: by the session clock far ahead */
  assert_int_equal(sqlite3_exec(raw,
                                "UPDATE sessions SET heartbeat ="
                                " CAST(strftime('%s', 'now') AS INTEGER) * 1000",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(raw);
  assert_int_equal(tarn_meta_get(b, "p", "/e", &r), TARN_ENOTFOUND);
  tarn_meta_close(b);
  tarn_meta_close(a);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(writer_after_deletion_publishes_nothing),
      cmocka_unit_test(sqlite_heartbeat_from_the_future_is_expired),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
