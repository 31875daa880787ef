/* A Kafka node on a deployment (tarn/kafka_node.h; issue 32 item 2): the
 * node's context for the handlers (api.h) — its catalog, one writer for every
 * produce, one reader, its consumer groups and idempotent producers — its
 * record in the registry of live nodes, and the listener (listen.c). Built
 * here from a config, so that libtarn alone runs a node; `tarn serve`
 * (src/server) opens one and schedules its jobs. */
#include "tarn/kafka_node.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/api_group.h"
#include "kafka/group.h"
#include "kafka/listen.h"
#include "kafka/producer.h"
#include "kafka/registry.h"
#include "kafka/retention.h"
#include "kafka/sasl_guard.h"
#include "log/root_mark.h"
#include "tarn/catalog.h"
#include "tarn/error.h"
#include "tarn/kafka_names.h"
#include "tarn/kafka_topics.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "util/clock.h"
#include "util/error.h"

enum { NJOBS = 6 };

/* Kafka's log.retention.check.interval.ms default. */
#define RETENTION_CHECK_MS 300000
/* Kafka's offsets.retention.minutes default (7 days). */
#define OFFSETS_RETENTION_MS (10080LL * 60000)

struct tarn_kafka_node {
  tarn__knode node;
  tarn__klisten *listener;
  char advertised[300];
  int64_t last_run[NJOBS];        /* tarn_kafka_node_tick: monotonic ms of each job's last run */
  int retention_check_ms;         /* the retention job's own interval (its tick is shorter) */
  int64_t retention_last;         /* monotonic ms of its last pass; 0: none yet */
  int64_t producer_expiration_ms; /* producer.id.expiration.ms */
  int64_t producer_check_ms;      /* producer.id.expiration.check.interval.ms */
  int64_t producer_last_sweep;    /* monotonic ms of the last sweep, 0: none */
  int64_t offsets_retention_ms;   /* offsets.retention.minutes, in ms */
  int64_t offsets_check_ms;       /* offsets.retention.check.interval.ms */
  int64_t offsets_last_sweep;     /* monotonic ms of the last sweep, 0: none */
};

void tarn_kafka_node_config_default(tarn_kafka_node_config *c) {
  memset(c, 0, sizeof *c);
  c->listen = "127.0.0.1:9092";
  c->node_id = -1;
  c->batch_ms = -1;
  c->express_latency_budget_ms = -1;
  tarn__klisten_limits lim;
  tarn__klisten_limits_default(&lim);
  c->max_connections = lim.max_connections;
  c->idle_ms = lim.idle_ms;
  c->max_request_bytes = lim.max_request_bytes;
  c->workers = lim.workers;
  c->retention_check_ms = RETENTION_CHECK_MS;
  c->producer_id_expiration_ms = 86400000;
  c->producer_id_expiration_check_ms = 600000;
  c->offsets_retention_ms = OFFSETS_RETENTION_MS;
  c->failed_auth_delay_ms = 100;
  c->offsets_retention_check_ms = 600000;
}

int tarn_kafka_addr_parse(const char *s, char *host, size_t n, int *port) {
  return tarn__klisten_parse_addr(s, host, n, port);
}

/* One line per authentication (tarn__knode_config.auth_log): a refusal at
 * warn, an acceptance at debug; never the secret. */
static void auth_log(const tarn__knode *n, int ok, const char *peer, const char *user,
                     const char *mechanism, const char *reason) {
  tarn__klog(n, ok ? TARN_KAFKA_LOG_DEBUG : TARN_KAFKA_LOG_WARN,
             ok ? "kafka client authenticated" : "kafka authentication refused", "peer", peer,
             "user", user, "mechanism", mechanism, reason ? "reason" : NULL, reason, NULL);
}

/* issue 15: an express log handed over (Finish landed) or a Finish retried. */
static void express_log(const tarn__knode *n, const char *event, uint64_t log_id, int rc,
                        const char *msg) {
  char id[24];
  snprintf(id, sizeof id, "%llu", (unsigned long long)log_id);
  tarn__klog(n, rc ? TARN_KAFKA_LOG_WARN : TARN_KAFKA_LOG_INFO, event, "log", id, "message",
             msg ? msg : "", rc ? "error" : NULL, rc ? tarn_errname(rc) : NULL, NULL);
}

/* The node's beat (issue 37 "Failover"; registry.h), which also writes the
 * record again when the session was lost and renewed (tarn serve's health
 * job): the record goes with the old session. */
static int registry_job(tarn_kafka_node *k) { return tarn__kregistry_refresh(k->node.registry); }

/* Ends join phases at their deadline and expires sessions (group.h): the
 * waiting JoinGroup and SyncGroup requests are answered from here. */
static int groups_job(tarn_kafka_node *k) {
  tarn__kgroups_tick(k->node.groups, tarn__mono_ms());
  return 0;
}

/* issue 15: the express logs whose leader is now another node (the live set
 * changed) leave through Finish; one that cannot land is retried every 1 s. */
static int express_handover_job(tarn_kafka_node *k) {
  int rc = tarn__kexpress_handover(&k->node, 0);
  return rc < 0 ? rc : 0;
}

/* issue 37, retention: every retention_check_ms (Kafka's
 * log.retention.check.interval.ms), a pass trims the partitions this node
 * leads as their topics' retention.ms and retention.bytes ask (retention.c).
 * The job is scheduled every 250 ms so that the interval is the node's
 * setting, not the program's schedule; between passes a run only reads the
 * clock. */
static int retention_job(tarn_kafka_node *k) {
  int64_t now = tarn__mono_ms();
  if (k->retention_last && now - k->retention_last < k->retention_check_ms)
    return 0;
  k->retention_last = now ? now : 1;
  return tarn__kretention_pass(&k->node, tarn__now_ms());
}

/* Issue 37 "Lifecycle": every producer.id.expiration.check.interval.ms, the
 * idempotent producers' state records of every topic's logs whose last write
 * is producer.id.expiration.ms old go (tarn__kprod_expire: guarded, a
 * producer that wrote meanwhile keeps its state). Every node sweeps; two
 * sweeps of one record cannot both delete it, and neither a fresh write. The
 * job runs each second and sweeps when the configured interval has passed. */
static int producer_expiry_job(tarn_kafka_node *k) {
  int64_t now = tarn__mono_ms();
  if (k->producer_last_sweep && now - k->producer_last_sweep < k->producer_check_ms)
    return 0;
  k->producer_last_sweep = now;
  tarn_kafka_topic *t;
  size_t n, removed = 0;
  int rc = tarn_kafka_topic_list(k->node.catalog, &t, &n);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++)
    for (uint32_t p = 0; p < t[i].partitions; p++) {
      size_t r = 0;
      int e = tarn__kprod_expire(k->node.producers, t[i].logs[p], k->producer_expiration_ms, &r);
      removed += r;
      rc = rc ? rc : e; /* the other logs are still swept */
    }
  tarn_kafka_topics_free(t, n);
  if (removed) {
    char c[24];
    snprintf(c, sizeof c, "%zu", removed);
    tarn__klog(&k->node, TARN_KAFKA_LOG_INFO, "kafka producer state expired", "records", c, NULL);
  }
  return rc;
}

/* The offsets expiry's view of the topics: listed once per pass, and a
 * topic not in the list (created since) looked up afresh. */
typedef struct live_topics {
  tarn_kafka_node *k;
  tarn_kafka_topic *t;
  size_t n;
} live_topics;

static int offsets_mine(void *arg, const char *group_id) {
  live_topics *l = arg;
  return tarn__kg_coordinator(&l->k->node, group_id, NULL);
}

static int offsets_live(void *arg, const char *topic, const uint8_t id[16]) {
  static const uint8_t none[16];
  live_topics *l = arg;
  int any = !memcmp(id, none, sizeof none);
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->t[i].name, topic) && (any || !memcmp(l->t[i].uuid, id, 16)))
      return 1;
  /* the list was taken before the group's offsets were read: a topic
   * created since is in the catalog now (an ID is never live again once
   * its topic is deleted, so a miss there is final) */
  tarn_kafka_topic t;
  int rc = tarn_kafka_topic_lookup(l->k->node.catalog, topic, &t);
  if (rc)
    return rc == TARN_ENOTFOUND ? 0 : rc;
  int same = any || !memcmp(t.uuid, id, 16);
  tarn_kafka_topic_free(&t);
  return same;
}

/* Issue 37 "Lifecycle": every offsets.retention.check.interval.ms, the
 * groups this node coordinates lose their expired committed offsets
 * (offsets.retention.minutes, Kafka's rules since KIP-211:
 * tarn__kgroups_expire) and the offsets of deleted topics that a
 * deletion left; an Empty group without offsets goes. */
static int offsets_expiry_job(tarn_kafka_node *k) {
  int64_t now = tarn__mono_ms();
  if (k->offsets_last_sweep && now - k->offsets_last_sweep < k->offsets_check_ms)
    return 0;
  k->offsets_last_sweep = now ? now : 1;
  live_topics l = {k, NULL, 0};
  int rc = tarn_kafka_topic_list(k->node.catalog, &l.t, &l.n);
  if (rc)
    return rc;
  tarn__kg_expiry x = {offsets_mine, offsets_live, &l};
  tarn__kg_expired out;
  rc = tarn__kgroups_expire(k->node.groups, k->offsets_retention_ms, &x, &out);
  tarn_kafka_topics_free(l.t, l.n);
  if (out.offsets || out.groups) {
    char c[24], g[24];
    snprintf(c, sizeof c, "%zu", out.offsets);
    snprintf(g, sizeof g, "%zu", out.groups);
    tarn__klog(&k->node, TARN_KAFKA_LOG_INFO, "kafka offsets expired", "offsets", c, "groups", g,
               NULL);
  }
  return rc;
}

static const tarn_kafka_node_job jobs[NJOBS] = {
    {"kafka-registry", TARN__KREG_BEAT_MS, registry_job},
    {"kafka-groups", 100, groups_job},
    {"kafka-express-handover", 1000, express_handover_job},
    {"kafka-retention", 250, retention_job},
    {"kafka-producer-expiry", 1000, producer_expiry_job},
    {"kafka-offsets-expiry", 1000, offsets_expiry_job},
};

const tarn_kafka_node_job *tarn_kafka_node_jobs(size_t *count) {
  *count = NJOBS;
  return jobs;
}

int tarn_kafka_node_tick(tarn_kafka_node *k) {
  int64_t next = INT32_MAX;
  for (int i = 0; i < NJOBS; i++) {
    int64_t now = tarn__mono_ms();
    if (!k->last_run[i] || now - k->last_run[i] >= jobs[i].interval_ms) {
      jobs[i].run(k); /* a failed run is retried at its next interval */
      k->last_run[i] = now = tarn__mono_ms();
    }
    int64_t due = k->last_run[i] + jobs[i].interval_ms - now;
    if (due < next)
      next = due;
  }
  return next < 0 ? 0 : (int)next;
}

static void node_free(tarn_kafka_node *k) {
  tarn__knode *n = &k->node;
  tarn__kgroups_close(n->groups);
  tarn__knode_close(n);
  if (n->writer)
    tarn_writer_close(n->writer);
  /* after the writers: their appends' callbacks and index-put conditions
   * use the producers' state (issue 31 item 3) */
  tarn__kprod_close(n->producers);
  tarn_reader_close(n->reader);
  tarn__kregistry_close(n->registry);
  tarn_catalog_close(n->catalog);
  tarn__kguard_close(n->guard);
  free(k);
}

/* The node's config for the handlers, from the public one. */
static void knode_config(const tarn_kafka_node_config *c, tarn__knode_config *kc) {
  tarn__knode_config_default(kc);
  kc->node_id = c->node_id;
  kc->auto_create_topics = c->auto_create_topics;
  if (c->batch_ms >= 0)
    kc->batch_ms = (uint32_t)c->batch_ms;
  kc->express_absorb_ms = c->express_absorb_ms;
  kc->express_latency_budget_ms =
      c->express_latency_budget_ms < 0 ? 20 : (uint32_t)c->express_latency_budget_ms;
  kc->offsets_retention_ms =
      c->offsets_retention_ms > 0 ? c->offsets_retention_ms : OFFSETS_RETENTION_MS;
  kc->sasl_mechanisms = c->sasl_mechanisms;
  kc->consumer_heartbeat_ms = c->consumer_heartbeat_ms;
  kc->auth_log = auth_log;
  kc->express_log = express_log;
  kc->log = c->log;
  kc->log_arg = c->log_arg;
}

/* Issue 37: the cluster ID is the deployment's id (16 bytes, written at init
 * create-only) in Kafka's Uuid form, so every node of a deployment answers
 * the same one across restarts and two deployments differ. A deployment from
 * before ids gets its id here, by the same create-only write init does (the
 * first node's lands, every other reads it): docs/kafka.md "Cluster ID". */
static int cluster_id(tarn__knode *n) {
  uint8_t raw[16];
  int rc = tarn__deployment_id(n->meta, 1, raw);
  if (rc)
    return tarn__errctx(rc, "Kafka node: the cluster ID");
  tarn_kafka_topic_id_string(raw, n->cluster_id);
  return 0;
}

/* Opens what the handlers use: catalog, writer, reader, the node's own
 * state (knode.c), groups and producers. */
static int open_parts(tarn_deployment *d, tarn__knode *n) {
  n->dep = d;
  n->meta = tarn_deployment_meta(d);
  tarn_writer_options wo;
  tarn_writer_options_default(&wo);
  wo.batch_ms = n->cfg.batch_ms;
  tarn__kgroups_options gopt = {.consumer_heartbeat_ms = n->cfg.consumer_heartbeat_ms};
  int rc;
  if ((rc = tarn_catalog_open(n->meta, NULL, &n->catalog)) ||
      (rc = tarn_writer_open(n->meta, tarn_deployment_wal(d), &wo, &n->writer)) ||
      (rc = tarn_reader_open(n->meta, tarn_deployment_wal(d), tarn_deployment_compacted(d), NULL,
                             &n->reader)) ||
      (rc = tarn__knode_open(n)) || (rc = tarn__kgroups_open(n->meta, &gopt, &n->groups)) ||
      (rc = tarn__kprod_open(n->meta, &n->producers)) || (rc = cluster_id(n)))
    return rc;
  tarn__kprod_set_finder(n->producers, tarn__kproduce_find, n);
  return 0;
}

/* Issue 33 item 4: with SASL, the guard of logins (sasl_guard.h). */
static int open_guard(tarn__knode *n, const tarn_kafka_node_config *c) {
  if (!c->sasl_mechanisms)
    return 0;
  tarn__kguard_config gc;
  tarn__kguard_config_default(&gc);
  gc.delay_ms = c->failed_auth_delay_ms > 0 ? c->failed_auth_delay_ms : 0;
  return tarn__kguard_open(&gc, &n->guard);
}

/* The listener binds first: with port 0 the advertised port is the bound one. */
static int start_listener(tarn_kafka_node *k, const tarn_kafka_node_config *c) {
  tarn__klisten_limits lim;
  tarn__klisten_limits_default(&lim);
  if (c->max_connections > 0)
    lim.max_connections = c->max_connections;
  if (c->idle_ms > 0)
    lim.idle_ms = c->idle_ms;
  if (c->max_request_bytes > 0)
    lim.max_request_bytes = c->max_request_bytes;
  if (c->workers > 0)
    lim.workers = c->workers;
  lim.tls_cert = c->tls_cert;
  lim.tls_key = c->tls_key;
  if (c->max_preauth_request_bytes > 0)
    lim.max_preauth_request_bytes = c->max_preauth_request_bytes;
  if (c->max_inflight_bytes > 0)
    lim.max_inflight_bytes = c->max_inflight_bytes;
  if (c->max_connections_per_ip > 0)
    lim.max_connections_per_ip = c->max_connections_per_ip;
  if (c->auth_timeout_ms > 0)
    lim.auth_timeout_ms = c->auth_timeout_ms;
  if (c->request_timeout_ms > 0)
    lim.request_timeout_ms = c->request_timeout_ms;
  return tarn__klisten_start(c->listen, &lim, &k->node, &k->listener);
}

static int owner_alive(void *registry, uint64_t owner) {
  return tarn__kregistry_owner_alive(registry, owner);
}

/* The advertised address (the bound one unless c->advertise), then the
 * registry record under the node ID (taken when -1) and the express star. */
static int join(tarn_kafka_node *k, const tarn_kafka_node_config *c) {
  tarn__knode_config *kc = &k->node.cfg;
  int port;
  tarn__klisten_parse_addr(c->listen, kc->host, sizeof kc->host, &port); /* parsed by the start */
  kc->port = tarn__klisten_port(k->listener);
  if (c->advertise && tarn__klisten_parse_addr(c->advertise, kc->host, sizeof kc->host, &kc->port))
    return tarn__err(TARN_EINVAL, "Kafka advertise %s: not HOST:PORT", c->advertise);
  if (strcmp(kc->host, "0.0.0.0") == 0) /* clients cannot connect to it */
    snprintf(kc->host, sizeof kc->host, "127.0.0.1");
  int rc = tarn__kregistry_open(k->node.meta, kc->node_id, kc->host, kc->port,
                                tarn__kprod_nonce(k->node.producers), &k->node.registry);
  if (rc)
    return rc;
  /* issue 37 "Failover": a dead node's producer claims are settled at once */
  tarn__kprod_set_liveness(k->node.producers, owner_alive, k->node.registry);
  kc->node_id = tarn__kregistry_self(k->node.registry)->node_id;
  /* the express writer's star: stable for the node ID, so a node restarted
   * under its ID supersedes its own dead epoch (the gate's restart path) */
  if (c->star)
    snprintf(kc->star, sizeof kc->star, "%s", c->star);
  else
    snprintf(kc->star, sizeof kc->star, "node-%d", (int)kc->node_id);
  snprintf(k->advertised, sizeof k->advertised, "%s:%d", kc->host, kc->port);
  return 0;
}

int tarn_kafka_node_open(tarn_deployment *d, const tarn_kafka_node_config *c,
                         tarn_kafka_node **out) {
  *out = NULL;
  if (!c || !c->listen)
    return tarn__err(TARN_EINVAL, "Kafka node: no listen address");
  tarn_kafka_node *k = calloc(1, sizeof *k);
  if (!k)
    return TARN_ENOMEM;
  knode_config(c, &k->node.cfg);
  k->retention_check_ms = c->retention_check_ms > 0 ? c->retention_check_ms : RETENTION_CHECK_MS;
  k->producer_expiration_ms =
      c->producer_id_expiration_ms > 0 ? c->producer_id_expiration_ms : 86400000;
  k->producer_check_ms =
      c->producer_id_expiration_check_ms > 0 ? c->producer_id_expiration_check_ms : 600000;
  k->offsets_retention_ms =
      c->offsets_retention_ms > 0 ? c->offsets_retention_ms : OFFSETS_RETENTION_MS;
  k->offsets_check_ms = c->offsets_retention_check_ms > 0 ? c->offsets_retention_check_ms : 600000;
  int rc = open_parts(d, &k->node);
  if (!rc)
    rc = open_guard(&k->node, c);
  if (!rc && !(rc = start_listener(k, c)) && (rc = join(k, c)))
    tarn__klisten_stop(k->listener);
  if (rc) {
    node_free(k);
    return rc;
  }
  atomic_store(&k->node.ready, 1); /* whole now: requests are handled */
  char port[16], id[16];
  snprintf(port, sizeof port, "%d", tarn__klisten_port(k->listener));
  snprintf(id, sizeof id, "%d", (int)k->node.cfg.node_id);
  tarn__klog(&k->node, TARN_KAFKA_LOG_INFO, "kafka listening", "listen", c->listen, "port", port,
             "advertised", k->advertised, "node_id", id, "cluster_id", k->node.cluster_id, NULL);
  *out = k;
  return 0;
}

int tarn_kafka_node_port(const tarn_kafka_node *k) {
  return k ? tarn__klisten_port(k->listener) : -1;
}

int32_t tarn_kafka_node_id(const tarn_kafka_node *k) { return k->node.cfg.node_id; }

const char *tarn_kafka_node_advertised(const tarn_kafka_node *k) { return k->advertised; }

int tarn_kafka_node_close(tarn_kafka_node *k) {
  if (!k)
    return 0;
  /* Requests read are handled; produces waiting for the writer are answered
   * by its flush (inside close); then the responses are written. */
  /* issue 15: from here express produces are refused (NOT_LEADER_OR_FOLLOWER) */
  tarn__kexpress_drain(&k->node);
  tarn__klisten_drain(k->listener);
  /* issue 33 item 4: logins being hashed or delayed are answered now */
  tarn__kguard_drain(k->node.guard);
  /* JoinGroup and SyncGroup requests still waiting are answered
   * NOT_COORDINATOR (the clients find the group's next coordinator) */
  tarn__kgroups_close(k->node.groups);
  k->node.groups = NULL;
  tarn__knode_flush(&k->node);
  /* issue 15, drain: this node leaves the live list, so the others take its
   * express partitions over, and every log it leads leaves through Finish;
   * their successors' gates wait for the marks (EBUSY while this lease lives) */
  tarn__kregistry_close(k->node.registry);
  k->node.registry = NULL;
  int xrc = tarn__kexpress_close(&k->node);
  tarn__klog(&k->node, xrc ? TARN_KAFKA_LOG_WARN : TARN_KAFKA_LOG_INFO, "express drained", "error",
             xrc ? tarn_errname(xrc) : "none", NULL);
  tarn__klisten_stop(k->listener);
  node_free(k);
  return xrc;
}
