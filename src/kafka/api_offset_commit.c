/* OffsetCommit (key 8), versions 0-7 (group.h): v0 and a commit with
 * generation -1 and no member are plain commits; otherwise the member of the
 * group's current generation commits (v7 names a static member's instance
 * ID: a replaced one is FENCED_INSTANCE_ID). The offsets are records in the
 * metadata store, so a restart or another coordinator keeps them. */
#include "kafka/api_group.h"

#include <string.h>

#include "kafka/group.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"

/* Issue 37 "Lifecycle": an offset is committed on a live partition only, as
 * Kafka's OffsetCommit answers UNKNOWN_TOPIC_OR_PARTITION otherwise, and it
 * carries the topic's ID, so that a topic deleted and created again under
 * the same name never reads the old incarnation's offsets. Returns the
 * partition's error, 0 when it may be committed (its ID in o). */
static int16_t commit_target(tarn__knode *node, tarn__kstr name, tarn__koffset *o) {
  tarn_kafka_topic t;
  int rc = tarn__knode_topic(node, name.p, name.len > 0 ? (size_t)name.len : 0, &t);
  if (rc)
    return rc == TARN_ENOTFOUND ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION : tarn__kerr_of(rc);
  int16_t e = o->partition < 0 || (uint32_t)o->partition >= t.partitions
                  ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION
                  : 0;
  memcpy(o->topic_id, t.uuid, sizeof o->topic_id);
  tarn_kafka_topic_free(&t);
  return e;
}

void tarn__kapi_offset_commit(tarn__knode *node, tarn__kreq *req) {
  tarn__k_offset_commit_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_offset_commit_resp r;
  tarn__kmsg_init(TARN__KAPI_OFFSET_COMMIT, 1, &r);
  size_t nt = b.topics.n > 0 ? (size_t)b.topics.n : 0, n = 0;
  for (size_t i = 0; i < nt; i++)
    n += b.topics.v[i].partitions.n > 0 ? (size_t)b.topics.v[i].partitions.n : 0;
  tarn__koffset *o = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *o);
  tarn__k_offset_commit_offset_commit_response_topic *rt =
      tarn__karena_alloc(req->arena, (nt ? nt : 1) * sizeof *rt);
  tarn__k_offset_commit_offset_commit_response_partition *rp =
      tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *rp);
  if (!o || !rt || !rp) {
    tarn__kreq_close(req);
    return;
  }
  char *group = tarn__kg_cstr(req, b.group_id);
  char *member = req->api_version >= 1 ? tarn__kg_cstr(req, b.member_id) : "";
  int32_t generation = req->api_version >= 1 ? b.generation_id_or_member_epoch : -1;
  const char *instance;
  int bad = tarn__kg_instance(req, b.group_instance_id, &instance);
  int16_t e = !group || !member || bad ? TARN__KG_INVALID_REQUEST : tarn__kg_check(node, group);
  size_t k = 0;
  for (size_t i = 0; i < nt; i++) {
    const tarn__k_offset_commit_offset_commit_request_topic *t = &b.topics.v[i];
    char *topic = tarn__kg_cstr(req, t->name);
    size_t np = t->partitions.n > 0 ? (size_t)t->partitions.n : 0;
    rt[i].name = t->name;
    rt[i].partitions.n = (int32_t)np;
    rt[i].partitions.v = &rp[k];
    for (size_t j = 0; j < np; j++, k++) {
      const tarn__k_offset_commit_offset_commit_request_partition *p = &t->partitions.v[j];
      o[k].topic = topic ? topic : "";
      o[k].partition = p->partition_index;
      o[k].offset = p->committed_offset;
      o[k].leader_epoch = req->api_version >= 6 ? p->committed_leader_epoch : -1;
      o[k].metadata = tarn__kg_cstr(req, p->committed_metadata);
      rp[k].partition_index = p->partition_index;
      if (!topic || !o[k].metadata)
        e = e ? e : TARN__KG_INVALID_REQUEST;
    }
  }
  /* the partitions of live topics go to the coordinator, the others are
   * answered here: c[] holds the former, at[] their places in o[] */
  tarn__koffset *c = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *c);
  size_t *at = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *at), nc = 0;
  if (!c || !at) {
    tarn__kreq_close(req);
    return;
  }
  k = 0;
  for (size_t i = 0; !e && i < nt; i++)
    for (int32_t j = 0; j < b.topics.v[i].partitions.n; j++, k++) {
      o[k].error = commit_target(node, b.topics.v[i].name, &o[k]);
      if (!o[k].error)
        c[nc] = o[k], at[nc++] = k;
    }
  if (!e && nc)
    tarn__kgroups_commit(node->groups, group, generation, member, instance, c, nc, tarn__kg_now());
  for (size_t i = 0; !e && i < nc; i++)
    o[at[i]].error = c[i].error;
  for (size_t i = 0; i < n; i++)
    rp[i].error_code = e ? e : o[i].error;
  r.topics.n = (int32_t)nt;
  r.topics.v = rt;
  tarn__kreq_respond(req, &r);
}
