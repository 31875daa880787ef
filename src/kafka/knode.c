/* What a node keeps for its handlers (api.h): a short cache of topics, and
 * one writer per batch window (a topic's tarn.kafka.batch.ms). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "tarn/deployment.h"
#include "tarn/kafka_topics.h"
#include "tarn/writer.h"
#include "util/clock.h"

/* A produce or fetch looks its topic up; the catalog is read at most once a
 * second per topic (a client fetching in a loop would read it for every
 * request otherwise). */
#define TOPIC_TTL_MS 1000
#define MAX_WRITERS 16
/* Idle fetch cursors: each holds up to the reader's max_read_bytes read
 * ahead, so they are bounded in number and bytes for the node, and one not
 * used for CURSOR_IDLE_MS (its consumer gone) goes. */
#define MAX_CURSORS 64
#define CURSOR_BYTES ((size_t)64 << 20)
#define CURSOR_IDLE_MS 30000

typedef struct tentry {
  char name[TARN_KAFKA_TOPIC_NAME_MAX + 1];
  int found;
  tarn_kafka_topic t;
  int64_t at; /* monotonic ms of the read */
} tentry;

struct tarn__knode_priv {
  /* Read-held by every append, write-held while the writers are replaced
   * (tarn__knode_release_leases): a writer is never closed under an append. */
  pthread_rwlock_t wlock;
  pthread_mutex_t mu;
  tentry *v;
  size_t n, cap;
  struct {
    uint32_t batch_ms;
    tarn_writer *w;
  } writers[MAX_WRITERS];
  size_t nw;
  pthread_mutex_t cmu;                 /* the idle cursors */
  tarn__kcursor *cursors[MAX_CURSORS]; /* oldest first */
  size_t nc;
};

int tarn__knode_open(tarn__knode *n) {
  n->priv = calloc(1, sizeof *n->priv);
  if (!n->priv)
    return TARN_ENOMEM;
  pthread_mutex_init(&n->priv->mu, NULL);
  pthread_mutex_init(&n->priv->cmu, NULL);
  pthread_rwlock_init(&n->priv->wlock, NULL);
  return tarn__kexpress_open(n);
}

void tarn__knode_flush(tarn__knode *n) {
  if (!n->priv) {
    if (n->writer)
      tarn_writer_flush(n->writer);
    return;
  }
  pthread_rwlock_rdlock(&n->priv->wlock);
  if (n->writer)
    tarn_writer_flush(n->writer);
  /* Writers are added under mu (and the read lock), removed only under the
   * write lock: those below nw stay while the read lock is held. */
  pthread_mutex_lock(&n->priv->mu);
  size_t nw = n->priv->nw;
  pthread_mutex_unlock(&n->priv->mu);
  for (size_t i = 0; i < nw; i++)
    tarn_writer_flush(n->priv->writers[i].w);
  pthread_rwlock_unlock(&n->priv->wlock);
}

void tarn__knode_close(tarn__knode *n) {
  tarn__kexpress_close(n); /* unless the node's drain closed it already */
  struct tarn__knode_priv *p = n->priv;
  if (!p)
    return;
  for (size_t i = 0; i < p->nw; i++)
    tarn_writer_close(p->writers[i].w);
  for (size_t i = 0; i < p->n; i++)
    tarn_kafka_topic_free(&p->v[i].t);
  free(p->v);
  for (size_t i = 0; i < p->nc; i++)
    tarn__kcursor_free(p->cursors[i]);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->cmu);
  pthread_rwlock_destroy(&p->wlock);
  free(p);
  n->priv = NULL;
}

static int copy_topic(const tarn_kafka_topic *a, tarn_kafka_topic *b) {
  *b = *a;
  b->configs = NULL; /* the handlers read the parsed fields, not the configs */
  b->n_configs = 0;
  b->logs = malloc((a->partitions ? a->partitions : 1) * sizeof *b->logs);
  if (!b->logs)
    return TARN_ENOMEM;
  memcpy(b->logs, a->logs, a->partitions * sizeof *b->logs);
  return 0;
}

static tentry *find(struct tarn__knode_priv *p, const char *name, size_t len) {
  for (size_t i = 0; i < p->n; i++)
    if (strlen(p->v[i].name) == len && memcmp(p->v[i].name, name, len) == 0)
      return &p->v[i];
  return NULL;
}

int tarn__knode_topic(tarn__knode *n, const char *name, size_t len, tarn_kafka_topic *out) {
  memset(out, 0, sizeof *out);
  if (len == 0 || len > TARN_KAFKA_TOPIC_NAME_MAX)
    return TARN_ENOTFOUND;
  char nm[TARN_KAFKA_TOPIC_NAME_MAX + 1];
  memcpy(nm, name, len);
  nm[len] = 0;
  if (strlen(nm) != len)
    return TARN_ENOTFOUND; /* a NUL inside: no topic has that name */
  struct tarn__knode_priv *p = n->priv;
  int64_t now = tarn__mono_ms();
  pthread_mutex_lock(&p->mu);
  tentry *e = find(p, name, len);
  if (e && now - e->at < TOPIC_TTL_MS) {
    int rc = e->found ? copy_topic(&e->t, out) : TARN_ENOTFOUND;
    pthread_mutex_unlock(&p->mu);
    return rc;
  }
  pthread_mutex_unlock(&p->mu);
  tarn_kafka_topic t;
  memset(&t, 0, sizeof t);
  int rc = tarn_kafka_topic_lookup(n->catalog, nm, &t);
  if (rc && rc != TARN_ENOTFOUND)
    return rc;
  pthread_mutex_lock(&p->mu);
  e = find(p, name, len);
  if (!e && p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 16;
    tentry *v = realloc(p->v, cap * sizeof *v);
    if (v) {
      p->v = v;
      p->cap = cap;
    }
  }
  if (!e && p->n < p->cap) {
    e = &p->v[p->n++];
    memset(e, 0, sizeof *e);
    memcpy(e->name, nm, len + 1);
  }
  if (e) {
    tarn_kafka_topic_free(&e->t);
    e->found = rc == 0;
    e->t = t;
    e->at = now;
    memset(&t, 0, sizeof t);
  }
  int crc = rc ? rc : e ? copy_topic(&e->t, out) : 0;
  pthread_mutex_unlock(&p->mu);
  if (!e && rc == 0) { /* no room to cache it: hand over the one read */
    *out = t;
    return 0;
  }
  return crc;
}

void tarn__knode_topic_forget(tarn__knode *n, const char *name, size_t len) {
  struct tarn__knode_priv *p = n->priv;
  pthread_mutex_lock(&p->mu);
  tentry *e = find(p, name, len);
  if (e)
    e->at = INT64_MIN / 2;
  pthread_mutex_unlock(&p->mu);
}

static int open_writer(tarn__knode *n, uint32_t batch_ms, tarn_writer **w) {
  tarn_writer_options wo;
  tarn_writer_options_default(&wo);
  wo.batch_ms = batch_ms;
  return tarn_writer_open(n->meta, tarn_deployment_wal(n->dep), &wo, w);
}

int tarn__knode_writer(tarn__knode *n, uint32_t batch_ms, tarn_writer **out) {
  struct tarn__knode_priv *p = n->priv;
  pthread_rwlock_rdlock(&p->wlock);
  if (batch_ms == 0 || batch_ms == n->cfg.batch_ms) {
    *out = n->writer;
    return 0;
  }
  pthread_mutex_lock(&p->mu);
  for (size_t i = 0; i < p->nw; i++)
    if (p->writers[i].batch_ms == batch_ms) {
      *out = p->writers[i].w;
      pthread_mutex_unlock(&p->mu);
      return 0;
    }
  if (p->nw == MAX_WRITERS) { /* many windows: the rest share the node's */
    pthread_mutex_unlock(&p->mu);
    *out = n->writer;
    return 0;
  }
  tarn_writer *w;
  int rc = open_writer(n, batch_ms, &w);
  if (rc == 0) {
    p->writers[p->nw].batch_ms = batch_ms;
    p->writers[p->nw].w = w;
    p->nw++;
    *out = w;
  }
  pthread_mutex_unlock(&p->mu);
  if (rc)
    pthread_rwlock_unlock(&p->wlock);
  return rc;
}

void tarn__knode_writer_done(tarn__knode *n) { pthread_rwlock_unlock(&n->priv->wlock); }

int tarn__knode_release_leases(tarn__knode *n) {
  struct tarn__knode_priv *p = n->priv;
  pthread_rwlock_wrlock(&p->wlock);
  /* Closing waits for every append's outcome, then releases the leases
   * (LS-043); the new writers take leases again on their first appends. */
  int rc = 0;
  for (size_t i = 0; i < p->nw; i++) {
    tarn_writer_close(p->writers[i].w);
    p->writers[i].w = NULL;
  }
  p->nw = 0;
  if (n->writer) {
    tarn_writer_close(n->writer);
    n->writer = NULL;
    rc = open_writer(n, n->cfg.batch_ms, &n->writer);
  }
  pthread_rwlock_unlock(&p->wlock);
  return rc;
}

void tarn__kcursor_free(tarn__kcursor *c) {
  if (!c)
    return;
  tarn_log_iter_close(c->it);
  free(c);
}

static uint64_t cursor_next(const tarn__kcursor *c) {
  return c->held ? c->e.offset : tarn_log_iter_position(c->it);
}

static size_t cursor_bytes(const tarn__kcursor *c) { return tarn_log_iter_held_bytes(c->it); }

tarn__kcursor *tarn__knode_cursor_take(tarn__knode *n, uint64_t log_id, uint64_t offset) {
  struct tarn__knode_priv *p = n->priv;
  tarn__kcursor *c = NULL;
  if (!p)
    return NULL;
  pthread_mutex_lock(&p->cmu);
  for (size_t i = p->nc; i-- > 0;) {
    if (p->cursors[i]->log_id == log_id && cursor_next(p->cursors[i]) == offset) {
      c = p->cursors[i];
      memmove(&p->cursors[i], &p->cursors[i + 1], (p->nc - i - 1) * sizeof *p->cursors);
      p->nc--;
      break;
    }
  }
  pthread_mutex_unlock(&p->cmu);
  return c;
}

void tarn__knode_cursor_put(tarn__knode *n, tarn__kcursor *c) {
  if (!c)
    return;
  struct tarn__knode_priv *p = n->priv;
  if (!p) {
    tarn__kcursor_free(c);
    return;
  }
  int64_t now = tarn__mono_ms();
  c->at = now;
  tarn__kcursor *drop[MAX_CURSORS + 1];
  size_t nd = 0;
  pthread_mutex_lock(&p->cmu);
  /* one cursor per position: two consumers at the same place keep the newest */
  for (size_t i = 0; i < p->nc;) {
    tarn__kcursor *o = p->cursors[i];
    if (o->log_id == c->log_id && cursor_next(o) == cursor_next(c)) {
      drop[nd++] = o;
      memmove(&p->cursors[i], &p->cursors[i + 1], (p->nc - i - 1) * sizeof *p->cursors);
      p->nc--;
    } else {
      i++;
    }
  }
  if (p->nc == MAX_CURSORS) {
    drop[nd++] = p->cursors[0];
    memmove(&p->cursors[0], &p->cursors[1], (p->nc - 1) * sizeof *p->cursors);
    p->nc--;
  }
  p->cursors[p->nc++] = c;
  size_t bytes = 0;
  for (size_t i = 0; i < p->nc; i++)
    bytes += cursor_bytes(p->cursors[i]);
  /* the oldest go first: past the byte bound, or idle too long */
  while (p->nc > 1 && nd < MAX_CURSORS + 1 &&
         (bytes > CURSOR_BYTES || now - p->cursors[0]->at > CURSOR_IDLE_MS)) {
    bytes -= cursor_bytes(p->cursors[0]);
    drop[nd++] = p->cursors[0];
    memmove(&p->cursors[0], &p->cursors[1], (p->nc - 1) * sizeof *p->cursors);
    p->nc--;
  }
  pthread_mutex_unlock(&p->cmu);
  for (size_t i = 0; i < nd; i++)
    tarn__kcursor_free(drop[i]); /* outside the lock: frees can be large */
}
