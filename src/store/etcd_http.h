/* The transport of the etcd:// metadata store (store/meta_etcd.c): etcd v3's
 * JSON gateway (POST /v3/kv/..., /v3/lease/..., /v3/watch) over libcurl,
 * with the endpoints of a cluster, TLS, sign-in and the mapping of etcd's
 * answers to error codes (docs/meta-etcd.md).
 *
 * No retry here hides a write's outcome (issue 31 items 1 and 2): a request
 * marked TARN__ETCD_UNSAFE is sent again only when libcurl provably never
 * took its body (store/curl_body.h); after that, a transport failure or an
 * answer that the write may still apply is TARN_EUNKNOWN, for the caller to
 * resolve (the sequenced put does, by its nonce). */
#ifndef TARN_STORE_ETCD_HTTP_H
#define TARN_STORE_ETCD_HTTP_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "util/tls.h"

#define TARN__ETCD_POOL 16
#define TARN__ETCD_REQ_TIMEOUT_MS 5000
#define TARN__ETCD_RETRY_MS 15000 /* how long reads and safe retries keep trying */

/* May a failed request be sent again? Reads and idempotent lease calls are
 * SAFE; a write is UNSAFE once libcurl took a byte of it. */
enum { TARN__ETCD_SAFE = 0, TARN__ETCD_UNSAFE = 1 };

typedef struct tarn__etcd_http {
  char **eps; /* HOST:PORT */
  int neps;
  atomic_int cur; /* the endpoint requests go to; the next one after a failure */
  pthread_mutex_t pool_mu;
  CURL *pool[TARN__ETCD_POOL];
  int npool;
  int https;
  int plaintext_auth; /* plaintext_auth=1: a sign-in over http is allowed */
  tarn__tls tls;
  char *user, *password; /* NULL: no sign-in */
  pthread_mutex_t auth_mu;
  char *token;           /* under auth_mu; NULL until signed in */
  int64_t token_used_ms; /* the last answer that accepted it */
  int64_t token_ttl_ms;
} tarn__etcd_http;

/* Sets x up from the URI's target ("//HOST:PORT[,HOST:PORT...][/...]"),
 * https (the scheme etcd+https) and the backend options opts ("a=b&c=d" or
 * NULL: tls=, cacert=, cert=, key=, user=, password_file=, token_ttl_s=).
 * x must be zeroed; call tarn__etcd_http_free whatever this returns. */
int tarn__etcd_http_open(tarn__etcd_http *x, const char *target, int https, const char *opts);
void tarn__etcd_http_free(tarn__etcd_http *x);

/* POSTs req to path; *out gets the parsed 200 answer (json_decref it). A
 * request that is safe to repeat moves on to the next endpoint until
 * TARN__ETCD_RETRY_MS passes; an unsafe one that may have been applied is
 * TARN_EUNKNOWN. "lease not found" is TARN_ESESSION; a refused certificate,
 * token or password TARN_EAUTH at once. */
int tarn__etcd_post(tarn__etcd_http *x, const char *path, json_t *req, int unsafe, json_t **out);
/* The same with the retry window and each request's timeout given. */
int tarn__etcd_post_within(tarn__etcd_http *x, const char *path, json_t *req, int unsafe,
                           json_t **out, int64_t retry_ms, int64_t req_timeout_ms);

/* Waits up to timeout_ms for a change to the etcd keys [k, e) (Base64)
 * after revision since: 0 on a change (or a compaction: the caller re-reads),
 * TARN_ETIMEDOUT. Frees k and e (either may be NULL: TARN_ENOMEM). */
int tarn__etcd_watch(tarn__etcd_http *x, char *k, char *e, int64_t since, int timeout_ms);

/* An int64 field of an answer: they arrive as decimal strings; absent is 0
 * (the gateway omits zero and false fields). */
int64_t tarn__etcd_jint(json_t *o, const char *name);

/* 64 random bits (a write's nonce; the endpoint a handle starts on). */
uint64_t tarn__etcd_rand64(void);

#endif
