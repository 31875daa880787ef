/* AWS Signature Version 4 for S3 requests, on OpenSSL's SHA-256 and HMAC.
 *
 * Our own signer rather than curl's CURLOPT_AWS_SIGV4, because curl 7.88 does
 * not canonicalise the query string (see notes/dependencies.md). */
#ifndef TARN_STORE_SIGV4_H
#define TARN_STORE_SIGV4_H

#include <stddef.h>

#include "tarn/buf.h"

typedef struct tarn__sigv4_kv {
  const char *name;
  const char *value;
} tarn__sigv4_kv;

typedef struct tarn__sigv4_creds {
  const char *access_key;
  const char *secret_key;
  const char *region;  /* "us-east-1" */
  const char *service; /* "s3" */
} tarn__sigv4_creds;

/* Lower-case hex SHA-256 of n bytes: 64 characters and a NUL. */
void tarn__sha256_hex(const void *p, size_t n, char out[65]);

/* Appends s[0..n) percent-encoded as SigV4 wants: unreserved characters
 * (A-Z a-z 0-9 - . _ ~) as they are, every other byte as %XX in upper case;
 * '/' is kept when keep_slash (for paths). */
int tarn__sigv4_encode(tarn_buf *out, const char *s, size_t n, int keep_slash);

/* Appends the canonical query string: each name and value encoded, the pairs
 * sorted by encoded name then value, joined with '&' (a NULL value is ""). The
 * same string goes into the request URL so that what is sent is what is signed. */
int tarn__sigv4_query(tarn_buf *out, const tarn__sigv4_kv *q, size_t nq);

/* Computes the Authorization header value for a request.
 *   canon_uri   the path, already encoded (tarn__sigv4_encode with keep_slash)
 *   query       unencoded pairs (any order)
 *   headers     every header to sign, with host, x-amz-date and
 *               x-amz-content-sha256 among them (names in any case and order)
 *   payload_hash the hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
 *   amz_date    "YYYYMMDDTHHMMSSZ"
 * canonical and to_sign, when not NULL, receive the canonical request and the
 * string to sign (for tests). Never puts the secret anywhere but the HMAC. */
int tarn__sigv4_sign(const tarn__sigv4_creds *c, const char *method, const char *canon_uri,
                     const tarn__sigv4_kv *query, size_t nq, const tarn__sigv4_kv *headers,
                     size_t nh, const char *payload_hash, const char *amz_date,
                     tarn_buf *authorization, tarn_buf *canonical, tarn_buf *to_sign);

#endif
