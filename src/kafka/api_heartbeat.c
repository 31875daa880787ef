/* Heartbeat (key 12), versions 0-3 (group.h): REBALANCE_IN_PROGRESS tells a
 * member to rejoin; v3 names a static member's instance ID, and a replaced
 * one is told FENCED_INSTANCE_ID (KIP-345). */
#include "kafka/api_group.h"

#include "kafka/group.h"

void tarn__kapi_heartbeat(tarn__knode *node, tarn__kreq *req) {
  tarn__k_heartbeat_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_heartbeat_resp r;
  tarn__kmsg_init(TARN__KAPI_HEARTBEAT, 1, &r);
  char *group = tarn__kg_cstr(req, b.group_id);
  char *member = tarn__kg_cstr(req, b.member_id);
  const char *instance;
  if (!group || !member || tarn__kg_instance(req, b.group_instance_id, &instance))
    r.error_code = TARN__KG_UNKNOWN_MEMBER_ID;
  else if (!(r.error_code = tarn__kg_check(node, group)))
    r.error_code = tarn__kgroups_heartbeat(node->groups, group, b.generation_id, member, instance,
                                           tarn__kg_now());
  tarn__kreq_respond(req, &r);
}
