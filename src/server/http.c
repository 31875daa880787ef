/* The HTTP endpoint of `tarn serve` (http.h). */
#include "server/http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/metrics.h"

struct tarn_srv_http {
  struct MHD_Daemon *d;
  tarn_srv_health_fn health;
  void *arg;
  int port;
};

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
      return reply(conn, 500, "text/plain", (void *)"out of memory\n", 14,
                   MHD_RESPMEM_PERSISTENT);
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
    return TARN_EINVAL;
  snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (!colon[1] || *end || port < 0 || port > 65535)
    return TARN_EINVAL;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (!*host || strcmp(host, "0.0.0.0") == 0)
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  else if (strcmp(host, "localhost") == 0)
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  else if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
    return TARN_EINVAL;
  tarn_srv_http *h = calloc(1, sizeof *h);
  if (!h)
    return TARN_ENOMEM;
  h->health = health;
  h->arg = arg;
  /* One internal thread serves every connection (poll or epoll, not select's
   * 1024 descriptors); handlers answer from memory, so no request waits on
   * another. The limits bound what clients can hold: beyond max_connections
   * (all) or max_per_ip (one address) a connection is closed at once, an idle
   * one after timeout_s, and a connection's buffers are 16 KiB (no request
   * has a body). */
  struct MHD_OptionItem ops[] = {
      {MHD_OPTION_CONNECTION_LIMIT, lim && lim->max_connections > 0 ? lim->max_connections : 0,
       NULL},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, lim && lim->max_per_ip > 0 ? lim->max_per_ip : 0,
       NULL},
      {MHD_OPTION_CONNECTION_TIMEOUT, lim && lim->timeout_s > 0 ? lim->timeout_s : 0, NULL},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, NULL},
      {MHD_OPTION_END, 0, NULL}};
  size_t k = 0;
  for (size_t i = 0; ops[i].option != MHD_OPTION_END; i++)
    if (ops[i].value > 0) /* 0: the option left out, libmicrohttpd's default */
      ops[k++] = ops[i];
  ops[k] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, (uint16_t)port, NULL,
                          NULL, handle, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                          MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
  if (!h->d) {
    free(h);
    return TARN_EIO;
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
  MHD_stop_daemon(h->d);
  free(h);
}
