/* FindCoordinator (key 10), versions 0-2: a group's coordinator is the live
 * node its ID hashes to (registry.h), the same answer on every node. There
 * is no transaction coordinator yet (issue 34): a transactional id is
 * answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which a client takes as
 * final at once (issue 37: a retriable error made transactional clients wait
 * out their 15 s timeout); any other key type is INVALID_REQUEST, as Kafka. */
#include "kafka/api_group.h"

enum { KEY_GROUP = 0, KEY_TRANSACTION = 1 };

void tarn__kapi_find_coordinator(tarn__knode *node, tarn__kreq *req) {
  tarn__k_find_coordinator_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_find_coordinator_resp r;
  tarn__kmsg_init(TARN__KAPI_FIND_COORDINATOR, 1, &r);
  r.node_id = -1, r.port = -1, r.host = tarn__kg_kstr("");
  char *key = tarn__kg_cstr(req, b.key);
  tarn__knode_info info;
  int rc = -1;
  if (b.key_type == KEY_TRANSACTION) {
    r.error_code = TARN__KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    r.error_message = tarn__kg_kstr("tarn does not serve transactions (docs/kafka.md)");
  } else if (b.key_type != KEY_GROUP) {
    r.error_code = TARN__KERR_INVALID_REQUEST;
    r.error_message = tarn__kg_kstr("unknown coordinator key type");
  } else if (!key || !node->registry || !node->groups) {
    r.error_code = TARN__KERR_COORDINATOR_NOT_AVAILABLE;
    r.error_message = tarn__kg_kstr("no group coordinator");
  } else if ((rc = tarn__kg_coordinator(node, key, &info)) < 0) {
    r.error_code = TARN__KERR_COORDINATOR_NOT_AVAILABLE;
    r.error_message = tarn__kg_kstr("the live nodes cannot be read");
  } else {
    r.node_id = info.node_id;
    r.port = info.port;
    r.host = tarn__kg_kstr(info.host); /* encoded before info goes */
  }
  tarn__kreq_respond(req, &r);
}
