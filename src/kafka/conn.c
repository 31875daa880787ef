/* Request framing of a Kafka connection (kafka_conn.h). */
#include "kafka/conn.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "kafka/sasl.h"

/* api_key, api_version and correlation_id: the least a request header holds. */
#define MIN_REQUEST 8

int tarn__kconn_feed(tarn__kconn *c, const uint8_t *p, size_t n, size_t max_request,
                     tarn__kbudget *b, size_t *used, uint8_t **frame, size_t *len) {
  size_t i = 0;
  *used = 0;
  if (!c->frame) {
    while (c->size_have < 4 && i < n)
      c->size_be[c->size_have++] = p[i++];
    if (c->size_have < 4) {
      *used = i;
      return TARN__KFEED_MORE;
    }
    uint32_t sz = (uint32_t)c->size_be[0] << 24 | (uint32_t)c->size_be[1] << 16 |
                  (uint32_t)c->size_be[2] << 8 | c->size_be[3];
    /* A negative size reads as above 2^31 here: over any limit. */
    if (sz < MIN_REQUEST || sz > max_request || sz > INT32_MAX) {
      *used = i;
      return TARN__KFEED_BAD;
    }
    /* Issue 33 item 2: the node's budget (queued.max.request.bytes); only
     * the I/O thread adds to it, so the check holds until the add. */
    size_t cur = atomic_load(&b->used);
    if (b->max && cur && cur + sz > b->max) {
      *used = i;
      return TARN__KFEED_WAIT;
    }
    c->frame = malloc(sz);
    if (!c->frame) {
      *used = i;
      return TARN__KFEED_BAD;
    }
    atomic_fetch_add(&b->used, sz);
    c->frame_len = sz;
    c->frame_have = 0;
  }
  size_t take = c->frame_len - c->frame_have;
  if (take > n - i)
    take = n - i;
  if (take) /* p is NULL when fed nothing (an empty stash): memcpy's UB even for 0 bytes */
    memcpy(c->frame + c->frame_have, p + i, take);
  c->frame_have += take;
  i += take;
  *used = i;
  if (c->frame_have < c->frame_len)
    return TARN__KFEED_MORE;
  *frame = c->frame;
  *len = c->frame_len;
  c->frame = NULL;
  c->size_have = 0;
  return TARN__KFEED_FRAME;
}

int tarn__kconn_frame_room(tarn__kconn *c, uint8_t **p, size_t *n) {
  if (!c->frame || c->frame_have >= c->frame_len)
    return 0;
  *p = c->frame + c->frame_have;
  *n = c->frame_len - c->frame_have;
  return 1;
}

/* What an SSL call's result means for the transport. */
static long ssl_result(tarn__kconn *c, int r) {
  if (r > 0)
    return r;
  switch (SSL_get_error(c->ssl, r)) {
  case SSL_ERROR_WANT_READ: c->tls_want_write = 0; return TARN__KIO_AGAIN;
  case SSL_ERROR_WANT_WRITE: c->tls_want_write = 1; return TARN__KIO_AGAIN;
  case SSL_ERROR_ZERO_RETURN: return 0;
  default: return TARN__KIO_FAIL;
  }
}

long tarn__kconn_recv(tarn__kconn *c, uint8_t *p, size_t n) {
  if (c->ssl) {
    ERR_clear_error();
    return ssl_result(c, SSL_read(c->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n));
  }
  for (;;) {
    ssize_t r = recv(c->fd, p, n, 0);
    if (r >= 0)
      return (long)r;
    if (errno == EINTR)
      continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? TARN__KIO_AGAIN : TARN__KIO_FAIL;
  }
}

long tarn__kconn_send(tarn__kconn *c, const uint8_t *p, size_t n) {
  if (c->ssl) {
    ERR_clear_error();
    long r = ssl_result(c, SSL_write(c->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n));
    return r == 0 ? TARN__KIO_FAIL : r;
  }
  for (;;) {
    ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
    if (w >= 0)
      return (long)w;
    if (errno == EINTR)
      continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? TARN__KIO_AGAIN : TARN__KIO_FAIL;
  }
}

int tarn__kconn_handshake(tarn__kconn *c) {
  ERR_clear_error();
  long r = ssl_result(c, SSL_accept(c->ssl));
  if (r > 0)
    c->tls_ready = 1;
  return r > 0 ? 1 : r == TARN__KIO_AGAIN ? 0 : TARN__KIO_FAIL;
}

void tarn__kconn_free(tarn__kconn *c) {
  if (!c)
    return;
  if (c->ssl)
    SSL_free(c->ssl);
  tarn__ksasl_free(c->sasl);
  free(c->frame);
  tarn_buf_free(&c->stash);
  tarn_buf_free(&c->wbuf);
  for (tarn__kslot *s = c->head, *nx; s; s = nx) {
    nx = s->next;
    tarn_buf_free(&s->frame);
    free(s);
  }
  free(c);
}
