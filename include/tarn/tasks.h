/* tarn — compaction tasks: scheduling by task claiming (Layer 2 of the
 * leaderless log protocol: INIT -> PREPARED -> COMMITTED, ephemeral locks,
 * a dead-letter state).
 *
 * A task is one range of one log, at most one per log, the record
 * /tasks/{L:020d} in TARN_COMPACTION_PARTITION (JSON, docs/compaction.md):
 *
 *   INIT       planned: the range (C1); no file written yet
 *   PREPARED   C2 done: the files are listed in the record; C3–C5 pending
 *   COMMITTED  installed (or STALE: the range no longer held, nothing changed)
 *   DEAD       failed max_failures times before C3 took effect, with the error
 *
 * A worker claims a task by creating the log's compaction lock (ephemeral,
 * tarn_compact_lock_acquire) — the same lock that serialises index updates of
 * the log (LS-074) — then moves the task on by CompareAndSet of its record.
 * A worker that dies loses its lock with its session; the next worker resumes
 * from the record's state (PREPARED: C3–C4 again, idempotent, LS-078).
 * Once C3 took effect a task never goes DEAD: it is retried until C4 completes
 * or the log is fenced (then COMMITTED, the deletion removes the records).
 *
 * Every function is a single step without sleeping (a simulator drives
 * them); tarn_tasks_work is the loop around them for real workers. */
#ifndef TARN_TASKS_H
#define TARN_TASKS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tarn/compactor.h"
#include "tarn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TARN_TASK_INIT = 0, TARN_TASK_PREPARED = 1, TARN_TASK_COMMITTED = 2, TARN_TASK_DEAD = 3 };
const char *tarn_task_state_name(int state);

typedef struct tarn_task {
  uint64_t log_id;
  int state;
  uint32_t failures;
  char *error; /* the last failure's message, or NULL */
  int64_t created_ms, updated_ms;
  int stale; /* COMMITTED because the range no longer held */
  tarn_compact_range range;
  int64_t version;      /* of the record, for CompareAndSet */
  int64_t lock_version; /* set by tarn_tasks_claim: the version of the lock record its
                           writes are guarded by (0: not claimed) */
} tarn_task;

void tarn_task_free(tarn_task *t);
/* Record JSON (total decoder). */
int tarn_task_encode(const tarn_task *t, tarn_buf *out);
int tarn_task_decode(const uint8_t *p, size_t len, tarn_task *out);

typedef struct tarn_tasks_options {
  uint32_t max_failures;     /* failures before DEAD (5) */
  int64_t committed_keep_ms; /* a COMMITTED task is replaced by a new plan only after
                                this long; 0: at once */
  const char *owner;         /* written in the lock record (NULL: "pid@host") */
} tarn_tasks_options;
void tarn_tasks_options_default(tarn_tasks_options *o);

/* Every task, in log order. Free with tarn_tasks_free. */
int tarn_tasks_list(tarn_meta *m, tarn_task **out, size_t *n);
void tarn_tasks_free(tarn_task *v, size_t n);

/* The planner: for each log of every ACTIVE catalog stream without an open
 * (INIT/PREPARED) or DEAD task, plans a range (tarn_compact_plan, force as
 * given) and creates an INIT task for it (CreateIfAbsent, or CompareAndSet
 * over an old COMMITTED task). *created (may be NULL) counts them. */
int tarn_tasks_plan(tarn_compactor *c, const tarn_tasks_options *o, int force, size_t *created);

/* Claims one open task: lists the tasks and takes the lock of the first open
 * one not locked. TARN_ENOTFOUND when none. *lock and *task are the caller's
 * (release with tarn_compact_lock_release, tarn_task_free). */
int tarn_tasks_claim(tarn_meta *m, const tarn_tasks_options *o, tarn_compact_lock **lock,
                     tarn_task *task);

/* Runs the claimed task one state forward: INIT -> PREPARED (C2, or STALE ->
 * COMMITTED), PREPARED -> COMMITTED (C3–C5). On failure counts it and
 * records the error (DEAD after max_failures, only before C3 took effect) and
 * returns the error. The caller still holds the lock. */
int tarn_tasks_step(tarn_compactor *c, const tarn_tasks_options *o, tarn_task *task);

/* Claims a task, steps it until COMMITTED/DEAD or a failure, releases the
 * lock. *ran (may be NULL) = 1 when a task was claimed. */
int tarn_tasks_run_one(tarn_compactor *c, const tarn_tasks_options *o, int *ran);

/* Re-opens a DEAD task (state INIT, failures 0): the operator's retry. */
int tarn_tasks_retry(tarn_meta *m, uint64_t log_id);

/* A worker loop for `tarn compact --worker`-like uses: plans and runs tasks
 * with `threads` threads (the most concurrent tasks of this process) until
 * *stop is set (from another thread or a signal handler), sleeping idle_ms
 * when there is nothing to do. Returns 0 once stopped, or TARN_ENOMEM when a
 * thread could not be created (the ones started are stopped and joined). */
int tarn_tasks_work(tarn_compactor *c, const tarn_tasks_options *o, int threads, int idle_ms,
                    atomic_int *stop);

#ifdef __cplusplus
}
#endif
#endif
