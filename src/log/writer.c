/* The writer: batching, A1 lease, A2 object, A3 index puts, A4 acknowledgement.
 *
 * Threads: a timer seals the open batch when its window ends; upload threads
 * build and write sealed batches' objects (in parallel); put threads publish
 * the sections. Each log has a queue of sections in seal order, and only its
 * head is ever being put, so one writer's appends to a log take offsets in the
 * order they were issued; different logs' puts run in parallel. */
#include "tarn/writer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "log/format_version.h"
#include "log/wal_name.h"
#include "log/wal_object.h"
#include "log/appender_impl.h"
#include "tarn/buf.h"
#include "tarn/entryindex.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/metrics.h"
#include "tarn/timing.h"
#include "tarn/wal.h"
#include "tarn/testing.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

/* An entry, kept in its section's array: no allocation per entry. Its
 * payload is in the batch's payload buffer, or (a large entry) in a copy of
 * its own made outside the writer's lock. */
typedef struct wentry {
  size_t off;   /* in the batch's payload buffer, unless ext */
  uint8_t *ext; /* the entry's own copy, or NULL */
  uint32_t len; /* <= INT32_MAX (varint32) */
  uint32_t records;
  tarn_append_cb cb;
  void *arg;
  double t_append;          /* tarn_metrics_now() at append: the latency metrics */
  tarn__append_guard guard; /* domain NULL: none (issue 31 item 3) */
} wentry;

/* Entries up to this size are copied into the batch's buffer under the
 * writer's lock; larger ones are copied before taking it. */
#define INLINE_MAX (64u << 10)

struct wbatch;

enum { SEC_PENDING = 0, SEC_READY = 1, SEC_FAILED = 2 };

/* One log section of a sealed batch: the unit of an index put. */
typedef struct wsection {
  struct wsection *next; /* the log's queue */
  struct wbatch *batch;
  struct wlog *log;
  /* the log's lease when the section was opened: a section of a session
   * that ended is never published under the lease of a later one (issue 31
   * item 6) */
  struct tarn_lease *lease;
  wentry *ents;
  size_t n, cap;
  uint64_t records;                                     /* d1 */
  tarn__append_guard guards[TARN__WRITER_EXTRA_GUARDS]; /* the entries' distinct ones */
  size_t n_guards;
  int state;
  int rc;         /* SEC_FAILED: the entries' status */
  uint8_t *value; /* the RAW EntryIndex (SEC_READY) */
  size_t value_len;
} wsection;

typedef struct wbatch {
  struct wbatch *next;    /* seal order (sealed list) or upload queue */
  struct wbatch *up_next; /* upload queue */
  uint64_t id;
  size_t nents;
  size_t bytes;
  uint8_t *pay; /* the payloads of inline entries, in append order; freed after A2 */
  size_t pay_len, pay_cap;
  double t_first; /* t_append of the first entry */
  size_t nlogs;
  uint64_t *logs;    /* max_logs_per_object */
  uint64_t *records; /* per log: Σ record counts, kept <= INT32_MAX */
  wsection **secs;
  size_t puts_left;
  int done;
  int64_t deadline_ms;
  int64_t written_mono; /* monotonic ms when the write of its object (last attempt) began */
  char err[256];        /* why the object write failed */
} wbatch;

typedef struct wlog {
  struct wlog *next;
  uint64_t log_id;
  tarn_lease *lease;
  uint64_t lease_gen; /* tarn_meta_session_gen() when lease was acquired */
  /* Leases of sessions that ended, replaced (issue 31 item 6); sections
   * opened under them may still point at them, so they are freed at close. */
  tarn_lease **retired;
  size_t n_retired;
  wsection *qhead, *qtail;
  int busy;
  int lost;           /* under mu: an index put's lease guard failed; the lease is gone */
  int kafka;          /* a Kafka topic's log: every entry is checked (LS-095 ... LS-098) */
  char lost_why[256]; /* that guard failure's message */
} wlog;

struct tarn_writer {
  tarn_appender base; /* first: the writer as an appender (issue 32 item 1) */
  tarn_meta *meta;
  tarn_objstore *wal;
  tarn_writer_options o;
  pthread_mutex_t mu;
  pthread_cond_t cv_timer;  /* the timer: a batch opened, or stop */
  pthread_cond_t cv_upload; /* upload threads: a sealed batch, or stop */
  pthread_cond_t cv_put;    /* put threads: a section became ready, or stop */
  pthread_cond_t cv_done;   /* flush and blocked appends: progress */
  pthread_mutex_t lease_mu; /* serialises lease acquisition */
  wlog *logs;
  wbatch *cur;                       /* the open batch */
  wbatch *sealed_head, *sealed_tail; /* every sealed, unfinished batch, in seal order */
  wbatch *up_head, *up_tail;         /* sealed batches waiting for an upload thread */
  uint64_t next_id;
  size_t in_flight;
  /* payload buffers of written batches, for the next ones: fresh memory
   * costs a page fault per page on first touch, a large share of a small
   * append's cost */
  uint8_t *spare[4];
  size_t spare_cap[4];
  int nspare;
  int stopping, closing;
  pthread_t timer;
  pthread_t *uploaders, *putters;
  int n_up, n_put;
  tarn_writer_stats st;
  char last_err[512]; /* the message of the last entry that failed */
};

static int64_t now_ms(void) { return tarn__now_ms(); }

static void abstime_ms(struct timespec *ts, int64_t ms) {
  ts->tv_sec = (time_t)(ms / 1000);
  ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

void tarn_writer_options_default(tarn_writer_options *o) {
  memset(o, 0, sizeof *o);
  o->batch_ms = 250;
  o->max_object_bytes = 4u << 20;
  o->max_logs_per_object = 4;
  o->max_bytes_in_flight = 64u << 20;
  o->nonblocking = 0;
  o->upload_threads = 2;
  o->put_threads = 4;
  o->object_retries = 2;
  o->max_publish_delay_ms = 300000;
  o->max_put_ms = 60000;
}

static wlog *find_log(tarn_writer *w, uint64_t id) {
  for (wlog *l = w->logs; l; l = l->next)
    if (l->log_id == id)
      return l;
  return NULL;
}

/* ---- batching (under mu) ---------------------------------------------------- */

static wbatch *batch_new(tarn_writer *w) {
  wbatch *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  b->logs = calloc(w->o.max_logs_per_object, sizeof *b->logs);
  b->records = calloc(w->o.max_logs_per_object, sizeof *b->records);
  b->secs = calloc(w->o.max_logs_per_object, sizeof *b->secs);
  if (!b->logs || !b->records || !b->secs) {
    free(b->logs);
    free(b->records);
    free(b->secs);
    free(b);
    return NULL;
  }
  b->deadline_ms = now_ms() + w->o.batch_ms;
  if (w->nspare > 0) {
    w->nspare--;
    b->pay = w->spare[w->nspare];
    b->pay_cap = w->spare_cap[w->nspare];
  }
  return b;
}

/* Under mu: keeps b's payload buffer for a later batch, or frees it. */
static void recycle_payloads(tarn_writer *w, wbatch *b) {
  if (b->pay &&
      b->pay_cap <= (w->o.max_object_bytes < (16u << 20) ? w->o.max_object_bytes : (16u << 20)) &&
      w->nspare < (int)(sizeof w->spare / sizeof w->spare[0])) {
    w->spare[w->nspare] = b->pay;
    w->spare_cap[w->nspare++] = b->pay_cap;
  } else
    free(b->pay);
  b->pay = NULL;
  b->pay_len = b->pay_cap = 0;
}

/* Frees b with its entries. */
static void batch_free(wbatch *b) {
  if (!b)
    return;
  for (size_t i = 0; i < b->nlogs; i++) {
    if (b->secs[i]) {
      for (size_t k = 0; k < b->secs[i]->n; k++)
        free(b->secs[i]->ents[k].ext);
      free(b->secs[i]->ents);
      free(b->secs[i]->value);
      free(b->secs[i]);
    }
  }
  free(b->secs);
  free(b->logs);
  free(b->records);
  free(b->pay);
  free(b);
}

static size_t batch_log_index(const wbatch *b, uint64_t log_id) {
  for (size_t i = 0; i < b->nlogs; i++)
    if (b->logs[i] == log_id)
      return i;
  return SIZE_MAX;
}

/* Does the entry fit the open batch without breaking a limit? */
/* Whether section s already has the guard domain d. */
static int has_guard(const wsection *s, const void *d) {
  for (size_t k = 0; k < s->n_guards; k++)
    if (s->guards[k].domain == d)
      return 1;
  return 0;
}

static int batch_fits(const tarn_writer *w, const wbatch *b, uint64_t log_id, size_t len,
                      const wentry *e) {
  uint32_t records = e->records;
  if (b->bytes + len > w->o.max_object_bytes)
    return 0;
  size_t i = batch_log_index(b, log_id);
  if (i == SIZE_MAX)
    return b->nlogs < w->o.max_logs_per_object;
  const wsection *s = b->secs[i];
  if (e->guard.domain && !has_guard(s, e->guard.domain) && s->n_guards == TARN__WRITER_EXTRA_GUARDS)
    return 0; /* one put carries at most that many conditions */
  /* message_count is an int32 in the EntryIndex */
  return b->records[i] + records <= INT32_MAX;
}

/* Memory for payloads and objects. Fresh memory costs a page fault per
 * 4 KiB page on first touch — a large share of a small append's cost — so a
 * buffer of 2 MiB or more is aligned and offered to transparent huge pages
 * (one fault per 2 MiB; only where the kernel has them for madvise). */
#define HUGE_PAGE (2u << 20)
static uint8_t *big_alloc(size_t n) {
  if (n < HUGE_PAGE)
    return malloc(n);
  void *p = NULL;
  if (posix_memalign(&p, HUGE_PAGE, n) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, n, MADV_HUGEPAGE); /* advice only: without it, 4 KiB pages */
#endif
  return p;
}

/* Room for `more` bytes in b's payload buffer. The first allocation is a
 * whole object's worth (bounded), so the buffer never moves while it fills. */
static int reserve_payloads(const tarn_writer *w, wbatch *b, size_t more) {
  size_t need = b->pay_len + more;
  if (need <= b->pay_cap)
    return 0;
  uint8_t *nb;
  size_t c;
  if (!b->pay) {
    c = w->o.max_object_bytes < (16u << 20) ? w->o.max_object_bytes : (16u << 20);
    c = c > need ? c : need;
    nb = big_alloc(c);
  } else {
    for (c = b->pay_cap; c < need; c *= 2)
      ;
    nb = realloc(b->pay, c);
  }
  if (!nb)
    return tarn__err(TARN_ENOMEM, "out of memory");
  b->pay = nb;
  b->pay_cap = c;
  return 0;
}

/* Adds an entry to b: the payload is copied into b's buffer, unless ext
 * holds the entry's own copy (then owned by b). TARN_ENOMEM leaves b
 * unchanged (ext is still the caller's). */
static int batch_add(tarn_writer *w, wbatch *b, uint64_t log_id, const void *payload, size_t len,
                     uint8_t *ext, const wentry *proto) {
  size_t i = batch_log_index(b, log_id);
  wsection *s;
  int fresh = i == SIZE_MAX;
  if (fresh) {
    if (!(s = calloc(1, sizeof *s)))
      return tarn__err(TARN_ENOMEM, "out of memory");
    s->batch = b;
    s->log = find_log(w, log_id);
    s->lease = s->log->lease;
    i = b->nlogs++;
    b->logs[i] = log_id;
    b->secs[i] = s;
  }
  s = b->secs[i];
  int rc = 0;
  if (s->n == s->cap) {
    size_t c = s->cap ? s->cap * 2 : 64;
    wentry *ne = realloc(s->ents, c * sizeof *ne);
    if (ne) {
      s->ents = ne;
      s->cap = c;
    } else
      rc = tarn__err(TARN_ENOMEM, "out of memory");
  }
  if (!rc && !ext)
    rc = reserve_payloads(w, b, len);
  if (rc) {
    if (fresh) { /* the section was new: undo it */
      b->nlogs--;
      b->secs[i] = NULL;
      free(s->ents);
      free(s);
    }
    return rc;
  }
  wentry *e = &s->ents[s->n++];
  *e = *proto;
  if (e->guard.domain && !has_guard(s, e->guard.domain))
    s->guards[s->n_guards++] = e->guard; /* batch_fits made room */
  e->len = (uint32_t)len;
  e->ext = ext;
  if (!ext) {
    e->off = b->pay_len;
    if (len)
      memcpy(b->pay + b->pay_len, payload, len);
    b->pay_len += len;
  }
  s->records += e->records;
  b->records[i] += e->records;
  if (b->nents++ == 0)
    b->t_first = e->t_append;
  b->bytes += len;
  return 0;
}

/* Seals b: its sections join their logs' queues in seal order, then it waits
 * for an upload thread. */
static void seal(tarn_writer *w, wbatch *b) {
  if (w->cur == b)
    w->cur = NULL;
  if (b->nents == 0) {
    batch_free(b);
    return;
  }
  b->id = w->next_id++;
  tarn_metrics_observe("tarn_writer_stage_seconds", tarn_metrics_now() - b->t_first, "stage",
                       "batch_wait", NULL);
  /* counted here, once per batch, not on every append (a hot path) */
  tarn_metrics_inc("tarn_writer_appends_total", b->nents, NULL);
  tarn_metrics_inc("tarn_writer_append_bytes_total", b->bytes, NULL);
  for (size_t i = 0; i < b->nlogs; i++) {
    wsection *s = b->secs[i];
    if (s->log->qtail)
      s->log->qtail->next = s;
    else
      s->log->qhead = s;
    s->log->qtail = s;
  }
  b->puts_left = b->nlogs;
  if (w->sealed_tail)
    w->sealed_tail->next = b;
  else
    w->sealed_head = b;
  w->sealed_tail = b;
  if (w->up_tail)
    w->up_tail->up_next = b;
  else
    w->up_head = b;
  w->up_tail = b;
  pthread_cond_signal(&w->cv_upload);
}

/* ---- completion ------------------------------------------------------------- */

/* Delivers the outcome of the section's entries and frees their payloads.
 * Called without mu. */
static void deliver(tarn_writer *w, wsection *s, int status, uint64_t start, int64_t ts) {
  if (status) {
    pthread_mutex_lock(&w->mu);
    snprintf(w->last_err, sizeof w->last_err, "log %llu: %s", (unsigned long long)s->log->log_id,
             s->state == SEC_FAILED ? s->batch->err : tarn_errmsg());
    pthread_mutex_unlock(&w->mu);
  }
  uint64_t off = start;
  size_t bytes = 0;
  double now = tarn_metrics_now();
  tarn_metrics_inc("tarn_writer_entries_total", s->n, "outcome",
                   status == 0               ? "acknowledged"
                   : status == TARN_EUNKNOWN ? "unknown"
                                             : "failed",
                   NULL);
  tarn_metrics_hist lat;
  memset(&lat, 0, sizeof lat);
  for (size_t i = 0; i < s->n; i++) {
    wentry *e = &s->ents[i];
    tarn_metrics_hist_add(&lat, now - e->t_append);
    if (TARN__PLANTED(TARN__BUG_ACK_ORDER_REVERSED))
      e = &s->ents[s->n - 1 - i];
    if (e->cb)
      e->cb(e->arg, status, status == 0 ? off : 0, status == 0 ? ts : 0);
    /* an entry of several records takes that many offsets (LS-039) */
    off += TARN__PLANTED(TARN__BUG_ACK_NEXT_PLUS_ONE) ? 1 : e->records;
    bytes += e->len;
  }
  tarn_metrics_observe_hist("tarn_writer_append_seconds", &lat, NULL);
  pthread_mutex_lock(&w->mu);
  w->in_flight -= bytes;
  if (status == 0)
    w->st.entries_acked += s->n;
  else if (status == TARN_EUNKNOWN)
    w->st.entries_unknown += s->n;
  else
    w->st.entries_failed += s->n;
  pthread_mutex_unlock(&w->mu);
}

/* Under mu: pops the log's finished head; frees finished batches from the
 * front of the sealed list. */
static void section_finished(tarn_writer *w, wsection *s) {
  wlog *l = s->log;
  l->qhead = s->next;
  if (!l->qhead)
    l->qtail = NULL;
  l->busy = 0;
  wbatch *b = s->batch;
  if (--b->puts_left == 0) {
    b->done = 1;
    while (w->sealed_head && w->sealed_head->done) {
      wbatch *f = w->sealed_head;
      w->sealed_head = f->next;
      if (!w->sealed_head)
        w->sealed_tail = NULL;
      batch_free(f);
    }
  }
  pthread_cond_broadcast(&w->cv_done);
  pthread_cond_broadcast(&w->cv_put);
}

/* ---- A2: the object ------------------------------------------------------------ */

/* An upload thread's memory, kept from one object to the next: building a
 * 4 MiB object in fresh memory each time costs a page fault per page. */
typedef tarn__wal_object scratch;

static void scratch_init(scratch *x) { tarn__wal_object_init(x); }

static void scratch_free(scratch *x) { tarn__wal_object_free(x); }

/* Builds b's object into x->obj and frees the large entries' own copies (no
 * longer needed: the object holds them; the caller recycles b->pay). */
static int build_object(tarn_writer *w, wbatch *b, scratch *x) {
  int rc = 0;
  tarn__wal_object_reset(x);
  /* the object's size at most: the header, 8 + 5 bytes per section and three
   * varint32s per entry (LS-017) */
  size_t most = 8 + b->nlogs * 13 + b->nents * 15 + b->bytes;
  if (x->obj.cap < most) {
    uint8_t *nb = big_alloc(most);
    if (!nb)
      return tarn__err(TARN_ENOMEM, "out of memory");
    free(x->obj.data);
    x->obj.data = nb;
    x->obj.cap = most;
  }
  /* section by section: each log's payloads are contiguous in the object,
   * so a reader fetches a section's payloads with one range read */
  for (size_t i = 0; i < b->nlogs && !rc; i++) {
    const wsection *s = b->secs[i];
    for (size_t k = 0; k < s->n && !rc; k++) {
      const wentry *e = &s->ents[k];
      rc = tarn__wal_object_add(x, b->logs[i], e->ext ? e->ext : b->pay + e->off, e->len,
                                e->records);
    }
  }
  if (!rc)
    rc = tarn__wal_object_build(x);
  for (size_t i = 0; i < b->nlogs; i++)
    for (size_t k = 0; k < b->secs[i]->n; k++) {
      free(b->secs[i]->ents[k].ext);
      b->secs[i]->ents[k].ext = NULL;
    }
  return rc;
}

/* After each object put (tarn__wal_object_write): the writer's metrics. */
static int after_put(void *arg, int rc, const tarn__wal_object *o) {
  (void)arg;
  tarn_metrics_observe("tarn_writer_stage_seconds", tarn_metrics_now() - o->put_started, "stage",
                       "object_put", NULL);
  tarn_metrics_inc("tarn_writer_objects_total", 1, "result", rc ? "failed" : "written", NULL);
  if (!rc)
    tarn_metrics_inc("tarn_writer_object_bytes_total", o->obj.len, NULL);
  if (TARN__PLANTED(TARN__BUG_INDEX_BEFORE_OBJECT))
    rc = 0; /* planted: the index goes out whether or not the object exists */
  return rc;
}

static int write_object(tarn_writer *w, wbatch *b, scratch *x) {
  int rc = build_object(w, b, x);
  /* LS-009: create-only; a name is never reused, even after a failure */
  tarn__wal_write how = {w->o.object_retries + 1, 20, 40, 1, after_put, NULL};
  int attempt = 0;
  if (!rc) {
    rc = tarn__wal_object_write(x, w->wal, &how, &attempt);
    b->written_mono = x->written_mono;
  }
  if (rc) {
    /* LS-038: an object of unknown outcome is treated as not written */
    if (rc == TARN_EUNKNOWN || rc == TARN_ETIMEDOUT)
      rc = tarn__err(TARN_EIO, "writing WAL object %s: outcome unknown, entries not appended",
                     x->name);
    else
      tarn__errctx(rc, "writing WAL object");
  }
  /* A3's values: one RAW EntryIndex per section (LS-026) */
  for (size_t i = 0; !rc && i < x->wb.section_count; i++) {
    const tarn_wal_built_section *bs = &x->wb.sections[i];
    wsection *s = b->secs[batch_log_index(b, bs->log_id)];
    tarn_buf v = TARN_BUF_INIT;
    rc = tarn__wal_object_section_value(x, i, &v);
    if (rc) {
      tarn_buf_free(&v);
      break;
    }
    s->value = tarn_buf_steal(&v, &s->value_len);
  }
  /* keep an ordinary object's worth of memory, not a huge entry's */
  if (x->obj.cap > 2 * w->o.max_object_bytes + (1u << 20))
    tarn_buf_free(&x->obj);
  return rc;
}

/* Under mu: takes the first batch waiting for its object, or NULL. */
static wbatch *take_upload(tarn_writer *w) {
  wbatch *b = w->up_head;
  if (b) {
    w->up_head = b->up_next;
    if (!w->up_head)
      w->up_tail = NULL;
  }
  return b;
}

/* Under mu (released while writing): A2 for one taken batch. */
static void upload(tarn_writer *w, wbatch *b, scratch *x) {
  pthread_mutex_unlock(&w->mu);
  int rc = write_object(w, b, x);
  pthread_mutex_lock(&w->mu);
  recycle_payloads(w, b);
  if (rc) {
    w->st.object_failures++;
    snprintf(b->err, sizeof b->err, "%s", tarn_errmsg());
  } else {
    w->st.objects_written++;
  }
  /* LS-037: sections become ready for their puts only now */
  for (size_t i = 0; i < b->nlogs; i++) {
    b->secs[i]->state = rc ? SEC_FAILED : SEC_READY;
    b->secs[i]->rc = rc;
  }
  pthread_cond_broadcast(&w->cv_put);
}

static void *upload_main(void *arg) {
  tarn_writer *w = arg;
  scratch x;
  scratch_init(&x);
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->up_head && !w->stopping)
      pthread_cond_wait(&w->cv_upload, &w->mu);
    wbatch *b = take_upload(w);
    if (!b)
      break;
    upload(w, b, &x);
  }
  pthread_mutex_unlock(&w->mu);
  scratch_free(&x);
  return NULL;
}

/* ---- A3/A4: index puts ---------------------------------------------------------- */

static wsection *next_ready(tarn_writer *w) {
  for (wlog *l = w->logs; l; l = l->next)
    if (!l->busy && l->qhead && l->qhead->state != SEC_PENDING)
      return l->qhead;
  return NULL;
}

/* After a guarded put failed: whether the lease's own conditions still hold
 * (its record at its version, no fence), so that the failure was an entry's
 * condition (issue 31 item 3) and the lease is not lost. */
static int lease_holds(tarn_writer *w, const wsection *s) {
  char why[512];
  snprintf(why, sizeof why, "%s", tarn_errmsg());
  tarn_meta_guard g[TARN_LEASE_GUARDS];
  size_t n = tarn_lease_guards(s->lease, g);
  char part[TARN_KEY_PARTITION_LEN + 1];
  tarn_key_partition(part, s->log->log_id);
  int ok = 1;
  for (size_t i = 0; ok && i < n; i++) {
    tarn_meta_rec r = {0};
    int rc = tarn_meta_get(w->meta, part, g[i].key, &r);
    if (g[i].kind == TARN_META_GUARD_EXISTS)
      ok = rc == 0 && (g[i].version == TARN_META_ANY_VERSION || r.stat.version == g[i].version);
    else
      ok = rc == TARN_ENOTFOUND;
    tarn_meta_rec_free(&r);
  }
  tarn__err(TARN_EGUARD, "%s", why); /* the put's own message stands */
  return ok;
}

static void publish(tarn_writer *w, wsection *s) {
  if (s->state == SEC_FAILED) {
    deliver(w, s, s->rc, 0, 0);
    return;
  }
  char part[TARN_KEY_PARTITION_LEN + 1], prefix[TARN_KEY_FIELD_LEN + 1];
  uint64_t log_id = s->log->log_id;
  tarn_key_partition(part, log_id);
  snprintf(prefix, sizeof prefix, "%020llu", (unsigned long long)log_id);
  /* LS-042, LS-048: publish only while the lease's session lives */
  int rc = TARN__PLANTED(TARN__BUG_PUBLISH_UNGUARDED) ? 0 : tarn_lease_check(s->lease);
  pthread_mutex_lock(&w->mu);
  if (!rc && s->log->lost)
    rc = tarn__err(TARN_EGUARD, "log %llu: the write lease was lost (%s); entries not appended",
                   (unsigned long long)log_id, s->log->lost_why);
  pthread_mutex_unlock(&w->mu);
  uint64_t d2 = 0;
  for (size_t i = 0; i < s->n; i++)
    d2 += s->ents[i].len;
  /* LS-085, LS-086: the last check before the put; ages on the monotonic
   * clock, so a wall clock stepping back cannot stretch them */
  int64_t checked = tarn__mono_ms(), age = checked - s->batch->written_mono;
  if (!rc && age > w->o.max_publish_delay_ms && !TARN__PLANTED(TARN__BUG_PUBLISH_DELAY_UNCHECKED))
    /* the reclaimer may already have deleted the object (found by tarn-sim) */
    rc =
        tarn__err(TARN_ETIMEDOUT,
                  "log %llu: WAL object written %lld ms ago, over the %lld ms "
                  "publish limit; entries not appended",
                  (unsigned long long)log_id, (long long)age, (long long)w->o.max_publish_delay_ms);
  if (rc) {
    deliver(w, s, rc, 0, 0);
    if (!TARN__PLANTED(TARN__BUG_PUBLISH_FALLS_THROUGH))
      return;
  }
  tarn_meta_rec out = {0};
  double t0 = tarn_metrics_now();
  /* A3, LS-025: the only way this writer creates an index key. Guarded
   * (docs/log.md, "Guarded changes"): it commits only while the lease record
   * exists and L has no fence, so nothing lands in a log whose deletion
   * drained the leases; a failed guard wrote nothing, the entries fail. */
  tarn_meta_guard g[TARN_LEASE_GUARDS + TARN__WRITER_EXTRA_GUARDS];
  size_t ng = tarn_lease_guards(s->lease, g);
  if (TARN__PLANTED(TARN__BUG_PUBLISH_UNGUARDED))
    ng = 0; /* planted: the spec's unguarded A3 (reverts #11 part 4) */
  else if (TARN__PLANTED(TARN__BUG_PUBLISH_IGNORES_FENCE))
    ng = 1; /* planted: the lease record's guard only (g[1] is the fence's) */
  /* the entries' own conditions (issue 31 item 3), held across the put */
  size_t held = 0;
  for (; held < s->n_guards; held++)
    if ((rc = s->guards[held].hold(s->guards[held].domain, &g[ng++])) != 0)
      break;
  uint64_t d1 = TARN__PLANTED(TARN__BUG_SEQ_PUT_COUNTS_ENTRIES) ? s->n : s->records;
  if (!rc)
    rc = tarn_meta_sequenced_put_if(w->meta, part, prefix, d1, d2, s->value, s->value_len, g, ng,
                                    &out);
  for (size_t k = 0; k < held; k++)
    s->guards[k].release(s->guards[k].domain);
  /* a failed entry's own condition leaves the lease good: the lease is lost
   * only when its own conditions fail */
  if (rc == TARN_EGUARD && !(s->n_guards && lease_holds(w, s))) {
    pthread_mutex_lock(&w->mu);
    if (s->lease == s->log->lease) { /* not a lease that was replaced meanwhile */
      s->log->lost = 1;
      snprintf(s->log->lost_why, sizeof s->log->lost_why, "%s", tarn_errmsg());
    }
    pthread_mutex_unlock(&w->mu);
  }
  tarn_metrics_observe("tarn_writer_stage_seconds", tarn_metrics_now() - t0, "stage", "index_put",
                       NULL);
  if (rc == TARN_ETIMEDOUT)
    rc = TARN_EUNKNOWN;
  if (rc == TARN_EUNKNOWN && TARN__PLANTED(TARN__BUG_UNKNOWN_AS_FAILED))
    rc = TARN_EIO;
  int64_t took = tarn__mono_ms() - checked;
  if (!rc && took > w->o.max_put_ms && !TARN__PLANTED(TARN__BUG_WRITER_NO_LATE_PUT_BOUND))
    /* LS-085: past the bound the grace rule allows for, the object may be
     * gone before the record landed: never acknowledge such an entry */
    rc = tarn__err(TARN_EUNKNOWN,
                   "log %llu: the index put took %lld ms, over the %lld ms bound; "
                   "the WAL object may have been reclaimed",
                   (unsigned long long)log_id, (long long)took, (long long)w->o.max_put_ms);
  tarn_key k;
  if (!rc && (tarn_key_parse(out.key, strlen(out.key), &k) != 0 || k.log_id != log_id ||
              k.end_offset < s->records))
    /* the put committed, but its key does not tell the offsets */
    rc = tarn__err(TARN_EUNKNOWN, "sequenced put returned key %s for log %llu", out.key,
                   (unsigned long long)log_id);
  if (!rc) {
    pthread_mutex_lock(&w->mu);
    w->st.index_puts++;
    pthread_mutex_unlock(&w->mu);
    /* A4, LS-039: acknowledged after the put committed; offsets from e - d1 */
    deliver(w, s, 0,
            k.end_offset - (TARN__PLANTED(TARN__BUG_ACK_OFFSET_BY_ENTRIES) ? s->n : s->records),
            TARN__PLANTED(TARN__BUG_ACK_TS_WRITER_CLOCK) ? now_ms() : out.stat.created_ms);
  } else {
    deliver(w, s, rc, 0, 0);
  }
  tarn_meta_rec_free(&out);
}

/* Under mu (released while putting): A3 and A4 for one ready section. */
static void put_section(tarn_writer *w, wsection *s) {
  s->log->busy = 1;
  pthread_mutex_unlock(&w->mu);
  publish(w, s);
  pthread_mutex_lock(&w->mu);
  section_finished(w, s);
}

static void *put_main(void *arg) {
  tarn_writer *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    wsection *s;
    while (!(s = next_ready(w)) && !(w->stopping && !w->sealed_head))
      pthread_cond_wait(&w->cv_put, &w->mu);
    if (!s)
      break;
    put_section(w, s);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* ---- the timer ---------------------------------------------------------------- */

static void *timer_main(void *arg) {
  tarn_writer *w = arg;
  pthread_mutex_lock(&w->mu);
  while (!w->stopping) {
    if (!w->cur) {
      pthread_cond_wait(&w->cv_timer, &w->mu);
      continue;
    }
    int64_t dl = w->cur->deadline_ms;
    if (now_ms() >= dl) {
      seal(w, w->cur);
      continue;
    }
    struct timespec ts;
    abstime_ms(&ts, dl);
    pthread_cond_timedwait(&w->cv_timer, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* ---- the API ------------------------------------------------------------------- */

/* Stops and joins the threads (the writer must be drained or never used). */
static void stop_threads(tarn_writer *w, int timer_started) {
  pthread_mutex_lock(&w->mu);
  w->stopping = 1;
  pthread_cond_broadcast(&w->cv_timer);
  pthread_cond_broadcast(&w->cv_upload);
  pthread_cond_broadcast(&w->cv_put);
  pthread_mutex_unlock(&w->mu);
  if (timer_started)
    pthread_join(w->timer, NULL);
  for (int i = 0; i < w->n_up; i++)
    pthread_join(w->uploaders[i], NULL);
  for (int i = 0; i < w->n_put; i++)
    pthread_join(w->putters[i], NULL);
}

static const tarn__appender_methods writer_methods; /* below */
int tarn_writer_open(tarn_meta *meta, tarn_objstore *wal, const tarn_writer_options *o,
                     tarn_writer **out) {
  *out = NULL;
  tarn_writer_options d;
  tarn_writer_options_default(&d);
  if (!o)
    o = &d;
  int threads_ok = o->stepped || (o->upload_threads >= 1 && o->put_threads >= 1 &&
                                  o->upload_threads <= 64 && o->put_threads <= 64);
  if (!meta || !wal || o->max_object_bytes == 0 || o->max_object_bytes > (1u << 30) ||
      o->max_logs_per_object == 0 || !threads_ok || o->object_retries < 0 ||
      o->max_bytes_in_flight == 0)
    return tarn__err(TARN_EINVAL, "writer: bad options (object size 1 B..1 GiB, logs per object "
                                  ">= 1, 1..64 threads)");
  /* LS-085, LS-086: never later than the deployment's limits, which its WAL
   * grace must cover (a record breaking the rule is refused) */
  tarn_timing tm;
  int trc = tarn_timing_load(meta, &tm, NULL);
  if (!trc) {
    if (o->max_publish_delay_ms > 0 && o->max_publish_delay_ms < tm.max_publish_delay_ms)
      tm.max_publish_delay_ms = o->max_publish_delay_ms;
    if (o->max_put_ms > 0 && o->max_put_ms < tm.max_put_ms)
      tm.max_put_ms = o->max_put_ms;
    trc = tarn_timing_check(&tm, "writer");
  }
  if (trc)
    return trc;
  tarn_writer *w = calloc(1, sizeof *w);
  if (!w)
    return tarn__err(TARN_ENOMEM, "out of memory");
  w->meta = meta;
  w->base.m = &writer_methods;
  w->wal = wal;
  w->o = *o;
  w->o.max_publish_delay_ms = tm.max_publish_delay_ms;
  w->o.max_put_ms = tm.max_put_ms;
  pthread_mutex_init(&w->mu, NULL);
  pthread_mutex_init(&w->lease_mu, NULL);
  pthread_cond_init(&w->cv_timer, NULL);
  pthread_cond_init(&w->cv_upload, NULL);
  pthread_cond_init(&w->cv_put, NULL);
  pthread_cond_init(&w->cv_done, NULL);
  if (o->stepped) { /* the caller drives the work with tarn_writer_step */
    *out = w;
    return 0;
  }
  w->uploaders = calloc((size_t)o->upload_threads, sizeof *w->uploaders);
  w->putters = calloc((size_t)o->put_threads, sizeof *w->putters);
  int rc = (w->uploaders && w->putters) ? 0 : TARN_ENOMEM;
  if (!rc && pthread_create(&w->timer, NULL, timer_main, w))
    rc = TARN_ENOMEM;
  int timer_ok = !rc;
  for (int i = 0; !rc && i < o->upload_threads; i++, w->n_up++)
    if (pthread_create(&w->uploaders[i], NULL, upload_main, w))
      rc = TARN_ENOMEM;
  for (int i = 0; !rc && i < o->put_threads; i++, w->n_put++)
    if (pthread_create(&w->putters[i], NULL, put_main, w))
      rc = TARN_ENOMEM;
  if (rc) {
    stop_threads(w, timer_ok);
    free(w->uploaders);
    free(w->putters);
    free(w);
    return tarn__err(TARN_ENOMEM, "writer: cannot start threads");
  }
  *out = w;
  return 0;
}

/* A1: the lease of log_id, acquired on first use and kept until close.
 * Called without mu; another thread may be acquiring the same lease. */
static int ensure_log(tarn_writer *w, uint64_t log_id) {
  pthread_mutex_lock(&w->lease_mu);
  pthread_mutex_lock(&w->mu);
  wlog *have = find_log(w, log_id);
  int stale = have && have->lease_gen != tarn_meta_session_gen(w->meta);
  pthread_mutex_unlock(&w->mu);
  int rc = 0;
  if (stale) {
    /* Issue 31 item 6: the handle renewed its session, and the lease went
     * with the old one. A NEW lease (a new record of the new session) takes
     * its place; the old one is never revived, and the sections opened under
     * it fail at publish (tarn_lease_check), as they would have anyway. */
    tarn_lease *nl = NULL;
    tarn_lease **r = NULL;
    uint64_t gen = tarn_meta_session_gen(w->meta);
    if ((rc = tarn_lease_acquire(w->meta, log_id, &nl)) == 0) {
      pthread_mutex_lock(&w->mu);
      r = realloc(have->retired, (have->n_retired + 1) * sizeof *r);
      if (r) {
        have->retired = r;
        have->retired[have->n_retired++] = have->lease;
        have->lease = nl;
        have->lease_gen = gen;
        have->lost = 0;
        /* the open batch's section of this log holds entries of the old
         * lease: new entries go to a section of the new one */
        if (w->cur && batch_log_index(w->cur, log_id) != SIZE_MAX)
          seal(w, w->cur);
      }
      pthread_mutex_unlock(&w->mu);
      if (!r) {
        tarn_lease_release(nl);
        rc = tarn__err(TARN_ENOMEM, "out of memory");
      }
    }
  } else if (!have) {
    uint64_t gen = tarn_meta_session_gen(w->meta);
    wlog *l = calloc(1, sizeof *l);
    /* Whether the log is a Kafka topic's is learned here, once, from the
     * catalog (a stream's properties never change), so that no caller of
     * the library, the CLI or the listener can append to one unchecked. */
    int kafka = l ? tarn_kafka_log_is_topic(w->meta, log_id) : 0;
    if (!l)
      rc = tarn__err(TARN_ENOMEM, "out of memory");
    else if (kafka < 0)
      rc = kafka, free(l);
    else if ((rc = tarn_lease_acquire(w->meta, log_id, &l->lease)) != 0)
      free(l); /* LS-041: the lease module gave the record back */
    else if ((rc = tarn__log_check_writable_version(w->meta, log_id)) != 0) {
      /* LS-001 (issue 31): under the lease, so no append of ours reaches a
       * legacy log; the lease goes back, nothing was written */
      char why[512];
      snprintf(why, sizeof why, "%s", tarn_errmsg());
      tarn_lease_release(l->lease);
      free(l);
      rc = tarn__err(rc, "%s", why);
    } else {
      l->lease_gen = gen;
      l->log_id = log_id;
      l->kafka = kafka;
      pthread_mutex_lock(&w->mu);
      l->next = w->logs;
      w->logs = l;
      pthread_mutex_unlock(&w->mu);
    }
  }
  pthread_mutex_unlock(&w->lease_mu);
  return rc;
}

/* Under mu: admits an entry (bounded memory) and adds it to a batch. On
 * failure ext is still the caller's. */
static int enqueue(tarn_writer *w, uint64_t log_id, const void *payload, size_t len, uint8_t *ext,
                   const wentry *proto) {
  int rc;
  /* bounded memory: wait (or refuse) while over the limit; one entry alone always fits */
  while (w->in_flight > 0 && w->in_flight + len > w->o.max_bytes_in_flight && !w->closing) {
    if (w->o.nonblocking || w->o.stepped) /* stepped: nobody else could make room */
      return tarn__err(TARN_EBUSY, "append: %zu bytes in flight, over the limit",
                       w->o.max_bytes_in_flight);
    if (w->cur) /* progress needs the open batch sealed */
      seal(w, w->cur);
    pthread_cond_wait(&w->cv_done, &w->mu);
  }
  if (w->closing)
    return tarn__err(TARN_ECLOSED, "append: the writer is closing");
  if (len > w->o.max_object_bytes) {
    /* an entry over the object limit gets an object of its own */
    if (w->cur)
      seal(w, w->cur);
    wbatch *b = batch_new(w);
    if (!b)
      return tarn__err(TARN_ENOMEM, "out of memory");
    if ((rc = batch_add(w, b, log_id, payload, len, ext, proto))) {
      batch_free(b);
      return rc;
    }
    w->in_flight += len;
    seal(w, b);
    return 0;
  }
  if (w->cur && !batch_fits(w, w->cur, log_id, len, proto))
    seal(w, w->cur);
  if (!w->cur) {
    if (!(w->cur = batch_new(w)))
      return tarn__err(TARN_ENOMEM, "out of memory");
    pthread_cond_signal(&w->cv_timer);
  }
  if ((rc = batch_add(w, w->cur, log_id, payload, len, ext, proto)))
    return rc;
  w->in_flight += len;
  if (w->cur->bytes >= w->o.max_object_bytes)
    seal(w, w->cur);
  return 0;
}

/* o->kafka_checked: the caller ran LS-095 ... LS-098 over these bytes
 * already (tarn__append_opts); otherwise a Kafka topic's entry is checked
 * here. o->guard: met with the section's index put (appender_impl.h). */
static int append(tarn_writer *w, uint64_t log_id, const void *payload, size_t len,
                  uint32_t record_count, tarn_append_cb cb, void *arg, const tarn__append_opts *o) {
  int checked = o->kafka_checked;
  const tarn__append_guard *guard = o->guard;
  if (record_count == 0) /* LS-016 */
    return tarn__err(TARN_EINVAL, "append: an entry must hold at least one record");
  if (record_count > INT32_MAX || len > INT32_MAX || log_id > TARN_KEY_MAX)
    return tarn__err(TARN_ERANGE, "append: record count, size or log ID too large (varint32)");
  if (len && !payload)
    return tarn__err(TARN_EINVAL, "append: NULL payload");
  int rc = tarn_meta_session_ok(w->meta);
  if (rc)
    return tarn__err(rc, "append: the metadata-store session ended; no more appends");
  wentry proto = {.records = record_count, .cb = cb, .arg = arg, .t_append = tarn_metrics_now()};
  if (guard)
    proto.guard = *guard;
  /* a large payload is copied before taking the lock, which every other
   * append is waiting for; a small one is copied into the batch under it */
  uint8_t *ext = NULL;
  if (len > INLINE_MAX) {
    if (!(ext = malloc(len)))
      return tarn__err(TARN_ENOMEM, "out of memory");
    memcpy(ext, payload, len);
  }
  /* the common case takes the lock once: the log is known, the batch open */
  pthread_mutex_lock(&w->mu);
  for (;;) {
    if (w->closing) {
      rc = tarn__err(TARN_ECLOSED, "append: the writer is closing");
      break;
    }
    wlog *l = find_log(w, log_id);
    /* a lease of an ended session is replaced below (ensure_log), not refused */
    int current = l && (l->lease_gen == tarn_meta_session_gen(w->meta) ||
                        TARN__PLANTED(TARN__BUG_WRITER_KEEPS_OLD_LEASE));
    if (current && l->lost) {
      rc = tarn__err(TARN_EGUARD, "append: log %llu: the write lease was lost (%s)",
                     (unsigned long long)log_id, l->lost_why);
      break;
    }
    if (l && l->kafka && !checked) {
      /* LS-095 ... LS-098: a bad entry is refused before any of it is
       * queued; the check reads only the caller's bytes, so off the lock. */
      pthread_mutex_unlock(&w->mu);
      rc = tarn_kafka_check(payload, len, record_count, NULL);
      if (rc)
        rc = tarn__errctx(rc, "append: log %llu is a Kafka topic's; entry refused",
                          (unsigned long long)log_id);
      pthread_mutex_lock(&w->mu);
      if (rc)
        break;
      checked = 1;
      continue;
    }
    if (current) {
      rc = enqueue(w, log_id, payload, len, ext, &proto);
      break;
    }
    pthread_mutex_unlock(&w->mu);
    rc = ensure_log(w, log_id); /* A1, the first append to this log */
    pthread_mutex_lock(&w->mu);
    if (rc)
      break;
  }
  pthread_mutex_unlock(&w->mu);
  if (rc)
    free(ext);
  return rc;
}

int tarn_writer_append(tarn_writer *w, uint64_t log_id, const void *payload, size_t len,
                       uint32_t record_count, tarn_append_cb cb, void *arg) {
  return tarn_appender_append(&w->base, log_id, payload, len, record_count, cb, arg);
}

int tarn_writer_append_sync(tarn_writer *w, uint64_t log_id, const void *payload, size_t len,
                            uint32_t record_count, uint64_t *offset, int64_t *timestamp_ms) {
  return tarn_appender_append_sync(&w->base, log_id, payload, len, record_count, offset,
                                   timestamp_ms);
}

/* Stepped mode: one unit of the work the threads would do, under mu. */
static int step_locked(tarn_writer *w, int step) {
  switch (step) {
  case TARN_WRITER_STEP_SEAL:
  case TARN_WRITER_STEP_SEAL_DUE:
    if (!w->cur || (step == TARN_WRITER_STEP_SEAL_DUE && now_ms() < w->cur->deadline_ms))
      return 0;
    seal(w, w->cur);
    return 1;
  case TARN_WRITER_STEP_UPLOAD: {
    wbatch *b = take_upload(w);
    if (!b)
      return 0;
    scratch x;
    scratch_init(&x);
    upload(w, b, &x);
    scratch_free(&x);
    return 1;
  }
  case TARN_WRITER_STEP_PUT: {
    wsection *s = next_ready(w);
    if (!s)
      return 0;
    put_section(w, s);
    return 1;
  }
  default: return tarn__err(TARN_EINVAL, "writer step: unknown step %d", step);
  }
}

int tarn_writer_step(tarn_writer *w, int step) {
  if (!w->o.stepped)
    return tarn__err(TARN_EINVAL, "writer step: the writer was not opened stepped");
  pthread_mutex_lock(&w->mu);
  int rc = step_locked(w, step);
  pthread_mutex_unlock(&w->mu);
  return rc;
}

int tarn_writer_seal(tarn_writer *w) {
  pthread_mutex_lock(&w->mu);
  if (w->cur)
    seal(w, w->cur);
  pthread_mutex_unlock(&w->mu);
  return 0;
}

int tarn_writer_flush(tarn_writer *w) {
  pthread_mutex_lock(&w->mu);
  if (w->cur && !TARN__PLANTED(TARN__BUG_FLUSH_SKIPS_OPEN_BATCH))
    seal(w, w->cur);
  uint64_t target = w->next_id; /* every batch sealed so far has id < target */
  while (w->sealed_head && w->sealed_head->id < target) {
    if (w->o.stepped) { /* do the work here: every sealed batch has a next step */
      if (step_locked(w, TARN_WRITER_STEP_UPLOAD) <= 0)
        step_locked(w, TARN_WRITER_STEP_PUT);
    } else
      pthread_cond_wait(&w->cv_done, &w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return 0;
}

/* Frees the writer's memory and nothing else (stepped mode only). */
static void free_writer(tarn_writer *w) {
  while (w->nspare > 0)
    free(w->spare[--w->nspare]);
  free(w->uploaders);
  free(w->putters);
  pthread_cond_destroy(&w->cv_timer);
  pthread_cond_destroy(&w->cv_upload);
  pthread_cond_destroy(&w->cv_put);
  pthread_cond_destroy(&w->cv_done);
  pthread_mutex_destroy(&w->lease_mu);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

int tarn_writer_discard(tarn_writer *w) {
  if (!w)
    return 0;
  if (!w->o.stepped)
    return tarn__err(TARN_EINVAL, "writer discard: only a stepped writer can be discarded");
  if (w->cur)
    batch_free(w->cur);
  for (wbatch *b = w->sealed_head; b;) {
    wbatch *n = b->next;
    batch_free(b);
    b = n;
  }
  for (wlog *l = w->logs; l;) {
    wlog *n = l->next;
    tarn_lease_forget(l->lease); /* the record stays, as a dead process's would */
    for (size_t i = 0; i < l->n_retired; i++)
      tarn_lease_forget(l->retired[i]);
    free(l->retired);
    free(l);
    l = n;
  }
  free_writer(w);
  return 0;
}

int tarn_writer_close(tarn_writer *w) {
  if (!w)
    return 0;
  pthread_mutex_lock(&w->mu);
  w->closing = 1;
  pthread_cond_broadcast(&w->cv_done);
  pthread_mutex_unlock(&w->mu);
  tarn_writer_flush(w);
  if (!w->o.stepped)
    stop_threads(w, 1);
  /* LS-043: every put under the leases has completed; now release them */
  int rc = 0;
  for (wlog *l = w->logs; l;) {
    wlog *n = l->next;
    int r = tarn_lease_release(l->lease);
    /* leases of ended sessions: their records went with the sessions */
    for (size_t i = 0; i < l->n_retired; i++)
      tarn_lease_forget(l->retired[i]);
    free(l->retired);
    if (r && !rc)
      rc = r;
    free(l);
    l = n;
  }
  free_writer(w);
  return rc;
}

void tarn_writer_last_error(tarn_writer *w, char *buf, size_t n) {
  pthread_mutex_lock(&w->mu);
  snprintf(buf, n, "%s", w->last_err[0] ? w->last_err : "no failure");
  pthread_mutex_unlock(&w->mu);
}

void tarn_writer_stats_get(tarn_writer *w, tarn_writer_stats *s) {
  pthread_mutex_lock(&w->mu);
  *s = w->st;
  s->bytes_in_flight = w->in_flight;
  pthread_mutex_unlock(&w->mu);
}

/* ---- the writer as an appender (issue 32 item 1; log/appender_impl.h) ----- */

static tarn_writer *of(tarn_appender *a) { return (tarn_writer *)a; }

static int m_append(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                    uint32_t record_count, const tarn__append_opts *o, tarn_append_cb cb,
                    void *arg) {
  return append(of(a), log_id, payload, len, record_count, cb, arg, o);
}

static int m_sync_ok(tarn_appender *a) {
  (void)a; /* as before the appender: a stepped writer's caller steps it */
  return 1;
}

static int m_seal(tarn_appender *a) { return tarn_writer_seal(of(a)); }
static int m_flush(tarn_appender *a) { return tarn_writer_flush(of(a)); }
static int m_close(tarn_appender *a) { return tarn_writer_close(of(a)); }
static void m_last_error(tarn_appender *a, char *buf, size_t n) {
  tarn_writer_last_error(of(a), buf, n);
}

static void m_stats(tarn_appender *a, tarn_appender_stats *s) {
  tarn_writer_stats ws;
  tarn_writer_stats_get(of(a), &ws);
  *s = (tarn_appender_stats){ws.entries_acked, ws.entries_failed, ws.entries_unknown,
                             ws.bytes_in_flight};
}

static const tarn__appender_methods writer_methods = {"standard", m_append, m_sync_ok,    m_seal,
                                                      m_flush,    m_close,  m_last_error, m_stats};

tarn_appender *tarn_writer_appender(tarn_writer *w) { return w ? &w->base : NULL; }
