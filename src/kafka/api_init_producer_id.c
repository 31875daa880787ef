/* InitProducerId (key 22), versions 0-1 (producer.h): a new producer ID with
 * epoch 0 for an idempotent producer; a transactional ID is refused (the
 * binding forbids transactional batches). Any node answers: the IDs come
 * from one counter in the metadata store. */
#include "kafka/api_group.h"

#include "kafka/producer.h"

void tarn__kapi_init_producer_id(tarn__knode *node, tarn__kreq *req) {
  tarn__k_init_producer_id_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_init_producer_id_resp r;
  tarn__kmsg_init(TARN__KAPI_INIT_PRODUCER_ID, 1, &r);
  r.producer_id = -1, r.producer_epoch = -1;
  if (!node->producers) {
    r.error_code = TARN__KERR_COORDINATOR_NOT_AVAILABLE;
  } else {
    const char *txn = b.transactional_id.len >= 0 ? "" : NULL;
    int64_t pid;
    int16_t epoch;
    tarn__kprod_init(node->producers, txn, &pid, &epoch, &r.error_code);
    r.producer_id = pid, r.producer_epoch = epoch;
  }
  tarn__kreq_respond(req, &r);
}
