/* SASL on a Kafka connection (sasl.h): PLAIN (RFC 4616) and SCRAM-SHA-256
 * (RFC 5802, 7677) against the users of the metadata store (sasl_users.h). */
#include "kafka/sasl.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/proto/kproto.h"
#include "kafka/sasl_users.h"
#include "tarn/error.h"
#include "tarn/metrics.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

enum { KS_START, KS_HANDSHAKEN, KS_DONE, KS_FAILED };

struct tarn__ksasl {
  int state;
  int mech; /* chosen at the handshake */
  int raw;  /* v0 handshake: tokens come as raw frames */
  tarn__scram scram;
  tarn__kcred cred;
  int known; /* cred is the user's and allows mech */
};

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

/* RFC 4616: [authzid] NUL authcid NUL passwd; an authzid other than the
 * user is refused (tarn has no proxy users). */
static int plain(tarn__knode *node, tarn__ksasl *s, const char *peer, const uint8_t *in, size_t n) {
  const uint8_t *z1 = memchr(in, 0, n);
  const uint8_t *z2 = z1 ? memchr(z1 + 1, 0, n - (size_t)(z1 + 1 - in)) : NULL;
  char user[TARN__KU_NAME_MAX + 1];
  size_t ul = z2 ? (size_t)(z2 - z1 - 1) : 0, zl = z1 ? (size_t)(z1 - in) : 0;
  if (!z2 || !ul || ul > TARN__KU_NAME_MAX || (zl && (zl != ul || memcmp(in, z1 + 1, ul))))
    return refuse(node, s, peer, NULL, "malformed PLAIN message");
  memcpy(user, z1 + 1, ul);
  user[ul] = 0;
  int rc = load(node, s, user);
  if (rc)
    return refuse(node, s, peer, user, "the metadata store did not answer");
  const char *pw = (const char *)z2 + 1;
  size_t pl = n - (size_t)(z2 + 1 - in);
  /* RFC 4616: passwd = 1*SAFE, no NUL (issue 33: "pw\0anything" was taken) */
  if (!pl || memchr(pw, 0, pl))
    return refuse(node, s, peer, user, "malformed PLAIN message");
  /* checked against the unknown credential too: the same hash work */
  int ok = tarn__kcred_check(&s->cred, pw, pl);
  if (!s->known || !ok)
    return refuse(node, s, peer, user, "invalid credentials");
  return accept_user(node, s, peer, user);
}

static int scram(tarn__knode *node, tarn__ksasl *s, const char *peer, const uint8_t *in, size_t n,
                 tarn_buf *out) {
  if (s->scram.step == 0) {
    if (tarn__scram_client_first(&s->scram, in, n))
      return refuse(node, s, peer, NULL, "malformed SCRAM client-first-message");
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

void tarn__ksasl_raw(tarn__knode *node, tarn__kreq *req) {
  tarn_buf tok = TARN_BUF_INIT, f = TARN_BUF_INIT;
  int rc = tarn__ksasl_step(node, req->sasl, req->peer, req->frame, req->frame_len, &tok);
  /* the frame is the token: a PLAIN one holds the password (issue 33) */
  OPENSSL_cleanse((uint8_t *)req->frame, req->frame_len);
  if (!rc && (tarn_buf_put_be32(&f, (uint32_t)tok.len) || tarn_buf_append(&f, tok.data, tok.len)))
    rc = TARN_ENOMEM;
  tarn_buf_free(&tok);
  if (rc) { /* Kafka closes a v0 exchange that fails: there is no error field */
    tarn_buf_free(&f);
    tarn__kreq_close(req);
    return;
  }
  tarn__kreq_respond_frame(req, &f);
}
