/* A request body handed to libcurl that libcurl cannot send twice (issue 31
 * item 1). libcurl silently sends a request again on a fresh connection when
 * a reused keep-alive connection died before any answer — after the server
 * may have acted on it. Below the logic that resolves a write's unknown
 * outcome (etcd's sequenced put, S3's create-only PUT) no such hidden resend
 * may happen: the body goes through a read callback whose seek callback
 * refuses to rewind, so libcurl ends with CURLE_SEND_FAIL_REWIND instead,
 * and "sent" tells whether libcurl ever took a byte of it (a request it never
 * took is known not to have happened). Used by meta_etcd.c and
 * objstore_s3.c. */
#ifndef TARN_STORE_CURL_BODY_H
#define TARN_STORE_CURL_BODY_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tarn__curl_body {
  const uint8_t *p;
  size_t len, off;
  int sent; /* libcurl took a byte */
} tarn__curl_body;

/* Makes c POST (or, with CURLOPT_CUSTOMREQUEST, PUT) the len bytes at p
 * through b, which must live until the transfer ends. */
void tarn__curl_body_set(CURL *c, tarn__curl_body *b, const void *p, size_t len);

/* Takes the body's options off c again (a pooled handle). */
void tarn__curl_body_unset(CURL *c);

#endif
