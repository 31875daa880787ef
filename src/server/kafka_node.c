/* The Kafka side of a `tarn serve` node (node.h): the node's context for the
 * handlers (src/kafka/api.h) — its catalog, one writer for every produce, one
 * reader — its record in the registry of live nodes, and the listener. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/group.h"
#include "kafka/producer.h"
#include "kafka/registry.h"
#include "server/kafka_listen.h"
#include "server/node.h"
#include "server/sched.h"
#include "server/srvlog.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/express.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "util/clock.h"
#include "util/error.h"

/* One line per authentication (tarn__knode_config.auth_log): a refusal at
 * warn, an acceptance at debug; never the secret. */
static void auth_log(int ok, const char *peer, const char *user, const char *mechanism,
                     const char *reason) {
  tarn_srv_log(ok ? TARN_SRV_DEBUG : TARN_SRV_WARN,
               ok ? "kafka client authenticated" : "kafka authentication refused", "peer", peer,
               "user", user, "mechanism", mechanism, reason ? "reason" : NULL, reason, NULL);
}

/* issue 15: an express log handed over (Finish landed) or a Finish retried. */
static void express_log(const char *event, uint64_t log_id, int rc, const char *msg) {
  char id[24];
  snprintf(id, sizeof id, "%llu", (unsigned long long)log_id);
  tarn_srv_log(rc ? TARN_SRV_WARN : TARN_SRV_INFO, event, "log", id, "message", msg ? msg : "",
               rc ? "error" : NULL, rc ? tarn_errname(rc) : NULL, NULL);
}

typedef struct kstate {
  tarn__knode node;
  tarn_srv_kafka *listener;
} kstate;

/* The session may be lost and renewed (the health job): the record goes with
 * the old session, so it is written again. */
static int registry_job(void *arg, atomic_int *stop) {
  (void)stop;
  kstate *s = arg;
  return tarn__kregistry_refresh(s->node.registry);
}

/* issue 15: the express logs whose leader is now another node (the live set
 * changed) leave through Finish; one that cannot land is retried every 5 s. */
static int express_handover_job(void *arg, atomic_int *stop) {
  (void)stop;
  kstate *s = arg;
  int rc = tarn__kexpress_handover(&s->node, 0);
  return rc < 0 ? rc : 0;
}

/* Ends join phases at their deadline and expires sessions (group.h): the
 * waiting JoinGroup and SyncGroup requests are answered from here. */
static int groups_job(void *arg, atomic_int *stop) {
  (void)stop;
  kstate *s = arg;
  tarn__kgroups_tick(s->node.groups, tarn__mono_ms());
  return 0;
}

static void kstate_free(kstate *s) {
  if (!s)
    return;
  tarn__kgroups_close(s->node.groups);
  tarn__knode_close(&s->node);
  if (s->node.writer)
    tarn_writer_close(s->node.writer);
  /* after the writers: their appends' callbacks and index-put conditions
   * use the producers' state (issue 31 item 3) */
  tarn__kprod_close(s->node.producers);
  tarn_reader_close(s->node.reader);
  tarn__kregistry_close(s->node.registry);
  tarn_catalog_close(s->node.catalog);
  free(s);
}

int tarn_srv_kafka_jobs(struct tarn_deployment *d, const tarn_srv_options *o,
                        struct tarn_srv_job *jobs, void **state) {
  *state = NULL;
  if (!o->kafka_listen)
    return 0;
  kstate *s = calloc(1, sizeof *s);
  if (!s)
    return TARN_ENOMEM;
  tarn__knode *n = &s->node;
  tarn__knode_config_default(&n->cfg);
  n->cfg.node_id = o->kafka_node_id;
  n->cfg.auto_create_topics = o->kafka_auto_create_topics;
  if (o->kafka_batch_ms >= 0)
    n->cfg.batch_ms = (uint32_t)o->kafka_batch_ms;
  n->cfg.express_absorb_ms = (uint32_t)o->express_absorb_ms;
  char lhost[256];
  int lport;
  int rc = tarn_srv_kafka_parse_addr(o->kafka_listen, lhost, sizeof lhost, &lport);
  if (rc) {
    free(s);
    return tarn__err(TARN_EINVAL, "--kafka-listen %s: not HOST:PORT", o->kafka_listen);
  }
  n->dep = d;
  n->meta = tarn_deployment_meta(d);
  tarn_writer_options wo;
  tarn_writer_options_default(&wo);
  wo.batch_ms = n->cfg.batch_ms;
  tarn_srv_kafka_limits lim;
  tarn_srv_kafka_limits_default(&lim);
  if (o->kafka_max_connections > 0)
    lim.max_connections = o->kafka_max_connections;
  if (o->kafka_idle_ms > 0)
    lim.idle_ms = o->kafka_idle_ms;
  if (o->kafka_max_request_bytes > 0)
    lim.max_request_bytes = o->kafka_max_request_bytes;
  if (o->kafka_workers > 0)
    lim.workers = o->kafka_workers;
  lim.tls_cert = o->kafka_tls_cert;
  lim.tls_key = o->kafka_tls_key;
  n->cfg.sasl_mechanisms = o->kafka_sasl;
  n->cfg.auth_log = auth_log;
  n->cfg.express_log = express_log;
  if ((rc = tarn_catalog_open(n->meta, NULL, &n->catalog)) ||
      (rc = tarn_writer_open(n->meta, tarn_deployment_wal(d), &wo, &n->writer)) ||
      (rc = tarn_reader_open(n->meta, tarn_deployment_wal(d), tarn_deployment_compacted(d), NULL,
                             &n->reader)) ||
      (rc = tarn__knode_open(n)) || (rc = tarn__kgroups_open(n->meta, NULL, &n->groups)) ||
      (rc = tarn__kprod_open(n->meta, &n->producers))) {
    kstate_free(s);
    return rc;
  }
  tarn__kprod_set_finder(n->producers, tarn__kproduce_find, n);
  /* The listener binds first: with port 0 the advertised port is the bound one. */
  if ((rc = tarn_srv_kafka_start(o->kafka_listen, &lim, n, &s->listener))) {
    kstate_free(s);
    return rc == TARN_EIO
               ? tarn__err(TARN_EIO, "--kafka-listen %s: the address is taken or cannot be bound",
                           o->kafka_listen)
           : rc == TARN_EINVAL && !strncmp(tarn_errmsg(), "--kafka-tls", 11) ? rc
           : rc == TARN_EINVAL
               ? tarn__err(TARN_EINVAL, "--kafka-listen %s: an IPv4 host", o->kafka_listen)
               : rc;
  }
  snprintf(n->cfg.host, sizeof n->cfg.host, "%s", lhost);
  n->cfg.port = tarn_srv_kafka_port(s->listener);
  if (o->kafka_advertise && tarn_srv_kafka_parse_addr(o->kafka_advertise, n->cfg.host,
                                                      sizeof n->cfg.host, &n->cfg.port)) {
    tarn_srv_kafka_stop(s->listener);
    kstate_free(s);
    return tarn__err(TARN_EINVAL, "--kafka-advertise %s: not HOST:PORT", o->kafka_advertise);
  }
  if (strcmp(n->cfg.host, "0.0.0.0") == 0) /* clients cannot connect to it */
    snprintf(n->cfg.host, sizeof n->cfg.host, "127.0.0.1");
  if ((rc =
           tarn__kregistry_open(n->meta, n->cfg.node_id, n->cfg.host, n->cfg.port, &n->registry))) {
    tarn_srv_kafka_stop(s->listener);
    kstate_free(s);
    return rc;
  }
  n->cfg.node_id = tarn__kregistry_self(n->registry)->node_id;
  /* the express writer's star: stable for the node ID, so a node restarted
   * under its ID supersedes its own dead epoch (the gate's restart path) */
  if (o->star)
    snprintf(n->cfg.star, sizeof n->cfg.star, "%s", o->star);
  else
    snprintf(n->cfg.star, sizeof n->cfg.star, "node-%d", (int)n->cfg.node_id);
  char port[16], id[16];
  snprintf(port, sizeof port, "%d", tarn_srv_kafka_port(s->listener));
  snprintf(id, sizeof id, "%d", (int)n->cfg.node_id);
  char adv[300];
  snprintf(adv, sizeof adv, "%s:%d", n->cfg.host, n->cfg.port);
  tarn_srv_log(TARN_SRV_INFO, "kafka listening", "listen", o->kafka_listen, "port", port,
               "advertised", adv, "node_id", id, NULL);
  jobs[0] = (tarn_srv_job){"kafka-registry", 5000, 1, registry_job, s};
  jobs[1] = (tarn_srv_job){"kafka-groups", 100, 1, groups_job, s};
  jobs[2] = (tarn_srv_job){"kafka-express-handover", 1000, 1, express_handover_job, s};
  *state = s;
  return 3;
}

int tarn_srv_kafka_port_of(void *state) {
  kstate *s = state;
  return s ? tarn_srv_kafka_port(s->listener) : -1;
}

void tarn_srv_kafka_free(void *state) {
  kstate *s = state;
  if (!s)
    return;
  /* Requests read are handled; produces waiting for the writer are answered
   * by its flush (inside close); then the responses are written. */
  /* issue 15: from here express produces are refused (NOT_LEADER_OR_FOLLOWER) */
  tarn__kexpress_drain(&s->node);
  tarn_srv_kafka_drain(s->listener);
  /* JoinGroup and SyncGroup requests still waiting are answered
   * NOT_COORDINATOR (the clients find the group's next coordinator) */
  tarn__kgroups_close(s->node.groups);
  s->node.groups = NULL;
  tarn__knode_flush(&s->node);
  /* issue 15, drain: this node leaves the live list, so the others take its
   * express partitions over, and every log it leads leaves through Finish;
   * their successors' gates wait for the marks (EBUSY while this lease lives) */
  tarn__kregistry_close(s->node.registry);
  s->node.registry = NULL;
  int xrc = tarn__kexpress_close(&s->node);
  tarn_srv_log(xrc ? TARN_SRV_WARN : TARN_SRV_INFO, "express drained", "error",
               xrc ? tarn_errname(xrc) : "none", NULL);
  tarn_srv_kafka_stop(s->listener);
  kstate_free(s);
}
