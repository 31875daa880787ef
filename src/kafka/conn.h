/* One Kafka client connection of the listener (kafka_listen.c): the framing
 * of requests (a 4-byte big-endian size, then the request) and the queue that
 * puts responses back in request order, whatever order the handlers complete
 * them in. Shared between the I/O thread and the threads that complete
 * requests, under the listener's mutex (see the fields). */
#ifndef TARN_KAFKA_CONN_H
#define TARN_KAFKA_CONN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kafka/api.h"
#include "tarn/buf.h"

struct kwork;
struct ssl_st;
struct tarn__ksasl;

/* One request's place in its connection's order. */
typedef struct tarn__kslot {
  int done;       /* its completion arrived */
  int how;        /* TARN__KREQ_* */
  tarn_buf frame; /* the response (TARN__KREQ_RESPONSE) */
  struct tarn__kslot *next;
} tarn__kslot;

typedef struct tarn__kconn {
  int fd;
  uint32_t addr; /* the client's IPv4 address (network order): max_connections_per_ip */
  char peer[64];
  /* The transport (I/O thread only): plain TCP, or TLS when ssl is set (its
   * handshake done once tls_ready). */
  struct ssl_st *ssl;
  int tls_ready;
  int tls_want_write;  /* the handshake waits to write, not to read */
  int64_t accepted_ms; /* monotonic: the handshake's deadline counts from it */
  /* The connection's SASL state (kafka/sasl.h), NULL when the listener
   * requires none; used by its requests, one at a time. */
  struct tarn__ksasl *sasl;
  /* Under the listener's mutex: */
  int refs;   /* the I/O thread's, one per request in flight, one while on the ready list */
  int closed; /* the socket is closed; completions only free */
  int on_ready;
  struct tarn__kconn *ready_next;
  tarn__kslot *head, *tail; /* in request order */
  size_t req_bytes;         /* bytes of requests read and not completed */
  /* One request of a connection runs at a time, in the order read (as Kafka
   * mutes a connection while it handles its request): two produces to one
   * partition are appended in the order sent, and a request sees the effects
   * of the one before. A handler that completes later (a produce waiting for
   * its acknowledgement) lets the next one run as soon as it returns. */
  int running;                         /* a request of c is queued for or held by a worker */
  struct kwork *wait_head, *wait_tail; /* read, waiting for the running one */
  size_t resp_bytes;                   /* bytes of completed responses not yet moved to wbuf */
  /* I/O thread only: */
  uint8_t size_be[4];
  size_t size_have;
  uint8_t *frame; /* the request being read */
  size_t frame_len, frame_have;
  tarn_buf wbuf; /* responses being written */
  size_t woff;
  uint64_t next_seq;
  int reading, writing;   /* EPOLLIN / EPOLLOUT registered */
  int closing;            /* close once wbuf is written */
  int64_t last_io;        /* monotonic ms of the last whole request read or response
                           * byte written (issue 33: a trickle of bytes does not count) */
  int64_t req_started_ms; /* monotonic ms of the first byte of the request being read */
  int budget_wait;        /* its frame waits for the node's in-flight budget ... */
  tarn_buf stash;         /* ... with the bytes read after its size prefix */
  int authed; /* under the listener's mutex: SASL done (set by the completion of SaslAuthenticate)
               */
  struct tarn__kconn *prev, *next; /* the listener's open connections */
} tarn__kconn;

/* What one feed of bytes produced. */
enum {
  TARN__KFEED_MORE = 0,  /* every byte consumed, no frame complete */
  TARN__KFEED_FRAME = 1, /* a frame is complete: *frame, *len (malloc'd, moved to the caller) */
  TARN__KFEED_BAD = 2,   /* the size prefix is negative, too small or over the limit */
  TARN__KFEED_WAIT = 3   /* the frame would pass the node's in-flight budget: not allocated;
                          * feed again (0 bytes will do) once requests complete */
};

/* The node's request bytes in flight (frames allocated and not freed) and
 * their budget (0: none); one frame is always admitted when none is in
 * flight, so a request larger than the budget is still served. */
typedef struct tarn__kbudget {
  atomic_size_t used;
  size_t max;
} tarn__kbudget;

/* Consumes bytes p[0..n) into c's framing state, up to the end of the first
 * frame completed: *used gets the bytes consumed. A frame shorter than a
 * request header (8 bytes) or longer than max_request is BAD, checked on its
 * size prefix before anything is allocated; its allocation is counted in b
 * (WAIT when over b's budget). */
int tarn__kconn_feed(tarn__kconn *c, const uint8_t *p, size_t n, size_t max_request,
                     tarn__kbudget *b, size_t *used, uint8_t **frame, size_t *len);

/* The rest of the request being read, when its size is known: 1 and
 * where its missing n bytes go (the caller reads into them, adds what it
 * read to c->frame_have, then feeds 0 bytes to complete it), else 0. */
int tarn__kconn_frame_room(tarn__kconn *c, uint8_t **p, size_t *n);

/* The transport: plain recv/send on c->fd, or SSL_read/SSL_write. recv: bytes
 * read, 0 the peer closed, TARN__KIO_AGAIN nothing now, TARN__KIO_FAIL
 * the connection failed; send: bytes written or the same codes. */
enum { TARN__KIO_AGAIN = -1, TARN__KIO_FAIL = -2 };
long tarn__kconn_recv(tarn__kconn *c, uint8_t *p, size_t n);
long tarn__kconn_send(tarn__kconn *c, const uint8_t *p, size_t n);
/* One step of the TLS handshake: 1 done, 0 waiting (c->tls_want_write says
 * for what), TARN__KIO_FAIL failed (a plaintext client, a bad hello). */
int tarn__kconn_handshake(tarn__kconn *c);

/* Frees what c holds (the socket is closed by the caller). */
void tarn__kconn_free(tarn__kconn *c);

#endif
