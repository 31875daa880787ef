/* The HTTP endpoint of `tarn serve` (http.h). */
#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "tarn/buf.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/metrics.h"

/* Issue 33, DoS item 3 (the HTTP endpoint's equivalent): libmicrohttpd's
 * MHD_OPTION_CONNECTION_TIMEOUT counts idle time, so a client sending a
 * header byte every few seconds kept its connection for ever, and four such
 * clients (max_per_ip connections from each of four addresses: 4 x 16 = 64,
 * max_connections) left /healthz unanswered. Like the Kafka listener's
 * request-read deadline, a connection must now deliver a whole request
 * header within timeout_s of its opening or of its last response: the
 * library tells when connections open and close (MHD_OPTION_NOTIFY_CONNECTION),
 * when a header is whole (the handler's first call) and when a response is
 * done (MHD_OPTION_NOTIFY_COMPLETED); a sweeper thread shuts down the socket
 * of a late one, which libmicrohttpd then closes as it closes any connection
 * its peer dropped (it has no call that closes a connection). */
typedef struct conn_track {
  struct conn_track *prev, *next;
  int fd;
  int64_t deadline_ms; /* 0: a request is being answered, or already shut */
} conn_track;

struct tarn_srv_http {
  struct MHD_Daemon *d;
  tarn_srv_health_fn health;
  void *arg;
  int port;
  char *tls_cert, *tls_key; /* the PEM files' text, for the daemon's life */
  int64_t request_ms;       /* 0: no request deadline (no sweeper) */
  pthread_mutex_t mu;       /* guards conns, stopping */
  pthread_cond_t cv;
  conn_track conns; /* the list's head; its fd is unused */
  int stopping, sweeping;
  pthread_t sweeper;
};

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Called by libmicrohttpd on its thread; a connection closes (and its fd is
 * closed) only after CLOSED has taken mu, so the sweeper never shuts down an
 * fd that a new connection reuses. */
static void conn_notify(void *cls, struct MHD_Connection *conn, void **ctx,
                        enum MHD_ConnectionNotificationCode what) {
  tarn_srv_http *h = cls;
  if (!h->request_ms)
    return;
  if (what == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    conn_track *t = ci ? calloc(1, sizeof *t) : NULL;
    if (!t) /* out of memory: the idle timeout still applies */
      return;
    t->fd = ci->connect_fd;
    pthread_mutex_lock(&h->mu);
    t->deadline_ms = now_ms() + h->request_ms;
    t->next = h->conns.next, t->prev = &h->conns;
    h->conns.next->prev = t, h->conns.next = t;
    pthread_mutex_unlock(&h->mu);
    *ctx = t;
  } else if (*ctx) {
    conn_track *t = *ctx;
    pthread_mutex_lock(&h->mu);
    t->prev->next = t->next, t->next->prev = t->prev;
    pthread_mutex_unlock(&h->mu);
    free(t);
    *ctx = NULL;
  }
}

/* A request's header is whole (ms 0: no deadline while it is answered), or
 * its response is done (the next request is due within request_ms). */
static void conn_deadline(tarn_srv_http *h, struct MHD_Connection *conn, int64_t ms) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (!h->request_ms || !ci || !ci->socket_context)
    return;
  conn_track *t = ci->socket_context;
  pthread_mutex_lock(&h->mu);
  if (t->deadline_ms || ms) /* one already shut down stays so */
    t->deadline_ms = ms ? now_ms() + ms : 0;
  pthread_mutex_unlock(&h->mu);
}

static void request_done(void *cls, struct MHD_Connection *conn, void **state,
                         enum MHD_RequestTerminationCode why) {
  (void)state, (void)why;
  tarn_srv_http *h = cls;
  conn_deadline(h, conn, h->request_ms);
}

static void *sweep(void *arg) {
  tarn_srv_http *h = arg;
  int64_t period = h->request_ms / 4 > 50 ? h->request_ms / 4 : 50;
  pthread_mutex_lock(&h->mu);
  while (!h->stopping) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + period % 1000 * 1000000;
    ts.tv_sec += period / 1000 + ns / 1000000000, ts.tv_nsec = ns % 1000000000;
    pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    int64_t now = now_ms();
    for (conn_track *t = h->conns.next; t != &h->conns; t = t->next)
      if (t->deadline_ms && now >= t->deadline_ms) {
        shutdown(t->fd, SHUT_RDWR);
        t->deadline_ms = 0;
      }
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* The whole of a PEM file, NUL-terminated (what libmicrohttpd takes). A key
 * leaves no copy behind (issue 33: secret copies are wiped): stdio reads
 * unbuffered into one allocation of the file's size, which http_free wipes. */
static int read_pem(const char *path, char **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return tarn_set_errno(errno, "--http-tls: %s", path);
  setvbuf(f, NULL, _IONBF, 0);
  tarn_buf b = TARN_BUF_INIT;
  struct stat st;
  int rc = 0;
  if (fstat(fileno(f), &st) != 0)
    rc = tarn_set_errno(errno, "--http-tls: %s", path);
  else if (st.st_size > (1 << 20))
    rc = tarn_set_errmsg(TARN_EINVAL, "--http-tls: %s: more than 1 MiB", path);
  else if (tarn_buf_reserve(&b, (size_t)st.st_size + 1))
    rc = TARN_ENOMEM;
  if (!rc) {
    b.len = fread(b.data, 1, (size_t)st.st_size, f);
    if (ferror(f))
      rc = tarn_set_errno(errno, "--http-tls: %s", path);
    b.data[b.len] = 0;
  }
  fclose(f);
  if (rc) {
    if (b.data)
      explicit_bzero(b.data, b.len);
    tarn_buf_free(&b);
    return rc;
  }
  *out = (char *)b.data;
  return 0;
}

static void http_free(tarn_srv_http *h) {
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  free(h->tls_cert);
  if (h->tls_key)
    explicit_bzero(h->tls_key, strlen(h->tls_key));
  free(h->tls_key);
  free(h);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             void *body, size_t len, enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ok = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state) {
  (void)version, (void)upload;
  tarn_srv_http *h = cls;
  if (!*state) { /* the first call only announces the request */
    *state = h;
    conn_deadline(h, conn, 0);
    return MHD_YES;
  }
  if (*upload_len) { /* no request body is expected: drop it */
    *upload_len = 0;
    return MHD_YES;
  }
  if (strcmp(method, "GET") && strcmp(method, "HEAD"))
    return reply(conn, 405, "text/plain", (void *)"method not allowed\n", 19,
                 MHD_RESPMEM_PERSISTENT);
  if (strcmp(url, "/metrics") == 0) {
    tarn_buf b = TARN_BUF_INIT;
    if (tarn_metrics_render(&b) || tarn_buf_putc(&b, 0)) {
      tarn_buf_free(&b);
      return reply(conn, 500, "text/plain", (void *)"out of memory\n", 14, MHD_RESPMEM_PERSISTENT);
    }
    size_t len;
    uint8_t *p = tarn_buf_steal(&b, &len);
    return reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8", p, len - 1,
                 MHD_RESPMEM_MUST_FREE);
  }
  if (strcmp(url, "/healthz") == 0) {
    char body[1024];
    int ok = h->health(h->arg, body, sizeof body - 1);
    size_t n = strlen(body);
    body[n++] = '\n';
    return reply(conn, ok ? 200 : 503, "application/json", body, n, MHD_RESPMEM_MUST_COPY);
  }
  return reply(conn, 404, "text/plain", (void *)"not found: try /metrics or /healthz\n", 36,
               MHD_RESPMEM_PERSISTENT);
}

int tarn_srv_http_start(const char *listen, const tarn_srv_http_limits *lim,
                        tarn_srv_health_fn health, void *arg, tarn_srv_http **out) {
  *out = NULL;
  const char *colon = strrchr(listen, ':');
  char host[64];
  if (!colon || (size_t)(colon - listen) >= sizeof host)
    return tarn_set_errmsg(TARN_EINVAL, "--listen %s: HOST:PORT with an IPv4 host", listen);
  snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (!colon[1] || *end || port < 0 || port > 65535)
    return tarn_set_errmsg(TARN_EINVAL, "--listen %s: HOST:PORT with an IPv4 host", listen);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (!*host || strcmp(host, "0.0.0.0") == 0)
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  else if (strcmp(host, "localhost") == 0)
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  else if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
    return tarn_set_errmsg(TARN_EINVAL, "--listen %s: HOST:PORT with an IPv4 host", listen);
  tarn_srv_http *h = calloc(1, sizeof *h);
  if (!h)
    return TARN_ENOMEM;
  h->health = health;
  h->arg = arg;
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  h->conns.next = h->conns.prev = &h->conns;
  h->request_ms = lim && lim->timeout_s > 0 ? (int64_t)lim->timeout_s * 1000 : 0;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
  if (lim && (lim->tls_cert || lim->tls_key)) {
    int rc = !lim->tls_cert || !lim->tls_key
                 ? tarn_set_errmsg(TARN_EINVAL, "--http-tls-cert and --http-tls-key go together")
             : !MHD_is_feature_supported(MHD_FEATURE_TLS)
                 ? tarn_set_errmsg(TARN_EINVAL, "--http-tls: this libmicrohttpd has no TLS")
                 : 0;
    if (!rc && !(rc = read_pem(lim->tls_cert, &h->tls_cert))) {
      /* as the Kafka listener's key (issue 33: listener TLS key files) */
      tarn_file_mode_warn(lim->tls_key, "the HTTP endpoint's TLS key file");
      rc = read_pem(lim->tls_key, &h->tls_key);
    }
    if (rc) {
      http_free(h);
      return rc == TARN_ENOMEM ? rc : TARN_EINVAL;
    }
    flags |= MHD_USE_TLS;
  }
  /* One internal thread serves every connection (poll or epoll, not select's
   * 1024 descriptors); handlers answer from memory, so no request waits on
   * another. The limits bound what clients can hold: beyond max_connections
   * (all: a connection waits unaccepted) or max_per_ip (one address: closed
   * at once), an idle one after timeout_s (one without a whole request by
   * then: the sweeper above), and a connection's buffers are 16 KiB (no request
   * has a body). */
  struct MHD_OptionItem ops[] = {
      {MHD_OPTION_CONNECTION_LIMIT, lim && lim->max_connections > 0 ? lim->max_connections : 0,
       NULL},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, lim && lim->max_per_ip > 0 ? lim->max_per_ip : 0, NULL},
      {MHD_OPTION_CONNECTION_TIMEOUT, lim && lim->timeout_s > 0 ? lim->timeout_s : 0, NULL},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, NULL},
      {MHD_OPTION_HTTPS_MEM_CERT, h->tls_cert ? 1 : 0, h->tls_cert},
      {MHD_OPTION_HTTPS_MEM_KEY, h->tls_key ? 1 : 0, h->tls_key},
      {MHD_OPTION_END, 0, NULL}};
  size_t k = 0;
  for (size_t i = 0; ops[i].option != MHD_OPTION_END; i++)
    if (ops[i].value > 0) /* 0: the option left out, libmicrohttpd's default */
      ops[k++] = ops[i];
  ops[k] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
                          (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_CONNECTION, conn_notify, h,
                          MHD_OPTION_NOTIFY_COMPLETED, request_done, h, MHD_OPTION_ARRAY, ops,
                          MHD_OPTION_END);
  if (h->d && h->request_ms) {
    if (pthread_create(&h->sweeper, NULL, sweep, h) == 0)
      h->sweeping = 1;
    else {
      MHD_stop_daemon(h->d);
      h->d = NULL;
    }
  }
  if (!h->d) {
    /* with TLS, a key that does not match or parse fails here too */
    int tls = h->tls_cert != NULL;
    http_free(h);
    return tarn_set_errmsg(TARN_EIO, "--listen %s: the address is taken or cannot be bound%s",
                           listen,
                           tls ? ", or the --http-tls-cert/--http-tls-key files do not load" : "");
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  h->port = di ? di->port : (int)port;
  *out = h;
  return 0;
}

int tarn_srv_http_port(const tarn_srv_http *h) { return h->port; }

void tarn_srv_http_stop(tarn_srv_http *h) {
  if (!h)
    return;
  if (h->sweeping) {
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->sweeper, NULL);
  }
  MHD_stop_daemon(h->d); /* CLOSED for each connection: the list is empty */
  http_free(h);
}
