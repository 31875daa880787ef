/* Compaction tasks: claiming with ephemeral locks, INIT -> PREPARED ->
 * COMMITTED by CompareAndSet, a dead-letter state (docs/compaction.md). */
#define _POSIX_C_SOURCE 200809L
#include "tarn/tasks.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/compactor_internal.h"
#include "util/clock.h"
#include "util/planted.h"
#include "util/random.h"
#include "tarn/catalog.h"
#include "util/error.h"

static const char *const state_names[] = {"INIT", "PREPARED", "COMMITTED", "DEAD"};

const char *tarn_task_state_name(int state) {
  return state >= 0 && state <= TARN_TASK_DEAD ? state_names[state] : "UNKNOWN";
}

void tarn_task_free(tarn_task *t) {
  if (!t)
    return;
  free(t->error);
  tarn_compact_range_free(&t->range);
  memset(t, 0, sizeof *t);
}

int tarn_task_encode(const tarn_task *t, tarn_buf *out) {
  tarn_buf rb = TARN_BUF_INIT;
  int rc = tarn_compact_range_encode(&t->range, &rb);
  if (rc)
    return rc;
  json_error_t je;
  json_t *range = json_loadb((const char *)rb.data, rb.len, 0, &je);
  tarn_buf_free(&rb);
  json_t *o = json_object();
  json_object_set_new(o, "log", json_integer((json_int_t)t->log_id));
  json_object_set_new(o, "state", json_string(tarn_task_state_name(t->state)));
  json_object_set_new(o, "failures", json_integer(t->failures));
  json_object_set_new(o, "error", t->error ? json_string(t->error) : json_null());
  json_object_set_new(o, "created_ms", json_integer(t->created_ms));
  json_object_set_new(o, "updated_ms", json_integer(t->updated_ms));
  json_object_set_new(o, "stale", json_boolean(t->stale));
  json_object_set_new(o, "range", range ? range : json_null());
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  if (!s || !range)
    rc = tarn__err(TARN_ENOMEM, "task: cannot encode");
  else
    rc = tarn_buf_append(out, s, strlen(s));
  free(s);
  return rc;
}

int tarn_task_decode(const uint8_t *p, size_t len, tarn_task *t) {
  memset(t, 0, sizeof *t);
  json_error_t je;
  json_t *o = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
  if (!o)
    return tarn__corrupt("task record", (size_t)je.position, "%s", je.text);
  int rc = 0;
  json_t *lg = json_object_get(o, "log"), *st = json_object_get(o, "state"),
         *fl = json_object_get(o, "failures"), *er = json_object_get(o, "error"),
         *cm = json_object_get(o, "created_ms"), *um = json_object_get(o, "updated_ms"),
         *sl = json_object_get(o, "stale"), *rg = json_object_get(o, "range");
  if (!json_is_integer(lg) || json_integer_value(lg) < 0 || !json_is_string(st) ||
      !json_is_integer(fl) || json_integer_value(fl) < 0 || json_integer_value(fl) > UINT32_MAX ||
      !(json_is_string(er) || json_is_null(er)) || !json_is_integer(cm) || !json_is_integer(um) ||
      !json_is_boolean(sl)) {
    rc = tarn__err(TARN_ECORRUPT, "task record: a member is missing or of the wrong type");
    goto out;
  }
  t->state = -1;
  for (int i = 0; i <= TARN_TASK_DEAD; i++)
    if (strcmp(json_string_value(st), state_names[i]) == 0)
      t->state = i;
  if (t->state < 0) {
    rc = tarn__err(TARN_ECORRUPT, "task record: unknown state \"%s\"", json_string_value(st));
    goto out;
  }
  t->log_id = (uint64_t)json_integer_value(lg);
  t->failures = (uint32_t)json_integer_value(fl);
  t->created_ms = json_integer_value(cm);
  t->updated_ms = json_integer_value(um);
  t->stale = json_is_true(sl);
  if (json_is_string(er) && !(t->error = strdup(json_string_value(er)))) {
    rc = tarn__err(TARN_ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = tarn__compact_range_from_json(rg, &t->range)))
    goto out;
  if (t->range.log_id != t->log_id)
    rc = tarn__err(TARN_ECORRUPT, "task record: the range is of another log");
out:
  json_decref(o);
  if (rc)
    tarn_task_free(t);
  return rc;
}

void tarn_tasks_options_default(tarn_tasks_options *o) {
  memset(o, 0, sizeof *o);
  o->max_failures = 5;
}

static void task_key(char out[64], uint64_t log_id) {
  snprintf(out, 64, "/tasks/%020" PRIu64, log_id);
}

static int task_get(tarn_meta *m, uint64_t log_id, tarn_task *t) {
  char k[64];
  task_key(k, log_id);
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, TARN_COMPACTION_PARTITION, k, &r);
  if (!rc) {
    rc = tarn_task_decode(r.value, r.value_len, t);
    if (rc)
      tarn__errctx(rc, "%s", k);
    t->version = r.stat.version;
  }
  tarn_meta_rec_free(&r);
  return rc;
}

/* Writes t: CreateIfAbsent when version < 0, else CompareAndSet on it; the
 * new version goes back into t. A claimed task's writes are guarded by its
 * lock record (the version the claim created): a holder whose session ended
 * at the store, and so its lock with it, while it runs on not yet told (a
 * zombie), changes nothing — without the guard its CompareAndSet committed
 * whenever no new holder had written yet (tarn-sim seed 12,
 * NoOrphanExecution). */
static int task_put(tarn_meta *m, tarn_task *t) {
  char k[64], lk[64];
  task_key(k, t->log_id);
  snprintf(lk, sizeof lk, "/locks/%020" PRIu64, t->log_id);
  tarn_meta_guard g = {TARN_META_GUARD_EXISTS, lk, t->lock_version};
  size_t ng = t->lock_version > 0 && !TARN__PLANTED(TARN__BUG_TASK_PUT_UNGUARDED);
  tarn_buf b = TARN_BUF_INIT;
  int rc = tarn_task_encode(t, &b);
  tarn_meta_stat st;
  if (TARN__PLANTED(TARN__BUG_TASK_GUARD_ANY_LOCK))
    g.version = TARN_META_ANY_VERSION;
  if (!rc)
    rc = t->version < 0 ? tarn_meta_create_if(m, TARN_COMPACTION_PARTITION, k, b.data, b.len,
                                              TARN_META_PERSISTENT, &g, ng, &st)
                        : tarn_meta_cas_if(m, TARN_COMPACTION_PARTITION, k, b.data, b.len,
                                           t->version, &g, ng, &st);
  if (!rc)
    t->version = st.version;
  tarn_buf_free(&b);
  return rc;
}

int tarn_tasks_list(tarn_meta *m, tarn_task **out, size_t *n) {
  *out = NULL;
  *n = 0;
  tarn_meta_recs rs = {0};
  int rc = tarn_meta_scan(m, TARN_COMPACTION_PARTITION, "/tasks/", "/tasks/~", 0, 0, &rs);
  if (rc)
    return rc;
  tarn_task *v = rs.n ? calloc(rs.n, sizeof *v) : NULL;
  if (rs.n && !v)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < rs.n && !rc; i++) {
    if ((rc = tarn_task_decode(rs.v[i].value, rs.v[i].value_len, &v[k])))
      tarn__errctx(rc, "%s", rs.v[i].key);
    else
      v[k++].version = rs.v[i].stat.version;
  }
  tarn_meta_recs_free(&rs);
  if (rc) {
    tarn_tasks_free(v, k);
    return rc;
  }
  *out = v;
  *n = k;
  return 0;
}

void tarn_tasks_free(tarn_task *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    tarn_task_free(&v[i]);
  free(v);
}

static int is_open(int state) { return state == TARN_TASK_INIT || state == TARN_TASK_PREPARED; }

static int plan_log(tarn_compactor *c, const tarn_tasks_options *o, uint64_t log_id, int force,
                    size_t *created) {
  tarn_meta *m = tarn__compactor_meta(c);
  int64_t now = tarn__now_ms();
  tarn_task t;
  int rc = task_get(m, log_id, &t);
  int64_t version = -1;
  if (rc == 0) {
    int busy = t.state != TARN_TASK_COMMITTED || now - t.updated_ms < o->committed_keep_ms;
    version = t.version;
    tarn_task_free(&t);
    if (busy)
      return 0; /* open, dead-lettered, or kept for a while */
  } else if (rc != TARN_ENOTFOUND) {
    return rc;
  }
  tarn_task nt;
  memset(&nt, 0, sizeof nt);
  rc = tarn_compact_plan(c, log_id, force, &nt.range);
  if (rc == TARN_EBUSY) {
    /* a compaction outside the tasks died between C3 and C4: finish it */
    tarn_compact_lock *lk;
    if (tarn_compact_lock_acquire(m, log_id, "planner", &lk) == 0) {
      rc = tarn_compact_repair(c, log_id, NULL);
      tarn_compact_lock_release(lk);
      if (!rc)
        rc = tarn_compact_plan(c, log_id, force, &nt.range);
    } else {
      rc = TARN_ENOTFOUND;
    }
  }
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return rc;
  nt.log_id = log_id;
  nt.state = TARN_TASK_INIT;
  nt.created_ms = nt.updated_ms = now;
  nt.version = version;
  rc = task_put(m, &nt);
  if (rc == TARN_EEXIST || rc == TARN_ECONFLICT)
    rc = 0; /* another planner was first */
  else if (!rc && created)
    (*created)++;
  tarn_task_free(&nt);
  return rc;
}

int tarn_tasks_plan(tarn_compactor *c, const tarn_tasks_options *o, int force, size_t *created) {
  tarn_tasks_options d;
  if (!o) {
    tarn_tasks_options_default(&d);
    o = &d;
  }
  if (created)
    *created = 0;
  tarn_catalog *cat;
  int rc = tarn_catalog_open(tarn__compactor_meta(c), NULL, &cat);
  if (rc)
    return rc;
  tarn_catalog_record *s = NULL;
  size_t n = 0;
  rc = tarn_catalog_list_streams(cat, &s, &n);
  for (size_t i = 0; i < n && !rc; i++) {
    if (s[i].state != TARN_STREAM_ACTIVE)
      continue;
    for (size_t j = TARN__PLANTED(TARN__BUG_PLAN_SKIPS_FIRST_LOG); j < s[i].n_logs && !rc; j++)
      rc = plan_log(c, o, s[i].logs[j], force, created);
  }
  tarn_catalog_records_free(s, n);
  tarn_catalog_close(cat);
  return rc;
}

static void default_owner(char *buf, size_t n, const tarn_tasks_options *o) {
  if (o && o->owner) {
    snprintf(buf, n, "%s", o->owner);
    return;
  }
  char host[128] = "";
  gethostname(host, sizeof host - 1);
  snprintf(buf, n, "%d@%s", (int)getpid(), host);
}

int tarn_tasks_claim(tarn_meta *m, const tarn_tasks_options *o, tarn_compact_lock **lock,
                     tarn_task *task) {
  *lock = NULL;
  memset(task, 0, sizeof *task);
  tarn_task *v;
  size_t n;
  int rc = tarn_tasks_list(m, &v, &n);
  if (rc)
    return rc;
  char owner[200];
  default_owner(owner, sizeof owner, o);
  rc = TARN_ENOTFOUND;
  /* Start at a different task in each worker so that they spread out (drawn
   * through tarn__random, so that the simulator's runs repeat). */
  uint32_t spread = (uint32_t)getpid();
  tarn__random(&spread, sizeof spread, "task claim");
  size_t off = n ? (size_t)spread % n : 0;
  for (size_t k = 0; k < n && rc == TARN_ENOTFOUND; k++) {
    tarn_task *t = &v[(k + off) % n];
    if (!is_open(t->state) ||
        (TARN__PLANTED(TARN__BUG_CLAIM_SKIPS_PREPARED) && t->state == TARN_TASK_PREPARED) ||
        (TARN__PLANTED(TARN__BUG_CLAIM_SKIPS_FAILED) && t->failures > 0))
      continue;
    tarn_compact_lock *lk;
    int lrc = tarn_compact_lock_acquire(m, t->log_id, owner, &lk);
    if (lrc == TARN_EEXIST)
      continue;
    if (lrc) {
      rc = lrc;
      break;
    }
    /* Under the lock, the state as it is now (another worker may have
     * finished it between the listing and the lock). */
    lrc = task_get(m, t->log_id, task);
    if (!lrc && is_open(task->state)) {
      /* A PREPARED task resumes at C3: its C2 was done and its files are
       * named in the record (redoing C2 runs the task's work twice). */
      if (TARN__PLANTED(TARN__BUG_CLAIM_REDOES_C2))
        task->state = TARN_TASK_INIT;
      task->lock_version = tarn__compact_lock_version(lk);
      *lock = lk;
      rc = 0;
      break;
    }
    if (!lrc)
      tarn_task_free(task);
    tarn_compact_lock_release(lk);
    if (lrc && lrc != TARN_ENOTFOUND)
      rc = lrc;
  }
  tarn_tasks_free(v, n);
  if (rc == TARN_ENOTFOUND)
    tarn__err(rc, "no open compaction task to claim");
  return rc;
}

/* Counts a failure: DEAD after max_failures, but only from INIT — once a
 * task is PREPARED, C3 may have taken effect and must be retried (LS-078). */
static int record_failure(tarn_meta *m, const tarn_tasks_options *o, tarn_task *t, int err,
                          int64_t now) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s: %s", tarn_errname(err), tarn_errmsg());
  free(t->error);
  t->error = strdup(msg);
  t->failures++;
  t->updated_ms = now;
  if (t->state == TARN_TASK_INIT &&
      t->failures + TARN__PLANTED(TARN__BUG_TASK_DEAD_EARLY) >= o->max_failures)
    t->state = TARN_TASK_DEAD;
  int rc = task_put(m, t);
  tarn__err(err, "%s", msg);
  return rc ? rc : err;
}

int tarn_tasks_step(tarn_compactor *c, const tarn_tasks_options *o, tarn_task *t) {
  tarn_tasks_options d;
  if (!o) {
    tarn_tasks_options_default(&d);
    o = &d;
  }
  tarn_meta *m = tarn__compactor_meta(c);
  int64_t now = tarn__now_ms();
  int rc;
  if (t->state == TARN_TASK_INIT) {
    /* C2; a range whose records changed since planning is stale */
    rc = tarn_compact_write(c, &t->range);
    if (rc == TARN_ECONFLICT) {
      t->state =
          TARN__PLANTED(TARN__BUG_STALE_TASK_LEFT_OPEN) ? TARN_TASK_INIT : TARN_TASK_COMMITTED;
      t->stale = 1;
    } else if (rc) {
      return record_failure(m, o, t, rc, now);
    } else {
      t->state = TARN_TASK_PREPARED;
    }
    t->updated_ms = now;
    rc = task_put(m, t);
    if (!rc && t->state == TARN_TASK_PREPARED && TARN__PLANTED(TARN__BUG_TASK_VIEW_STAYS_INIT))
      t->state = TARN_TASK_INIT; /* the record moved on, the holder's copy did not */
    return TARN__PLANTED(TARN__BUG_TASK_WRITE_UNCHECKED) ? 0 : rc;
  }
  if (t->state == TARN_TASK_PREPARED) {
    int outcome = 0;
    rc = tarn_compact_install(c, &t->range, &outcome); /* C3–C5 */
    if (rc == TARN_EFENCED) {
      /* LS-078: a fenced log is deleted; its deletion removes the records */
      outcome = TARN_INSTALL_STALE;
      rc = 0;
    }
    if (rc)
      return record_failure(m, o, t, rc, now);
    t->state = TARN_TASK_COMMITTED;
    t->stale = outcome == TARN_INSTALL_STALE;
    t->updated_ms = now;
    return task_put(m, t);
  }
  return tarn__err(TARN_EINVAL, "task of log %" PRIu64 " is %s: nothing to do", t->log_id,
                   tarn_task_state_name(t->state));
}

int tarn_tasks_run_one(tarn_compactor *c, const tarn_tasks_options *o, int *ran) {
  if (ran)
    *ran = 0;
  tarn_compact_lock *lk;
  tarn_task t;
  int rc = tarn_tasks_claim(tarn__compactor_meta(c), o, &lk, &t);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return rc;
  if (ran)
    *ran = 1;
  while (!rc && is_open(t.state))
    rc = tarn_tasks_step(c, o, &t);
  tarn_task_free(&t);
  int lrc = tarn_compact_lock_release(lk);
  return rc ? rc : lrc;
}

int tarn_tasks_retry(tarn_meta *m, uint64_t log_id) {
  tarn_task t;
  int rc = task_get(m, log_id, &t);
  if (rc)
    return rc;
  if (t.state != TARN_TASK_DEAD) {
    tarn_task_free(&t);
    return tarn__err(TARN_EINVAL, "the task of log %" PRIu64 " is not DEAD", log_id);
  }
  t.state = TARN_TASK_INIT;
  t.failures = 0;
  rc = task_put(m, &t);
  tarn_task_free(&t);
  return rc;
}

typedef struct worker {
  tarn_compactor *c;
  const tarn_tasks_options *o;
  int idle_ms, planner;
  /* The caller's flag, set from another thread, and this call's own (a worker
   * that could not start stops the others): atomics, read in every round. */
  atomic_int *stop, *quit;
  int rc;
} worker;

static int stopping(const worker *w) { return atomic_load(w->stop) || atomic_load(w->quit); }

static void *work_main(void *p) {
  worker *w = p;
  while (!stopping(w)) {
    int ran = 0;
    if (w->planner)
      tarn_tasks_plan(w->c, w->o, 0, NULL);
    int rc = tarn_tasks_run_one(w->c, w->o, &ran);
    if (rc)
      w->rc = rc;
    if (!ran)
      tarn__sleep_ms(w->idle_ms);
  }
  return NULL;
}

int tarn_tasks_work(tarn_compactor *c, const tarn_tasks_options *o, int threads, int idle_ms,
                    atomic_int *stop) {
  if (threads < 1)
    threads = 1;
  worker *w = calloc((size_t)threads, sizeof *w);
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  if (!w || !th) {
    free(w);
    free(th);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  atomic_int quit;
  atomic_init(&quit, 0);
  int started = 0, rc = 0;
  for (; started < threads; started++) {
    w[started] = (worker){c, o, idle_ms, started == 0, stop, &quit, 0};
    int e = pthread_create(&th[started], NULL, work_main, &w[started]);
    if (e) {
      /* The threads started so far are stopped and joined: no thread outlives
       * the call, and the caller learns it got fewer workers than asked. */
      atomic_store(&quit, 1);
      rc = tarn__err(TARN_ENOMEM, "cannot start worker thread %d of %d: %s", started + 1, threads,
                     strerror(e));
      break;
    }
  }
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  free(w);
  free(th);
  return rc;
}
