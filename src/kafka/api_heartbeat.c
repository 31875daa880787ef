/* Heartbeat (key 12), versions 0-3 (group.h): REBALANCE_IN_PROGRESS tells a
 * member to rejoin. */
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
  if (!group || !member)
    r.error_code = TARN__KG_UNKNOWN_MEMBER_ID;
  else if (!(r.error_code = tarn__kg_check(node, group)))
    r.error_code =
        tarn__kgroups_heartbeat(node->groups, group, b.generation_id, member, tarn__kg_now());
  tarn__kreq_respond(req, &r);
}
