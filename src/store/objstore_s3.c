/* The s3:// object store: S3 or an S3-compatible server over libcurl, signed
 * with our own SigV4 (sigv4.c).
 *
 *   s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path_style=0|1&timeout_ms=N
 *                        &multipart_threshold=BYTES&part_size=BYTES&ca_bundle=FILE]
 *
 * Endpoint, region and credentials otherwise come from AWS_ENDPOINT_URL,
 * AWS_REGION (default us-east-1), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
 * AWS_SESSION_TOKEN; the CA bundle that verifies an https endpoint from
 * ca_bundle=, else AWS_CA_BUNDLE (as the AWS CLI and SDKs read it), else the
 * system's store. A refusal at the TLS layer (an untrusted certificate) is
 * final: TARN_EAUTH at once, not retried until the deadline. Object name N has the key PREFIX/N
 * (spec "WAL object names": with a key prefix r, the key is r/ followed by the name).
 *
 * Create-only: every PUT (and CompleteMultipartUpload) carries If-None-Match: *,
 * so 412 means the name exists. Transient failures (transport errors, 5xx,
 * 429/503 SlowDown, 409 ConditionalRequestConflict) are retried with jittered
 * exponential backoff until the operation's deadline. A create-only PUT whose
 * outcome is unknown (the request may have reached the server before the
 * failure) is resolved by reading the object back before anything is
 * reported: its bytes (or ETag, the MD5 of a single PUT) equal to ours means
 * the put took effect. No retry happens below that logic: a body goes to
 * libcurl through store/curl_body.h, so libcurl cannot send a request again
 * by itself (issue 31 item 1). Credentials never enter a message. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "store/content_range.h"
#include "store/curl_body.h"
#include "store/objstore_s3.h"
#include "store/objstore_vfs.h"
#include "store/s3_xml.h"
#include "store/sigv4.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/sb.h"
#include "util/tls.h"

#define POOL_MAX 16
#define TEXT_MAX (16u << 20) /* bound on an error or listing body we keep */
#define LIST_PAGE 1000

typedef struct s3store {
  tarn_objstore base;
  char *bucket, *prefix; /* prefix: "" or "p/q/" (with the trailing slash) */
  char *scheme_host;     /* "http://127.0.0.1:47480": where requests go */
  char *host;            /* the Host header (bucket. prepended when virtual-hosted) */
  char *region, *access_key, *secret_key, *token;
  int path_style;
  tarn__tls tls;
  size_t multipart_threshold, part_size;
  long timeout_ms;
  pid_t pid;
  CURLSH *share;
  pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
  pthread_mutex_t pool_mu;
  CURL *pool[POOL_MAX];
  int npool;
  atomic_ullong throttled, retried; /* answers 503/429, and all retries (tarn probe) */
} s3store;

/* One HTTP exchange and what came back. */
typedef struct req {
  const char *method;
  const char *key; /* the full key; NULL for the bucket itself */
  tarn__sigv4_kv q[6];
  size_t nq;
  const uint8_t *body;
  size_t blen;
  uint64_t range_off, range_len; /* range_len 0: no Range header */
  int if_none_match;
  const char *if_match;     /* only the probe's if_match check sends it */
  const char *content_type; /* NULL: application/octet-stream on PUT, none otherwise */
  long attempt_ms;          /* this attempt's share of the deadline */
  /* the GET body goes to dst (2xx only), everything else to text */
  tarn__objdst *dst;
  uint64_t skip, keep; /* when a server answers a ranged GET with 200: drop, then cap */
  /* results */
  CURL *curl;
  long status;
  CURLcode cc;
  char cerr[CURL_ERROR_SIZE];
  tarn_buf text;
  char etag[128];
  char crange[96];   /* the Content-Range header's value */
  size_t crange_len; /* its length, also when it did not fit crange */
  int crange_seen;
  uint64_t body_bytes; /* the 2xx body's bytes as received, before skip and keep */
  curl_off_t clen;
  int ambiguous;      /* a mutation may have reached the server without our seeing the reply */
  tarn__curl_body cb; /* the body as libcurl takes it (cb.sent: it may have arrived) */
} req;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* --- the connection pool ------------------------------------------------- */

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u) {
  (void)h, (void)a;
  pthread_mutex_lock(&((s3store *)u)->share_mu[d]);
}
static void share_unlock(CURL *h, curl_lock_data d, void *u) {
  (void)h;
  pthread_mutex_unlock(&((s3store *)u)->share_mu[d]);
}

static int make_share(s3store *s) {
  s->share = curl_share_init();
  if (!s->share)
    return tarn__err(TARN_ENOMEM, "s3: curl_share_init failed");
  curl_share_setopt(s->share, CURLSHOPT_LOCKFUNC, share_lock);
  curl_share_setopt(s->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
  curl_share_setopt(s->share, CURLSHOPT_USERDATA, s);
  curl_share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  curl_share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  return 0;
}

static CURL *pool_get(s3store *s) {
  pthread_mutex_lock(&s->pool_mu);
  if (s->pid != getpid()) {
    /* A forked child must not talk over its parent's sockets: forget the
     * inherited handles and connection cache (without closing them). */
    s->npool = 0;
    s->pid = getpid();
    if (make_share(s) != 0)
      s->share = NULL;
  }
  CURL *c = s->npool ? s->pool[--s->npool] : curl_easy_init();
  pthread_mutex_unlock(&s->pool_mu);
  if (c)
    curl_easy_reset(c);
  return c;
}

static void pool_put(s3store *s, CURL *c) {
  pthread_mutex_lock(&s->pool_mu);
  if (s->npool < POOL_MAX && s->pid == getpid()) {
    s->pool[s->npool++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&s->pool_mu);
  if (c)
    curl_easy_cleanup(c);
}

/* --- one request --------------------------------------------------------- */

#define PRESIZE_MAX ((uint64_t)256 << 20)

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  req *r = ud;
  size_t len = sz * n;
  long st = 0;
  curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &st);
  if (r->dst && (st == 200 || st == 206)) {
    if (r->body_bytes == 0 && r->dst->buf) {
      /* room for the whole body at once when the server says its length:
       * growing by doubling copies it again and again. Bounded by what the
       * caller asked for and a cap, whatever the header claims. */
      curl_off_t cl = -1;
      if (curl_easy_getinfo(r->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK &&
          cl > 0) {
        uint64_t want = (uint64_t)cl < r->keep ? (uint64_t)cl : r->keep;
        if (want > PRESIZE_MAX)
          want = PRESIZE_MAX;
        (void)tarn_buf_reserve(r->dst->buf, (size_t)want); /* a hint: appends still grow it */
      }
    }
    r->body_bytes += len;
    const char *b = p;
    size_t k = len;
    if (st == 200 && r->skip) { /* the server ignored our Range */
      size_t d = r->skip < k ? (size_t)r->skip : k;
      b += d, k -= d, r->skip -= d;
    }
    if (k > r->keep)
      k = (size_t)r->keep;
    r->keep -= k;
    if (k && tarn__objdst_put(r->dst, b, k) != 0)
      return 0;
    return len;
  }
  if (r->text.len + len > TEXT_MAX)
    return 0;
  return tarn_buf_append(&r->text, p, len) == 0 ? len : 0;
}

/* The value of header line p[0..len) when it is the header name (with its
 * colon), trimmed of spaces and the line end; NULL otherwise. */
static const char *header_value(const char *p, size_t len, const char *name, size_t *vlen) {
  size_t nl = strlen(name);
  if (len <= nl || strncasecmp(p, name, nl) != 0)
    return NULL;
  size_t i = nl;
  while (i < len && (p[i] == ' ' || p[i] == '\t'))
    i++;
  size_t j = len;
  while (j > i && (p[j - 1] == '\r' || p[j - 1] == '\n' || p[j - 1] == ' ' || p[j - 1] == '\t'))
    j--;
  *vlen = j - i;
  return p + i;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  req *r = ud;
  size_t len = sz * n;
  size_t vl;
  const char *v;
  if (len >= 5 && strncmp(p, "HTTP/", 5) == 0)
    r->crange_seen = 0; /* a new response (after an interim one): forget the last one's */
  if ((v = header_value(p, len, "content-range:", &vl))) {
    size_t k = vl < sizeof r->crange - 1 ? vl : sizeof r->crange - 1;
    memcpy(r->crange, v, k);
    r->crange[k] = 0;
    r->crange_len = vl;
    r->crange_seen = 1;
  }
  if ((v = header_value(p, len, "etag:", &vl))) {
    size_t k = vl < sizeof r->etag - 1 ? vl : sizeof r->etag - 1;
    memcpy(r->etag, v, k);
    r->etag[k] = 0;
  }
  return len;
}

static void amz_now(char out[17]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* The line is as long as the value: an STS session token runs to several KB
 * and is signed whole, so a fixed buffer that cut it (2 KB, issue 33) made
 * every request of such a session fail its signature. */
static struct curl_slist *add_h(struct curl_slist *l, const char *name, const char *value,
                                int *ok) {
  size_t nl = strlen(name), vl = strlen(value);
  char small[512], *line = nl + vl + 3 <= sizeof small ? small : malloc(nl + vl + 3);
  if (!line) {
    *ok = 0;
    return l;
  }
  memcpy(line, name, nl);
  memcpy(line + nl, ": ", 2);
  memcpy(line + nl + 2, value, vl + 1);
  struct curl_slist *n = curl_slist_append(l, line);
  if (line != small)
    free(line);
  if (!n) {
    *ok = 0;
    return l;
  }
  return n;
}

/* The request's path (a C string, for the signer) and URL (for curl). */
static int request_url(s3store *s, const req *r, tarn_buf *path, tarn_buf *url, tarn_buf *qs) {
  int rc = 0;
  tarn__sb sp, su;
  tarn__sb_init(&sp, path), tarn__sb_init(&su, url);
  tarn__sb_putc(&sp, '/');
  if (s->path_style) {
    if (!sp.rc)
      sp.rc = tarn__sigv4_encode(path, s->bucket, strlen(s->bucket), 0);
    if (r->key)
      tarn__sb_putc(&sp, '/');
  }
  if (r->key && !sp.rc)
    sp.rc = tarn__sigv4_encode(path, r->key, strlen(r->key), 1);
  if (!(rc = tarn__sb_cstr(&sp)))
    rc = tarn__sigv4_query(qs, r->q, r->nq);
  if (!rc) {
    tarn__sb_puts(&su, s->scheme_host);
    tarn__sb_append(&su, path->data, path->len);
    if (qs->len) {
      tarn__sb_putc(&su, '?');
      tarn__sb_append(&su, qs->data, qs->len);
    }
    rc = tarn__sb_cstr(&su);
  }
  return rc;
}

/* The request's headers, signed (SigV4) when the store has credentials. */
static int request_headers(s3store *s, const req *r, const tarn_buf *path, tarn_buf *auth,
                           struct curl_slist **hl) {
  int ok = 1;
  char date[17], hash[65], range[64];
  amz_now(date);
  tarn__sha256_hex(r->body ? (const void *)r->body : "", r->blen, hash);
  tarn__sigv4_kv h[8];
  size_t nh = 0;
  h[nh++] = (tarn__sigv4_kv){"host", s->host};
  h[nh++] = (tarn__sigv4_kv){"x-amz-date", date};
  h[nh++] = (tarn__sigv4_kv){"x-amz-content-sha256", hash};
  if (s->token)
    h[nh++] = (tarn__sigv4_kv){"x-amz-security-token", s->token};
  if (r->range_len) {
    if (r->range_len == UINT64_MAX || r->range_off + r->range_len < r->range_off)
      snprintf(range, sizeof range, "bytes=%llu-", (unsigned long long)r->range_off);
    else
      snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)r->range_off,
               (unsigned long long)(r->range_off + r->range_len - 1));
    h[nh++] = (tarn__sigv4_kv){"range", range};
  }
  if (r->if_none_match)
    h[nh++] = (tarn__sigv4_kv){"if-none-match", "*"};
  else if (r->if_match)
    h[nh++] = (tarn__sigv4_kv){"if-match", r->if_match};
  if (r->content_type)
    h[nh++] = (tarn__sigv4_kv){"content-type", r->content_type};
  else if (strcmp(r->method, "PUT") == 0)
    h[nh++] = (tarn__sigv4_kv){"content-type", "application/octet-stream"};
  for (size_t i = 0; i < nh; i++)
    *hl = add_h(*hl, h[i].name, h[i].value, &ok);
  if (s->access_key && s->secret_key) {
    tarn__sigv4_creds c = {s->access_key, s->secret_key, s->region, "s3"};
    int rc = tarn__sigv4_sign(&c, r->method, (const char *)path->data, r->q, r->nq, h, nh, hash,
                              date, auth, NULL, NULL);
    if (rc)
      return rc;
    *hl = add_h(*hl, "Authorization", (const char *)auth->data, &ok);
  }
  *hl = add_h(*hl, "Expect", "", &ok); /* no 100-continue round trip */
  if (!ok)
    return tarn__err(TARN_ENOMEM, "s3: out of memory");
  return 0;
}

/* The curl handle's options for r: URL, headers, callbacks, method, body. */
static void request_setopt(s3store *s, req *r, struct curl_slist *hl, const tarn_buf *url) {
  CURL *c = r->curl;
  r->cerr[0] = 0;
  curl_easy_setopt(c, CURLOPT_URL, (const char *)url->data);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_SHARE, s->share);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->cerr);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, r->attempt_ms < 5000 ? r->attempt_ms : 5000L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->attempt_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  tarn__tls_curl(c, &s->tls);
  if (strcmp(r->method, "HEAD") == 0)
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  else if (strcmp(r->method, "GET") != 0) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    if (r->body || strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0) {
      /* The body through a read callback that cannot rewind, never
       * POSTFIELDS (issue 31 item 1, as meta_etcd.c): libcurl silently
       * sends a request again on a fresh connection when a reused one died
       * before any answer, and a create-only PUT that had landed then gets
       * 412 as if another writer had taken the name. Refused, the resend
       * ends in CURLE_SEND_FAIL_REWIND, and call() resends it itself with
       * the outcome marked unknown, which settle() resolves by reading the
       * object back. A request without a body goes on a fresh connection:
       * there libcurl never resends. */
      tarn__curl_body_set(c, &r->cb, r->body, r->blen);
      if (r->blen == 0)
        curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
    }
  }
}

/* Sends r once. 0 when an HTTP response came back (any status), else the
 * transport failure is in r->cc and TARN_EIO is returned. */
static int once(s3store *s, req *r) {
  tarn_buf path = TARN_BUF_INIT, url = TARN_BUF_INIT, auth = TARN_BUF_INIT, qs = TARN_BUF_INIT;
  struct curl_slist *hl = NULL;
  int rc = request_url(s, r, &path, &url, &qs);
  if (!rc)
    rc = request_headers(s, r, &path, &auth, &hl);
  if (rc)
    goto out;
  request_setopt(s, r, hl, &url);
  CURL *c = r->curl;
  r->cc = curl_easy_perform(c);
  if (r->cc == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->clen);
  } else
    rc = TARN_EIO;
out:
  curl_slist_free_all(hl);
  tarn_buf_free(&path), tarn_buf_free(&url), tarn_buf_free(&auth), tarn_buf_free(&qs);
  return rc;
}

static atomic_int lose_replies;
static const char *lose_method; /* set only while no request runs */

void tarn__s3_lose_replies(const char *method, int n) {
  lose_method = method;
  atomic_store(&lose_replies, n);
}

/* The test hook: takes one lost reply if any are pending for this method. */
static int take_lost_reply(const char *method) {
  if (lose_method && strcmp(lose_method, method) != 0)
    return 0;
  int n = atomic_load(&lose_replies);
  while (n > 0)
    if (atomic_compare_exchange_weak(&lose_replies, &n, n - 1))
      return 1;
  return 0;
}

/* A uniform number in [0, 1) from a per-thread xorshift seeded by time, pid
 * and thread, so that processes retrying together do not back off in step. */
static double jitter(void) {
  static _Thread_local uint64_t x;
  if (!x) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)&x ^
        (uint64_t)ts.tv_sec;
    if (!x)
      x = 1;
  }
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int is_mutation(const req *r) {
  return strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0 ||
         strcmp(r->method, "DELETE") == 0;
}

/* The S3 error code of a response body ("SlowDown"), or "". */
static void err_code(const req *r, char *out, size_t cap) {
  tarn_buf b = TARN_BUF_INIT;
  out[0] = 0;
  if (tarn__xml_get((const char *)r->text.data, r->text.len, "Code", &b) == 1)
    snprintf(out, cap, "%s", (const char *)b.data);
  tarn_buf_free(&b);
}

/* Sends r, retrying transient failures with full-jitter exponential backoff
 * until the store's deadline. 0 with r->status set when a final answer came;
 * TARN_ETIMEDOUT / TARN_EUNAVAIL when the deadline passed first. */
static int call(s3store *s, req *r, const char *what) {
  double deadline = now_s() + (double)s->timeout_ms / 1000.0;
  size_t dst_len = r->dst ? r->dst->len : 0;
  size_t buf_len = r->dst && r->dst->buf ? r->dst->buf->len : 0;
  uint64_t skip0 = r->skip, keep0 = r->keep;
  double backoff = 0.05;
  char code[64];
  int last_transport = 0;
  r->ambiguous = 0;
  r->curl = pool_get(s);
  if (!r->curl)
    return tarn__err(TARN_ENOMEM, "s3: curl_easy_init failed");
  for (int attempt = 0;; attempt++) {
    if (r->dst) { /* a retry starts the body again */
      r->dst->len = dst_len;
      if (r->dst->buf)
        r->dst->buf->len = buf_len;
    }
    r->skip = skip0, r->keep = keep0;
    tarn_buf_reset(&r->text);
    r->etag[0] = 0;
    r->crange_seen = 0;
    r->body_bytes = 0;
    r->status = 0;
    r->clen = -1;
    double left = deadline - now_s();
    r->attempt_ms = left > 0.001 ? (long)(left * 1000.0) : 1L;
    int rc = once(s, r);
    if (rc == 0 && is_mutation(r) && take_lost_reply(r->method)) {
      rc = TARN_EIO;
      r->cc = CURLE_RECV_ERROR;
      snprintf(r->cerr, sizeof r->cerr, "reply lost (test hook)");
    }
    int retry = 0;
    if (rc == TARN_EIO && tarn__tls_refused(r->cc, r->cerr)) {
      pool_put(s, r->curl);
      return tarn__err(TARN_EAUTH, "s3 %s: %s (%s)", what, tarn__tls_what(r->cc, r->cerr),
                       r->cerr[0] ? r->cerr : curl_easy_strerror(r->cc));
    }
    if (rc == TARN_EIO) {
      /* A request that never left cannot have taken effect; any later
       * transport failure may have come after the server acted. */
      int unsent = (r->cc == CURLE_COULDNT_CONNECT || r->cc == CURLE_COULDNT_RESOLVE_HOST ||
                    r->cc == CURLE_COULDNT_RESOLVE_PROXY) &&
                   !r->cb.sent; /* refused after a reused connection died: maybe sent */
      if (!unsent && is_mutation(r))
        r->ambiguous = 1;
      retry = 1;
      last_transport = 1;
    } else if (rc) {
      pool_put(s, r->curl);
      return rc;
    } else {
      last_transport = 0;
      err_code(r, code, sizeof code);
      if (r->status >= 500 || r->status == 429 ||
          (r->status == 409 && (strcmp(code, "ConditionalRequestConflict") == 0 ||
                                strcmp(code, "OperationAborted") == 0))) {
        retry = 1;
        if (r->status == 503 || r->status == 429)
          atomic_fetch_add(&s->throttled, 1);
        /* Any 5xx may have come after the server acted: S3 says 503 SlowDown
         * refuses before acting, but a store (or a proxy in front of it) that
         * times out internally answers 503 for a write it applied. A create-only
         * put whose retry then meets 412 is settled by reading back (settle()),
         * never taken as another's object on the word of the 503 (issue 31,
         * "behaviour under 503": create-only stays create-only across a retry,
         * and our own put is not reported as "exists"). */
        if (r->status >= 500 && is_mutation(r) &&
            !(r->status == 503 && TARN__PLANTED(TARN__BUG_S3_503_NOT_AMBIGUOUS)))
          r->ambiguous = 1;
      }
    }
    if (retry)
      atomic_fetch_add(&s->retried, 1);
    if (!retry) {
      pool_put(s, r->curl);
      return 0;
    }
    double wait = backoff * jitter(); /* full jitter */
    if (backoff < 2.0)
      backoff *= 2;
    if (now_s() + wait >= deadline) {
      int code_rc =
          last_transport && (r->cc == CURLE_COULDNT_CONNECT || r->cc == CURLE_COULDNT_RESOLVE_HOST)
              ? TARN_EUNAVAIL
              : TARN_ETIMEDOUT;
      pool_put(s, r->curl);
      if (last_transport)
        return tarn__err(code_rc, "s3 %s: %s after %d attempts in %ld ms: %s", what,
                         curl_easy_strerror(r->cc), attempt + 1, s->timeout_ms,
                         r->cerr[0] ? r->cerr : "");
      return tarn__err(code_rc, "s3 %s: HTTP %ld after %d attempts in %ld ms", what, r->status,
                       attempt + 1, s->timeout_ms);
    }
    struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
  }
}

/* The error for a final HTTP answer that is not a success: S3's code and
 * message, never the request's credentials. */
static int status_err(const req *r, const char *what) {
  char code[64];
  err_code(r, code, sizeof code);
  tarn_buf msg = TARN_BUF_INIT;
  tarn__xml_get((const char *)r->text.data, r->text.len, "Message", &msg);
  int rc = r->status == 403 || r->status == 401 ? TARN_EAUTH
           : r->status == 404                   ? TARN_ENOTFOUND
           : r->status == 412                   ? TARN_EEXIST
           : r->status == 416                   ? TARN_ERANGE
           : r->status == 400                   ? TARN_EINVAL
                                                : TARN_EIO;
  tarn__err(rc, "s3 %s: HTTP %ld%s%s%s%s", what, r->status, code[0] ? " " : "", code,
            msg.len ? ": " : "", msg.len ? (const char *)msg.data : "");
  tarn_buf_free(&msg);
  return rc;
}

static void req_free(req *r) { tarn_buf_free(&r->text); }

static char *full_key(s3store *s, const char *name) {
  size_t pl = strlen(s->prefix), nl = strlen(name);
  char *k = malloc(pl + nl + 1);
  if (k) {
    memcpy(k, s->prefix, pl);
    memcpy(k + pl, name, nl + 1);
  }
  return k;
}

/* --- head, get, delete --------------------------------------------------- */

static int head_key(s3store *s, const char *key, const char *name, uint64_t *size, char *etag,
                    size_t etag_cap) {
  req r = {0};
  r.method = "HEAD";
  r.key = key;
  char what[1200];
  snprintf(what, sizeof what, "HEAD \"%s\"", name);
  int rc = call(s, &r, what);
  if (rc == 0 && r.status != 200)
    rc = r.status == 404 ? tarn__err(TARN_ENOTFOUND, "s3: no object \"%s\"", name)
                         : status_err(&r, what);
  if (rc == 0) {
    if (r.clen < 0)
      rc = tarn__err(TARN_EIO, "s3 %s: no Content-Length", what);
    else
      *size = (uint64_t)r.clen;
    if (etag)
      snprintf(etag, etag_cap, "%s", r.etag);
  }
  req_free(&r);
  return rc;
}

static int s_head(tarn_objstore *st, const char *name, uint64_t *size) {
  s3store *s = (s3store *)st;
  char *key = full_key(s, name);
  if (!key)
    return tarn__err(TARN_ENOMEM, "s3: out of memory");
  int rc = head_key(s, key, name, size, NULL, 0);
  free(key);
  return rc;
}

/* The object's size from a ranged GET's answer, which spares a HEAD: a 200
 * to a range request carried the whole object, a 206 says it in Content-Range.
 * Leaves dst unsized when the server did not say (the dispatcher then asks
 * HEAD); a Content-Range that does not parse, or that describes other bytes
 * than were asked for or received, is TARN_EIO. */
static int size_from_answer(const req *r, const char *what, uint64_t off, tarn__objdst *dst) {
  if (r->status == 200) {
    if (off > r->body_bytes) /* a server that ignored Range: the read starts past the end */
      return tarn__err(TARN_ERANGE, "s3 %s: offset %llu past the end (%llu bytes)", what,
                       (unsigned long long)off, (unsigned long long)r->body_bytes);
    tarn__objdst_sized(dst, r->body_bytes);
    return 0;
  }
  if (!r->crange_seen)
    return 0;
  tarn__content_range cr;
  if (r->crange_len >= sizeof r->crange)
    return tarn__err(TARN_EIO, "s3 %s: Content-Range of %zu bytes, too long", what, r->crange_len);
  if (tarn__content_range_parse(r->crange, r->crange_len, &cr))
    return tarn__errctx(TARN_EIO, "s3 %s", what);
  if (!cr.has_range || cr.first != off || cr.last - cr.first + 1 != r->body_bytes)
    return tarn__err(TARN_EIO, "s3 %s: Content-Range \"%s\" for a %llu-byte body asked from %llu",
                     what, r->crange, (unsigned long long)r->body_bytes, (unsigned long long)off);
  if (cr.has_total)
    tarn__objdst_sized(dst, cr.total);
  return 0;
}

static int s_get(tarn_objstore *st, const char *name, uint64_t off, uint64_t len,
                 tarn__objdst *dst) {
  s3store *s = (s3store *)st;
  char *key = full_key(s, name);
  if (!key)
    return tarn__err(TARN_ENOMEM, "s3: out of memory");
  char what[1200];
  snprintf(what, sizeof what, "GET \"%s\"", name);
  int rc = 0;
  uint64_t size = 0;
  if (len == 0) { /* an empty range: only whether the object and the offset exist */
    rc = head_key(s, key, name, &size, NULL, 0);
    if (rc == 0 && off > size)
      rc = tarn__err(TARN_ERANGE, "s3: offset %llu past the end of \"%s\" (%llu bytes)",
                     (unsigned long long)off, name, (unsigned long long)size);
    if (rc == 0)
      tarn__objdst_sized(dst, size);
    free(key);
    return rc;
  }
  req r = {0};
  r.method = "GET";
  r.key = key;
  r.dst = dst;
  r.skip = off;
  r.keep = len;
  if (off != 0 || len != UINT64_MAX)
    r.range_off = off, r.range_len = len;
  rc = call(s, &r, what);
  if (rc == 0 && r.status == 416) {
    /* S3 refuses a range that starts at or past the end; at the end is an
     * empty read for us, past it an error. The 416 may say the size
     * (a star, then "/SIZE"); else HEAD tells. */
    tarn__content_range cr;
    if (r.crange_seen && r.crange_len < sizeof r.crange &&
        tarn__content_range_parse(r.crange, r.crange_len, &cr) == 0 && !cr.has_range &&
        cr.has_total)
      size = cr.total;
    else
      rc = head_key(s, key, name, &size, NULL, 0);
    if (rc == 0 && off > size)
      rc = tarn__err(TARN_ERANGE, "s3: offset %llu past the end of \"%s\" (%llu bytes)",
                     (unsigned long long)off, name, (unsigned long long)size);
    if (rc == 0)
      tarn__objdst_sized(dst, size);
  } else if (rc == 0 && r.status != 200 && r.status != 206)
    rc = r.status == 404 ? tarn__err(TARN_ENOTFOUND, "s3: no object \"%s\"", name)
                         : status_err(&r, what);
  else if (rc == 0)
    rc = size_from_answer(&r, what, off, dst);
  req_free(&r);
  free(key);
  return rc;
}

static int s_del(tarn_objstore *st, const char *name) {
  s3store *s = (s3store *)st;
  char *key = full_key(s, name);
  if (!key)
    return tarn__err(TARN_ENOMEM, "s3: out of memory");
  req r = {0};
  r.method = "DELETE";
  r.key = key;
  char what[1200];
  snprintf(what, sizeof what, "DELETE \"%s\"", name);
  int rc = call(s, &r, what);
  /* S3 answers 204 whether or not the key existed; 404 is success too. */
  if (rc == 0 && r.status != 204 && r.status != 200 && r.status != 404)
    rc = status_err(&r, what);
  req_free(&r);
  free(key);
  return rc;
}

/* --- create-only puts ---------------------------------------------------- */

static void md5_hex(const void *p, size_t n, char out[33], unsigned char raw[16]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int ml = 0;
  EVP_Digest(p, n, md, &ml, EVP_md5(), NULL);
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++)
    out[2 * i] = hx[md[i] >> 4], out[2 * i + 1] = hx[md[i] & 15];
  out[32] = 0;
  if (raw)
    memcpy(raw, md, 16);
}

/* An ETag header's value without its quotes. */
static void bare_etag(const char *e, char *out, size_t cap) {
  size_t el = strlen(e);
  if (el >= 2 && e[0] == '"' && e[el - 1] == '"')
    snprintf(out, cap, "%.*s", (int)(el - 2), e + 1);
  else
    snprintf(out, cap, "%s", e);
}

/* After a put whose outcome we could not see: does the object under key hold
 * what we sent? 0 yes (the put took effect), TARN_EEXIST someone else's
 * object, TARN_ENOTFOUND absent, or an error. want_etag is the ETag our put
 * would give ("" when unknown); body/blen the bytes (NULL when not kept). */
static int resolve(s3store *s, const char *key, const char *name, const char *want_etag,
                   const uint8_t *body, size_t blen, uint64_t total) {
  uint64_t size;
  char etag[128];
  int rc = head_key(s, key, name, &size, etag, sizeof etag);
  if (rc)
    return rc;
  if (size != total)
    return tarn__err(TARN_EEXIST, "s3: object \"%s\" already exists", name);
  char bare[128];
  bare_etag(etag, bare, sizeof bare);
  if (want_etag[0] && strcmp(bare, want_etag) == 0)
    return 0;
  if (!body)
    return tarn__err(TARN_EEXIST, "s3: object \"%s\" already exists (ETag differs)", name);
  tarn_buf b = TARN_BUF_INIT;
  tarn__objdst d = {.buf = &b};
  req r = {0};
  r.method = "GET";
  r.key = key;
  r.dst = &d;
  r.keep = UINT64_MAX;
  rc = call(s, &r, "GET (resolving an unknown put)");
  if (rc == 0 && r.status != 200)
    rc = status_err(&r, "GET (resolving an unknown put)");
  if (rc == 0 && !(b.len == blen && (blen == 0 || memcmp(b.data, body, blen) == 0)))
    rc = tarn__err(TARN_EEXIST, "s3: object \"%s\" already exists", name);
  req_free(&r);
  tarn_buf_free(&b);
  return rc;
}

/* Settles a create-only mutation that got 412 or no final answer. */
static int settle(s3store *s, req *r, int rc, const char *key, const char *name,
                  const char *want_etag, const uint8_t *body, size_t blen, uint64_t total,
                  const char *what) {
  if (rc == 0 && (r->status == 200 || r->status == 201 || r->status == 204))
    return 0;
  if (rc == 0 && r->status != 412)
    return status_err(r, what);
  if (!r->ambiguous) /* 412 to a request that was never in doubt: taken before us */
    return rc ? rc : tarn__err(TARN_EEXIST, "s3: object \"%s\" already exists", name);
  /* An earlier attempt may have created the object: a 412 may be our own. */
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", tarn_errmsg());
  int res = resolve(s, key, name, want_etag, body, blen, total);
  if (res == 0 || res == TARN_EEXIST)
    return res;
  if (res == TARN_ENOTFOUND && rc == 0)
    return tarn__err(TARN_EIO, "s3 %s: HTTP 412 but no object", what);
  return tarn__err(TARN_EUNKNOWN, "s3 %s: outcome unknown (%s); reading it back failed: %s", what,
                   msg, tarn_errmsg());
}

static int put_single(s3store *s, const char *name, const void *data, size_t len) {
  char *key = full_key(s, name);
  if (!key)
    return tarn__err(TARN_ENOMEM, "s3: out of memory");
  req r = {0};
  r.method = "PUT";
  r.key = key;
  r.body = data;
  r.blen = len;
  r.if_none_match = 1;
  char what[1200], md5[33];
  snprintf(what, sizeof what, "PUT \"%s\"", name);
  md5_hex(data, len, md5, NULL);
  /* (The ETag of the answer is not checked against the MD5: with SSE-KMS it is
   * not one. The payload hash in the signature already protects the bytes.) */
  int rc = call(s, &r, what);
  rc = settle(s, &r, rc, key, name, md5, data, len, len, what);
  req_free(&r);
  free(key);
  return rc;
}

static int s_put_begin(tarn_objstore *st, const char *name, tarn_objstore_upload **out);
static int s_put_write(tarn_objstore_upload *up, const void *data, size_t len);
static int s_put_commit(tarn_objstore_upload *up);
static void s_put_abort(tarn_objstore_upload *up);

#define SINGLE_PUT_MAX ((uint64_t)5 << 30) /* S3's limit for one PUT */

/* One PUT, which If-None-Match makes create-only on every server we know;
 * only objects beyond S3's 5 GiB single-PUT limit go multipart. */
static int s_put(tarn_objstore *st, const char *name, const void *data, size_t len) {
  if ((uint64_t)len <= SINGLE_PUT_MAX)
    return put_single((s3store *)st, name, data, len);
  tarn_objstore_upload *u = NULL; /* set by s_put_begin on success */
  int rc = s_put_begin(st, name, &u);
  if (rc)
    return rc;
  u->store = st;
  rc = s_put_write(u, data, len);
  if (rc) {
    s_put_abort(u);
    return rc;
  }
  return s_put_commit(u);
}

/* Streaming: bytes gather in memory up to the multipart threshold; past it a
 * multipart upload starts and each full part goes out as it fills. */
typedef struct s3upload {
  tarn_objstore_upload base;
  char *name, *key;
  tarn_buf buf;
  char *upload_id; /* NULL until multipart */
  char (*etags)[128];
  unsigned char (*md5s)[16];
  size_t nparts, cap;
  uint64_t total;
  int failed;
} s3upload;

static int s_put_begin(tarn_objstore *st, const char *name, tarn_objstore_upload **out) {
  s3store *s = (s3store *)st;
  s3upload *u = calloc(1, sizeof *u);
  if (!u || !(u->name = strdup(name)) || !(u->key = full_key(s, name))) {
    if (u)
      free(u->name);
    free(u);
    return tarn__err(TARN_ENOMEM, "s3: out of memory");
  }
  *out = &u->base;
  return 0;
}

static int mp_create(s3store *s, s3upload *u) {
  req r = {0};
  r.method = "POST";
  r.key = u->key;
  r.q[r.nq++] = (tarn__sigv4_kv){"uploads", NULL};
  r.content_type = "application/octet-stream"; /* becomes the object's type */
  char what[1200];
  snprintf(what, sizeof what, "CreateMultipartUpload \"%s\"", u->name);
  int rc = call(s, &r, what);
  if (rc == 0 && r.status != 200)
    rc = status_err(&r, what);
  tarn_buf id = TARN_BUF_INIT;
  if (rc == 0) {
    int got = tarn__xml_get((const char *)r.text.data, r.text.len, "UploadId", &id);
    if (got < 0)
      rc = got;
    else if (got == 0 || id.len == 0)
      rc = tarn__err(TARN_EIO, "s3 %s: no UploadId in the reply", what);
    else
      u->upload_id = (char *)tarn_buf_steal(&id, NULL);
  }
  tarn_buf_free(&id);
  req_free(&r);
  return rc;
}

static int mp_part(s3store *s, s3upload *u, const uint8_t *p, size_t n) {
  if (u->nparts == u->cap) {
    size_t cap = u->cap ? u->cap * 2 : 16;
    void *e = realloc(u->etags, cap * sizeof *u->etags);
    if (!e)
      return tarn__err(TARN_ENOMEM, "s3: out of memory");
    u->etags = e;
    void *m = realloc(u->md5s, cap * sizeof *u->md5s);
    if (!m)
      return tarn__err(TARN_ENOMEM, "s3: out of memory");
    u->md5s = m;
    u->cap = cap;
  }
  if (u->nparts >= 10000)
    return tarn__err(TARN_ERANGE, "s3: more than 10000 parts for \"%s\"", u->name);
  char num[16], md5[33];
  snprintf(num, sizeof num, "%zu", u->nparts + 1);
  md5_hex(p, n, md5, u->md5s[u->nparts]);
  req r = {0};
  r.method = "PUT";
  r.key = u->key;
  r.body = p;
  r.blen = n;
  r.q[r.nq++] = (tarn__sigv4_kv){"partNumber", num};
  r.q[r.nq++] = (tarn__sigv4_kv){"uploadId", u->upload_id};
  char what[1200];
  snprintf(what, sizeof what, "UploadPart %s of \"%s\"", num, u->name);
  int rc = call(s, &r, what); /* a part PUT is idempotent: retries are safe */
  if (rc == 0 && r.status != 200)
    rc = status_err(&r, what);
  if (rc == 0 && !r.etag[0])
    rc = tarn__err(TARN_EIO, "s3 %s: no ETag in the reply", what);
  if (rc == 0) {
    snprintf(u->etags[u->nparts], sizeof u->etags[0], "%s", r.etag);
    u->nparts++;
  }
  req_free(&r);
  return rc;
}

static int s_put_write(tarn_objstore_upload *up, const void *data, size_t len) {
  s3upload *u = (s3upload *)up;
  s3store *s = (s3store *)up->store;
  if (u->failed)
    return tarn__err(TARN_ECLOSED, "s3: upload of \"%s\" already failed", u->name);
  int rc = tarn_buf_append(&u->buf, data, len);
  u->total += len;
  if (rc == 0 && !u->upload_id && u->buf.len > s->multipart_threshold)
    rc = mp_create(s, u);
  /* Keep the last bytes back: the final part goes out at commit, so it is
   * never empty and every part but the last is part_size long. */
  size_t sent = 0;
  while (rc == 0 && u->upload_id && u->buf.len - sent > s->part_size) {
    rc = mp_part(s, u, u->buf.data + sent, s->part_size);
    sent += s->part_size;
  }
  if (sent) {
    memmove(u->buf.data, u->buf.data + sent, u->buf.len - sent);
    u->buf.len -= sent;
  }
  if (rc)
    u->failed = 1;
  return rc;
}

static void mp_abort(s3store *s, s3upload *u) {
  req r = {0};
  r.method = "DELETE";
  r.key = u->key;
  r.q[r.nq++] = (tarn__sigv4_kv){"uploadId", u->upload_id};
  call(s, &r, "AbortMultipartUpload"); /* best effort: lifecycle rules reap the rest */
  req_free(&r);
}

static void s_put_abort(tarn_objstore_upload *up) {
  s3upload *u = (s3upload *)up;
  if (u->upload_id)
    mp_abort((s3store *)up->store, u);
  tarn_buf_free(&u->buf);
  free(u->name), free(u->key), free(u->upload_id), free(u->etags), free(u->md5s);
  free(u);
}

static int mp_complete(s3store *s, s3upload *u) {
  tarn_buf x = TARN_BUF_INIT;
  int rc = 0;
  tarn__sb sx;
  tarn__sb_init(&sx, &x);
  tarn__sb_puts(&sx, "<CompleteMultipartUpload>");
  /* the ETag is quoted hex from the server: no characters XML needs escaped
   * other than the quotes, which are fine in element content */
  for (size_t i = 0; i < u->nparts; i++)
    tarn__sb_appendf(&sx, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", i + 1,
                     u->etags[i]);
  tarn__sb_puts(&sx, "</CompleteMultipartUpload>");
  rc = tarn__sb_rc(&sx);
  /* The ETag S3 gives a multipart object: MD5 of the parts' MD5s, "-N". */
  char want[48] = "";
  if (rc == 0) {
    char hex[33];
    md5_hex(u->md5s, u->nparts * 16, hex, NULL);
    snprintf(want, sizeof want, "%s-%zu", hex, u->nparts);
  }
  req r = {0};
  r.method = "POST";
  r.key = u->key;
  r.body = x.data;
  r.blen = x.len;
  r.if_none_match = 1;
  r.content_type = "application/xml";
  r.q[r.nq++] = (tarn__sigv4_kv){"uploadId", u->upload_id};
  char what[1200];
  snprintf(what, sizeof what, "CompleteMultipartUpload \"%s\"", u->name);
  if (rc == 0) {
    rc = call(s, &r, what);
    /* S3 may answer 200 and put an <Error> in the body */
    tarn_buf code = TARN_BUF_INIT;
    if (rc == 0 && r.status == 200 &&
        tarn__xml_get((const char *)r.text.data, r.text.len, "Code", &code) == 1) {
      r.status = strcmp((const char *)code.data, "PreconditionFailed") == 0 ? 412 : 500;
      r.ambiguous = r.status != 412;
    }
    tarn_buf_free(&code);
    /* A retry after a lost reply finds the upload gone (404 NoSuchUpload). */
    if (rc == 0 && r.status == 404 && r.ambiguous)
      r.status = 412;
    rc = settle(s, &r, rc, u->key, u->name, want, NULL, 0, u->total, what);
  }
  req_free(&r);
  tarn_buf_free(&x);
  return rc;
}

static int s_put_commit(tarn_objstore_upload *up) {
  s3upload *u = (s3upload *)up;
  s3store *s = (s3store *)up->store;
  int rc;
  if (u->failed)
    rc = tarn__err(TARN_ECLOSED, "s3: upload of \"%s\" already failed", u->name);
  else if (!u->upload_id)
    rc = put_single(s, u->name, u->buf.data, u->buf.len);
  else {
    /* S3's CompleteMultipartUpload honours If-None-Match; a server that does
     * not would let a completed upload replace an object, so look first too. */
    uint64_t size;
    rc = head_key(s, u->key, u->name, &size, NULL, 0);
    if (rc == 0)
      rc = tarn__err(TARN_EEXIST, "s3: object \"%s\" already exists", u->name);
    else if (rc == TARN_ENOTFOUND) {
      rc = u->buf.len ? mp_part(s, u, u->buf.data, u->buf.len) : 0;
      if (rc == 0)
        rc = mp_complete(s, u);
      if (rc == 0) {
        free(u->upload_id);
        u->upload_id = NULL; /* completed: nothing to abort */
      }
    }
  }
  s_put_abort(up);
  return rc;
}

/* --- list ---------------------------------------------------------------- */

static int s_list(tarn_objstore *st, const char *prefix, const char *start_after, size_t max,
                  tarn_objstore_listing *out) {
  s3store *s = (s3store *)st;
  char *kp = full_key(s, prefix);
  char *ka = start_after[0] ? full_key(s, start_after) : NULL;
  if (!kp || (start_after[0] && !ka)) {
    free(kp), free(ka);
    return tarn__err(TARN_ENOMEM, "s3: out of memory");
  }
  size_t pl = strlen(s->prefix);
  tarn_buf token = TARN_BUF_INIT, key = TARN_BUF_INIT, num = TARN_BUF_INIT;
  int rc = 0, more = 1;
  /* One name more than max is gathered, to learn whether the page is the last. */
  while (rc == 0 && more && out->n <= max) {
    char mk[24];
    size_t want = max + 1 - out->n;
    snprintf(mk, sizeof mk, "%zu", want < LIST_PAGE ? want : (size_t)LIST_PAGE);
    req r = {0};
    r.method = "GET";
    r.key = NULL;
    r.q[r.nq++] = (tarn__sigv4_kv){"list-type", "2"};
    r.q[r.nq++] = (tarn__sigv4_kv){"prefix", kp};
    r.q[r.nq++] = (tarn__sigv4_kv){"max-keys", mk};
    if (token.len)
      r.q[r.nq++] = (tarn__sigv4_kv){"continuation-token", (const char *)token.data};
    else if (ka)
      r.q[r.nq++] = (tarn__sigv4_kv){"start-after", ka};
    rc = call(s, &r, "ListObjectsV2");
    if (rc == 0 && r.status != 200)
      rc = status_err(&r, "ListObjectsV2");
    const char *x = (const char *)r.text.data;
    size_t xn = r.text.len, pos = 0;
    const char *c;
    size_t cl;
    int got;
    while (rc == 0 && (got = tarn__xml_next(x, xn, &pos, "Contents", &c, &cl)) != 0) {
      if (got < 0) {
        rc = got;
        break;
      }
      rc = tarn__xml_get(c, cl, "Key", &key);
      if (rc == 1)
        rc = tarn__xml_get(c, cl, "Size", &num) == 1 ? 0 : TARN_ECORRUPT;
      else if (rc == 0)
        rc = TARN_ECORRUPT;
      if (rc) {
        if (rc == TARN_ECORRUPT)
          tarn__err(rc, "s3 ListObjectsV2: an entry without Key or Size");
        break;
      }
      char *end;
      unsigned long long size = strtoull((const char *)num.data, &end, 10);
      if (*end || num.len == 0) {
        rc = tarn__err(TARN_ECORRUPT, "s3 ListObjectsV2: bad Size");
        break;
      }
      const char *k = (const char *)key.data;
      if (key.len <= pl || memcmp(k, s->prefix, pl) != 0)
        continue;
      /* keys no put of ours could have made (other tools) are not objects here */
      if (tarn_objstore_check_name(k + pl, key.len - pl) != 0)
        continue;
      if (out->n <= max)
        rc = tarn__objlist_add(out, k + pl, key.len - pl, size);
    }
    if (rc == 0) {
      tarn_buf flag = TARN_BUF_INIT;
      more = tarn__xml_get(x, xn, "IsTruncated", &flag) == 1 &&
             strcmp((const char *)flag.data, "true") == 0;
      tarn_buf_free(&flag);
      if (more) {
        int g = tarn__xml_get(x, xn, "NextContinuationToken", &token);
        if (g != 1 || token.len == 0)
          rc = tarn__err(TARN_ECORRUPT, "s3 ListObjectsV2: truncated without a continuation token");
        else
          rc = tarn_buf_putc(&token, 0), token.len--;
      }
    }
    req_free(&r);
  }
  if (rc == 0 && out->n > max) {
    out->n--;
    free(out->names[out->n]);
    out->truncated = 1;
  }
  tarn_buf_free(&token), tarn_buf_free(&key), tarn_buf_free(&num);
  free(kp), free(ka);
  return rc;
}

/* --- open and close ------------------------------------------------------ */

static char *param(const char *query, const char *name) {
  size_t nl = strlen(name);
  for (const char *p = query; p && *p;) {
    const char *amp = strchr(p, '&');
    size_t l = amp ? (size_t)(amp - p) : strlen(p);
    if (l > nl && strncmp(p, name, nl) == 0 && p[nl] == '=')
      return strndup(p + nl + 1, l - nl - 1);
    p = amp ? amp + 1 : NULL;
  }
  return NULL;
}

static int is_ip_or_localhost(const char *host, size_t n) {
  if (n >= 9 && strncmp(host, "localhost", 9) == 0 && (n == 9 || host[9] == ':'))
    return 1;
  if (n && host[0] == '[')
    return 1; /* IPv6 literal */
  for (size_t i = 0; i < n && host[i] != ':'; i++)
    if (!((host[i] >= '0' && host[i] <= '9') || host[i] == '.'))
      return 0;
  return 1;
}

static void s_close(tarn_objstore *st) {
  s3store *s = (s3store *)st;
  if (s->pid == getpid()) {
    for (int i = 0; i < s->npool; i++)
      curl_easy_cleanup(s->pool[i]);
    if (s->share)
      curl_share_cleanup(s->share);
  }
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_destroy(&s->share_mu[i]);
  pthread_mutex_destroy(&s->pool_mu);
  free(s->bucket), free(s->prefix), free(s->scheme_host), free(s->host), free(s->region);
  if (s->secret_key)
    OPENSSL_cleanse(s->secret_key, strlen(s->secret_key));
  if (s->token) /* a session token is a credential too (issue 33) */
    OPENSSL_cleanse(s->token, strlen(s->token));
  free(s->access_key), free(s->secret_key), free(s->token);
  tarn__tls_free(&s->tls);
  free(s);
}

static char *env_dup(const char *name) {
  const char *v = getenv(name);
  return v && *v ? strdup(v) : NULL;
}

static int size_param(const char *q, const char *name, size_t *out, size_t min) {
  char *v = param(q, name);
  if (!v)
    return 0;
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  int bad = *end || !*v || x < min;
  free(v);
  if (bad)
    return tarn__err(TARN_EINVAL, "s3 URI: %s must be a number of at least %zu", name, min);
  *out = (size_t)x;
  return 0;
}

/* The store's host and scheme://host from the endpoint (scheme://host[:port],
 * nothing after): the bucket in the path (path_style) or in the host name. */
static int set_host(s3store *s, const char *qs, const char *endpoint, size_t bucket_len) {
  const char *hs = endpoint ? strstr(endpoint, "://") : NULL;
  if (!hs)
    return tarn__err(TARN_EINVAL, "s3: endpoint \"%s\" is not scheme://host[:port]", endpoint);
  int rc = 0;
  hs += 3;
  size_t hl = strcspn(hs, "/");
  if (hl == 0)
    rc = tarn__err(TARN_EINVAL, "s3: endpoint \"%s\" has no host", endpoint);
  char *ps = param(qs, "path_style");
  s->path_style = ps ? strcmp(ps, "1") == 0 || strcmp(ps, "true") == 0 : is_ip_or_localhost(hs, hl);
  free(ps);
  size_t sl = (size_t)(hs - endpoint);
  s->scheme_host = malloc(sl + bucket_len + hl + 2);
  s->host = malloc(bucket_len + hl + 2);
  if (!s->scheme_host || !s->host)
    rc = tarn__err(TARN_ENOMEM, "s3: out of memory");
  else if (s->path_style) {
    snprintf(s->host, bucket_len + hl + 2, "%.*s", (int)hl, hs);
    snprintf(s->scheme_host, sl + bucket_len + hl + 2, "%.*s%s", (int)sl, endpoint, s->host);
  } else {
    snprintf(s->host, bucket_len + hl + 2, "%s.%.*s", s->bucket, (int)hl, hs);
    snprintf(s->scheme_host, sl + bucket_len + hl + 2, "%.*s%s", (int)sl, endpoint, s->host);
  }
  return rc;
}

static int s_open(const char *uri, tarn_objstore **out) {
  pthread_once(&curl_once, curl_init);
  if (strncmp(uri, "s3://", 5) != 0)
    return tarn__err(TARN_EINVAL, "object store \"%s\": expected s3://BUCKET/PREFIX", uri);
  const char *b = uri + 5, *q = strchr(b, '?');
  size_t blen = q ? (size_t)(q - b) : strlen(b);
  const char *slash = memchr(b, '/', blen);
  size_t bucket_len = slash ? (size_t)(slash - b) : blen;
  if (bucket_len == 0)
    return tarn__err(TARN_EINVAL, "object store \"%s\": no bucket", uri);
  s3store *s = calloc(1, sizeof *s);
  if (!s)
    return tarn__err(TARN_ENOMEM, "s3: out of memory");
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_init(&s->share_mu[i], NULL);
  pthread_mutex_init(&s->pool_mu, NULL);
  s->pid = getpid();
  int rc = 0;
  s->bucket = strndup(b, bucket_len);
  /* the key prefix, with one trailing '/', validated like a name */
  const char *pre = slash ? slash + 1 : b + blen;
  size_t prelen = (size_t)(b + blen - pre);
  while (prelen && pre[prelen - 1] == '/')
    prelen--;
  if (prelen && tarn_objstore_check_name(pre, prelen) != 0)
    rc = tarn__errctx(TARN_EINVAL, "s3 URI: key prefix");
  s->prefix = malloc(prelen + 2);
  if (s->prefix) {
    memcpy(s->prefix, pre, prelen);
    s->prefix[prelen] = prelen ? '/' : 0;
    s->prefix[prelen + (prelen ? 1 : 0)] = 0;
  }
  const char *qs = q ? q + 1 : NULL;
  char *endpoint = param(qs, "endpoint");
  if (!endpoint)
    endpoint = env_dup("AWS_ENDPOINT_URL");
  s->region = param(qs, "region");
  if (!s->region)
    s->region = env_dup("AWS_REGION");
  if (!s->region)
    s->region = strdup("us-east-1");
  if (!endpoint && s->region) {
    endpoint = malloc(strlen(s->region) + 40);
    if (endpoint)
      sprintf(endpoint, "https://s3.%s.amazonaws.com", s->region);
  }
  s->access_key = env_dup("AWS_ACCESS_KEY_ID");
  s->secret_key = env_dup("AWS_SECRET_ACCESS_KEY");
  s->token = env_dup("AWS_SESSION_TOKEN");
  s->tls.ca_file = param(qs, "ca_bundle");
  if (!s->tls.ca_file)
    s->tls.ca_file = env_dup("AWS_CA_BUNDLE");
  s->multipart_threshold = 16u << 20;
  s->part_size = 16u << 20;
  s->timeout_ms = 30000;
  if (!s->bucket || !s->prefix || !s->region || !endpoint)
    rc = rc ? rc : tarn__err(TARN_ENOMEM, "s3: out of memory");
  if (rc == 0)
    rc = size_param(qs, "multipart_threshold", &s->multipart_threshold, 1);
  if (rc == 0)
    rc = size_param(qs, "part_size", &s->part_size, 5u << 20); /* S3's minimum part */
  size_t tmo = 0;
  if (rc == 0 && (rc = size_param(qs, "timeout_ms", &tmo, 1)) == 0 && tmo)
    s->timeout_ms = (long)tmo;
  if (rc == 0)
    rc = set_host(s, qs, endpoint, bucket_len);
  free(endpoint);
  if (rc == 0)
    rc = tarn__tls_check(&s->tls, "s3");
  if (rc == 0)
    rc = make_share(s);
  if (rc) {
    s_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

const struct tarn__objstore_vfs tarn__objstore_s3 = {
    .scheme = "s3",
    .open = s_open,
    .close = s_close,
    .put = s_put,
    .put_begin = s_put_begin,
    .put_write = s_put_write,
    .put_commit = s_put_commit,
    .put_abort = s_put_abort,
    .get = s_get,
    .head = s_head,
    .del = s_del,
    .list = s_list,
};

/* --- what `tarn probe` asks of the client (objstore_s3.h) ---------------- */

/* The s3 handle behind st and the full key of name (to free), or an error. */
static int probe_key(tarn_objstore *st, const char *name, s3store **s, char **key) {
  if (!st || st->vfs != &tarn__objstore_s3)
    return tarn__err(TARN_EUNSUPPORTED, "not an s3:// store");
  *s = (s3store *)st;
  *key = full_key(*s, name);
  return *key ? 0 : tarn__err(TARN_ENOMEM, "s3: out of memory");
}

int tarn__s3_etag(tarn_objstore *st, const char *name, const void *data, size_t len, char *etag,
                  size_t cap, int *content_md5) {
  s3store *s = NULL;
  char *key = NULL, e[128], md5[33];
  uint64_t size;
  int rc = probe_key(st, name, &s, &key);
  if (rc)
    return rc;
  rc = head_key(s, key, name, &size, e, sizeof e);
  free(key);
  if (rc)
    return rc;
  bare_etag(e, etag, cap);
  md5_hex(data, len, md5, NULL);
  *content_md5 = strcasecmp(etag, md5) == 0;
  return 0;
}

int tarn__s3_put_if_match(tarn_objstore *st, const char *name, const void *data, size_t len,
                          const char *etag, int quote, long *status) {
  s3store *s = NULL;
  char *key = NULL;
  int rc = probe_key(st, name, &s, &key);
  if (rc)
    return rc;
  char quoted[140], what[1200];
  snprintf(quoted, sizeof quoted, quote ? "\"%s\"" : "%s", etag);
  snprintf(what, sizeof what, "PUT \"%s\" (If-Match)", name);
  req r = {.method = "PUT", .key = key, .body = data, .blen = len, .if_match = quoted};
  rc = call(s, &r, what);
  if (rc == 0)
    *status = r.status;
  req_free(&r);
  free(key);
  return rc;
}

void tarn__s3_counts(tarn_objstore *st, uint64_t *throttled, uint64_t *retried) {
  s3store *s = st && st->vfs == &tarn__objstore_s3 ? (s3store *)st : NULL;
  *throttled = s ? atomic_load(&s->throttled) : 0;
  *retried = s ? atomic_load(&s->retried) : 0;
}

int tarn__s3_multipart_race(tarn_objstore *st, const char *name, int *replaced) {
  s3store *s = NULL;
  char *key = NULL;
  int rc = probe_key(st, name, &s, &key);
  free(key);
  if (rc)
    return rc;
  tarn_objstore_upload *up = NULL;
  if ((rc = s_put_begin(st, name, &up)))
    return rc;
  up->store = st;
  s3upload *u = (s3upload *)up;
  *replaced = 0;
  rc = mp_create(s, u);
  if (!rc) /* one part, the last: any size will do */
    rc = mp_part(s, u, (const uint8_t *)"multipart", 9);
  if (!rc) /* another writer creates the name first */
    rc = put_single(s, name, "single", 6);
  if (!rc) { /* no HEAD before it, unlike s_put_commit: the server alone decides */
    rc = mp_complete(s, u);
    if (rc == 0) {
      *replaced = 1;
      free(u->upload_id);
      u->upload_id = NULL;
    } else if (rc == TARN_EEXIST)
      rc = 0;
  }
  s_put_abort(up);
  return rc;
}
