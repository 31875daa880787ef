/* tarn-sim: a deterministic simulation of tarn's roles (docs/simulation.md).
 *
 * One thread plays every actor — writer processes (the real stepped writer),
 * a trimmer (soft and hard trim), a deleter (log deletion), and two readers —
 * over mem: stores, on a simulated clock, in an order drawn from a seeded
 * generator. The checker (sim_check.c) tests the protocol's properties after
 * every step. */
#ifndef TARN_SIM_H
#define TARN_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/compactor.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/tasks.h"
#include "tarn/writer.h"
#include "util/planted.h"

#define SIM_NLOGS 3            /* logs 1..SIM_NLOGS */
#define SIM_WAL_GRACE_MS 61000 /* the reclaimer's WAL grace (ReclaimAfterGrace judges by it) */
#define SIM_NWRITERS 3         /* writer processes */
#define SIM_DELETED_LOG 3      /* the log the deleter may delete */
#define SIM_NCOMPACTORS 2
#define SIM_MAX_ZOMBIES 32

enum { E_PENDING = 0, E_ACKED, E_FAILED, E_UNKNOWN };

/* Every property the checker tests (docs/simulation.md): X(name, source). The
 * leaderless log's S1-S9 and L1-L3, task claiming's safety and liveness
 * properties, and tarn's own (the spec's MUST rules). Each has a counter of
 * how often it was checked (sim.checks) and a planted bug that violates it. */
#define SIM_PROPERTIES(X)                                                                          \
  X(NoOffsetDuplicates, "S1")                                                                      \
  X(MonotonicOffsets, "S2")                                                                        \
  X(FencedRejectsAppends, "S3")                                                                    \
  X(CompactionPreservesData, "S4")                                                                 \
  X(NoPhantomEntries, "S5")                                                                        \
  X(CursorConsistency, "S6")                                                                       \
  X(NoOverlappingRanges, "S7")                                                                     \
  X(NoReaderError, "S8")                                                                           \
  X(SequentialCompactionSafety, "S9")                                                              \
  X(AppendProgress, "L1")                                                                          \
  X(CompactionCompletes, "L2")                                                                     \
  X(ReaderEventuallySucceeds, "L3")                                                                \
  X(MutualExclusion, "tasks")                                                                      \
  X(NoDoubleExecution, "tasks")                                                                    \
  X(DLQOnlyAfterMaxFailures, "tasks")                                                              \
  X(LockConsistency, "tasks")                                                                      \
  X(NoOrphanExecution, "tasks")                                                                    \
  X(TaskCompletion, "tasks L")                                                                     \
  X(CrashRecovery, "tasks L")                                                                      \
  X(NoStarvation, "tasks L")                                                                       \
  X(NoAckedEntryLost, "tarn")                                                                      \
  X(ReaderRespectsTrim, "tarn")                                                                    \
  X(AckMatchesRead, "tarn")                                                                        \
  X(TrimMarkerMonotonic, "tarn")                                                                   \
  X(SoftTrimStored, "tarn")                                                                        \
  X(NoDanglingIndex, "tarn")                                                                       \
  X(ReclaimAfterGrace, "tarn")                                                                     \
  X(DeletedLogStaysEmpty, "tarn")                                                                  \
  X(OneOutcome, "tarn")                                                                            \
  X(StepError, "tarn")                                                                             \
  X(Hang, "harness")

#define SIM_PROP_ENUM(name, src) P_##name,
enum { SIM_PROPERTIES(SIM_PROP_ENUM) P_COUNT };
extern const char *const sim_prop_names[];
extern const char *const sim_prop_sources[];
/* Counts one check of property p. */
#define SIM_CHECKED(s, p) ((s)->checks[p]++)

/* Fault kinds a run can leave out (--without), for shrinking a failure. */
enum {
  SIM_NO_OBJECT = 1,
  SIM_NO_META = 2,
  SIM_NO_CRASH = 4,
  SIM_NO_EXPIRY = 8,
  SIM_NO_SKEW = 16,
  SIM_NO_SLOW = 32,
  SIM_NO_ZOMBIE = 64,
  SIM_NO_STALL = 128,
  SIM_NO_C3CRASH = 256,
  SIM_NO_READ = 512
};

/* The processes, each with its own clock (skewed, stepping back now and then). */
enum {
  PROC_CHECK = 0,
  PROC_W0 = 1,
  PROC_C0 = PROC_W0 + 3,
  PROC_TRIM = PROC_C0 + 2,
  PROC_DEL,
  PROC_RECL,
  PROC_T0,
  PROC_RECL2 = PROC_T0 + 2,
  SIM_NPROCS = PROC_T0 + 4
};

/* One append, as the simulation issued it, and what it was told. */
typedef struct sim_entry {
  uint64_t log;
  uint32_t len, records;
  int status;
  uint64_t offset; /* E_ACKED: the acknowledged offset */
  int64_t ts;      /* E_ACKED: the acknowledged timestamp */
  int writer;
  int seen; /* read back at least once */
  uint64_t seen_offset, seen_cum;
  int64_t seen_ts;
  uint64_t pass; /* the last full pass that read it */
} sim_entry;

/* An index record as the checker last saw it. */
typedef struct sim_span {
  uint64_t end, start;
  int64_t version;
  uint64_t vhash; /* of the value */
  int parquet;
  uint64_t epoch; /* the reclaim epoch its object was last seen in (RAW) */
} sim_span;

typedef struct sim_log {
  uint64_t id;
  uint64_t max_end;       /* the greatest end offset seen (MonotonicOffsets) */
  uint64_t b;             /* the greatest trim marker seen */
  uint64_t soft_reported; /* the greatest value soft trim reported stored */
  int delete_done;        /* tarn_log_delete returned 0 */
  int fenced;             /* its fence exists: deletion began, records may go */
  /* S3 (004's FencedRejectsAppends: FENCED => no AssignOffset): the fence
   * was seen to take effect (fence_known), and the log's end offset then —
   * no offset is assigned past it from the fence on, not from the drain's end */
  int fence_known;
  uint64_t fence_end;
  sim_span *spans; /* the records of the last check, by end */
  size_t nspans;
  int spans_window;     /* the last check saw a C3-C4 window */
  uint64_t cursor;      /* the greatest compaction cursor (C5) seen */
  uint64_t (*acked)[2]; /* acknowledged [offset, end), sorted (NoOffsetDuplicates) */
  size_t nacked, capacked;
} sim_log;

typedef struct sim_writer {
  int alive;
  tarn_meta *meta;
  tarn_objstore *wal;
  tarn_writer *w;
  int incarnation;
  /* per log, this incarnation's last acknowledged entry (MonotonicOffsets) */
  size_t last_id[SIM_NLOGS];
  uint64_t last_off[SIM_NLOGS];
  int have_last[SIM_NLOGS];
  int64_t tell_at; /* its session ended silently: when it is told (0: not) */
} sim_writer;

enum { CP_IDLE = 0, CP_PLANNED, CP_WRITTEN, CP_INSTALLING };

typedef struct sim_compactor {
  int alive;
  tarn_meta *meta;
  tarn_objstore *wal, *cmp;
  tarn_compactor *c;
  int state;
  tarn_compact_range r;
  tarn_compact_lock *lock;
  int64_t written_at; /* when C2 finished */
  int incarnation;
  int64_t tell_at; /* its session ended silently: when it is told (0: not) */
} sim_compactor;

#define SIM_NTNODES 2

/* A node of `tarn serve`-like task work (tasks.c as jobs_compaction.c uses
 * it): plans tasks, claims one, steps it, releases it. */
typedef struct sim_tnode {
  int alive;
  tarn_meta *meta;
  tarn_objstore *wal, *cmp;
  tarn_compactor *c;
  tarn_compact_lock *lock; /* held while it has a claimed task */
  tarn_task t;
  int have;
  int incarnation;
  int64_t tell_at; /* its session ended silently: when it is told (0: not) */
} sim_tnode;

typedef struct sim_zombie {
  tarn_meta *meta; /* a crashed process's session, until it expires */
  int64_t expire_at;
} sim_zombie;

/* What a run exercised (summed over seeds by tarn-sim). */
typedef struct sim_stats {
  uint64_t acked, failed, unknown, installs, windows, reclaimed, crashes, expiries, deletions,
      stale_hits, soft_trims, hard_trimmed, held, landed, silent, c2_pauses, read_faults,
      read_errors;
} sim_stats;

typedef struct sim {
  uint64_t seed;
  int steps, step;
  int bug;
  int without; /* SIM_NO_* */
  int verbose;
  int hang_at; /* the watchdog's self-test: this step never returns (0: none) */
  /* --late-lock-at STEP (0: off): from STEP on, a task node's claim has its
   * next metadata write held in flight, landed two steps later; once one
   * landed, no more (late_lock_land < 0). Pins the late landing of a lock
   * create whose acquire gave up (planted late-landing-leaks), which the
   * random worlds reach rarely; it draws nothing from the seed. */
  int late_lock_at, late_lock_land, late_lock_node;
  /* --late-stamp-at STEP (0: off): from STEP on, a reclaimer pass has its
   * fourth metadata write (the first past its marks l-, p-w-, p-c-: a
   * first-seen stamp, a confirmation, a forget) held in flight instead of a
   * random fault; once a pass failed on it, its zombie's held write lands
   * right after the next successful pass (late_stamp: 0 arm, 1 held, -1
   * landed). Makes planted reclaim-trusts-late-stamp's chain likely: the
   * held stamp of an object between its A2 and A3 landing after a pass saw
   * the object named. Draws nothing from the seed. */
  int late_stamp_at, late_stamp;
  uint64_t rng, lib_rng;
  int64_t now; /* true time */
  int proc;    /* the process running: whose clock the library reads */
  int64_t skew[SIM_NPROCS], store_skew, max_skew;
  /* every setting of the store's skew, in true time (ReclaimAfterGrace) */
  struct sim_skewset {
    int64_t at, skew;
  } * skewlog;
  size_t nskewlog, capskewlog;
  unsigned p_skew; /* per mille of steps that reset one clock's skew (possibly backwards) */
  char meta_uri[96], wal_uri[96], cmp_uri[96];
  /* fault rates (per mille), drawn from the seed */
  unsigned p_obj_fault, p_meta_fault, p_crash, p_expire;
  int faults_on;
  int c2_paused; /* the C2 running has had its pause */
  sim_entry *ents;
  size_t nents, capents;
  sim_log logs[SIM_NLOGS];
  sim_writer wr[SIM_NWRITERS];
  sim_zombie zombies[SIM_MAX_ZOMBIES];
  size_t nzombies;
  tarn_meta *cmeta; /* the checker's and readers' session */
  tarn_objstore *cwal, *ccmp;
  sim_compactor cp[SIM_NCOMPACTORS];
  sim_tnode tn[SIM_NTNODES];
  tarn_tasks_options topt;
  /* (log, created_ms, s, e) of every task seen COMMITTED (NoDoubleExecution) */
  uint64_t (*committed)[4];
  size_t ncommitted, capcommitted;
  int crashed_claims[SIM_NLOGS + 1]; /* logs whose claimant crashed (CrashRecovery) */
  /* per log, the task record's created_ms, range and furthest state seen (NoDoubleExecution) */
  int64_t task_created[SIM_NLOGS + 1];
  int task_state[SIM_NLOGS + 1];
  uint64_t task_range[SIM_NLOGS + 1][2];
  tarn_meta *rmeta;   /* the reclaimer's session */
  tarn_meta *rzombie; /* the reclaimer's last failed session: its held writes may land */
  /* every WAL object a successful reclamation pass saw named, and the
   * store's clock at the last such pass (ReclaimAfterGrace) */
  struct sim_wname {
    char *name;
    int64_t last_named; /* true time of that pass (s->now), not a clock's reading */
  } * wn;
  size_t nwn, capwn;
  uint32_t *wnhash; /* open addressing: 1 + index into wn, 0 empty */
  size_t wnhcap;
  uint64_t reclaim_epoch;
  tarn_reader *fresh, *stale;
  tarn_meta *tmeta; /* the trimmer's session */
  tarn_meta *dmeta; /* the deleter's session */
  int delete_started;
  uint64_t pass;
  /* the trace: every line, hashed */
  char *trace;
  size_t tlen, tcap;
  uint64_t hash;
  int failed;
  char failure[1024];
  sim_stats st;
  uint64_t checks[P_COUNT];
  int failed_prop;
} sim;

/* sim_world.c */
uint64_t sim_rand(sim *s);
uint64_t sim_below(sim *s, uint64_t n);
void sim_trace(sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_fail(sim *s, int property, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int sim_run(sim *s);
void sim_free(sim *s);
/* the deterministic payload of entry id */
void sim_payload(uint64_t id, uint64_t log, uint8_t *out, size_t len);

int64_t sim_clock(void *ctx);

/* Arms, with the run's object-fault rate, one fault of the read side on st's
 * named store (a failed or throttled GET, LIST, HEAD or DELETE, a truncated
 * or damaged GET) and maybe a metadata read failure on m; 1 if armed.
 * sim_read_faults_clear disarms the WAL and compacted stores' faults and m's. */
int sim_arm_read_fault(sim *s, tarn_objstore *st, tarn_meta *m);
void sim_read_faults_clear(sim *s, tarn_meta *m);

/* sim_check.c */
void sim_check_step(sim *s);
void sim_check_full(sim *s);
/* ReclaimAfterGrace: the reclaimer is about to delete WAL object name */
void sim_check_wal_delete(sim *s, const char *name);
/* ReclaimAfterGrace: a reclamation pass succeeded (it ended at s->now) */
void sim_check_reclaim_passed(sim *s);
/* the store's clock is set to skew (logged for ReclaimAfterGrace) */
void sim_store_skew_set(sim *s, int64_t skew);
void sim_wnames_free(sim *s);

#define sim_bug_names tarn__planted_names
/* sim_planted.c: the planted bugs' runs (tarn-sim --list-planted [SIM [OUT]]:
 * their ctest registrations) and their names (tarn-sim --list-bugs) */
int sim_list_planted(int argc, char **argv);
int sim_list_bugs(void);
extern const char *const sim_fault_names[]; /* by SIM_NO_* bit: object, meta, crash, expiry */

#endif
