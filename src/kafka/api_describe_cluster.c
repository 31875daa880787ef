/* DescribeCluster (key 60), versions 0-1 (issue 37): the live nodes as
 * Metadata lists them, the same controller (the lowest live ID), the
 * deployment's cluster ID (node.c). tarn has no authorizer, so asked for the
 * cluster's authorized operations it answers every operation Kafka's
 * broker without one answers; not asked, Kafka's "omitted". A node has only
 * a broker endpoint (KIP-919: endpoint type 1). */
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/registry.h"

enum { BROKERS = 1, CONTROLLERS = 2 };
enum { MISMATCHED_ENDPOINT_TYPE = 114, UNSUPPORTED_ENDPOINT_TYPE = 115 };

/* Kafka's AclEntry.supportedOperations(CLUSTER) as a bit field (AclOperation
 * codes: ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
 * ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12, CREATE 5) */
#define CLUSTER_OPS (1 << 5 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 10 | 1 << 11 | 1 << 12)

static tarn__kstr kstr(const char *s) { return (tarn__kstr){s, (int32_t)strlen(s)}; }

void tarn__kapi_describe_cluster(tarn__knode *node, tarn__kreq *req) {
  tarn__k_describe_cluster_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_describe_cluster_resp r;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_CLUSTER, 1, &r);
  r.cluster_id = kstr(node->cluster_id);
  r.endpoint_type = BROKERS;
  int8_t want = req->api_version >= 1 ? b.endpoint_type : BROKERS;
  if (want != BROKERS) { /* Kafka's answers (AuthHelper.computeDescribeClusterResponse) */
    r.error_code = want == CONTROLLERS ? MISMATCHED_ENDPOINT_TYPE : UNSUPPORTED_ENDPOINT_TYPE;
    r.error_message = kstr(want == CONTROLLERS ? "tarn nodes have no controller endpoint"
                                               : "unsupported endpoint type");
    r.cluster_id = kstr("");
    tarn__kreq_respond(req, &r);
    return;
  }
  r.cluster_authorized_operations =
      b.include_cluster_authorized_operations ? CLUSTER_OPS : INT32_MIN;
  tarn__knode_info *live = NULL;
  size_t nlive = 0;
  if (tarn__kregistry_live(node->registry, &live, &nlive) || !nlive) {
    free(live); /* the store cannot be read: at least this node serves */
    live = malloc(sizeof *live);
    if (!live) {
      tarn__kreq_close(req);
      return;
    }
    *live = *tarn__kregistry_self(node->registry);
    nlive = 1;
  }
  int32_t n;
  tarn__k_describe_cluster_describe_cluster_broker *br =
      tarn__kresp_entries(req, (int32_t)nlive, sizeof *br, &n);
  for (int32_t i = 0; br && i < n; i++) {
    br[i].broker_id = live[i].node_id;
    br[i].host = tarn__kresp_str(req, live[i].host);
    br[i].port = live[i].port;
    br[i].rack = (tarn__kstr){NULL, -1};
  }
  r.brokers.n = n;
  r.brokers.v = br;
  r.controller_id = live[0].node_id; /* as Metadata: the lowest live ID */
  if (br)
    tarn__kreq_respond(req, &r);
  else
    tarn__kreq_close(req);
  free(live);
}
