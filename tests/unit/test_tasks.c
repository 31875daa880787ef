/* Compaction tasks: MutualExclusion, NoDoubleExecution, DLQOnlyAfterMaxFailures,
 * CrashRecovery (a SIGKILLed worker), several workers converging.
 * Reproductions of issue #11 part 6 (they fail on 4d5a889): tarn_tasks_work's
 * stop flag was a plain int read by the workers while the caller wrote it (a
 * data race ThreadSanitizer reports in work_loop); a failed pthread_create
 * was ignored and the unstarted thread joined (work_without_threads).
 * Found by tarn-sim (fails before task writes were guarded by the claim's
 * lock): a zombie holder's task write took effect (zombie_holder_changes_nothing). */
#include "testutil.h"
#include "tu_compact.h"
#include "tu_log.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tarn/compactor.h"
#include "tarn/entryindex.h"
#include "tarn/fileindex.h"
#include "tarn/key.h"
#include "tarn/tasks.h"
#include "tarn/testing.h"
#include "util/clock.h"

static int task_state(tarn_meta *m, uint64_t log, tarn_task *out) {
  tarn_task *v;
  size_t n;
  assert_int_equal(tarn_tasks_list(m, &v, &n), 0);
  int st = -1;
  for (size_t i = 0; i < n; i++)
    if (v[i].log_id == log) {
      st = v[i].state;
      if (out) {
        *out = v[i];
        memset(&v[i], 0, sizeof v[i]);
      }
    }
  tarn_tasks_free(v, n);
  return st;
}

/* Files referenced by PARQUET records of a log. */
static size_t referenced_files(tu_cenv *e, uint64_t log) {
  char part[32], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log);
  tarn_key_format(a, log, 0, 0);
  tarn_key_format(b, log, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_scan(e->m, part, a, b, 0, 0, &rs), 0);
  size_t n = 0;
  for (size_t i = 0; i < rs.n; i++) {
    tarn_entry_index ei;
    assert_int_equal(tarn_entry_index_decode(rs.v[i].value, rs.v[i].value_len, &ei), 0);
    if (ei.file_type == TARN_FILE_PARQUET) {
      tarn_file_index fi;
      assert_int_equal(tarn_file_index_decode_base64(ei.file_index, strlen(ei.file_index), &fi), 0);
      n += fi.n;
      tarn_file_index_free(&fi);
    }
    tarn_entry_index_free(&ei);
  }
  tarn_meta_recs_free(&rs);
  return n;
}

static size_t parquet_files(tu_cenv *e) {
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(e->compacted, "", NULL, 100000, &l), 0);
  size_t n = 0;
  for (size_t i = 0; i < l.n; i++)
    n += strstr(l.names[i], ".parquet") != NULL;
  tarn_objstore_listing_free(&l);
  return n;
}

/* MutualExclusion: a claimed task cannot be claimed by another worker until
 * released; two tasks go to two workers. */
static void mutual_exclusion(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "mx", 0, 2, NULL);
  tu_append(&E, E.logs[0], 0, 10, 5);
  tu_append(&E, E.logs[1], 0, 10, 5);
  tarn_meta *m2;
  assert_int_equal(tarn_meta_open(E.meta_uri, &m2), 0);
  tarn_compactor *c = tu_compactor_sized(&E, E.m, 1500, 0);
  size_t created;
  assert_int_equal(tarn_tasks_plan(c, NULL, 1, &created), 0);
  assert_int_equal(created, 2);
  assert_int_equal(tarn_tasks_plan(c, NULL, 1, &created), 0);
  assert_int_equal(created, 0); /* one open task per log */
  tarn_compact_lock *l1, *l2, *l3;
  tarn_task t1, t2, t3;
  assert_int_equal(tarn_tasks_claim(E.m, NULL, &l1, &t1), 0);
  assert_int_equal(tarn_tasks_claim(m2, NULL, &l2, &t2), 0);
  assert_true(t1.log_id != t2.log_id);
  assert_int_equal(tarn_tasks_claim(m2, NULL, &l3, &t3), TARN_ENOTFOUND);
  tarn_task_free(&t2);
  assert_int_equal(tarn_compact_lock_release(l2), 0);
  assert_int_equal(tarn_tasks_claim(m2, NULL, &l3, &t3), 0);
  assert_true(t3.log_id != t1.log_id);
  tarn_task_free(&t1);
  tarn_task_free(&t3);
  tarn_compact_lock_release(l1);
  tarn_compact_lock_release(l3);
  tarn_compactor_close(c);
  tarn_meta_close(m2);
  tu_cenv_close(&E);
}

/* NoOrphanExecution: a holder whose session ended at the store (its lock
 * vanished with it) while it runs on, not yet told, changes nothing in the
 * task record: its step fails, the record keeps its state and version, and
 * the next holder finishes the task. Before task writes were guarded by the
 * claim's lock record the zombie's INIT -> PREPARED CompareAndSet committed
 * (tarn-sim seed 12: the write of a holder without a lock took effect). */
static void zombie_holder_changes_nothing(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "zombie", 0, 1, NULL);
  tu_append(&E, E.logs[0], 0, 10, 5);
  tarn_meta *mz;
  assert_int_equal(tarn_meta_open(E.meta_uri, &mz), 0);
  tarn_compactor *c = tu_compactor_sized(&E, E.m, 1500, 0),
                 *cz = tu_compactor_sized(&E, mz, 1500, 0);
  size_t created;
  assert_int_equal(tarn_tasks_plan(c, NULL, 1, &created), 0);
  assert_int_equal(created, 1);
  tarn_compact_lock *lz, *l;
  tarn_task tz, t, rec;
  assert_int_equal(tarn_tasks_claim(mz, NULL, &lz, &tz), 0);
  assert_int_equal(task_state(E.m, E.logs[0], &rec), TARN_TASK_INIT);
  int64_t v0 = rec.version;
  tarn_task_free(&rec);
  /* the store ends the zombie's session; the zombie is not told */
  assert_int_equal(tarn_meta_inject_fault(mz, TARN_META_FAULT_EXPIRE_SILENT, 0), 0);
  assert_int_equal(tarn_meta_session_ok(mz), 0);
  assert_int_not_equal(tarn_tasks_step(cz, NULL, &tz), 0);
  assert_int_equal(task_state(E.m, E.logs[0], &rec), TARN_TASK_INIT);
  assert_int_equal(rec.version, v0);
  assert_int_equal(rec.failures, 0);
  tarn_task_free(&rec);
  /* the lock went with the session: another worker claims and finishes it */
  assert_int_equal(tarn_tasks_claim(E.m, NULL, &l, &t), 0);
  /* ... and while it holds the new lock the zombie's write still fails: the
   * guard is the zombie's own lock record, not any lock of the log */
  assert_int_not_equal(tarn_tasks_step(cz, NULL, &tz), 0);
  assert_int_equal(task_state(E.m, E.logs[0], &rec), TARN_TASK_INIT);
  assert_int_equal(rec.version, v0);
  tarn_task_free(&rec);
  while (t.state == TARN_TASK_INIT || t.state == TARN_TASK_PREPARED)
    assert_int_equal(tarn_tasks_step(c, NULL, &t), 0);
  assert_int_equal(t.state, TARN_TASK_COMMITTED);
  assert_int_equal(task_state(E.m, E.logs[0], NULL), TARN_TASK_COMMITTED);
  /* the zombie's later writes change nothing either */
  assert_int_not_equal(tarn_tasks_step(cz, NULL, &tz), 0);
  assert_int_equal(task_state(E.m, E.logs[0], NULL), TARN_TASK_COMMITTED);
  tarn_task_free(&t);
  tarn_task_free(&tz);
  tarn_compact_lock_release(l);
  tarn_compact_lock_release(lz);
  tarn_compactor_close(cz);
  tarn_compactor_close(c);
  tarn_meta_close(mz);
  tu_cenv_close(&E);
}

/* A deployment with one log of ten entries and its task planned (INIT); the
 * compactor that planned it. */
static tarn_compactor *one_planned_task(tu_cenv *E, const char *tag) {
  tu_cenv_open(E, tag, 0, 1, NULL);
  tu_append(E, E->logs[0], 0, 10, 5);
  tarn_compactor *c = tu_compactor_sized(E, E->m, 1500, 0);
  assert_int_equal(tarn_tasks_plan(c, NULL, 1, NULL), 0);
  return c;
}

/* NoDoubleExecution: a task left PREPARED by a holder that gave up (a failed
 * install, a crash) is claimed as PREPARED and resumes at C3 with the files
 * its C2 wrote; its C2 is not run a second time. */
static void claim_resumes_prepared(void **state) {
  (void)state;
  tu_cenv E;
  tarn_compactor *c = one_planned_task(&E, "resume");
  tarn_compact_lock *l;
  tarn_task t;
  assert_int_equal(tarn_tasks_claim(E.m, NULL, &l, &t), 0);
  assert_int_equal(tarn_tasks_step(c, NULL, &t), 0);
  assert_int_equal(t.state, TARN_TASK_PREPARED);
  size_t files = parquet_files(&E);
  assert_true(files > 0);
  tarn_task_free(&t);
  assert_int_equal(tarn_compact_lock_release(l), 0);
  assert_int_equal(tarn_tasks_claim(E.m, NULL, &l, &t), 0);
  assert_int_equal(t.state, TARN_TASK_PREPARED);
  assert_int_equal(tarn_tasks_step(c, NULL, &t), 0);
  assert_int_equal(t.state, TARN_TASK_COMMITTED);
  assert_int_equal(parquet_files(&E), files); /* no second C2 */
  assert_int_equal(referenced_files(&E, E.logs[0]), files);
  assert_int_equal(task_state(E.m, E.logs[0], NULL), TARN_TASK_COMMITTED);
  tarn_task_free(&t);
  tarn_compact_lock_release(l);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* TaskCompletion: a task whose range was compacted outside the tasks after it
 * was planned (its records replaced) ends COMMITTED and stale at its C2
 * (ECONFLICT, LS-075); left INIT it would be claimed and conflict forever. */
static void stale_range_ends_committed(void **state) {
  (void)state;
  tu_cenv E;
  tarn_compactor *c = one_planned_task(&E, "stale");
  int did = 0;
  assert_int_equal(tarn_compact_once(c, E.logs[0], 1, NULL, &did), 0);
  assert_int_equal(did, 1);
  tarn_compact_lock *l;
  tarn_task t;
  assert_int_equal(tarn_tasks_claim(E.m, NULL, &l, &t), 0);
  assert_int_equal(tarn_tasks_step(c, NULL, &t), 0);
  assert_int_equal(t.state, TARN_TASK_COMMITTED);
  assert_true(t.stale);
  tarn_task rec;
  assert_int_equal(task_state(E.m, E.logs[0], &rec), TARN_TASK_COMMITTED);
  assert_true(rec.stale);
  tarn_task_free(&rec);
  tarn_task_free(&t);
  tarn_compact_lock_release(l);
  tarn_task t2;
  assert_int_equal(tarn_tasks_claim(E.m, NULL, &l, &t2), TARN_ENOTFOUND);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

/* DLQOnlyAfterMaxFailures: a task whose C2 keeps failing stays INIT with its
 * failures counted until the maximum, then is DEAD with its error; the
 * planner leaves it; a retry re-opens it. */
static void dlq_after_max_failures(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "dlq", 0, 1, NULL);
  tu_append(&E, E.log, 0, 10, 5);
  tarn_compactor *c = tu_compactor_sized(&E, E.m, 1500, 0);
  tarn_tasks_options o;
  tarn_tasks_options_default(&o);
  o.max_failures = 3;
  assert_int_equal(tarn_tasks_plan(c, &o, 1, NULL), 0);
  /* remove a WAL object: C2 cannot read it */
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(E.wal, "", NULL, 10, &l), 0);
  assert_true(l.n >= 1);
  tarn_buf keep = TARN_BUF_INIT;
  assert_int_equal(tarn_objstore_get(E.wal, l.names[0], &keep), 0);
  assert_int_equal(tarn_objstore_delete(E.wal, l.names[0]), 0);
  for (uint32_t i = 1; i <= 3; i++) {
    int ran;
    assert_true(tarn_tasks_run_one(c, &o, &ran) < 0);
    assert_int_equal(ran, 1);
    tarn_task t;
    int st = task_state(E.m, E.log, &t);
    assert_int_equal(t.failures, i);
    assert_non_null(t.error);
    assert_int_equal(st, i < 3 ? TARN_TASK_INIT : TARN_TASK_DEAD);
    tarn_task_free(&t);
  }
  int ran;
  assert_int_equal(tarn_tasks_run_one(c, &o, &ran), 0);
  assert_int_equal(ran, 0); /* DEAD is not claimed */
  assert_int_equal(tarn_tasks_plan(c, &o, 1, NULL), 0);
  assert_int_equal(task_state(E.m, E.log, NULL), TARN_TASK_DEAD);
  /* put the object back, retry: it completes */
  assert_int_equal(tarn_objstore_put(E.wal, l.names[0], keep.data, keep.len), 0);
  assert_int_equal(tarn_tasks_retry(E.m, E.log), 0);
  assert_int_equal(tarn_tasks_run_one(c, &o, &ran), 0);
  assert_int_equal(task_state(E.m, E.log, NULL), TARN_TASK_COMMITTED);
  assert_int_equal(tu_count_index(E.m, E.log), 1);
  tarn_buf_free(&keep);
  tarn_objstore_listing_free(&l);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

typedef struct wk {
  tu_cenv *e;
  atomic_int *stop;
  int errors, ran;
} wk;

static void *worker_main(void *p) {
  wk *w = p;
  tarn_meta *m;
  assert_int_equal(tarn_meta_open(w->e->meta_uri, &m), 0);
  tarn_compactor *c = tu_compactor_sized(w->e, m, 1500, 1500);
  while (!atomic_load(w->stop)) {
    int ran = 0;
    if (tarn_tasks_plan(c, NULL, 1, NULL))
      w->errors++;
    if (tarn_tasks_run_one(c, NULL, &ran)) {
      fprintf(stderr, "worker: %s\n", tarn_errmsg());
      w->errors++;
    }
    w->ran += ran;
    if (!ran)
      usleep(1000);
  }
  tarn_compactor_close(c);
  tarn_meta_close(m);
  return NULL;
}

static int all_compacted(tu_cenv *e) {
  for (size_t i = 0; i < e->n_logs; i++) {
    tarn_compact_lag lag;
    assert_int_equal(tarn_compact_lag_read(e->m, e->logs[i], 0, &lag), 0);
    if (lag.raw_records)
      return 0;
    int st = task_state(e->m, e->logs[i], NULL);
    if (st == TARN_TASK_INIT || st == TARN_TASK_PREPARED)
      return 0;
  }
  return 1;
}

/* NoDoubleExecution and convergence with 2 and 3 workers: every log ends
 * fully compacted, reads the same, and no task wrote its files twice (every
 * Parquet file in the root is named by an index record). */
static void workers_converge(int nworkers) {
  tu_cenv E;
  tu_cenv_open(&E, "conv", 0, 4, NULL);
  tu_snap before[4];
  for (size_t i = 0; i < E.n_logs; i++) {
    tu_append(&E, E.logs[i], 0, 40, 5);
    tu_snapshot(&E, E.logs[i], &before[i]);
  }
  atomic_int stop;
  atomic_init(&stop, 0);
  wk w[3];
  pthread_t th[3];
  for (int i = 0; i < nworkers; i++) {
    w[i] = (wk){&E, &stop, 0, 0};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < 2000 && !all_compacted(&E); i++)
    usleep(5000);
  atomic_store(&stop, 1);
  int ran = 0;
  for (int i = 0; i < nworkers; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(w[i].errors, 0);
    ran += w[i].ran;
  }
  assert_true(all_compacted(&E));
  assert_true(ran >= 8);
  size_t ref = 0;
  for (size_t i = 0; i < E.n_logs; i++) {
    tu_snap after;
    tu_snapshot(&E, E.logs[i], &after);
    assert_int_equal(after.n, before[i].n);
    tu_snap_assert_same(&before[i], &after);
    tu_snap_free(&after);
    tu_snap_free(&before[i]);
    ref += referenced_files(&E, E.logs[i]);
  }
  assert_int_equal(parquet_files(&E), ref);
  tu_cenv_close(&E);
}

static void two_workers(void **state) {
  (void)state;
  workers_converge(2);
}
static void three_workers(void **state) {
  (void)state;
  workers_converge(3);
}

typedef struct workarg {
  tarn_compactor *c;
  atomic_int stop;
} workarg;

static void *work_thread(void *p) {
  workarg *a = p;
  tarn_tasks_work(a->c, NULL, 2, 2, &a->stop);
  return NULL;
}

/* tarn_tasks_work: two threads plan (by age, with a clock that says every
 * entry is old) and run tasks until every log is compacted. */
static int64_t late_clock(void *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 3600000;
}

static void work_loop(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "work", 0, 3, NULL);
  for (size_t i = 0; i < E.n_logs; i++)
    tu_append(&E, E.logs[i], 0, 20, 5);
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  o.max_range_bytes = 2000;
  /* the wall clock only: sessions and sleeps keep real time */
  tarn__clock_hooks h = {.now_ms = late_clock};
  tarn__clock_set(&h);
  workarg a = {NULL, 0};
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &o, &a.c), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, work_thread, &a), 0);
  for (int i = 0; i < 2000 && !all_compacted(&E); i++)
    usleep(5000);
  atomic_store(&a.stop, 1);
  pthread_join(th, NULL);
  tarn__clock_set(NULL);
  assert_true(all_compacted(&E));
  tarn_compactor_close(a.c);
  tu_cenv_close(&E);
}

/* CrashRecovery: a worker process holding a task is SIGKILLed after C2 (task
 * PREPARED) or after C3 (the PARQUET record put, C4 not done); its lock goes
 * with its session and another worker finishes the task from its state. */
static void crash_recovery_at(int point) {
  tu_cenv E;
  tu_cenv_open(&E, "crash", 1, 1, NULL);
  tu_append(&E, E.log, 0, 30, 5);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  tarn_compactor *c = tu_compactor_sized(&E, E.m, 1500, 0);
  assert_int_equal(tarn_tasks_plan(c, NULL, 1, NULL), 0);
  tarn_compactor_close(c);
  char uri[400];
  snprintf(uri, sizeof uri, "%s?session_timeout_ms=300", E.meta_uri);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    tarn_meta *m;
    if (tarn_meta_open(uri, &m))
      _exit(3);
    tarn_objstore *wal, *cs;
    if (tarn_objstore_open(E.wal_uri, &wal) || tarn_objstore_open(E.compacted_uri, &cs))
      _exit(3);
    tarn_compactor *cc;
    tarn_compactor_open(m, wal, cs, NULL, &cc);
    tarn_compact_lock *lk;
    tarn_task t;
    if (tarn_tasks_claim(m, NULL, &lk, &t) || tarn_tasks_step(cc, NULL, &t))
      _exit(4);
    if (point == 1) { /* C3 alone */
      tarn_buf v = TARN_BUF_INIT;
      char part[32], k[TARN_KEY_LEN + 1];
      tarn_key_partition(part, t.log_id);
      tarn_key_format(k, t.log_id, t.range.e, t.range.c_e);
      if (tarn_compact_value(&t.range, &v) || tarn_meta_put(m, part, k, v.data, v.len, NULL))
        _exit(5);
    }
    raise(SIGKILL);
    _exit(6);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  assert_int_equal(task_state(E.m, E.log, NULL), TARN_TASK_PREPARED);
  c = tu_compactor_sized(&E, E.m, 1500, 0);
  int ran = 0;
  for (int i = 0; i < 400 && !ran; i++) { /* until the dead session's lock expires */
    assert_int_equal(tarn_tasks_run_one(c, NULL, &ran), 0);
    if (!ran)
      usleep(10000);
  }
  assert_int_equal(ran, 1);
  assert_int_equal(task_state(E.m, E.log, NULL), TARN_TASK_COMMITTED);
  assert_int_equal(tu_count_index(E.m, E.log), 1);
  tu_snap after;
  tu_snapshot(&E, E.log, &after);
  assert_int_equal(after.n, before.n);
  tu_snap_assert_same(&before, &after);
  tu_snap_free(&after);
  tu_snap_free(&before);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

static void crash_after_c2(void **state) {
  (void)state;
  crash_recovery_at(0);
}
static void crash_after_c3(void **state) {
  (void)state;
  crash_recovery_at(1);
}

/* Task records round-trip; the decoder refuses what is not one. */
static void task_record_codec(void **state) {
  (void)state;
  tarn_task t;
  memset(&t, 0, sizeof t);
  t.log_id = 7;
  t.state = TARN_TASK_PREPARED;
  t.failures = 2;
  t.error = strdup("x");
  t.range.log_id = 7;
  t.range.s = 3;
  t.range.e = 9;
  t.range.c_e = 10;
  t.range.dir = strdup("ns/s/");
  t.range.n_files = 1;
  t.range.files = calloc(1, sizeof *t.range.files);
  t.range.files[0].name = strdup("7-3-x.parquet");
  t.range.files[0].last_offset = 8;
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_task_encode(&t, &b), 0);
  tarn_task u;
  assert_int_equal(tarn_task_decode(b.data, b.len, &u), 0);
  assert_int_equal(u.state, TARN_TASK_PREPARED);
  assert_int_equal(u.failures, 2);
  assert_string_equal(u.range.files[0].name, "7-3-x.parquet");
  assert_int_equal(u.range.files[0].last_offset, 8);
  assert_int_equal(u.range.e, 9);
  tarn_task_free(&u);
  for (size_t cut = 0; cut < b.len; cut += 7)
    assert_int_equal(tarn_task_decode(b.data, cut, &u), TARN_ECORRUPT);
  assert_int_equal(tarn_task_decode((const uint8_t *)"{\"log\":1}", 9, &u), TARN_ECORRUPT);
  tarn_buf_free(&b);
  tarn_task_free(&t);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

/* tarn_tasks_work asked for more threads than the address space can hold
 * (RLIMIT_AS a few stacks above what the process maps) fails with
 * TARN_ENOMEM, having stopped and joined the threads it started, though the
 * caller's stop flag is never set. In a child process, which exits 0 when so
 * (a hang is cut by alarm()). */
static void work_without_threads(void **state) {
  (void)state;
#ifdef UNDER_SANITIZER
  skip(); /* a sanitizer's shadow memory does not fit under an address-space limit */
#endif
  tu_cenv E;
  tu_cenv_open(&E, "nothreads", 0, 1, NULL);
  tarn_compactor *c = tu_compactor_sized(&E, E.m, 1500, 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(20);
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1)
      _exit(3);
    fclose(f);
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    rlim_t stack = rl.rlim_cur == RLIM_INFINITY ? (rlim_t)8 << 20 : rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + 3 * stack;
    if (setrlimit(RLIMIT_AS, &rl))
      _exit(4);
    atomic_int stop;
    atomic_init(&stop, 0);
    int rc = tarn_tasks_work(c, NULL, 64, 2, &stop);
    _exit(rc == TARN_ENOMEM ? 0 : 1);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (!WIFEXITED(st))
    print_message("the child died of signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(task_record_codec),      cmocka_unit_test(mutual_exclusion),
      cmocka_unit_test(dlq_after_max_failures), cmocka_unit_test(two_workers),
      cmocka_unit_test(three_workers),          cmocka_unit_test(crash_after_c2),
      cmocka_unit_test(crash_after_c3),         cmocka_unit_test(work_loop),
      cmocka_unit_test(work_without_threads),   cmocka_unit_test(zombie_holder_changes_nothing),
      cmocka_unit_test(claim_resumes_prepared), cmocka_unit_test(stale_range_ends_committed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
