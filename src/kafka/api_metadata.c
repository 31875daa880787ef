/* Metadata (key 3), versions 0-8. */
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/registry.h"
#include "tarn/kafka_topics.h"

/* The advertised leader of a partition: rendezvous hashing of (topic ID,
 * partition) over the live nodes (tarn__kregistry_leader), so every node names
 * the same one and the partitions spread over the nodes. A standard topic's
 * partition is accepted by any node (leases order the writes); an express
 * topic's only by its leader, which hosts the log's express writer (issue 15;
 * api_produce.c). */
static int32_t leader_of(const tarn__knode_info *live, size_t n, const tarn_kafka_topic *t,
                         uint32_t p) {
  return live[tarn__kregistry_leader(live, n, t->uuid, p)].node_id;
}

/* Kafka's topic-name rule (the binding's check, on a name not NUL-terminated). */
static int name_ok(tarn__kstr nm) {
  char buf[TARN_KAFKA_TOPIC_NAME_MAX + 1];
  if (nm.len <= 0 || nm.len > TARN_KAFKA_TOPIC_NAME_MAX)
    return 0;
  memcpy(buf, nm.p, (size_t)nm.len);
  buf[nm.len] = 0;
  return strlen(buf) == (size_t)nm.len && tarn_kafka_topic_name_check(buf) == 0;
}

static tarn__kstr kstr(const char *s) { return (tarn__kstr){s, (int32_t)strlen(s)}; }

/* Fills one topic's entry (error 0) with its partitions. */
static int fill_topic(tarn__kreq *req, const tarn__knode_info *live, size_t nlive,
                      const tarn_kafka_topic *t, tarn__k_metadata_metadata_response_topic *o) {
  o->error_code = 0;
  o->name = kstr(t->name);
  memcpy(o->topic_id, t->uuid, sizeof o->topic_id); /* v10+ (KIP-516) */
  /* Kafka's rule (Topic.isInternal): by name, also for a topic an older
   * tarn auto-created under that name */
  o->is_internal = tarn_kafka_topic_reserved(t->name, strlen(t->name)) == TARN_KAFKA_NAME_INTERNAL;
  o->topic_authorized_operations = INT32_MIN; /* not asked for: Kafka's "omitted" */
  tarn__k_metadata_metadata_response_partition *ps =
      tarn__karena_alloc(req->arena, (t->partitions ? t->partitions : 1) * sizeof *ps);
  int32_t *ids = tarn__karena_alloc(req->arena, (t->partitions ? t->partitions : 1) * sizeof *ids);
  if (!ps || !ids)
    return TARN_ENOMEM;
  for (uint32_t p = 0; p < t->partitions; p++) {
    memset(&ps[p], 0, sizeof ps[p]);
    ps[p].error_code = 0;
    ps[p].partition_index = (int32_t)p;
    ids[p] = leader_of(live, nlive, t, p);
    ps[p].leader_id = ids[p];
    ps[p].leader_epoch = 0;    /* constant: clients skip KIP-320 validation */
    ps[p].replica_nodes.n = 1; /* replicas = ISR = the leader: the data is in the stores */
    ps[p].replica_nodes.v = &ids[p];
    ps[p].isr_nodes.n = 1;
    ps[p].isr_nodes.v = &ids[p];
    ps[p].offline_replicas.n = 0;
  }
  o->partitions.n = (int32_t)t->partitions;
  o->partitions.v = ps;
  return 0;
}

/* One topic the request names: looked up, auto-created when allowed (may_create),
 * and filled, or its error code set. Returns nonzero only when out of memory. */
static int named_topic(tarn__knode *node, tarn__kreq *req, const tarn__knode_info *live,
                       size_t nlive, int may_create, tarn__kstr nm, tarn_kafka_topic *t,
                       tarn__k_metadata_metadata_response_topic *o) {
  o->name = nm;
  if (nm.len < 0) {      /* v12: by topic ID alone, which tarn does not look up */
    o->error_code = 100; /* UNKNOWN_TOPIC_ID */
    return 0;
  }
  if (nm.len == 0) {
    o->error_code = TARN__KERR_INVALID_TOPIC_EXCEPTION;
    return 0;
  }
  /* issue 37: a name Kafka reserves is never auto-created (Burrow asks for
   * __consumer_offsets); it is reported as Kafka reports an internal topic
   * that does not exist: UNKNOWN_TOPIC_OR_PARTITION, is_internal */
  int reserved = tarn_kafka_topic_reserved(nm.p, (size_t)nm.len);
  o->is_internal = reserved == TARN_KAFKA_NAME_INTERNAL;
  int rc = tarn__knode_topic(node, nm.p, (size_t)nm.len, t);
  if (rc == TARN_ENOTFOUND && may_create && !reserved) {
    char *name = tarn__karena_alloc(req->arena, (size_t)nm.len + 1);
    if (!name)
      return TARN_ENOMEM;
    memcpy(name, nm.p, (size_t)nm.len);
    /* no configs, but not a NULL array: tarn_kafka_topic_create copies it */
    tarn_stream_prop none[1] = {{NULL, NULL}};
    rc = tarn_kafka_topic_create(node->catalog, name, (uint32_t)node->cfg.auto_create_partitions,
                                 none, 0, t);
    if (rc == TARN_EEXIST) /* another client created it meanwhile */
      rc = tarn_kafka_topic_lookup(node->catalog, name, t);
    tarn__knode_topic_forget(node, nm.p, (size_t)nm.len);
    if (rc == TARN_EINVAL) {
      o->error_code = TARN__KERR_INVALID_TOPIC_EXCEPTION;
      return 0;
    }
  }
  if (rc == TARN_ENOTFOUND) {
    o->error_code =
        name_ok(nm) ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION : TARN__KERR_INVALID_TOPIC_EXCEPTION;
    return 0;
  }
  if (rc) {
    o->error_code = tarn__kerr_of(rc);
    return 0;
  }
  return fill_topic(req, live, nlive, t, o);
}

/* The live nodes as the response's brokers; the lowest live ID the controller. */
static int fill_brokers(const tarn__knode *node, tarn__kreq *req, const tarn__knode_info *live,
                        size_t nlive, tarn__k_metadata_resp *r) {
  tarn__k_metadata_metadata_response_broker *br =
      tarn__karena_alloc(req->arena, nlive * sizeof *br);
  if (!br)
    return TARN_ENOMEM;
  for (size_t i = 0; i < nlive; i++) {
    memset(&br[i], 0, sizeof br[i]);
    br[i].node_id = live[i].node_id;
    br[i].host = kstr(live[i].host);
    br[i].port = live[i].port;
    br[i].rack = (tarn__kstr){NULL, -1};
  }
  r->brokers.n = (int32_t)nlive;
  r->brokers.v = br;
  r->cluster_id = kstr(node->cluster_id); /* issue 37: the deployment's (node.c) */
  r->controller_id = live[0].node_id;     /* the lowest live ID: the same on every node */
  return 0;
}

void tarn__kapi_metadata(tarn__knode *node, tarn__kreq *req) {
  tarn__k_metadata_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_metadata_resp r;
  tarn__kmsg_init(TARN__KAPI_METADATA, 1, &r);
  tarn__knode_info *live = NULL;
  size_t nlive = 0;
  tarn_kafka_topic *topics = NULL;
  size_t ntopics = 0;
  int rc = tarn__kregistry_live(node->registry, &live, &nlive);
  if (rc) { /* the store cannot be read: at least this node serves */
    live = malloc(sizeof *live);
    if (!live) {
      tarn__kreq_close(req);
      return;
    }
    *live = *tarn__kregistry_self(node->registry);
    nlive = 1;
  }
  if (fill_brokers(node, req, live, nlive, &r))
    goto fail;

  /* v0: an empty list means every topic; from v1 a null list does (and an
   * empty one none). */
  int all = b.topics.n < 0 || (req->api_version == 0 && b.topics.n == 0);
  if (all) {
    if ((rc = tarn_kafka_topic_list(node->catalog, &topics, &ntopics)))
      goto fail;
  } else {
    topics = calloc(b.topics.n ? (size_t)b.topics.n : 1, sizeof *topics);
    if (!topics)
      goto fail;
    ntopics = (size_t)b.topics.n;
  }
  tarn__k_metadata_metadata_response_topic *to =
      tarn__karena_alloc(req->arena, (ntopics ? ntopics : 1) * sizeof *to);
  if (!to)
    goto fail;
  /* Auto-creation is the node's option, and from v4 also the request's. */
  int may_create =
      node->cfg.auto_create_topics && (req->api_version < 4 || b.allow_auto_topic_creation);
  for (size_t i = 0; i < ntopics; i++) {
    memset(&to[i], 0, sizeof to[i]);
    to[i].topic_authorized_operations = INT32_MIN;
    if (all) {
      if (fill_topic(req, live, nlive, &topics[i], &to[i]))
        goto fail;
      continue;
    }
    if (named_topic(node, req, live, nlive, may_create, b.topics.v[i].name, &topics[i], &to[i]))
      goto fail;
  }
  r.topics.n = (int32_t)ntopics;
  r.topics.v = to;
  tarn__kreq_respond(req, &r);
  tarn_kafka_topics_free(topics, ntopics);
  free(live);
  return;
fail:
  tarn_kafka_topics_free(topics, ntopics);
  free(live);
  tarn__kreq_close(req);
}
