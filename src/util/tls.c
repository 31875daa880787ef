/* TLS options of tarn's libcurl clients (docs/deployment.md "Secure deployment").
 * libcurl + OpenSSL are the project's TLS stack. */
#include "util/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/secret_file.h"

void tarn__tls_free(tarn__tls *t) {
  free(t->ca_file), free(t->cert_file), free(t->key_file);
  t->ca_file = t->cert_file = t->key_file = NULL;
}

static int is(const char *name, size_t n, const char *a) {
  return strlen(a) == n && strncmp(name, a, n) == 0;
}

int tarn__tls_option(tarn__tls *t, const char *name, size_t nlen, const char *v, size_t vlen) {
  char **slot = is(name, nlen, "cacert") || is(name, nlen, "ca_file")   ? &t->ca_file
                : is(name, nlen, "cert") || is(name, nlen, "cert_file") ? &t->cert_file
                : is(name, nlen, "key") || is(name, nlen, "key_file")   ? &t->key_file
                                                                        : NULL;
  if (!slot)
    return 0;
  free(*slot);
  *slot = strndup(v, vlen);
  return *slot ? 1 : tarn__err(TARN_ENOMEM, "TLS options: out of memory");
}

static int readable(const char *path, const char *store, const char *what) {
  FILE *f = fopen(path, "r");
  if (!f)
    return tarn__err(TARN_EINVAL, "%s: %s %s: %s", store, what, path, strerror(errno));
  fclose(f);
  return 0;
}

int tarn__tls_check(const tarn__tls *t, const char *store) {
  int rc = 0;
  if (t->ca_file)
    rc = readable(t->ca_file, store, "CA file");
  if (!rc && t->cert_file)
    rc = readable(t->cert_file, store, "client certificate");
  if (!rc && t->key_file)
    rc = readable(t->key_file, store, "client key");
  if (!rc && t->key_file && !t->cert_file)
    rc = tarn__err(TARN_EINVAL, "%s: a client key without a client certificate (cert=)", store);
  if (!rc)
    tarn__file_mode_warn(t->key_file ? t->key_file : t->cert_file, "TLS key file");
  return rc;
}

void tarn__tls_curl(CURL *c, const tarn__tls *t) {
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(c, CURLOPT_CAINFO, t->ca_file); /* NULL: curl's default store */
  curl_easy_setopt(c, CURLOPT_SSLCERT, t->cert_file);
  curl_easy_setopt(c, CURLOPT_SSLKEY, t->key_file);
}

int tarn__tls_refused(CURLcode cc, const char *errbuf) {
  switch (cc) {
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_CLIENTCERT: return 1;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
    /* a handshake alert: the server refused our certificate (or none) */
    return errbuf && strstr(errbuf, "alert") && strstr(errbuf, "certificate");
  default: return 0;
  }
}

const char *tarn__tls_what(CURLcode cc, const char *errbuf) {
  switch (cc) {
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_ISSUER_ERROR:
    return "TLS refused: the server's certificate is not trusted by the CA file";
  case CURLE_SSL_CACERT_BADFILE: return "TLS refused: the CA file cannot be loaded";
  case CURLE_SSL_CERTPROBLEM: return "TLS refused: the client certificate or key cannot be used";
  default:
    (void)errbuf;
    return "TLS refused: the server rejected the client certificate (or wants one)";
  }
}
