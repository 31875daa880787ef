/* The Kafka listener of a node (listen.h). */
#include "kafka/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kafka/sasl.h"
#include "kafka/proto/kproto.h"
#include "kafka/conn.h"
#include "tarn/error.h"
#include "tarn/kafka_node.h"
#include "tarn/metrics.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/secret_file.h"
#include "util/planted.h"

/* A request handed to the workers: the request, the slot its completion fills. */
typedef struct kwork {
  tarn__kreq req;
  tarn__kconn *c;
  tarn__kslot *slot;
  struct tarn__klisten *k;
  struct kwork *next;
} kwork;

struct tarn__klisten {
  tarn__knode *node;
  tarn__klisten_limits lim;
  SSL_CTX *tls; /* NULL: plain TCP */
  int lfd, efd, epfd, port;
  pthread_t io;
  pthread_t *workers;
  int nworkers;
  atomic_int draining, stopping;
  int drained;        /* drain's work done (the caller's thread only) */
  pthread_mutex_t mu; /* the connections' shared fields, the queue, the ready list */
  pthread_cond_t work_cv;
  pthread_cond_t done_cv; /* a completion arrived (order_waiters > 0) */
  int order_waiters;      /* workers holding a Fetch until the requests before it complete */
  kwork *qhead, *qtail;   /* requests waiting for a worker */
  tarn__kconn *ready;     /* connections with completions to move out */
  tarn__kconn *conns;     /* open connections (I/O thread only) */
  int nconns;
  tarn__kbudget budget; /* request bytes in flight (issue 33 item 2) */
  int budget_waiters;   /* connections with budget_wait (I/O thread only) */
};

void tarn__klisten_limits_default(tarn__klisten_limits *l) {
  l->max_connections = 1024;
  l->max_request_bytes = TARN_KAFKA_DEFAULT_MAX_REQUEST_BYTES;
  l->max_conn_bytes = (size_t)128 << 20;
  l->idle_ms = 600000;
  l->workers = 16;
  l->tls_cert = l->tls_key = NULL;
  l->tls_handshake_ms = 10000;
  l->max_preauth_request_bytes = (size_t)512 << 10;
  l->max_inflight_bytes = (size_t)512 << 20;
  l->max_connections_per_ip = 256;
  l->auth_timeout_ms = 10000;
  l->request_timeout_ms = 60000;
}

/* The server's TLS context from PEM files: TLS 1.2 at least; partial writes
 * and a moving write buffer, as wbuf grows between retries of a write. */
static int tls_context(const char *cert, const char *key, SSL_CTX **out) {
  *out = NULL;
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx)
    return tarn__err(TARN_ENOMEM, "Kafka TLS: no TLS context");
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  char why[256] = "";
  const char *bad = NULL;
  /* issue 33: the key file drew no warning when others may read it */
  tarn__file_mode_warn(key, "the Kafka listener's TLS key file");
  if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
    bad = cert;
  else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
           SSL_CTX_check_private_key(ctx) != 1)
    bad = key;
  if (bad) {
    ERR_error_string_n(ERR_get_error(), why, sizeof why);
    SSL_CTX_free(ctx);
    return tarn__err(TARN_EINVAL, "Kafka TLS: %s does not load: %s", bad, why);
  }
  *out = ctx;
  return 0;
}

int tarn__klisten_parse_addr(const char *s, char *host, size_t n, int *port) {
  const char *colon = strrchr(s, ':');
  const char *ps = colon ? colon + 1 : s;
  size_t hl = colon ? (size_t)(colon - s) : 0;
  if (hl >= n)
    return TARN_EINVAL;
  if (hl)
    snprintf(host, n, "%.*s", (int)hl, s);
  else
    snprintf(host, n, "127.0.0.1");
  char *end;
  long p = strtol(ps, &end, 10);
  if (!*ps || *end || p < 0 || p > 65535)
    return TARN_EINVAL;
  *port = (int)p;
  return 0;
}

static void wake(tarn__klisten *k) {
  uint64_t one = 1;
  ssize_t w = write(k->efd, &one, sizeof one);
  (void)w; /* a full counter still wakes the loop */
}

/* Drops one reference; frees c at the last one. Called with k->mu held;
 * returns c when the caller must free it after unlocking. */
static tarn__kconn *unref_locked(tarn__kconn *c) { return --c->refs == 0 ? c : NULL; }

/* The connection's side of a completion (tarn__kreq_done_fn), from any thread. */
static void conn_done(tarn__kreq *req, int how, tarn_buf *frame) {
  kwork *w = (kwork *)req; /* req is the first member */
  tarn__klisten *k = w->k;
  tarn__kconn *c = w->c;
  pthread_mutex_lock(&k->mu);
  tarn__kslot *s = w->slot;
  s->done = 1;
  s->how = how;
  if (k->order_waiters)
    pthread_cond_broadcast(&k->done_cv);
  if (how == TARN__KREQ_RESPONSE && frame) {
    s->frame = *frame;
    *frame = (tarn_buf)TARN_BUF_INIT;
    c->resp_bytes += s->frame.len;
  }
  c->req_bytes -= req->frame_len;
  atomic_fetch_sub(&k->budget.used, req->frame_len);
  /* Issue 33 item 2: larger requests once the connection has authenticated.
   * Set here, before the SaslAuthenticate response can reach the client,
   * by the thread that completes it (a request worker, or for PLAIN a
   * hashing thread of the guard, item 4: after it set the state). */
  if (c->sasl && !c->authed)
    c->authed = tarn__ksasl_authenticated(c->sasl);
  if (!c->on_ready) {
    c->on_ready = 1;
    c->refs++;
    c->ready_next = k->ready;
    k->ready = c;
  }
  tarn__kconn *dead = unref_locked(c);
  pthread_mutex_unlock(&k->mu);
  if (frame)
    tarn_buf_free(frame);
  free((void *)req->frame);
  free(w);
  tarn__kconn_free(dead); /* never: the ready list holds a reference */
  wake(k);
}

/* Under k->mu: hands w to the workers. */
static void enqueue_locked(tarn__klisten *k, kwork *w) {
  w->next = NULL;
  if (k->qtail)
    k->qtail->next = w;
  else
    k->qhead = w;
  k->qtail = w;
  pthread_cond_signal(&k->work_cv);
}

/* Under k->mu: whether a request before slot s of c is not yet complete. */
static int earlier_pending_locked(const tarn__kconn *c, const tarn__kslot *s) {
  for (const tarn__kslot *x = c->head; x && x != s; x = x->next)
    if (!x->done)
      return 1;
  return 0;
}

static void *worker(void *arg) {
  tarn__klisten *k = arg;
  pthread_mutex_lock(&k->mu);
  for (;;) {
    while (!k->qhead && !atomic_load(&k->draining))
      pthread_cond_wait(&k->work_cv, &k->mu);
    kwork *w = k->qhead;
    if (!w)
      break; /* draining and nothing left */
    k->qhead = w->next;
    if (!k->qhead)
      k->qtail = NULL;
    tarn__kconn *c = w->c; /* w may be freed by its completion inside dispatch */
    /* A Fetch starts once every request before it on its connection is
     * answered, so that it sees a produce pipelined before it (Kafka mutes
     * the connection until the produce's response); other requests start
     * when the handler before them returns, so pipelined produces still
     * share the writer's batches. */
    if (w->req.frame_len >= 2 && w->req.frame[0] == 0 && w->req.frame[1] == TARN__KAPI_FETCH) {
      k->order_waiters++;
      while (earlier_pending_locked(c, w->slot))
        pthread_cond_wait(&k->done_cv, &k->mu);
      k->order_waiters--;
    }
    pthread_mutex_unlock(&k->mu);
    tarn__kreq_dispatch(k->node, &w->req);
    pthread_mutex_lock(&k->mu);
    /* The handler returned: the connection's next request may run. The
     * running reference passes to it, or is dropped. */
    kwork *nx = c->wait_head;
    if (nx) {
      c->wait_head = nx->next;
      if (!c->wait_head)
        c->wait_tail = NULL;
      enqueue_locked(k, nx);
    } else {
      c->running = 0;
      tarn__kconn *dead = unref_locked(c);
      if (dead) {
        pthread_mutex_unlock(&k->mu);
        tarn__kconn_free(dead);
        pthread_mutex_lock(&k->mu);
      }
    }
  }
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

static void set_events(tarn__klisten *k, tarn__kconn *c, int reading, int writing) {
  if (c->reading == reading && c->writing == writing)
    return;
  struct epoll_event ev = {.events = (reading ? EPOLLIN : 0u) | (writing ? EPOLLOUT : 0u),
                           .data.ptr = c};
  epoll_ctl(k->epfd, EPOLL_CTL_MOD, c->fd, &ev);
  c->reading = reading;
  c->writing = writing;
}

static void conn_close(tarn__klisten *k, tarn__kconn *c) {
  epoll_ctl(k->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    k->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  k->nconns--;
  tarn_metrics_set("tarn_kafka_connections", k->nconns, NULL);
  if (c->frame) { /* the request being read leaves the budget */
    atomic_fetch_sub(&k->budget.used, c->frame_len);
    free(c->frame);
    c->frame = NULL;
  }
  if (c->budget_wait) {
    c->budget_wait = 0;
    k->budget_waiters--;
  }
  pthread_mutex_lock(&k->mu);
  c->closed = 1;
  /* Completed slots go now; the others when their completions arrive. */
  tarn__kslot **pp = &c->head, *last = NULL;
  while (*pp) {
    tarn__kslot *s = *pp;
    if (s->done) {
      *pp = s->next;
      c->resp_bytes -= s->frame.len;
      tarn_buf_free(&s->frame);
      free(s);
    } else {
      last = s;
      pp = &s->next;
    }
  }
  c->tail = last;
  tarn__kconn *dead = unref_locked(c);
  pthread_mutex_unlock(&k->mu);
  tarn__kconn_free(dead);
}

static size_t held(const tarn__kconn *c) {
  return c->req_bytes + c->resp_bytes + (c->wbuf.len - c->woff);
}

/* Writes what wbuf holds; 0, or -1 when the connection failed. */
static int conn_write(tarn__klisten *k, tarn__kconn *c) {
  (void)k;
  while (c->woff < c->wbuf.len) {
    long w = tarn__kconn_send(c, c->wbuf.data + c->woff, c->wbuf.len - c->woff);
    if (w == TARN__KIO_AGAIN)
      break;
    if (w < 0)
      return -1;
    c->woff += (size_t)w;
    c->last_io = tarn__mono_ms();
  }
  if (c->woff == c->wbuf.len) {
    tarn_buf_reset(&c->wbuf);
    c->woff = 0;
  }
  return 0;
}

/* Moves the completed responses at the head of c's order into wbuf (a slot
 * not yet done holds every later one back: responses go out in request
 * order), writes, and updates what epoll waits for. */
static void conn_flush(tarn__klisten *k, tarn__kconn *c) {
  pthread_mutex_lock(&k->mu);
  while (c->head && c->head->done && !c->closing) {
    tarn__kslot *s = c->head;
    c->head = s->next;
    if (!c->head)
      c->tail = NULL;
    size_t flen = s->frame.len;
    c->resp_bytes -= flen;
    if (s->how == TARN__KREQ_RESPONSE && flen) {
      if (c->wbuf.len == 0) { /* take the buffer itself: no copy */
        tarn_buf_free(&c->wbuf);
        c->wbuf = s->frame;
        c->woff = 0;
        s->frame = (tarn_buf)TARN_BUF_INIT;
      } else if (tarn_buf_append(&c->wbuf, s->frame.data, s->frame.len)) {
        c->closing = 1; /* out of memory: the client learns by a closed connection */
      }
    } else if (s->how == TARN__KREQ_CLOSE) {
      c->closing = 1;
    }
    tarn_buf_free(&s->frame);
    free(s);
  }
  pthread_mutex_unlock(&k->mu);
  if (conn_write(k, c)) {
    conn_close(k, c);
    return;
  }
  int pending = c->woff < c->wbuf.len;
  if (c->closing && !pending) {
    conn_close(k, c);
    return;
  }
  pthread_mutex_lock(&k->mu);
  int over = held(c) > k->lim.max_conn_bytes;
  pthread_mutex_unlock(&k->mu);
  set_events(k, c, !c->closing && !over && !c->budget_wait && !atomic_load(&k->draining), pending);
}

/* Queues a decoded frame for the workers, in c's order. */
static int conn_request(tarn__klisten *k, tarn__kconn *c, uint8_t *frame, size_t len) {
  kwork *w = NULL;
  tarn__kslot *s = NULL;
  /* the workers may be gone while draining: read no more */
  if (atomic_load(&k->draining) || !(w = calloc(1, sizeof *w)) || !(s = calloc(1, sizeof *s))) {
    free(w);
    free(s);
    free(frame);
    atomic_fetch_sub(&k->budget.used, len);
    return -1;
  }
  c->last_io = tarn__mono_ms(); /* a whole request: the idle clock restarts (issue 33) */
  w->k = k;
  w->c = c;
  w->slot = s;
  w->req.frame = frame;
  w->req.frame_len = len;
  w->req.conn = c;
  w->req.seq = c->next_seq++;
  w->req.done = conn_done;
  w->req.sasl = c->sasl;
  snprintf(w->req.peer, sizeof w->req.peer, "%s", c->peer);
  pthread_mutex_lock(&k->mu);
  if (c->tail)
    c->tail->next = s;
  else
    c->head = s;
  c->tail = s;
  c->refs++;
  c->req_bytes += len;
  if (c->running) { /* after the one running (worker passes it on) */
    if (c->wait_tail)
      c->wait_tail->next = w;
    else
      c->wait_head = w;
    c->wait_tail = w;
  } else {
    c->running = 1;
    c->refs++; /* the running reference */
    enqueue_locked(k, w);
  }
  pthread_mutex_unlock(&k->mu);
  tarn_metrics_inc("tarn_kafka_requests_read_total", 1, NULL);
  return 0;
}

/* A bad frame: close once the responses of the requests before it are out. */
static void conn_bad(tarn__klisten *k, tarn__kconn *c, const char *why) {
  tarn__klog(k->node, TARN_KAFKA_LOG_DEBUG, "kafka connection closed", "peer", c->peer, "reason",
             why, NULL);
  tarn_metrics_inc("tarn_kafka_bad_frames_total", 1, NULL);
  tarn__kslot *s = calloc(1, sizeof *s);
  pthread_mutex_lock(&k->mu);
  if (s) {
    s->done = 1;
    s->how = TARN__KREQ_CLOSE;
    if (c->tail)
      c->tail->next = s;
    else
      c->head = s;
    c->tail = s;
  }
  pthread_mutex_unlock(&k->mu);
  if (!s)
    c->closing = 1;
  set_events(k, c, 0, c->writing);
}

/* The largest request c may send now: before a SASL connection has
 * authenticated, Kafka's bound for unauthenticated requests (issue 33 item
 * 2, CVE-2022-34917: a 100 MiB size prefix is refused before anything is
 * allocated), then socket.request.max.bytes. */
static size_t request_limit(tarn__klisten *k, tarn__kconn *c) {
  if (!c->sasl || TARN__PLANTED(TARN__BUG_KAFKA_PREAUTH_UNBOUNDED))
    return k->lim.max_request_bytes;
  pthread_mutex_lock(&k->mu);
  int authed = c->authed;
  pthread_mutex_unlock(&k->mu);
  return authed || k->lim.max_preauth_request_bytes >= k->lim.max_request_bytes
             ? k->lim.max_request_bytes
             : k->lim.max_preauth_request_bytes;
}

/* Feeds p[0..n) (once with n = 0 after a direct read or to retry a frame
 * that waited for the budget) into c's framing: 0 every byte taken, 1 the
 * next frame waits for the budget (the bytes after its prefix kept in
 * c->stash, reading paused), -1 c is closing. */
static int feed_bytes(tarn__klisten *k, tarn__kconn *c, const uint8_t *p, size_t n) {
  size_t off = 0;
  for (int once = 1; off < n || once; once = 0) {
    size_t used, len;
    uint8_t *frame;
    if (!c->frame && (c->size_have > 0 || off < n) && !c->req_started_ms)
      c->req_started_ms = tarn__mono_ms();
    int f =
        tarn__kconn_feed(c, p + off, n - off, request_limit(k, c), &k->budget, &used, &frame, &len);
    off += used;
    if (f == TARN__KFEED_BAD) {
      conn_bad(k, c, "request size out of bounds");
      conn_flush(k, c);
      return -1;
    }
    if (f == TARN__KFEED_WAIT) {
      tarn_buf_reset(&c->stash);
      if (tarn_buf_append(&c->stash, p + off, n - off)) {
        conn_bad(k, c, "out of memory");
        conn_flush(k, c);
        return -1;
      }
      if (!c->budget_wait) {
        c->budget_wait = 1;
        k->budget_waiters++;
        tarn_metrics_inc("tarn_kafka_budget_waits_total", 1, NULL);
      }
      set_events(k, c, 0, c->writing);
      return 1;
    }
    if (f == TARN__KFEED_FRAME) {
      c->req_started_ms = c->size_have ? c->req_started_ms : 0;
      if (conn_request(k, c, frame, len)) {
        conn_bad(k, c, "out of memory, or the node is stopping");
        conn_flush(k, c);
        return -1;
      }
    }
  }
  return 0;
}

static void conn_read(tarn__klisten *k, tarn__kconn *c) {
  uint8_t buf[65536];
  if (c->budget_wait) { /* retried: the budget may have room now */
    c->budget_wait = 0;
    k->budget_waiters--;
    tarn_buf st = c->stash;
    c->stash = (tarn_buf)TARN_BUF_INIT;
    int r = feed_bytes(k, c, st.data, st.len);
    tarn_buf_free(&st);
    if (r)
      return;
    set_events(k, c, 1, c->writing);
  }
  for (;;) {
    /* The rest of a large request (a produce) goes straight into its
     * frame, not through buf: one copy of its bytes fewer. */
    uint8_t *room;
    size_t rn = 0;
    int direct = tarn__kconn_frame_room(c, &room, &rn) && rn >= sizeof buf / 4;
    long r = direct ? tarn__kconn_recv(c, room, rn) : tarn__kconn_recv(c, buf, sizeof buf);
    if (r == TARN__KIO_AGAIN)
      break;
    if (r <= 0) { /* the client closed or the connection failed */
      conn_close(k, c);
      return;
    }
    if (direct) {
      c->frame_have += (size_t)r;
      r = 0;
    }
    if (feed_bytes(k, c, buf, (size_t)r))
      return;
    pthread_mutex_lock(&k->mu);
    int over = held(c) > k->lim.max_conn_bytes;
    pthread_mutex_unlock(&k->mu);
    if (over) { /* stop reading until responses drain (conn_flush resumes) */
      set_events(k, c, 0, c->writing);
      return;
    }
  }
}

/* One step of a connection's TLS handshake; once done, whatever the client
 * sent after it is read. A client that is not speaking TLS (plaintext Kafka)
 * fails here and is closed. */
static void tls_step(tarn__klisten *k, tarn__kconn *c) {
  int h = tarn__kconn_handshake(c);
  if (h < 0) {
    char why[256];
    ERR_error_string_n(ERR_get_error(), why, sizeof why);
    tarn__klog(k->node, TARN_KAFKA_LOG_DEBUG, "kafka connection closed", "peer", c->peer, "reason",
               "TLS handshake failed", "detail", why, NULL);
    tarn_metrics_inc("tarn_kafka_tls_failed_total", 1, NULL);
    conn_close(k, c);
  } else if (h == 0) {
    set_events(k, c, !c->tls_want_write, c->tls_want_write);
  } else {
    set_events(k, c, 1, 0);
    conn_read(k, c);
  }
}

/* Issue 33 item 3: one address may hold max_connections_per_ip (Kafka's
 * max.connections.per.ip), so that it cannot take every connection. */
static int over_per_ip(tarn__klisten *k, uint32_t addr) {
  if (k->lim.max_connections_per_ip <= 0 || TARN__PLANTED(TARN__BUG_KAFKA_PER_IP_UNLIMITED))
    return 0;
  int n = 0;
  for (tarn__kconn *c = k->conns; c; c = c->next)
    n += c->addr == addr;
  return n >= k->lim.max_connections_per_ip;
}

static void accept_all(tarn__klisten *k) {
  for (;;) {
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int fd = accept(k->lfd, (struct sockaddr *)&sa, &sl);
    if (fd < 0)
      return;
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC)) {
      close(fd);
      continue;
    }
    if (k->nconns >= k->lim.max_connections || atomic_load(&k->draining) ||
        over_per_ip(k, sa.sin_addr.s_addr)) {
      tarn_metrics_inc("tarn_kafka_connections_refused_total", 1, NULL);
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    tarn__kconn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      continue;
    }
    c->fd = fd;
    c->addr = sa.sin_addr.s_addr;
    c->refs = 1;
    c->accepted_ms = tarn__mono_ms();
    if ((k->tls && (!(c->ssl = SSL_new(k->tls)) || SSL_set_fd(c->ssl, fd) != 1)) ||
        (k->node->cfg.sasl_mechanisms && !(c->sasl = tarn__ksasl_new()))) {
      close(fd);
      tarn__kconn_free(c);
      continue;
    }
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(sa.sin_port));
    c->last_io = tarn__mono_ms();
    c->reading = 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(k->epfd, EPOLL_CTL_ADD, fd, &ev)) {
      close(fd);
      tarn__kconn_free(c);
      continue;
    }
    c->next = k->conns;
    if (k->conns)
      k->conns->prev = c;
    k->conns = c;
    k->nconns++;
    tarn_metrics_inc("tarn_kafka_connections_total", 1, NULL);
    tarn_metrics_set("tarn_kafka_connections", k->nconns, NULL);
  }
}

static void take_ready(tarn__klisten *k) {
  pthread_mutex_lock(&k->mu);
  tarn__kconn *r = k->ready;
  k->ready = NULL;
  pthread_mutex_unlock(&k->mu);
  while (r) {
    tarn__kconn *c = r, *dead;
    r = r->ready_next;
    pthread_mutex_lock(&k->mu);
    c->on_ready = 0;
    int closed = c->closed;
    if (closed) { /* completions of a closed connection: nothing to send */
      while (c->head && c->head->done) {
        tarn__kslot *s = c->head;
        c->head = s->next;
        c->resp_bytes -= s->frame.len;
        tarn_buf_free(&s->frame);
        free(s);
      }
      if (!c->head)
        c->tail = NULL;
    }
    c->refs++;              /* held across conn_flush, which may close it */
    dead = unref_locked(c); /* the ready list's */
    pthread_mutex_unlock(&k->mu);
    (void)dead;
    if (!closed)
      conn_flush(k, c);
    pthread_mutex_lock(&k->mu);
    dead = unref_locked(c);
    pthread_mutex_unlock(&k->mu);
    tarn__kconn_free(dead);
  }
}

/* Closes connections idle past the limit: nothing in flight, nothing to write. */
static void close_idle(tarn__klisten *k) {
  int64_t now = tarn__mono_ms();
  for (tarn__kconn *c = k->conns, *nx; c; c = nx) {
    nx = c->next;
    pthread_mutex_lock(&k->mu);
    int busy = c->head != NULL, authed = c->authed;
    pthread_mutex_unlock(&k->mu);
    /* Issue 33 item 3: a SASL connection has auth_timeout_ms from its
     * accept to authenticate; a request has request_timeout_ms from its
     * first byte to its last (bytes trickled in do not extend it). */
    const char *why = NULL;
    if (c->sasl && !authed && k->lim.auth_timeout_ms > 0 &&
        now - c->accepted_ms >= k->lim.auth_timeout_ms &&
        !TARN__PLANTED(TARN__BUG_KAFKA_NO_AUTH_DEADLINE))
      why = "not authenticated in time";
    else if (c->req_started_ms && !c->budget_wait && k->lim.request_timeout_ms > 0 &&
             !TARN__PLANTED(TARN__BUG_KAFKA_TRICKLE_KEEPS_ALIVE) &&
             now - c->req_started_ms >= k->lim.request_timeout_ms)
      why = "request not read whole in time";
    if (why) {
      tarn__klog(k->node, TARN_KAFKA_LOG_DEBUG, "kafka connection closed", "peer", c->peer,
                 "reason", why, NULL);
      tarn_metrics_inc("tarn_kafka_deadline_closed_total", 1, NULL);
      conn_close(k, c);
      continue;
    }
    if (c->ssl && !c->tls_ready && now - c->accepted_ms >= k->lim.tls_handshake_ms) {
      tarn__klog(k->node, TARN_KAFKA_LOG_DEBUG, "kafka connection closed", "peer", c->peer,
                 "reason", "no TLS handshake in time", NULL);
      tarn_metrics_inc("tarn_kafka_tls_failed_total", 1, NULL);
      conn_close(k, c);
      continue;
    }
    if (k->lim.idle_ms > 0 && !busy && c->woff == c->wbuf.len &&
        now - c->last_io >= k->lim.idle_ms) {
      tarn__klog(k->node, TARN_KAFKA_LOG_DEBUG, "kafka connection idle", "peer", c->peer, NULL);
      tarn_metrics_inc("tarn_kafka_idle_closed_total", 1, NULL);
      conn_close(k, c);
    }
  }
}

/* While draining: a connection with nothing in flight and nothing left to
 * write is closed at once. Its requests not yet read would never be (the
 * listener reads no more), and a client waits for their answers until its
 * request timeout (librdkafka: up to message.timeout.ms) while the node's
 * express logs leave through Finish; a closed connection sends it to the
 * Metadata that names the next leader now. Requests in flight (an express
 * produce waiting for its slot's W copies) keep theirs open until answered. */
static void close_drained(tarn__klisten *k) {
  for (tarn__kconn *c = k->conns, *nx; c; c = nx) {
    nx = c->next;
    pthread_mutex_lock(&k->mu);
    int busy = c->head != NULL;
    pthread_mutex_unlock(&k->mu);
    if (!busy && c->woff == c->wbuf.len) {
      tarn__klog(k->node, TARN_KAFKA_LOG_DEBUG, "kafka connection closed", "peer", c->peer,
                 "reason", "draining", NULL);
      conn_close(k, c);
    }
  }
}

/* While stopping: 1 when some connection still has a response to write. */
static int any_pending(tarn__klisten *k) {
  int p = 0;
  pthread_mutex_lock(&k->mu);
  for (tarn__kconn *c = k->conns; c && !p; c = c->next)
    p = (c->head && c->head->done) || c->woff < c->wbuf.len || k->ready;
  pthread_mutex_unlock(&k->mu);
  return p;
}

/* Retries the connections whose frames waited for the budget, while it has
 * room (a completion woke the loop). */
static void budget_resume(tarn__klisten *k) {
  for (tarn__kconn *c = k->conns, *nx; c && k->budget_waiters; c = nx) {
    nx = c->next;
    size_t used = atomic_load(&k->budget.used);
    if (used && k->budget.max && used >= k->budget.max)
      return;
    if (c->budget_wait) {
      pthread_mutex_lock(&k->mu);
      c->refs++;
      pthread_mutex_unlock(&k->mu);
      conn_read(k, c);
      pthread_mutex_lock(&k->mu);
      tarn__kconn *dead = unref_locked(c);
      pthread_mutex_unlock(&k->mu);
      tarn__kconn_free(dead);
    }
  }
}

static void *io_loop(void *arg) {
  tarn__klisten *k = arg;
  int listening = 1;
  int64_t stop_deadline = -1;
  /* Connections past a deadline are looked for at least 4 times per the
   * shortest one (idle, login, request read). */
  int tick = k->lim.idle_ms / 4;
  if (k->node->cfg.sasl_mechanisms && k->lim.auth_timeout_ms > 0 &&
      k->lim.auth_timeout_ms / 4 < tick)
    tick = k->lim.auth_timeout_ms / 4;
  if (k->lim.request_timeout_ms > 0 && k->lim.request_timeout_ms / 4 < tick)
    tick = k->lim.request_timeout_ms / 4;
  tick = tick < 10 ? 10 : tick > 1000 ? 1000 : tick;
  for (;;) {
    if (listening && atomic_load(&k->draining)) {
      /* Closed, not only unwatched: a client that connects now is refused
       * and asks another node, instead of waiting in the backlog for
       * answers that never come (until its request timeout, 60 s). */
      epoll_ctl(k->epfd, EPOLL_CTL_DEL, k->lfd, NULL);
      close(k->lfd);
      k->lfd = -1;
      listening = 0;
      for (tarn__kconn *c = k->conns; c; c = c->next)
        set_events(k, c, 0, c->writing);
      close_drained(k); /* now, not after the next tick */
    }
    if (atomic_load(&k->stopping)) {
      if (stop_deadline < 0)
        stop_deadline = tarn__mono_ms() + 2000;
      if (!any_pending(k) || tarn__mono_ms() >= stop_deadline)
        break;
    }
    struct epoll_event evs[64];
    int n = epoll_wait(k->epfd, evs, 64, atomic_load(&k->stopping) ? 20 : tick);
    for (int i = 0; i < n; i++) {
      void *p = evs[i].data.ptr;
      if (p == &k->lfd) {
        accept_all(k);
      } else if (p == &k->efd) {
        uint64_t v;
        ssize_t r = read(k->efd, &v, sizeof v);
        (void)r;
      } else {
        tarn__kconn *c = p;
        /* c may be closed by an earlier event of this batch only through
         * conn_close, which deletes it from epoll; the batch was taken
         * before, so events of a closed connection are skipped by flags. */
        pthread_mutex_lock(&k->mu);
        c->refs++;
        pthread_mutex_unlock(&k->mu);
        if (!c->closed && (evs[i].events & (EPOLLERR | EPOLLHUP)) && !(evs[i].events & EPOLLIN))
          conn_close(k, c);
        if (!c->closed && c->ssl && !c->tls_ready)
          tls_step(k, c);
        else if (!c->closed && (evs[i].events & EPOLLIN))
          conn_read(k, c);
        if (!c->closed && (evs[i].events & EPOLLOUT))
          conn_flush(k, c);
        pthread_mutex_lock(&k->mu);
        tarn__kconn *dead = unref_locked(c);
        pthread_mutex_unlock(&k->mu);
        tarn__kconn_free(dead);
      }
    }
    take_ready(k);
    if (k->budget_waiters && listening)
      budget_resume(k);
    if (!listening)
      close_drained(k);
    else
      close_idle(k);
  }
  return NULL;
}

/* Frees k once its threads are joined: its descriptors, locks and TLS context. */
static void listener_free(tarn__klisten *k) {
  free(k->workers);
  if (k->lfd >= 0) /* the I/O thread closed it when the drain began */
    close(k->lfd);
  close(k->efd);
  close(k->epfd);
  pthread_mutex_destroy(&k->mu);
  pthread_cond_destroy(&k->work_cv);
  SSL_CTX_free(k->tls);
  pthread_cond_destroy(&k->done_cv);
  free(k);
}

/* The listening socket bound to sa (the port chosen by the kernel read back
 * into k->port), the wake-up eventfd and the epoll set; on failure nothing
 * stays open. */
static int open_sockets(tarn__klisten *k, struct sockaddr_in *sa, const char *addr) {
  k->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (k->lfd < 0 || setsockopt(k->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(k->lfd, (struct sockaddr *)sa, sizeof *sa) || listen(k->lfd, 128)) {
    int rc = tarn__errno(errno, "Kafka listen %s: the address is taken or cannot be bound", addr);
    if (k->lfd >= 0)
      close(k->lfd);
    return rc == TARN_ENOMEM ? rc : TARN_EIO;
  }
  socklen_t sl = sizeof *sa;
  getsockname(k->lfd, (struct sockaddr *)sa, &sl);
  k->port = ntohs(sa->sin_port);
  k->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  k->epfd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event el = {.events = EPOLLIN, .data.ptr = &k->lfd};
  struct epoll_event ee = {.events = EPOLLIN, .data.ptr = &k->efd};
  if (k->efd < 0 || k->epfd < 0 || epoll_ctl(k->epfd, EPOLL_CTL_ADD, k->lfd, &el) ||
      epoll_ctl(k->epfd, EPOLL_CTL_ADD, k->efd, &ee)) {
    close(k->lfd);
    if (k->efd >= 0)
      close(k->efd);
    if (k->epfd >= 0)
      close(k->epfd);
    return TARN_EIO;
  }
  return 0;
}

int tarn__klisten_start(const char *addr, const tarn__klisten_limits *lim, tarn__knode *node,
                        tarn__klisten **out) {
  *out = NULL;
  char host[256];
  int port;
  if (tarn__klisten_parse_addr(addr, host, sizeof host, &port))
    return tarn__err(TARN_EINVAL, "Kafka listen %s: not HOST:PORT, :PORT or PORT", addr);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (strcmp(host, "0.0.0.0") == 0)
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  else if (strcmp(host, "localhost") == 0)
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  else if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
    return tarn__err(TARN_EINVAL, "Kafka listen %s: an IPv4 host", addr);
  tarn__klisten *k = calloc(1, sizeof *k);
  if (!k)
    return TARN_ENOMEM;
  k->node = node;
  if (lim)
    k->lim = *lim;
  else
    tarn__klisten_limits_default(&k->lim);
  if (k->lim.workers < 1)
    k->lim.workers = 1;
  if (k->lim.tls_handshake_ms <= 0)
    k->lim.tls_handshake_ms = 10000;
  k->budget.max = TARN__PLANTED(TARN__BUG_KAFKA_BUDGET_UNCHECKED) ? 0 : k->lim.max_inflight_bytes;
  if (k->lim.tls_cert || k->lim.tls_key) {
    int trc = k->lim.tls_cert && k->lim.tls_key
                  ? tls_context(k->lim.tls_cert, k->lim.tls_key, &k->tls)
                  : tarn__err(TARN_EINVAL, "Kafka TLS: the certificate and the key go together");
    if (trc) {
      free(k);
      return trc;
    }
  }
  int rc = open_sockets(k, &sa, addr);
  if (rc) {
    SSL_CTX_free(k->tls);
    free(k);
    return rc;
  }
  pthread_mutex_init(&k->mu, NULL);
  pthread_cond_init(&k->work_cv, NULL);
  pthread_cond_init(&k->done_cv, NULL);
  k->workers = calloc((size_t)k->lim.workers, sizeof *k->workers);
  rc = k->workers ? 0 : TARN_ENOMEM;
  for (int i = 0; !rc && i < k->lim.workers; i++) {
    if (pthread_create(&k->workers[i], NULL, worker, k))
      rc = TARN_ENOMEM;
    else
      k->nworkers++;
  }
  if (!rc && pthread_create(&k->io, NULL, io_loop, k))
    rc = TARN_ENOMEM;
  if (rc) {
    atomic_store(&k->draining, 1);
    pthread_mutex_lock(&k->mu);
    pthread_cond_broadcast(&k->work_cv);
    pthread_mutex_unlock(&k->mu);
    for (int i = 0; i < k->nworkers; i++)
      pthread_join(k->workers[i], NULL);
    listener_free(k);
    return rc;
  }
  *out = k;
  return 0;
}

int tarn__klisten_port(const tarn__klisten *k) { return k->port; }

void tarn__klisten_drain(tarn__klisten *k) {
  if (!k || k->drained)
    return;
  k->drained = 1;
  atomic_store(&k->draining, 1);
  wake(k);
  pthread_mutex_lock(&k->mu);
  pthread_cond_broadcast(&k->work_cv);
  pthread_mutex_unlock(&k->mu);
  for (int i = 0; i < k->nworkers; i++)
    pthread_join(k->workers[i], NULL);
}

void tarn__klisten_stop(tarn__klisten *k) {
  if (!k)
    return;
  tarn__klisten_drain(k);
  atomic_store(&k->stopping, 1);
  wake(k);
  pthread_join(k->io, NULL);
  take_ready(k);
  while (k->conns)
    conn_close(k, k->conns);
  listener_free(k);
}
