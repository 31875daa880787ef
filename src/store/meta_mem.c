/* mem: — the metadata store in process memory, for tests and simulation.
 *
 * "mem:" is a private store, freed when its handle closes; "mem:NAME" is
 * shared by every handle of the process opened with that name (each handle
 * has its own session) and lives until the process exits, like a server. One mutex
 * per store makes every primitive atomic and linearizable. Records of a
 * partition are kept in an array sorted by tarn_meta_key_compare. Fault
 * injection (include/tarn/testing.h) lets tests exercise a write that commits
 * but reports an unknown outcome, a write that fails without effect, a
 * write held in flight that lands later, a session that expires (told or
 * not), and reads that fail. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/meta_vfs.h"
#include "tarn/testing.h"
#include "util/error.h"

typedef struct mrec {
  char *key;
  uint8_t *val;
  size_t len;
  int64_t version, created_ms;
  uint64_t session; /* 0: persistent */
} mrec;

typedef struct mpart {
  char *name;
  mrec *v;
  size_t n, cap;
} mpart;

typedef struct mstore {
  char *name; /* NULL: private */
  int refs;
  pthread_mutex_t mu;
  pthread_cond_t changed;
  mpart *parts;
  size_t nparts;
  int64_t counter; /* versions; also the change token */
  uint64_t next_session;
  struct mstore *next;
} mstore;

/* A write held in flight (TARN_META_FAULT_DELAY_COMMIT): its arguments. */
typedef struct mheld {
  int op; /* 'w' write, 'd' delete, 'r' range delete, 's' sequenced put */
  char *part, *key, *key2;
  uint8_t *val;
  size_t len;
  int mode, flags;
  int64_t version;
  uint64_t d1, d2;
  /* The write's conditions, checked when it lands, as a late write's are:
   * a zombie's guarded put fails once its lease record is gone. */
  tarn_meta_guard g[TARN_META_GUARDS_MAX];
  size_t ng;
  int64_t held_ms; /* when it was held (the store's clock) */
} mheld;

#define MEM_MAX_HELD 8

typedef struct mhandle {
  mstore *s;
  uint64_t session;
  int fault, fault_count, fault_skip;
  int delay_count, delay_skip, landing, expired, read_faults;
  mheld held[MEM_MAX_HELD];
  int nheld;
} mhandle;

static void free_held(mheld *x) {
  free(x->part);
  free(x->key);
  free(x->key2);
  free(x->val);
  for (size_t i = 0; i < x->ng; i++)
    free((char *)x->g[i].key);
  memset(x, 0, sizeof *x);
}

/* Points a write to be held at its caller's conditions (hold() copies them). */
static void held_guards(mheld *x, const tarn_meta_guard *g, size_t ng) {
  for (size_t i = 0; i < ng && i < TARN_META_GUARDS_MAX; i++)
    x->g[i] = g[i];
  x->ng = ng < TARN_META_GUARDS_MAX ? ng : TARN_META_GUARDS_MAX;
}

/* Holds a write instead of applying it, if a delay is armed: 1 if held. The
 * store's mutex is held. */
static int hold(mhandle *h, const mheld *x) {
  if (h->delay_count <= 0 || h->landing || h->nheld == MEM_MAX_HELD)
    return 0;
  if (h->delay_skip > 0) { /* tarn_meta_inject_fault_after: these pass first */
    h->delay_skip--;
    return 0;
  }
  mheld *c = &h->held[h->nheld];
  *c = *x;
  c->part = x->part ? strdup(x->part) : NULL;
  c->key = x->key ? strdup(x->key) : NULL;
  c->key2 = x->key2 ? strdup(x->key2) : NULL;
  c->val = malloc(x->len ? x->len : 1);
  if (!c->part || (x->key && !c->key) || (x->key2 && !c->key2) || !c->val) {
    free_held(c);
    return 0; /* out of memory: the write goes ahead instead */
  }
  if (x->len)
    memcpy(c->val, x->val, x->len);
  c->ng = 0;
  for (size_t i = 0; i < x->ng && i < TARN_META_GUARDS_MAX; i++) {
    c->g[i] = x->g[i];
    if (!(c->g[i].key = strdup(x->g[i].key))) {
      free_held(c);
      return 0;
    }
    c->ng = i + 1;
  }
  c->held_ms = tarn__meta_now_ms();
  h->nheld++;
  h->delay_count--;
  return 1;
}

static int held_result(void) {
  return tarn__err(TARN_EUNKNOWN, "mem: injected timeout, the write still in flight");
}

/* A read fault armed on the handle: the error, or 0. */
static int take_read_fault(mhandle *h) {
  if (h->read_faults <= 0)
    return 0;
  h->read_faults--;
  return tarn__err(TARN_EUNAVAIL, "mem: injected read failure");
}

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static mstore *registry;

static mpart *get_part(mstore *s, const char *name, int create) {
  for (size_t i = 0; i < s->nparts; i++)
    if (strcmp(s->parts[i].name, name) == 0)
      return &s->parts[i];
  if (!create)
    return NULL;
  mpart *np = realloc(s->parts, (s->nparts + 1) * sizeof *np);
  if (!np)
    return NULL;
  s->parts = np;
  mpart *p = &s->parts[s->nparts];
  memset(p, 0, sizeof *p);
  p->name = strdup(name);
  if (!p->name)
    return NULL;
  s->nparts++;
  return p;
}

/* The index of the first record whose key is >= key. */
static size_t lower_bound(const mpart *p, const char *key) {
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (tarn_meta_key_compare(p->v[mid].key, key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void free_rec(mrec *r) {
  free(r->key);
  free(r->val);
}

static void remove_at(mpart *p, size_t i) {
  free_rec(&p->v[i]);
  memmove(&p->v[i], &p->v[i + 1], (p->n - i - 1) * sizeof *p->v);
  p->n--;
}

static void drop_session(mstore *s, uint64_t session) {
  for (size_t j = 0; j < s->nparts; j++) {
    mpart *p = &s->parts[j];
    for (size_t i = p->n; i-- > 0;)
      if (p->v[i].session == session)
        remove_at(p, i);
  }
  s->counter++;
  pthread_cond_broadcast(&s->changed);
}

static int mem_open(tarn_meta *m, const char *target) {
  mhandle *h = calloc(1, sizeof *h);
  if (!h)
    return tarn__err(TARN_ENOMEM, "mem: out of memory");
  pthread_mutex_lock(&registry_mu);
  mstore *s = NULL;
  if (*target)
    for (s = registry; s && strcmp(s->name, target) != 0; s = s->next) {
    }
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s || (*target && !(s->name = strdup(target)))) {
      free(s);
      free(h);
      pthread_mutex_unlock(&registry_mu);
      return tarn__err(TARN_ENOMEM, "mem: out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->changed, NULL);
    if (s->name) {
      s->next = registry;
      registry = s;
    }
  }
  s->refs++;
  pthread_mutex_unlock(&registry_mu);
  pthread_mutex_lock(&s->mu);
  h->s = s;
  h->session = ++s->next_session;
  pthread_mutex_unlock(&s->mu);
  m->impl = h;
  return 0;
}

static void mem_close(tarn_meta *m) {
  mhandle *h = m->impl;
  mstore *s = h->s;
  pthread_mutex_lock(&s->mu);
  drop_session(s, h->session);
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < h->nheld; i++)
    free_held(&h->held[i]);
  pthread_mutex_lock(&registry_mu);
  int last = --s->refs == 0 && !s->name;
  pthread_mutex_unlock(&registry_mu);
  if (last) {
    for (size_t j = 0; j < s->nparts; j++) {
      for (size_t i = 0; i < s->parts[j].n; i++)
        free_rec(&s->parts[j].v[i]);
      free(s->parts[j].v);
      free(s->parts[j].name);
    }
    free(s->parts);
    free(s->name);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->changed);
    free(s);
  }
  free(h);
}

/* The index a comparison selects around key, or -1. */
static long pick(const mpart *p, const char *key, int cmp) {
  if (!p)
    return -1;
  size_t i = lower_bound(p, key);
  int eq = i < p->n && tarn_meta_key_compare(p->v[i].key, key) == 0;
  long r;
  switch (cmp) {
  case TARN__META_EQUAL: r = eq ? (long)i : -1; break;
  case TARN__META_CEILING: r = (long)i; break;
  case TARN__META_HIGHER: r = (long)i + eq; break;
  case TARN__META_FLOOR: r = eq ? (long)i : (long)i - 1; break;
  default: r = (long)i - 1; break;
  }
  return r >= 0 && (size_t)r < p->n ? r : -1;
}

static int mem_find(tarn_meta *m, const char *part, const char *key, int cmp, tarn_meta_rec *out) {
  mhandle *h = m->impl;
  mstore *s = h->s;
  pthread_mutex_lock(&s->mu);
  mpart *p = get_part(s, part, 0);
  long i = pick(p, key, cmp);
  int rc = take_read_fault(h);
  if (rc) {
  } else if (i < 0)
    rc = tarn__err(TARN_ENOTFOUND, "mem: no key for \"%s\" in partition %s", key, part);
  else {
    mrec *r = &p->v[i];
    rc = tarn__meta_rec_set(out, r->key, r->val, r->len, r->version, r->created_ms);
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* 0 when every guard of a write of key holds, else TARN_EGUARD for the
 * first that fails; the store's mutex is held. */
static int check_guards(mstore *s, const char *part, const char *key, const tarn_meta_guard *g,
                        size_t ng) {
  mpart *p = get_part(s, part, 0);
  for (size_t i = 0; i < ng; i++) {
    long j = pick(p, g[i].key, TARN__META_EQUAL);
    int64_t ver = j >= 0 ? p->v[j].version : 0;
    if (!tarn__meta_guard_holds(&g[i], j >= 0, ver))
      return tarn__meta_guard_failed("mem", part, key, &g[i], j >= 0, ver);
  }
  return 0;
}

/* Applies the handle's injected write fault: 1 to report TARN_EUNKNOWN after
 * committing, or an error to return without effect. */
static int take_fault(mhandle *h) {
  if (h->landing || h->fault_count <= 0)
    return 0;
  if (h->fault_skip > 0) {
    h->fault_skip--;
    return 0;
  }
  h->fault_count--;
  if (h->fault == TARN_META_FAULT_FAIL)
    return tarn__err(TARN_EUNAVAIL, "mem: injected failure (no effect)");
  return 1;
}

static int commit_result(int fault, int rc) {
  if (rc == 0 && fault == 1)
    return tarn__err(TARN_EUNKNOWN, "mem: injected timeout after commit");
  return rc;
}

/* Sets (or inserts at i) the record; the store's mutex is held. */
static int store_rec(mstore *s, mpart *p, size_t i, int exists, const char *key, const void *val,
                     size_t len, uint64_t session, tarn_meta_stat *st) {
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy)
    return tarn__err(TARN_ENOMEM, "mem: out of memory");
  if (len)
    memcpy(copy, val, len);
  if (!exists) {
    if (p->n == p->cap) {
      size_t cap = p->cap ? p->cap * 2 : 16;
      mrec *nv = realloc(p->v, cap * sizeof *nv);
      if (!nv) {
        free(copy);
        return tarn__err(TARN_ENOMEM, "mem: out of memory");
      }
      p->v = nv, p->cap = cap;
    }
    char *k = strdup(key);
    if (!k) {
      free(copy);
      return tarn__err(TARN_ENOMEM, "mem: out of memory");
    }
    memmove(&p->v[i + 1], &p->v[i], (p->n - i) * sizeof *p->v);
    p->n++;
    mrec *r = &p->v[i];
    memset(r, 0, sizeof *r);
    r->key = k;
    r->created_ms = tarn__meta_now_ms();
    r->session = session;
  }
  mrec *r = &p->v[i];
  free(r->val);
  r->val = copy;
  r->len = len;
  r->version = ++s->counter;
  st->version = r->version;
  st->created_ms = r->created_ms;
  pthread_cond_broadcast(&s->changed);
  return 0;
}

static int mem_write(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                     int mode, int flags, int64_t version, const tarn_meta_guard *g, size_t ng,
                     tarn_meta_stat *st) {
  mhandle *h = m->impl;
  mstore *s = h->s;
  pthread_mutex_lock(&s->mu);
  mheld x = {.op = 'w',
             .part = (char *)part,
             .key = (char *)key,
             .val = (uint8_t *)val,
             .len = len,
             .mode = mode,
             .flags = flags,
             .version = version};
  held_guards(&x, g, ng);
  if (hold(h, &x)) {
    pthread_mutex_unlock(&s->mu);
    return held_result();
  }
  int fault = take_fault(h), rc = 0;
  if (fault < 0) {
    pthread_mutex_unlock(&s->mu);
    return fault;
  }
  mpart *p = get_part(s, part, 1);
  if (!p) {
    pthread_mutex_unlock(&s->mu);
    return tarn__err(TARN_ENOMEM, "mem: out of memory");
  }
  size_t i = lower_bound(p, key);
  int exists = i < p->n && strcmp(p->v[i].key, key) == 0;
  if ((rc = check_guards(s, part, key, g, ng)))
    ;
  else if ((flags & TARN_META_EPHEMERAL) && h->expired)
    rc = tarn__err(TARN_ESESSION, "mem: the session has ended");
  else if (mode == TARN__META_CREATE && exists)
    rc = tarn__err(TARN_EEXIST, "mem: \"%s\" exists in partition %s", key, part);
  else if (mode == TARN__META_CAS && !exists)
    rc = tarn__err(TARN_ENOTFOUND, "mem: compare-and-set of absent \"%s\"", key);
  else if (mode == TARN__META_CAS && p->v[i].version != version)
    rc = tarn__err(TARN_ECONFLICT, "mem: \"%s\" has version %lld, not %lld", key,
                   (long long)p->v[i].version, (long long)version);
  else
    rc = store_rec(s, p, i, exists, key, val, len, (flags & TARN_META_EPHEMERAL) ? h->session : 0,
                   st);
  pthread_mutex_unlock(&s->mu);
  return commit_result(fault, rc);
}

static int mem_del(tarn_meta *m, const char *part, const char *key, int64_t version,
                   const tarn_meta_guard *g, size_t ng) {
  mhandle *h = m->impl;
  mstore *s = h->s;
  pthread_mutex_lock(&s->mu);
  mheld x = {.op = 'd', .part = (char *)part, .key = (char *)key, .version = version};
  held_guards(&x, g, ng);
  if (hold(h, &x)) {
    pthread_mutex_unlock(&s->mu);
    return held_result();
  }
  int fault = take_fault(h), rc = 0;
  if (fault < 0) {
    pthread_mutex_unlock(&s->mu);
    return fault;
  }
  mpart *p = get_part(s, part, 0);
  long i = pick(p, key, TARN__META_EQUAL);
  if ((rc = check_guards(s, part, key, g, ng)))
    ;
  else if (i < 0)
    rc = tarn__err(TARN_ENOTFOUND, "mem: delete of absent \"%s\"", key);
  else if (version != TARN_META_ANY_VERSION && p->v[i].version != version)
    rc = tarn__err(TARN_ECONFLICT, "mem: delete of \"%s\": version %lld, not %lld", key,
                   (long long)p->v[i].version, (long long)version);
  else {
    remove_at(p, (size_t)i);
    s->counter++;
    pthread_cond_broadcast(&s->changed);
  }
  pthread_mutex_unlock(&s->mu);
  return commit_result(fault, rc);
}

static int mem_del_range(tarn_meta *m, const char *part, const char *a, const char *b,
                         const tarn_meta_guard *g, size_t ng, size_t *count) {
  mhandle *h = m->impl;
  mstore *s = h->s;
  pthread_mutex_lock(&s->mu);
  mheld x = {.op = 'r', .part = (char *)part, .key = (char *)a, .key2 = (char *)b};
  held_guards(&x, g, ng);
  if (hold(h, &x)) {
    pthread_mutex_unlock(&s->mu);
    return held_result();
  }
  int fault = take_fault(h);
  if (fault < 0) {
    pthread_mutex_unlock(&s->mu);
    return fault;
  }
  int rc = check_guards(s, part, a, g, ng);
  mpart *p = get_part(s, part, 0);
  if (p && rc == 0) {
    size_t i = lower_bound(p, a), j = lower_bound(p, b);
    for (size_t k = i; k < j; k++)
      free_rec(&p->v[k]);
    memmove(&p->v[i], &p->v[j], (p->n - j) * sizeof *p->v);
    p->n -= j - i;
    *count = j - i;
    s->counter++;
    pthread_cond_broadcast(&s->changed);
  }
  pthread_mutex_unlock(&s->mu);
  return commit_result(fault, rc);
}

static int mem_seq_put(tarn_meta *m, const char *part, const char *prefix, uint64_t d1, uint64_t d2,
                       const void *val, size_t len, const tarn_meta_guard *g, size_t ng,
                       tarn_meta_rec *out) {
  mhandle *h = m->impl;
  mstore *s = h->s;
  char *bound = tarn__meta_seq_bound(prefix), *key = NULL;
  if (!bound)
    return tarn__err(TARN_ENOMEM, "mem: out of memory");
  pthread_mutex_lock(&s->mu);
  int fault, rc;
  mheld x = {.op = 's',
             .part = (char *)part,
             .key = (char *)prefix,
             .d1 = d1,
             .d2 = d2,
             .val = (uint8_t *)val,
             .len = len};
  held_guards(&x, g, ng);
  if (hold(h, &x)) {
    rc = held_result();
    goto out;
  }
  if ((fault = take_fault(h)) < 0) {
    rc = fault;
    goto out;
  }
  mpart *p = get_part(s, part, 1);
  if (!p) {
    rc = tarn__err(TARN_ENOMEM, "mem: out of memory");
    goto out;
  }
  if ((rc = check_guards(s, part, prefix, g, ng)))
    goto out;
  long li = pick(p, bound, TARN__META_LOWER);
  rc = tarn__meta_seq_last("mem", part, prefix, li >= 0 ? p->v[li].key : NULL, g, ng);
  if (!rc)
    rc = tarn__meta_seq_key(prefix, li >= 0 ? p->v[li].key : NULL, d1, d2, &key);
  if (rc)
    goto out;
  size_t i = lower_bound(p, key);
  int exists = i < p->n && strcmp(p->v[i].key, key) == 0;
  tarn_meta_stat st;
  /* The result's key is allocated before the commit: an allocation failing
   * after it would report a put that took effect as failed. */
  if ((rc = tarn__meta_rec_set(out, key, NULL, 0, 0, 0)))
    goto out;
  rc = store_rec(s, p, i, exists, key, val, len, 0, &st);
  if (rc == 0) {
    out->stat.version = st.version;
    out->stat.created_ms = st.created_ms;
  } else {
    tarn_meta_rec_free(out);
  }
  rc = commit_result(fault, rc);
out:
  pthread_mutex_unlock(&s->mu);
  free(bound);
  free(key);
  return rc;
}

static int mem_range(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                     size_t limit, int values, tarn_meta_recs *out) {
  mhandle *h = m->impl;
  mstore *s = h->s;
  pthread_mutex_lock(&s->mu);
  int rc = take_read_fault(h);
  mpart *p = rc ? NULL : get_part(s, part, 0);
  if (p) {
    size_t i = lower_bound(p, a), j = lower_bound(p, b);
    if ((flags & TARN_META_AFTER) && i < p->n && strcmp(p->v[i].key, a) == 0)
      i++;
    for (; i < j && rc == 0; i++) {
      if (limit && out->n == limit) {
        out->more = 1;
        break;
      }
      mrec *r = &p->v[i];
      tarn_meta_rec *o = tarn__meta_recs_push(out);
      rc = o ? tarn__meta_rec_set(o, r->key, values ? r->val : NULL, r->len, r->version,
                                  r->created_ms)
             : tarn__err(TARN_ENOMEM, "mem: out of memory");
    }
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

static int mem_token(tarn_meta *m, int64_t *token) {
  mstore *s = ((mhandle *)m->impl)->s;
  pthread_mutex_lock(&s->mu);
  *token = s->counter;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static int mem_wait_any(tarn_meta *m, const tarn_meta_range *r, size_t n, int64_t since,
                        int timeout_ms) {
  mstore *s = ((mhandle *)m->impl)->s;
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += timeout_ms / 1000;
  dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
  if (dl.tv_nsec >= 1000000000)
    dl.tv_sec++, dl.tv_nsec -= 1000000000;
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  for (;;) {
    for (size_t k = 0; k < n; k++) {
      mpart *p = get_part(s, r[k].part, 0);
      if (!p)
        continue;
      size_t i = lower_bound(p, r[k].a), j = lower_bound(p, r[k].b);
      for (; i < j; i++)
        if (p->v[i].version > since)
          goto done;
    }
    if (pthread_cond_timedwait(&s->changed, &s->mu, &dl) == ETIMEDOUT) {
      rc = tarn__err(TARN_ETIMEDOUT, "mem: no change in %d ms", timeout_ms);
      break;
    }
  }
done:
  pthread_mutex_unlock(&s->mu);
  return rc;
}

static int mem_wait(tarn_meta *m, const char *part, const char *a, const char *b, int64_t since,
                    int timeout_ms) {
  tarn_meta_range r = {part, a, b};
  return mem_wait_any(m, &r, 1, since, timeout_ms);
}

/* The held writes take effect now, in the order they were made; those held
 * longer than max_age_ms (if > 0) are dropped instead. */
static int land(tarn_meta *m, int max_age_ms) {
  mhandle *h = m->impl;
  if (!h->nheld)
    return tarn__err(TARN_ENOTFOUND, "mem: no write in flight");
  h->landing = 1;
  int64_t now = tarn__meta_now_ms();
  for (int i = 0; i < h->nheld; i++) {
    mheld *x = &h->held[i];
    if (max_age_ms > 0 && now - x->held_ms > max_age_ms) {
      free_held(x);
      continue;
    }
    tarn_meta_stat st;
    tarn_meta_rec rec = {0};
    size_t count = 0;
    switch (x->op) {
    case 'w':
      mem_write(m, x->part, x->key, x->val, x->len, x->mode, x->flags, x->version, x->g, x->ng,
                &st);
      break;
    case 'd': mem_del(m, x->part, x->key, x->version, x->g, x->ng); break;
    case 'r': mem_del_range(m, x->part, x->key, x->key2, x->g, x->ng, &count); break;
    default:
      mem_seq_put(m, x->part, x->key, x->d1, x->d2, x->val, x->len, x->g, x->ng, &rec);
      tarn_meta_rec_free(&rec);
    }
    free_held(x);
  }
  h->nheld = 0;
  h->landing = 0;
  return 0;
}

static int mem_fault(tarn_meta *m, int fault, int skip, int count) {
  mhandle *h = m->impl;
  mstore *s = h->s;
  if (fault == TARN_META_FAULT_EXPIRE_SESSION || fault == TARN_META_FAULT_EXPIRE_SILENT) {
    pthread_mutex_lock(&s->mu);
    if (!h->expired)
      drop_session(s, h->session);
    h->expired = 1;
    pthread_mutex_unlock(&s->mu);
    if (fault == TARN_META_FAULT_EXPIRE_SESSION)
      tarn__meta_session_ended(m);
    return 0;
  }
  if (fault == TARN_META_FAULT_LAND)
    return land(m, count);
  pthread_mutex_lock(&s->mu);
  if (fault == TARN_META_FAULT_DELAY_COMMIT)
    h->delay_count = count, h->delay_skip = skip;
  if (fault == TARN_META_FAULT_READ_FAIL)
    h->read_faults = count;
  pthread_mutex_unlock(&s->mu);
  if (fault == TARN_META_FAULT_DELAY_COMMIT || fault == TARN_META_FAULT_READ_FAIL)
    return 0;
  if (fault != TARN_META_FAULT_NONE && fault != TARN_META_FAULT_COMMIT_UNKNOWN &&
      fault != TARN_META_FAULT_FAIL)
    return tarn__err(TARN_EINVAL, "mem: unknown fault %d", fault);
  pthread_mutex_lock(&s->mu);
  h->fault = fault;
  h->fault_count = fault == TARN_META_FAULT_NONE ? 0 : count;
  h->fault_skip = skip;
  if (fault == TARN_META_FAULT_NONE)
    h->delay_count = h->read_faults = 0;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static int mem_renew(tarn_meta *m) {
  mhandle *h = m->impl;
  pthread_mutex_lock(&h->s->mu);
  h->session = ++h->s->next_session;
  h->expired = 0; /* the new session's ephemerals are its own again */
  pthread_mutex_unlock(&h->s->mu);
  return 0;
}

const tarn__meta_vfs tarn__meta_vfs_mem = {
    .scheme = "mem",
    .open = mem_open,
    .close = mem_close,
    .find = mem_find,
    .write = mem_write,
    .del = mem_del,
    .del_range = mem_del_range,
    .seq_put = mem_seq_put,
    .range = mem_range,
    .token = mem_token,
    .wait = mem_wait,
    .fault = mem_fault,
    .renew = mem_renew,
    .wait_any = mem_wait_any,
};
