/* The mem: object store: objects in a sorted array under a mutex, for tests
 * and simulation. "mem:NAME" handles share one store per process by name (it
 * outlives its handles until tarn_objstore_mem_drop); "mem:" is private to
 * its handle. Faults and latency can be injected per operation. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/objstore_vfs.h"
#include "tarn/testing.h"
#include "util/error.h"

#define MAX_FAULTS 16

typedef struct mobj {
  char *name;
  uint8_t *data;
  size_t len;
} mobj;

typedef struct fault {
  int op, when, code;
  uint64_t first, end; /* strikes on call numbers [first, end) of op */
} fault;

typedef struct shared {
  char *name; /* NULL: private */
  int refs, dropped;
  pthread_mutex_t mu;
  mobj *objs;
  size_t n, cap;
  fault faults[MAX_FAULTS];
  int nfaults;
  uint64_t calls[TARN_MEM_OP_COUNT];
  uint32_t latency[TARN_MEM_OP_COUNT];
  mobj *held; /* PUTs held in flight (TARN_MEM_FAULT_HOLD), oldest first */
  size_t nheld;
  void (*hook)(void *arg, int op, const char *name);
  void *hook_arg;
  struct shared *next;
} shared;

typedef struct mstore {
  tarn_objstore base;
  shared *sh;
} mstore;

typedef struct mupload {
  tarn_objstore_upload base;
  char *name;
  tarn_buf data;
} mupload;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static shared *reg;

static const char *sname(const shared *sh) { return sh->name ? sh->name : "(private)"; }

static void shared_free(shared *sh) {
  for (size_t i = 0; i < sh->n; i++)
    free(sh->objs[i].name), free(sh->objs[i].data);
  free(sh->objs);
  for (size_t i = 0; i < sh->nheld; i++)
    free(sh->held[i].name), free(sh->held[i].data);
  free(sh->held);
  pthread_mutex_destroy(&sh->mu);
  free(sh->name);
  free(sh);
}

/* Index of the first object whose name is >= name (or > name when after). */
static size_t lower(const shared *sh, const char *name, int after) {
  size_t lo = 0, hi = sh->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(sh->objs[mid].name, name);
    if (c < 0 || (after && c == 0))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static mobj *find(shared *sh, const char *name) {
  size_t i = lower(sh, name, 0);
  return i < sh->n && strcmp(sh->objs[i].name, name) == 0 ? &sh->objs[i] : NULL;
}

/* Counts the call, sleeps any latency, and locks the store. Returns the code
 * of a fault that strikes this call (0: none) and when it strikes. */
static int enter(shared *sh, int op, int *when, const char *name) {
  /* the hook runs unlocked: it may call this store (the simulator runs other
   * actors' steps there, between two calls of one actor) */
  pthread_mutex_lock(&sh->mu);
  void (*hook)(void *, int, const char *) = sh->hook;
  void *hook_arg = sh->hook_arg;
  pthread_mutex_unlock(&sh->mu);
  if (hook)
    hook(hook_arg, op, name);
  pthread_mutex_lock(&sh->mu);
  sh->calls[op]++;
  sh->calls[TARN_MEM_OP_ANY]++;
  uint32_t us = sh->latency[op] + sh->latency[TARN_MEM_OP_ANY];
  int code = 0, hit = 0;
  for (int i = 0; i < sh->nfaults && !hit; i++) {
    fault *f = &sh->faults[i];
    if (f->op != TARN_MEM_OP_ANY && f->op != op)
      continue;
    uint64_t c = sh->calls[f->op];
    if (c >= f->first && c < f->end)
      code = f->code, *when = f->when, hit = 1;
  }
  if (us) {
    pthread_mutex_unlock(&sh->mu);
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&sh->mu);
  }
  return code;
}

static int injected(shared *sh, int code, const char *op, const char *name) {
  pthread_mutex_unlock(&sh->mu);
  return tarn__err(code, "mem store %s: injected fault: %s \"%s\": %s", sname(sh), op, name,
                   tarn_errname(code));
}

/* Stores a copy of data, or takes *own (data's malloc'd block) when own is
 * given: an upload's buffer becomes the object without a second copy of it
 * (issue 16: the copy and its page faults were 40 % of a compaction's time
 * outside the codec). */
static int insert(shared *sh, const char *name, const void *data, size_t len, uint8_t **own) {
  size_t i = lower(sh, name, 0);
  if (i < sh->n && strcmp(sh->objs[i].name, name) == 0)
    return tarn__err(TARN_EEXIST, "mem store %s: object \"%s\" already exists", sname(sh), name);
  if (sh->n == sh->cap) {
    size_t cap = sh->cap ? sh->cap * 2 : 64;
    mobj *o = realloc(sh->objs, cap * sizeof *o);
    if (!o)
      return tarn__err(TARN_ENOMEM, "mem store: out of memory");
    sh->objs = o, sh->cap = cap;
  }
  mobj m = {strdup(name), own && *own ? *own : malloc(len ? len : 1), len};
  if (!m.name || !m.data) {
    free(m.name);
    if (!(own && *own))
      free(m.data);
    return tarn__err(TARN_ENOMEM, "mem store: out of memory");
  }
  if (own && *own) {
    *own = NULL;
    uint8_t *fit = realloc(m.data, len ? len : 1); /* in place: the upload grew by doubling */
    if (fit)
      m.data = fit;
  } else
    memcpy(m.data, data, len);
  memmove(&sh->objs[i + 1], &sh->objs[i], (sh->n - i) * sizeof *sh->objs);
  sh->objs[i] = m;
  sh->n++;
  return 0;
}

static int put_own(tarn_objstore *st, const char *name, const void *data, size_t len,
                   uint8_t **own) {
  shared *sh = ((mstore *)st)->sh;
  int when = 0, code = enter(sh, TARN_MEM_OP_PUT, &when, name);
  if (code && when == TARN_MEM_FAULT_BEFORE)
    return injected(sh, code, "put", name);
  if (code && when == TARN_MEM_FAULT_HOLD) {
    mobj *nv = realloc(sh->held, (sh->nheld + 1) * sizeof *nv);
    mobj m = {strdup(name), malloc(len ? len : 1), len};
    if (nv)
      sh->held = nv;
    if (nv && m.name && m.data) {
      memcpy(m.data, data, len);
      sh->held[sh->nheld++] = m;
    } else
      free(m.name), free(m.data); /* out of memory: the request is lost instead */
    return injected(sh, code, "put", name);
  }
  int rc = insert(sh, name, data, len, own);
  if (code && rc == 0)
    return injected(sh, code, "put", name);
  pthread_mutex_unlock(&sh->mu);
  return rc;
}

static int m_put(tarn_objstore *st, const char *name, const void *data, size_t len) {
  return put_own(st, name, data, len, NULL);
}

static int m_put_begin(tarn_objstore *st, const char *name, tarn_objstore_upload **out) {
  mupload *u = calloc(1, sizeof *u);
  if (!u || !(u->name = strdup(name))) {
    free(u);
    return tarn__err(TARN_ENOMEM, "mem store: out of memory");
  }
  *out = &u->base;
  return 0;
}

static int m_put_write(tarn_objstore_upload *up, const void *data, size_t len) {
  return tarn_buf_append(&((mupload *)up)->data, data, len);
}

static void m_put_abort(tarn_objstore_upload *up) {
  mupload *u = (mupload *)up;
  tarn_buf_free(&u->data);
  free(u->name);
  free(u);
}

static int m_put_commit(tarn_objstore_upload *up) {
  mupload *u = (mupload *)up;
  int rc = put_own(up->store, u->name, u->data.data ? u->data.data : (const void *)"", u->data.len,
                   u->data.data ? &u->data.data : NULL);
  m_put_abort(up); /* frees the buffer unless the object took it */
  return rc;
}

static int m_get(tarn_objstore *st, const char *name, uint64_t off, uint64_t len,
                 tarn__objdst *dst) {
  shared *sh = ((mstore *)st)->sh;
  int when = 0, code = enter(sh, TARN_MEM_OP_GET, &when, name);
  if (code && when == TARN_MEM_FAULT_BEFORE)
    return injected(sh, code, "get", name);
  int rc = 0;
  mobj *o = find(sh, name);
  if (!o)
    rc = tarn__err(TARN_ENOTFOUND, "mem store %s: no object \"%s\"", sname(sh), name);
  else if (off > o->len)
    rc = tarn__err(TARN_ERANGE, "mem store %s: offset %llu past the end of \"%s\" (%zu bytes)",
                   sname(sh), (unsigned long long)off, name, o->len);
  else {
    uint64_t n = o->len - off < len ? o->len - off : len;
    if (code == 0 && when == TARN_MEM_FAULT_TRUNCATE)
      n /= 2; /* the size still says the whole: the caller must notice */
    if (code == 0 && when == TARN_MEM_FAULT_CORRUPT && off == 0 && n > 0) {
      uint8_t b = (uint8_t)~o->data[0];
      rc = tarn__objdst_put(dst, &b, 1);
      if (rc == 0)
        rc = tarn__objdst_put(dst, o->data + 1, (size_t)n - 1);
    } else
      rc = tarn__objdst_put(dst, o->data + off, (size_t)n);
    tarn__objdst_sized(dst, o->len);
  }
  if (code && rc == 0)
    return injected(sh, code, "get", name);
  pthread_mutex_unlock(&sh->mu);
  return rc;
}

static int m_head(tarn_objstore *st, const char *name, uint64_t *size) {
  shared *sh = ((mstore *)st)->sh;
  int when = 0, code = enter(sh, TARN_MEM_OP_HEAD, &when, name);
  if (code)
    return injected(sh, code, "head", name);
  mobj *o = find(sh, name);
  int rc = 0;
  if (o)
    *size = o->len;
  else
    rc = tarn__err(TARN_ENOTFOUND, "mem store %s: no object \"%s\"", sname(sh), name);
  pthread_mutex_unlock(&sh->mu);
  return rc;
}

static int m_del(tarn_objstore *st, const char *name) {
  shared *sh = ((mstore *)st)->sh;
  int when = 0, code = enter(sh, TARN_MEM_OP_DELETE, &when, name);
  if (code && when == TARN_MEM_FAULT_BEFORE)
    return injected(sh, code, "delete", name);
  size_t i = lower(sh, name, 0);
  if (i < sh->n && strcmp(sh->objs[i].name, name) == 0) {
    free(sh->objs[i].name), free(sh->objs[i].data);
    memmove(&sh->objs[i], &sh->objs[i + 1], (sh->n - i - 1) * sizeof *sh->objs);
    sh->n--;
  }
  if (code)
    return injected(sh, code, "delete", name);
  pthread_mutex_unlock(&sh->mu);
  return 0;
}

static int m_list(tarn_objstore *st, const char *prefix, const char *start_after, size_t max,
                  tarn_objstore_listing *out) {
  shared *sh = ((mstore *)st)->sh;
  int when = 0, code = enter(sh, TARN_MEM_OP_LIST, &when, prefix);
  if (code)
    return injected(sh, code, "list", prefix);
  size_t i = strcmp(prefix, start_after) > 0 ? lower(sh, prefix, 0) : lower(sh, start_after, 1);
  size_t pl = strlen(prefix);
  int rc = 0;
  for (; i < sh->n && rc == 0; i++) {
    const mobj *o = &sh->objs[i];
    if (strncmp(o->name, prefix, pl) != 0)
      break;
    if (out->n == max) {
      out->truncated = 1;
      break;
    }
    rc = tarn__objlist_add(out, o->name, strlen(o->name), o->len);
  }
  pthread_mutex_unlock(&sh->mu);
  return rc;
}

static int m_open(const char *uri, tarn_objstore **out) {
  const char *name = uri + 4; /* after "mem:" */
  mstore *s = calloc(1, sizeof *s);
  if (!s)
    return tarn__err(TARN_ENOMEM, "mem store: out of memory");
  pthread_mutex_lock(&reg_mu);
  shared *sh = NULL;
  if (*name)
    for (sh = reg; sh && strcmp(sh->name, name) != 0; sh = sh->next)
      ;
  if (!sh) {
    sh = calloc(1, sizeof *sh);
    if (!sh || (*name && !(sh->name = strdup(name)))) {
      pthread_mutex_unlock(&reg_mu);
      free(sh), free(s);
      return tarn__err(TARN_ENOMEM, "mem store: out of memory");
    }
    pthread_mutex_init(&sh->mu, NULL);
    if (*name)
      sh->next = reg, reg = sh;
  }
  sh->refs++;
  pthread_mutex_unlock(&reg_mu);
  s->sh = sh;
  *out = &s->base;
  return 0;
}

static void m_close(tarn_objstore *st) {
  mstore *s = (mstore *)st;
  shared *sh = s->sh;
  pthread_mutex_lock(&reg_mu);
  int last = --sh->refs == 0 && (!sh->name || sh->dropped);
  pthread_mutex_unlock(&reg_mu);
  if (last)
    shared_free(sh);
  free(s);
}

void tarn_objstore_mem_drop(const char *name) {
  pthread_mutex_lock(&reg_mu);
  shared **pp = &reg;
  while (*pp && strcmp((*pp)->name, name) != 0)
    pp = &(*pp)->next;
  shared *sh = *pp;
  if (sh) {
    *pp = sh->next;
    sh->dropped = 1;
  }
  int now = sh && sh->refs == 0;
  pthread_mutex_unlock(&reg_mu);
  if (now)
    shared_free(sh);
}

static shared *mem_of(tarn_objstore *s) {
  return s && s->vfs == &tarn__objstore_mem ? ((mstore *)s)->sh : NULL;
}

static int bad_op(int op) { return op < 0 || op >= TARN_MEM_OP_COUNT; }

int tarn_objstore_mem_fault(tarn_objstore *s, int op, uint64_t nth, uint64_t count, int when,
                            int code) {
  shared *sh = mem_of(s);
  if (!sh)
    return tarn__err(TARN_EINVAL, "mem store: fault injection on a store that is not mem:");
  int damaged = when == TARN_MEM_FAULT_TRUNCATE || when == TARN_MEM_FAULT_CORRUPT;
  int hold = when == TARN_MEM_FAULT_HOLD;
  if (bad_op(op) || nth == 0 || count == 0 ||
      (damaged ? code != 0 || op != TARN_MEM_OP_GET : code >= 0) ||
      (hold && op != TARN_MEM_OP_PUT) ||
      (!damaged && !hold && when != TARN_MEM_FAULT_BEFORE && when != TARN_MEM_FAULT_AFTER))
    return tarn__err(TARN_EINVAL, "mem store: bad fault (op %d, nth %llu, count %llu, code %d)", op,
                     (unsigned long long)nth, (unsigned long long)count, code);
  pthread_mutex_lock(&sh->mu);
  int rc = 0;
  if (sh->nfaults == MAX_FAULTS)
    rc = tarn__err(TARN_EINVAL, "mem store: more than %d faults armed", MAX_FAULTS);
  else {
    uint64_t first = sh->calls[op] + nth;
    sh->faults[sh->nfaults++] = (fault){op, when, code, first, first + count};
  }
  pthread_mutex_unlock(&sh->mu);
  return rc;
}

int tarn_objstore_mem_latency(tarn_objstore *s, int op, uint32_t usec) {
  shared *sh = mem_of(s);
  if (!sh || bad_op(op))
    return tarn__err(TARN_EINVAL, "mem store: bad latency target");
  pthread_mutex_lock(&sh->mu);
  sh->latency[op] = usec;
  pthread_mutex_unlock(&sh->mu);
  return 0;
}

int tarn_objstore_mem_reset_faults(tarn_objstore *s) {
  shared *sh = mem_of(s);
  if (!sh)
    return tarn__err(TARN_EINVAL, "mem store: not a mem: store");
  pthread_mutex_lock(&sh->mu);
  sh->nfaults = 0;
  memset(sh->latency, 0, sizeof sh->latency);
  pthread_mutex_unlock(&sh->mu);
  return 0;
}

uint64_t tarn_objstore_mem_calls(tarn_objstore *s, int op) {
  shared *sh = mem_of(s);
  if (!sh || bad_op(op))
    return 0;
  pthread_mutex_lock(&sh->mu);
  uint64_t c = sh->calls[op];
  pthread_mutex_unlock(&sh->mu);
  return c;
}

int tarn_objstore_mem_hook(tarn_objstore *s, void (*fn)(void *arg, int op, const char *name),
                           void *arg) {
  shared *sh = mem_of(s);
  if (!sh)
    return tarn__err(TARN_EINVAL, "mem store: not a mem: store");
  pthread_mutex_lock(&sh->mu);
  sh->hook = fn;
  sh->hook_arg = arg;
  pthread_mutex_unlock(&sh->mu);
  return 0;
}

size_t tarn_objstore_mem_held(tarn_objstore *s) {
  shared *sh = mem_of(s);
  if (!sh)
    return 0;
  pthread_mutex_lock(&sh->mu);
  size_t n = sh->nheld;
  pthread_mutex_unlock(&sh->mu);
  return n;
}

int tarn_objstore_mem_land(tarn_objstore *s, int drop) {
  shared *sh = mem_of(s);
  if (!sh)
    return tarn__err(TARN_EINVAL, "mem store: not a mem: store");
  pthread_mutex_lock(&sh->mu);
  if (sh->nheld == 0) {
    pthread_mutex_unlock(&sh->mu);
    return 0;
  }
  mobj m = sh->held[0];
  memmove(&sh->held[0], &sh->held[1], (sh->nheld - 1) * sizeof *sh->held);
  sh->nheld--;
  /* the create-only condition is judged now, as a late request's is */
  int rc = drop ? 0 : insert(sh, m.name, m.data, m.len, NULL);
  pthread_mutex_unlock(&sh->mu);
  free(m.name), free(m.data);
  return rc ? rc : 1;
}

const struct tarn__objstore_vfs tarn__objstore_mem = {
    .scheme = "mem",
    .open = m_open,
    .close = m_close,
    .put = m_put,
    .put_begin = m_put_begin,
    .put_write = m_put_write,
    .put_commit = m_put_commit,
    .put_abort = m_put_abort,
    .get = m_get,
    .head = m_head,
    .del = m_del,
    .list = m_list,
};
