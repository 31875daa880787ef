/* A Kafka node on a deployment, with libtarn alone (tarn/kafka_node.h): any
 * Kafka client can create topics, produce and consume through it; SIGTERM or
 * SIGINT stops it cleanly (answered requests, flushed writers).
 *
 *     cc kafka_node.c $(pkg-config --cflags --libs tarn) -o kafka_node
 *     ./kafka_node /tmp/demo 127.0.0.1:9092     # port 0: any free port
 *     kcat -b 127.0.0.1:9092 -P -t greetings    # in another terminal
 *
 * The deployment is a home directory (sqlite + file://, created on first
 * use), or the stores of TARN_META, TARN_WAL and TARN_COMPACTED. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include <tarn/tarn.h>

static volatile sig_atomic_t stopping;

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static int fail(const char *what, int rc) {
  fprintf(stderr, "kafka_node: %s: %s\n", what, tarn_errmsg());
  return rc < 0 ? 1 : rc;
}

int main(int argc, char **argv) {
  tarn_deployment_config cfg = {.home = argc > 1 ? argv[1] : "tarn-demo"};
  tarn_deployment_strings strs;
  tarn_deployment *dep = NULL;
  tarn_catalog *cat = NULL;
  int rc;

  if ((rc = tarn_deployment_config_resolve(&cfg, &strs)) < 0)
    return fail("config", rc);
  if ((rc = tarn_deployment_open(&cfg, 1, &dep)) < 0)
    return fail("open", rc);
  if ((rc = tarn_catalog_open(tarn_deployment_meta(dep), NULL, &cat)) < 0)
    return fail("catalog", rc);
  if ((rc = tarn_catalog_init(cat, NULL)) < 0) /* a new deployment: its first record */
    return fail("init", rc);
  tarn_catalog_close(cat);

  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  tarn_kafka_node_config kc;
  tarn_kafka_node_config_default(&kc);
  kc.listen = argc > 2 ? argv[2] : "127.0.0.1:9092";
  kc.auto_create_topics = 1; /* as Apache Kafka's auto.create.topics.enable */
  tarn_kafka_node *node;
  if ((rc = tarn_kafka_node_open(dep, &kc, &node)) < 0)
    return fail("kafka node", rc);
  printf("kafka node %d listening on port %d\n", (int)tarn_kafka_node_id(node),
         tarn_kafka_node_port(node));
  fflush(stdout);

  /* The node's periodic jobs (registry, consumer groups' deadlines, express
   * handover) run from this thread; the listener has its own threads. */
  while (!stopping) {
    int ms = tarn_kafka_node_tick(node);
    if (ms > 50)
      ms = 50; /* notice a signal soon */
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
  }
  rc = tarn_kafka_node_close(node);
  tarn_deployment_close(dep);
  printf("stopped\n");
  return rc < 0 ? fail("close", rc) : 0;
}
