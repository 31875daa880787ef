/* SyncGroup (key 14), versions 0-3 (group.h): a follower's answer waits for
 * the leader's assignments, completed from the leader's request. v3 names a
 * static member's instance ID (FENCED_INSTANCE_ID for a replaced one). */
#include "kafka/api_group.h"

#include "kafka/group.h"

static void synced(void *arg, int16_t error, const uint8_t *a, size_t len) {
  tarn__kreq *req = arg;
  tarn__k_sync_group_resp r;
  tarn__kmsg_init(TARN__KAPI_SYNC_GROUP, 1, &r);
  r.error_code = error;
  r.assignment = (tarn__kbytes){a ? a : (const uint8_t *)"", (int32_t)len};
  tarn__kreq_respond(req, &r);
}

void tarn__kapi_sync_group(tarn__knode *node, tarn__kreq *req) {
  tarn__k_sync_group_req b;
  if (tarn__kreq_body(req, &b))
    return;
  char *group = tarn__kg_cstr(req, b.group_id);
  char *member = tarn__kg_cstr(req, b.member_id);
  const char *instance;
  int bad = tarn__kg_instance(req, b.group_instance_id, &instance);
  size_t n = b.assignments.n > 0 ? (size_t)b.assignments.n : 0;
  tarn__ksync_assignment *a = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *a);
  if (!group || !member || bad || !a)
    return synced(req, a ? TARN__KG_INVALID_REQUEST : TARN__KG_UNKNOWN_SERVER_ERROR, NULL, 0);
  for (size_t i = 0; i < n; i++) {
    if (!(a[i].member_id = tarn__kg_cstr(req, b.assignments.v[i].member_id)))
      return synced(req, TARN__KG_INVALID_REQUEST, NULL, 0);
    a[i].assignment = b.assignments.v[i].assignment.p;
    a[i].len =
        b.assignments.v[i].assignment.len > 0 ? (size_t)b.assignments.v[i].assignment.len : 0;
  }
  int16_t e = tarn__kg_check(node, group);
  if (e)
    return synced(req, e, NULL, 0);
  tarn__kgroups_sync(node->groups, group, b.generation_id, member, instance, a, n, tarn__kg_now(),
                     synced, req);
}
