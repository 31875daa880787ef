/* See curl_body.h. */
#include "store/curl_body.h"

#include <string.h>

static size_t body_read(char *dst, size_t sz, size_t n, void *arg) {
  tarn__curl_body *b = arg;
  size_t k = b->len - b->off < sz * n ? b->len - b->off : sz * n;
  if (k) {
    memcpy(dst, b->p + b->off, k);
    b->sent = 1;
  }
  b->off += k;
  return k;
}

static int body_seek(void *arg, curl_off_t off, int origin) {
  (void)arg, (void)off, (void)origin;
  return CURL_SEEKFUNC_FAIL;
}

void tarn__curl_body_set(CURL *c, tarn__curl_body *b, const void *p, size_t len) {
  b->p = p, b->len = len, b->off = 0, b->sent = 0;
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(c, CURLOPT_READFUNCTION, body_read);
  curl_easy_setopt(c, CURLOPT_READDATA, b);
  curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, body_seek);
  curl_easy_setopt(c, CURLOPT_SEEKDATA, b);
}

void tarn__curl_body_unset(CURL *c) {
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
  curl_easy_setopt(c, CURLOPT_READFUNCTION, NULL);
  curl_easy_setopt(c, CURLOPT_READDATA, NULL);
  curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, NULL);
  curl_easy_setopt(c, CURLOPT_SEEKDATA, NULL);
}
