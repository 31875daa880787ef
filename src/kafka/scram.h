/* SCRAM-SHA-256 (RFC 5802, RFC 7677), the server's side, and the salted
 * credentials it checks against: SaltedPassword = PBKDF2-HMAC-SHA256(password,
 * salt, i), ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey =
 * SHA256(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key"). Only
 * StoredKey, ServerKey, the salt and i are kept: the password never is.
 * SASL/PLAIN is checked against the same credentials (StoredKey recomputed
 * from the password it carries). Pure functions over memory (OpenSSL). */
#ifndef TARN_KAFKA_SCRAM_H
#define TARN_KAFKA_SCRAM_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

#define TARN__SCRAM_KEY 32 /* SHA-256 */
#define TARN__SCRAM_SALT_MAX 64
#define TARN__SCRAM_ITER_MIN 4096 /* RFC 7677's least */
#define TARN__SCRAM_ITER_DEFAULT 8192
#define TARN__SCRAM_ITER_MAX 1000000

/* Which mechanisms a user may authenticate with (bits). */
enum { TARN__KSASL_PLAIN = 1, TARN__KSASL_SCRAM_SHA_256 = 2 };

typedef struct tarn__kcred {
  int mechanisms; /* TARN__KSASL_* bits */
  uint32_t iterations;
  uint8_t salt[TARN__SCRAM_SALT_MAX];
  size_t salt_len;
  uint8_t stored_key[TARN__SCRAM_KEY];
  uint8_t server_key[TARN__SCRAM_KEY];
} tarn__kcred;

/* Fills c's keys from password[0..n), c's salt and iterations (set before). */
int tarn__kcred_derive(const char *password, size_t n, tarn__kcred *c);
/* A fresh credential: a random 24-byte salt, iterations, derive. */
int tarn__kcred_make(const char *password, size_t n, int mechanisms, uint32_t iterations,
                     tarn__kcred *out);
/* 1 when password[0..n) is the one c was made from (constant time in the keys). */
int tarn__kcred_check(const tarn__kcred *c, const char *password, size_t n);

/* One SCRAM exchange, the server's side. */
typedef struct tarn__scram {
  int step;       /* 0: waiting for client-first; 1: client-final; 2: done */
  char user[256]; /* the authentication identity, unescaped */
  char *client_first_bare;
  char *server_first;
  char *nonce; /* client's nonce + server's */
  char *gs2;   /* the gs2 header, as sent ("n,,") */
} tarn__scram;

void tarn__scram_free(tarn__scram *s);
/* Reads client-first-message in[0..n): fills s->user (TARN_EINVAL when it
 * does not parse, or asks for channel binding). */
int tarn__scram_client_first(tarn__scram *s, const uint8_t *in, size_t n);
/* Writes server-first-message to out (no NUL) with c's salt and iterations,
 * the server's nonce part being snonce (printable, no ','). */
int tarn__scram_server_first(tarn__scram *s, const tarn__kcred *c, const char *snonce,
                             tarn_buf *out);
/* Reads client-final-message: checks the channel binding, the nonce and the
 * proof against c. 0 and server-final-message ("v=...") in out when the proof
 * holds; TARN_EAUTH when it does not; TARN_EINVAL when the message does not
 * parse. */
int tarn__scram_client_final(tarn__scram *s, const tarn__kcred *c, const uint8_t *in, size_t n,
                             tarn_buf *out);

#endif
