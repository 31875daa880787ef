/* DeleteGroups (key 42), versions 0-2 (issue 37; group.h): each named group
 * that is Empty loses its record and committed offsets; NON_EMPTY_GROUP
 * while it has members, GROUP_ID_NOT_FOUND for one that does not exist,
 * NOT_COORDINATOR for one another node coordinates (the FindCoordinator
 * rule: api_group.h). A group named twice is answered once, as Kafka does. */
#include "kafka/api_group.h"

#include <string.h>

#include "kafka/group.h"

static int named_before(const tarn__k_delete_groups_req *b, int32_t i) {
  for (int32_t j = 0; j < i; j++)
    if (b->groups_names.v[j].len == b->groups_names.v[i].len &&
        (b->groups_names.v[i].len <= 0 || memcmp(b->groups_names.v[j].p, b->groups_names.v[i].p,
                                                 (size_t)b->groups_names.v[i].len) == 0))
      return 1;
  return 0;
}

void tarn__kapi_delete_groups(tarn__knode *node, tarn__kreq *req) {
  tarn__k_delete_groups_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_delete_groups_resp r;
  tarn__kmsg_init(TARN__KAPI_DELETE_GROUPS, 1, &r);
  int32_t n;
  tarn__k_delete_groups_deletable_group_result *g =
      tarn__kresp_entries(req, b.groups_names.n, sizeof *g, &n);
  if (!g) {
    tarn__kreq_close(req);
    return;
  }
  int32_t k = 0;
  for (int32_t i = 0; i < n; i++) {
    if (named_before(&b, i))
      continue;
    char *id = tarn__kg_cstr(req, b.groups_names.v[i]);
    g[k].group_id = b.groups_names.v[i];
    /* "" is a group ID Kafka accepts here; no group has it */
    int16_t e = !id ? TARN__KG_INVALID_GROUP_ID : !*id ? TARN__KG_GROUP_ID_NOT_FOUND : 0;
    if (!e)
      e = tarn__kg_check(node, id);
    if (!e)
      e = tarn__kgroups_delete(node->groups, id, tarn__kg_now());
    g[k++].error_code = e;
  }
  r.results.n = k;
  r.results.v = g;
  tarn__kreq_respond(req, &r);
}
