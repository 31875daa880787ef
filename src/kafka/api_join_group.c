/* JoinGroup (key 11), versions 0-5 (group.h): the answer comes when the
 * group's join phase ends, from the coordinator's tick or another member's
 * request, so the worker thread is never held for a rebalance. v5 carries
 * the group instance ID of a static member (KIP-345), and the leader's
 * answer each member's. */
#include "kafka/api_group.h"

#include <stdio.h>
#include <string.h>

#include "kafka/group.h"

static void joined(void *arg, const tarn__kjoin_resp *j) {
  tarn__kreq *req = arg;
  tarn__k_join_group_resp r;
  tarn__kmsg_init(TARN__KAPI_JOIN_GROUP, 1, &r);
  r.error_code = j->error;
  r.generation_id = j->generation;
  r.protocol_name = tarn__kg_kstr(j->protocol_name ? j->protocol_name : "");
  r.leader = tarn__kg_kstr(j->leader);
  r.member_id = tarn__kg_kstr(j->member_id);
  if (j->n_members) {
    tarn__k_join_group_join_group_response_member *m =
        tarn__karena_alloc(req->arena, j->n_members * sizeof *m);
    if (!m) {
      tarn__kreq_close(req);
      return;
    }
    for (size_t i = 0; i < j->n_members; i++) {
      m[i].member_id = tarn__kg_kstr(j->members[i].member_id);
      m[i].group_instance_id = tarn__kg_kstr(j->members[i].instance_id);
      m[i].metadata = (tarn__kbytes){j->members[i].meta, (int32_t)j->members[i].len};
    }
    r.members.n = (int32_t)j->n_members;
    r.members.v = m;
  }
  tarn__kreq_respond(req, &r);
}

static void refuse(tarn__kreq *req, int16_t error, tarn__kstr member_id) {
  tarn__kjoin_resp j = {error, -1, NULL, NULL, "", "", NULL, 0};
  char *m = tarn__kg_cstr(req, member_id);
  j.member_id = m ? m : "";
  joined(req, &j);
}

void tarn__kapi_join_group(tarn__knode *node, tarn__kreq *req) {
  tarn__k_join_group_req b;
  if (tarn__kreq_body(req, &b))
    return;
  char *group = tarn__kg_cstr(req, b.group_id);
  char *member = tarn__kg_cstr(req, b.member_id);
  char *type = tarn__kg_cstr(req, b.protocol_type);
  const char *instance;
  int bad = tarn__kg_instance(req, b.group_instance_id, &instance);
  size_t np = b.protocols.n > 0 ? (size_t)b.protocols.n : 0;
  tarn__kg_protocol *p = tarn__karena_alloc(req->arena, (np ? np : 1) * sizeof *p);
  if (!group || !member || !type || bad || !p)
    return refuse(req, !p ? TARN__KG_UNKNOWN_SERVER_ERROR : TARN__KG_INVALID_REQUEST, b.member_id);
  for (size_t i = 0; i < np; i++) {
    if (!(p[i].name = tarn__kg_cstr(req, b.protocols.v[i].name)))
      return refuse(req, TARN__KG_INVALID_REQUEST, b.member_id);
    p[i].meta = b.protocols.v[i].metadata.p;
    p[i].len = b.protocols.v[i].metadata.len > 0 ? (size_t)b.protocols.v[i].metadata.len : 0;
  }
  int16_t e = tarn__kg_check(node, group);
  if (e)
    return refuse(req, e, b.member_id);
  /* Kafka names a client's host "/address" */
  char host[80];
  snprintf(host, sizeof host, "/%s", req->peer);
  char *colon = strrchr(host, ':');
  if (colon)
    *colon = 0;
  tarn__kjoin_req q = {.group_id = group,
                       .member_id = member,
                       .group_instance_id = instance,
                       .client_id = req->client_id,
                       .client_host = host,
                       .protocol_type = type,
                       .session_timeout_ms = b.session_timeout_ms,
                       .rebalance_timeout_ms =
                           req->api_version >= 1 ? b.rebalance_timeout_ms : b.session_timeout_ms,
                       .version = req->api_version,
                       .protocols = p,
                       .n_protocols = np};
  tarn__kgroups_join(node->groups, &q, tarn__kg_now(), joined, req);
}
