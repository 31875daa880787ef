/* CreatePartitions (key 37, versions 0-3) (issue 37, "the rest of the admin
 * surface"): a topic grows to the count asked with
 * tarn_kafka_topic_add_partitions — its new logs made first, then the stream
 * record's layout raised by one CompareAndSet (LS-091), as a create makes
 * them. Kafka's answers: INVALID_PARTITIONS with its message when the count
 * is not above the topic's, INVALID_REPLICA_ASSIGNMENT when the assignments
 * given do not number the new partitions; assignments that do are accepted
 * and their placement ignored (the stores replicate; every node serves every
 * partition, as CreateTopics does with them). The node that grew the topic
 * sees it at once; another, within its topic cache's second. docs/kafka.md,
 * "CreatePartitions". */
#include <stdio.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"
#include "util/error.h"

#define INVALID_REPLICA_ASSIGNMENT 39

static void grow(tarn__knode *node, const tarn__k_create_partitions_topic *in, int validate_only,
                 int16_t *err) {
  char name[TARN_KAFKA_TOPIC_NAME_MAX + 1];
  size_t len = in->name.len > 0 ? (size_t)in->name.len : 0;
  tarn_kafka_topic t;
  memset(&t, 0, sizeof t);
  int rc = TARN_ENOTFOUND;
  if (len && len < sizeof name && !memchr(in->name.p, 0, len)) {
    memcpy(name, in->name.p, len);
    name[len] = 0;
    rc = tarn_kafka_topic_lookup(node->catalog, name, &t); /* the catalog, not the cache */
  } else {
    rc = tarn__err(TARN_ENOTFOUND, "no topic has that name");
  }
  if (rc) {
    *err = rc == TARN_ENOTFOUND || rc == TARN_EINVAL ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION
                                                     : tarn__kerr_of(rc);
    return;
  }
  uint32_t have = t.partitions;
  tarn_kafka_topic_free(&t);
  int32_t more = in->count - (int32_t)have;
  /* Kafka's messages (its ZkAdminManager / ReplicationControlManager) */
  if (in->count < (int32_t)have) {
    *err = TARN__KERR_INVALID_PARTITIONS;
    tarn__err(TARN_EINVAL,
              "Topic currently has %u partitions, which is higher than the requested %d.", have,
              (int)in->count);
    return;
  }
  if (in->count == (int32_t)have) {
    *err = TARN__KERR_INVALID_PARTITIONS;
    tarn__err(TARN_EINVAL, "Topic already has %u partitions.", have);
    return;
  }
  if (in->count > TARN_STREAM_PARTITIONS_MAX) {
    *err = TARN__KERR_INVALID_PARTITIONS;
    tarn__err(TARN_EINVAL, "A topic has at most %d partitions in tarn; %d were requested.",
              TARN_STREAM_PARTITIONS_MAX, (int)in->count);
    return;
  }
  if (in->assignments.n >= 0 && in->assignments.n != more) {
    *err = INVALID_REPLICA_ASSIGNMENT;
    tarn__err(TARN_EINVAL, "Increasing the number of partitions by %d but %d assignments provided.",
              (int)more, (int)in->assignments.n);
    return;
  }
  for (int32_t i = 0; i < in->assignments.n; i++)
    if (in->assignments.v[i].broker_ids.n <= 0) {
      *err = INVALID_REPLICA_ASSIGNMENT;
      tarn__err(TARN_EINVAL, "Assignment %d of the new partitions names no broker.", (int)i);
      return;
    }
  if (validate_only)
    return;
  rc = tarn_kafka_topic_add_partitions(node->catalog, name, (uint32_t)in->count, NULL);
  tarn__knode_topic_forget(node, name, len);
  *err = rc == 0                ? 0
         : rc == TARN_ENOTFOUND ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION
         : rc == TARN_EINVAL    ? TARN__KERR_INVALID_PARTITIONS
                                : tarn__kerr_of(rc);
}

void tarn__kapi_create_partitions(tarn__knode *node, tarn__kreq *req) {
  tarn__k_create_partitions_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_create_partitions_resp r;
  tarn__kmsg_init(TARN__KAPI_CREATE_PARTITIONS, 1, &r);
  int32_t n;
  tarn__k_create_partitions_result *o = tarn__kresp_entries(req, b.topics.n, sizeof *o, &n);
  if (!o && b.topics.n > 0) {
    tarn__kreq_close(req);
    return;
  }
  for (int32_t i = 0; i < n; i++) {
    const tarn__k_create_partitions_topic *t = &b.topics.v[i];
    o[i].name = t->name;
    o[i].error_message = (tarn__kstr){NULL, -1};
    /* Kafka refuses a topic named twice in one request */
    for (int32_t j = 0; j < i; j++)
      if (t->name.len == b.topics.v[j].name.len &&
          memcmp(t->name.p, b.topics.v[j].name.p, (size_t)(t->name.len > 0 ? t->name.len : 0)) ==
              0) {
        o[i].error_code = TARN__KERR_INVALID_REQUEST;
        tarn__err(TARN_EINVAL, "Duplicate topic in request.");
      }
    if (!o[i].error_code)
      grow(node, t, b.validate_only, &o[i].error_code);
    if (o[i].error_code)
      o[i].error_message = tarn__kresp_str(req, tarn_errmsg());
  }
  r.results.n = n;
  r.results.v = o;
  tarn__kreq_respond(req, &r);
}
