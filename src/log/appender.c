/* The appender (issue 32 item 1; tarn/appender.h): the verbs dispatched to
 * the writer's methods (appender_impl.h), and append_sync, written once for
 * both writers: an append whose callback wakes the waiting caller. */
#include <pthread.h>
#include <stdio.h>

#include "log/appender_impl.h"
#include "tarn/error.h"
#include "util/error.h"

int tarn__appender_append(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                          uint32_t record_count, const tarn__append_opts *o, tarn_append_cb cb,
                          void *arg) {
  static const tarn__append_opts none = {0, NULL};
  return a->m->append(a, log_id, payload, len, record_count, o ? o : &none, cb, arg);
}

int tarn_appender_append(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                         uint32_t record_count, tarn_append_cb cb, void *arg) {
  return tarn__appender_append(a, log_id, payload, len, record_count, NULL, cb, arg);
}

typedef struct sync_wait {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, status;
  uint64_t offset;
  int64_t ts;
} sync_wait;

static void sync_cb(void *arg, int status, uint64_t offset, int64_t ts) {
  sync_wait *s = arg;
  pthread_mutex_lock(&s->mu);
  s->done = 1;
  s->status = status;
  s->offset = offset;
  s->ts = ts;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

int tarn_appender_append_sync(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                              uint32_t record_count, uint64_t *offset, int64_t *timestamp_ms) {
  if (!a->m->sync_ok(a))
    return tarn__err(TARN_EINVAL, "append_sync on a stepped %s writer", a->m->kind);
  sync_wait s = {.done = 0};
  pthread_mutex_init(&s.mu, NULL);
  pthread_cond_init(&s.cv, NULL);
  int rc = tarn_appender_append(a, log_id, payload, len, record_count, sync_cb, &s);
  if (!rc) {
    pthread_mutex_lock(&s.mu);
    while (!s.done)
      pthread_cond_wait(&s.cv, &s.mu);
    pthread_mutex_unlock(&s.mu);
    rc = s.status;
    if (rc) { /* the callback carries only the code: the writer says why */
      char msg[512];
      a->m->last_error(a, msg, sizeof msg);
      if (rc == TARN_EUNKNOWN)
        tarn__err(rc, "append: the outcome is unknown; the entry may be readable: %s", msg);
      else
        tarn__err(rc, "append: entry not appended: %s", msg);
    }
    if (offset)
      *offset = s.offset;
    if (timestamp_ms)
      *timestamp_ms = s.ts;
  }
  pthread_cond_destroy(&s.cv);
  pthread_mutex_destroy(&s.mu);
  return rc;
}

int tarn_appender_seal(tarn_appender *a) { return a->m->seal(a); }

int tarn_appender_flush(tarn_appender *a) { return a->m->flush(a); }

int tarn_appender_close(tarn_appender *a) { return a ? a->m->close(a) : 0; }

void tarn_appender_last_error(tarn_appender *a, char *buf, size_t n) {
  a->m->last_error(a, buf, n);
}

void tarn_appender_stats_get(tarn_appender *a, tarn_appender_stats *s) { a->m->stats(a, s); }

const char *tarn_appender_kind(const tarn_appender *a) { return a->m->kind; }
