/* A draining Kafka listener (src/server/kafka_listen.c; issue 15's drain):
 * once tarn__klisten_drain returns, and long before tarn__klisten_stop
 * (which a node calls only after its express logs left through Finish,
 * up to a minute later), a client must learn that this node serves no more:
 *   - a connection with nothing in flight is closed: its next requests
 *     would never be read, and the client would wait for them until its
 *     request timeout (CI's failover test lost 39 produces to that);
 *   - a new connection is refused, not left in the backlog unanswered.
 * The listener runs in this process over a node with no stores: ApiVersions
 * needs none, and the drain is about connections, not requests. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/listen.h"
#include "tarn/buf.h"

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int kconnect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
    int e = errno;
    close(fd);
    return -e;
  }
  return fd;
}

/* Reads up to n bytes within timeout_ms: the count, 0 at EOF, -1 on timeout. */
static ssize_t read_some(int fd, uint8_t *p, size_t n, int timeout_ms) {
  int64_t end = now_ms() + timeout_ms;
  size_t got = 0;
  while (got < n) {
    struct pollfd pf = {fd, POLLIN, 0};
    int left = (int)(end - now_ms());
    if (left <= 0 || poll(&pf, 1, left) <= 0)
      return got ? (ssize_t)got : -1;
    ssize_t r = recv(fd, p + got, n - got, 0);
    if (r <= 0)
      return got ? (ssize_t)got : 0;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* Sends ApiVersions v0 and reads its whole response frame. */
static void api_versions(int fd) {
  tarn__k_api_versions_req q;
  tarn__kmsg_init(TARN__KAPI_API_VERSIONS, 0, &q);
  tarn_buf b = TARN_BUF_INIT;
  tarn__kreq_header h = {TARN__KAPI_API_VERSIONS, 0, 7, {"test", 4}};
  assert_int_equal(tarn__kreq_frame(&h, &q, &b), 0);
  assert_int_equal(send(fd, b.data, b.len, MSG_NOSIGNAL), (ssize_t)b.len);
  tarn_buf_free(&b);
  uint8_t sz[4];
  assert_int_equal(read_some(fd, sz, 4, 5000), 4);
  size_t n = (size_t)sz[0] << 24 | (size_t)sz[1] << 16 | (size_t)sz[2] << 8 | sz[3];
  assert_true(n > 4 && n < 65536);
  uint8_t *f = malloc(n);
  assert_non_null(f);
  assert_int_equal(read_some(fd, f, n, 5000), (ssize_t)n);
  free(f);
}

static void drain_closes_quiet_connections_and_refuses_new_ones(void **state) {
  (void)state;
  tarn__knode node;
  memset(&node, 0, sizeof node);
  tarn__knode_config_default(&node.cfg);
  node.ready = 1; /* whole (node.c sets it after the registry joined) */
  tarn__klisten_limits lim;
  tarn__klisten_limits_default(&lim);
  lim.workers = 2;
  tarn__klisten *k;
  assert_int_equal(tarn__klisten_start("127.0.0.1:0", &lim, &node, &k), 0);
  int port = tarn__klisten_port(k);
  int answered = kconnect(port), quiet = kconnect(port);
  assert_true(answered >= 0 && quiet >= 0);
  api_versions(answered); /* accepted, served, then nothing in flight */
  api_versions(quiet);

  tarn__klisten_drain(k);
  int64_t t0 = now_ms();
  uint8_t b;
  assert_int_equal(read_some(answered, &b, 1, 3000), 0); /* EOF, not a timeout */
  assert_int_equal(read_some(quiet, &b, 1, 3000), 0);
  assert_true(now_ms() - t0 < 3000);
  /* refused at once: the client goes to the other nodes it knows */
  assert_int_equal(kconnect(port), -ECONNREFUSED);

  tarn__klisten_stop(k);
  close(answered);
  close(quiet);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(drain_closes_quiet_connections_and_refuses_new_ones),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
