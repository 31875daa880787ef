/* etcd://HOST:PORT[,HOST:PORT...][?prefix=ROOT] — the metadata store on etcd v3, through
 * its JSON gateway (POST /v3/kv/range|put|deleterange|txn, /v3/lease/...,
 * /v3/watch) with libcurl and jansson. docs/meta-etcd.md has the mapping of
 * every primitive; in short:
 *
 *   etcd key   = [root] "T" partition 0x00 tarn_meta_key_encode(key),
 *                root = "P" ROOT 0x00 with the option prefix=ROOT, else empty
 *                (bytewise etcd order = the store's key order, per partition)
 *   etcd value = 0x01, created_ms (8 bytes BE), nonce (8 bytes), value
 *   version    = the record's mod_revision (store-wide, grows on every write)
 *   session    = a lease (TTL = session timeout) kept alive by a thread;
 *                ephemeral records carry the lease
 *
 * Writes that must keep the creation timestamp (Put, CompareAndSet) and the
 * sequenced put are read-then-transaction loops guarded by mod_revision
 * compares, retried on conflict. The JSON gateway omits false and zero
 * fields: a failed txn has no "succeeded", a count of 0 is absent.
 *
 * On a connection error a request moves to the next endpoint. A write whose
 * outcome is unknown reports TARN_EUNKNOWN, except the sequenced put, which
 * finds out itself: its value carries a random nonce that it looks for under
 * the keys it tried before trying again, and its range compare makes a late
 * commit of an earlier attempt and a new attempt exclusive.
 *
 * Security (docs/deployment.md "Secure deployment"): etcd+https:// (or the
 * option tls=1) speaks TLS, verifying the server against cacert= (else the
 * system's store), with cert= and key= for mutual TLS. user= (or
 * TARN_ETCD_USER) signs in with the password of password_file= (or
 * TARN_ETCD_PASSWORD) through /v3/auth/authenticate; the token goes in the
 * Authorization header of every request, is fetched again after token_ttl_s/2
 * of disuse (default 300: etcd's --auth-token-ttl) and when etcd answers that
 * it is invalid, and the session's lease is untouched by either. A refusal
 * (untrusted certificate, rejected client certificate, wrong password) is
 * TARN_EAUTH at once, never retried; no secret enters a message. */
#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/curl_body.h"
#include "store/meta_vfs.h"
#include "tarn/buf.h"
#include "util/bytes.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/secret_file.h"
#include "util/tls.h"

#define HDR 17 /* value header: tag, created_ms, nonce */
#define POOL 16
#define REQ_TIMEOUT_MS 5000
#define RETRY_MS 15000 /* how long reads and safe retries keep trying */

typedef struct ehandle {
  char **eps;
  int neps;
  atomic_int cur;
  pthread_mutex_t pool_mu;
  CURL *pool[POOL];
  int npool;
  _Atomic int64_t lease; /* replaced by a renewal while other threads write */
  int64_t ttl_s;
  _Atomic int64_t clock_lease; /* the cluster's clock lease, 0 until looked up */
  pthread_t ka;
  pthread_mutex_t ka_mu;
  pthread_cond_t ka_cv;
  int stop, ka_started;
  /* Every key of the handle starts with this: empty, or "P" prefix 0x00 for
   * the URI option prefix= (keys without a root start with "T", so deployments
   * under different roots, or none, never share a key). */
  char *root;
  size_t rootlen;
  int https;
  tarn__tls tls;
  char *user, *password; /* NULL: no sign-in */
  pthread_mutex_t auth_mu;
  char *token;           /* under auth_mu; NULL until signed in */
  int64_t token_used_ms; /* the last answer that accepted it */
  int64_t token_ttl_ms;
} ehandle;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
  struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&d, NULL);
}

/* ---- base64 and keys -------------------------------------------------------- */

static char *b64(const uint8_t *p, size_t n) {
  char *s = malloc(4 * ((n + 2) / 3) + 1);
  if (s)
    EVP_EncodeBlock((unsigned char *)s, p, (int)n);
  return s;
}

/* Decodes base64 into a malloc'd buffer; NULL on bad input or no memory. */
static uint8_t *unb64(const char *s, size_t *n) {
  size_t len = strlen(s);
  if (len % 4)
    return NULL;
  uint8_t *out = malloc(len / 4 * 3 + 1);
  if (!out)
    return NULL;
  int r = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
  if (r < 0) {
    free(out);
    return NULL;
  }
  size_t pad = len >= 1 && s[len - 1] == '=' ? (len >= 2 && s[len - 2] == '=' ? 2 : 1) : 0;
  *n = (size_t)r - pad;
  return out;
}

/* [root] "T" part 0x00 [encoded key] [extra byte], base64. extra < 0: none. */
/* The etcd key's bytes, before Base64. */
static int ekey_raw(const ehandle *h, const char *part, const char *key, int extra, tarn_buf *b) {
  size_t pl = strlen(part), kl = key ? tarn_meta_key_encode(key, NULL) : 0;
  if (tarn_buf_reserve(b, h->rootlen + 3 + pl + kl))
    return -1;
  if (h->rootlen)
    tarn_buf_append(b, h->root, h->rootlen);
  tarn_buf_putc(b, 'T');
  tarn_buf_append(b, part, pl);
  tarn_buf_putc(b, 0);
  if (key)
    b->len += tarn_meta_key_encode(key, b->data + b->len);
  if (extra >= 0)
    tarn_buf_putc(b, (uint8_t)extra);
  return 0;
}

static char *ekey(const ehandle *h, const char *part, const char *key, int extra) {
  tarn_buf b = TARN_BUF_INIT;
  char *s = ekey_raw(h, part, key, extra, &b) ? NULL : b64(b.data, b.len);
  tarn_buf_free(&b);
  return s;
}

/* The end of a partition's key space: [root] "T" part 0x01. */
static char *epart_end(const ehandle *h, const char *part) {
  size_t pl = strlen(part), rl = h->rootlen;
  uint8_t *p = malloc(rl + pl + 2);
  if (!p)
    return NULL;
  if (rl)
    memcpy(p, h->root, rl);
  p[rl] = 'T';
  memcpy(p + rl + 1, part, pl);
  p[rl + pl + 1] = 1;
  char *s = b64(p, rl + pl + 2);
  free(p);
  return s;
}

static int64_t jint(json_t *o, const char *name) {
  /* int64 fields arrive as decimal strings; absent means 0 */
  json_t *v = json_object_get(o, name);
  if (json_is_string(v))
    return strtoll(json_string_value(v), NULL, 10);
  if (json_is_integer(v))
    return json_integer_value(v);
  return 0;
}

/* ---- HTTP ---------------------------------------------------------------------- */

static size_t on_body(char *p, size_t sz, size_t n, void *arg) {
  return tarn_buf_append(arg, p, sz * n) ? 0 : sz * n;
}

static CURL *pool_get(ehandle *h) {
  pthread_mutex_lock(&h->pool_mu);
  CURL *c = h->npool ? h->pool[--h->npool] : NULL;
  pthread_mutex_unlock(&h->pool_mu);
  return c ? c : curl_easy_init();
}

static void pool_put(ehandle *h, CURL *c) {
  pthread_mutex_lock(&h->pool_mu);
  if (h->npool < POOL) {
    h->pool[h->npool++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&h->pool_mu);
  if (c)
    curl_easy_cleanup(c);
}

enum { SAFE = 0, UNSAFE = 1 }; /* may a failed request be sent again? */

#define AUTH_PATH "/v3/auth/authenticate"

/* The URL, TLS options and headers of one request; *hl is freed by the caller. */
static int setup_curl(ehandle *h, CURL *c, int ep, const char *path, const char *token,
                      struct curl_slist **hl) {
  char url[512];
  snprintf(url, sizeof url, "%s://%s%s", h->https ? "https" : "http", h->eps[ep], path);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (h->https)
    tarn__tls_curl(c, &h->tls);
  *hl = NULL;
  if (token) {
    size_t n = strlen(token) + sizeof "Authorization: ";
    char *line = malloc(n);
    if (!line)
      return tarn__err(TARN_ENOMEM, "etcd: out of memory");
    snprintf(line, n, "Authorization: %s", token);
    *hl = curl_slist_append(NULL, line);
    OPENSSL_cleanse(line, n);
    free(line);
    if (!*hl)
      return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hl);
  return 0;
}

static int post_within(ehandle *h, const char *path, json_t *req, int unsafe, json_t **out,
                       int64_t retry_ms, int64_t req_timeout_ms);

/* The token to send (a malloc'd copy in *tok; NULL without sign-in): the
 * current one, or a new one when there is none or it went unused for half
 * its TTL (etcd's simple tokens expire token_ttl after their last use). */
static int auth_token(ehandle *h, char **tok) {
  *tok = NULL;
  if (!h->user)
    return 0;
  pthread_mutex_lock(&h->auth_mu);
  int rc = 0;
  if (!h->token || mono_ms() - h->token_used_ms >= h->token_ttl_ms / 2) {
    json_t *req = json_pack("{s:s, s:s}", "name", h->user, "password", h->password), *resp = NULL;
    rc = req ? post_within(h, AUTH_PATH, req, SAFE, &resp, RETRY_MS, REQ_TIMEOUT_MS)
             : tarn__err(TARN_ENOMEM, "etcd: out of memory");
    json_decref(req);
    const char *t = rc ? NULL : json_string_value(json_object_get(resp, "token"));
    if (rc == 0 && !t)
      rc = tarn__err(TARN_EAUTH,
                     "etcd: sign-in as user \"%s\" returned no token (is auth "
                     "enabled on the cluster?)",
                     h->user);
    if (rc == 0) {
      tarn__secret_free(h->token);
      if (!(h->token = strdup(t)))
        rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
      h->token_used_ms = mono_ms();
    }
    json_decref(resp);
  }
  if (rc == 0 && !(*tok = strdup(h->token)))
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  pthread_mutex_unlock(&h->auth_mu);
  return rc;
}

/* After an answer: tok accepted (used) or refused as invalid (dropped, so
 * that the next request signs in again), unless another thread replaced it. */
static void auth_after(ehandle *h, const char *tok, int accepted) {
  if (!tok)
    return;
  pthread_mutex_lock(&h->auth_mu);
  if (h->token && strcmp(h->token, tok) == 0) {
    if (accepted) {
      h->token_used_ms = mono_ms();
    } else {
      tarn__secret_free(h->token);
      h->token = NULL;
    }
  }
  pthread_mutex_unlock(&h->auth_mu);
}

/* A TLS session that the server closes right after the handshake, before
 * any answer: how a TLS 1.3 server's refusal of the client certificate (or
 * of none) reaches libcurl, as a send or receive error without the alert. */
static int cut_after_handshake(ehandle *h, CURL *c, CURLcode cc, size_t got) {
  long fresh = 0;
  curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &fresh);
  return h->https && fresh > 0 && got == 0 &&
         (cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING);
}

/* A write's body goes to libcurl through tarn__curl_body (issue 31 item
 * 1a, store/curl_body.h): libcurl cannot send it again by itself, and
 * "sent" tells whether it ever took a byte of it. */

/* POSTs body to path; *out gets the parsed 200 response. A request that is
 * safe to repeat (reads; writes not yet sent) moves on to the next endpoint
 * until RETRY_MS passes; otherwise a transport failure after sending gives
 * TARN_EUNKNOWN. */
static int post_within(ehandle *h, const char *path, json_t *req, int unsafe, json_t **out,
                       int64_t retry_ms, int64_t req_timeout_ms) {
  *out = NULL;
  char *body = json_dumps(req, JSON_COMPACT);
  if (!body)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  int64_t deadline = mono_ms() + retry_ms;
  int rc = 0, tries = 0, reauth = 0, cut = 0;
  int is_auth = strcmp(path, AUTH_PATH) == 0;
  char cerr[CURL_ERROR_SIZE];
  for (;;) {
    int ep = atomic_load(&h->cur) % h->neps;
    char *tok = NULL;
    if (!is_auth && (rc = auth_token(h, &tok)))
      break;
    CURL *c = pool_get(h);
    struct curl_slist *hl = NULL;
    if (!c || setup_curl(h, c, ep, path, tok, &hl)) {
      if (c)
        pool_put(h, c);
      tarn__secret_free(tok);
      rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
      break;
    }
    tarn_buf resp = TARN_BUF_INIT;
    cerr[0] = 0;
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    tarn__curl_body wb = {0};
    if (unsafe) {
      tarn__curl_body_set(c, &wb, body, strlen(body));
    } else {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req_timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(req_timeout_ms < 1000 ? req_timeout_ms : 1000));
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    int was_cut = cc != CURLE_OK && cut_after_handshake(h, c, cc, resp.len);
    /* the handle goes back without our headers, error buffer or body */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
    tarn__curl_body_unset(c);
    pool_put(h, c);
    curl_slist_free_all(hl);
    int retry = 0;
    json_t *j = NULL;
    cut = was_cut ? cut + 1 : 0;
    if (cc != CURLE_OK && tarn__tls_refused(cc, cerr)) {
      rc = tarn__err(TARN_EAUTH, "etcd %s: %s (%s)", h->eps[ep], tarn__tls_what(cc, cerr),
                     cerr[0] ? cerr : curl_easy_strerror(cc));
    } else if (cut >= h->neps && cut >= 2) {
      /* every endpoint, and this one twice, closed a fresh TLS session unanswered */
      rc = tarn__err(TARN_EAUTH,
                     "etcd %s: TLS refused: the server closed every new "
                     "connection after the handshake (it rejects the client "
                     "certificate, or wants one: cert=, key=)",
                     h->eps[ep]);
    } else if (cc != CURLE_OK) {
      /* a refused connect is "never sent" only if libcurl never took the
       * body: a reconnect after a reused connection died is refused too */
      if (!unsafe || (cc == CURLE_COULDNT_CONNECT && !wb.sent))
        retry = 1,
        rc = tarn__err(TARN_EUNAVAIL, "etcd %s%s: %s", h->eps[ep], path, curl_easy_strerror(cc));
      else
        rc = tarn__err(TARN_EUNKNOWN, "etcd %s%s: %s (the write may have taken effect)", h->eps[ep],
                       path, curl_easy_strerror(cc));
    } else {
      j = json_loadb((const char *)resp.data, resp.len, 0, NULL);
      if (!j) {
        rc = tarn__err(TARN_EIO, "etcd %s%s: HTTP %ld, response is not JSON", h->eps[ep], path,
                       status);
      } else if (status == 200) {
        *out = j;
        rc = 0;
        j = NULL;
      } else {
        const char *msg = json_string_value(json_object_get(j, "message"));
        int64_t code = jint(j, "code");
        if (!msg)
          msg = "?";
        if (status == 401 || strstr(msg, "invalid auth token")) {
          /* refused before it was applied: safe to send again, once, signed in anew */
          auth_after(h, tok, 0);
          if (!is_auth && h->user && !reauth++)
            retry = 2, rc = 0;
          else
            rc = tarn__err(TARN_EAUTH, "etcd %s: %s%s", h->eps[ep], msg,
                           h->user ? " (after signing in again)"
                                   : " (auth is on: give user= and a password file)");
        } else if (strstr(msg, "authentication failed") || strstr(msg, "user name is empty") ||
                   strstr(msg, "permission denied") || strstr(msg, "invalid user")) {
          rc = tarn__err(TARN_EAUTH, "etcd %s: %s%s%s%s", h->eps[ep], msg,
                         h->user ? " (user \"" : "", h->user ? h->user : "",
                         h->user ? "\")" : " (auth is on: give user= and a password file)");
        } else if (strstr(msg, "lease not found"))
          rc = tarn__err(TARN_ESESSION, "etcd: %s", msg);
        else if (code == 14 || code == 4 || strstr(msg, "leader") || strstr(msg, "timed out")) {
          if (unsafe)
            rc = tarn__err(TARN_EUNKNOWN, "etcd %s%s: %s (the write may have taken effect)",
                           h->eps[ep], path, msg);
          else
            retry = 1, rc = tarn__err(TARN_EUNAVAIL, "etcd %s%s: %s", h->eps[ep], path, msg);
        } else {
          rc = tarn__err(TARN_EIO, "etcd %s%s: HTTP %ld: %s", h->eps[ep], path, status, msg);
        }
      }
    }
    if (rc == 0 && retry != 2)
      auth_after(h, tok, 1);
    tarn__secret_free(tok);
    json_decref(j);
    tarn_buf_free(&resp);
    if (retry == 2)
      continue; /* same endpoint, a new token */
    if (!retry)
      break;
    /* next endpoint; after a full round, pause */
    atomic_compare_exchange_strong(&h->cur, &ep, (ep + 1) % h->neps);
    if (++tries % h->neps == 0) {
      if (mono_ms() > deadline)
        break;
      sleep_ms(100);
    }
  }
  if (is_auth)
    OPENSSL_cleanse(body, strlen(body)); /* it holds the password */
  free(body);
  return rc;
}

static int post(ehandle *h, const char *path, json_t *req, int unsafe, json_t **out) {
  return post_within(h, path, req, unsafe, out, RETRY_MS, REQ_TIMEOUT_MS);
}

/* ---- records -------------------------------------------------------------------- */

static int kv_to_rec(const ehandle *h, json_t *kv, const char *part, int values, tarn_meta_rec *r,
                     int64_t *lease, uint64_t *nonce) {
  size_t kn, vn;
  const char *ks = json_string_value(json_object_get(kv, "key"));
  const char *vs = json_string_value(json_object_get(kv, "value"));
  uint8_t *k = unb64(ks ? ks : "", &kn);
  uint8_t *v = unb64(vs ? vs : "", &vn);
  size_t pl = h->rootlen + strlen(part) + 2;
  int rc = 0;
  char *key = NULL;
  if (!k || !v || kn < pl) {
    rc = tarn__err(TARN_ECORRUPT, "etcd: a record's key or value is not base64 of a tarn key");
  } else if (vn < HDR || v[0] != 1) {
    rc = tarn__corrupt("etcd value header", vn < HDR ? vn : 0, "not a tarn record");
  } else if (!(key = malloc(kn - pl + 1))) {
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  } else if ((rc = tarn_meta_key_decode(k + pl, kn - pl, key)) == 0) {
    rc = tarn__meta_rec_set(r, key, values ? v + HDR : NULL, vn - HDR, jint(kv, "mod_revision"),
                            (int64_t)tarn__ld_be64(v + 1));
    if (lease)
      *lease = jint(kv, "lease");
    if (nonce)
      *nonce = tarn__ld_be64(v + 9);
  }
  free(key);
  free(k);
  free(v);
  return rc;
}

static char *evalue(const void *val, size_t len, int64_t created, uint64_t nonce) {
  uint8_t *p = malloc(HDR + len);
  if (!p)
    return NULL;
  p[0] = 1;
  tarn__st_be64(p + 1, (uint64_t)created);
  tarn__st_be64(p + 9, nonce);
  if (len)
    memcpy(p + HDR, val, len);
  char *s = b64(p, HDR + len);
  free(p);
  return s;
}

static uint64_t rand64(void) {
  uint64_t x = 0;
  if (RAND_bytes((unsigned char *)&x, sizeof x) != 1)
    x = (uint64_t)mono_ms() * 0x9e3779b97f4a7c15u;
  return x;
}

static json_t *range_req(const char *key, const char *end, int desc) {
  json_t *req = json_pack("{s:s, s:s, s:s}", "key", key, "range_end", end, "limit", "1");
  if (req && desc) {
    json_object_set_new(req, "sort_order", json_string("DESCEND"));
    json_object_set_new(req, "sort_target", json_string("KEY"));
  }
  return req;
}

/* One range request: [key, end) with an order; the first kv (or NULL). */
static int range_one(ehandle *h, const char *key, const char *end, int desc, json_t **resp,
                     json_t **kv) {
  json_t *req = range_req(key, end, desc);
  if (!req)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  int rc = post(h, "/v3/kv/range", req, SAFE, resp);
  json_decref(req);
  *kv = rc ? NULL : json_array_get(json_object_get(*resp, "kvs"), 0);
  return rc;
}

static int e_find(tarn_meta *m, const char *part, const char *key, int cmp, tarn_meta_rec *out) {
  ehandle *h = m->impl;
  char *k = NULL, *e = NULL;
  int desc = 0, rc;
  json_t *resp = NULL, *kv = NULL;
  switch (cmp) {
  case TARN__META_EQUAL: k = ekey(h, part, key, -1), e = ekey(h, part, key, 0); break;
  case TARN__META_CEILING: k = ekey(h, part, key, -1), e = epart_end(h, part); break;
  case TARN__META_HIGHER: k = ekey(h, part, key, 0), e = epart_end(h, part); break;
  case TARN__META_FLOOR: k = ekey(h, part, NULL, -1), e = ekey(h, part, key, 0), desc = 1; break;
  default: k = ekey(h, part, NULL, -1), e = ekey(h, part, key, -1), desc = 1; break;
  }
  if (!k || !e)
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  else if ((rc = range_one(h, k, e, desc, &resp, &kv)) == 0) {
    if (!kv)
      rc = tarn__err(TARN_ENOTFOUND, "etcd: no key for \"%s\" in partition %s", key, part);
    else
      rc = kv_to_rec(h, kv, part, 1, out, NULL, NULL);
  }
  json_decref(resp);
  free(k);
  free(e);
  return rc;
}

/* A txn: compares, then the success ops, else the failure ops (each may be
 * NULL; references stolen). *ok = succeeded, *rev = the revision after it;
 * *resp (may be NULL) gets the whole response, so a retry or a verdict on
 * the guards needs no separate read. */
static int txn(ehandle *h, json_t *compares, json_t *success, json_t *failure, int *ok,
               int64_t *rev, json_t **resp) {
  json_t *req = json_object();
  if (req) {
    json_object_set_new(req, "compare", compares ? compares : json_array());
    json_object_set_new(req, "success", success ? success : json_array());
    if (failure)
      json_object_set_new(req, "failure", failure);
  } else {
    json_decref(compares), json_decref(success), json_decref(failure);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  json_t *r;
  int rc = post(h, "/v3/kv/txn", req, UNSAFE, &r);
  json_decref(req);
  if (rc)
    return rc;
  *ok = json_is_true(json_object_get(r, "succeeded"));
  *rev = jint(json_object_get(r, "header"), "revision");
  if (resp)
    *resp = r;
  else
    json_decref(r);
  return 0;
}

/* A txn of one put on success; on failure the txn runs the failure ops (if
 * not NULL; stolen) and *fresp gets the whole response. */
static int txn_put(ehandle *h, json_t *compares, const char *key, const char *val, int64_t lease,
                   json_t *failure, int *ok, int64_t *rev, json_t **fresp) {
  json_t *put = json_pack("{s:s, s:s}", "key", key, "value", val);
  if (put && lease)
    json_object_set_new(put, "lease", json_sprintf("%lld", (long long)lease));
  json_t *succ = put ? json_pack("[{s:o}]", "request_put", put) : NULL;
  if (!succ) {
    json_decref(compares), json_decref(failure);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  json_t *resp = NULL;
  int rc = txn(h, compares, succ, failure, ok, rev, &resp);
  if (rc)
    return rc;
  if (fresp && !*ok)
    *fresp = resp;
  else
    json_decref(resp);
  return 0;
}

static json_t *cmp_mod(const char *key, const char *range_end, const char *result, int64_t rev) {
  json_t *c = json_pack("{s:s, s:s, s:s, s:o}", "target", "MOD", "key", key, "result", result,
                        "mod_revision", json_sprintf("%lld", (long long)rev));
  if (!c)
    return NULL;
  if (range_end)
    json_object_set_new(c, "range_end", json_string(range_end));
  return c;
}

static json_t *cmp_absent(const char *key) {
  return json_pack("{s:s, s:s, s:s, s:s}", "target", "CREATE", "key", key, "result", "EQUAL",
                   "create_revision", "0");
}

static json_t *cmp_present(const char *key) {
  return json_pack("{s:s, s:s, s:s, s:s}", "target", "CREATE", "key", key, "result", "GREATER",
                   "create_revision", "0");
}

/* Appends the guards' compares to c and, to the failure ops f, a read of each
 * guard's key (so a failed txn tells which guard failed, at its revision). */
static int add_guards(ehandle *h, const char *part, const tarn_meta_guard *g, size_t ng, json_t *c,
                      json_t *f) {
  for (size_t i = 0; i < ng; i++) {
    char *k = ekey(h, part, g[i].key, -1), *e = ekey(h, part, g[i].key, 0);
    /* a TARN_META_GUARD_LAST is no compare of its own: the sequenced put
     * compares the range it read (seq_put_locked); its key is still read so
     * that the failure ops stay one per guard */
    json_t *cmp = !k || !e                                ? NULL
                  : g[i].kind == TARN_META_GUARD_LAST     ? json_null()
                  : g[i].kind == TARN_META_GUARD_ABSENT   ? cmp_absent(k)
                  : g[i].version == TARN_META_ANY_VERSION ? cmp_present(k)
                                                          : cmp_mod(k, NULL, "EQUAL", g[i].version);
    json_t *rd =
        k && e ? json_pack("{s:{s:s, s:s}}", "request_range", "key", k, "range_end", e) : NULL;
    free(k);
    free(e);
    if (!cmp || !rd || (!json_is_null(cmp) && json_array_append_new(c, cmp)) ||
        json_array_append_new(f, rd)) {
      json_decref(cmp), json_decref(rd);
      return tarn__err(TARN_ENOMEM, "etcd: out of memory");
    }
  }
  return 0;
}

/* The kv that failure op i of a failed txn read, or NULL. */
static json_t *failed_read(json_t *resp, size_t i) {
  json_t *rr =
      json_object_get(json_array_get(json_object_get(resp, "responses"), i), "response_range");
  return json_array_get(json_object_get(rr, "kvs"), 0);
}

/* After a failed txn whose failure ops began with add_guards' reads:
 * TARN_EGUARD for the first guard that failed, 0 if all held. */
static int guard_verdict(const char *part, const char *key, const tarn_meta_guard *g, size_t ng,
                         json_t *resp) {
  for (size_t i = 0; i < ng; i++) {
    json_t *kv = failed_read(resp, i);
    int64_t ver = kv ? jint(kv, "mod_revision") : 0;
    if (!tarn__meta_guard_holds(&g[i], kv != NULL, ver))
      return tarn__meta_guard_failed("etcd", part, key, &g[i], kv != NULL, ver);
  }
  return 0;
}

/* The guards' verdict now, by a txn of their compares alone (read-only):
 * for an answer of the primitive's own that comes from an earlier read, so
 * that TARN_EGUARD still takes precedence. */
static int guards_now(ehandle *h, const char *part, const char *key, const tarn_meta_guard *g,
                      size_t ng) {
  if (ng == 0)
    return 0;
  json_t *c = json_array(), *f = json_array(), *resp = NULL;
  if (!c || !f || add_guards(h, part, g, ng, c, f)) {
    json_decref(c), json_decref(f);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  int ok;
  int64_t rev;
  int rc = txn(h, c, NULL, f, &ok, &rev, &resp);
  if (rc == 0 && !ok)
    rc = guard_verdict(part, key, g, ng, resp);
  json_decref(resp);
  return rc;
}

static int e_write(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                   int mode, int flags, int64_t version, const tarn_meta_guard *g, size_t ng,
                   tarn_meta_stat *st) {
  ehandle *h = m->impl;
  char *k = ekey(h, part, key, -1), *e = ekey(h, part, key, 0);
  int rc = 0;
  if (!k || !e) {
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
    goto out;
  }
  for (;;) {
    int exists = 0;
    int64_t created = tarn__meta_now_ms(), lease = 0, cur = 0;
    uint64_t nonce = rand64();
    if (mode != TARN__META_CREATE) {
      json_t *resp, *kv;
      if ((rc = range_one(h, k, e, 0, &resp, &kv)))
        break;
      tarn_meta_rec r;
      if (kv &&
          (rc = kv_to_rec(h, kv, part, 0, &r, &lease,
                          TARN__PLANTED(TARN__BUG_SEQ_PUT_RETRY_BLIND) ? NULL : &nonce)) == 0) {
        exists = 1;
        cur = r.stat.version;
        /* kept when the value is replaced: the creation time, and the nonce,
         * which names the write that created the key. A sequenced put of
         * unknown outcome looks for its nonce under the key it tried; C3
         * (tarn compact, tarn serve) replaces the last RAW record in place
         * (a CompareAndSet), possibly within the seconds that put waited
         * for its answer, and with a fresh nonce the put took its own record
         * for another's and indexed its entries again after it (issue 31
         * item 1, the durability loop's duplicate). */
        created = r.stat.created_ms;
        tarn_meta_rec_free(&r);
      }
      json_decref(resp);
      if (rc)
        break;
      if (mode == TARN__META_CAS && (!exists || cur != version) &&
          (rc = guards_now(h, part, key, g, ng)))
        break;
      if (mode == TARN__META_CAS && !exists) {
        rc = tarn__err(TARN_ENOTFOUND, "etcd: compare-and-set of absent \"%s\"", key);
        break;
      }
      if (mode == TARN__META_CAS && cur != version) {
        rc = tarn__err(TARN_ECONFLICT, "etcd: \"%s\" has version %lld, not %lld", key,
                       (long long)cur, (long long)version);
        break;
      }
    } else if (flags & TARN_META_EPHEMERAL) {
      lease = h->lease;
    }
    char *v = evalue(val, len, created, nonce);
    json_t *c = json_array(), *f = ng ? json_array() : NULL;
    json_t *one = exists ? cmp_mod(k, NULL, "EQUAL", cur) : cmp_absent(k);
    if (!v || !c || !one || json_array_append_new(c, one) || (ng && !f) ||
        (rc = add_guards(h, part, g, ng, c, f))) {
      free(v), json_decref(c), json_decref(f);
      rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
      break;
    }
    int ok;
    int64_t rev;
    json_t *fresp = NULL;
    rc = txn_put(h, c, k, v, lease, f, &ok, &rev, ng ? &fresp : NULL);
    free(v);
    if (rc == TARN_ESESSION)
      tarn__meta_session_ended(m);
    if (rc)
      break;
    if (ok) {
      st->version = rev;
      st->created_ms = created;
      break;
    }
    rc = guard_verdict(part, key, g, ng, fresp);
    json_decref(fresp);
    if (rc)
      break;
    if (mode == TARN__META_CREATE) {
      rc = tarn__err(TARN_EEXIST, "etcd: \"%s\" exists in partition %s", key, part);
      break;
    }
    /* Put or CompareAndSet raced with another write: read again. */
  }
out:
  free(k);
  free(e);
  return rc;
}

static int delete_range(ehandle *h, const char *k, const char *e, size_t *count) {
  json_t *req = json_pack("{s:s, s:s}", "key", k, "range_end", e), *resp;
  if (!req)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  int rc = post(h, "/v3/kv/deleterange", req, UNSAFE, &resp);
  json_decref(req);
  if (rc)
    return rc;
  *count = (size_t)jint(resp, "deleted"); /* absent when 0 */
  json_decref(resp);
  return 0;
}

/* A delete as a txn: the guards, and (key) that key exists with the version
 * (unless TARN_META_ANY_VERSION); then DeleteRange [k, e). */
static int guarded_delete(ehandle *h, const char *part, const char *what, const char *k,
                          const char *e, int key, int64_t version, const tarn_meta_guard *g,
                          size_t ng, size_t *count) {
  json_t *c = json_array(), *f = json_array();
  json_t *del = json_pack("[{s:{s:s, s:s}}]", "request_delete_range", "key", k, "range_end", e);
  int rc = 0, bad = !c || !f || !del || add_guards(h, part, g, ng, c, f) != 0;
  if (!bad && key) {
    json_t *own =
        version == TARN_META_ANY_VERSION ? cmp_present(k) : cmp_mod(k, NULL, "EQUAL", version);
    json_t *rd = json_pack("{s:{s:s, s:s}}", "request_range", "key", k, "range_end", e);
    /* both appended (or freed) whatever fails */
    bad = (json_array_append_new(c, own) | json_array_append_new(f, rd)) != 0;
  }
  if (bad) {
    json_decref(c), json_decref(f), json_decref(del);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  int ok;
  int64_t rev;
  json_t *resp = NULL;
  if ((rc = txn(h, c, del, f, &ok, &rev, &resp)))
    return rc;
  if (ok) {
    json_t *dr = json_object_get(json_array_get(json_object_get(resp, "responses"), 0),
                                 "response_delete_range");
    *count = (size_t)jint(dr, "deleted"); /* absent when 0 */
  } else if ((rc = guard_verdict(part, what, g, ng, resp)) == 0) {
    json_t *kv = key ? failed_read(resp, ng) : NULL;
    if (!key)
      rc = tarn__err(TARN_EIO, "etcd: guarded delete of \"%s\" failed with its guards holding",
                     what);
    else if (!kv)
      rc = tarn__err(TARN_ENOTFOUND, "etcd: delete of absent \"%s\"", what);
    else
      rc = tarn__err(TARN_ECONFLICT, "etcd: delete of \"%s\": version %lld, not %lld", what,
                     (long long)jint(kv, "mod_revision"), (long long)version);
  }
  json_decref(resp);
  return rc;
}

static int e_del(tarn_meta *m, const char *part, const char *key, int64_t version,
                 const tarn_meta_guard *g, size_t ng) {
  ehandle *h = m->impl;
  char *k = ekey(h, part, key, -1), *e = ekey(h, part, key, 0);
  size_t n = 0;
  int rc = !k || !e ? tarn__err(TARN_ENOMEM, "etcd: out of memory")
           : version == TARN_META_ANY_VERSION && ng == 0
               ? delete_range(m->impl, k, e, &n)
               : guarded_delete(h, part, key, k, e, 1, version, g, ng, &n);
  free(k);
  free(e);
  if (rc == 0 && n == 0)
    rc = tarn__err(TARN_ENOTFOUND, "etcd: delete of absent \"%s\"", key);
  return rc;
}

static int e_del_range(tarn_meta *m, const char *part, const char *a, const char *b,
                       const tarn_meta_guard *g, size_t ng, size_t *count) {
  ehandle *h = m->impl;
  char *k = ekey(h, part, a, -1), *e = ekey(h, part, b, -1);
  int rc = !k || !e  ? tarn__err(TARN_ENOMEM, "etcd: out of memory")
           : ng == 0 ? delete_range(m->impl, k, e, count)
                     : guarded_delete(h, part, a, k, e, 0, TARN_META_ANY_VERSION, g, ng, count);
  free(k);
  free(e);
  return rc;
}

/* Looks for our nonce under key: 1 found (rec filled), 0 not, <0 error. */
static int find_nonce(ehandle *h, const char *part, const char *key, uint64_t nonce,
                      tarn_meta_rec *out) {
  char *k = ekey(h, part, key, -1), *e = ekey(h, part, key, 0);
  json_t *resp = NULL, *kv;
  int rc = k && e ? range_one(h, k, e, 0, &resp, &kv) : tarn__err(TARN_ENOMEM, "etcd: oom");
  if (rc == 0 && kv) {
    tarn_meta_rec r;
    uint64_t got;
    rc = kv_to_rec(h, kv, part, 0, &r, NULL, &got);
    if (rc == 0 && got == nonce) {
      *out = r;
      rc = 1;
    } else if (rc == 0) {
      tarn_meta_rec_free(&r);
    }
  }
  json_decref(resp);
  free(k);
  free(e);
  return rc;
}

/* Every txn, even one whose compare fails, is a raft round with an fsync,
 * so racing sequenced puts waste the cluster's time. Clients in one process
 * queue per partition here instead; other processes still race. */
#define SEQ_LOCKS 64
static pthread_mutex_t seq_locks[SEQ_LOCKS];
static pthread_once_t seq_locks_once = PTHREAD_ONCE_INIT;
static void seq_locks_init(void) {
  for (int i = 0; i < SEQ_LOCKS; i++)
    pthread_mutex_init(&seq_locks[i], NULL);
}

static int seq_put_locked(tarn_meta *m, const char *part, const char *prefix, uint64_t d1,
                          uint64_t d2, const void *val, size_t len, const tarn_meta_guard *g,
                          size_t ng, tarn_meta_rec *out);

static int e_seq_put(tarn_meta *m, const char *part, const char *prefix, uint64_t d1, uint64_t d2,
                     const void *val, size_t len, const tarn_meta_guard *g, size_t ng,
                     tarn_meta_rec *out) {
  uint32_t hsh = 2166136261u; /* FNV-1a of the partition */
  for (const char *p = part; *p; p++)
    hsh = (hsh ^ (uint8_t)*p) * 16777619u;
  pthread_once(&seq_locks_once, seq_locks_init);
  pthread_mutex_t *mu = &seq_locks[hsh % SEQ_LOCKS];
  pthread_mutex_lock(mu);
  int rc = seq_put_locked(m, part, prefix, d1, d2, val, len, g, ng, out);
  pthread_mutex_unlock(mu);
  return rc;
}

static int seq_put_locked(tarn_meta *m, const char *part, const char *prefix, uint64_t d1,
                          uint64_t d2, const void *val, size_t len, const tarn_meta_guard *g,
                          size_t ng, tarn_meta_rec *out) {
  ehandle *h = m->impl;
  char *bound = tarn__meta_seq_bound(prefix);
  char *lo = ekey(h, part, NULL, -1), *hi = bound ? ekey(h, part, bound, -1) : NULL;
  char *tried[64];
  char *base = NULL; /* the last key the latest unknown attempt followed ("" none) */
  int ntried = 0, rc = 0, unknown = 0;
  uint64_t nonce = rand64();
  int64_t deadline = mono_ms() + RETRY_MS;
  json_t *state = NULL; /* a range response: the last key below the bound */
  json_t *kv = NULL;
  int64_t rev = 0;
  if (!lo || !hi) {
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
    goto out;
  }
  for (int attempt = 0;; attempt++) {
    if (!state) {
      if ((rc = range_one(h, lo, hi, 1, &state, &kv)))
        goto out;
      rev = jint(json_object_get(state, "header"), "revision");
    }
    /* Did an attempt whose outcome we did not learn commit after all? Asked
     * AFTER the state was read at rev (issue 31 item 1b): an attempt that
     * commits before this look is found here, and one that commits after
     * the state read fails the next attempt's range compare (< rev + 1).
     * Looked for before the read, an attempt that etcd applied between the
     * look and the read became the last key, and the next attempt indexed
     * the same entries again after it. */
    for (int i = 0; unknown && i < ntried; i++) {
      rc = find_nonce(h, part, tried[i], nonce, out);
      if (rc)
        goto out; /* found (1) or error */
    }
    tarn_meta_rec last = {0};
    char *lastk = NULL, *key = NULL;
    if (kv && (rc = kv_to_rec(h, kv, part, 0, &last, NULL, NULL)) == 0)
      lastk = last.key;
    /* Not found, and the log moved on since the attempt of unknown outcome
     * was sent: the new last key may hold that attempt's entries under
     * another value (rewritten or compacted), or another writer's. Trying
     * again would index ours after it, maybe twice (issue 31 item 1): the
     * outcome stays unknown. Trying again is sound only while the last key
     * is still the one that attempt followed (then its range compare fails
     * should it commit late). */
    if (rc == 0 && unknown && strcmp(lastk ? lastk : "", base) != 0 &&
        !TARN__PLANTED(TARN__BUG_SEQ_PUT_RETRY_BLIND)) {
      rc = tarn__err(TARN_EUNKNOWN,
                     "etcd: sequenced put: the log moved on (last key %s, was %s) after an "
                     "attempt whose outcome is unknown",
                     lastk ? lastk : "none", base[0] ? base : "none");
      tarn_meta_rec_free(&last);
      goto out;
    }
    /* what this attempt follows, should its outcome be unknown */
    char *follows = rc == 0 ? strdup(lastk ? lastk : "") : NULL;
    /* the compares below make this check one step with the put: the last
     * key is still lastk when the txn commits */
    if (rc == 0)
      rc = tarn__meta_seq_last("etcd", part, prefix, lastk, g, ng);
    if (rc == 0)
      rc = tarn__meta_seq_key(prefix, lastk, d1, d2, &key);
    json_t *c = json_array(), *f = json_array();
    char *ek = key ? ekey(h, part, key, -1) : NULL, *el = lastk ? ekey(h, part, lastk, -1) : NULL;
    int64_t created = tarn__meta_now_ms();
    char *v = evalue(val, len, created, nonce);
    json_t *rr0 = range_req(lo, hi, 1);
    if (rc == 0 &&
        (!c || !f || !ek || !v || (lastk && !el) || !rr0 || add_guards(h, part, g, ng, c, f) ||
         json_array_append_new(f, json_pack("{s:o}", "request_range", rr0))))
      rc = tarn__err(TARN_ENOMEM, "etcd: oom");
    else if (rc)
      json_decref(rr0);
    /* Nothing in [lo, bound) changed since rev, and the last key is still
     * the one we read: then the new key is exactly Oxia's. */
    if (rc == 0)
      json_array_append_new(c, cmp_mod(lo, hi, "LESS", rev + 1));
    if (rc == 0 && el)
      json_array_append_new(c, cmp_mod(el, NULL, "EQUAL", last.stat.version));
    json_decref(state);
    state = NULL, kv = NULL;
    tarn_meta_rec_free(&last);
    free(el);
    int ok = 0;
    int64_t newrev = 0;
    json_t *fresp = NULL;
    if (rc == 0) {
      rc = txn_put(h, c, ek, v, 0, f, &ok, &newrev, &fresp);
      c = f = NULL;
    }
    json_decref(c);
    json_decref(f);
    free(v);
    free(ek);
    if (rc == TARN_EUNKNOWN && ntried < 64 && mono_ms() < deadline) {
      tried[ntried++] = key;
      unknown = 1;
      free(base);
      base = follows;
      if (!base) {
        rc =
            tarn__err(TARN_EUNKNOWN, "etcd: sequenced put: out of memory after an unknown outcome");
        goto out;
      }
      sleep_ms(50);
      continue;
    }
    free(follows);
    /* The put took effect: running out of memory for its result must not
     * report it as failed. */
    if (rc == 0 && ok && tarn__meta_rec_set(out, key, NULL, 0, newrev, created))
      rc = tarn__err(TARN_EUNKNOWN, "etcd: sequenced put committed; out of memory for its key");
    free(key);
    if (!rc && !ok && (rc = guard_verdict(part, prefix, g, ng, fresp)))
      json_decref(fresp);
    if (rc || ok)
      goto out;
    /* Lost a race: the failure branch read the new last key at newrev. */
    state = fresp;
    rev = newrev;
    json_t *rr =
        json_object_get(json_array_get(json_object_get(fresp, "responses"), ng), "response_range");
    kv = json_array_get(json_object_get(rr, "kvs"), 0);
    if (!rr)
      json_decref(state), state = NULL;
  }
out:
  json_decref(state);
  if (rc == 1)
    rc = 0;
  /* Issue 31 item 2: once an attempt's outcome is unknown, no later error
   * proves that the put did not and will not happen (that attempt may still
   * commit, or did where this could not look): the outcome stays unknown. */
  if (rc < 0 && unknown && rc != TARN_EUNKNOWN)
    rc =
        tarn__errctx(TARN_EUNKNOWN, "etcd: sequenced put: an earlier attempt's outcome is unknown");
  for (int i = 0; i < ntried; i++)
    free(tried[i]);
  free(base);
  free(bound);
  free(lo);
  free(hi);
  return rc;
}

static int e_range(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                   size_t limit, int values, tarn_meta_recs *out) {
  ehandle *h = m->impl;
  char *k = ekey(h, part, a, (flags & TARN_META_AFTER) ? 0 : -1), *e = ekey(h, part, b, -1);
  json_t *req = k && e ? json_pack("{s:s, s:s}", "key", k, "range_end", e) : NULL, *resp = NULL;
  int rc = req ? 0 : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  if (rc == 0 && limit)
    json_object_set_new(req, "limit", json_sprintf("%zu", limit + 1));
  if (rc == 0)
    rc = post(h, "/v3/kv/range", req, SAFE, &resp);
  json_t *kvs = rc ? NULL : json_object_get(resp, "kvs");
  for (size_t i = 0; rc == 0 && i < json_array_size(kvs); i++) {
    if (limit && out->n == limit) {
      out->more = 1;
      break;
    }
    tarn_meta_rec *r = tarn__meta_recs_push(out);
    rc = r ? kv_to_rec(h, json_array_get(kvs, i), part, values, r, NULL, NULL)
           : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  json_decref(resp);
  json_decref(req);
  free(k);
  free(e);
  return rc;
}

static int e_token(tarn_meta *m, int64_t *token) {
  json_t *req = json_pack("{s:s, s:b}", "key", "AA==", "count_only", 1), *resp;
  if (!req)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  int rc = post(m->impl, "/v3/kv/range", req, SAFE, &resp);
  json_decref(req);
  if (rc)
    return rc;
  *token = jint(json_object_get(resp, "header"), "revision");
  json_decref(resp);
  return 0;
}

/* The watch stream: stop reading at the first event (or cancellation). */
static size_t on_watch(char *p, size_t sz, size_t n, void *arg) {
  tarn_buf *b = arg;
  if (tarn_buf_append(b, p, sz * n) || tarn_buf_putc(b, 0))
    return 0;
  b->len--;
  if (strstr((char *)b->data, "\"events\"") || strstr((char *)b->data, "\"canceled\""))
    return 0;
  return sz * n;
}

/* A watch of the etcd keys [k, e) (Base64) from revision since + 1; frees k and e. */
static int e_watch(ehandle *h, char *k, char *e, int64_t since, int timeout_ms) {
  json_t *req =
      k && e ? json_pack("{s:{s:s, s:s}}", "create_request", "key", k, "range_end", e) : NULL;
  int rc = req ? 0 : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  char *body = NULL;
  if (rc == 0) {
    json_object_set_new(json_object_get(req, "create_request"), "start_revision",
                        json_sprintf("%lld", (long long)since + 1));
    body = json_dumps(req, JSON_COMPACT);
    if (!body)
      rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  int64_t deadline = mono_ms() + timeout_ms;
  while (rc == 0) {
    int64_t left = deadline - mono_ms();
    if (left <= 0) {
      rc = tarn__err(TARN_ETIMEDOUT, "etcd: no change in %d ms", timeout_ms);
      break;
    }
    int ep = atomic_load(&h->cur) % h->neps;
    char *tok = NULL;
    if ((rc = auth_token(h, &tok)))
      break;
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    tarn_buf resp = TARN_BUF_INIT;
    if (!c || setup_curl(h, c, ep, "/v3/watch", tok, &hl)) {
      if (c)
        curl_easy_cleanup(c);
      tarn__secret_free(tok);
      rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
      break;
    }
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_watch);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    /* a refused token: drop it (the next round signs in again) */
    if (status == 401)
      auth_after(h, tok, 0);
    tarn__secret_free(tok);
    int hit =
        resp.len && tarn_buf_putc(&resp, 0) == 0 &&
        (strstr((char *)resp.data, "\"events\"") || strstr((char *)resp.data, "\"canceled\""));
    tarn_buf_free(&resp);
    if (hit)
      break; /* a change (or a compaction: the caller re-reads) */
    if (cc == CURLE_OPERATION_TIMEDOUT)
      continue;
    /* the stream broke: another endpoint, briefly later */
    atomic_compare_exchange_strong(&h->cur, &ep, (ep + 1) % h->neps);
    sleep_ms(50);
  }
  free(body);
  json_decref(req);
  free(k);
  free(e);
  return rc;
}

static int e_wait(tarn_meta *m, const char *part, const char *a, const char *b, int64_t since,
                  int timeout_ms) {
  ehandle *h = m->impl;
  return e_watch(h, ekey(h, part, a, -1), ekey(h, part, b, -1), since, timeout_ms);
}

static int buf_cmp(const tarn_buf *x, const tarn_buf *y) {
  size_t n = x->len < y->len ? x->len : y->len;
  int c = n ? memcmp(x->data, y->data, n) : 0;
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* One watch over the span from the lowest range start to the highest range
 * end (etcd's JSON gateway takes one watch per stream): a change between the
 * ranges ends the wait too, which the contract allows (the caller re-reads). */
static int e_wait_any(tarn_meta *m, const tarn_meta_range *r, size_t n, int64_t since,
                      int timeout_ms) {
  ehandle *h = m->impl;
  tarn_buf lo = TARN_BUF_INIT, hi = TARN_BUF_INIT, x = TARN_BUF_INIT;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    tarn_buf_reset(&x);
    if (ekey_raw(h, r[i].part, r[i].a, -1, &x))
      rc = -1;
    else if (i == 0 || buf_cmp(&x, &lo) < 0)
      tarn_buf_reset(&lo), rc = tarn_buf_append(&lo, x.data, x.len);
    tarn_buf_reset(&x);
    if (rc == 0 && ekey_raw(h, r[i].part, r[i].b, -1, &x))
      rc = -1;
    else if (rc == 0 && (i == 0 || buf_cmp(&x, &hi) > 0))
      tarn_buf_reset(&hi), rc = tarn_buf_append(&hi, x.data, x.len);
  }
  char *k = rc ? NULL : b64(lo.data, lo.len), *e = rc ? NULL : b64(hi.data, hi.len);
  tarn_buf_free(&lo);
  tarn_buf_free(&hi);
  tarn_buf_free(&x);
  return e_watch(h, k, e, since, timeout_ms);
}

/* ---- the store's clock: the age of one long lease ------------------------------ */

#define CLOCK_PART "tarn-store-clock"
#define CLOCK_KEY "lease"
#define CLOCK_TTL_S 9000000000LL /* etcd's longest lease TTL: 285 years */

static int lease_post(ehandle *h, const char *path, const char *name, int64_t v, json_t **resp) {
  json_t *req = json_pack("{s:o}", name, json_sprintf("%lld", (long long)v));
  int rc = req ? post(h, path, req, SAFE, resp) : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  json_decref(req);
  return rc == TARN_EUNKNOWN ? TARN_EUNAVAIL : rc;
}

static int64_t rec_lease_id(const tarn_meta_rec *r) {
  char v[24];
  snprintf(v, sizeof v, "%.*s", (int)(r->value_len < 23 ? r->value_len : 23),
           (const char *)r->value);
  return strtoll(v, NULL, 10);
}

/* The lease every handle of the cluster reads time from: the one the record
 * CLOCK_PART/CLOCK_KEY names, put there by the first handle to look (a record
 * naming no lease, "0", is one whose lease is gone). */
static int clock_lease(tarn_meta *m, int64_t *id) {
  ehandle *h = m->impl;
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
    json_t *resp = NULL;
    if ((rc = lease_post(h, "/v3/lease/grant", "TTL", CLOCK_TTL_S, &resp)))
      return rc;
    int64_t mine = jint(resp, "ID");
    json_decref(resp);
    if (!mine)
      return tarn__err(TARN_EIO, "etcd: lease grant returned no ID");
    char v[24];
    int n = snprintf(v, sizeof v, "%lld", (long long)mine);
    rc = absent
             ? tarn_meta_create(m, CLOCK_PART, CLOCK_KEY, v, (size_t)n, TARN_META_PERSISTENT, NULL)
             : tarn_meta_cas(m, CLOCK_PART, CLOCK_KEY, v, (size_t)n, version, NULL);
    if (rc == 0) {
      *id = mine;
      return 0;
    }
    if (lease_post(h, "/v3/lease/revoke", "ID", mine, &resp) == 0)
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
static int e_clock(tarn_meta *m, int64_t *ms) {
  ehandle *h = m->impl;
  for (int attempt = 0; attempt < 3; attempt++) {
    int64_t id = atomic_load(&h->clock_lease);
    int rc = 0;
    if (!id && (rc = clock_lease(m, &id)))
      return rc;
    atomic_store(&h->clock_lease, id);
    json_t *resp = NULL;
    if ((rc = lease_post(h, "/v3/lease/timetolive", "ID", id, &resp)))
      return rc;
    int64_t left = jint(resp, "TTL"), granted = jint(resp, "grantedTTL");
    json_decref(resp);
    if (left >= 0 && granted > 0) {
      *ms = (granted - left) * 1000;
      return 0;
    }
    /* the lease is gone (revoked by hand, or expired): a new one, a new start */
    tarn_meta_rec r = {0};
    if (tarn_meta_get(m, CLOCK_PART, CLOCK_KEY, &r) == 0 && rec_lease_id(&r) == id)
      (void)tarn_meta_cas(m, CLOCK_PART, CLOCK_KEY, "0", 1, r.stat.version, NULL);
    tarn_meta_rec_free(&r);
    atomic_store(&h->clock_lease, 0);
  }
  return tarn__err(TARN_EUNAVAIL, "etcd: the store clock's lease keeps vanishing");
}

/* ---- sessions: a lease and its keepalive thread ------------------------------- */

/* The keepalive: every TTL/3, soon again after a failure. The lease lives at
 * least TTL past the moment etcd received the last keepalive it answered,
 * which is after that request was sent: so freshness counts from the send,
 * and one attempt (with its retries) is capped well below the TTL, so that
 * a slow or hanging endpoint cannot let the lease lapse unnoticed. */
static void *keepalive(void *arg) {
  tarn_meta *m = arg;
  ehandle *h = m->impl;
  int64_t ttl_ms = h->ttl_s * 1000, period = ttl_ms / 3, last_ok = mono_ms(), wait = period;
  int64_t cap = ttl_ms / 4 < REQ_TIMEOUT_MS ? ttl_ms / 4 : REQ_TIMEOUT_MS;
  pthread_mutex_lock(&h->ka_mu);
  while (!h->stop) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += wait / 1000;
    dl.tv_nsec += (long)(wait % 1000) * 1000000;
    if (dl.tv_nsec >= 1000000000)
      dl.tv_sec++, dl.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&h->ka_cv, &h->ka_mu, &dl);
    if (h->stop)
      break;
    pthread_mutex_unlock(&h->ka_mu);
    json_t *req = json_pack("{s:o}", "ID", json_sprintf("%lld", (long long)h->lease)), *resp;
    int64_t sent = mono_ms();
    int rc = req ? post_within(h, "/v3/lease/keepalive", req, SAFE, &resp, cap, cap) : TARN_ENOMEM;
    json_decref(req);
    int ended = 0;
    if (rc == 0) {
      /* {"result":{..., "TTL":"n"}}; TTL absent (0): the lease is gone */
      ended = jint(json_object_get(resp, "result"), "TTL") <= 0;
      json_decref(resp);
      last_ok = sent;
      wait = period;
    } else if (rc == TARN_ESESSION || mono_ms() - last_ok >= ttl_ms) {
      ended = 1;
    } else {
      wait = period < 200 ? period : 200;
    }
    pthread_mutex_lock(&h->ka_mu);
    if (ended) {
      pthread_mutex_unlock(&h->ka_mu);
      tarn__meta_session_ended(m);
      return NULL;
    }
  }
  pthread_mutex_unlock(&h->ka_mu);
  return NULL;
}

/* Grants the session's lease (TTL = the session timeout). */
static int grant(ehandle *h) {
  json_t *resp = NULL;
  json_t *req = json_pack("{s:o}", "TTL", json_sprintf("%lld", (long long)h->ttl_s));
  int rc = req ? post(h, "/v3/lease/grant", req, SAFE, &resp)
               : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  json_decref(req);
  if (rc == TARN_EUNKNOWN)
    rc = TARN_EUNAVAIL;
  if (rc)
    return rc;
  int64_t id = jint(resp, "ID");
  json_decref(resp);
  if (!id)
    return tarn__err(TARN_EIO, "etcd: lease grant returned no ID");
  h->lease = id;
  return 0;
}

static void stop_keepalive(ehandle *h) {
  pthread_mutex_lock(&h->ka_mu);
  h->stop = 1;
  pthread_cond_signal(&h->ka_cv);
  pthread_mutex_unlock(&h->ka_mu);
  if (h->ka_started)
    pthread_join(h->ka, NULL);
  h->ka_started = 0;
}

static int start_keepalive(tarn_meta *m) {
  ehandle *h = m->impl;
  h->stop = 0;
  if (pthread_create(&h->ka, NULL, keepalive, m) != 0)
    return tarn__err(TARN_ENOMEM, "etcd: cannot start the keepalive thread");
  h->ka_started = 1;
  return 0;
}

/* A new lease and keepalive; the old lease's records are gone or going. */
static int e_renew(tarn_meta *m) {
  ehandle *h = m->impl;
  stop_keepalive(h);
  int rc = grant(h);
  int src = start_keepalive(m); /* also after a failed grant: it reports the end again */
  return rc ? rc : src;
}

static void free_handle(ehandle *h) {
  for (int i = 0; i < h->npool; i++)
    curl_easy_cleanup(h->pool[i]);
  for (int i = 0; i < h->neps; i++)
    free(h->eps[i]);
  free(h->eps);
  free(h->root);
  tarn__tls_free(&h->tls);
  free(h->user);
  tarn__secret_free(h->password);
  tarn__secret_free(h->token);
  pthread_mutex_destroy(&h->auth_mu);
  pthread_mutex_destroy(&h->pool_mu);
  pthread_mutex_destroy(&h->ka_mu);
  pthread_cond_destroy(&h->ka_cv);
  free(h);
}

static int opt_is(const char *o, size_t n, const char *name) {
  return strlen(name) == n && strncmp(o, name, n) == 0;
}

/* The options meta.c passed on (m->backend_opts): TLS and sign-in. */
static int security_options(tarn_meta *m, ehandle *h) {
  char *pwfile = NULL;
  int rc = 0;
  h->token_ttl_ms = 300000;
  for (const char *q = m->backend_opts; q && *q && rc == 0;) {
    size_t len = strcspn(q, "&"), nl = strcspn(q, "=");
    if (nl > len)
      nl = len;
    const char *v = q + nl + (nl < len);
    size_t vl = len - nl - (nl < len);
    int t = tarn__tls_option(&h->tls, q, nl, v, vl);
    if (t < 0) {
      rc = t;
    } else if (t == 0 && opt_is(q, nl, "tls")) {
      if (vl == 1 && (*v == '0' || *v == '1'))
        h->https = h->https || *v == '1';
      else
        rc = tarn__err(TARN_EINVAL, "etcd URI: tls must be 0 or 1");
    } else if (t == 0 && opt_is(q, nl, "user")) {
      free(h->user);
      if (!vl || !(h->user = strndup(v, vl)))
        rc = vl ? tarn__err(TARN_ENOMEM, "etcd: out of memory")
                : tarn__err(TARN_EINVAL, "etcd URI: user is empty");
    } else if (t == 0 && opt_is(q, nl, "password_file")) {
      free(pwfile);
      if (!(pwfile = strndup(v, vl)))
        rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
    } else if (t == 0 && opt_is(q, nl, "token_ttl_s")) {
      char *end;
      long long x = strtoll(v, &end, 10);
      if (end != v + vl || x < 1 || x > 86400)
        rc = tarn__err(TARN_EINVAL, "etcd URI: token_ttl_s must be 1..86400");
      else
        h->token_ttl_ms = x * 1000;
    } else if (t == 0 && opt_is(q, nl, "password")) {
      /* a URI lands in tarn.json, in ps and in logs: never a secret */
      rc = tarn__err(TARN_EINVAL, "etcd URI: a password is not taken from the URI; name its "
                                  "file with password_file=FILE or set TARN_ETCD_PASSWORD");
    } else if (t == 0) {
      rc = tarn__err(TARN_EINVAL, "metadata store URI: unknown option \"%.*s\"", (int)nl, q);
    }
    q += len;
    if (*q == '&')
      q++;
  }
  if (rc == 0 && !h->user && getenv("TARN_ETCD_USER") && *getenv("TARN_ETCD_USER") &&
      !(h->user = strdup(getenv("TARN_ETCD_USER"))))
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  if (rc == 0 && h->user) {
    const char *env = getenv("TARN_ETCD_PASSWORD");
    if (pwfile)
      rc = tarn__secret_read(pwfile, "etcd password file", &h->password);
    else if (env && *env)
      rc = (h->password = strdup(env)) ? 0 : tarn__err(TARN_ENOMEM, "etcd: out of memory");
    else
      rc = tarn__err(TARN_EINVAL,
                     "etcd: user \"%s\" has no password: name its file with "
                     "password_file=FILE or set TARN_ETCD_PASSWORD",
                     h->user);
  }
  if (rc == 0 && !h->https && (h->tls.ca_file || h->tls.cert_file || h->tls.key_file))
    rc = tarn__err(TARN_EINVAL, "etcd URI: cacert=, cert= and key= need etcd+https:// or tls=1");
  if (rc == 0 && h->https)
    rc = tarn__tls_check(&h->tls, "etcd");
  free(pwfile);
  return rc;
}

static int e_open(tarn_meta *m, const char *target) {
  pthread_once(&curl_once, curl_init);
  if (strncmp(target, "//", 2) != 0 || !target[2])
    return tarn__err(TARN_EINVAL, "etcd URI: want etcd://HOST:PORT[,HOST:PORT...]");
  ehandle *h = calloc(1, sizeof *h);
  if (!h)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  pthread_mutex_init(&h->auth_mu, NULL);
  pthread_mutex_init(&h->pool_mu, NULL);
  pthread_mutex_init(&h->ka_mu, NULL);
  pthread_cond_init(&h->ka_cv, NULL);
  atomic_init(&h->cur, 0);
  int rc = 0;
  for (const char *p = target + 2; *p && rc == 0;) {
    size_t n = strcspn(p, ",/");
    char **ne = realloc(h->eps, (size_t)(h->neps + 1) * sizeof *ne);
    if (!ne || !(ne[h->neps] = strndup(p, n))) {
      if (ne)
        h->eps = ne;
      rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
      break;
    }
    h->eps = ne;
    if (n == 0 || !strchr(h->eps[h->neps], ':'))
      rc = tarn__err(TARN_EINVAL, "etcd URI: endpoint \"%s\" is not HOST:PORT", h->eps[h->neps]);
    h->neps++;
    p += n;
    if (*p == '/')
      break;
    if (*p == ',')
      p++;
  }
  h->https = strcmp(m->vfs->scheme, "etcd+https") == 0;
  if (rc == 0)
    rc = security_options(m, h);
  if (rc == 0 && m->root_prefix) {
    size_t pl = strlen(m->root_prefix);
    if (!(h->root = malloc(pl + 2))) {
      rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
    } else {
      h->root[0] = 'P';
      memcpy(h->root + 1, m->root_prefix, pl);
      h->root[pl + 1] = 0;
      h->rootlen = pl + 2;
    }
  }
  /* Different handles start on different endpoints to spread the load. */
  if (rc == 0)
    atomic_store(&h->cur, (int)(rand64() % (unsigned)h->neps));
  h->ttl_s = (m->session_timeout_ms + 999) / 1000;
  if (rc == 0)
    rc = grant(h);
  if (rc == 0) {
    m->impl = h;
    rc = start_keepalive(m);
  }
  if (rc) {
    m->impl = NULL;
    free_handle(h);
  }
  return rc;
}

static void e_close(tarn_meta *m) {
  ehandle *h = m->impl;
  stop_keepalive(h);
  /* Revoking the lease deletes the session's ephemeral records. */
  json_t *req = json_pack("{s:o}", "ID", json_sprintf("%lld", (long long)h->lease)), *resp;
  if (req && post(h, "/v3/lease/revoke", req, SAFE, &resp) == 0)
    json_decref(resp);
  json_decref(req);
  free_handle(h);
}

/* etcd: and etcd+https: (the same backend over TLS) differ only in the scheme. */
#define ETCD_VFS(name)                                                                             \
  {                                                                                                \
    .scheme = name, .open = e_open, .close = e_close, .find = e_find, .write = e_write,            \
    .del = e_del, .del_range = e_del_range, .seq_put = e_seq_put, .range = e_range,                \
    .token = e_token, .wait = e_wait, .renew = e_renew, .clock = e_clock, .wait_any = e_wait_any,  \
    .clock_tick_ms = 1000,                                                                         \
  }
const tarn__meta_vfs tarn__meta_vfs_etcd = ETCD_VFS("etcd");
const tarn__meta_vfs tarn__meta_vfs_etcd_https = ETCD_VFS("etcd+https");
