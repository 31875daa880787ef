/* The node's dispatch table by API key (api.h). ApiVersions advertises
 * exactly these ranges, so a line here is a promise that the handler answers
 * every version in it. */
#include "kafka/api.h"

#include <stdio.h>
#include <string.h>

#include "tarn/error.h"

/* In API-key order (tarn__kapi_find relies on it). */
static const tarn__kapi table[] = {
    /* Advertised from 0 so that librdkafka 2.0.2 enables compression
     * (rdkafka_feature.c); 0-2 are answered UNSUPPORTED_VERSION, as Kafka
     * does since KAFKA-18659. */
    {0, 0, 8, tarn__kapi_produce, "Produce"},
    /* Fetch 0-3 are not advertised: their responses cannot carry whole
     * batches past max_bytes (KIP-74) nor the log start offset. */
    {1, 4, 11, tarn__kapi_fetch, "Fetch"},
    {2, 0, 5, tarn__kapi_list_offsets, "ListOffsets"},
    {3, 0, 8, tarn__kapi_metadata, "Metadata"},
    /* consumer groups (group.h): librdkafka 2.0.2 enables them only when
     * v0 of each group API is in range (rdkafka_feature.c) */
    {8, 0, 7, tarn__kapi_offset_commit, "OffsetCommit"},
    {9, 0, 5, tarn__kapi_offset_fetch, "OffsetFetch"},
    {10, 0, 2, tarn__kapi_find_coordinator, "FindCoordinator"},
    {11, 0, 5, tarn__kapi_join_group, "JoinGroup"},
    {12, 0, 3, tarn__kapi_heartbeat, "Heartbeat"},
    {13, 0, 3, tarn__kapi_leave_group, "LeaveGroup"},
    {14, 0, 3, tarn__kapi_sync_group, "SyncGroup"},
    {15, 0, 4, tarn__kapi_describe_groups, "DescribeGroups"},
    {16, 0, 2, tarn__kapi_list_groups, "ListGroups"},
    /* SASL (sasl.h): advertised and answered only when the listener requires it */
    {17, 0, 1, tarn__kapi_sasl_handshake, "SaslHandshake"},
    {18, 0, 3, tarn__kapi_api_versions, "ApiVersions"},
    {19, 0, 4, tarn__kapi_create_topics, "CreateTopics"},
    {20, 0, 3, tarn__kapi_delete_topics, "DeleteTopics"},
    /* idempotent producers without transactions (producer.h) */
    {22, 0, 1, tarn__kapi_init_producer_id, "InitProducerId"},
    {36, 0, 2, tarn__kapi_sasl_authenticate, "SaslAuthenticate"},
};

const tarn__kapi *tarn__kapi_table(size_t *n) {
  *n = sizeof table / sizeof table[0];
  return table;
}

const tarn__kapi *tarn__kapi_find(int16_t api_key) {
  size_t lo = 0, hi = sizeof table / sizeof table[0];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (table[mid].api_key == api_key)
      return &table[mid];
    if (table[mid].api_key < api_key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

int16_t tarn__kerr_of(int rc) {
  switch (rc) {
  case 0: return TARN__KERR_NONE;
  case TARN_ENOTFOUND: return TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
  case TARN_ECORRUPT: return TARN__KERR_CORRUPT_MESSAGE;
  case TARN_ETIMEDOUT: return TARN__KERR_REQUEST_TIMED_OUT;
  case TARN_EIO:
  case TARN_EUNKNOWN: return TARN__KERR_KAFKA_STORAGE_ERROR;
  default: return TARN__KERR_UNKNOWN_SERVER_ERROR;
  }
}

void tarn__knode_config_default(tarn__knode_config *c) {
  memset(c, 0, sizeof *c);
  c->node_id = -1;
  snprintf(c->host, sizeof c->host, "127.0.0.1");
  c->auto_create_partitions = 1;
  c->batch_ms = 250;
}
