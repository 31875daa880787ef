/* The public door to a Kafka node (tarn/kafka_node.h; issue 32 item 2): a
 * node opened from a config on port 0 reports the bound port, its broker ID
 * and advertised address, accepts connections, logs "kafka listening" through
 * the program's log function, and closes; its failures are told apart by code,
 * not by text: a taken address TARN_EIO, a malformed one or half a TLS pair
 * TARN_EINVAL (tarn serve's exit status follows these codes). */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/kafka_node.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int listening_lines;

static void count_log(void *arg, int level, const char *msg, const char *const *kv) {
  (void)arg, (void)kv;
  if (level == TARN_KAFKA_LOG_INFO && strcmp(msg, "kafka listening") == 0) {
    pthread_mutex_lock(&mu);
    listening_lines++;
    pthread_mutex_unlock(&mu);
  }
}

static tarn_deployment *open_dep(void) {
  tarn_deployment_config dc = {"mem:kn", "mem:kn-wal", "mem:kn-c", NULL};
  tarn_deployment *dep;
  assert_int_equal(tarn_deployment_open(&dc, 1, &dep), 0);
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(tarn_deployment_meta(dep), NULL, &cat), 0);
  assert_int_equal(tarn_catalog_init(cat, NULL), 0);
  tarn_catalog_close(cat);
  return dep;
}

static void open_tick_close(void **state) {
  (void)state;
  tarn_deployment *dep = open_dep();
  tarn_kafka_node_config c;
  tarn_kafka_node_config_default(&c);
  c.listen = "127.0.0.1:0";
  c.log = count_log;
  tarn_kafka_node *n;
  assert_int_equal(tarn_kafka_node_open(dep, &c, &n), 0);
  int port = tarn_kafka_node_port(n);
  assert_true(port > 0);
  assert_true(tarn_kafka_node_id(n) >= 0);
  char adv[64];
  snprintf(adv, sizeof adv, "127.0.0.1:%d", port);
  assert_string_equal(tarn_kafka_node_advertised(n), adv);
  assert_int_equal(listening_lines, 1);

  /* the port takes connections */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  close(fd);

  /* the jobs: six, run by tick; the next one is due within its interval */
  size_t nj;
  const tarn_kafka_node_job *jobs = tarn_kafka_node_jobs(&nj);
  assert_int_equal(nj, 6);
  assert_string_equal(jobs[3].name, "kafka-retention");
  assert_string_equal(jobs[4].name, "kafka-producer-expiry");
  assert_string_equal(jobs[5].name, "kafka-offsets-expiry");
  assert_string_equal(jobs[0].name, "kafka-registry");
  int ms = tarn_kafka_node_tick(n);
  assert_true(ms >= 0 && ms <= 100);

  /* a second node on the taken port: TARN_EIO, by code */
  tarn_kafka_node *n2;
  char taken[32];
  snprintf(taken, sizeof taken, "127.0.0.1:%d", port);
  c.listen = taken;
  assert_int_equal(tarn_kafka_node_open(dep, &c, &n2), TARN_EIO);
  /* malformed addresses and half a TLS pair: TARN_EINVAL */
  c.listen = "1.2.3:0";
  assert_int_equal(tarn_kafka_node_open(dep, &c, &n2), TARN_EINVAL);
  c.listen = "127.0.0.1:x";
  assert_int_equal(tarn_kafka_node_open(dep, &c, &n2), TARN_EINVAL);
  c.listen = "127.0.0.1:0";
  c.tls_cert = "/nonexistent.pem";
  assert_int_equal(tarn_kafka_node_open(dep, &c, &n2), TARN_EINVAL);
  c.tls_key = "/nonexistent.key";
  assert_int_equal(tarn_kafka_node_open(dep, &c, &n2), TARN_EINVAL);

  assert_int_equal(tarn_kafka_node_close(n), 0);
  tarn_deployment_close(dep);
}

static void addr_parse(void **state) {
  (void)state;
  char host[256];
  int port;
  assert_int_equal(tarn_kafka_addr_parse(":9092", host, sizeof host, &port), 0);
  assert_string_equal(host, "127.0.0.1");
  assert_int_equal(port, 9092);
  assert_int_equal(tarn_kafka_addr_parse("10.0.0.1:0", host, sizeof host, &port), 0);
  assert_string_equal(host, "10.0.0.1");
  assert_int_equal(port, 0);
  assert_int_equal(tarn_kafka_addr_parse("h:70000", host, sizeof host, &port), TARN_EINVAL);
  assert_int_equal(tarn_kafka_addr_parse("h:", host, sizeof host, &port), TARN_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(open_tick_close),
      cmocka_unit_test(addr_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
