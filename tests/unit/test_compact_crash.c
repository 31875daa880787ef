/* Crashes: a compactor process SIGKILLed after C2, after C3, after C4 (before
 * C5) and at random points, 10 times each; after each, another compactor
 * finishes (LS-078) and every entry reads the same, the index records
 * adjacent and disjoint. sqlite: and file:// stores, shared by processes. */
#include "testutil.h"
#include "tu_compact.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tarn/compactor.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"

#define ROUNDS 10

/* Index records of log above 0: each starts where the one before ends. */
static void assert_adjacent(tu_cenv *e, uint64_t log) {
  char part[32], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log);
  tarn_key_format(a, log, 0, 0);
  tarn_key_format(b, log, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_scan(e->m, part, a, b, 0, 0, &rs), 0);
  uint64_t prev = 0;
  for (size_t i = 0; i < rs.n; i++) {
    tarn_key k;
    assert_int_equal(tarn_key_parse(rs.v[i].key, TARN_KEY_LEN, &k), 0);
    tarn_entry_index ei;
    assert_int_equal(tarn_entry_index_decode(rs.v[i].value, rs.v[i].value_len, &ei), 0);
    assert_int_equal(k.end_offset - (uint64_t)ei.message_count, prev);
    prev = k.end_offset;
    tarn_entry_index_free(&ei);
  }
  tarn_meta_recs_free(&rs);
}

/* A child whose session ended under it (a late heartbeat on a loaded
 * machine) dies as if killed there; any other failure is an exit code. */
#define DIE(code)                                                                                  \
  do {                                                                                             \
    if (tarn_meta_session_ok(m))                                                                   \
      raise(SIGKILL);                                                                              \
    _exit(code);                                                                                   \
  } while (0)

static void child(tu_cenv *e, int point, unsigned seed) {
  char uri[400];
  snprintf(uri, sizeof uri, "%s?session_timeout_ms=300", e->meta_uri);
  tarn_meta *m;
  tarn_objstore *wal, *cs;
  if (tarn_meta_open(uri, &m) || tarn_objstore_open(e->wal_uri, &wal) ||
      tarn_objstore_open(e->compacted_uri, &cs))
    _exit(3);
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  o.max_file_bytes = 1000;
  tarn_compactor *c;
  tarn_compactor_open(m, wal, cs, &o, &c);
  if (point == 3) { /* random: the parent kills us somewhere in here */
    for (;;)
      tarn_compact_once(c, e->log, 1, NULL, NULL);
  }
  (void)seed;
  tarn_compact_lock *lk;
  tarn_compact_range r;
  if (tarn_compact_lock_acquire(m, e->log, "crash", &lk) || tarn_compact_repair(c, e->log, NULL))
    DIE(4);
  int rc = tarn_compact_plan(c, e->log, 1, &r);
  if (rc == TARN_ENOTFOUND)
    raise(SIGKILL);
  if (rc || tarn_compact_write(c, &r))
    DIE(5);
  if (point >= 1) { /* C3 */
    tarn_buf v = TARN_BUF_INIT;
    char part[32], k[TARN_KEY_LEN + 1], a[TARN_KEY_LEN + 1], z[TARN_KEY_LEN + 1];
    tarn_key_partition(part, e->log);
    tarn_key_format(k, e->log, r.e, r.c_e);
    if (tarn_compact_value(&r, &v) || tarn_meta_put(m, part, k, v.data, v.len, NULL))
      DIE(6);
    if (point == 2) { /* C4 */
      tarn_key_format(a, e->log, r.s + 1, 0);
      tarn_key_format(z, e->log, r.e - 1, TARN_KEY_MAX);
      if (tarn_meta_delete_range(m, part, a, z, NULL))
        DIE(7);
    }
  }
  raise(SIGKILL);
  _exit(8);
}

static void crash_rounds(int point) {
  tu_cenv E;
  tu_cenv_open(&E, "crashc", 1, 1, NULL);
  uint64_t appended = 0, seed = 7;
  tarn_compactor *c;
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &o, &c), 0);
  for (int round = 0; round < ROUNDS; round++) {
    tu_append(&E, E.log, appended, 12, 4);
    appended += 12;
    tu_snap before;
    tu_snapshot(&E, E.log, &before);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
      child(&E, point, (unsigned)round);
    if (point == 3) {
      struct timespec ts = {0, (long)(tu_rand(&seed) % 40000) * 1000L};
      nanosleep(&ts, NULL);
      kill(pid, SIGKILL);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* entries read the same right after the crash, whatever it left: every
     * installed record's files were complete before its C3 (LS-069) */
    tu_snap mid;
    tu_snapshot(&E, E.log, &mid);
    assert_int_equal(mid.n, before.n);
    tu_snap_assert_same(&before, &mid);
    tu_snap_free(&mid);
    /* another compactor finishes, once the dead one's lock has gone */
    int rc = TARN_EEXIST;
    for (int i = 0; i < 2000 && rc == TARN_EEXIST; i++) { /* up to ~20 s on a loaded machine */
      rc = tarn_compact_once(c, E.log, 1, NULL, NULL);
      if (rc == TARN_EEXIST)
        usleep(10000);
    }
    if (rc)
      fail_msg("round %d: %s", round, tarn_errmsg());
    int did = 1;
    while (did)
      assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, &did), 0);
    assert_adjacent(&E, E.log);
    tarn_compact_lag lag;
    assert_int_equal(tarn_compact_lag_read(E.m, E.log, 0, &lag), 0);
    assert_int_equal(lag.raw_records, 0);
    tu_snap after;
    tu_snapshot(&E, E.log, &after);
    assert_int_equal(after.n, before.n);
    tu_snap_assert_same(&before, &after);
    tu_snap_free(&after);
    tu_snap_free(&before);
  }
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

static void kill_after_c2(void **state) {
  (void)state;
  crash_rounds(0);
}
static void kill_after_c3(void **state) {
  (void)state;
  crash_rounds(1);
}
static void kill_after_c4(void **state) {
  (void)state;
  crash_rounds(2);
}
static void kill_at_random(void **state) {
  (void)state;
  crash_rounds(3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(kill_after_c2),
      cmocka_unit_test(kill_after_c3),
      cmocka_unit_test(kill_after_c4),
      cmocka_unit_test(kill_at_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
