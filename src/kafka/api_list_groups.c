/* ListGroups (key 16), versions 0-2: the groups of the store this node
 * coordinates (a client asks every node and joins the lists). */
#include "kafka/api_group.h"

#include <stdlib.h>
#include <string.h>

#include "kafka/group.h"

void tarn__kapi_list_groups(tarn__knode *node, tarn__kreq *req) {
  tarn__k_list_groups_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_list_groups_resp r;
  tarn__kmsg_init(TARN__KAPI_LIST_GROUPS, 1, &r);
  tarn__kglisted *v = NULL;
  size_t n = 0;
  tarn__knode_info *live = NULL;
  size_t nlive = 0;
  if (!node->groups || !node->registry || tarn__kgroups_list(node->groups, &v, &n) ||
      tarn__kregistry_live(node->registry, &live, &nlive) || !nlive) {
    r.error_code = TARN__KERR_COORDINATOR_NOT_AVAILABLE;
    n = 0;
  }
  tarn__k_list_groups_listed_group *g = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *g);
  if (!g) {
    tarn__kglisted_free(v, n);
    free(live);
    tarn__kreq_close(req);
    return;
  }
  int32_t self = node->registry ? tarn__kregistry_self(node->registry)->node_id : -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t at = tarn__kregistry_pick(nlive, v[i].group_id, strlen(v[i].group_id));
    if (live[at].node_id != self)
      continue;
    g[k].group_id = tarn__kg_kstr(v[i].group_id);
    g[k++].protocol_type = tarn__kg_kstr(v[i].protocol_type);
  }
  r.groups.n = (int32_t)k;
  r.groups.v = g;
  tarn__kreq_respond(req, &r);
  tarn__kglisted_free(v, n);
  free(live);
}
