/* ListGroups (key 16), versions 0-5: the groups of the store this node
 * coordinates (a client asks every node and joins the lists); v4 filters by
 * state and answers each group's, v5 by type ("classic", "consumer": KIP-848,
 * matched without regard to case, as Kafka) and answers each group's. */
#include "kafka/api_group.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kafka/group.h"

/* Whether s passes a ListGroups filter (none: everything). */
static int passes(const tarn__kstr *f, int32_t n, const char *s, int nocase) {
  if (n <= 0)
    return 1;
  size_t l = strlen(s);
  for (int32_t i = 0; i < n; i++)
    if (f[i].len == (int32_t)l && (nocase ? !strncasecmp(f[i].p, s, l) : !memcmp(f[i].p, s, l)))
      return 1;
  return 0;
}

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
    if (live[at].node_id != self ||
        !passes(b.states_filter.v, b.states_filter.n, v[i].state ? v[i].state : "", 1) ||
        !passes(b.types_filter.v, b.types_filter.n, v[i].type ? v[i].type : "classic", 1))
      continue;
    g[k].group_state = tarn__kg_kstr(v[i].state ? v[i].state : "");
    g[k].group_type = tarn__kg_kstr(v[i].type ? v[i].type : "classic");
    g[k].group_id = tarn__kg_kstr(v[i].group_id);
    g[k++].protocol_type = tarn__kg_kstr(v[i].protocol_type);
  }
  r.groups.n = (int32_t)k;
  r.groups.v = g;
  tarn__kreq_respond(req, &r);
  tarn__kglisted_free(v, n);
  free(live);
}
