/* OffsetDelete (key 47), version 0 (issue 37; group.h): deletes a group's
 * committed offsets of the named partitions. As Kafka's broker: a topic that
 * does not exist, or a partition past its count, is UNKNOWN_TOPIC_OR_PARTITION;
 * then the coordinator answers for the group: GROUP_ID_NOT_FOUND,
 * NON_EMPTY_GROUP, NOT_COORDINATOR (request-wide, with no topics), or per
 * partition GROUP_SUBSCRIBED_TO_TOPIC while its members subscribe to it. */
#include "kafka/api_group.h"

#include "kafka/group.h"
#include "tarn/kafka_topics.h"

/* Whether partition p of the topic named nm exists; 0 also when the topic
 * cannot be read (then UNKNOWN_TOPIC_OR_PARTITION, as for a missing one). */
static int partition_exists(tarn__knode *node, tarn__kstr nm, int32_t p) {
  tarn_kafka_topic t;
  if (nm.len <= 0 || tarn__knode_topic(node, nm.p, (size_t)nm.len, &t))
    return 0;
  int ok = p >= 0 && (uint32_t)p < t.partitions;
  tarn_kafka_topic_free(&t);
  return ok;
}

void tarn__kapi_offset_delete(tarn__knode *node, tarn__kreq *req) {
  tarn__k_offset_delete_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_offset_delete_resp r;
  tarn__kmsg_init(TARN__KAPI_OFFSET_DELETE, 1, &r);
  size_t nt = b.topics.n > 0 ? (size_t)b.topics.n : 0, n = 0;
  for (size_t i = 0; i < nt; i++)
    n += b.topics.v[i].partitions.n > 0 ? (size_t)b.topics.v[i].partitions.n : 0;
  tarn__koffset *o = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *o);
  tarn__koffset **at = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *at);
  tarn__k_offset_delete_offset_delete_response_topic *rt =
      tarn__karena_alloc(req->arena, (nt ? nt : 1) * sizeof *rt);
  tarn__k_offset_delete_offset_delete_response_partition *rp =
      tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *rp);
  char *group = tarn__kg_cstr(req, b.group_id);
  if (!o || !at || !rt || !rp) {
    tarn__kreq_close(req);
    return;
  }
  int16_t e = !group || !*group ? TARN__KG_INVALID_GROUP_ID : tarn__kg_check(node, group);
  size_t k = 0, valid = 0;
  for (size_t i = 0; !e && i < nt; i++) {
    const tarn__k_offset_delete_offset_delete_request_topic *t = &b.topics.v[i];
    char *topic = tarn__kg_cstr(req, t->name);
    size_t np = t->partitions.n > 0 ? (size_t)t->partitions.n : 0;
    rt[i].name = t->name;
    rt[i].partitions.n = (int32_t)np;
    rt[i].partitions.v = &rp[k];
    for (size_t j = 0; j < np; j++, k++) {
      int32_t p = t->partitions.v[j].partition_index;
      rp[k].partition_index = p;
      rp[k].error_code = TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
      at[k] = NULL;
      if (!topic || !partition_exists(node, t->name, p))
        continue;
      o[valid].topic = topic;
      o[valid].partition = p;
      at[k] = &o[valid++];
    }
  }
  if (!e)
    e = tarn__kgroups_delete_offsets(node->groups, group, o, valid, tarn__kg_now());
  r.error_code = e;
  if (!e) { /* a request-wide error answers no topics, as Kafka's */
    for (size_t i = 0; i < k; i++)
      if (at[i])
        rp[i].error_code = at[i]->error;
    r.topics.n = (int32_t)nt;
    r.topics.v = rt;
  }
  tarn__kreq_respond(req, &r);
}
