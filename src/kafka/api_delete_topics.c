/* DeleteTopics (key 20), versions 0-3: each topic's stream is dropped with
 * the catalog's procedure (tombstone, fence, lease drain, index removal:
 * LS-044 ... LS-047, LS-090). The node's own writers keep a lease on every
 * log they appended to until they close, so they are replaced first; a
 * lease another node holds makes the drain wait (REQUEST_TIMED_OUT when it
 * outlasts the drain timeout; a retry resumes the drop). */
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"

void tarn__kapi_delete_topics(tarn__knode *node, tarn__kreq *req) {
  tarn__k_delete_topics_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_delete_topics_resp r;
  tarn__kmsg_init(TARN__KAPI_DELETE_TOPICS, 1, &r);
  int32_t nt = b.topic_names.n > 0 ? b.topic_names.n : 0;
  tarn__k_delete_topics_deletable_topic_result *o =
      tarn__karena_alloc(req->arena, (nt ? (size_t)nt : 1) * sizeof *o);
  if (!o) {
    tarn__kreq_close(req);
    return;
  }
  int released = 0;
  for (int32_t i = 0; i < nt; i++) {
    tarn__kstr nm = b.topic_names.v[i];
    memset(&o[i], 0, sizeof o[i]);
    o[i].name = nm;
    char name[TARN_KAFKA_TOPIC_NAME_MAX + 1];
    if (nm.len <= 0 || nm.len > TARN_KAFKA_TOPIC_NAME_MAX) {
      o[i].error_code = TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
      continue;
    }
    memcpy(name, nm.p, (size_t)nm.len);
    name[nm.len] = 0;
    if (strlen(name) != (size_t)nm.len || tarn_kafka_topic_name_check(name)) {
      o[i].error_code = TARN__KERR_INVALID_TOPIC_EXCEPTION;
      continue;
    }
    tarn_kafka_topic t;
    int rc = tarn_kafka_topic_lookup(node->catalog, name, &t);
    if (rc == 0)
      tarn_kafka_topic_free(&t);
    if (rc == 0 && !released) {
      released = 1;
      rc = tarn__knode_release_leases(node);
    }
    if (rc == 0 || rc == TARN_ENOTFOUND) /* a drop left half done resumes */
      rc = tarn_kafka_topic_delete(node->catalog, name);
    tarn__knode_topic_forget(node, nm.p, (size_t)nm.len);
    o[i].error_code = rc == 0                ? 0
                      : rc == TARN_ENOTFOUND ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION
                      : rc == TARN_EBUSY     ? TARN__KERR_REQUEST_TIMED_OUT
                                             : tarn__kerr_of(rc);
  }
  r.responses.n = nt;
  r.responses.v = o;
  tarn__kreq_respond(req, &r);
}
