/* SCRAM-SHA-256, the server's side, and salted credentials (scram.h). */
#include "kafka/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/random.h"

static int hmac(const uint8_t key[TARN__SCRAM_KEY], const void *p, size_t n,
                uint8_t out[TARN__SCRAM_KEY]) {
  unsigned len = TARN__SCRAM_KEY;
  return HMAC(EVP_sha256(), key, TARN__SCRAM_KEY, p, n, out, &len)
             ? 0
             : tarn__err(TARN_EUNKNOWN, "HMAC-SHA-256 failed");
}

/* StoredKey and ServerKey from a password (RFC 5802 §3). */
static int keys(const char *pw, size_t n, const uint8_t *salt, size_t salt_len, uint32_t iter,
                uint8_t stored[TARN__SCRAM_KEY], uint8_t server[TARN__SCRAM_KEY]) {
  uint8_t salted[TARN__SCRAM_KEY], client[TARN__SCRAM_KEY];
  int rc = 0;
  if (!PKCS5_PBKDF2_HMAC(pw, (int)n, salt, (int)salt_len, (int)iter, EVP_sha256(), TARN__SCRAM_KEY,
                         salted))
    rc = tarn__err(TARN_EUNKNOWN, "PBKDF2-HMAC-SHA-256 failed");
  if (!rc)
    rc = hmac(salted, "Client Key", 10, client);
  if (!rc && !SHA256(client, sizeof client, stored))
    rc = tarn__err(TARN_EUNKNOWN, "SHA-256 failed");
  if (!rc && server)
    rc = hmac(salted, "Server Key", 10, server);
  OPENSSL_cleanse(salted, sizeof salted);
  OPENSSL_cleanse(client, sizeof client);
  return rc;
}

int tarn__kcred_derive(const char *password, size_t n, tarn__kcred *c) {
  if (c->iterations < TARN__SCRAM_ITER_MIN || c->iterations > TARN__SCRAM_ITER_MAX ||
      !c->salt_len || c->salt_len > sizeof c->salt || n > INT32_MAX)
    return tarn__err(TARN_EINVAL, "SCRAM iterations %u (%d..%d) or salt of %zu bytes",
                     c->iterations, TARN__SCRAM_ITER_MIN, TARN__SCRAM_ITER_MAX, c->salt_len);
  return keys(password, n, c->salt, c->salt_len, c->iterations, c->stored_key, c->server_key);
}

int tarn__kcred_make(const char *password, size_t n, int mechanisms, uint32_t iterations,
                     tarn__kcred *out) {
  memset(out, 0, sizeof *out);
  out->mechanisms = mechanisms;
  out->iterations = iterations;
  out->salt_len = 24;
  int rc = tarn__random(out->salt, out->salt_len, "a SCRAM salt");
  return rc ? rc : tarn__kcred_derive(password, n, out);
}

int tarn__kcred_check(const tarn__kcred *c, const char *password, size_t n) {
  uint8_t stored[TARN__SCRAM_KEY];
  if (n > INT32_MAX || keys(password, n, c->salt, c->salt_len, c->iterations, stored, NULL))
    return 0;
  int ok = CRYPTO_memcmp(stored, c->stored_key, sizeof stored) == 0;
  OPENSSL_cleanse(stored, sizeof stored);
  return ok;
}

void tarn__scram_free(tarn__scram *s) {
  free(s->client_first_bare);
  free(s->server_first);
  free(s->nonce);
  free(s->gs2);
  memset(s, 0, sizeof *s);
}

static char *dup_n(const char *p, size_t n) {
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, p, n);
    s[n] = 0;
  }
  return s;
}

/* The value of attribute `a` ("a=value") among the comma-separated ones of
 * s[0..n): its start and length, or NULL. */
static const char *attr(const char *s, size_t n, char a, size_t *len) {
  *len = 0; /* set on every path: gcc -O3 cannot see that NULL means unset */
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && s[j] != ',')
      j++;
    if (j - i >= 2 && s[i] == a && s[i + 1] == '=') {
      *len = j - i - 2;
      return s + i + 2;
    }
    i = j + 1;
  }
  return NULL;
}

/* saslname (RFC 5802 §5.1): "=2C" is ',' and "=3D" is '='; any other '=' is
 * an error. */
static int unescape_name(const char *p, size_t n, char *out, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = p[i];
    if (ch == '=') {
      if (i + 2 < n && !memcmp(p + i, "=2C", 3))
        ch = ',';
      else if (i + 2 < n && !memcmp(p + i, "=3D", 3))
        ch = '=';
      else
        return TARN_EINVAL;
      i += 2;
    }
    if (!ch || o + 1 >= cap)
      return TARN_EINVAL;
    out[o++] = ch;
  }
  out[o] = 0;
  return o ? 0 : TARN_EINVAL;
}

int tarn__scram_client_first(tarn__scram *s, const uint8_t *in, size_t n) {
  const char *m = (const char *)in;
  if (s->step != 0 || memchr(m, 0, n))
    return tarn__err(TARN_EINVAL, "SCRAM client-first-message out of turn or with a NUL");
  /* gs2-header: "n," or "y," (no channel binding: tarn offers none, and a
   * "p=" client demands one), an optional authzid, ','. */
  if (n < 3 || (m[0] != 'n' && m[0] != 'y') || m[1] != ',')
    return tarn__err(TARN_EINVAL, "SCRAM client-first-message: no gs2 header");
  const char *c2 = memchr(m + 2, ',', n - 2);
  if (!c2)
    return tarn__err(TARN_EINVAL, "SCRAM client-first-message: no gs2 header");
  size_t gl = (size_t)(c2 - m) + 1;
  const char *bare = m + gl;
  size_t bl = n - gl, ul, nl;
  const char *u = attr(bare, bl, 'n', &ul), *r = attr(bare, bl, 'r', &nl);
  if (bl < 2 || bare[0] != 'n' || bare[1] != '=' || !u || !r || !nl || memchr(r, ',', nl) ||
      unescape_name(u, ul, s->user, sizeof s->user))
    return tarn__err(TARN_EINVAL, "SCRAM client-first-message: bad user name or nonce");
  s->gs2 = dup_n(m, gl);
  s->client_first_bare = dup_n(bare, bl);
  s->nonce = dup_n(r, nl);
  if (!s->gs2 || !s->client_first_bare || !s->nonce)
    return TARN_ENOMEM;
  return 0;
}

int tarn__scram_server_first(tarn__scram *s, const tarn__kcred *c, const char *snonce,
                             tarn_buf *out) {
  if (s->step != 0 || !s->nonce || strchr(snonce, ','))
    return tarn__err(TARN_EINVAL, "SCRAM server-first-message out of turn");
  size_t cl = strlen(s->nonce), sl = strlen(snonce);
  char *full = malloc(cl + sl + 1);
  if (!full)
    return TARN_ENOMEM;
  memcpy(full, s->nonce, cl);
  memcpy(full + cl, snonce, sl + 1);
  free(s->nonce);
  s->nonce = full;
  tarn_buf b = TARN_BUF_INIT;
  char it[24];
  snprintf(it, sizeof it, ",i=%u", c->iterations);
  int rc = tarn_buf_append(&b, "r=", 2) || tarn_buf_append(&b, full, cl + sl) ||
                   tarn_buf_append(&b, ",s=", 3)
               ? TARN_ENOMEM
               : tarn__b64_encode(c->salt, c->salt_len, &b);
  if (!rc && tarn_buf_append(&b, it, strlen(it)))
    rc = TARN_ENOMEM;
  if (!rc && !(s->server_first = dup_n((const char *)b.data, b.len)))
    rc = TARN_ENOMEM;
  if (!rc)
    rc = tarn_buf_append(out, b.data, b.len) ? TARN_ENOMEM : 0;
  tarn_buf_free(&b);
  if (!rc)
    s->step = 1;
  return rc;
}

int tarn__scram_client_final(tarn__scram *s, const tarn__kcred *c, const uint8_t *in, size_t n,
                             tarn_buf *out) {
  const char *m = (const char *)in;
  if (s->step != 1 || memchr(m, 0, n))
    return tarn__err(TARN_EINVAL, "SCRAM client-final-message out of turn or with a NUL");
  s->step = 2; /* one try per exchange */
  /* client-final-message-without-proof "," "p=" proof: the proof is last. */
  const char *p = NULL;
  for (size_t i = n; i >= 3; i--)
    if (!memcmp(m + i - 3, ",p=", 3)) {
      p = m + i;
      break;
    }
  size_t cbl, rl;
  const char *cb = attr(m, n, 'c', &cbl), *r = attr(m, n, 'r', &rl);
  if (!p || !cb || !r)
    return tarn__err(TARN_EINVAL, "SCRAM client-final-message: no c=, r= or p=");
  size_t wl = (size_t)(p - 3 - m), pl = n - (size_t)(p - m);
  tarn_buf gs2 = TARN_BUF_INIT, proof = TARN_BUF_INIT, am = TARN_BUF_INIT;
  int rc = tarn__b64_decode(cb, cbl, &gs2, "SCRAM channel binding");
  /* The nonce must end with the whole nonce of server-first-message, as
   * Kafka checks it (ScramSaslServer: endsWith): librdkafka up to at least
   * 2.x sends its own nonce again in front of it. The proof covers the
   * message as sent either way. */
  size_t fl = strlen(s->nonce);
  if (!rc && (gs2.len != strlen(s->gs2) || memcmp(gs2.data, s->gs2, gs2.len) || rl < fl ||
              memcmp(r + rl - fl, s->nonce, fl)))
    rc = tarn__err(TARN_EINVAL, "SCRAM client-final-message: channel binding or nonce differs");
  if (!rc)
    rc = tarn__b64_decode(p, pl, &proof, "SCRAM proof");
  if (!rc && proof.len != TARN__SCRAM_KEY)
    rc = tarn__err(TARN_EINVAL, "SCRAM proof of %zu bytes", proof.len);
  /* AuthMessage = client-first-message-bare "," server-first-message ","
   * client-final-message-without-proof */
  if (!rc &&
      (tarn_buf_append(&am, s->client_first_bare, strlen(s->client_first_bare)) ||
       tarn_buf_putc(&am, ',') || tarn_buf_append(&am, s->server_first, strlen(s->server_first)) ||
       tarn_buf_putc(&am, ',') || tarn_buf_append(&am, m, wl)))
    rc = TARN_ENOMEM;
  uint8_t sig[TARN__SCRAM_KEY], key[TARN__SCRAM_KEY], stored[TARN__SCRAM_KEY];
  if (!rc)
    rc = hmac(c->stored_key, am.data, am.len, sig);
  if (!rc) {
    /* ClientKey = ClientProof XOR ClientSignature; the proof holds when
     * SHA256(ClientKey) is StoredKey. */
    for (size_t i = 0; i < sizeof key; i++)
      key[i] = proof.data[i] ^ sig[i];
    if (!SHA256(key, sizeof key, stored))
      rc = tarn__err(TARN_EUNKNOWN, "SHA-256 failed");
    else if (CRYPTO_memcmp(stored, c->stored_key, sizeof stored))
      rc = TARN_EAUTH;
  }
  if (!rc)
    rc = hmac(c->server_key, am.data, am.len, sig);
  if (!rc)
    rc = tarn_buf_append(out, "v=", 2) ? TARN_ENOMEM : tarn__b64_encode(sig, sizeof sig, out);
  OPENSSL_cleanse(key, sizeof key);
  OPENSSL_cleanse(sig, sizeof sig); /* with the proof, ClientSignature gives ClientKey */
  tarn_buf_free(&gs2);
  tarn_buf_free(&proof);
  tarn_buf_free(&am);
  return rc;
}
