/* DescribeGroups (key 15), versions 0-4 (group.h): state, protocol and
 * members of each group this node coordinates (v4: each member's group
 * instance ID, null for a dynamic one); "Dead" for a group that does
 * not exist, NOT_COORDINATOR for one another node coordinates. */
#include "kafka/api_group.h"

#include <stdlib.h>

#include "kafka/group.h"

/* Kafka's "authorized operations not asked for" */
#define OPS_NONE INT32_MIN

void tarn__kapi_describe_groups(tarn__knode *node, tarn__kreq *req) {
  tarn__k_describe_groups_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_describe_groups_resp r;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_GROUPS, 1, &r);
  size_t n = b.groups.n > 0 ? (size_t)b.groups.n : 0;
  tarn__k_describe_groups_described_group *g =
      tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *g);
  /* not in the arena: it is freed with the response, before d is */
  tarn__kgdesc *d = calloc(n ? n : 1, sizeof *d);
  if (!g || !d) {
    free(d);
    tarn__kreq_close(req);
    return;
  }
  int fail = 0;
  for (size_t i = 0; i < n; i++) {
    char *id = tarn__kg_cstr(req, b.groups.v[i]);
    g[i].group_id = b.groups.v[i];
    g[i].group_state = g[i].protocol_type = g[i].protocol_data = tarn__kg_kstr("");
    g[i].authorized_operations = OPS_NONE;
    g[i].error_code = id ? tarn__kg_check(node, id) : TARN__KG_INVALID_GROUP_ID;
    if (g[i].error_code)
      continue;
    tarn__kgroups_describe(node->groups, id, tarn__kg_now(), &d[i]);
    g[i].error_code = d[i].error;
    g[i].group_state = tarn__kg_kstr(d[i].state);
    g[i].protocol_type = tarn__kg_kstr(d[i].protocol_type);
    g[i].protocol_data = tarn__kg_kstr(d[i].protocol);
    tarn__k_describe_groups_described_group_member *m =
        tarn__karena_alloc(req->arena, (d[i].n_members ? d[i].n_members : 1) * sizeof *m);
    if (!m) {
      fail = 1;
      continue;
    }
    for (size_t j = 0; j < d[i].n_members; j++) {
      const tarn__kgdesc_member *dm = &d[i].members[j];
      m[j].member_id = tarn__kg_kstr(dm->member_id);
      m[j].group_instance_id = tarn__kg_kstr(dm->instance_id);
      m[j].client_id = tarn__kg_kstr(dm->client_id);
      m[j].client_host = tarn__kg_kstr(dm->client_host);
      m[j].member_metadata =
          (tarn__kbytes){dm->meta ? dm->meta : (const uint8_t *)"", (int32_t)dm->meta_len};
      m[j].member_assignment = (tarn__kbytes){dm->assignment ? dm->assignment : (const uint8_t *)"",
                                              (int32_t)dm->assignment_len};
    }
    g[i].members.n = (int32_t)d[i].n_members;
    g[i].members.v = m;
  }
  r.groups.n = (int32_t)n;
  r.groups.v = g;
  if (fail)
    tarn__kreq_close(req);
  else
    tarn__kreq_respond(req, &r);
  for (size_t i = 0; i < n; i++)
    tarn__kgdesc_free(&d[i]);
  free(d);
}
