/* TLS for tarn's libcurl clients (etcd, S3): the file options and how a
 * refusal at the TLS layer is told from a transient failure. */
#ifndef TARN_UTIL_TLS_H
#define TARN_UTIL_TLS_H

#include <curl/curl.h>

typedef struct tarn__tls {
  char *ca_file;   /* trusted CA bundle (PEM); NULL: the system's store */
  char *cert_file; /* client certificate (PEM) for mutual TLS; NULL: none */
  char *key_file;  /* its private key (PEM); NULL: in cert_file */
} tarn__tls;

void tarn__tls_free(tarn__tls *t);

/* Sets one option from a URI "name=value": ca_file (cacert), cert_file
 * (cert), key_file (key); 1 if name was a TLS option, 0 if not, negative
 * on no memory. The files are checked when opened (tarn__tls_check). */
int tarn__tls_option(tarn__tls *t, const char *name, size_t nlen, const char *v, size_t vlen);

/* Fails (TARN_EINVAL, naming store and file) when a named file cannot be
 * read; warns when the key file is readable by others than its owner. */
int tarn__tls_check(const tarn__tls *t, const char *store);

/* Applies t to a curl handle: peer and host verification stay on. */
void tarn__tls_curl(CURL *c, const tarn__tls *t);

/* 1 when cc (with curl's error text) is a refusal at the TLS layer (an
 * untrusted server certificate, a client certificate the server rejected,
 * an unreadable CA or key), which no retry can cure. */
int tarn__tls_refused(CURLcode cc, const char *errbuf);

/* What was refused, for the one-line error: "the server's certificate is
 * not trusted (CA file ...)" etc. */
const char *tarn__tls_what(CURLcode cc, const char *errbuf);

#endif
