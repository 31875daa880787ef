/* The HTTP endpoint of `tarn serve` (libmicrohttpd, one internal thread):
 *   GET /metrics  the process's metrics, Prometheus text format 0.0.4
 *   GET /healthz  200 {"status":"ok",...} when the stores answered the last
 *                 check, 503 {"status":"unavailable",...} otherwise
 * Anything else: 404; methods other than GET and HEAD: 405. */
#ifndef TARN_SERVER_HTTP_H
#define TARN_SERVER_HTTP_H

#include <stddef.h>

/* Fills a JSON object body (at most n bytes) and returns 1 when healthy. */
typedef int (*tarn_srv_health_fn)(void *arg, char *body, size_t n);

typedef struct tarn_srv_http tarn_srv_http;

/* What one client can hold: a bound on connections in all and from one
 * address (beyond them a connection waits or is closed at once), and the
 * time after which a connection is closed when idle or when it has not sent
 * a whole request header since it opened or since its last response (a
 * client trickling header bytes does not keep it; issue 33). 0 in a field:
 * no bound there. */
typedef struct tarn_srv_http_limits {
  int max_connections, max_per_ip, timeout_s;
  /* HTTPS (libmicrohttpd over GnuTLS) with these PEM files; both NULL:
   * plain HTTP. */
  const char *tls_cert, *tls_key;
} tarn_srv_http_limits;

/* listen is "HOST:PORT" (an IPv4 address or "localhost"; PORT 0 picks a free
 * port, see tarn_srv_http_port). health is called on the HTTP thread for
 * every /healthz and must not block (answer from state). TARN_EINVAL for a
 * malformed address or TLS files that do not load (tarn_errmsg says which),
 * TARN_EIO when the port cannot be bound. */
int tarn_srv_http_start(const char *listen, const tarn_srv_http_limits *lim,
                        tarn_srv_health_fn health, void *arg, tarn_srv_http **out);
int tarn_srv_http_port(const tarn_srv_http *h);
void tarn_srv_http_stop(tarn_srv_http *h);

#endif
