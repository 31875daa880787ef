/* Shared by the group and producer handlers (api_group.h). */
#include "kafka/api_group.h"

#include <string.h>

#include "kafka/group.h"
#include "tarn/error.h"
#include "util/clock.h"

char *tarn__kg_cstr(tarn__kreq *req, tarn__kstr s) {
  size_t n = s.len > 0 ? (size_t)s.len : 0;
  char *p = tarn__karena_alloc(req->arena, n + 1);
  if (!p)
    return NULL;
  if (n)
    memcpy(p, s.p, n);
  p[n] = 0;
  return strlen(p) == n ? p : NULL;
}

int tarn__kg_instance(tarn__kreq *req, tarn__kstr s, const char **out) {
  *out = s.len < 0 ? NULL : tarn__kg_cstr(req, s);
  return s.len >= 0 && !*out ? -1 : 0;
}

tarn__kstr tarn__kg_kstr(const char *s) {
  return s ? (tarn__kstr){s, (int32_t)strlen(s)} : (tarn__kstr){NULL, -1};
}

int tarn__kg_coordinator(tarn__knode *node, const char *group_id, tarn__knode_info *out) {
  tarn__knode_info info;
  /* issue 13 §2 "Several nodes": the group's hash over the live nodes */
  int rc = tarn__kregistry_pick_node(node->registry, group_id, strlen(group_id), &info);
  if (rc)
    return rc;
  if (out)
    *out = info;
  if (info.node_id == tarn__kregistry_self(node->registry)->node_id)
    return 1;
  if (node->groups)
    tarn__kgroups_forget(node->groups, group_id);
  return 0;
}

int16_t tarn__kg_check(tarn__knode *node, const char *group_id) {
  if (!node->groups || !node->registry)
    return TARN__KERR_COORDINATOR_NOT_AVAILABLE;
  int rc = tarn__kg_coordinator(node, group_id, NULL);
  return rc < 0 ? TARN__KERR_COORDINATOR_NOT_AVAILABLE : rc ? 0 : TARN__KERR_NOT_COORDINATOR;
}

int64_t tarn__kg_now(void) { return tarn__mono_ms(); }
