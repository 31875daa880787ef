/* The express writer (issue 14, "Slots", "Offsets at acknowledgement"): the
 * slot pipeline. Entries gather into a flight; a sealed flight takes the next
 * slot (never more than WIN past the last released one) and is written
 * create-only into all K buckets in parallel; a slot is committed when W
 * buckets are seen to hold its bytes; acknowledgements are released strictly
 * in slot order, committed slots only. A slot that can no longer reach W
 * halts the epoch, and the writer rolls to a new one. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "express/fence.h"
#include "express/xwriter_internal.h"
#include "log/format_version.h"
#include "log/index_scan.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/key.h"
#include "tarn/timing.h"
#include "tarn/wal.h"
#include "tarn/testing.h"
#include "util/clock.h"
#include "util/dirs.h"
#include "util/error.h"
#include "util/planted.h"

int tarn_stream_is_express(const tarn_catalog_record *r) {
  for (size_t i = 0; r && i < r->n_props; i++)
    if (!strcmp(r->props[i].key, TARN_STREAM_CLASS_PROP))
      return !strcmp(r->props[i].value, TARN_STREAM_CLASS_EXPRESS);
  return 0;
}

int tarn_express_deploy(tarn_meta *m, const char *const *buckets, size_t k, uint32_t w,
                        uint32_t win, int *created) {
  tarn__xbuckets s = {0};
  int rc = 0;
  for (size_t i = 0; i < k && !rc; i++)
    rc = tarn__xbuckets_add(&s, buckets[i]);
  s.w = w;
  s.win = win;
  if (!rc)
    rc = tarn__xbuckets_check(&s);
  if (!rc)
    rc = tarn__xbuckets_record(m, &s, created);
  tarn__xbuckets_free(&s);
  return rc;
}

int tarn_express_deploy_default(tarn_meta *m, const char *home, int *created) {
  char dir[4096], uri[4200];
  const char *bk[3];
  char store[3][4200];
  int rc = 0;
  for (int i = 0; i < 3 && !rc; i++) {
    /* durable: a bucket directory lost in a crash would lose its flights */
    snprintf(dir, sizeof dir, "%s/express/%c", home, 'a' + i);
    if (tarn__mkdirs_durable(dir, 0777) != 0)
      rc = tarn__errno(errno, "creating express bucket %s", dir);
    snprintf(dir, sizeof dir, "%s/express/%c", home, 'a' + i);
    snprintf(uri, sizeof uri, "file://%s@%c", dir, 'a' + i);
    snprintf(store[i], sizeof store[i], "%s", uri);
    bk[i] = store[i];
  }
  return rc ? rc : tarn_express_deploy(m, bk, 3, TARN__X_W_DEFAULT, TARN__X_WIN_DEFAULT, created);
}

void tarn_xwriter_options_default(tarn_xwriter_options *o) {
  memset(o, 0, sizeof *o);
  o->batch_ms = 2;
  o->max_flight_bytes = 1u << 20;
  o->max_bytes_in_flight = 64u << 20;
  o->put_threads = 0; /* WIN of the bucket set */
  o->put_attempts = 3;
  /* as the standard writer's window: absorb's WAL objects then cost the
   * standard root what a standard stream's do (tarn-bench express) */
  o->absorb_ms = 250;
  o->absorb_max_bytes = 4u << 20;
  o->reclaim_grace_ms = 60000;
  o->max_rolls = 16;
  o->finish_retry_ms = TARN_XWRITER_FINISH_RETRY_MS;
  o->finish_attempts = 12;
}

void tarn__xwriter_set_error(tarn_xwriter *w, int rc) {
  snprintf(w->err, sizeof w->err, "%s: %s", tarn_errname(rc), tarn_errmsg());
}

void tarn__xflight_free(xflight *f) {
  if (!f)
    return;
  for (size_t i = 0; i < f->n; i++)
    free(f->ents[i].payload);
  free(f->ents);
  tarn_buf_free(&f->obj);
  free(f);
}

/* Under mu: wakes the PUT threads; one per bucket for one new copy each, all
 * of them when what stopped them (a roll, the end) changed. */
static void wake_putters(tarn_xwriter *w, int all) {
  for (size_t b = 0; b < w->bs.k; b++) {
    if (all)
      pthread_cond_broadcast(&w->put_cv[b]);
    else
      pthread_cond_signal(&w->put_cv[b]);
  }
}

static int quorum_lost(const tarn_xwriter *w, const xflight *f) {
  return f->fails > (int)(w->bs.k - w->bs.w);
}

/* ---- delivery (callbacks outside mu, in append order) ---------------------- */

typedef struct outcome {
  tarn_append_cb cb;
  void *arg;
  int rc;
  uint64_t offset;
} outcome;

typedef struct outbox {
  outcome *v;
  size_t n, cap;
} outbox;

static void outbox_add(outbox *b, const xent *e, int rc, uint64_t offset) {
  if (b->n == b->cap) {
    size_t nc = b->cap ? 2 * b->cap : 64;
    outcome *nv = realloc(b->v, nc * sizeof *nv);
    if (!nv)
      abort(); /* an outcome owed to a caller cannot be dropped */
    b->v = nv;
    b->cap = nc;
  }
  b->v[b->n++] = (outcome){e->cb, e->arg, rc, offset};
}

/* Called without mu; then counts the deliveries (flush waits on them). */
static void outbox_deliver(tarn_xwriter *w, outbox *b) {
  int64_t ts = tarn__now_ms();
  for (size_t i = 0; i < b->n; i++)
    if (b->v[i].cb)
      b->v[i].cb(b->v[i].arg, b->v[i].rc, b->v[i].rc ? 0 : b->v[i].offset, b->v[i].rc ? 0 : ts);
  pthread_mutex_lock(&w->mu);
  w->delivered += b->n;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  free(b->v);
  memset(b, 0, sizeof *b);
}

/* ---- logs ------------------------------------------------------------------ */

int tarn__xlog_tail(tarn_meta *m, uint64_t log_id, uint64_t *end, uint64_t *cum) {
  tarn_meta_rec r;
  int rc = tarn__index_last(m, log_id, &r);
  *end = *cum = 0;
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return tarn__errctx(rc, "reading the last index record of log %" PRIu64, log_id);
  tarn_key k;
  rc = tarn_key_parse(r.key, strlen(r.key), &k);
  if (!rc) {
    *end = k.end_offset;
    *cum = k.cumulative_size;
  }
  tarn_meta_rec_free(&r);
  return rc;
}

static xlog *find_log(tarn_xwriter *w, uint64_t log_id) {
  for (xlog *l = w->logs; l; l = l->next)
    if (l->log_id == log_id)
      return l;
  return NULL;
}

/* A1, then the log's end from the index: the star is the log's only writer
 * while it leads it, so counting from here gives the offsets the index will
 * give (absorb checks that it does). */
static int ensure_log(tarn_xwriter *w, uint64_t log_id) {
  pthread_mutex_lock(&w->mu);
  xlog *l = find_log(w, log_id);
  pthread_mutex_unlock(&w->mu);
  if (l)
    return 0;
  pthread_mutex_lock(&w->log_mu);
  pthread_mutex_lock(&w->mu);
  l = find_log(w, log_id);
  pthread_mutex_unlock(&w->mu);
  int rc = 0;
  if (!l) {
    l = calloc(1, sizeof *l);
    rc = l ? tarn_lease_acquire(w->meta, log_id, &l->lease)
           : tarn__err(TARN_ENOMEM, "out of memory");
    if (!rc) /* LS-001: no version 3 record onto a legacy log (log/format_version.h) */
      rc = tarn__log_check_writable_version(w->meta, log_id);
    if (!rc) {
      l->log_id = log_id;
      rc = tarn__xgate_open(w, l); /* issue 15: before the end is read and anything acked */
    }
    if (!rc)
      rc = tarn__xlog_tail(w->meta, log_id, &l->absorbed_end, &l->absorbed_cum);
    /* so that `tarn express fence NS/NAME` finds the star to fence */
    if (!rc)
      rc = tarn__xlog_star_set(w->meta, log_id, w->star);
    if (rc) {
      if (l && l->lease)
        tarn_lease_release(l->lease);
      free(l);
    } else {
      l->log_id = log_id;
      l->next_off = l->released_end = l->absorbed_end;
      pthread_mutex_lock(&w->mu);
      l->next = w->logs;
      w->logs = l;
      pthread_mutex_unlock(&w->mu);
    }
  }
  pthread_mutex_unlock(&w->log_mu);
  return rc;
}

/* ---- gathering and sealing ------------------------------------------------- */

static xflight *new_flight(void) {
  xflight *f = calloc(1, sizeof *f);
  if (f)
    tarn_buf_init(&f->obj);
  return f;
}

static int window_open(const tarn_xwriter *w) {
  /* issue 14: assignment never runs more than WIN slots past the last released one */
  return w->next_slot <
         w->release_next + w->bs.win + TARN__PLANTED(TARN__BUG_XWRITER_WINDOW_PLUS_ONE);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Under mu: one slot's time from seal to W copies (issue 36 item 3). The
 * p99 of the ring is worked out again every 8th sample: a sort of 256
 * values, under mu, about 12 times a second at 100 slots a second. */
static void commit_sample(tarn_xwriter *w, int64_t ms) {
  w->commit_ms[w->n_commit++ % TARN__XCOMMIT_SAMPLES] = ms;
  if (w->n_commit % 8 != 1 && w->n_commit > 8)
    return;
  size_t n = w->n_commit < TARN__XCOMMIT_SAMPLES ? w->n_commit : TARN__XCOMMIT_SAMPLES;
  int64_t v[TARN__XCOMMIT_SAMPLES];
  memcpy(v, w->commit_ms, n * sizeof *v);
  qsort(v, n, sizeof *v, cmp_i64);
  w->commit_p99_ms = v[n * 99 / 100];
}

/* Under mu: how long a flight gathers after its first entry. With a latency
 * budget, what the budget leaves after the slots' commit p99 (half of it
 * before any slot committed), within [batch_ms, budget]: an entry's wait
 * plus its slot's commit stays about the budget at p99. */
static int64_t seal_wait_ms(const tarn_xwriter *w) {
  int64_t budget = w->o.latency_budget_ms, min = w->o.batch_ms;
  if (budget <= min)
    return min;
  int64_t q = w->n_commit ? w->commit_p99_ms : budget / 2;
  int64_t wait = budget - q;
  return wait < min ? min : wait;
}

/* Under mu: seals cur into the next slot and builds its flight. */
static int seal(tarn_xwriter *w) {
  xflight *f = w->cur;
  /* during a roll the epoch is changing: what gathers waits for the next one */
  if (!f || f->n == 0 || !window_open(w) || w->halting)
    return 0;
  tarn_wal_builder wb;
  tarn_wal_builder_init(&wb);
  int rc = 0;
  for (size_t i = 0; i < f->n && !rc; i++)
    rc = tarn_wal_builder_add(&wb, f->ents[i].log_id, f->ents[i].payload, f->ents[i].len,
                              f->ents[i].records);
  if (!rc)
    rc = tarn_wal_builder_finish(&wb, &f->obj);
  tarn_wal_builder_free(&wb);
  f->epoch = w->ep.epoch;
  f->slot = w->next_slot;
  if (!rc)
    rc = tarn__xslot_key(f->key, sizeof f->key, w->star, f->epoch, f->slot);
  if (rc)
    return rc; /* cur stays gathering; the append that hit this reports it */
  w->next_slot++;
  f->state = XF_SEALED;
  f->sealed_ms = tarn__mono_ms();
  w->cur = NULL;
  if (w->tail)
    w->tail->next = f;
  else
    w->head = f;
  w->tail = f;
  w->st.slots_sealed++;
  pthread_cond_broadcast(&w->cv);
  wake_putters(w, 0);
  return 1;
}

static int64_t mono(void) { return tarn__mono_ms(); }

/* LS-095 ... LS-098: an entry of a Kafka topic's log is refused unless it is
 * the binding's record batches holding record_count records, before any of
 * it is queued, exactly as the standard writer refuses it (src/log/writer.c):
 * an express topic must not be a way around the check. Whether the log is a
 * topic's is learned once per log from the catalog (a stream's properties
 * never change); the check reads only the caller's bytes, so off the lock. */
static int kafka_check(tarn_xwriter *w, uint64_t log_id, const void *payload, size_t len,
                       uint32_t record_count) {
  pthread_mutex_lock(&w->mu);
  xlog *l = find_log(w, log_id);
  int kafka = l ? l->kafka : 0;
  pthread_mutex_unlock(&w->mu);
  if (!kafka) {
    int r = tarn_kafka_log_is_topic(w->meta, log_id);
    if (r < 0)
      return r;
    kafka = r ? XLOG_KAFKA : XLOG_NOT_KAFKA;
    pthread_mutex_lock(&w->mu);
    if ((l = find_log(w, log_id)))
      l->kafka = kafka;
    pthread_mutex_unlock(&w->mu);
  }
  if (kafka != XLOG_KAFKA)
    return 0;
  int rc = tarn_kafka_check(payload, len, record_count, NULL);
  return rc ? tarn__errctx(rc,
                           "express append: log %" PRIu64 " is a Kafka topic's; entry "
                           "refused",
                           log_id)
            : 0;
}

/* o->kafka_checked: the caller ran LS-095 ... LS-098 over these bytes (the
 * Kafka listener's Produce), so kafka_check would only repeat them; o->guard:
 * checked before anything is done (appender_impl.h: no index put here). */
static int xappend(tarn_xwriter *w, uint64_t log_id, const void *payload, size_t len,
                   uint32_t record_count, const tarn__append_opts *o, tarn_append_cb cb,
                   void *arg) {
  const tarn__append_guard *g = o->guard;
  int rc = g && g->check ? g->check(g->domain) : 0;
  if (rc)
    return rc;
  if (record_count == 0)
    return tarn__err(TARN_EINVAL, "an entry holds at least one record (LS-016)");
  if (len > TARN_WAL_VARINT32_MAX)
    return tarn__err(TARN_ERANGE, "entry of %zu bytes is too large", len);
  rc = ensure_log(w, log_id);
  if (!rc && !o->kafka_checked)
    rc = kafka_check(w, log_id, payload, len, record_count);
  if (rc)
    return rc;
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy)
    return tarn__err(TARN_ENOMEM, "out of memory");
  memcpy(copy, payload, len);
  pthread_mutex_lock(&w->mu);
  for (;;) {
    /* a Finish that landed since ensure_log removed the log: it is
     * another's now, or opens again through the gate on the next append */
    const xlog *fl = find_log(w, log_id);
    if (!fl || fl->finishing) {
      rc = tarn__err(TARN_EUNAVAIL,
                     "express log %" PRIu64 " is being released (its Finish "
                     "has not landed); retry",
                     log_id);
      break;
    }
    if (w->stopping || w->failed_rc) {
      rc = w->failed_rc ? tarn__err(w->failed_rc, "express writer failed: %s", w->err)
                        : tarn__err(TARN_ECLOSED, "express writer is closing");
      break;
    }
    int over = w->bytes_in_flight + len > w->o.max_bytes_in_flight && w->bytes_in_flight > 0;
    int full = w->cur && w->cur->n > 0 && w->cur->bytes + len > w->o.max_flight_bytes;
    if (full)
      seal(w);
    full = w->cur && w->cur->n > 0 && w->cur->bytes + len > w->o.max_flight_bytes;
    if (!over && !full)
      break;
    if (w->o.stepped || w->o.nonblocking) {
      rc = tarn__err(TARN_EBUSY, "express writer: %s",
                     over ? "memory limit reached" : "window of slots full");
      break;
    }
    pthread_cond_wait(&w->cv, &w->mu);
  }
  if (!rc && !w->cur && !(w->cur = new_flight()))
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  xflight *f = w->cur;
  if (!rc && f->n == f->cap) {
    size_t nc = f->cap ? 2 * f->cap : 16;
    xent *nv = realloc(f->ents, nc * sizeof *nv);
    if (!nv)
      rc = tarn__err(TARN_ENOMEM, "out of memory");
    else {
      f->ents = nv;
      f->cap = nc;
    }
  }
  if (rc) {
    pthread_mutex_unlock(&w->mu);
    free(copy);
    return rc;
  }
  xlog *l = find_log(w, log_id);
  xent *e = &f->ents[f->n++];
  *e = (xent){log_id, copy, len, record_count, l->next_off, cb, arg};
  l->next_off += record_count;
  if (f->n == 1)
    f->first_ms = mono();
  f->bytes += len;
  w->bytes_in_flight += len;
  w->appended++;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  return 0;
}

int tarn_xwriter_lead(tarn_xwriter *w, uint64_t log_id) {
  int rc = ensure_log(w, log_id);
  if (rc)
    return rc;
  pthread_mutex_lock(&w->mu);
  const xlog *l = find_log(w, log_id);
  if (w->failed_rc)
    rc = tarn__err(w->failed_rc, "express writer failed: %s", w->err);
  else if (w->stopping)
    rc = tarn__err(TARN_ECLOSED, "express writer is closing");
  else if (!l || l->finishing)
    rc = tarn__err(TARN_EUNAVAIL,
                   "express log %" PRIu64 " is being released (its Finish has not landed); retry",
                   log_id);
  pthread_mutex_unlock(&w->mu);
  return rc;
}

int tarn_xwriter_append(tarn_xwriter *w, uint64_t log_id, const void *payload, size_t len,
                        uint32_t record_count, tarn_append_cb cb, void *arg) {
  return tarn_appender_append(&w->base, log_id, payload, len, record_count, cb, arg);
}

int tarn_xwriter_append_sync(tarn_xwriter *w, uint64_t log_id, const void *payload, size_t len,
                             uint32_t record_count, uint64_t *offset, int64_t *timestamp_ms) {
  return tarn_appender_append_sync(&w->base, log_id, payload, len, record_count, offset,
                                   timestamp_ms);
}

/* ---- copies into the buckets ----------------------------------------------- */

/* Under mu: the oldest flight with a copy for bucket b still to write. Late
 * copies of committed slots are written too, so a fence sees K, not W. */
static xflight *next_put(tarn_xwriter *w, size_t b) {
  if (w->halting)
    return NULL;
  for (xflight *f = w->head; f; f = f->next)
    if ((f->state == XF_SEALED || f->state == XF_COMMITTED) && f->bst[b] == XB_PENDING)
      return f;
  return NULL;
}

/* Under mu (released while writing): one attempt at f's copy in bucket b. */
static void put_copy(tarn_xwriter *w, xflight *f, size_t b) {
  f->bst[b] = XB_BUSY;
  f->busy++;
  pthread_mutex_unlock(&w->mu);
  int rc = tarn__xslot_put(w->bs.b[b].store, f->key, f->obj.data, f->obj.len);
  char why[256];
  if (rc)
    snprintf(why, sizeof why, "%s", tarn_errmsg());
  int poison = 0;
  if (rc == TARN_EEXIST) {
    /* whose bytes? This slot's poison stands for ever, so K-W+1 of them make
     * the slot dead whatever a later fence does: a roll without a fence may
     * then count on (roll) */
    tarn_buf got;
    tarn_buf_init(&got);
    poison = tarn__xslot_observe(w->bs.b[b].store, f->key, w->star, f->epoch, f->slot, &got) ==
             TARN__XOBS_POISON;
    tarn_buf_free(&got);
  }
  pthread_mutex_lock(&w->mu);
  f->busy--;
  if (f->orphaned) { /* absorbed meanwhile: nobody else holds it */
    if (!f->busy)
      tarn__xflight_free(f);
    return;
  }
  f->tries[b]++;
  if (rc == 0) {
    /* a copy counts only when the bucket was seen to hold our own bytes */
    f->bst[b] = XB_OK;
    f->copies++;
    w->st.copies_written++;
    if (f->state == XF_SEALED && f->copies >= (int)w->bs.w) {
      f->state = XF_COMMITTED;
      commit_sample(w, mono() - f->sealed_ms);
    }
  } else if (rc == TARN_EEXIST || f->tries[b] >= w->o.put_attempts || rc == TARN_EINVAL) {
    /* poison or a foreign object holds the key: this bucket never will */
    f->bst[b] = XB_FAILED;
    f->fails++;
    f->poisoned += poison;
    w->st.copies_failed++;
    snprintf(w->err, sizeof w->err, "express slot %s, bucket %zu (%s): %s", f->key, b,
             w->bs.b[b].uri, why);
    if (f->state == XF_SEALED && quorum_lost(w, f))
      f->state = XF_DOOMED;
  } else {
    f->bst[b] = XB_PENDING; /* retried: the same bytes, create-only, read back on 412 */
    pthread_cond_signal(&w->put_cv[b]);
  }
  pthread_cond_broadcast(&w->cv);
}

/* ---- release and roll ------------------------------------------------------ */

/* Under mu: releases committed slots in order into ob; 1 if any. */
static int release_ready(tarn_xwriter *w, outbox *ob) {
  int any = 0;
  for (xflight *f = w->head; f; f = f->next) {
    if (f->released)
      continue;
    if (f->epoch != w->ep.epoch || f->slot != w->release_next) {
      if (!TARN__PLANTED(TARN__BUG_XWRITER_RELEASE_OUT_OF_ORDER))
        break;
    }
    if (f->state != XF_COMMITTED) {
      if (TARN__PLANTED(TARN__BUG_XWRITER_RELEASE_OUT_OF_ORDER))
        continue; /* planted: acks any slot visible at W (epochs-model §6, ackorder) */
      break;
    }
    f->released = 1;
    f->released_ms = mono();
    if (f->slot >= w->release_next)
      w->release_next = f->slot + 1;
    for (size_t i = 0; i < f->n; i++) {
      outbox_add(ob, &f->ents[i], 0, f->ents[i].offset);
      xlog *l = find_log(w, f->ents[i].log_id);
      if (l->released_end < f->ents[i].offset + f->ents[i].records)
        l->released_end = f->ents[i].offset + f->ents[i].records;
    }
    w->st.slots_released++;
    w->st.entries_acked += f->n;
    any = 1;
  }
  if (any)
    pthread_cond_broadcast(&w->cv);
  return any;
}

/* Under mu: the flight at the release point, if it halted the epoch. */
static xflight *halted_flight(tarn_xwriter *w) {
  for (xflight *f = w->head; f; f = f->next)
    if (!f->released)
      return f->state == XF_DOOMED && f->slot == w->release_next ? f : NULL;
  return NULL;
}

static int any_busy(const tarn_xwriter *w) {
  for (const xflight *f = w->head; f; f = f->next)
    if (f->busy)
      return 1;
  return 0;
}

/* Under mu (released while minting): the roll after a slot that cannot reach
 * W. Every slot below it is released; it and everything after it are not, and
 * never will be in this epoch. Until the fence (h-xfence) can fence the epoch
 * in-process, their entries fail — TARN_EUNKNOWN where a copy was written (a
 * later fence may repair and settle the slot), TARN_EUNAVAIL where none was —
 * and the logs count on from what was released; then a new epoch is minted
 * (nothing resumes an epoch). */
/* Under mu (released while minting): the new epoch; 0 or the error (then
 * the writer has failed for good). */
static int next_epoch(tarn_xwriter *w) {
  pthread_mutex_unlock(&w->mu);
  tarn__xepoch next;
  /* The leadership rule (issue 30 item 1; docs/express.md "Leadership"): a
   * new epoch, and so every acknowledgement in it, only under the star
   * lease, proven in the mint's own atomic step. A process paused past its
   * session finds the lease gone (or another's) and stops here. */
  int rc =
      tarn__xchain_mint_led(w->meta, w->star, TARN__X_CLASS_EXPRESS, &w->bs, w->star_lease, &next);
  pthread_mutex_lock(&w->mu);
  if (rc) {
    w->failed_rc = rc;
    tarn__xwriter_set_error(w, rc);
    return rc;
  }
  /* absorb loads the old record by number for its released slots */
  tarn__xepoch_free(&w->ep);
  w->ep = next;
  w->next_slot = w->release_next = 0;
  return 0;
}

/* Under mu: a copy of a released flight appended to the list, its outcomes
 * already delivered (no callbacks). Only a split that puts a flight on both
 * sides needs it (the planted xroll-republishes-below-cut). */
static xflight *clone_flight(tarn_xwriter *w, const xflight *f) {
  xflight *c = new_flight();
  if (!c || !(c->ents = calloc(f->n ? f->n : 1, sizeof *c->ents))) {
    free(c);
    return NULL;
  }
  c->cap = f->n;
  for (size_t i = 0; i < f->n; i++) {
    c->ents[i] = f->ents[i];
    c->ents[i].cb = NULL;
    if (!(c->ents[i].payload = malloc(f->ents[i].len ? f->ents[i].len : 1))) {
      tarn__xflight_free(c);
      return NULL;
    }
    memcpy(c->ents[i].payload, f->ents[i].payload, f->ents[i].len);
    c->n++;
  }
  c->bytes = f->bytes;
  if (tarn_buf_append(&c->obj, f->obj.data, f->obj.len)) {
    tarn__xflight_free(c);
    return NULL;
  }
  w->bytes_in_flight += c->bytes;
  w->tail->next = c;
  w->tail = c;
  return c;
}

/* Under mu (released while fencing): the roll with a fence. The cut splits
 * the unreleased flights: below it they are committed (the fence saw W
 * copies or repaired them) and complete as acknowledged; at or above it they
 * were never acknowledged and go out again, the same bytes at the same
 * offsets, as the new epoch's first slots — never both (epochs-model §7.6). */
static int roll_fenced(tarn_xwriter *w, outbox *ob) {
  uint64_t epoch = w->ep.epoch, cut = 0;
  pthread_mutex_unlock(&w->mu);
  int rc = w->o.fence(w->o.fence_arg, w->meta, w->star, epoch, &cut);
  pthread_mutex_lock(&w->mu);
  if (rc)
    return rc;
  /* the split is settle.c's (tarn__xroll_split), the one the fence tests
   * check: the writer must not carry a second copy of the rule */
  size_t n = 0;
  for (xflight *f = w->head; f; f = f->next)
    n += !f->released;
  xflight **pool = calloc(n ? n : 1, sizeof *pool);
  uint64_t *slot = calloc(n ? n : 1, sizeof *slot);
  size_t *acked = calloc(n ? n : 1, sizeof *acked), *rep = calloc(n ? n : 1, sizeof *rep);
  size_t na = 0, nr = 0;
  if (!pool || !slot || !acked || !rep)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  n = 0;
  for (xflight *f = w->head; !rc && f; f = f->next)
    if (!f->released)
      pool[n] = f, slot[n++] = f->slot;
  if (!rc)
    rc = tarn__xroll_split(cut, slot, n, acked, &na, rep, &nr);
  for (size_t i = 0; !rc && i < na; i++)
    pool[acked[i]]->state = XF_COMMITTED;
  if (!rc) {
    release_ready(w, ob);
    rc = next_epoch(w);
  }
  for (size_t i = 0; !rc && i < nr; i++) {
    xflight *f = pool[rep[i]];
    if (f->released && !(f = clone_flight(w, f))) {
      rc = tarn__err(TARN_ENOMEM, "out of memory");
      break;
    }
    f->epoch = w->ep.epoch;
    /* the new epoch's next slots, in order: they count against its window
     * like any sealed slot (planted: the old slot numbers kept, so a flight
     * lies past slot 0 + WIN - 1 of an epoch whose first slots are empty) */
    if (TARN__PLANTED(TARN__BUG_XROLL_KEEPS_SLOTS))
      w->next_slot++;
    else
      f->slot = w->next_slot++;
    tarn__xslot_key(f->key, sizeof f->key, w->star, f->epoch, f->slot);
    memset(f->bst, 0, sizeof f->bst);
    memset(f->tries, 0, sizeof f->tries);
    f->copies = f->fails = f->poisoned = 0;
    f->state = XF_SEALED;
  }
  free(pool), free(slot), free(acked), free(rep);
  return rc ? rc : 1;
}

/* Under mu, no copy busy: every flight not released, and what gathers, gets
 * its outcome now, in order, and goes. Any attempted PUT may have landed (a
 * lost reply, a delayed request, a read-back that failed), so a fence may yet
 * repair the slot from it: only a flight never sent anywhere failed for
 * certain (tarn-sim --express seed 142: an entry reported EUNAVAIL was
 * settled in); the rest are TARN_EUNKNOWN. */
static void fail_unreleased(tarn_xwriter *w, outbox *ob) {
  /* the released flights stay for absorb; the rest are failed, in order */
  xflight **pp = &w->head, *prev = NULL;
  while (*pp && (*pp)->released) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  xflight *dead = *pp;
  if (prev)
    prev->next = NULL;
  else
    w->head = NULL;
  w->tail = prev;
  if (w->cur) {
    /* cur goes too: its offsets were counted after the dead slots' */
    xflight **t = &dead;
    while (*t)
      t = &(*t)->next;
    *t = w->cur;
    w->cur->next = NULL;
    w->cur = NULL;
  }
  for (xflight *f = dead; f;) {
    xflight *n = f->next;
    /* Any attempted PUT may have landed (a lost reply, a delayed request, a
     * read-back that failed), so a fence may yet repair the slot from it:
     * only a flight never sent anywhere failed for certain (tarn-sim
     * --express seed 142: an entry reported EUNAVAIL was settled in). */
    int sent = f->copies > 0 || f->fails > 0;
    for (size_t b = 0; b < w->bs.k; b++)
      sent |= f->tries[b] > 0;
    int rc = sent ? TARN_EUNKNOWN : TARN_EUNAVAIL;
    for (size_t i = 0; i < f->n; i++)
      outbox_add(ob, &f->ents[i], rc, 0);
    w->st.entries_failed += f->n;
    w->bytes_in_flight -= f->bytes;
    tarn__xflight_free(f);
    f = n;
  }
}

static int roll(tarn_xwriter *w, xflight *halted, outbox *ob) {
  w->st.halts++;
  char why[512];
  snprintf(why, sizeof why, "%s", w->err);
  int unfenced = 0;
  w->halting = 1;
  while (any_busy(w))
    pthread_cond_wait(&w->cv, &w->mu);
  if (w->o.fence && w->rolls < w->o.max_rolls) {
    int rc = roll_fenced(w, ob);
    if (rc > 0 || w->failed_rc) {
      /* the new epoch could not be minted (the star lease is gone, or the
       * store failed): the writer stops, and what it still held gets its
       * outcome now; close would otherwise wait for it for ever (issue 30
       * items 1 and 6a) */
      if (rc < 0 && !TARN__PLANTED(TARN__BUG_XROLL_MINT_FAIL_SILENT))
        fail_unreleased(w, ob);
      w->rolls++;
      w->halting = 0;
      pthread_cond_broadcast(&w->cv);
      wake_putters(w, 1);
      return rc;
    }
    /* the fence failed (undecided past its deadline): fail the entries */
    snprintf(why, sizeof why, "%.200s; the fence of the halted epoch failed: %.200s", w->err,
             tarn_errmsg());
    unfenced = 1;
  } else if (halted->poisoned < (int)(w->bs.k - w->bs.w + 1)) {
    /* No fence (options.fence NULL, or max_rolls used up), and the halted
     * slot is not seen dead: a copy of it (or of a slot after it) may exist,
     * and a later fence may repair it from that copy and settlement absorb it
     * at the offsets it was given. Counting on from what was released would
     * hand those offsets out twice (issue 14, the roll-without-fence hazard) */
    snprintf(why, sizeof why, "%.200s; no fence to end the halted epoch (options.fence)", w->err);
    unfenced = 1;
  }
  tarn__err(TARN_EUNKNOWN,
            "express epoch %" PRIu64 " of star %s halted at slot %" PRIu64
            " (fewer than W = %u buckets can hold it): %s",
            w->ep.epoch, w->star, halted->slot, w->bs.w, why);
  tarn__xwriter_set_error(w, TARN_EUNKNOWN);
  fail_unreleased(w, ob);
  if (unfenced) {
    /* The halted epoch stays open: a later fence may yet find the failed
     * slots committed (repaired from one copy) and settlement absorb them at
     * the offsets they were given. Counting on from what was released would
     * hand those offsets out again (tarn-sim --express found it: an entry
     * acknowledged at 118, read at 122). So the writer stops; the epoch must be
     * fenced and settled before a writer leads these logs again. */
    w->failed_rc = TARN_EUNKNOWN;
    snprintf(w->err, sizeof w->err,
             "express writer: the halted epoch is not fenced "
             "(%.400s); fence and settle it before writing on",
             why);
    w->halting = 0;
    pthread_cond_broadcast(&w->cv);
    return w->failed_rc;
  }
  for (xlog *l = w->logs; l; l = l->next)
    l->next_off = l->released_end;
  if (++w->rolls > w->o.max_rolls) {
    w->failed_rc = TARN_EUNAVAIL;
    snprintf(w->err, sizeof w->err, "express writer: %d halts, giving up (last: %.400s)", w->rolls,
             why);
    w->halting = 0;
    pthread_cond_broadcast(&w->cv);
    return w->failed_rc;
  }
  int rc = next_epoch(w);
  if (rc && !TARN__PLANTED(TARN__BUG_XROLL_MINT_FAIL_SILENT)) /* what gathered while the mint ran */
    fail_unreleased(w, ob);
  w->halting = 0;
  pthread_cond_broadcast(&w->cv);
  wake_putters(w, 1);
  return rc ? rc : 1;
}

/* Under mu: one release pass; the caller delivers ob without mu. */
static int release_pass(tarn_xwriter *w, outbox *ob) {
  int did = release_ready(w, ob);
  xflight *h = halted_flight(w);
  if (h) {
    int rc = roll(w, h, ob);
    if (rc < 0)
      return rc;
    did = 1;
  }
  return did;
}

/* ---- threads --------------------------------------------------------------- */

typedef struct put_arg {
  tarn_xwriter *w;
  size_t bucket;
} put_arg;

static void *put_main(void *p) {
  put_arg *a = p;
  tarn_xwriter *w = a->w;
  size_t b = a->bucket;
  free(a);
  pthread_mutex_lock(&w->mu);
  for (;;) {
    xflight *f;
    while (!(f = next_put(w, b)) && !w->stopping)
      pthread_cond_wait(&w->put_cv[b], &w->mu);
    if (!f)
      break;
    put_copy(w, f, b);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* A deadline for the timer's condition variable (real time: the timer thread
 * waits in the kernel; its decisions read mono(), the hooked clock). */
static void abstime_ms(struct timespec *ts, int64_t ms) {
  tarn__cond_deadline(ts, CLOCK_REALTIME, ms);
}

/* Under mu: the timer's loop. turns < 0: the thread's, until the writer
 * stops. turns >= 0 (stepped mode, TARN_XSTEP_TIMER, a test hook that
 * changes nothing the thread does): the same loop, returning 0 where the
 * thread would wait, or TARN_EBUSY after `turns` turns without a wait, which
 * the thread would go round holding mu (issue 30 item 4: the simulator's
 * model of the timer thread). */
static int timer_loop(tarn_xwriter *w, int turns) {
  while (!w->stopping) {
    if (turns >= 0 && turns-- == 0)
      return tarn__err(TARN_EBUSY,
                       "express timer: went round %d times without waiting, holding the "
                       "writer's lock (epoch %" PRIu64 ", halting %d)",
                       TARN_XSTEP_TIMER_TURNS, w->ep.epoch, w->halting);
    /* a roll is under way: seal refuses until it ends, and a loop here would
     * hold mu against the roll itself (issue 30 item 4: the writer hung) */
    if (w->halting && !TARN__PLANTED(TARN__BUG_XTIMER_SPINS)) {
      if (turns >= 0)
        return 0;
      pthread_cond_wait(&w->cv, &w->mu);
      continue;
    }
    if (w->cur && w->cur->n && window_open(w)) {
      int64_t due = w->cur->first_ms + seal_wait_ms(w) - mono();
      if (due <= 0) {
        if (seal(w) < 0) {
          tarn__xwriter_set_error(w, TARN_EIO);
          if (turns >= 0)
            return 0;
          struct timespec ts;
          abstime_ms(&ts, 10);
          pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
        continue;
      }
      if (turns >= 0)
        return 0;
      struct timespec ts;
      abstime_ms(&ts, due);
      pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    } else {
      if (turns >= 0)
        return 0;
      pthread_cond_wait(&w->cv, &w->mu);
    }
  }
  return 0;
}

static void *timer_main(void *p) {
  tarn_xwriter *w = p;
  pthread_mutex_lock(&w->mu);
  timer_loop(w, -1);
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static void *release_main(void *p) {
  tarn_xwriter *w = p;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    outbox ob = {0};
    int did = release_pass(w, &ob);
    if (ob.n) {
      pthread_mutex_unlock(&w->mu);
      outbox_deliver(w, &ob);
      pthread_mutex_lock(&w->mu);
      continue;
    }
    free(ob.v);
    if (did > 0)
      continue;
    int unreleased = w->cur != NULL;
    for (xflight *f = w->head; f; f = f->next)
      unreleased |= !f->released;
    if (w->stopping && !unreleased)
      break;
    if (w->stopping && w->failed_rc)
      break;
    pthread_cond_wait(&w->cv, &w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static void *absorb_main(void *p) {
  tarn_xwriter *w = p;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    int rc = tarn__xabsorb_batch(w, w->absorb_urgent || w->stopping);
    /* a run at a time, absorb between runs */
    if (tarn__xabsorb_reclaim(w, 0) > 0 || rc > 0)
      continue;
    int pending = 0;
    for (xflight *f = w->head; f; f = f->next)
      pending |= f->released;
    if (w->stopping && (!pending || w->absorb_rc) && w->delivered == w->appended)
      break;
    struct timespec ts;
    abstime_ms(&ts, pending ? (w->o.absorb_ms ? w->o.absorb_ms : 1) : 1000);
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* ---- open, flush, close ---------------------------------------------------- */

static void free_all(tarn_xwriter *w) {
  for (xflight *f = w->head; f;) {
    xflight *n = f->next;
    tarn__xflight_free(f);
    f = n;
  }
  tarn__xflight_free(w->cur);
  for (xlog *l = w->logs; l;) {
    xlog *n = l->next;
    tarn_lease_release(l->lease);
    free(l);
    l = n;
  }
  for (xreclaim *r = w->rq_head; r;) {
    xreclaim *n = r->next;
    free(r);
    r = n;
  }
  tarn__xepoch_free(&w->ep);
  tarn__xbuckets_free(&w->bs);
  free(w->putters);
  pthread_mutex_destroy(&w->mu);
  pthread_mutex_destroy(&w->log_mu);
  pthread_cond_destroy(&w->cv);
  for (int b = 0; b < TARN__X_K_MAX; b++)
    pthread_cond_destroy(&w->put_cv[b]);
  free(w);
}

static void stop_threads(tarn_xwriter *w) {
  pthread_mutex_lock(&w->mu);
  w->stopping = 1;
  pthread_cond_broadcast(&w->cv);
  wake_putters(w, 1);
  pthread_mutex_unlock(&w->mu);
  if (!w->threads_started)
    return;
  pthread_join(w->timer, NULL);
  pthread_join(w->releaser, NULL);
  pthread_join(w->absorber, NULL);
  for (int i = 0; i < w->n_put; i++)
    pthread_join(w->putters[i], NULL);
  w->threads_started = 0;
}

static const tarn__appender_methods xwriter_methods; /* below */

/* The caller's options, with the defaults where a field is unset. */
static void options_fill(tarn_xwriter *w, const tarn_xwriter_options *o) {
  if (o)
    w->o = *o;
  else
    tarn_xwriter_options_default(&w->o);
  tarn_xwriter_options d;
  tarn_xwriter_options_default(&d);
  if (!w->o.max_flight_bytes)
    w->o.max_flight_bytes = d.max_flight_bytes;
  if (!w->o.max_bytes_in_flight)
    w->o.max_bytes_in_flight = d.max_bytes_in_flight;
  if (w->o.put_attempts < 1)
    w->o.put_attempts = d.put_attempts;
  if (w->o.finish_attempts < 1)
    w->o.finish_attempts = d.finish_attempts;
  if (w->o.finish_retry_ms <= 0)
    w->o.finish_retry_ms = d.finish_retry_ms;
  if (!w->o.absorb_max_bytes)
    w->o.absorb_max_bytes = d.absorb_max_bytes;
}

/* The PUT threads, the timer, the releaser and absorb; on failure the PUT
 * threads started are stopped and joined (the caller frees w). */
static int start_threads(tarn_xwriter *w) {
  int rc = 0;
  w->n_put = (int)w->bs.k * w->o.put_threads;
  w->putters = calloc((size_t)w->n_put, sizeof *w->putters);
  int started = 0;
  if (!w->putters)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < w->n_put; i++) {
    put_arg *a = malloc(sizeof *a);
    if (a)
      *a = (put_arg){w, (size_t)i % w->bs.k};
    if (!a || pthread_create(&w->putters[i], NULL, put_main, a)) {
      free(a);
      rc = tarn__err(TARN_ENOMEM, "starting express PUT threads");
      break;
    }
    started++;
  }
  if (!rc && (pthread_create(&w->timer, NULL, timer_main, w) ||
              pthread_create(&w->releaser, NULL, release_main, w) ||
              pthread_create(&w->absorber, NULL, absorb_main, w)))
    abort(); /* half-started threads cannot be joined safely */
  if (rc) {
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_broadcast(&w->cv);
    wake_putters(w, 1);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < started; i++)
      pthread_join(w->putters[i], NULL);
    return rc;
  }
  w->threads_started = 1;
  return 0;
}

int tarn_xwriter_open(tarn_meta *meta, tarn_objstore *wal, const tarn_xwriter_options *o,
                      tarn_xwriter **out) {
  tarn_xwriter *w = calloc(1, sizeof *w);
  if (!w)
    return tarn__err(TARN_ENOMEM, "out of memory");
  options_fill(w, o);
  w->base.m = &xwriter_methods;
  w->meta = meta;
  w->wal = wal;
  pthread_mutex_init(&w->mu, NULL);
  pthread_mutex_init(&w->log_mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  for (int b = 0; b < TARN__X_K_MAX; b++)
    pthread_cond_init(&w->put_cv[b], NULL);
  int rc = tarn__xstar_check(w->o.star);
  if (!rc)
    snprintf(w->star, sizeof w->star, "%s", w->o.star);
  w->o.star = w->star;
  tarn_timing t;
  if (!rc)
    rc = tarn_timing_load(meta, &t, NULL);
  w->max_publish_delay_ms = t.max_publish_delay_ms;
  w->max_put_ms = t.max_put_ms;
  if (!rc)
    rc = tarn__xbuckets_load(meta, &w->bs);
  if (!rc)
    rc = tarn__xbuckets_open(&w->bs);
  /* WIN slots may be in flight, each needing a PUT into every bucket: fewer
   * threads than WIN per bucket queue copies behind one another, and the
   * acknowledgement waits for the queue (tarn-bench express, Standard-like
   * latency: p99 ~ 2x the PUT p99 with 2 threads) */
  if (!rc && w->o.put_threads < 1)
    w->o.put_threads = w->bs.win < 64 ? (int)w->bs.win : 64;
  /* The star lease before the epoch exists (issue 30 items 1, 2): at most
   * one live process per star, and only it mints. It is also the star's
   * liveness record (takeover.c): a takeover that reads a head with this
   * epoch in it finds this record, or finds it gone only once the session
   * (and every lease of it) ended. */
  if (!rc)
    rc = tarn__xstar_lease_acquire(meta, w->star, w->o.star_wait_ms, &w->star_lease);
  if (!rc)
    rc = tarn__xchain_mint_led(meta, w->star, TARN__X_CLASS_EXPRESS, &w->bs, w->star_lease, &w->ep);
  if (rc) {
    if (w->star_lease) { /* the release's own calls must not wipe the reason */
      char why[512];
      snprintf(why, sizeof why, "%s", tarn_errmsg());
      tarn__xstar_lease_release(meta, w->star, w->star_lease);
      tarn__err(rc, "%s", why);
    }
    free_all(w);
    return rc;
  }
  if (!w->o.stepped && (rc = start_threads(w)) != 0) {
    free_all(w);
    return rc;
  }
  *out = w;
  return 0;
}

int tarn_xwriter_seal(tarn_xwriter *w) {
  pthread_mutex_lock(&w->mu);
  int rc = seal(w);
  pthread_mutex_unlock(&w->mu);
  return rc < 0 ? rc : 0;
}

void tarn_express_default_star(char *out, size_t n) {
  const char *env = getenv("TARN_STAR");
  char host[256] = "tarn";
  if (env && *env)
    snprintf(host, sizeof host, "%s", env);
  else if (gethostname(host, sizeof host) != 0 || !host[0])
    snprintf(host, sizeof host, "tarn");
  host[sizeof host - 1] = 0;
  for (char *c = host; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '.' || *c == '_' || *c == '-'))
      *c = '-';
  if (!strcmp(host, ".") || !strcmp(host, ".."))
    snprintf(host, sizeof host, "tarn");
  snprintf(out, n, "%.*s", TARN__X_STAR_MAX, host);
}

int tarn_express_check_deployment(tarn_meta *m) {
  tarn__xbuckets s;
  int rc = tarn__xbuckets_load(m, &s);
  tarn__xbuckets_free(&s);
  return rc;
}

int tarn_xwriter_flush(tarn_xwriter *w) {
  pthread_mutex_lock(&w->mu);
  uint64_t target = w->appended;
  int rc = 0;
  if (w->o.stepped) {
    pthread_mutex_unlock(&w->mu);
    /* drive every unit until the entries have outcomes */
    while (!rc) {
      pthread_mutex_lock(&w->mu);
      int done = w->delivered >= target;
      pthread_mutex_unlock(&w->mu);
      if (done)
        break;
      int did = tarn_xwriter_step(w, TARN_XSTEP_SEAL, 0, 0);
      for (xflight *f = w->head; f && did >= 0; f = f->next)
        for (size_t b = 0; b < w->bs.k; b++)
          if (f->bst[b] == XB_PENDING && (f->state == XF_SEALED))
            did |= tarn_xwriter_step(w, TARN_XSTEP_PUT, f->slot, b);
      int r = tarn_xwriter_step(w, TARN_XSTEP_RELEASE, 0, 0);
      if (r < 0)
        rc = r;
      else if (!did && !r)
        rc = tarn__err(TARN_EBUSY, "stepped express flush: no progress");
    }
    return rc;
  }
  while (w->delivered < target) {
    if (w->cur && w->cur->n)
      seal(w);
    if (w->failed_rc && !w->head && !w->cur)
      break;
    pthread_cond_broadcast(&w->cv);
    struct timespec ts;
    abstime_ms(&ts, 5);
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

int tarn_xwriter_absorb_sync(tarn_xwriter *w) {
  if (w->o.stepped) {
    int rc;
    pthread_mutex_lock(&w->mu);
    while ((rc = tarn__xabsorb_batch(w, 1)) > 0)
      ;
    pthread_mutex_unlock(&w->mu);
    return rc < 0 ? rc : 0;
  }
  pthread_mutex_lock(&w->mu);
  w->absorb_urgent++;
  pthread_cond_broadcast(&w->cv);
  for (;;) {
    int pending = 0;
    for (xflight *f = w->head; f; f = f->next)
      pending |= f->released;
    if (!pending || w->absorb_rc)
      break;
    pthread_cond_wait(&w->cv, &w->mu);
  }
  w->absorb_urgent--;
  int rc = w->absorb_rc;
  if (rc)
    tarn__err(rc, "express absorb: %s", w->err);
  pthread_mutex_unlock(&w->mu);
  return rc;
}

int tarn_xwriter_close(tarn_xwriter *w) {
  if (!w)
    return 0;
  int rc = tarn_xwriter_flush(w);
  int rc2 = tarn_xwriter_absorb_sync(w);
  if (!rc)
    rc = rc2;
  /* a failed writer cannot certify coverage: its logs stay unmarked, and the
   * successor settles them */
  if (!rc && !w->failed_rc)
    rc = tarn__xwriter_finish_all(w);
  stop_threads(w);
  /* the checkpoint is published past every absorbed slot and the fence never
   * walks below it, so a closing writer deletes their flights without the
   * grace (nobody else would: the next epoch of this star has its own).
   * Not a failed writer's: its epoch is halted and a fencer may be walking
   * those very slots (its walk starts at estimate - WIN, below what this
   * writer absorbed last), and the poison it writes there must stand
   * (XOneCut; tarn-sim --express --seed 20769 deleted a fencer's poison at
   * slot 0 here). Their copies are left in the buckets: space, not safety. */
  pthread_mutex_lock(&w->mu);
  if (!rc && (!w->failed_rc || TARN__PLANTED(TARN__BUG_XCLOSE_RECLAIMS_FAILED)))
    tarn__xabsorb_reclaim(w, 1);
  pthread_mutex_unlock(&w->mu);
  if (!rc && w->failed_rc)
    rc = tarn__err(w->failed_rc, "%s", w->err);
  /* The star lease goes last, once no thread can mint or write (issue 30
   * item 2): released before, another process of the star would be
   * admitted while this one still flushes, and its gate would fence this
   * live epoch. It ends with the session anyway. */
  char keep[512];
  snprintf(keep, sizeof keep, "%s", rc ? tarn_errmsg() : "");
  if (tarn__xstar_lease_release(w->meta, w->star, w->star_lease))
    tarn_errclear();
  if (rc)
    tarn__err(rc, "%s", keep);
  free_all(w);
  return rc;
}

void tarn__xwriter_abandon(tarn_xwriter *w) {
  stop_threads(w);
  for (xlog *l = w->logs; l; l = l->next) {
    tarn_lease_forget(l->lease);
    l->lease = NULL;
  }
  free_all(w);
}

/* ---- stepped mode ---------------------------------------------------------- */

int tarn_xwriter_step(tarn_xwriter *w, int step, uint64_t slot, size_t bucket) {
  if (!w->o.stepped)
    return tarn__err(TARN_EINVAL, "tarn_xwriter_step on a threaded express writer");
  int rc = 0;
  outbox ob = {0};
  pthread_mutex_lock(&w->mu);
  switch (step) {
  case TARN_XSTEP_SEAL: rc = seal(w); break;
  case TARN_XSTEP_PUT:
    rc = 0;
    if (bucket >= w->bs.k) {
      rc = tarn__err(TARN_EINVAL, "bucket %zu of %zu", bucket, w->bs.k);
      break;
    }
    for (xflight *f = w->head; f; f = f->next)
      if (f->epoch == w->ep.epoch && f->slot == slot) {
        if ((f->state == XF_SEALED || f->state == XF_COMMITTED) && f->bst[bucket] == XB_PENDING) {
          put_copy(w, f, bucket);
          rc = 1;
        }
        break;
      }
    break;
  case TARN_XSTEP_RELEASE: rc = release_pass(w, &ob); break;
  case TARN_XSTEP_ABSORB:
    while ((rc = tarn__xabsorb_batch(w, 1)) > 0)
      ;
    break;
  case TARN_XSTEP_RECLAIM: rc = tarn__xabsorb_reclaim(w, 0); break;
  case TARN_XSTEP_TIMER: rc = timer_loop(w, TARN_XSTEP_TIMER_TURNS); break;
  default: rc = tarn__err(TARN_EINVAL, "unknown express step %d", step);
  }
  pthread_mutex_unlock(&w->mu);
  if (ob.n)
    outbox_deliver(w, &ob);
  else
    free(ob.v);
  return rc;
}

/* ---- reading the tail, stats ----------------------------------------------- */

int tarn_xwriter_read_tail(tarn_xwriter *w, uint64_t log_id, uint64_t from, tarn_xtail_fn fn,
                           void *arg, uint64_t *absorbed_end) {
  int rc = 0;
  pthread_mutex_lock(&w->mu);
  xlog *l = find_log(w, log_id);
  if (absorbed_end)
    *absorbed_end = l ? l->absorbed_end : 0;
  for (xflight *f = w->head; l && f && !rc; f = f->next) {
    if (!f->released)
      break;
    for (size_t i = 0; i < f->n && !rc; i++) {
      const xent *e = &f->ents[i];
      if (e->log_id == log_id && e->offset + e->records > from && e->offset >= l->absorbed_end)
        rc = fn(arg, e->offset, e->payload, e->len, e->records);
    }
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

uint64_t tarn_xwriter_epoch(tarn_xwriter *w) {
  pthread_mutex_lock(&w->mu);
  uint64_t e = w->ep.epoch;
  pthread_mutex_unlock(&w->mu);
  return e;
}

int tarn_xwriter_failed(tarn_xwriter *w) {
  pthread_mutex_lock(&w->mu);
  int rc = w->failed_rc;
  pthread_mutex_unlock(&w->mu);
  return rc;
}

void tarn_xwriter_stats_get(tarn_xwriter *w, tarn_xwriter_stats *s) {
  pthread_mutex_lock(&w->mu);
  *s = w->st;
  s->commit_p99_ms = w->commit_p99_ms;
  s->seal_wait_ms = seal_wait_ms(w);
  pthread_mutex_unlock(&w->mu);
}

void tarn_xwriter_last_error(tarn_xwriter *w, char *buf, size_t n) {
  pthread_mutex_lock(&w->mu);
  snprintf(buf, n, "%s", w->err);
  pthread_mutex_unlock(&w->mu);
}

/* ---- the writer as an appender (issue 32 item 1; log/appender_impl.h) ----- */

static tarn_xwriter *of(tarn_appender *a) { return (tarn_xwriter *)a; }

static int m_append(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                    uint32_t record_count, const tarn__append_opts *o, tarn_append_cb cb,
                    void *arg) {
  return xappend(of(a), log_id, payload, len, record_count, o, cb, arg);
}

/* a stepped writer has no thread that would deliver the outcome */
static int m_sync_ok(tarn_appender *a) { return !of(a)->o.stepped; }
static int m_seal(tarn_appender *a) { return tarn_xwriter_seal(of(a)); }
static int m_flush(tarn_appender *a) { return tarn_xwriter_flush(of(a)); }
static int m_close(tarn_appender *a) { return tarn_xwriter_close(of(a)); }
static void m_last_error(tarn_appender *a, char *buf, size_t n) {
  tarn_xwriter_last_error(of(a), buf, n);
}

static void m_stats(tarn_appender *a, tarn_appender_stats *s) {
  tarn_xwriter *w = of(a);
  tarn_xwriter_stats xs;
  tarn_xwriter_stats_get(w, &xs);
  pthread_mutex_lock(&w->mu);
  size_t in_flight = w->bytes_in_flight;
  pthread_mutex_unlock(&w->mu);
  *s = (tarn_appender_stats){xs.entries_acked, xs.entries_failed, 0, in_flight};
}

static const tarn__appender_methods xwriter_methods = {"express", m_append, m_sync_ok,    m_seal,
                                                       m_flush,   m_close,  m_last_error, m_stats};

tarn_appender *tarn_xwriter_appender(tarn_xwriter *w) { return w ? &w->base : NULL; }
