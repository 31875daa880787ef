/* The lat: object store: a wrapper that adds latency and outages to any other
 * backend (include/tarn/objstore_lat.h). Its state (distribution, outage,
 * sampler) lives in a registry by name, so a test can switch a bucket down
 * while the code under test holds its own handle on it. The wrapper calls the
 * inner backend's table directly: the dispatcher already checked the names. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/objstore_vfs.h"
#include "tarn/objstore_lat.h"
#include "util/error.h"

typedef struct conf {
  uint64_t median_us, p99_us, slow_us, hang_us;
  uint64_t seed;
  int outage;
  int seeded; /* seed= given: restart the sampler */
} conf;

typedef struct state {
  char *name;
  int refs;
  pthread_mutex_t mu;
  conf c;
  uint64_t rng;
  uint64_t calls, delay_us;
  uint64_t puts; /* PUTs handed to the inner store (what a provider bills) */
  struct state *next;
} state;

typedef struct lstore {
  tarn_objstore base;
  tarn_objstore *inner;
  state *st;
} lstore;

typedef struct lupload {
  tarn_objstore_upload base;
  tarn_objstore_upload *inner;
} lupload;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static state *reg;

static const char *const outages[] = {"none", "down", "slow", "noput", "lostput"};

/* "250us", "30ms", "1.5s", "0"; a bare number is milliseconds. */
static int parse_dur(const char *v, size_t n, uint64_t *us) {
  char tmp[64];
  if (n == 0 || n >= sizeof tmp)
    return -1;
  memcpy(tmp, v, n);
  tmp[n] = 0;
  char *end;
  double d = strtod(tmp, &end);
  if (end == tmp || d < 0 || d > 3600e6)
    return -1;
  double mul = 1000;
  if (strcmp(end, "us") == 0)
    mul = 1;
  else if (strcmp(end, "ms") == 0 || *end == 0)
    mul = 1000;
  else if (strcmp(end, "s") == 0)
    mul = 1e6;
  else
    return -1;
  *us = (uint64_t)(d * mul + 0.5);
  return 0;
}

/* Applies PARAMS[0..len) to c; the name (when given and wanted) to *name.
 * Fails without a partial change to the caller's copy being kept. */
static int parse_params(const char *p, size_t len, conf *c, char **name, const char *what) {
  conf t = *c;
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && p[j] != ',')
      j++;
    const char *kv = p + i;
    size_t kn = j - i;
    i = j + 1;
    if (kn == 0)
      continue;
    const char *eq = memchr(kv, '=', kn);
    if (!eq)
      return tarn__err(TARN_EINVAL, "lat store %s: parameter \"%.*s\" has no =", what, (int)kn, kv);
    size_t k = (size_t)(eq - kv);
    const char *v = eq + 1;
    size_t vn = kn - k - 1;
#define KEY(s) (k == sizeof s - 1 && memcmp(kv, s, k) == 0)
    int bad = 0;
    if (KEY("name")) {
      if (!name || vn == 0)
        bad = 1;
      else {
        free(*name);
        *name = strndup(v, vn);
        if (!*name)
          return tarn__err(TARN_ENOMEM, "lat store: out of memory");
      }
    } else if (KEY("median"))
      bad = parse_dur(v, vn, &t.median_us);
    else if (KEY("p99"))
      bad = parse_dur(v, vn, &t.p99_us);
    else if (KEY("slow"))
      bad = parse_dur(v, vn, &t.slow_us);
    else if (KEY("hang"))
      bad = parse_dur(v, vn, &t.hang_us);
    else if (KEY("seed")) {
      char tmp[32];
      char *end;
      bad = vn == 0 || vn >= sizeof tmp;
      if (!bad) {
        memcpy(tmp, v, vn);
        tmp[vn] = 0;
        t.seed = strtoull(tmp, &end, 10);
        bad = *end != 0;
        t.seeded = 1;
      }
    } else if (KEY("outage")) {
      bad = 1;
      for (int o = 0; o < (int)(sizeof outages / sizeof outages[0]); o++)
        if (strlen(outages[o]) == vn && memcmp(outages[o], v, vn) == 0)
          t.outage = o, bad = 0;
    } else
      return tarn__err(TARN_EINVAL,
                       "lat store %s: unknown parameter \"%.*s\" (name, median, p99, seed, "
                       "outage, slow, hang)",
                       what, (int)k, kv);
#undef KEY
    if (bad)
      return tarn__err(TARN_EINVAL, "lat store %s: bad value in \"%.*s\"", what, (int)kn, kv);
  }
  *c = t;
  return 0;
}

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* z of the 99th percentile of the standard normal */
#define Z99 2.3263478740408408

/* One latency in microseconds; the state is locked. Lognormal: median
 * exp(mu) = median, p99 exp(mu + Z99 sigma) = p99. */
static uint64_t sample(state *st) {
  uint64_t m = st->c.median_us, q = st->c.p99_us;
  if (m == 0)
    return 0;
  if (q <= m)
    return m;
  double sigma = log((double)q / (double)m) / Z99;
  double u1 = ((double)(splitmix(&st->rng) >> 11) + 1.0) / 9007199254740993.0;
  double u2 = (double)(splitmix(&st->rng) >> 11) / 9007199254740992.0;
  double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
  double us = (double)m * exp(sigma * z);
  return us > 3600e6 ? (uint64_t)3600e6 : (uint64_t)us;
}

static void sleep_us(uint64_t us) {
  if (!us)
    return;
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

enum { OP_READ, OP_PUT };

/* Sleeps the call's latency and returns what the outage makes of it: 0 (go
 * on), a negative code (fail without calling the inner store), or 1 (a PUT to
 * apply and then answer TARN_EUNKNOWN). */
static int enter(lstore *ls, int op, const char *what, const char *name) {
  state *st = ls->st;
  pthread_mutex_lock(&st->mu);
  st->calls++;
  int outage = st->c.outage;
  uint64_t d = sample(st);
  if (outage == TARN_LAT_SLOW)
    d += st->c.slow_us;
  if (outage == TARN_LAT_DOWN)
    d = st->c.hang_us;
  st->delay_us += d;
  pthread_mutex_unlock(&st->mu);
  sleep_us(d);
  if (outage == TARN_LAT_DOWN)
    return tarn__err(TARN_EUNAVAIL, "lat store %s: %s \"%s\": unreachable (outage=down)", st->name,
                     what, name);
  if (op == OP_PUT && outage == TARN_LAT_NOPUT)
    return tarn__err(TARN_EIO, "lat store %s: put \"%s\": rejected (outage=noput)", st->name, name);
  if (op == OP_PUT)
    __atomic_add_fetch(&st->puts, 1, __ATOMIC_RELAXED);
  if (op == OP_PUT && outage == TARN_LAT_LOSTPUT)
    return 1;
  return 0;
}

static int lost(lstore *ls, int rc, const char *name) {
  if (rc)
    return rc;
  return tarn__err(TARN_EUNKNOWN, "lat store %s: put \"%s\": reply lost (outage=lostput)",
                   ls->st->name, name);
}

static void state_unref(state *st) {
  pthread_mutex_lock(&reg_mu);
  if (--st->refs == 0) {
    for (state **pp = &reg; *pp; pp = &(*pp)->next)
      if (*pp == st) {
        *pp = st->next;
        break;
      }
    pthread_mutex_destroy(&st->mu);
    free(st->name);
    free(st);
  }
  pthread_mutex_unlock(&reg_mu);
}

static state *find(const char *name) {
  for (state *st = reg; st; st = st->next)
    if (strcmp(st->name, name) == 0)
      return st;
  return NULL;
}

static int lat_open(const char *uri, tarn_objstore **out) {
  const char *p = uri + 4; /* "lat:" */
  const char *semi = strchr(p, ';');
  if (!semi || !semi[1])
    return tarn__err(TARN_EINVAL,
                     "lat store \"%s\": want lat:PARAMS;INNER-URI (e.g. "
                     "lat:median=30ms,p99=150ms;file:///tmp/b0)",
                     uri);
  const char *inner_uri = semi + 1;
  conf c = {.slow_us = 1000000};
  char *name = NULL;
  int rc = parse_params(p, (size_t)(semi - p), &c, &name, inner_uri);
  const char *env = getenv("TARN_OBJSTORE_LAT");
  if (rc == 0 && env && *env)
    rc = parse_params(env, strlen(env), &c, &name, inner_uri);
  if (rc == 0 && !name && !(name = strdup(inner_uri)))
    rc = tarn__err(TARN_ENOMEM, "lat store: out of memory");
  lstore *ls = NULL;
  if (rc == 0 && !(ls = calloc(1, sizeof *ls)))
    rc = tarn__err(TARN_ENOMEM, "lat store: out of memory");
  if (rc == 0)
    rc = tarn_objstore_open(inner_uri, &ls->inner);
  if (rc) {
    free(ls);
    free(name);
    return rc;
  }
  pthread_mutex_lock(&reg_mu);
  state *st = find(name);
  if (st) {
    /* A later open with parameters of its own applies them to the shared state. */
    /* A later open applies only the parameters it names to the shared state
     * (parsed again onto it), so opening a bucket does not undo an outage a
     * test switched on. */
    st->refs++;
    pthread_mutex_lock(&st->mu);
    conf t = st->c;
    t.seeded = 0;
    if (parse_params(p, (size_t)(semi - p), &t, &name, inner_uri) == 0 &&
        (!env || !*env || parse_params(env, strlen(env), &t, &name, inner_uri) == 0)) {
      st->c = t;
      if (t.seeded)
        st->rng = t.seed;
    }
    pthread_mutex_unlock(&st->mu);
    free(name);
  } else if ((st = calloc(1, sizeof *st))) {
    st->name = name;
    st->refs = 1;
    st->c = c;
    st->rng = c.seeded ? c.seed : hash_name(name);
    pthread_mutex_init(&st->mu, NULL);
    st->next = reg;
    reg = st;
  }
  pthread_mutex_unlock(&reg_mu);
  if (!st) {
    free(name);
    tarn_objstore_close(ls->inner);
    free(ls);
    return tarn__err(TARN_ENOMEM, "lat store: out of memory");
  }
  ls->st = st;
  *out = &ls->base;
  return 0;
}

static void lat_close(tarn_objstore *s) {
  lstore *ls = (lstore *)s;
  tarn_objstore_close(ls->inner);
  state_unref(ls->st);
  free(ls);
}

#define INNER(ls) ((ls)->inner->vfs)

static int lat_put(tarn_objstore *s, const char *name, const void *data, size_t len) {
  lstore *ls = (lstore *)s;
  int e = enter(ls, OP_PUT, "put", name);
  if (e < 0)
    return e;
  int rc = INNER(ls)->put(ls->inner, name, data, len);
  return e ? lost(ls, rc, name) : rc;
}

static int lat_put_begin(tarn_objstore *s, const char *name, tarn_objstore_upload **out) {
  lstore *ls = (lstore *)s;
  lupload *u = calloc(1, sizeof *u);
  if (!u)
    return tarn__err(TARN_ENOMEM, "lat store: out of memory");
  int rc = INNER(ls)->put_begin(ls->inner, name, &u->inner);
  if (rc) {
    free(u);
    return rc;
  }
  u->inner->store = ls->inner;
  *out = &u->base;
  return 0;
}

static int lat_put_write(tarn_objstore_upload *up, const void *data, size_t len) {
  lupload *u = (lupload *)up;
  return u->inner->store->vfs->put_write(u->inner, data, len);
}

/* A streaming put is one PUT at its commit, as on mem:. */
static int lat_put_commit(tarn_objstore_upload *up) {
  lupload *u = (lupload *)up;
  lstore *ls = (lstore *)up->store;
  tarn_objstore_upload *in = u->inner;
  free(u);
  int e = enter(ls, OP_PUT, "put", "(streaming)");
  if (e < 0) {
    in->store->vfs->put_abort(in);
    return e;
  }
  int rc = in->store->vfs->put_commit(in);
  return e ? lost(ls, rc, "(streaming)") : rc;
}

static void lat_put_abort(tarn_objstore_upload *up) {
  lupload *u = (lupload *)up;
  u->inner->store->vfs->put_abort(u->inner);
  free(u);
}

static int lat_get(tarn_objstore *s, const char *name, uint64_t off, uint64_t len,
                   tarn__objdst *dst) {
  lstore *ls = (lstore *)s;
  int e = enter(ls, OP_READ, "get", name);
  return e < 0 ? e : INNER(ls)->get(ls->inner, name, off, len, dst);
}

static int lat_head(tarn_objstore *s, const char *name, uint64_t *size) {
  lstore *ls = (lstore *)s;
  int e = enter(ls, OP_READ, "head", name);
  return e < 0 ? e : INNER(ls)->head(ls->inner, name, size);
}

static int lat_del(tarn_objstore *s, const char *name) {
  lstore *ls = (lstore *)s;
  int e = enter(ls, OP_READ, "delete", name);
  return e < 0 ? e : INNER(ls)->del(ls->inner, name);
}

static int lat_list(tarn_objstore *s, const char *prefix, const char *start_after, size_t max,
                    tarn_objstore_listing *out) {
  lstore *ls = (lstore *)s;
  int e = enter(ls, OP_READ, "list", prefix);
  return e < 0 ? e : INNER(ls)->list(ls->inner, prefix, start_after, max, out);
}

const struct tarn__objstore_vfs tarn__objstore_lat = {
    .scheme = "lat",
    .open = lat_open,
    .close = lat_close,
    .put = lat_put,
    .put_begin = lat_put_begin,
    .put_write = lat_put_write,
    .put_commit = lat_put_commit,
    .put_abort = lat_put_abort,
    .get = lat_get,
    .head = lat_head,
    .del = lat_del,
    .list = lat_list,
};

static int apply(state *st, const char *params) {
  pthread_mutex_lock(&st->mu);
  conf c = st->c;
  c.seeded = 0;
  int rc = parse_params(params, strlen(params), &c, NULL, st->name);
  if (rc == 0) {
    st->c = c;
    if (c.seeded)
      st->rng = c.seed;
  }
  pthread_mutex_unlock(&st->mu);
  return rc;
}

int tarn_objstore_lat_control(const char *name, const char *params) {
  if (!name || !params)
    return tarn__err(TARN_EINVAL, "lat store: control needs a name and parameters");
  pthread_mutex_lock(&reg_mu);
  state *st = find(name);
  int rc = st ? apply(st, params)
              : tarn__err(TARN_ENOTFOUND, "lat store \"%s\": no open handle has that name", name);
  pthread_mutex_unlock(&reg_mu);
  return rc;
}

int tarn_objstore_lat_set(tarn_objstore *s, const char *params) {
  if (!s || s->vfs != &tarn__objstore_lat || !params)
    return tarn__err(TARN_EINVAL, "lat store: not a lat: handle");
  return apply(((lstore *)s)->st, params);
}

const char *tarn_objstore_lat_name(const tarn_objstore *s) {
  return s && s->vfs == &tarn__objstore_lat ? ((const lstore *)s)->st->name : NULL;
}

int tarn_objstore_lat_stats(const char *name, uint64_t *calls, uint64_t *delay_us) {
  pthread_mutex_lock(&reg_mu);
  state *st = name ? find(name) : NULL;
  if (st) {
    pthread_mutex_lock(&st->mu);
    if (calls)
      *calls = st->calls;
    if (delay_us)
      *delay_us = st->delay_us;
    pthread_mutex_unlock(&st->mu);
  }
  pthread_mutex_unlock(&reg_mu);
  return st ? 0
            : tarn__err(TARN_ENOTFOUND, "lat store \"%s\": no open handle has that name",
                        name ? name : "(null)");
}

int tarn_objstore_lat_puts(const char *name, uint64_t *puts) {
  pthread_mutex_lock(&reg_mu);
  state *st = name ? find(name) : NULL;
  if (st)
    *puts = __atomic_load_n(&st->puts, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&reg_mu);
  return st ? 0
            : tarn__err(TARN_ENOTFOUND, "lat store \"%s\": no open handle has that name",
                        name ? name : "(null)");
}
