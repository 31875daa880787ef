/* See etcd_session.h. */
#include "store/etcd_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "store/meta_vfs.h"
#include "util/clock.h"
#include "util/error.h"

/* POSTs {name: v} to a /v3/lease/ path. Lease calls are safe to repeat: a
 * grant of unknown outcome leaves at most a lease that expires unused. */
static int lease_post(tarn__etcd_http *h, const char *path, const char *name, int64_t v,
                      json_t **resp) {
  json_t *req = json_pack("{s:o}", name, json_sprintf("%lld", (long long)v));
  int rc = req ? tarn__etcd_post(h, path, req, TARN__ETCD_SAFE, resp)
               : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  json_decref(req);
  return rc == TARN_EUNKNOWN ? TARN_EUNAVAIL : rc;
}

/* A new lease of ttl_s seconds. */
static int lease_grant(tarn__etcd_http *h, int64_t ttl_s, int64_t *id) {
  json_t *resp = NULL;
  int rc = lease_post(h, "/v3/lease/grant", "TTL", ttl_s, &resp);
  if (rc)
    return rc;
  *id = tarn__etcd_jint(resp, "ID");
  json_decref(resp);
  if (!*id)
    return tarn__err(TARN_EIO, "etcd: lease grant returned no ID");
  return 0;
}

/* ---- sessions: a lease and its keepalive thread ------------------------------- */

/* The keepalive: every TTL/3, soon again after a failure. The lease lives at
 * least TTL past the moment etcd received the last keepalive it answered,
 * which is after that request was sent: so freshness counts from the send,
 * and one attempt (with its retries) is capped well below the TTL, so that
 * a slow or hanging endpoint cannot let the lease lapse unnoticed. */
static void *keepalive(void *arg) {
  tarn__etcd_session *s = arg;
  int64_t ttl_ms = s->ttl_s * 1000, period = ttl_ms / 3, last_ok = tarn__mono_ms(), wait = period;
  int64_t cap = ttl_ms / 4 < TARN__ETCD_REQ_TIMEOUT_MS ? ttl_ms / 4 : TARN__ETCD_REQ_TIMEOUT_MS;
  pthread_mutex_lock(&s->ka_mu);
  while (!s->stop) {
    struct timespec dl;
    tarn__cond_deadline(&dl, CLOCK_REALTIME, wait); /* ka_cv keeps the default clock */
    pthread_cond_timedwait(&s->ka_cv, &s->ka_mu, &dl);
    if (s->stop)
      break;
    pthread_mutex_unlock(&s->ka_mu);
    json_t *req = json_pack("{s:o}", "ID", json_sprintf("%lld", (long long)s->lease)), *resp;
    int64_t sent = tarn__mono_ms();
    int rc = req ? tarn__etcd_post_within(s->http, "/v3/lease/keepalive", req, TARN__ETCD_SAFE,
                                          &resp, cap, cap)
                 : TARN_ENOMEM;
    json_decref(req);
    int ended = 0;
    if (rc == 0) {
      /* {"result":{..., "TTL":"n"}}; TTL absent (0): the lease is gone */
      ended = tarn__etcd_jint(json_object_get(resp, "result"), "TTL") <= 0;
      json_decref(resp);
      last_ok = sent;
      wait = period;
    } else if (rc == TARN_ESESSION || tarn__mono_ms() - last_ok >= ttl_ms) {
      ended = 1;
    } else {
      wait = period < 200 ? period : 200;
    }
    pthread_mutex_lock(&s->ka_mu);
    if (ended) {
      pthread_mutex_unlock(&s->ka_mu);
      tarn__meta_session_ended(s->m);
      return NULL;
    }
  }
  pthread_mutex_unlock(&s->ka_mu);
  return NULL;
}

/* Grants the session's lease (TTL = the session timeout). */
static int grant(tarn__etcd_session *s) {
  int64_t id = 0;
  int rc = lease_grant(s->http, s->ttl_s, &id);
  if (rc == 0)
    s->lease = id;
  return rc;
}

static void stop_keepalive(tarn__etcd_session *s) {
  pthread_mutex_lock(&s->ka_mu);
  s->stop = 1;
  pthread_cond_signal(&s->ka_cv);
  pthread_mutex_unlock(&s->ka_mu);
  if (s->ka_started)
    pthread_join(s->ka, NULL);
  s->ka_started = 0;
}

static int start_keepalive(tarn__etcd_session *s) {
  s->stop = 0;
  if (pthread_create(&s->ka, NULL, keepalive, s) != 0)
    return tarn__err(TARN_ENOMEM, "etcd: cannot start the keepalive thread");
  s->ka_started = 1;
  return 0;
}

void tarn__etcd_session_init(tarn__etcd_session *s, tarn__etcd_http *http, tarn_meta *m) {
  s->http = http;
  s->m = m;
  s->ttl_s = (m->session_timeout_ms + 999) / 1000;
  pthread_mutex_init(&s->ka_mu, NULL);
  pthread_cond_init(&s->ka_cv, NULL);
}

int tarn__etcd_session_start(tarn__etcd_session *s) {
  int rc = grant(s);
  return rc ? rc : start_keepalive(s);
}

int tarn__etcd_session_renew(tarn__etcd_session *s) {
  stop_keepalive(s);
  int rc = grant(s);
  int src = start_keepalive(s); /* also after a failed grant: it reports the end again */
  return rc ? rc : src;
}

void tarn__etcd_session_end(tarn__etcd_session *s) {
  stop_keepalive(s);
  json_t *resp;
  if (lease_post(s->http, "/v3/lease/revoke", "ID", s->lease, &resp) == 0)
    json_decref(resp);
}

void tarn__etcd_session_free(tarn__etcd_session *s) {
  pthread_mutex_destroy(&s->ka_mu);
  pthread_cond_destroy(&s->ka_cv);
}

/* ---- the store's clock: the age of one long lease ------------------------------ */

#define CLOCK_PART "tarn-store-clock"
#define CLOCK_KEY "lease"
#define CLOCK_TTL_S 9000000000LL /* etcd's longest lease TTL: 285 years */

static int64_t rec_lease_id(const tarn_meta_rec *r) {
  char v[24];
  snprintf(v, sizeof v, "%.*s", (int)(r->value_len < 23 ? r->value_len : 23),
           (const char *)r->value);
  return strtoll(v, NULL, 10);
}

/* The lease every handle of the cluster reads time from: the one the record
 * CLOCK_PART/CLOCK_KEY names, put there by the first handle to look (a record
 * naming no lease, "0", is one whose lease is gone). */
static int clock_lease(tarn__etcd_session *s, int64_t *id) {
  tarn_meta *m = s->m;
  for (int attempt = 0; attempt < 3; attempt++) {
    tarn_meta_rec r = {0};
    int rc = tarn_meta_get(m, CLOCK_PART, CLOCK_KEY, &r);
    int64_t named = rc == 0 ? rec_lease_id(&r) : 0, version = r.stat.version;
    tarn_meta_rec_free(&r);
    if (named) {
      *id = named;
      return 0;
    }
    if (rc && rc != TARN_ENOTFOUND)
      return rc;
    int absent = rc == TARN_ENOTFOUND;
    int64_t mine = 0;
    if ((rc = lease_grant(s->http, CLOCK_TTL_S, &mine)))
      return rc;
    char v[24];
    int n = snprintf(v, sizeof v, "%lld", (long long)mine);
    rc = absent
             ? tarn_meta_create(m, CLOCK_PART, CLOCK_KEY, v, (size_t)n, TARN_META_PERSISTENT, NULL)
             : tarn_meta_cas(m, CLOCK_PART, CLOCK_KEY, v, (size_t)n, version, NULL);
    if (rc == 0) {
      *id = mine;
      return 0;
    }
    json_t *resp = NULL;
    if (lease_post(s->http, "/v3/lease/revoke", "ID", mine, &resp) == 0)
      json_decref(resp);
    if (rc != TARN_EEXIST && rc != TARN_ECONFLICT && rc != TARN_ENOTFOUND)
      return rc;
    /* another handle was first: use its lease */
  }
  return tarn__err(TARN_EUNAVAIL, "etcd: cannot settle the store clock's lease");
}

/* The leader counts a lease's TTL down on its own clock; no client clock is
 * involved. A leader change restarts the countdown (etcd extends leases on
 * promotion), so the clock then steps back — never forward. */
int tarn__etcd_clock(tarn__etcd_session *s, int64_t *ms) {
  for (int attempt = 0; attempt < 3; attempt++) {
    int64_t id = atomic_load(&s->clock_lease);
    int rc = 0;
    if (!id && (rc = clock_lease(s, &id)))
      return rc;
    atomic_store(&s->clock_lease, id);
    json_t *resp = NULL;
    if ((rc = lease_post(s->http, "/v3/lease/timetolive", "ID", id, &resp)))
      return rc;
    int64_t left = tarn__etcd_jint(resp, "TTL"), granted = tarn__etcd_jint(resp, "grantedTTL");
    json_decref(resp);
    if (left >= 0 && granted > 0) {
      *ms = (granted - left) * 1000;
      return 0;
    }
    /* the lease is gone (revoked by hand, or expired): a new one, a new start */
    tarn_meta_rec r = {0};
    if (tarn_meta_get(s->m, CLOCK_PART, CLOCK_KEY, &r) == 0 && rec_lease_id(&r) == id)
      (void)tarn_meta_cas(s->m, CLOCK_PART, CLOCK_KEY, "0", 1, r.stat.version, NULL);
    tarn_meta_rec_free(&r);
    atomic_store(&s->clock_lease, 0);
  }
  return tarn__err(TARN_EUNAVAIL, "etcd: the store clock's lease keeps vanishing");
}
