/* See etcd_http.h. Security (docs/deployment.md "Secure deployment"):
 * etcd+https:// (or the option tls=1) speaks TLS, verifying the server
 * against cacert= (else the system's store), with cert= and key= for mutual
 * TLS. user= (or TARN_ETCD_USER) signs in with the password of
 * password_file= (or TARN_ETCD_PASSWORD) through /v3/auth/authenticate; the
 * token goes in the Authorization header of every request, is fetched again
 * after token_ttl_s/2 of disuse (default 300: etcd's --auth-token-ttl) and
 * when etcd answers that it is invalid, and the session's lease is untouched
 * by either. A refusal (untrusted certificate, rejected client certificate,
 * wrong password) is TARN_EAUTH at once, never retried; no secret enters a
 * message. */
#include "store/etcd_http.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/curl_body.h"
#include "tarn/buf.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/secret_file.h"

#define AUTH_PATH "/v3/auth/authenticate"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

int64_t tarn__etcd_jint(json_t *o, const char *name) {
  json_t *v = json_object_get(o, name);
  if (json_is_string(v))
    return strtoll(json_string_value(v), NULL, 10);
  if (json_is_integer(v))
    return json_integer_value(v);
  return 0;
}

uint64_t tarn__etcd_rand64(void) {
  uint64_t x = 0;
  if (RAND_bytes((unsigned char *)&x, sizeof x) != 1)
    x = (uint64_t)tarn__mono_ms() * 0x9e3779b97f4a7c15u;
  return x;
}

/* ---- handles and headers ------------------------------------------------------ */

static size_t on_body(char *p, size_t sz, size_t n, void *arg) {
  return tarn_buf_append(arg, p, sz * n) ? 0 : sz * n;
}

static CURL *pool_get(tarn__etcd_http *h) {
  pthread_mutex_lock(&h->pool_mu);
  CURL *c = h->npool ? h->pool[--h->npool] : NULL;
  pthread_mutex_unlock(&h->pool_mu);
  return c ? c : curl_easy_init();
}

static void pool_put(tarn__etcd_http *h, CURL *c) {
  pthread_mutex_lock(&h->pool_mu);
  if (h->npool < TARN__ETCD_POOL) {
    h->pool[h->npool++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&h->pool_mu);
  if (c)
    curl_easy_cleanup(c);
}

/* The URL, TLS options and headers of one request; *hl is freed by the caller. */
static int setup_curl(tarn__etcd_http *h, CURL *c, int ep, const char *path, const char *token,
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

/* ---- sign-in -------------------------------------------------------------------- */

/* Signs in again (under auth_mu): a new h->token. */
/* Overwrites the string value of o's member key (jansson's own copy of a
 * secret) before o is freed: jansson frees without wiping (issue 33). */
static void json_secret_wipe(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  if (json_is_string(v))
    OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
}

static int sign_in(tarn__etcd_http *h) {
  json_t *req = json_pack("{s:s, s:s}", "name", h->user, "password", h->password), *resp = NULL;
  int rc = req ? tarn__etcd_post(h, AUTH_PATH, req, TARN__ETCD_SAFE, &resp)
               : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  json_secret_wipe(req, "password");
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
    h->token_used_ms = tarn__mono_ms();
  }
  json_secret_wipe(resp, "token");
  json_decref(resp);
  return rc;
}

/* The token to send (a malloc'd copy in *tok; NULL without sign-in): the
 * current one, or a new one when there is none or it went unused for half
 * its TTL (etcd's simple tokens expire token_ttl after their last use). */
static int auth_token(tarn__etcd_http *h, char **tok) {
  *tok = NULL;
  if (!h->user)
    return 0;
  pthread_mutex_lock(&h->auth_mu);
  int rc = 0;
  if (!h->token || tarn__mono_ms() - h->token_used_ms >= h->token_ttl_ms / 2)
    rc = sign_in(h);
  if (rc == 0 && !(*tok = strdup(h->token)))
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  pthread_mutex_unlock(&h->auth_mu);
  return rc;
}

/* After an answer: tok accepted (used) or refused as invalid (dropped, so
 * that the next request signs in again), unless another thread replaced it. */
static void auth_after(tarn__etcd_http *h, const char *tok, int accepted) {
  if (!tok)
    return;
  pthread_mutex_lock(&h->auth_mu);
  if (h->token && strcmp(h->token, tok) == 0) {
    if (accepted) {
      h->token_used_ms = tarn__mono_ms();
    } else {
      tarn__secret_free(h->token);
      h->token = NULL;
    }
  }
  pthread_mutex_unlock(&h->auth_mu);
}

/* ---- one request ------------------------------------------------------------------ */

/* A TLS session that the server closes right after the handshake, before
 * any answer: how a TLS 1.3 server's refusal of the client certificate (or
 * of none) reaches libcurl, as a send or receive error without the alert. */
static int cut_after_handshake(tarn__etcd_http *h, CURL *c, CURLcode cc, size_t got) {
  long fresh = 0;
  curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &fresh);
  return h->https && fresh > 0 && got == 0 &&
         (cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING);
}

/* One request to one endpoint, and what came of it. */
typedef struct exchange {
  int ep;
  CURLcode cc;
  long status;
  int sent;    /* libcurl took a byte of an unsafe body */
  int was_cut; /* cut_after_handshake */
  tarn_buf resp;
  char cerr[CURL_ERROR_SIZE];
} exchange;

/* What post_within does after an exchange. */
enum { DONE = 0, NEXT_ENDPOINT = 1, SIGN_IN_AGAIN = 2 };

/* Sends body to endpoint x->ep once: 0 with the outcome in *x, or
 * TARN_ENOMEM before anything was sent. A write's body goes to libcurl
 * through tarn__curl_body (issue 31 item 1a, store/curl_body.h): libcurl
 * cannot send it again by itself, and x->sent tells whether it ever took a
 * byte of it. */
static int exchange_once(tarn__etcd_http *h, const char *path, const char *body, int unsafe,
                         const char *tok, int64_t req_timeout_ms, exchange *x) {
  CURL *c = pool_get(h);
  struct curl_slist *hl = NULL;
  if (!c || setup_curl(h, c, x->ep, path, tok, &hl)) {
    if (c)
      pool_put(h, c);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  x->cerr[0] = 0;
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, x->cerr);
  tarn__curl_body wb = {0};
  if (unsafe) {
    tarn__curl_body_set(c, &wb, body, strlen(body));
  } else {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &x->resp);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req_timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   (long)(req_timeout_ms < 1000 ? req_timeout_ms : 1000));
  x->cc = curl_easy_perform(c);
  x->status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
  x->was_cut = x->cc != CURLE_OK && cut_after_handshake(h, c, x->cc, x->resp.len);
  x->sent = wb.sent;
  /* the handle goes back without our headers, error buffer or body */
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
  tarn__curl_body_unset(c);
  pool_put(h, c);
  for (struct curl_slist *l = hl; l; l = l->next) /* the token's copy */
    OPENSSL_cleanse(l->data, strlen(l->data));
  curl_slist_free_all(hl);
  return 0;
}

/* A request libcurl did not complete. cut: how many fresh TLS sessions in a
 * row were closed unanswered. */
static int transport_failure(tarn__etcd_http *h, const char *path, int unsafe, const exchange *x,
                             int cut, int *retry) {
  const char *ep = h->eps[x->ep];
  if (tarn__tls_refused(x->cc, x->cerr))
    return tarn__err(TARN_EAUTH, "etcd %s: %s (%s)", ep, tarn__tls_what(x->cc, x->cerr),
                     x->cerr[0] ? x->cerr : curl_easy_strerror(x->cc));
  if (cut >= h->neps && cut >= 2) /* every endpoint, and this one twice */
    return tarn__err(TARN_EAUTH,
                     "etcd %s: TLS refused: the server closed every new "
                     "connection after the handshake (it rejects the client "
                     "certificate, or wants one: cert=, key=)",
                     ep);
  /* a refused connect is "never sent" only if libcurl never took the body:
   * a reconnect after a reused connection died is refused too */
  if (!unsafe || (x->cc == CURLE_COULDNT_CONNECT && !x->sent)) {
    *retry = NEXT_ENDPOINT;
    return tarn__err(TARN_EUNAVAIL, "etcd %s%s: %s", ep, path, curl_easy_strerror(x->cc));
  }
  return tarn__err(TARN_EUNKNOWN, "etcd %s%s: %s (the write may have taken effect)", ep, path,
                   curl_easy_strerror(x->cc));
}

/* An answer other than 200 (its JSON in j). */
static int refusal(tarn__etcd_http *h, const char *path, int unsafe, int is_auth, const exchange *x,
                   json_t *j, const char *tok, int *reauth, int *retry) {
  const char *msg = json_string_value(json_object_get(j, "message")), *ep = h->eps[x->ep];
  int64_t code = tarn__etcd_jint(j, "code");
  if (!msg)
    msg = "?";
  if (x->status == 401 || strstr(msg, "invalid auth token")) {
    /* refused before it was applied: safe to send again, once, signed in anew */
    auth_after(h, tok, 0);
    if (!is_auth && h->user && !(*reauth)++) {
      *retry = SIGN_IN_AGAIN;
      return 0;
    }
    return tarn__err(TARN_EAUTH, "etcd %s: %s%s", ep, msg,
                     h->user ? " (after signing in again)"
                             : " (auth is on: give user= and a password file)");
  }
  if (strstr(msg, "authentication failed") || strstr(msg, "user name is empty") ||
      strstr(msg, "permission denied") || strstr(msg, "invalid user"))
    return tarn__err(TARN_EAUTH, "etcd %s: %s%s%s%s", ep, msg, h->user ? " (user \"" : "",
                     h->user ? h->user : "",
                     h->user ? "\")" : " (auth is on: give user= and a password file)");
  if (strstr(msg, "lease not found"))
    return tarn__err(TARN_ESESSION, "etcd: %s", msg);
  if (code == 14 || code == 4 || strstr(msg, "leader") || strstr(msg, "timed out")) {
    if (unsafe)
      return tarn__err(TARN_EUNKNOWN, "etcd %s%s: %s (the write may have taken effect)", ep, path,
                       msg);
    *retry = NEXT_ENDPOINT;
    return tarn__err(TARN_EUNAVAIL, "etcd %s%s: %s", ep, path, msg);
  }
  return tarn__err(TARN_EIO, "etcd %s%s: HTTP %ld: %s", ep, path, x->status, msg);
}

/* An answer that is not JSON: its first line, printable bytes only, names
 * the cause (issue 33: "HTTP 400, response is not JSON" said nothing). etcd
 * 3.4's gateway answers so when auth is on and the client certificate has a
 * CommonName: a refusal (TARN_EAUTH, final), with what to do about it. */
static int not_json(tarn__etcd_http *h, const char *path, const exchange *x) {
  char text[161];
  size_t n = 0;
  for (size_t i = 0; i < x->resp.len && n < sizeof text - 1; i++) {
    uint8_t c = x->resp.data[i];
    if (c == '\n' || c == '\r')
      break;
    text[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
  }
  text[n] = 0;
  const char *ep = h->eps[x->ep];
  if (strstr(text, "CommonName"))
    return tarn__err(TARN_EAUTH,
                     "etcd %s: refused the client certificate: \"%s\" (with auth on, etcd's "
                     "gateway refuses a certificate that has a CommonName: make one without a "
                     "CN and sign in with user=; docs/meta-etcd.md)",
                     ep, text);
  return tarn__err(TARN_EIO, "etcd %s%s: HTTP %ld, response is not JSON: \"%s\"", ep, path,
                   x->status, text);
}

/* A request libcurl completed: *out gets a 200 answer's JSON. */
static int answer(tarn__etcd_http *h, const char *path, int unsafe, int is_auth, const exchange *x,
                  const char *tok, int *reauth, int *retry, json_t **out) {
  json_t *j = json_loadb((const char *)x->resp.data, x->resp.len, 0, NULL);
  if (!j)
    return not_json(h, path, x);
  if (x->status == 200) {
    *out = j;
    return 0;
  }
  int rc = refusal(h, path, unsafe, is_auth, x, j, tok, reauth, retry);
  json_decref(j);
  return rc;
}

/* A request that is safe to repeat (reads; writes not yet sent) moves on to
 * the next endpoint until retry_ms passes; otherwise a transport failure
 * after sending gives TARN_EUNKNOWN. */
int tarn__etcd_post_within(tarn__etcd_http *h, const char *path, json_t *req, int unsafe,
                           json_t **out, int64_t retry_ms, int64_t req_timeout_ms) {
  *out = NULL;
  /* measured, then written into one allocation: json_dumps grows its buffer
   * and frees the smaller copies unwiped, the password in them (issue 33) */
  size_t bl = json_dumpb(req, NULL, 0, JSON_COMPACT);
  char *body = bl ? malloc(bl + 1) : NULL;
  if (!body || json_dumpb(req, body, bl, JSON_COMPACT) != bl) {
    free(body);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  body[bl] = 0;
  int64_t deadline = tarn__mono_ms() + retry_ms;
  int rc = 0, tries = 0, reauth = 0, cut = 0;
  int is_auth = strcmp(path, AUTH_PATH) == 0;
  for (;;) {
    exchange x = {0};
    /* room for the answer at once: a buffer that grows frees smaller copies
     * of the token unwiped */
    if (is_auth && tarn_buf_reserve(&x.resp, 4096)) {
      rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
      break;
    }
    x.ep = atomic_load(&h->cur) % h->neps;
    char *tok = NULL;
    if (!is_auth && (rc = auth_token(h, &tok)))
      break;
    int retry = DONE;
    if ((rc = exchange_once(h, path, body, unsafe, tok, req_timeout_ms, &x)) == 0) {
      cut = x.was_cut ? cut + 1 : 0;
      rc = x.cc != CURLE_OK ? transport_failure(h, path, unsafe, &x, cut, &retry)
                            : answer(h, path, unsafe, is_auth, &x, tok, &reauth, &retry, out);
    }
    if (rc == 0 && retry != SIGN_IN_AGAIN)
      auth_after(h, tok, 1);
    tarn__secret_free(tok);
    if (is_auth && x.resp.data) /* the token */
      OPENSSL_cleanse(x.resp.data, x.resp.len);
    tarn_buf_free(&x.resp);
    if (retry == SIGN_IN_AGAIN)
      continue; /* same endpoint, a new token */
    if (retry == DONE)
      break;
    /* next endpoint; after a full round, pause */
    atomic_compare_exchange_strong(&h->cur, &x.ep, (x.ep + 1) % h->neps);
    if (++tries % h->neps == 0) {
      if (tarn__mono_ms() > deadline)
        break;
      tarn__sleep_ms(100);
    }
  }
  if (is_auth)
    OPENSSL_cleanse(body, strlen(body)); /* it holds the password */
  free(body);
  return rc;
}

int tarn__etcd_post(tarn__etcd_http *h, const char *path, json_t *req, int unsafe, json_t **out) {
  return tarn__etcd_post_within(h, path, req, unsafe, out, TARN__ETCD_RETRY_MS,
                                TARN__ETCD_REQ_TIMEOUT_MS);
}

/* ---- watch ------------------------------------------------------------------------ */

static int watch_hit(const tarn_buf *b) {
  return strstr((const char *)b->data, "\"events\"") ||
         strstr((const char *)b->data, "\"canceled\"");
}

/* The watch stream: stop reading at the first event (or cancellation). */
static size_t on_watch(char *p, size_t sz, size_t n, void *arg) {
  tarn_buf *b = arg;
  if (tarn_buf_append(b, p, sz * n) || tarn_buf_putc(b, 0))
    return 0;
  b->len--;
  if (watch_hit(b))
    return 0;
  return sz * n;
}

/* One watch request to endpoint ep for up to left ms: 1 a change, 0 none
 * (*cc tells why), <0 error. */
static int watch_once(tarn__etcd_http *h, int ep, const char *body, int64_t left, CURLcode *cc) {
  char *tok = NULL;
  int rc = auth_token(h, &tok);
  if (rc)
    return rc;
  CURL *c = curl_easy_init();
  struct curl_slist *hl = NULL;
  tarn_buf resp = TARN_BUF_INIT;
  if (!c || setup_curl(h, c, ep, "/v3/watch", tok, &hl)) {
    if (c)
      curl_easy_cleanup(c);
    tarn__secret_free(tok);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_watch);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
  *cc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  curl_slist_free_all(hl);
  /* a refused token: drop it (the next round signs in again) */
  if (status == 401)
    auth_after(h, tok, 0);
  tarn__secret_free(tok);
  int hit = resp.len && tarn_buf_putc(&resp, 0) == 0 && watch_hit(&resp);
  tarn_buf_free(&resp);
  return hit;
}

int tarn__etcd_watch(tarn__etcd_http *h, char *k, char *e, int64_t since, int timeout_ms) {
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
  int64_t deadline = tarn__mono_ms() + timeout_ms;
  while (rc == 0) {
    int64_t left = deadline - tarn__mono_ms();
    if (left <= 0) {
      rc = tarn__err(TARN_ETIMEDOUT, "etcd: no change in %d ms", timeout_ms);
      break;
    }
    int ep = atomic_load(&h->cur) % h->neps;
    CURLcode cc = CURLE_OK;
    rc = watch_once(h, ep, body, left, &cc);
    if (rc)
      break; /* a change (or a compaction: the caller re-reads), or an error */
    if (cc == CURLE_OPERATION_TIMEDOUT)
      continue;
    /* the stream broke: another endpoint, briefly later */
    atomic_compare_exchange_strong(&h->cur, &ep, (ep + 1) % h->neps);
    tarn__sleep_ms(50);
  }
  if (rc == 1)
    rc = 0;
  free(body);
  json_decref(req);
  free(k);
  free(e);
  return rc;
}

/* ---- opening ---------------------------------------------------------------------- */

static int opt_is(const char *o, size_t n, const char *name) {
  return strlen(name) == n && strncmp(o, name, n) == 0;
}

/* One option name=v (t: what tarn__tls_option made of it). */
static int security_option(tarn__etcd_http *h, const char *q, size_t nl, const char *v, size_t vl,
                           char **pwfile) {
  int t = tarn__tls_option(&h->tls, q, nl, v, vl);
  if (t != 0)
    return t < 0 ? t : 0;
  if (opt_is(q, nl, "tls")) {
    if (vl == 1 && (*v == '0' || *v == '1'))
      h->https = h->https || *v == '1';
    else
      return tarn__err(TARN_EINVAL, "etcd URI: tls must be 0 or 1");
  } else if (opt_is(q, nl, "user")) {
    free(h->user);
    h->user = NULL; /* "user=a&user=": freed, then refused; not freed again */
    if (!vl || !(h->user = strndup(v, vl)))
      return vl ? tarn__err(TARN_ENOMEM, "etcd: out of memory")
                : tarn__err(TARN_EINVAL, "etcd URI: user is empty");
  } else if (opt_is(q, nl, "password_file")) {
    free(*pwfile);
    if (!(*pwfile = strndup(v, vl)))
      return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  } else if (opt_is(q, nl, "plaintext_auth")) {
    if (vl == 1 && (*v == '0' || *v == '1'))
      h->plaintext_auth = *v == '1';
    else
      return tarn__err(TARN_EINVAL, "etcd URI: plaintext_auth must be 0 or 1");
  } else if (opt_is(q, nl, "token_ttl_s")) {
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end != v + vl || x < 1 || x > 86400)
      return tarn__err(TARN_EINVAL, "etcd URI: token_ttl_s must be 1..86400");
    h->token_ttl_ms = x * 1000;
  } else if (opt_is(q, nl, "password")) {
    /* a URI lands in tarn.json, in ps and in logs: never a secret */
    return tarn__err(TARN_EINVAL, "etcd URI: a password is not taken from the URI; name its "
                                  "file with password_file=FILE or set TARN_ETCD_PASSWORD");
  } else {
    return tarn__err(TARN_EINVAL, "metadata store URI: unknown option \"%.*s\"", (int)nl, q);
  }
  return 0;
}

/* The user's password: from pwfile, else TARN_ETCD_PASSWORD. */
static int password(tarn__etcd_http *h, const char *pwfile) {
  const char *env = getenv("TARN_ETCD_PASSWORD");
  if (pwfile)
    return tarn__secret_read(pwfile, "etcd password file", &h->password);
  if (env && *env)
    return (h->password = strdup(env)) ? 0 : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  return tarn__err(TARN_EINVAL,
                   "etcd: user \"%s\" has no password: name its file with "
                   "password_file=FILE or set TARN_ETCD_PASSWORD",
                   h->user);
}

/* The options meta.c passed on (m->backend_opts): TLS and sign-in. */
static int security_options(tarn__etcd_http *h, const char *opts) {
  char *pwfile = NULL;
  int rc = 0;
  h->token_ttl_ms = 300000;
  for (const char *q = opts; q && *q && rc == 0;) {
    size_t len = strcspn(q, "&"), nl = strcspn(q, "=");
    if (nl > len)
      nl = len;
    rc = security_option(h, q, nl, q + nl + (nl < len), len - nl - (nl < len), &pwfile);
    q += len;
    if (*q == '&')
      q++;
  }
  if (rc == 0 && !h->user && getenv("TARN_ETCD_USER") && *getenv("TARN_ETCD_USER") &&
      !(h->user = strdup(getenv("TARN_ETCD_USER"))))
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  /* issue 33: a sign-in over http sends the password, and then a token good
   * for the whole keyspace, in clear text to anyone on the path. Refused
   * before the password is read, unless the operator says the network is
   * trusted. */
  if (rc == 0 && h->user && !h->https && !h->plaintext_auth)
    rc = tarn__err(TARN_EINVAL,
                   "etcd URI: user \"%s\" would sign in over plain http, sending the password "
                   "in clear text: use etcd+https:// (or tls=1), or plaintext_auth=1 on a "
                   "trusted network",
                   h->user);
  if (rc == 0 && h->user)
    rc = password(h, pwfile);
  if (rc == 0 && !h->https && (h->tls.ca_file || h->tls.cert_file || h->tls.key_file))
    rc = tarn__err(TARN_EINVAL, "etcd URI: cacert=, cert= and key= need etcd+https:// or tls=1");
  if (rc == 0 && h->https)
    rc = tarn__tls_check(&h->tls, "etcd");
  free(pwfile);
  return rc;
}

/* HOST:PORT[,HOST:PORT...], ended by "/" or the end. */
static int endpoints(tarn__etcd_http *h, const char *p) {
  while (*p) {
    size_t n = strcspn(p, ",/");
    char **ne = realloc(h->eps, (size_t)(h->neps + 1) * sizeof *ne);
    if (!ne || !(ne[h->neps] = strndup(p, n))) {
      if (ne)
        h->eps = ne;
      return tarn__err(TARN_ENOMEM, "etcd: out of memory");
    }
    h->eps = ne;
    const char *ep = h->eps[h->neps++];
    if (n == 0 || !strchr(ep, ':'))
      return tarn__err(TARN_EINVAL, "etcd URI: endpoint \"%s\" is not HOST:PORT", ep);
    p += n;
    if (*p == '/')
      break;
    if (*p == ',')
      p++;
  }
  return 0;
}

int tarn__etcd_http_open(tarn__etcd_http *h, const char *target, int https, const char *opts) {
  pthread_once(&curl_once, curl_init);
  pthread_mutex_init(&h->auth_mu, NULL);
  pthread_mutex_init(&h->pool_mu, NULL);
  atomic_init(&h->cur, 0);
  h->https = https;
  if (strncmp(target, "//", 2) != 0 || !target[2])
    return tarn__err(TARN_EINVAL, "etcd URI: want etcd://HOST:PORT[,HOST:PORT...]");
  int rc = endpoints(h, target + 2);
  if (rc == 0)
    rc = security_options(h, opts);
  /* Different handles start on different endpoints to spread the load. */
  if (rc == 0)
    atomic_store(&h->cur, (int)(tarn__etcd_rand64() % (unsigned)h->neps));
  return rc;
}

void tarn__etcd_http_free(tarn__etcd_http *h) {
  for (int i = 0; i < h->npool; i++)
    curl_easy_cleanup(h->pool[i]);
  for (int i = 0; i < h->neps; i++)
    free(h->eps[i]);
  free(h->eps);
  tarn__tls_free(&h->tls);
  free(h->user);
  tarn__secret_free(h->password);
  tarn__secret_free(h->token);
  pthread_mutex_destroy(&h->auth_mu);
  pthread_mutex_destroy(&h->pool_mu);
}
