/* DescribeProducers (key 61), version 0 (issue 37; KIP-664): the idempotent
 * producers with state on each named partition, read from the metadata
 * store (producer.c, tarn__kprod_describe), which every node shares: any
 * node answers for any partition (Kafka asks the partition's leader and
 * answers NOT_LEADER_OR_FOLLOWER elsewhere). No transactions: coordinator
 * epoch -1, no open transaction (-1). A topic that does not exist, or a
 * partition past its count, is UNKNOWN_TOPIC_OR_PARTITION. */
#include <stdlib.h>

#include "kafka/api.h"
#include "kafka/producer.h"
#include "kafka/proto/kproto.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"

typedef tarn__k_describe_producers_partition_response part_resp;

/* Partition p of topic t into o; 0, or TARN_ENOMEM. */
static int describe_partition(tarn__knode *node, tarn__kreq *req, const tarn_kafka_topic *t,
                              int32_t p, part_resp *o) {
  o->partition_index = p;
  uint64_t log;
  if (p < 0 || tarn_kafka_topic_log(t, (uint32_t)p, &log)) {
    o->error_code = TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
    return 0;
  }
  tarn__kprod_desc *d;
  size_t n;
  int rc = node->producers ? tarn__kprod_describe(node->producers, log, &d, &n) : TARN_EINVAL;
  if (rc) {
    o->error_code = tarn__kerr_of(rc);
    return 0;
  }
  tarn__k_describe_producers_producer_state *v =
      tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *v);
  for (size_t i = 0; v && i < n; i++)
    v[i] = (tarn__k_describe_producers_producer_state){
        d[i].pid, d[i].epoch, d[i].last_sequence, d[i].last_timestamp, -1, -1};
  free(d);
  if (!v)
    return TARN_ENOMEM;
  o->active_producers.n = (int32_t)n;
  o->active_producers.v = v;
  return 0;
}

void tarn__kapi_describe_producers(tarn__knode *node, tarn__kreq *req) {
  tarn__k_describe_producers_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_describe_producers_resp r;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_PRODUCERS, 1, &r);
  int32_t nt;
  tarn__k_describe_producers_topic_response *rt =
      tarn__kresp_entries(req, b.topics.n, sizeof *rt, &nt);
  int rc = rt || b.topics.n <= 0 ? 0 : TARN_ENOMEM;
  for (int32_t i = 0; !rc && i < nt; i++) {
    const tarn__k_describe_producers_topic_request *q = &b.topics.v[i];
    rt[i].name = q->name;
    int32_t np;
    part_resp *rp = tarn__kresp_entries(req, q->partition_indexes.n, sizeof *rp, &np);
    if (!rp && q->partition_indexes.n > 0) {
      rc = TARN_ENOMEM;
      break;
    }
    rt[i].partitions.n = np;
    rt[i].partitions.v = rp;
    tarn_kafka_topic t;
    int e = q->name.len > 0 ? tarn__knode_topic(node, q->name.p, (size_t)q->name.len, &t)
                            : TARN_ENOTFOUND;
    for (int32_t j = 0; !rc && j < np; j++) {
      if (e) {
        rp[j].partition_index = q->partition_indexes.v[j];
        rp[j].error_code =
            e == TARN_ENOTFOUND ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION : tarn__kerr_of(e);
      } else {
        rc = describe_partition(node, req, &t, q->partition_indexes.v[j], &rp[j]);
      }
    }
    if (!e)
      tarn_kafka_topic_free(&t);
  }
  if (rc) {
    tarn__kreq_close(req);
    return;
  }
  r.topics.n = nt;
  r.topics.v = rt;
  tarn__kreq_respond(req, &r);
}
