/* The express writer's state, shared by xwriter.c (slots, quorum, release,
 * roll) and absorb.c (publishing released slots, reclaiming flights). */
#ifndef TARN_EXPRESS_XWRITER_INTERNAL_H
#define TARN_EXPRESS_XWRITER_INTERNAL_H

#include <pthread.h>

#include "express/express_internal.h"
#include "log/appender_impl.h"
#include "tarn/express.h"
#include "tarn/lease.h"

typedef struct xent {
  uint64_t log_id;
  uint8_t *payload;
  size_t len;
  uint32_t records;
  uint64_t offset; /* assigned at append: the offset the index will give it */
  tarn_append_cb cb;
  void *arg;
} xent;

enum { XF_GATHER = 0, XF_SEALED = 1, XF_COMMITTED = 2, XF_DOOMED = 3 };
enum { XB_PENDING = 0, XB_BUSY = 1, XB_OK = 2, XB_FAILED = 3 };

/* Commit times kept for the latency budget's p99 (issue 36 item 3). */
#define TARN__XCOMMIT_SAMPLES 256

typedef struct xflight {
  uint64_t epoch, slot;
  int state;
  xent *ents;
  size_t n, cap;
  size_t bytes; /* payload bytes */
  tarn_buf obj; /* the flight: a v3 WAL object, built at seal */
  char key[TARN__X_SLOT_KEY_MAX];
  uint8_t bst[TARN__X_K_MAX];
  uint8_t tries[TARN__X_K_MAX];
  int copies, fails, busy;
  int poisoned; /* buckets seen (read back after a 412) to hold this slot's poison */
  int released;
  int orphaned;        /* absorbed and unlinked while a copy was busy: the last busy PUT
                          thread frees it */
  int64_t first_ms;    /* monotonic: the first entry's arrival */
  int64_t sealed_ms;   /* monotonic: sealed (its commit time runs from here) */
  int64_t released_ms; /* monotonic */
  struct xflight *next;
} xflight;

enum { XLOG_NOT_KAFKA = 1, XLOG_KAFKA = 2 };

typedef struct xlog {
  uint64_t log_id;
  tarn_lease *lease;
  uint64_t next_off;     /* the next offset to assign */
  uint64_t released_end; /* the end of what was released */
  uint64_t absorbed_end; /* the index's end: every offset below is indexed */
  uint64_t absorbed_cum; /* the index's cumulative size at absorbed_end */
  int kafka;             /* 0 not yet known, else XLOG_NOT_KAFKA or XLOG_KAFKA (a Kafka
                            topic's log: every entry is checked, LS-095 ... LS-098) */
  uint64_t rec_epoch;    /* the epoch the last-writer record names for this tenure */
  int finishing;         /* a Finish ran and could not land: appends bounce, lease kept */
  struct xlog *next;
} xlog;

/* A run of absorbed slots waiting out the grace before their flights go. */
typedef struct xreclaim {
  uint64_t epoch, from, to; /* slots [from, to) */
  int64_t absorbed_ms;      /* monotonic */
  struct xreclaim *next;
} xreclaim;

struct tarn_xwriter {
  tarn_appender base; /* first: the writer as an appender (issue 32 item 1) */
  tarn_meta *meta;
  tarn_objstore *wal;
  tarn_xwriter_options o;
  char star[TARN__X_STAR_MAX + 1];
  int64_t star_lease; /* the version of this process's star lease (epoch.c); 0 when none */
  tarn__xbuckets bs;  /* open stores */
  tarn__xepoch ep;    /* the epoch being written */
  int64_t max_publish_delay_ms;
  int64_t max_put_ms; /* absorb's index put bound (LS-085; issue 30 item 6) */

  pthread_mutex_t mu;
  pthread_cond_t cv; /* every change of state; waiters re-check */
  /* bucket b's PUT threads wait here, for a copy to write, and only they: on
   * the shared cv every copy's completion woke all K x WIN of them, and on a
   * busy machine the releaser queued behind them (tarn-bench express) */
  pthread_cond_t put_cv[TARN__X_K_MAX];
  pthread_mutex_t log_mu; /* serialises first appends to a log (lease, tail read) */

  xflight *head, *tail;  /* sealed flights, slot order, oldest not yet absorbed first */
  xflight *cur;          /* gathering */
  uint64_t next_slot;    /* the next slot to assign in ep */
  uint64_t release_next; /* the next slot to release in ep */
  xlog *logs;
  xreclaim *rq_head, *rq_tail;
  uint64_t appended, delivered; /* entries */
  size_t bytes_in_flight;
  int absorb_busy, absorb_rc, absorb_urgent;
  int rolls, failed_rc;
  int halting; /* a roll is under way: no more copies of this epoch */
  int stopping;
  char err[512];

  pthread_t timer, releaser, absorber;
  pthread_t *putters;
  int n_put, threads_started;
  tarn_xwriter_stats st;
  /* issue 36 item 3: the latest slots' times from seal to W copies (a
   * ring), and their p99, which the latency budget's seal subtracts */
  int64_t commit_ms[TARN__XCOMMIT_SAMPLES];
  size_t n_commit;
  int64_t commit_p99_ms;
};

/* A crash, for tests and the simulator: stops the threads and frees the
 * writer writing nothing more (its lease records stay until the session
 * ends, as a dead process's do). */
void tarn__xwriter_abandon(tarn_xwriter *w);

/* gate.c */
/* The open gate's fence deadline for an unreachable predecessor slot. */
#define TARN__X_GATE_FENCE_TIMEOUT_MS 30000
/* With l's lease held and before l's end is read: judges the last-writer
 * record (consumes a mark, settles a superseded or dead predecessor, or
 * refuses with TARN_EBUSY while an unmarked one lives), then records this
 * writer as the log's. */
int tarn__xgate_open(tarn_xwriter *w, xlog *l);
/* Fences and settles every unsettled epoch of star's express chain in
 * [lo, hi] (burned numbers skipped). */
int tarn__xsettle_range(tarn_meta *m, tarn_objstore *wal, const char *star, uint64_t lo,
                        uint64_t hi);

/* finish.c */
/* tarn_xwriter_close's Finish of every open log (retried as options say). */
int tarn__xwriter_finish_all(tarn_xwriter *w);

/* absorb.c */
/* Under mu (released while working): absorbs one batch of released flights;
 * 1 when one was absorbed, 0 when none was ready (force: don't wait out
 * absorb_ms), or a negative error (also kept in w->absorb_rc). */
int tarn__xabsorb_batch(tarn_xwriter *w, int force);
/* Under mu (released while working): deletes flights whose grace passed
 * (all, with force); 1 when some were deleted. */
int tarn__xabsorb_reclaim(tarn_xwriter *w, int force);
/* Reads the log's last index record: *end and *cum (0, 0 for an empty log). */
int tarn__xlog_tail(tarn_meta *m, uint64_t log_id, uint64_t *end, uint64_t *cum);
/* Under mu: frees a flight (its payloads and object). */
void tarn__xflight_free(xflight *f);
void tarn__xwriter_set_error(tarn_xwriter *w, int rc);

#endif
