/* Issue 33 item 4 (sasl_guard.h): failed-authentication limits, the hashing
 * threads and the failure delay. */
#define _POSIX_C_SOURCE 200809L
#include "kafka/sasl_guard.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/error.h"
#include "tarn/token_bucket.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

/* One key of the limits: "a|ADDR", "u|NAME" or "p|ADDR|NAME" (an address
 * holds no '|'), its bucket of failures in ms of refill (a failure costs
 * refill_ms), in a hash chain and the LRU list (head: most recent). */
typedef struct kentry {
  char *key;
  size_t len;
  uint64_t h;
  tarn_token_bucket *b;
  uint32_t cost;
  struct kentry *chain, *prev, *next;
} kentry;

/* Work for the hashing threads or the timer. */
typedef struct gjob {
  void (*fn)(void *), (*after)(void *);
  void *arg;
  char addr[64];
  int64_t due;
  struct gjob *next;
} gjob;

struct tarn__kguard {
  tarn__kguard_config cfg;
  pthread_mutex_t mu; /* the table */
  kentry **slots;
  size_t nslots, n;
  kentry *lru_head, *lru_tail;
  pthread_mutex_t wmu; /* the queue, the busy addresses, the timers */
  pthread_cond_t wcv, tcv;
  gjob *qhead, *qtail, *thead, *ttail;
  int qlen, draining, drained;
  char (*busy)[64]; /* the address each hashing thread works for ("" idle) */
  pthread_t *threads, timer;
  int nthreads, started, timer_started;
};

void tarn__kguard_config_default(tarn__kguard_config *c) {
  c->delay_ms = 100;
  c->threads = 2;
  c->queue_max = 64;
  c->per_addr_max = 8;
  c->max_entries = 16384;
  c->addr = (tarn__kguard_limit){20, 1000};
  c->user = (tarn__kguard_limit){50, 200};
  c->pair = (tarn__kguard_limit){10, 2000};
}

/* The address of "host:port" (IPv4: the last ':' ends it). */
static void addr_of(const char *peer, char out[64]) {
  snprintf(out, 64, "%s", peer ? peer : "?");
  char *c = strrchr(out, ':');
  if (c)
    *c = 0;
}

static uint64_t fnv(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
  return h;
}

static void lru_unlink(tarn__kguard *g, kentry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    g->lru_head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    g->lru_tail = e->prev;
  e->prev = e->next = NULL;
}

static void lru_front(tarn__kguard *g, kentry *e) {
  e->next = g->lru_head;
  if (g->lru_head)
    g->lru_head->prev = e;
  g->lru_head = e;
  if (!g->lru_tail)
    g->lru_tail = e;
}

static void entry_free(kentry *e) {
  tarn_token_bucket_close(e->b);
  free(e->key);
  free(e);
}

/* Under g->mu: drops the least recently used key. */
static void evict_locked(tarn__kguard *g) {
  kentry *e = g->lru_tail;
  if (!e)
    return;
  lru_unlink(g, e);
  for (kentry **pp = &g->slots[e->h & (g->nslots - 1)]; *pp; pp = &(*pp)->chain)
    if (*pp == e) {
      *pp = e->chain;
      break;
    }
  g->n--;
  entry_free(e);
}

/* Under g->mu: the entry of key k[0..n), created (with lim) when create. */
static kentry *find_locked(tarn__kguard *g, const char *k, size_t n, int create,
                           const tarn__kguard_limit *lim) {
  uint64_t h = fnv(k, n);
  for (kentry *e = g->slots[h & (g->nslots - 1)]; e; e = e->chain)
    if (e->h == h && e->len == n && !memcmp(e->key, k, n))
      return e;
  if (!create || !lim->burst || !lim->refill_ms)
    return NULL;
  if (g->n >= g->cfg.max_entries)
    evict_locked(g);
  kentry *e = calloc(1, sizeof *e);
  if (!e || !(e->key = malloc(n)) ||
      tarn_token_bucket_open(1000, (uint64_t)lim->burst * lim->refill_ms, &e->b)) {
    if (e)
      free(e->key);
    free(e);
    return NULL; /* out of memory: this failure goes uncounted */
  }
  memcpy(e->key, k, n);
  e->len = n, e->h = h, e->cost = lim->refill_ms;
  e->chain = g->slots[h & (g->nslots - 1)];
  g->slots[h & (g->nslots - 1)] = e;
  g->n++;
  lru_front(g, e);
  return e;
}

enum { K_ADDR, K_USER, K_PAIR };

/* The key of kind for peer and user into k (at least 64 + 256 + 4 bytes). */
static size_t key_of(int kind, const char *peer, const char *user, char *k, size_t cap) {
  char a[64];
  addr_of(peer, a);
  int n = kind == K_ADDR   ? snprintf(k, cap, "a|%s", a)
          : kind == K_USER ? snprintf(k, cap, "u|%s", user)
                           : snprintf(k, cap, "p|%s|%s", a, user);
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static const tarn__kguard_limit *limit_of(const tarn__kguard *g, int kind) {
  return kind == K_ADDR ? &g->cfg.addr : kind == K_USER ? &g->cfg.user : &g->cfg.pair;
}

int tarn__kguard_allowed(tarn__kguard *g, const char *peer, const char *user) {
  if (TARN__PLANTED(TARN__BUG_KAFKA_AUTH_UNLIMITED))
    return 1;
  int ok = 1;
  pthread_mutex_lock(&g->mu);
  for (int kind = K_ADDR; ok && kind <= K_PAIR; kind++) {
    char k[400];
    size_t n = key_of(kind, peer, user, k, sizeof k);
    kentry *e = find_locked(g, k, n, 0, NULL);
    ok = !e || tarn_token_bucket_peek(e->b, e->cost) == 0;
  }
  pthread_mutex_unlock(&g->mu);
  return ok;
}

void tarn__kguard_failed(tarn__kguard *g, const char *peer, const char *user) {
  pthread_mutex_lock(&g->mu);
  for (int kind = K_ADDR; kind <= K_PAIR; kind++) {
    char k[400];
    size_t n = key_of(kind, peer, user, k, sizeof k);
    kentry *e = find_locked(g, k, n, 1, limit_of(g, kind));
    if (!e)
      continue;
    int64_t w;
    tarn_token_bucket_try(e->b, e->cost, &w);
    lru_unlink(g, e);
    lru_front(g, e);
  }
  pthread_mutex_unlock(&g->mu);
}

void tarn__kguard_succeeded(tarn__kguard *g, const char *peer, const char *user) {
  char k[400];
  size_t n = key_of(K_PAIR, peer, user, k, sizeof k);
  pthread_mutex_lock(&g->mu);
  kentry *e = find_locked(g, k, n, 0, NULL);
  if (e)
    tarn_token_bucket_fill(e->b);
  pthread_mutex_unlock(&g->mu);
}

/* Under g->wmu: the hashes of addr running. */
static int running_locked(const tarn__kguard *g, const char *addr) {
  int n = 0;
  for (int i = 0; i < g->cfg.threads; i++)
    n += !strcmp(g->busy[i], addr);
  return n;
}

/* Under g->wmu: the first job queued whose address has no hash running
 * (unlinked), or NULL: one address never holds two threads. */
static gjob *take_locked(tarn__kguard *g) {
  gjob *prev = NULL;
  for (gjob *j = g->qhead; j; prev = j, j = j->next) {
    if (running_locked(g, j->addr))
      continue;
    if (prev)
      prev->next = j->next;
    else
      g->qhead = j->next;
    if (g->qtail == j)
      g->qtail = prev;
    g->qlen--;
    return j;
  }
  return NULL;
}

static void *hasher(void *arg) {
  tarn__kguard *g = arg;
  pthread_mutex_lock(&g->wmu);
  int me = g->started++; /* this thread's row of busy */
  for (;;) {
    gjob *j;
    while (!(j = take_locked(g)) && (g->qhead || !g->draining))
      pthread_cond_wait(&g->wcv, &g->wmu);
    if (!j)
      break; /* draining and nothing left */
    memcpy(g->busy[me], j->addr, sizeof j->addr);
    pthread_mutex_unlock(&g->wmu);
    j->fn(j->arg);
    pthread_mutex_lock(&g->wmu);
    g->busy[me][0] = 0;
    pthread_cond_broadcast(&g->wcv); /* a job of this address may run now */
    pthread_mutex_unlock(&g->wmu);
    j->after(j->arg);
    free(j);
    pthread_mutex_lock(&g->wmu);
  }
  pthread_mutex_unlock(&g->wmu);
  return NULL;
}

static void *timer(void *arg) {
  tarn__kguard *g = arg;
  pthread_mutex_lock(&g->wmu);
  for (;;) {
    gjob *j = g->thead;
    if (!j && g->draining)
      break;
    int64_t now = tarn__mono_ms();
    if (!j || (j->due > now && !g->draining)) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      int64_t ms = j ? j->due - now : 1000;
      ts.tv_sec += ms / 1000;
      ts.tv_nsec += (long)(ms % 1000) * 1000000L;
      if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&g->tcv, &g->wmu, &ts);
      continue;
    }
    g->thead = j->next;
    if (!g->thead)
      g->ttail = NULL;
    pthread_mutex_unlock(&g->wmu);
    j->fn(j->arg);
    free(j);
    pthread_mutex_lock(&g->wmu);
  }
  pthread_mutex_unlock(&g->wmu);
  return NULL;
}

/* Under g->wmu: the hashes of addr queued or running. */
static int addr_jobs_locked(const tarn__kguard *g, const char *addr) {
  int n = running_locked(g, addr);
  for (const gjob *j = g->qhead; j; j = j->next)
    n += !strcmp(j->addr, addr);
  return n;
}

int tarn__kguard_hash(tarn__kguard *g, const char *peer, void (*fn)(void *), void (*after)(void *),
                      void *arg) {
  gjob *j = calloc(1, sizeof *j);
  if (!j)
    return TARN_ENOMEM;
  j->fn = fn, j->after = after, j->arg = arg;
  addr_of(peer, j->addr);
  pthread_mutex_lock(&g->wmu);
  if (g->draining) { /* no thread left: the caller's */
    pthread_mutex_unlock(&g->wmu);
    free(j);
    fn(arg);
    after(arg);
    return 0;
  }
  if (g->qlen >= g->cfg.queue_max || addr_jobs_locked(g, j->addr) >= g->cfg.per_addr_max) {
    pthread_mutex_unlock(&g->wmu);
    free(j);
    return TARN_EBUSY;
  }
  if (g->qtail)
    g->qtail->next = j;
  else
    g->qhead = j;
  g->qtail = j;
  g->qlen++;
  pthread_cond_signal(&g->wcv);
  pthread_mutex_unlock(&g->wmu);
  return 0;
}

void tarn__kguard_later(tarn__kguard *g, void (*fn)(void *), void *arg) {
  gjob *j = g->cfg.delay_ms > 0 ? calloc(1, sizeof *j) : NULL;
  pthread_mutex_lock(&g->wmu);
  if (!j || g->draining) { /* no delay, out of memory, or draining: now */
    pthread_mutex_unlock(&g->wmu);
    free(j);
    fn(arg);
    return;
  }
  /* one delay for all: appended in due order */
  j->fn = fn, j->arg = arg, j->due = tarn__mono_ms() + g->cfg.delay_ms;
  if (g->ttail)
    g->ttail->next = j;
  else
    g->thead = j;
  g->ttail = j;
  pthread_cond_signal(&g->tcv);
  pthread_mutex_unlock(&g->wmu);
}

size_t tarn__kguard_entries(tarn__kguard *g) {
  pthread_mutex_lock(&g->mu);
  size_t n = g->n;
  pthread_mutex_unlock(&g->mu);
  return n;
}

void tarn__kguard_drain(tarn__kguard *g) {
  if (!g || g->drained)
    return;
  g->drained = 1;
  pthread_mutex_lock(&g->wmu);
  g->draining = 1;
  pthread_cond_broadcast(&g->wcv);
  pthread_cond_broadcast(&g->tcv);
  pthread_mutex_unlock(&g->wmu);
  for (int i = 0; i < g->nthreads; i++)
    pthread_join(g->threads[i], NULL);
  if (g->timer_started)
    pthread_join(g->timer, NULL);
}

void tarn__kguard_close(tarn__kguard *g) {
  if (!g)
    return;
  tarn__kguard_drain(g);
  while (g->lru_head)
    evict_locked(g);
  free(g->slots);
  free(g->busy);
  free(g->threads);
  pthread_mutex_destroy(&g->mu);
  pthread_mutex_destroy(&g->wmu);
  pthread_cond_destroy(&g->wcv);
  pthread_cond_destroy(&g->tcv);
  free(g);
}

static int start_threads(tarn__kguard *g) {
  int rc = 0;
  for (int i = 0; !rc && i < g->cfg.threads; i++) {
    if (pthread_create(&g->threads[i], NULL, hasher, g))
      rc = tarn__err(TARN_ENOMEM, "Kafka SASL: no hashing thread");
    else
      g->nthreads++;
  }
  if (!rc && pthread_create(&g->timer, NULL, timer, g))
    rc = tarn__err(TARN_ENOMEM, "Kafka SASL: no timer thread");
  g->timer_started = !rc;
  return rc;
}

int tarn__kguard_open(const tarn__kguard_config *c, tarn__kguard **out) {
  *out = NULL;
  tarn__kguard *g = calloc(1, sizeof *g);
  if (!g)
    return tarn__err(TARN_ENOMEM, "out of memory");
  if (c)
    g->cfg = *c;
  else
    tarn__kguard_config_default(&g->cfg);
  if (g->cfg.threads < 1)
    g->cfg.threads = 1;
  if (g->cfg.per_addr_max < 1)
    g->cfg.per_addr_max = 1;
  if (g->cfg.max_entries < 16)
    g->cfg.max_entries = 16;
  for (g->nslots = 16; g->nslots < g->cfg.max_entries; g->nslots *= 2)
    ;
  pthread_mutex_init(&g->mu, NULL);
  pthread_mutex_init(&g->wmu, NULL);
  pthread_cond_init(&g->wcv, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g->tcv, &ca);
  pthread_condattr_destroy(&ca);
  g->slots = calloc(g->nslots, sizeof *g->slots);
  g->busy = calloc((size_t)g->cfg.threads, sizeof *g->busy);
  g->threads = calloc((size_t)g->cfg.threads, sizeof *g->threads);
  int rc = g->slots && g->busy && g->threads ? start_threads(g) : TARN_ENOMEM;
  if (rc) {
    tarn__kguard_close(g);
    return rc;
  }
  *out = g;
  return 0;
}
