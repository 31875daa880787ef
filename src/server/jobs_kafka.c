/* The Kafka side of a `tarn serve` node (node.h): a Kafka node opened through
 * libtarn's public door (tarn/kafka_node.h; issue 32 item 2), its periodic
 * jobs run by the scheduler, its log lines written with the server's. */
#include <stdlib.h>

#include "server/node.h"
#include "server/sched.h"
#include "server/srvlog.h"
#include "tarn/error.h"
#include "tarn/kafka_node.h"

_Static_assert((int)TARN_KAFKA_LOG_DEBUG == (int)TARN_SRV_DEBUG &&
                   (int)TARN_KAFKA_LOG_INFO == (int)TARN_SRV_INFO &&
                   (int)TARN_KAFKA_LOG_WARN == (int)TARN_SRV_WARN &&
                   (int)TARN_KAFKA_LOG_ERROR == (int)TARN_SRV_ERROR,
               "the node's log levels are the server's");

enum { MAX_JOBS = 8 }; /* node.c has room for these in its table */

typedef struct kjob {
  tarn_kafka_node *node;
  const tarn_kafka_node_job *job;
} kjob;

typedef struct kstate {
  tarn_kafka_node *node;
  kjob jobs[MAX_JOBS];
} kstate;

static void node_log(void *arg, int level, const char *msg, const char *const *kv) {
  (void)arg;
  tarn_srv_logv(level, msg, kv);
}

static int run_job(void *arg, atomic_int *stop) {
  (void)stop;
  kjob *j = arg;
  return j->job->run(j->node);
}

static void node_config(const tarn_srv_options *o, tarn_kafka_node_config *c) {
  tarn_kafka_node_config_default(c);
  c->listen = o->kafka_listen;
  c->advertise = o->kafka_advertise;
  c->node_id = o->kafka_node_id;
  c->star = o->star;
  c->auto_create_topics = o->kafka_auto_create_topics;
  c->batch_ms = o->kafka_batch_ms;
  c->express_absorb_ms = (uint32_t)o->express_absorb_ms;
  c->express_latency_budget_ms = o->express_latency_budget_ms;
  if (o->kafka_max_connections > 0)
    c->max_connections = o->kafka_max_connections;
  if (o->kafka_idle_ms > 0)
    c->idle_ms = o->kafka_idle_ms;
  if (o->kafka_max_request_bytes > 0)
    c->max_request_bytes = (size_t)o->kafka_max_request_bytes;
  if (o->kafka_workers > 0)
    c->workers = o->kafka_workers;
  if (o->kafka_retention_check_ms > 0)
    c->retention_check_ms = o->kafka_retention_check_ms;
  if (o->kafka_producer_expiration_ms > 0)
    c->producer_id_expiration_ms = o->kafka_producer_expiration_ms;
  if (o->kafka_producer_check_ms > 0)
    c->producer_id_expiration_check_ms = o->kafka_producer_check_ms;
  if (o->kafka_offsets_retention_minutes > 0)
    c->offsets_retention_ms = (int64_t)o->kafka_offsets_retention_minutes * 60000;
  if (o->kafka_offsets_retention_ms > 0)
    c->offsets_retention_ms = o->kafka_offsets_retention_ms;
  c->consumer_heartbeat_ms = o->kafka_consumer_heartbeat_ms;
  if (o->kafka_offsets_check_ms > 0)
    c->offsets_retention_check_ms = o->kafka_offsets_check_ms;
  c->tls_cert = o->kafka_tls_cert;
  c->tls_key = o->kafka_tls_key;
  c->sasl_mechanisms = o->kafka_sasl;
  c->max_preauth_request_bytes = (size_t)o->kafka_max_preauth_request_bytes;
  c->max_inflight_bytes = (size_t)o->kafka_max_inflight_bytes;
  c->max_connections_per_ip = o->kafka_max_connections_per_ip;
  c->auth_timeout_ms = o->kafka_auth_timeout_ms;
  c->request_timeout_ms = o->kafka_request_timeout_ms;
  if (o->kafka_failed_auth_delay_ms >= 0)
    c->failed_auth_delay_ms = o->kafka_failed_auth_delay_ms;
  c->log = node_log;
}

int tarn_srv_kafka_jobs(struct tarn_deployment *d, const tarn_srv_options *o,
                        struct tarn_srv_job *jobs, void **state) {
  *state = NULL;
  if (!o->kafka_listen)
    return 0;
  kstate *s = calloc(1, sizeof *s);
  if (!s)
    return TARN_ENOMEM;
  tarn_kafka_node_config c;
  node_config(o, &c);
  int rc = tarn_kafka_node_open(d, &c, &s->node);
  if (rc) {
    free(s);
    return rc;
  }
  size_t n;
  const tarn_kafka_node_job *nj = tarn_kafka_node_jobs(&n);
  if (n > MAX_JOBS) { /* a job left out would silently never run */
    tarn_kafka_node_close(s->node);
    free(s);
    return TARN_ERANGE;
  }
  for (size_t i = 0; i < n; i++) {
    s->jobs[i] = (kjob){s->node, &nj[i]};
    jobs[i] = (tarn_srv_job){nj[i].name, nj[i].interval_ms, 1, run_job, &s->jobs[i]};
  }
  *state = s;
  return (int)n;
}

int tarn_srv_kafka_port_of(void *state) {
  kstate *s = state;
  return s ? tarn_kafka_node_port(s->node) : -1;
}

void tarn_srv_kafka_free(void *state) {
  kstate *s = state;
  if (!s)
    return;
  tarn_kafka_node_close(s->node); /* logs "express drained" itself */
  free(s);
}
