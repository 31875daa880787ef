/* Idempotent producers: producer IDs and per-partition sequence state
 * (producer.h; docs/kafka.md "Groups and producers").
 *
 * The state of one (producer ID, partition) is loaded from the store the
 * first time this node sees it, checked and updated under its own lock (so
 * the store write after an append holds up only that producer's partition),
 * and written back by CompareAndSet after each append. A write that loses
 * (another node appended for the same producer and partition) re-reads the
 * record, adds this batch to it and tries again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "kafka/keyseg.h"
#include "kafka/producer.h"
#include "tarn/buf.h"
#include "tarn/meta.h"
#include "util/bytes.h"
#include "util/error.h"

#define PART TARN__KP_PARTITION
#define COUNTER_KEY "/next-id"
#define BUCKETS 256
#define RETRIES 64

typedef struct kbatch {
  int32_t first, last;
  int64_t offset;
} kbatch;

typedef struct pstate {
  int64_t pid;
  char *key;
  pthread_mutex_t mu;
  int loaded;
  int16_t epoch;
  kbatch done[TARN__KP_KEEP]; /* oldest first */
  size_t n_done;
  kbatch pend[TARN__KP_INFLIGHT]; /* checked, in flight, in check order */
  size_t n_pend;
  int64_t version; /* of the store record, 0: none */
  struct pstate *next;
} pstate;

struct tarn__kprod {
  tarn_meta *m;
  pthread_mutex_t mu;
  int64_t known_next; /* every ID below it has been handed out */
  pstate *buckets[BUCKETS];
};

int32_t tarn__kprod_seq_add(int32_t s, int32_t inc) {
  if (s > INT32_MAX - inc)
    return inc - (INT32_MAX - s) - 1;
  return s + inc;
}

int tarn__kprod_open(tarn_meta *m, tarn__kprod **out) {
  tarn__kprod *p = calloc(1, sizeof *p);
  if (!p)
    return tarn__err(TARN_ENOMEM, "kafka producers: out of memory");
  p->m = m;
  pthread_mutex_init(&p->mu, NULL);
  *out = p;
  return 0;
}

void tarn__kprod_close(tarn__kprod *p) {
  if (!p)
    return;
  for (size_t i = 0; i < BUCKETS; i++)
    for (pstate *s = p->buckets[i], *nx; s; s = nx) {
      nx = s->next;
      pthread_mutex_destroy(&s->mu);
      free(s->key);
      free(s);
    }
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* ---- producer IDs ---------------------------------------------------------- */

static int read_counter(tarn_meta *m, int64_t *next, int64_t *version) {
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, PART, COUNTER_KEY, &r);
  if (rc == TARN_ENOTFOUND) {
    *next = 0, *version = 0;
    return 0;
  }
  if (!rc && r.value_len != 8)
    rc = tarn__corrupt("kafka producer-id counter", 0, "%zu bytes, not 8", r.value_len);
  if (!rc)
    *next = (int64_t)tarn__ld_be64(r.value), *version = r.stat.version;
  tarn_meta_rec_free(&r);
  return rc;
}

int tarn__kprod_init(tarn__kprod *p, const char *transactional_id, int64_t *pid, int16_t *epoch,
                     int16_t *error) {
  *pid = -1, *epoch = -1;
  if (transactional_id) {
    *error = TARN__KP_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    return 0;
  }
  *error = TARN__KP_COORDINATOR_NOT_AVAILABLE;
  for (int i = 0; i < RETRIES; i++) {
    int64_t next, version;
    int rc = read_counter(p->m, &next, &version);
    if (rc)
      return tarn__errctx(rc, "InitProducerId");
    uint8_t v[8];
    tarn__st_be64(v, (uint64_t)next + 1);
    rc = version ? tarn_meta_cas(p->m, PART, COUNTER_KEY, v, 8, version, NULL)
                 : tarn_meta_create(p->m, PART, COUNTER_KEY, v, 8, TARN_META_PERSISTENT, NULL);
    if (rc == TARN_ECONFLICT || rc == TARN_EEXIST || rc == TARN_ENOTFOUND)
      continue; /* another node took that ID */
    if (rc)
      return tarn__errctx(rc, "InitProducerId");
    pthread_mutex_lock(&p->mu);
    if (next + 1 > p->known_next)
      p->known_next = next + 1;
    pthread_mutex_unlock(&p->mu);
    *pid = next, *epoch = 0, *error = TARN__KP_NONE;
    return 0;
  }
  return tarn__err(TARN_ECONFLICT, "InitProducerId: the counter kept changing");
}

/* Whether pid was handed out (by any node): the counter is read again only
 * for IDs above what this node has seen. */
static int issued(tarn__kprod *p, int64_t pid, int *yes) {
  pthread_mutex_lock(&p->mu);
  *yes = pid < p->known_next;
  pthread_mutex_unlock(&p->mu);
  if (*yes)
    return 0;
  int64_t next, version;
  int rc = read_counter(p->m, &next, &version);
  if (rc)
    return rc;
  pthread_mutex_lock(&p->mu);
  if (next > p->known_next)
    p->known_next = next;
  pthread_mutex_unlock(&p->mu);
  *yes = pid < next;
  return 0;
}

/* ---- the state record ------------------------------------------------------ */

static char *state_key(int64_t pid, const char *key) {
  size_t n = strlen(key) * 3 + 40;
  char *k = malloc(n);
  if (!k)
    return NULL;
  int l = snprintf(k, n, "/state/%020lld/", (long long)pid);
  tarn__kkey_escape(key, k + l);
  return k;
}

static int encode_state(const pstate *s, tarn_buf *b) {
  int rc = tarn_buf_append(b, "KP\x01", 3);
  rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)(int32_t)s->epoch);
  rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)s->n_done);
  for (size_t i = 0; !rc && i < s->n_done; i++) {
    rc = tarn_buf_put_be32(b, (uint32_t)s->done[i].first);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)s->done[i].last);
    rc = rc ? rc : tarn_buf_put_be64(b, (uint64_t)s->done[i].offset);
  }
  return rc;
}

static int decode_state(const uint8_t *v, size_t len, pstate *s) {
  tarn__rd r;
  tarn__rd_init(&r, v, len, "kafka producer state");
  const uint8_t *h;
  uint32_t ep, n;
  int rc = tarn__rd_bytes(&r, 3, &h, "header");
  if (!rc && (h[0] != 'K' || h[1] != 'P'))
    rc = tarn__corrupt(r.what, 0, "not a producer state record");
  if (!rc && h[2] != 1)
    rc = tarn__err(TARN_EVERSION, "kafka producer state: format %u, this build reads 1", h[2]);
  rc = rc ? rc : tarn__rd_be32(&r, &ep, "epoch");
  rc = rc ? rc : tarn__rd_be32(&r, &n, "batch count");
  if (!rc && n > TARN__KP_KEEP)
    rc = tarn__corrupt(r.what, 7, "%u batches, at most %d", n, TARN__KP_KEEP);
  for (uint32_t i = 0; !rc && i < n; i++) {
    uint32_t a = 0, b = 0;
    uint64_t o = 0;
    rc = tarn__rd_be32(&r, &a, "first sequence");
    rc = rc ? rc : tarn__rd_be32(&r, &b, "last sequence");
    rc = rc ? rc : tarn__rd_be64(&r, &o, "base offset");
    s->done[i] = (kbatch){(int32_t)a, (int32_t)b, (int64_t)o};
  }
  if (!rc)
    s->epoch = (int16_t)(int32_t)ep, s->n_done = n;
  return rc;
}

static int load_state(tarn__kprod *p, pstate *s) {
  char *k = state_key(s->pid, s->key);
  if (!k)
    return tarn__err(TARN_ENOMEM, "kafka producers: out of memory");
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(p->m, PART, k, &r);
  free(k);
  s->n_done = 0, s->epoch = 0, s->version = 0;
  if (rc == TARN_ENOTFOUND) {
    rc = 0;
  } else if (!rc) {
    s->version = r.stat.version;
    rc = decode_state(r.value, r.value_len, s);
  }
  tarn_meta_rec_free(&r);
  return rc ? tarn__errctx(rc, "producer %lld on %s", (long long)s->pid, s->key) : 0;
}

static uint32_t hash(int64_t pid, const char *key) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < 8; i++)
    h = (h ^ (uint8_t)((uint64_t)pid >> (8 * i))) * 16777619u;
  for (const unsigned char *c = (const unsigned char *)key; *c; c++)
    h = (h ^ *c) * 16777619u;
  return h % BUCKETS;
}

/* The state of (pid, key), locked and loaded from the store; NULL with the
 * code in *rc. */
static pstate *state_of(tarn__kprod *p, int64_t pid, const char *key, int *rc) {
  uint32_t b = hash(pid, key);
  pthread_mutex_lock(&p->mu);
  pstate *s = p->buckets[b];
  while (s && (s->pid != pid || strcmp(s->key, key)))
    s = s->next;
  if (!s && (s = calloc(1, sizeof *s))) {
    if (!(s->key = strdup(key))) {
      free(s);
      s = NULL;
    } else {
      s->pid = pid;
      pthread_mutex_init(&s->mu, NULL);
      s->next = p->buckets[b];
      p->buckets[b] = s;
    }
  }
  pthread_mutex_unlock(&p->mu);
  if (!s) {
    *rc = tarn__err(TARN_ENOMEM, "kafka producers: out of memory");
    return NULL;
  }
  pthread_mutex_lock(&s->mu);
  if (!s->loaded) {
    if ((*rc = load_state(p, s))) {
      pthread_mutex_unlock(&s->mu);
      return NULL;
    }
    s->loaded = 1;
  }
  *rc = 0;
  return s;
}

/* ---- checks ---------------------------------------------------------------- */

static int32_t last_seq(const pstate *s) {
  if (s->n_pend)
    return s->pend[s->n_pend - 1].last;
  return s->n_done ? s->done[s->n_done - 1].last : -1;
}

int tarn__kprod_check(tarn__kprod *p, const char *key, int64_t pid, int16_t epoch, int32_t base_seq,
                      int32_t count, tarn__kprod_verdict *v) {
  memset(v, 0, sizeof *v);
  v->base_offset = -1;
  if (pid < 0)
    return 0;
  if (count < 1 || base_seq < 0) {
    v->error = TARN__KP_OUT_OF_ORDER_SEQUENCE;
    return 0;
  }
  int yes, rc = issued(p, pid, &yes);
  if (rc)
    return rc;
  if (!yes) {
    v->error = TARN__KP_UNKNOWN_PRODUCER_ID;
    return 0;
  }
  pstate *s = state_of(p, pid, key, &rc);
  if (!s)
    return rc;
  int32_t last = tarn__kprod_seq_add(base_seq, count - 1);
  int fresh = !s->n_done && !s->n_pend;
  /* only epoch 0 is handed out (InitProducerId 0-1 never bumps one) */
  if (epoch != s->epoch) {
    v->error = TARN__KP_INVALID_PRODUCER_EPOCH;
    goto out;
  }
  for (size_t i = 0; i < s->n_done; i++)
    if (s->done[i].first == base_seq && s->done[i].last == last) {
      /* a retry of a stored batch: its original offsets */
      v->dup = 1;
      v->base_offset = s->done[i].offset;
      goto out;
    }
  for (size_t i = 0; i < s->n_pend; i++)
    if (s->pend[i].first == base_seq) {
      v->error = TARN__KP_NOT_ENOUGH_REPLICAS; /* the original is still in flight */
      goto out;
    }
  if (fresh && base_seq != 0) {
    /* nothing known of this producer here: its state is gone, or it never
     * wrote this partition */
    v->error = TARN__KP_UNKNOWN_PRODUCER_ID;
    goto out;
  }
  if (!fresh && base_seq != tarn__kprod_seq_add(last_seq(s), 1)) {
    v->error = TARN__KP_OUT_OF_ORDER_SEQUENCE;
    goto out;
  }
  if (s->n_pend == TARN__KP_INFLIGHT) {
    v->error = TARN__KP_NOT_ENOUGH_REPLICAS;
    goto out;
  }
  s->pend[s->n_pend++] = (kbatch){base_seq, last, -1};
out:
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static void drop_pending(pstate *s, int32_t base_seq) {
  for (size_t i = 0; i < s->n_pend; i++)
    if (s->pend[i].first == base_seq) {
      memmove(&s->pend[i], &s->pend[i + 1], (s->n_pend - i - 1) * sizeof s->pend[0]);
      s->n_pend--;
      return;
    }
}

static void push_done(pstate *s, kbatch b) {
  for (size_t i = 0; i < s->n_done; i++)
    if (s->done[i].first == b.first && s->done[i].last == b.last)
      return;
  if (s->n_done == TARN__KP_KEEP) {
    memmove(&s->done[0], &s->done[1], (TARN__KP_KEEP - 1) * sizeof s->done[0]);
    s->n_done--;
  }
  s->done[s->n_done++] = b;
}

/* Writes the state; on a lost race re-reads the record and adds b to it. */
static int save_state(tarn__kprod *p, pstate *s, kbatch b) {
  char *k = state_key(s->pid, s->key);
  if (!k)
    return tarn__err(TARN_ENOMEM, "kafka producers: out of memory");
  int rc = 0;
  for (int i = 0; i < RETRIES; i++) {
    tarn_buf buf = TARN_BUF_INIT;
    tarn_meta_stat st;
    rc = encode_state(s, &buf);
    if (!rc)
      rc = s->version
               ? tarn_meta_cas(p->m, PART, k, buf.data, buf.len, s->version, &st)
               : tarn_meta_create(p->m, PART, k, buf.data, buf.len, TARN_META_PERSISTENT, &st);
    tarn_buf_free(&buf);
    if (!rc) {
      s->version = st.version;
      break;
    }
    if (rc != TARN_ECONFLICT && rc != TARN_EEXIST && rc != TARN_ENOTFOUND)
      break;
    if ((rc = load_state(p, s)))
      break;
    push_done(s, b);
    rc = TARN_ECONFLICT;
  }
  free(k);
  return rc ? tarn__errctx(rc, "producer %lld on %s: writing its state", (long long)s->pid, s->key)
            : 0;
}

int tarn__kprod_record(tarn__kprod *p, const char *key, int64_t pid, int16_t epoch,
                       int32_t base_seq, int32_t count, int64_t base_offset) {
  if (pid < 0)
    return 0;
  int rc;
  pstate *s = state_of(p, pid, key, &rc);
  if (!s)
    return rc;
  drop_pending(s, base_seq);
  kbatch b = {base_seq, tarn__kprod_seq_add(base_seq, count - 1), base_offset};
  s->epoch = epoch;
  push_done(s, b);
  rc = save_state(p, s, b);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

void tarn__kprod_abandon(tarn__kprod *p, const char *key, int64_t pid, int32_t base_seq) {
  if (pid < 0)
    return;
  int rc;
  pstate *s = state_of(p, pid, key, &rc);
  if (!s)
    return;
  drop_pending(s, base_seq);
  pthread_mutex_unlock(&s->mu);
}
