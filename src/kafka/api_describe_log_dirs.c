/* DescribeLogDirs (key 35), versions 0-4 (issue 37): tarn keeps no local
 * log directories, every partition's data is in the deployment's stores. A
 * node answers one log dir, named by the deployment's WAL root URI (without
 * its query, which may name endpoints and files, and without user info),
 * holding the partitions it is the replica of in Metadata (the leader: the
 * only replica Metadata names, api_metadata.c), so that the sizes summed over
 * the nodes count each partition once. A partition's size is the bytes of its
 * live entries, those above the trim marker (tarn__log_live_bytes: two
 * ordered lookups of the offset index); offset_lag 0 (no followers),
 * is_future_key false (no AlterReplicaLogDirs); v4's total and usable bytes
 * -1 (unknown: object storage has no capacity to report). As Kafka does, a
 * topic or partition the node does not hold is left out, a null topic list
 * means every topic, and a failure to read sizes is the log dir's error
 * (KAFKA_STORAGE_ERROR for the stores) with no topics; the top-level error
 * code (v3+) is 0 (Kafka sets it only for CLUSTER_AUTHORIZATION_FAILED). */
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/registry.h"
#include "log/retention_trim.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"

typedef tarn__k_describe_log_dirs_describe_log_dirs_topic dir_topic;
typedef tarn__k_describe_log_dirs_describe_log_dirs_partition dir_part;

/* The log dir's name: the WAL root URI, cut at '?', user info dropped. */
static tarn__kstr dir_name(tarn__knode *node, tarn__kreq *req) {
  const tarn_deployment_config *c = node->dep ? tarn_deployment_config_of(node->dep) : NULL;
  const char *u = c && c->wal_uri ? c->wal_uri : "";
  size_t n = strcspn(u, "?");
  char *o = tarn__karena_alloc(req->arena, n + 1);
  if (!o)
    return (tarn__kstr){"", 0};
  const char *s = strstr(u, "://");
  size_t j = 0, i = 0;
  if (s && (size_t)(s - u) < n) {
    size_t h = (size_t)(s - u) + 3, end = h + strcspn(u + h, "/?");
    const char *at = memchr(u + h, '@', end - h);
    memcpy(o, u, h);
    j = h;
    i = at ? (size_t)(at - u) + 1 : h;
  }
  memcpy(o + j, u + i, n - i);
  j += n - i;
  o[j] = 0;
  return (tarn__kstr){o, (int32_t)j};
}

/* 1 when partition p (of t) is asked for: every one when want is NULL. */
static int asked(const tarn__k_describe_log_dirs_describable_log_dir_topic *want, int32_t p) {
  if (!want)
    return 1;
  for (int32_t i = 0; i < want->partitions.n; i++)
    if (want->partitions.v[i] == p)
      return 1;
  return 0;
}

/* Topic t's partitions that this node holds and want names into *o (o->partitions.n
 * 0 when none). 0, TARN_ENOMEM, or the stores' error. */
static int fill_topic(tarn__knode *node, tarn__kreq *req, const tarn__knode_info *live,
                      size_t nlive, int32_t self, const tarn_kafka_topic *t,
                      const tarn__k_describe_log_dirs_describable_log_dir_topic *want,
                      dir_topic *o) {
  dir_part *ps = tarn__karena_alloc(req->arena, (t->partitions ? t->partitions : 1) * sizeof *ps);
  if (!ps)
    return TARN_ENOMEM;
  int32_t n = 0;
  for (uint32_t p = 0; p < t->partitions; p++) {
    if (!asked(want, (int32_t)p) ||
        live[tarn__kregistry_leader(live, nlive, t->uuid, p)].node_id != self)
      continue;
    uint64_t bytes;
    int rc = tarn__log_live_bytes(node->meta, t->logs[p], &bytes);
    if (rc)
      return rc;
    ps[n++] = (dir_part){(int32_t)p, (int64_t)bytes, 0, false};
  }
  size_t len = strlen(t->name);
  char *name = tarn__karena_alloc(req->arena, len + 1);
  if (!name)
    return TARN_ENOMEM;
  memcpy(name, t->name, len + 1);
  o->name = (tarn__kstr){name, (int32_t)len};
  o->partitions.n = n;
  o->partitions.v = ps;
  return 0;
}

/* The dir's topics into res (those with a partition here). 0, TARN_ENOMEM, or
 * the error of the catalog or the stores. */
static int fill_dir(tarn__knode *node, tarn__kreq *req, const tarn__k_describe_log_dirs_req *b,
                    tarn__k_describe_log_dirs_describe_log_dirs_result *res) {
  tarn__knode_info *live = NULL;
  size_t nlive = 0;
  tarn_kafka_topic *topics = NULL;
  size_t ntopics = 0;
  int all = b->topics.n < 0;
  int rc = tarn__kregistry_live(node->registry, &live, &nlive);
  if (!rc && all)
    rc = tarn_kafka_topic_list(node->catalog, &topics, &ntopics);
  if (!rc && !all && !(topics = calloc(b->topics.n ? (size_t)b->topics.n : 1, sizeof *topics)))
    rc = TARN_ENOMEM;
  if (!rc && !all)
    ntopics = (size_t)b->topics.n; /* each looked up below; the rest stay zero */
  size_t nt = ntopics;
  dir_topic *to = rc ? NULL : tarn__karena_alloc(req->arena, (nt ? nt : 1) * sizeof *to);
  if (!rc && !to)
    rc = TARN_ENOMEM;
  int32_t self = rc ? -1 : tarn__kregistry_self(node->registry)->node_id, n = 0;
  for (size_t i = 0; !rc && i < nt; i++) {
    const tarn__k_describe_log_dirs_describable_log_dir_topic *want = all ? NULL : &b->topics.v[i];
    if (!all) {
      const tarn__kstr *nm = &want->topic;
      int e = nm->len > 0 ? tarn__knode_topic(node, nm->p, (size_t)nm->len, &topics[i])
                          : TARN_ENOTFOUND;
      if (e == TARN_ENOTFOUND)
        continue; /* Kafka leaves out a topic it does not hold */
      if ((rc = e))
        break;
    }
    dir_topic *o = &to[n];
    if (!(rc = fill_topic(node, req, live, nlive, self, &topics[i], want, o)) && o->partitions.n)
      n++;
  }
  tarn_kafka_topics_free(topics, ntopics);
  free(live);
  if (!rc) {
    res->topics.n = n;
    res->topics.v = to;
  }
  return rc;
}

void tarn__kapi_describe_log_dirs(tarn__knode *node, tarn__kreq *req) {
  tarn__k_describe_log_dirs_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_describe_log_dirs_resp r;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_LOG_DIRS, 1, &r);
  tarn__k_describe_log_dirs_describe_log_dirs_result *res =
      tarn__karena_alloc(req->arena, sizeof *res);
  if (!res) {
    tarn__kreq_close(req);
    return;
  }
  memset(res, 0, sizeof *res);
  res->total_bytes = res->usable_bytes = -1;
  res->log_dir = dir_name(node, req);
  int rc = fill_dir(node, req, &b, res);
  if (rc == TARN_ENOMEM) {
    tarn__kreq_close(req);
    return;
  }
  if (rc) { /* Kafka: the dir's error, no topics */
    res->error_code = tarn__kerr_of(rc);
    res->topics.n = 0;
    res->topics.v = NULL;
  }
  r.results.n = 1;
  r.results.v = res;
  tarn__kreq_respond(req, &r);
}
