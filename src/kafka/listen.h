/* The Kafka listener of a node (node.c opens it; docs/kafka.md): one I/O thread with
 * epoll over every connection, a bounded pool of worker threads that decode
 * and handle requests (src/kafka), and responses written in request order
 * per connection.
 *
 * Bounds, each closing or pausing a client rather than growing the node:
 * max_connections (a connection beyond it is closed at once),
 * max_request_bytes (a frame announcing more closes the connection, as
 * Kafka's socket.request.max.bytes), max_conn_bytes (the request and response
 * bytes one connection holds in memory: above it the listener stops reading
 * from it until responses drain), idle_ms (a connection with nothing in flight
 * and no bytes moved for that long is closed, as connections.max.idle.ms). */
#ifndef TARN_KAFKA_LISTEN_H
#define TARN_KAFKA_LISTEN_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/api.h"

typedef struct tarn__klisten_limits {
  int max_connections;      /* (1024) */
  size_t max_request_bytes; /* (100 MiB) */
  size_t max_conn_bytes;    /* (128 MiB) */
  int idle_ms;              /* (600000) */
  int workers;              /* threads handling requests (16) */
  /* TLS (docs/kafka.md "Security"): with both files set every connection
   * is TLS (1.2 or later); a client that has not finished its handshake
   * within tls_handshake_ms is closed. */
  const char *tls_cert; /* PEM certificate chain file */
  const char *tls_key;  /* PEM private key file */
  int tls_handshake_ms; /* (10000) */
  /* Issue 33 (docs/kafka.md "Security", "Limits"): before a connection has
   * authenticated (SASL required) a frame announcing more than
   * max_preauth_request_bytes closes it unread, as Kafka bounds
   * unauthenticated requests (CVE-2022-34917); max_inflight_bytes bounds
   * the request bytes the whole node holds (queued.max.request.bytes): a
   * frame that would pass it is not allocated, its connection is not read
   * until requests complete. */
  size_t max_preauth_request_bytes; /* (512 KiB) */
  size_t max_inflight_bytes;        /* (512 MiB) */
  int max_connections_per_ip;       /* (256) */
  int auth_timeout_ms;    /* a SASL connection not authenticated by then is closed (10000) */
  int request_timeout_ms; /* a request begun and not read whole by then closes it (60000) */
} tarn__klisten_limits;

void tarn__klisten_limits_default(tarn__klisten_limits *l);

/* Parses "HOST:PORT", ":PORT" or "PORT" (host 127.0.0.1 when absent) into
 * host (at least 256 bytes) and *port. TARN_EINVAL when malformed. */
int tarn__klisten_parse_addr(const char *s, char *host, size_t n, int *port);

typedef struct tarn__klisten tarn__klisten;

/* Binds listen (IPv4 address or localhost; port 0: any free port) and starts
 * the I/O thread and the workers, serving node (not owned; it must outlive
 * the listener). TARN_EINVAL for a malformed address or TLS files that do
 * not load (tarn_errmsg says which), TARN_EIO when it cannot be bound. When
 * node->cfg.sasl_mechanisms is set, every connection must authenticate
 * (kafka/sasl.h). */
int tarn__klisten_start(const char *listen, const tarn__klisten_limits *lim, tarn__knode *node,
                        tarn__klisten **out);
/* The bound port. */
int tarn__klisten_port(const tarn__klisten *k);
/* Stops accepting and reading, and lets the workers finish the requests
 * already read. Requests completed later (a produce waiting for the writer)
 * are still answered until tarn__klisten_stop. */
void tarn__klisten_drain(tarn__klisten *k);
/* Drains (when not yet done), writes the responses completed so far for up to
 * two seconds, closes every connection and frees. Every request must have
 * been completed (flush the writer between drain and stop). */
void tarn__klisten_stop(tarn__klisten *k);

#endif
