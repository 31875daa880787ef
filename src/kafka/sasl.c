/* SASL on a Kafka connection (sasl.h): PLAIN (RFC 4616) and SCRAM-SHA-256
 * (RFC 5802, 7677) against the users of the metadata store (sasl_users.h). */
#include "kafka/sasl.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/proto/kproto.h"
#include "kafka/sasl_guard.h"
#include "kafka/sasl_users.h"
#include "tarn/error.h"
#include "tarn/metrics.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

/* KS_CHECKING: a PLAIN password is being hashed on the guard's threads
 * (issue 33 item 4); the request has not completed, yet a request pipelined
 * behind it may run meanwhile: it reads only the state (atomic), and any
 * SASL step or other request is out of turn until the check ends. */
enum { KS_START, KS_HANDSHAKEN, KS_CHECKING, KS_DONE, KS_FAILED };

struct tarn__ksasl {
  _Atomic int state;
  int mech; /* chosen at the handshake */
  int raw;  /* v0 handshake: tokens come as raw frames */
  tarn__scram scram;
  tarn__kcred cred;
  int known;     /* cred is the user's and allows mech */
  int throttled; /* refused by the guard (its message, not "invalid credentials") */
  char user[TARN__KU_NAME_MAX + 1]; /* PLAIN's */
};

/* PLAIN checks run (tarn__ksasl_hashes) */
static _Atomic uint64_t hashes;
uint64_t tarn__ksasl_hashes(void) { return atomic_load(&hashes); }

const char *tarn__ksasl_error(const tarn__ksasl *s) {
  return s->throttled == 2   ? "Authentication failed: too many logins in progress, retry later"
         : s->throttled == 1 ? "Authentication failed: too many failed attempts from this "
                               "address or for this user, retry later"
                             : "Authentication failed: invalid credentials";
}

tarn__ksasl *tarn__ksasl_new(void) { return calloc(1, sizeof(tarn__ksasl)); }

void tarn__ksasl_free(tarn__ksasl *s) {
  if (!s)
    return;
  tarn__scram_free(&s->scram);
  OPENSSL_cleanse(s, sizeof *s);
  free(s);
}

int tarn__ksasl_authenticated(const tarn__ksasl *s) { return s->state == KS_DONE; }
int tarn__ksasl_raw_next(const tarn__ksasl *s) { return s->state == KS_HANDSHAKEN && s->raw; }
int tarn__ksasl_failed(const tarn__ksasl *s) { return s->state == KS_FAILED; }

int tarn__ksasl_mechanism(const char *p, size_t n) {
  if (n == 5 && !memcmp(p, "PLAIN", 5))
    return TARN__KSASL_PLAIN;
  if (n == 13 && !memcmp(p, "SCRAM-SHA-256", 13))
    return TARN__KSASL_SCRAM_SHA_256;
  return 0;
}

const char *tarn__ksasl_mechanism_name(int mech) {
  return mech == TARN__KSASL_PLAIN           ? "PLAIN"
         : mech == TARN__KSASL_SCRAM_SHA_256 ? "SCRAM-SHA-256"
                                             : "?";
}

int tarn__ksasl_mechanism_option(void *ctx, const char *v) {
  int m = !strcmp(v, "plain")           ? TARN__KSASL_PLAIN
          : !strcmp(v, "scram-sha-256") ? TARN__KSASL_SCRAM_SHA_256
                                        : 0;
  if (!m)
    return TARN_EINVAL;
  *(int *)ctx |= m;
  return 0;
}

int16_t tarn__ksasl_handshake(tarn__knode *node, tarn__ksasl *s, const char *p, size_t n, int v0) {
  if (s->state != KS_START)
    return TARN__KERR_ILLEGAL_SASL_STATE;
  int m = tarn__ksasl_mechanism(p, n);
  if (!m || !(node->cfg.sasl_mechanisms & m))
    return TARN__KERR_UNSUPPORTED_SASL_MECHANISM;
  s->mech = m;
  s->raw = v0;
  s->state = KS_HANDSHAKEN;
  return TARN__KERR_NONE;
}

/* A user name as the client sent it, for the log: bytes outside printable
 * ASCII and the backslash as \xNN, so a name with CR, LF or escape bytes
 * cannot forge a log line or drive a terminal (issue 33). */
static const char *log_name(const char *user, char out[4 * TARN__KU_NAME_MAX + 1]) {
  size_t o = 0;
  for (size_t i = 0; user[i] && i < TARN__KU_NAME_MAX; i++) {
    unsigned char c = (unsigned char)user[i];
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out[o++] = (char)c;
    else
      o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
  }
  out[o] = 0;
  return out;
}

static int refuse(tarn__knode *node, tarn__ksasl *s, const char *peer, const char *user,
                  const char *reason) {
  /* issue 33 item 4: a refusal of the client's making counts against its
   * address, name and pair (not one the guard made, nor the store's) */
  if (node->guard && !s->throttled && strcmp(reason, "the metadata store did not answer"))
    tarn__kguard_failed(node->guard, peer, user ? user : "");
  s->state = KS_FAILED;
  tarn_metrics_inc("tarn_kafka_sasl_total", 1, "mechanism", tarn__ksasl_mechanism_name(s->mech),
                   "result", "refused", NULL);
  char esc[4 * TARN__KU_NAME_MAX + 1];
  if (node->cfg.auth_log)
    node->cfg.auth_log(node, 0, peer, user && *user ? log_name(user, esc) : "?",
                       tarn__ksasl_mechanism_name(s->mech), reason);
  return TARN_EAUTH;
}

static int accept_user(tarn__knode *node, tarn__ksasl *s, const char *peer, const char *user) {
  if (node->guard)
    tarn__kguard_succeeded(node->guard, peer, user);
  s->state = KS_DONE;
  tarn_metrics_inc("tarn_kafka_sasl_total", 1, "mechanism", tarn__ksasl_mechanism_name(s->mech),
                   "result", "ok", NULL);
  char esc[4 * TARN__KU_NAME_MAX + 1];
  if (node->cfg.auth_log)
    node->cfg.auth_log(node, 1, peer, log_name(user, esc), tarn__ksasl_mechanism_name(s->mech),
                       NULL);
  return 0;
}

/* Issue 33 item 5: what an unknown user (or one the mechanism is not
 * allowed for) is answered with, so that the answers do not tell which users
 * exist: a salt derived from the name and the deployment's secret (stable
 * across attempts and nodes, as a real user's, of the same length), the
 * default iterations, and keys no password gives in practice (derived from
 * the secret as well), against which PLAIN does the same hash work. */
static int unknown_cred(const uint8_t secret[32], const char *user, tarn__kcred *c) {
  memset(c, 0, sizeof *c);
  c->mechanisms = TARN__KSASL_PLAIN | TARN__KSASL_SCRAM_SHA_256;
  c->iterations = TARN__SCRAM_ITER_DEFAULT;
  c->salt_len = 24;
  static const char *const what[] = {"salt", "stored", "server"};
  uint8_t *const to[] = {c->salt, c->stored_key, c->server_key};
  const size_t len[] = {c->salt_len, TARN__SCRAM_KEY, TARN__SCRAM_KEY};
  for (int i = 0; i < 3; i++) {
    uint8_t mac[TARN__SCRAM_KEY];
    unsigned ml = sizeof mac;
    /* HMAC(secret, what NUL user): one derivation per field */
    size_t wl = strlen(what[i]) + 1, ul = strlen(user);
    uint8_t msg[8 + TARN__KU_NAME_MAX + 1];
    if (ul > sizeof msg - wl)
      ul = sizeof msg - wl;
    memcpy(msg, what[i], wl);
    memcpy(msg + wl, user, ul);
    if (!HMAC(EVP_sha256(), secret, 32, msg, wl + ul, mac, &ml))
      return tarn__err(TARN_EUNKNOWN, "HMAC-SHA-256 failed");
    memcpy(to[i], mac, len[i]);
  }
  if (TARN__PLANTED(TARN__BUG_KAFKA_UNKNOWN_USER_RANDOM_SALT))
    return tarn__random(c->salt, c->salt_len, "a SCRAM salt");
  return 0;
}

/* The user's credential when it exists and allows s->mech (s->known), else
 * the unknown one (unknown_cred); a store failure is a refusal too (the
 * client retries on a new connection). The secret is read for every user,
 * known or not, so that the two take the same store reads. */
static int load(tarn__knode *node, tarn__ksasl *s, const char *user) {
  uint8_t secret[32];
  int rc = tarn__kuser_secret(node->meta, secret);
  if (!rc)
    rc = tarn__kuser_get(node->meta, user, &s->cred);
  s->known = !rc && (s->cred.mechanisms & s->mech);
  if ((!rc || rc == TARN_ENOTFOUND) && !s->known)
    rc = unknown_cred(secret, user, &s->cred);
  OPENSSL_cleanse(secret, sizeof secret);
  return rc == TARN_ENOTFOUND ? 0 : rc;
}

/* Issue 33 item 4: a refusal without a hash when the guard limits peer or
 * user (how = 1), or has no room for the hash (how = 2). Known and unknown
 * names take this path alike. */
static int throttle(tarn__knode *node, tarn__ksasl *s, const char *peer, const char *user,
                    int how) {
  s->throttled = how;
  tarn_metrics_inc("tarn_kafka_auth_throttled_total", 1, "mechanism",
                   tarn__ksasl_mechanism_name(s->mech), "reason", how == 1 ? "limit" : "busy",
                   NULL);
  return refuse(node, s, peer, user,
                how == 1 ? "too many failed attempts (throttled)" : "hashing queue full");
}

/* RFC 4616: [authzid] NUL authcid NUL passwd; an authzid other than the
 * user is refused (tarn has no proxy users). Up to the hash: 0 with s->user,
 * s->cred and the password *pw[0..*pl) to check; or the refusal. */
static int plain_parse(tarn__knode *node, tarn__ksasl *s, const char *peer, const uint8_t *in,
                       size_t n, const char **pw, size_t *pl) {
  const uint8_t *z1 = memchr(in, 0, n);
  const uint8_t *z2 = z1 ? memchr(z1 + 1, 0, n - (size_t)(z1 + 1 - in)) : NULL;
  char user[TARN__KU_NAME_MAX + 1];
  size_t ul = z2 ? (size_t)(z2 - z1 - 1) : 0, zl = z1 ? (size_t)(z1 - in) : 0;
  if (!z2 || !ul || ul > TARN__KU_NAME_MAX || (zl && (zl != ul || memcmp(in, z1 + 1, ul))))
    return refuse(node, s, peer, NULL, "malformed PLAIN message");
  memcpy(user, z1 + 1, ul);
  user[ul] = 0;
  memcpy(s->user, user, ul + 1);
  if (node->guard && !tarn__kguard_allowed(node->guard, peer, user))
    return throttle(node, s, peer, user, 1);
  int rc = load(node, s, user);
  if (rc)
    return refuse(node, s, peer, user, "the metadata store did not answer");
  *pw = (const char *)z2 + 1;
  *pl = n - (size_t)(z2 + 1 - in);
  /* RFC 4616: passwd = 1*SAFE, no NUL (issue 33: "pw\0anything" was taken) */
  if (!*pl || memchr(*pw, 0, *pl))
    return refuse(node, s, peer, user, "malformed PLAIN message");
  return 0;
}

/* The hash of PLAIN (on a guard's thread when there is a guard). */
static int plain_verify(tarn__knode *node, tarn__ksasl *s, const char *peer, const char *pw,
                        size_t pl) {
  atomic_fetch_add(&hashes, 1);
  /* checked against the unknown credential too: the same hash work */
  int ok = tarn__kcred_check(&s->cred, pw, pl);
  if (!s->known || !ok)
    return refuse(node, s, peer, s->user, "invalid credentials");
  return accept_user(node, s, peer, s->user);
}

static int plain(tarn__knode *node, tarn__ksasl *s, const char *peer, const uint8_t *in, size_t n) {
  const char *pw = NULL;
  size_t pl = 0;
  int rc = plain_parse(node, s, peer, in, n, &pw, &pl);
  return rc ? rc : plain_verify(node, s, peer, pw, pl);
}

static int scram(tarn__knode *node, tarn__ksasl *s, const char *peer, const uint8_t *in, size_t n,
                 tarn_buf *out) {
  if (s->scram.step == 0) {
    if (tarn__scram_client_first(&s->scram, in, n))
      return refuse(node, s, peer, NULL, "malformed SCRAM client-first-message");
    /* issue 33 item 4: SCRAM's proof is cheap for the server (the client
     * does PBKDF2), but its failures count and a limited name or address
     * is refused here, as PLAIN's */
    if (node->guard && !tarn__kguard_allowed(node->guard, peer, s->scram.user))
      return throttle(node, s, peer, s->scram.user, 1);
    /* An unknown user gets a server-first-message as a known one does (its
     * stable salt, load) and fails at the proof as a wrong password does. */
    if (load(node, s, s->scram.user))
      return refuse(node, s, peer, s->scram.user, "the metadata store did not answer");
    uint8_t r[18];
    tarn_buf nonce = TARN_BUF_INIT;
    int rc = tarn__random(r, sizeof r, "a SCRAM nonce");
    if (!rc)
      rc = tarn__b64_encode(r, sizeof r, &nonce);
    if (!rc)
      rc = tarn_buf_putc(&nonce, 0);
    if (!rc)
      rc = tarn__scram_server_first(&s->scram, &s->cred, (const char *)nonce.data, out);
    tarn_buf_free(&nonce);
    return rc ? refuse(node, s, peer, s->scram.user, "cannot build server-first-message") : 0;
  }
  int rc = tarn__scram_client_final(&s->scram, &s->cred, in, n, out);
  if (rc == TARN_EINVAL)
    return refuse(node, s, peer, s->scram.user, "malformed SCRAM client-final-message");
  if (rc || !s->known) {
    tarn_buf_reset(out);
    return refuse(node, s, peer, s->scram.user, "invalid credentials");
  }
  return accept_user(node, s, peer, s->scram.user);
}

int tarn__ksasl_step(tarn__knode *node, tarn__ksasl *s, const char *peer, const uint8_t *in,
                     size_t n, tarn_buf *out) {
  if (s->state != KS_HANDSHAKEN)
    return TARN_EINVAL;
  if (!in)
    in = (const uint8_t *)"", n = 0;
  return s->mech == TARN__KSASL_PLAIN ? plain(node, s, peer, in, n)
                                      : scram(node, s, peer, in, n, out);
}

/* A PLAIN check queued on the guard's threads. */
typedef struct pjob {
  tarn__knode *node;
  tarn__kreq *req;
  const char *pw; /* in req->frame, alive until the request completes */
  size_t pl;
  tarn__ksasl_done_fn done;
  int rc;
} pjob;

static void pjob_run(void *arg) {
  pjob *j = arg;
  tarn__ksasl *s = j->req->sasl;
  /* checked again: an address's hashes run one at a time, so the failures
   * of those queued before this one are counted by now */
  if (!tarn__kguard_allowed(j->node->guard, j->req->peer, s->user))
    j->rc = throttle(j->node, s, j->req->peer, s->user, 1);
  else
    j->rc = plain_verify(j->node, s, j->req->peer, j->pw, j->pl);
}

static void pjob_done(void *arg) {
  pjob j = *(pjob *)arg;
  free(arg);
  tarn_buf out = TARN_BUF_INIT;
  j.done(j.node, j.req, j.rc, &out);
  tarn_buf_free(&out);
}

void tarn__ksasl_step_req(tarn__knode *node, tarn__kreq *req, const uint8_t *in, size_t n,
                          tarn__ksasl_done_fn done) {
  tarn__ksasl *s = req->sasl;
  tarn_buf out = TARN_BUF_INIT;
  int rc;
  if (!node->guard || s->state != KS_HANDSHAKEN || s->mech != TARN__KSASL_PLAIN) {
    rc = tarn__ksasl_step(node, s, req->peer, in, n, &out);
    done(node, req, rc, &out);
    tarn_buf_free(&out);
    return;
  }
  /* issue 33 item 4: PLAIN's hash leaves the request worker */
  pjob *j = malloc(sizeof *j);
  const char *pw = NULL;
  size_t pl = 0;
  rc = j ? plain_parse(node, s, req->peer, in ? in : (const uint8_t *)"", in ? n : 0, &pw, &pl)
         : TARN_ENOMEM;
  if (!rc) {
    *j = (pjob){node, req, pw, pl, done, 0};
    s->state = KS_CHECKING;
    if (!tarn__kguard_hash(node->guard, req->peer, pjob_run, pjob_done, j))
      return;
    s->state = KS_HANDSHAKEN;
    rc = throttle(node, s, req->peer, s->user, 2);
  } else if (rc == TARN_ENOMEM) {
    rc = refuse(node, s, req->peer, NULL, "out of memory");
  }
  free(j);
  done(node, req, rc, &out);
}

/* A refusal's answer (a frame, or NULL: close), sent after the guard's delay. */
typedef struct later {
  tarn__kreq *req;
  tarn_buf f;
  int close;
} later;

static void later_fire(void *arg) {
  later *l = arg;
  if (l->close)
    tarn__kreq_close(l->req);
  else
    tarn__kreq_respond_frame(l->req, &l->f);
  tarn_buf_free(&l->f);
  free(l);
}

void tarn__ksasl_refuse_later(tarn__knode *node, tarn__kreq *req, const void *resp) {
  later *l = calloc(1, sizeof *l);
  if (!l || !node->guard) {
    free(l);
    if (resp)
      tarn__kreq_respond(req, resp);
    else
      tarn__kreq_close(req);
    return;
  }
  l->req = req;
  l->f = (tarn_buf)TARN_BUF_INIT;
  l->close =
      !resp || tarn__kresp_frame(req->api_key, req->api_version, req->correlation_id, resp, &l->f);
  tarn__kguard_later(node->guard, later_fire, l);
}

static void raw_done(tarn__knode *node, tarn__kreq *req, int rc, tarn_buf *tok) {
  /* the frame is the token: a PLAIN one holds the password, wiped once
   * checked (issue 33; here, after the guard's pool ran the check) */
  OPENSSL_cleanse((uint8_t *)req->frame, req->frame_len);
  tarn_buf f = TARN_BUF_INIT;
  if (!rc &&
      (tarn_buf_put_be32(&f, (uint32_t)tok->len) || tarn_buf_append(&f, tok->data, tok->len)))
    rc = TARN_ENOMEM;
  if (rc) { /* Kafka closes a v0 exchange that fails: there is no error field */
    tarn_buf_free(&f);
    if (rc == TARN_EAUTH)
      tarn__ksasl_refuse_later(node, req, NULL);
    else
      tarn__kreq_close(req);
    return;
  }
  tarn__kreq_respond_frame(req, &f);
}

void tarn__ksasl_raw(tarn__knode *node, tarn__kreq *req) {
  tarn__ksasl_step_req(node, req, req->frame, req->frame_len, raw_done);
}
