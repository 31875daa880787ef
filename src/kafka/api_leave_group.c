/* LeaveGroup (key 13), versions 0-3 (group.h): v0-2 name one member, v3 a
 * list, each answered on its own, by member ID and/or group instance ID
 * (KIP-345: an instance ID alone removes its static member; one that maps
 * to another member ID is FENCED_INSTANCE_ID). */
#include "kafka/api_group.h"

#include "kafka/group.h"

void tarn__kapi_leave_group(tarn__knode *node, tarn__kreq *req) {
  tarn__k_leave_group_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_leave_group_resp r;
  tarn__kmsg_init(TARN__KAPI_LEAVE_GROUP, 1, &r);
  char *group = tarn__kg_cstr(req, b.group_id);
  r.error_code = group ? tarn__kg_check(node, group) : TARN__KG_INVALID_GROUP_ID;
  if (req->api_version < 3) {
    char *member = tarn__kg_cstr(req, b.member_id);
    if (!r.error_code)
      r.error_code = member ? tarn__kgroups_leave(node->groups, group, member, NULL, tarn__kg_now())
                            : TARN__KG_UNKNOWN_MEMBER_ID;
    tarn__kreq_respond(req, &r);
    return;
  }
  size_t n = b.members.n > 0 ? (size_t)b.members.n : 0;
  tarn__k_leave_group_member_response *m = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *m);
  if (!m) {
    tarn__kreq_close(req);
    return;
  }
  for (size_t i = 0; !r.error_code && i < n; i++) {
    char *member = tarn__kg_cstr(req, b.members.v[i].member_id);
    const char *instance;
    int bad = tarn__kg_instance(req, b.members.v[i].group_instance_id, &instance);
    m[i].member_id = b.members.v[i].member_id;
    m[i].group_instance_id = b.members.v[i].group_instance_id;
    m[i].error_code =
        member && !bad ? tarn__kgroups_leave(node->groups, group, member, instance, tarn__kg_now())
                       : TARN__KG_UNKNOWN_MEMBER_ID;
  }
  if (!r.error_code)
    r.members.n = (int32_t)n, r.members.v = m;
  tarn__kreq_respond(req, &r);
}
