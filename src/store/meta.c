/* The metadata-store front: URI dispatch to a backend, argument checks shared
 * by every backend, and the sequenced put's key derivation. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/meta_abandoned.h"
#include "store/meta_pages.h"
#include "store/meta_vfs.h"
#include "tarn/metrics.h"
#include "tarn/testing.h"
#include "util/clock.h"
#include "util/error.h"

#define DEFAULT_SESSION_TIMEOUT_MS 15000

static const tarn__meta_vfs *const backends[] = {&tarn__meta_vfs_sqlite, &tarn__meta_vfs_mem,
                                                 &tarn__meta_vfs_etcd, &tarn__meta_vfs_etcd_https};

int64_t tarn__meta_now_ms(void) { return tarn__store_now_ms(); }

void tarn_meta_rec_free(tarn_meta_rec *r) {
  if (!r)
    return;
  free(r->key);
  free(r->value);
  memset(r, 0, sizeof *r);
}

void tarn_meta_recs_free(tarn_meta_recs *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n; i++)
    tarn_meta_rec_free(&r->v[i]);
  free(r->v);
  memset(r, 0, sizeof *r);
}

int tarn__meta_rec_set(tarn_meta_rec *r, const char *key, const void *val, size_t len,
                       int64_t version, int64_t created_ms) {
  memset(r, 0, sizeof *r);
  r->key = strdup(key);
  if (!r->key)
    return tarn__err(TARN_ENOMEM, "metadata store: out of memory");
  if (val) {
    r->value = malloc(len ? len : 1);
    if (!r->value) {
      tarn_meta_rec_free(r);
      return tarn__err(TARN_ENOMEM, "metadata store: out of memory");
    }
    if (len)
      memcpy(r->value, val, len);
    r->value_len = len;
  }
  r->stat.version = version;
  r->stat.created_ms = created_ms;
  return 0;
}

tarn_meta_rec *tarn__meta_recs_push(tarn_meta_recs *recs) {
  if ((recs->n & (recs->n - 1)) == 0) { /* grow at powers of two */
    size_t cap = recs->n ? recs->n * 2 : 8;
    tarn_meta_rec *v = realloc(recs->v, cap * sizeof *v);
    if (!v)
      return NULL;
    recs->v = v;
  }
  tarn_meta_rec *r = &recs->v[recs->n++];
  memset(r, 0, sizeof *r);
  return r;
}

/* ---- sequenced put (tables-and-vectors §3.3, §5, §7.11) ------------------ */

char *tarn__meta_seq_bound(const char *prefix) {
  size_t n = strlen(prefix) + sizeof "-18446744073709551615";
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s-%020" PRIu64, prefix, UINT64_MAX);
  return s;
}

static int parse_part(const char *s, size_t n, uint64_t *v) {
  /* Oxia scans each part with %020d: up to 20 decimal digits. */
  if (n == 0 || n > 20)
    return -1;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    unsigned d = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - d) / 10)
      return -1;
    x = x * 10 + d;
  }
  *v = x;
  return 0;
}

int tarn__meta_seq_key(const char *prefix, const char *last, uint64_t d1, uint64_t d2, char **out) {
  uint64_t cur[2] = {0, 0}, delta[2] = {d1, d2};
  size_t pl = strlen(prefix);
  *out = NULL;
  if (last && strncmp(last, prefix, pl) == 0) {
    /* strings.Split(TrimPrefix(last, prefix), "-")[1:] */
    const char *rest = last + pl;
    const char *p = strchr(rest, '-');
    int nparts = 0;
    while (p) {
      const char *q = strchr(p + 1, '-');
      size_t len = q ? (size_t)(q - p - 1) : strlen(p + 1);
      if (nparts == 2)
        return tarn__err(TARN_ECORRUPT,
                         "sequenced put: last key \"%s\" has more than two "
                         "sequence parts",
                         last);
      if (parse_part(p + 1, len, &cur[nparts]))
        return tarn__err(TARN_ECORRUPT,
                         "sequenced put: last key \"%s\": part %d is not a "
                         "decimal number of at most 20 digits",
                         last, nparts + 1);
      nparts++;
      p = q;
    }
  }
  for (int i = 0; i < 2; i++) {
    if (cur[i] > (uint64_t)INT64_MAX || delta[i] > (uint64_t)INT64_MAX - cur[i])
      return tarn__err(TARN_ERANGE,
                       "sequenced put: %" PRIu64 " + %" PRIu64 " passes 2^63-1 in part %d", cur[i],
                       delta[i], i + 1);
  }
  size_t n = pl + 43;
  char *k = malloc(n);
  if (!k)
    return tarn__err(TARN_ENOMEM, "sequenced put: out of memory");
  snprintf(k, n, "%s-%020" PRIu64 "-%020" PRIu64, prefix, cur[0] + d1, cur[1] + d2);
  *out = k;
  return 0;
}

/* ---- guards ---------------------------------------------------------------- */

int tarn__meta_guard_holds(const tarn_meta_guard *g, int present, int64_t ver) {
  if (g->kind == TARN_META_GUARD_LAST)
    return 1; /* not a condition on one key: tarn__meta_seq_last checks it */
  if (g->kind == TARN_META_GUARD_ABSENT)
    return !present;
  return present && (g->version == TARN_META_ANY_VERSION || g->version == ver);
}

int tarn__meta_seq_last(const char *backend, const char *part, const char *prefix, const char *last,
                        const tarn_meta_guard *g, size_t n) {
  size_t pl = strlen(prefix);
  const char *found = last && strncmp(last, prefix, pl) == 0 ? last : "";
  for (size_t i = 0; i < n; i++)
    if (g[i].kind == TARN_META_GUARD_LAST && strcmp(g[i].key, found) != 0)
      return tarn__err(TARN_EGUARD,
                       "%s: sequenced put under \"%s\" in partition %s not done: its "
                       "condition \"the last key is %s\" failed (the last key is %s)",
                       backend, prefix, part, g[i].key[0] ? g[i].key : "none",
                       found[0] ? found : "none");
  return 0;
}

int tarn__meta_guard_failed(const char *backend, const char *part, const char *key,
                            const tarn_meta_guard *g, int present, int64_t ver) {
  if (g->kind == TARN_META_GUARD_ABSENT)
    return tarn__err(TARN_EGUARD,
                     "%s: write of \"%s\" in partition %s not done: its "
                     "condition \"%s is absent\" failed",
                     backend, key, part, g->key);
  if (!present)
    return tarn__err(TARN_EGUARD,
                     "%s: write of \"%s\" in partition %s not done: its "
                     "condition \"%s exists\" failed (absent)",
                     backend, key, part, g->key);
  return tarn__err(TARN_EGUARD,
                   "%s: write of \"%s\" in partition %s not done: its "
                   "condition \"%s has version %lld\" failed (version %lld)",
                   backend, key, part, g->key, (long long)g->version, (long long)ver);
}

/* ---- handles -------------------------------------------------------------- */

void tarn__meta_session_ended(tarn_meta *m) {
  if (atomic_exchange(&m->session_ended, 1))
    return;
  pthread_mutex_lock(&m->cb_mu);
  void (*fn)(void *) = m->on_end;
  void *arg = m->on_end_arg;
  pthread_mutex_unlock(&m->cb_mu);
  if (fn)
    fn(arg);
}

static int parse_options(tarn_meta *m, const char *q) {
  while (q && *q) {
    const char *amp = strchr(q, '&');
    size_t len = amp ? (size_t)(amp - q) : strlen(q);
    static const char sto[] = "session_timeout_ms=";
    if (len > sizeof sto - 1 && strncmp(q, sto, sizeof sto - 1) == 0) {
      char *end;
      errno = 0;
      long long v = strtoll(q + sizeof sto - 1, &end, 10);
      if (errno || end != q + len || v < 100 || v > 3600000)
        return tarn__err(TARN_EINVAL, "metadata store URI: session_timeout_ms must be "
                                      "100..3600000");
      m->session_timeout_ms = v;
    } else if (len > 7 && strncmp(q, "prefix=", 7) == 0) {
      /* A root of the deployment's keys, so that deployments (or test runs)
       * can share one etcd. Plain characters only: it appears in URIs. */
      size_t n = len - 7;
      if (n > 128 || strspn(q + 7, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789._-/") < n)
        return tarn__err(TARN_EINVAL, "metadata store URI: prefix must be 1..128 of "
                                      "A-Z a-z 0-9 . _ - /");
      free(m->root_prefix);
      if (!(m->root_prefix = strndup(q + 7, n)))
        return tarn__err(TARN_ENOMEM, "metadata store: out of memory");
    } else if (strncmp(m->vfs->scheme, "etcd", 4) == 0) {
      /* etcd's own (TLS, sign-in): meta_etcd.c checks them */
      size_t have = m->backend_opts ? strlen(m->backend_opts) : 0;
      char *o = realloc(m->backend_opts, have + len + 2);
      if (!o)
        return tarn__err(TARN_ENOMEM, "metadata store: out of memory");
      if (have)
        o[have++] = '&';
      memcpy(o + have, q, len);
      o[have + len] = 0;
      m->backend_opts = o;
    } else {
      return tarn__err(TARN_EINVAL, "metadata store URI: unknown option \"%.*s\"", (int)len, q);
    }
    q = amp ? amp + 1 : NULL;
  }
  return 0;
}

int tarn_meta_open(const char *uri, tarn_meta **out) {
  *out = NULL;
  if (!uri)
    return tarn__err(TARN_EINVAL, "metadata store URI: NULL");
  const char *colon = strchr(uri, ':');
  if (!colon)
    return tarn__err(TARN_EINVAL, "metadata store URI \"%s\": no scheme", uri);
  const tarn__meta_vfs *vfs = NULL;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    size_t sl = strlen(backends[i]->scheme);
    if ((size_t)(colon - uri) == sl && strncmp(uri, backends[i]->scheme, sl) == 0)
      vfs = backends[i];
  }
  if (!vfs)
    return tarn__err(TARN_EUNSUPPORTED, "metadata store URI \"%s\": unknown scheme", uri);
  tarn_meta *m = calloc(1, sizeof *m);
  char *target = strdup(colon + 1);
  if (!m || !target) {
    free(m), free(target);
    return tarn__err(TARN_ENOMEM, "metadata store: out of memory");
  }
  m->vfs = vfs;
  m->session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS;
  atomic_init(&m->session_ended, 0);
  atomic_init(&m->session_gen, 1);
  pthread_mutex_init(&m->cb_mu, NULL);
  pthread_mutex_init(&m->ab_mu, NULL);
  char *q = strchr(target, '?');
  if (q)
    *q++ = 0;
  int rc = parse_options(m, q);
  if (rc == 0 && m->root_prefix && strncmp(vfs->scheme, "etcd", 4) != 0)
    rc = tarn__err(TARN_EINVAL, "metadata store URI: prefix= is an option of etcd:// only");
  if (rc == 0)
    rc = vfs->open(m, target);
  free(target);
  if (rc) {
    pthread_mutex_destroy(&m->cb_mu);
    pthread_mutex_destroy(&m->ab_mu);
    free(m->root_prefix);
    free(m->backend_opts);
    free(m);
    return rc;
  }
  *out = m;
  return 0;
}

int tarn_meta_close(tarn_meta *m) {
  if (!m)
    return 0;
  m->vfs->close(m);
  tarn__meta_abandoned_free(m);
  pthread_mutex_destroy(&m->cb_mu);
  pthread_mutex_destroy(&m->ab_mu);
  free(m->root_prefix);
  free(m->backend_opts);
  free(m);
  return 0;
}

const char *tarn_meta_backend(const tarn_meta *m) { return m->vfs->scheme; }

int64_t tarn_meta_session_timeout_ms(const tarn_meta *m) { return m->session_timeout_ms; }

int tarn_meta_session_ok(tarn_meta *m) {
  if (atomic_load(&m->session_ended))
    return tarn__err(TARN_ESESSION, "metadata store: the session ended");
  return 0;
}

uint64_t tarn_meta_session_gen(tarn_meta *m) { return atomic_load(&m->session_gen); }

int tarn_meta_session_renew(tarn_meta *m) {
  if (!atomic_load(&m->session_ended))
    return 0;
  int rc = m->vfs->renew(m);
  if (rc)
    return tarn__errctx(rc, "metadata store %s: opening a new session", m->vfs->scheme);
  /* The number first: a holder comparing it never sees the new session
   * alive under the old number. */
  atomic_fetch_add(&m->session_gen, 1);
  atomic_store(&m->session_ended, 0);
  return 0;
}

void tarn_meta_on_session_end(tarn_meta *m, void (*fn)(void *arg), void *arg) {
  pthread_mutex_lock(&m->cb_mu);
  m->on_end = fn;
  m->on_end_arg = arg;
  pthread_mutex_unlock(&m->cb_mu);
}

/* ---- primitives ------------------------------------------------------------ */

static int check_part(const char *part) {
  if (!part || !*part)
    return tarn__err(TARN_EINVAL, "metadata store: empty partition name");
  return 0;
}

static int check_key(const char *what, const char *key) {
  if (!key)
    return tarn__err(TARN_EINVAL, "metadata store: %s is NULL", what);
  return 0;
}

static int check_val(const void *val, size_t len) {
  if (!val && len)
    return tarn__err(TARN_EINVAL, "metadata store: NULL value of %zu bytes", len);
  return 0;
}

static int check_guards_seq(const tarn_meta_guard *g, size_t n, int seq) {
  if (n > TARN_META_GUARDS_MAX)
    return tarn__err(TARN_EINVAL, "metadata store: %zu guards, at most %d", n,
                     TARN_META_GUARDS_MAX);
  if (n && !g)
    return tarn__err(TARN_EINVAL, "metadata store: NULL guards");
  for (size_t i = 0; i < n; i++) {
    if (g[i].kind != TARN_META_GUARD_EXISTS && g[i].kind != TARN_META_GUARD_ABSENT &&
        !(seq && g[i].kind == TARN_META_GUARD_LAST))
      return tarn__err(TARN_EINVAL, "metadata store: guard %zu: bad kind %d", i, g[i].kind);
    if (!g[i].key)
      return tarn__err(TARN_EINVAL, "metadata store: guard %zu: NULL key", i);
    if (g[i].kind == TARN_META_GUARD_EXISTS && g[i].version < 0 &&
        g[i].version != TARN_META_ANY_VERSION)
      return tarn__err(TARN_EINVAL, "metadata store: guard %zu: bad version", i);
  }
  return 0;
}

static int check_guards(const tarn_meta_guard *g, size_t n) { return check_guards_seq(g, n, 0); }

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    int rc_ = (x);                                                                                 \
    if (rc_)                                                                                       \
      return rc_;                                                                                  \
  } while (0)

/* Counts one primitive of m in the process's metrics and passes rc through.
 * Not found, exists and a lost CompareAndSet are answers, not errors. */
static int counted(tarn_meta *m, const char *op, int rc) {
  const char *b = tarn_meta_backend(m);
  tarn_metrics_inc("tarn_meta_requests_total", 1, "op", op, "backend", b, NULL);
  if (rc && rc != TARN_ENOTFOUND && rc != TARN_EEXIST && rc != TARN_ECONFLICT && rc != TARN_EGUARD)
    tarn_metrics_inc("tarn_meta_errors_total", 1, "op", op, "backend", b, "error", tarn_errname(rc),
                     NULL);
  return rc;
}

static int find(tarn_meta *m, const char *part, const char *key, int cmp, tarn_meta_rec *out) {
  memset(out, 0, sizeof *out);
  CHECK(check_part(part));
  CHECK(check_key("key", key));
  static const char *const ops[] = {[TARN__META_EQUAL] = "get",
                                    [TARN__META_FLOOR] = "floor",
                                    [TARN__META_LOWER] = "lower",
                                    [TARN__META_CEILING] = "ceiling",
                                    [TARN__META_HIGHER] = "higher"};
  return counted(m, ops[cmp], m->vfs->find(m, part, key, cmp, out));
}

int tarn_meta_get(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out) {
  return find(m, part, key, TARN__META_EQUAL, out);
}
int tarn_meta_floor(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out) {
  return find(m, part, key, TARN__META_FLOOR, out);
}
int tarn_meta_lower(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out) {
  return find(m, part, key, TARN__META_LOWER, out);
}
int tarn_meta_ceiling(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out) {
  return find(m, part, key, TARN__META_CEILING, out);
}
int tarn_meta_higher(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out) {
  return find(m, part, key, TARN__META_HIGHER, out);
}

static int do_write(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                    int mode, int flags, int64_t version, const tarn_meta_guard *g, size_t ng,
                    tarn_meta_stat *st) {
  tarn_meta_stat dummy;
  CHECK(check_part(part));
  CHECK(check_key("key", key));
  CHECK(check_val(val, len));
  CHECK(check_guards(g, ng));
  if (flags & ~TARN_META_EPHEMERAL)
    return tarn__err(TARN_EINVAL, "metadata store: bad flags");
  if ((flags & TARN_META_EPHEMERAL) && atomic_load(&m->session_ended))
    return tarn__err(TARN_ESESSION,
                     "metadata store: create of ephemeral \"%s\": the session "
                     "ended",
                     key);
  return counted(
      m,
      mode == TARN__META_PUT      ? "put"
      : mode == TARN__META_CREATE ? "create"
                                  : "cas",
      m->vfs->write(m, part, key, val, len, mode, flags, version, g, ng, st ? st : &dummy));
}

int tarn_meta_put(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                  tarn_meta_stat *st) {
  return do_write(m, part, key, val, len, TARN__META_PUT, 0, 0, NULL, 0, st);
}

int tarn_meta_put_if(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                     const tarn_meta_guard *g, size_t n, tarn_meta_stat *st) {
  return do_write(m, part, key, val, len, TARN__META_PUT, 0, 0, g, n, st);
}

int tarn_meta_create(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                     int flags, tarn_meta_stat *st) {
  return do_write(m, part, key, val, len, TARN__META_CREATE, flags, 0, NULL, 0, st);
}

int tarn_meta_create_if(tarn_meta *m, const char *part, const char *key, const void *val,
                        size_t len, int flags, const tarn_meta_guard *g, size_t n,
                        tarn_meta_stat *st) {
  return do_write(m, part, key, val, len, TARN__META_CREATE, flags, 0, g, n, st);
}

int tarn_meta_cas(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                  int64_t version, tarn_meta_stat *st) {
  return do_write(m, part, key, val, len, TARN__META_CAS, 0, version, NULL, 0, st);
}

int tarn_meta_cas_if(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                     int64_t version, const tarn_meta_guard *g, size_t n, tarn_meta_stat *st) {
  return do_write(m, part, key, val, len, TARN__META_CAS, 0, version, g, n, st);
}

int tarn_meta_delete(tarn_meta *m, const char *part, const char *key) {
  return tarn_meta_delete_if(m, part, key, TARN_META_ANY_VERSION, NULL, 0);
}

int tarn_meta_delete_if(tarn_meta *m, const char *part, const char *key, int64_t version,
                        const tarn_meta_guard *g, size_t n) {
  CHECK(check_part(part));
  CHECK(check_key("key", key));
  CHECK(check_guards(g, n));
  if (version < 0 && version != TARN_META_ANY_VERSION)
    return tarn__err(TARN_EINVAL, "metadata store: delete of a negative version");
  return counted(m, "delete", m->vfs->del(m, part, key, version, g, n));
}

int tarn_meta_delete_range(tarn_meta *m, const char *part, const char *a, const char *b,
                           size_t *count) {
  return tarn_meta_delete_range_if(m, part, a, b, NULL, 0, count);
}

int tarn_meta_delete_range_if(tarn_meta *m, const char *part, const char *a, const char *b,
                              const tarn_meta_guard *g, size_t n, size_t *count) {
  size_t dummy;
  CHECK(check_part(part));
  CHECK(check_key("range start", a));
  CHECK(check_key("range end", b));
  CHECK(check_guards(g, n));
  if (!count)
    count = &dummy;
  *count = 0;
  /* An empty range changes nothing, so there is nothing to guard. */
  if (tarn_meta_key_compare(a, b) >= 0)
    return 0;
  return counted(m, "delete_range", m->vfs->del_range(m, part, a, b, g, n, count));
}

int tarn_meta_sequenced_put(tarn_meta *m, const char *part, const char *prefix, uint64_t d1,
                            uint64_t d2, const void *val, size_t len, tarn_meta_rec *out) {
  return tarn_meta_sequenced_put_if(m, part, prefix, d1, d2, val, len, NULL, 0, out);
}

int tarn_meta_sequenced_put_if(tarn_meta *m, const char *part, const char *prefix, uint64_t d1,
                               uint64_t d2, const void *val, size_t len, const tarn_meta_guard *g,
                               size_t n, tarn_meta_rec *out) {
  tarn_meta_rec dummy;
  if (!out)
    out = &dummy;
  memset(out, 0, sizeof *out);
  CHECK(check_part(part));
  CHECK(check_key("prefix", prefix));
  CHECK(check_val(val, len));
  CHECK(check_guards_seq(g, n, 1));
  if (d1 == 0) /* Oxia's ErrSequenceDeltaIsZero */
    return tarn__err(TARN_EINVAL, "sequenced put: the first delta must be > 0");
  int rc =
      counted(m, "sequenced_put", m->vfs->seq_put(m, part, prefix, d1, d2, val, len, g, n, out));
  if (out == &dummy)
    tarn_meta_rec_free(&dummy);
  return rc;
}

static int range(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                 size_t limit, int values, tarn_meta_recs *out) {
  memset(out, 0, sizeof *out);
  CHECK(check_part(part));
  CHECK(check_key("range start", a));
  CHECK(check_key("range end", b));
  if (flags & ~TARN_META_AFTER)
    return tarn__err(TARN_EINVAL, "metadata store: bad flags");
  if (tarn_meta_key_compare(a, b) >= 0)
    return 0;
  int rc =
      counted(m, values ? "scan" : "list", m->vfs->range(m, part, a, b, flags, limit, values, out));
  if (rc)
    tarn_meta_recs_free(out);
  return rc;
}

int tarn_meta_list(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                   size_t limit, tarn_meta_recs *out) {
  return range(m, part, a, b, flags, limit, 0, out);
}

int tarn_meta_scan(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                   size_t limit, tarn_meta_recs *out) {
  return range(m, part, a, b, flags, limit, 1, out);
}

int tarn_meta_change_token(tarn_meta *m, int64_t *token) { return m->vfs->token(m, token); }

int tarn_meta_wait_for_change(tarn_meta *m, const char *part, const char *a, const char *b,
                              int64_t since, int timeout_ms) {
  CHECK(check_part(part));
  CHECK(check_key("range start", a));
  CHECK(check_key("range end", b));
  if (timeout_ms < 0)
    return tarn__err(TARN_EINVAL, "metadata store: negative timeout");
  return m->vfs->wait(m, part, a, b, since, timeout_ms);
}

int tarn_meta_wait_for_any_change(tarn_meta *m, const tarn_meta_range *r, size_t n, int64_t since,
                                  int timeout_ms) {
  if (n == 0 || n > TARN_META_WAIT_RANGES_MAX)
    return tarn__err(TARN_EINVAL, "metadata store: %zu ranges to wait on (1..%d)", n,
                     TARN_META_WAIT_RANGES_MAX);
  for (size_t i = 0; i < n; i++) {
    CHECK(check_part(r[i].part));
    CHECK(check_key("range start", r[i].a));
    CHECK(check_key("range end", r[i].b));
  }
  if (timeout_ms < 0)
    return tarn__err(TARN_EINVAL, "metadata store: negative timeout");
  return m->vfs->wait_any(m, r, n, since, timeout_ms);
}

int tarn_meta_clock(tarn_meta *m, int64_t *ms) {
  if (m->vfs->clock)
    return m->vfs->clock(m, ms);
  *ms = tarn__meta_now_ms(); /* the store lives on this host */
  return 0;
}

int64_t tarn_meta_clock_tick_ms(const tarn_meta *m) { return m->vfs->clock_tick_ms; }

int tarn_meta_inject_fault(tarn_meta *m, int fault, int count) {
  return tarn_meta_inject_fault_after(m, fault, 0, count);
}

int tarn_meta_inject_fault_after(tarn_meta *m, int fault, int skip, int count) {
  if (!m->vfs->fault)
    return tarn__err(TARN_EUNSUPPORTED, "metadata store %s: no fault injection", m->vfs->scheme);
  return m->vfs->fault(m, fault, skip < 0 ? 0 : skip, count);
}

int tarn__meta_scan_each(tarn_meta *m, const char *part, const char *a, const char *b, size_t page,
                         int (*fn)(void *arg, const tarn_meta_rec *r), void *arg) {
  char *from = strdup(a);
  int flags = 0, rc = from ? 0 : tarn__err(TARN_ENOMEM, "metadata scan: out of memory");
  while (!rc) {
    tarn_meta_recs rs = {0};
    if ((rc = tarn_meta_scan(m, part, from, b, flags, page, &rs)))
      break;
    for (size_t i = 0; !rc && i < rs.n; i++)
      rc = fn(arg, &rs.v[i]);
    int more = !rc && rs.more && rs.n;
    if (more) {
      free(from);
      from = rs.v[rs.n - 1].key, rs.v[rs.n - 1].key = NULL; /* the next page starts after it */
    }
    tarn_meta_recs_free(&rs);
    if (!more)
      break;
    flags = TARN_META_AFTER;
  }
  free(from);
  return rc;
}
