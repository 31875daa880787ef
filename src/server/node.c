/* A `tarn serve` node (node.h): health, the scheduler and the endpoint. */
#include "server/node.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http.h"
#include "server/sched.h"
#include "server/srvlog.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/metrics.h"
#include "tarn/timing.h"

/* The outcome of the last store check (check_stores). */
typedef struct health_state {
  int meta_ok, wal_ok, comp_ok;
  char meta[256], wal[256], comp[256]; /* the error of a store that failed */
  double at;                           /* tarn_metrics_now() of the check */
} health_state;

#define HEALTH_INTERVAL_MS 5000
#define HEALTH_STALE_S (3 * HEALTH_INTERVAL_MS / 1000.0)

struct tarn_srv_node {
  struct tarn_deployment *d;
  tarn_srv_options o;
  tarn_srv_sched *sched;
  tarn_srv_http *http;
  void *compaction;
  void *kafka;
  void *express;
  pthread_mutex_t health_mu; /* guards health: the job writes it, the HTTP thread reads it */
  health_state health;
};

void tarn_srv_options_default(tarn_srv_options *o) {
  memset(o, 0, sizeof *o);
  o->listen = TARN_SERVE_DEFAULT_LISTEN;
  o->compact = 1;
  o->compact_workers = 2;
  o->compact_interval_ms = 5000;
  o->compact_max_age_ms = 180000;
  o->compact_max_range_bytes = 256u << 20;
  o->reclaim = 1;
  o->reclaim_interval_ms = 60000;
  o->orphan_grace_ms = 3600000;
  o->wal_gc = 1;
  o->wal_gc_interval_ms = 60000;
  o->retention = 1;
  o->retention_check_ms = 300000;
  o->wal_grace_ms = 600000;
  o->stats_interval_ms = 10000;
  /* 16 addresses' worth of --http-max-per-ip, not 4 (issue 33): epoll, 16 KiB each */
  o->http_max_connections = 256;
  o->http_max_per_ip = 16;
  o->http_timeout_s = 10;
  o->kafka_node_id = -1;
  o->kafka_batch_ms = -1;
  o->express_latency_budget_ms = -1;
  o->kafka_failed_auth_delay_ms = -1;
  o->express_takeover = 1;
  o->express_takeover_interval_ms = 1000;
}

/* A store answers when a read of it succeeds (a missing key or an empty root
 * is an answer). */
static int store_ok(tarn_objstore *s, char *why, size_t n) {
  tarn_objstore_listing l;
  int rc = tarn_objstore_list(s, "", NULL, 1, &l);
  if (rc)
    snprintf(why, n, "%s", tarn_errmsg());
  else
    tarn_objstore_listing_free(&l);
  return rc == 0;
}

/* Checks the stores (a metadata Get, the session, a one-name LIST of each
 * root) and records the outcome in the node's health state. Only the health
 * job (and the node's start) calls it: /healthz answers from the state, so a
 * request makes no store call and a hung store cannot hold the HTTP thread. */
static void check_stores(tarn_srv_node *node) {
  health_state h = {0};
  tarn_meta_rec r;
  int rc = tarn_meta_get(tarn_deployment_meta(node->d), TARN_CATALOG_PARTITION,
                         "/catalog/deployment", &r);
  h.meta_ok = rc == 0 || rc == TARN_ENOTFOUND;
  if (rc == 0)
    tarn_meta_rec_free(&r);
  else if (!h.meta_ok)
    snprintf(h.meta, sizeof h.meta, "%s", tarn_errmsg());
  if (h.meta_ok && tarn_meta_session_ok(tarn_deployment_meta(node->d))) {
    h.meta_ok = 0;
    snprintf(h.meta, sizeof h.meta, "the metadata-store session ended");
  }
  h.wal_ok = store_ok(tarn_deployment_wal(node->d), h.wal, sizeof h.wal);
  h.comp_ok = store_ok(tarn_deployment_compacted(node->d), h.comp, sizeof h.comp);
  h.at = tarn_metrics_now();
  tarn_metrics_set("tarn_serve_stores_ok", h.meta_ok && h.wal_ok && h.comp_ok, NULL);
  pthread_mutex_lock(&node->health_mu);
  node->health = h;
  pthread_mutex_unlock(&node->health_mu);
}

/* The endpoint's /healthz, from the last check. A check older than
 * HEALTH_STALE_S (the health job hangs in a store call past its timeouts)
 * is unavailable too: no answer is not an answer. */
static int health(void *arg, char *body, size_t n) {
  tarn_srv_node *node = arg;
  pthread_mutex_lock(&node->health_mu);
  health_state h = node->health;
  pthread_mutex_unlock(&node->health_mu);
  double age = tarn_metrics_now() - h.at;
  int fresh = age <= HEALTH_STALE_S;
  int ok = fresh && h.meta_ok && h.wal_ok && h.comp_ok;
  json_t *o = json_object();
  json_object_set_new(o, "status", json_string(ok ? "ok" : "unavailable"));
  json_object_set_new(o, "meta", json_string(h.meta_ok ? "ok" : h.meta));
  json_object_set_new(o, "wal", json_string(h.wal_ok ? "ok" : h.wal));
  json_object_set_new(o, "compacted", json_string(h.comp_ok ? "ok" : h.comp));
  json_object_set_new(o, "checked_ms_ago", json_integer((json_int_t)(age * 1000)));
  if (!fresh)
    json_object_set_new(o, "reason", json_string("the last store check is too old"));
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  snprintf(body, n, "%s", s ? s : "{\"status\":\"unavailable\"}");
  free(s);
  return ok;
}

static int health_job(void *arg, atomic_int *stop) {
  (void)stop;
  tarn_srv_node *node = arg;
  tarn_meta *m = tarn_deployment_meta(node->d);
  /* A lost session (a stall, a partition) would otherwise stop every job
   * that needs a lease or a lock until a restart: open a new one. Leases of
   * the old session are lost to their holders (tarn_lease_check), and their
   * changes were guarded by the old records, so none lands late. */
  if (tarn_meta_session_ok(m)) {
    if (tarn_meta_session_renew(m) == 0)
      tarn_srv_log(TARN_SRV_WARN, "metadata-store session lost; a new one opened", NULL);
    else
      tarn_srv_log(TARN_SRV_ERROR, "metadata-store session lost; opening a new one failed", "error",
                   tarn_errmsg(), NULL);
  }
  check_stores(node);
  char body[1024];
  if (!health(node, body, sizeof body))
    tarn_srv_log(TARN_SRV_WARN, "stores unavailable", "health", body, NULL);
  return 0;
}

int tarn_srv_node_start(struct tarn_deployment *d, const tarn_srv_options *o, tarn_srv_node **out) {
  *out = NULL;
  tarn_srv_node *n = calloc(1, sizeof *n);
  if (!n)
    return TARN_ENOMEM;
  n->d = d;
  n->o = *o;
  /* LS-085, LS-086: a node's WAL grace must outlast the deployment's writers */
  tarn_timing mine = {o->wal_gc ? o->wal_grace_ms : -1, -1, -1, -1};
  int trc = tarn_timing_check_process(tarn_deployment_meta(d), &mine, "serve", NULL);
  if (trc) {
    free(n);
    return trc;
  }
  pthread_mutex_init(&n->health_mu, NULL);
  /* The first check before the endpoint opens: /healthz never answers from no check. */
  check_stores(n);
  tarn_srv_job jobs[24]; /* health, compaction's, the Kafka node's (at most 8), express's */
  int nj = 0;
  jobs[nj++] = (tarn_srv_job){"health", HEALTH_INTERVAL_MS, 1, health_job, n};
  int rc = tarn_srv_compaction_jobs(d, o, jobs + nj, &n->compaction);
  if (rc < 0) {
    pthread_mutex_destroy(&n->health_mu);
    free(n);
    return rc;
  }
  nj += rc;
  if ((rc = tarn_srv_kafka_jobs(d, o, jobs + nj, &n->kafka)) < 0) {
    tarn_srv_compaction_free(n->compaction);
    pthread_mutex_destroy(&n->health_mu);
    free(n);
    return rc;
  }
  nj += rc;
  if ((rc = tarn_srv_express_jobs(d, o, jobs + nj, &n->express)) < 0) {
    tarn_srv_kafka_free(n->kafka);
    tarn_srv_compaction_free(n->compaction);
    pthread_mutex_destroy(&n->health_mu);
    free(n);
    return rc;
  }
  nj += rc;
  tarn_srv_http_limits lim = {o->http_max_connections, o->http_max_per_ip, o->http_timeout_s,
                              o->http_tls_cert, o->http_tls_key};
  if ((rc = tarn_srv_http_start(o->listen, &lim, health, n, &n->http))) {
    tarn_srv_express_free(n->express);
    tarn_srv_kafka_free(n->kafka);
    tarn_srv_compaction_free(n->compaction);
    pthread_mutex_destroy(&n->health_mu);
    free(n);
    return rc;
  }
  if ((rc = tarn_srv_sched_start(jobs, nj, &n->sched))) {
    tarn_srv_http_stop(n->http);
    tarn_srv_express_free(n->express);
    tarn_srv_kafka_free(n->kafka);
    tarn_srv_compaction_free(n->compaction);
    pthread_mutex_destroy(&n->health_mu);
    free(n);
    return rc;
  }
  tarn_metrics_set("tarn_serve_up", 1, NULL);
  for (int i = 0; i < nj; i++) {
    char iv[24], th[16];
    snprintf(iv, sizeof iv, "%d", jobs[i].interval_ms);
    snprintf(th, sizeof th, "%d", jobs[i].threads);
    tarn_srv_log(TARN_SRV_INFO, "job scheduled", "job", jobs[i].name, "interval_ms", iv, "threads",
                 th, NULL);
  }
  *out = n;
  return 0;
}

int tarn_srv_node_port(const tarn_srv_node *n) { return tarn_srv_http_port(n->http); }

int tarn_srv_node_kafka_port(const tarn_srv_node *n) { return tarn_srv_kafka_port_of(n->kafka); }

void tarn_srv_node_stop(tarn_srv_node *n) {
  if (!n)
    return;
  tarn_srv_sched_stop(n->sched);
  tarn_srv_kafka_free(n->kafka);
  tarn_srv_http_stop(n->http);
  tarn_srv_compaction_free(n->compaction);
  tarn_srv_express_free(n->express);
  tarn_metrics_set("tarn_serve_up", 0, NULL);
  pthread_mutex_destroy(&n->health_mu);
  free(n);
}
