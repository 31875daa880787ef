/* A `tarn serve` node (node.h): health, the scheduler and the endpoint. */
#include "server/node.h"

#include <jansson.h>
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

struct tarn_srv_node {
  struct tarn_deployment *d;
  tarn_srv_options o;
  tarn_srv_sched *sched;
  tarn_srv_http *http;
  void *compaction;
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
  o->wal_grace_ms = 600000;
  o->stats_interval_ms = 10000;
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

static int health(void *arg, char *body, size_t n) {
  tarn_srv_node *node = arg;
  char mw[256] = "", ww[256] = "", cw[256] = "";
  tarn_meta_rec r;
  int rc = tarn_meta_get(tarn_deployment_meta(node->d), TARN_CATALOG_PARTITION,
                         "/catalog/deployment", &r);
  int meta_ok = rc == 0 || rc == TARN_ENOTFOUND;
  if (rc == 0)
    tarn_meta_rec_free(&r);
  else if (!meta_ok)
    snprintf(mw, sizeof mw, "%s", tarn_errmsg());
  if (meta_ok && tarn_meta_session_ok(tarn_deployment_meta(node->d))) {
    meta_ok = 0;
    snprintf(mw, sizeof mw, "the metadata-store session ended");
  }
  int wal_ok = store_ok(tarn_deployment_wal(node->d), ww, sizeof ww);
  int comp_ok = store_ok(tarn_deployment_compacted(node->d), cw, sizeof cw);
  int ok = meta_ok && wal_ok && comp_ok;
  tarn_metrics_set("tarn_serve_stores_ok", ok, NULL);
  json_t *o = json_object();
  json_object_set_new(o, "status", json_string(ok ? "ok" : "unavailable"));
  json_object_set_new(o, "meta", json_string(meta_ok ? "ok" : mw));
  json_object_set_new(o, "wal", json_string(wal_ok ? "ok" : ww));
  json_object_set_new(o, "compacted", json_string(comp_ok ? "ok" : cw));
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  snprintf(body, n, "%s", s ? s : "{\"status\":\"unavailable\"}");
  free(s);
  return ok;
}

static int health_job(void *arg, atomic_int *stop) {
  (void)stop;
  char body[1024];
  if (!health(arg, body, sizeof body))
    tarn_srv_log(TARN_SRV_WARN, "stores unavailable", "health", body, NULL);
  return 0;
}

int tarn_srv_node_start(struct tarn_deployment *d, const tarn_srv_options *o,
                        tarn_srv_node **out) {
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
  tarn_srv_job jobs[16];
  int nj = 0;
  jobs[nj++] = (tarn_srv_job){"health", 5000, 1, health_job, n};
  int rc = tarn_srv_compaction_jobs(d, o, jobs + nj, &n->compaction);
  if (rc < 0) {
    free(n);
    return rc;
  }
  nj += rc;
  if ((rc = tarn_srv_http_start(o->listen, health, n, &n->http))) {
    tarn_srv_compaction_free(n->compaction);
    free(n);
    return rc;
  }
  if ((rc = tarn_srv_sched_start(jobs, nj, &n->sched))) {
    tarn_srv_http_stop(n->http);
    tarn_srv_compaction_free(n->compaction);
    free(n);
    return rc;
  }
  tarn_metrics_set("tarn_serve_up", 1, NULL);
  for (int i = 0; i < nj; i++) {
    char iv[24], th[16];
    snprintf(iv, sizeof iv, "%d", jobs[i].interval_ms);
    snprintf(th, sizeof th, "%d", jobs[i].threads);
    tarn_srv_log(TARN_SRV_INFO, "job scheduled", "job", jobs[i].name, "interval_ms", iv,
                 "threads", th, NULL);
  }
  *out = n;
  return 0;
}

int tarn_srv_node_port(const tarn_srv_node *n) { return tarn_srv_http_port(n->http); }

void tarn_srv_node_stop(tarn_srv_node *n) {
  if (!n)
    return;
  tarn_srv_sched_stop(n->sched);
  tarn_srv_http_stop(n->http);
  tarn_srv_compaction_free(n->compaction);
  tarn_metrics_set("tarn_serve_up", 0, NULL);
  free(n);
}
