/* The node's dispatch table by API key (api.h). ApiVersions advertises
 * exactly these ranges, so a line here is a promise that the handler answers
 * every version in it. */
#include "kafka/api.h"

#include <stdio.h>
#include <string.h>

#include "kafka/proto/kproto.h"
#include "tarn/error.h"

/* In API-key order (tarn__kapi_find relies on it). */
static const tarn__kapi table[] = {
    /* 0-2 carry magic 0/1 message sets (sarama's default config sends v0;
     * issue 37); librdkafka 2.0.2 enables compression only with v0 in range */
    {TARN__KAPI_PRODUCE, 0, 8, tarn__kapi_produce, "Produce"},
    /* 0-3 answer down-converted message sets (api_fetch.c; issue 37) */
    {TARN__KAPI_FETCH, 0, 11, tarn__kapi_fetch, "Fetch"},
    {TARN__KAPI_LIST_OFFSETS, 0, 5, tarn__kapi_list_offsets, "ListOffsets"},
    {TARN__KAPI_METADATA, 0, 12, tarn__kapi_metadata, "Metadata"},
    /* consumer groups (group.h): librdkafka 2.0.2 enables them only when
     * v0 of each group API is in range (rdkafka_feature.c) */
    {TARN__KAPI_OFFSET_COMMIT, 0, 7, tarn__kapi_offset_commit, "OffsetCommit"},
    {TARN__KAPI_OFFSET_FETCH, 0, 5, tarn__kapi_offset_fetch, "OffsetFetch"},
    {TARN__KAPI_FIND_COORDINATOR, 0, 2, tarn__kapi_find_coordinator, "FindCoordinator"},
    {TARN__KAPI_JOIN_GROUP, 0, 5, tarn__kapi_join_group, "JoinGroup"},
    {TARN__KAPI_HEARTBEAT, 0, 3, tarn__kapi_heartbeat, "Heartbeat"},
    {TARN__KAPI_LEAVE_GROUP, 0, 3, tarn__kapi_leave_group, "LeaveGroup"},
    {TARN__KAPI_SYNC_GROUP, 0, 3, tarn__kapi_sync_group, "SyncGroup"},
    {TARN__KAPI_DESCRIBE_GROUPS, 0, 4, tarn__kapi_describe_groups, "DescribeGroups"},
    {TARN__KAPI_LIST_GROUPS, 0, 5, tarn__kapi_list_groups, "ListGroups"},
    /* SASL (sasl.h): advertised and answered only when the listener requires it */
    {TARN__KAPI_SASL_HANDSHAKE, 0, 1, tarn__kapi_sasl_handshake, "SaslHandshake"},
    {TARN__KAPI_API_VERSIONS, 0, 3, tarn__kapi_api_versions, "ApiVersions"},
    {TARN__KAPI_CREATE_TOPICS, 0, 4, tarn__kapi_create_topics, "CreateTopics"},
    {TARN__KAPI_DELETE_TOPICS, 0, 3, tarn__kapi_delete_topics, "DeleteTopics"},
    {TARN__KAPI_DELETE_RECORDS, 0, 2, tarn__kapi_delete_records, "DeleteRecords"}, /* issue 37 */
    /* idempotent producers without transactions (producer.h) */
    {TARN__KAPI_INIT_PRODUCER_ID, 0, 1, tarn__kapi_init_producer_id, "InitProducerId"},
    /* configs from Kafka's table (issue 37) */
    {TARN__KAPI_DESCRIBE_CONFIGS, 0, 4, tarn__kapi_describe_configs, "DescribeConfigs"},
    {TARN__KAPI_ALTER_CONFIGS, 0, 2, tarn__kapi_alter_configs, "AlterConfigs"},
    /* one log dir per node: its replicas' live bytes (issue 37) */
    {TARN__KAPI_DESCRIBE_LOG_DIRS, 0, 4, tarn__kapi_describe_log_dirs, "DescribeLogDirs"},
    {TARN__KAPI_SASL_AUTHENTICATE, 0, 2, tarn__kapi_sasl_authenticate, "SaslAuthenticate"},
    /* configs altered, partitions added (issue 37) */
    {TARN__KAPI_CREATE_PARTITIONS, 0, 3, tarn__kapi_create_partitions, "CreatePartitions"},
    {TARN__KAPI_DELETE_GROUPS, 0, 2, tarn__kapi_delete_groups, "DeleteGroups"}, /* issue 37 */
    {TARN__KAPI_INCREMENTAL_ALTER_CONFIGS, 0, 1, tarn__kapi_incremental_alter_configs,
     "IncrementalAlterConfigs"},
    {TARN__KAPI_OFFSET_DELETE, 0, 0, tarn__kapi_offset_delete, "OffsetDelete"}, /* issue 37 */
    {TARN__KAPI_DESCRIBE_CLUSTER, 0, 1, tarn__kapi_describe_cluster, "DescribeCluster"}, /* 37 */
    {TARN__KAPI_DESCRIBE_PRODUCERS, 0, 0, tarn__kapi_describe_producers, "DescribeProducers"},
    {TARN__KAPI_CONSUMER_GROUP_HEARTBEAT, 0, 1, tarn__kapi_consumer_group_heartbeat,
     "ConsumerGroupHeartbeat"}, /* issue 37, KIP-848 */
    {TARN__KAPI_CONSUMER_GROUP_DESCRIBE, 0, 0, tarn__kapi_consumer_group_describe,
     "ConsumerGroupDescribe"}, /* issue 37, KIP-848 */
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

/* Apache Kafka's name of every API key up to 75 (its ApiKeys), served or
 * not: a request tarn refuses is still counted under the name an operator
 * looks for (issue 37, "Metrics"). */
static const char *const kafka_names[] = {
    "Produce",
    "Fetch",
    "ListOffsets",
    "Metadata",
    "LeaderAndIsr",
    "StopReplica",
    "UpdateMetadata",
    "ControlledShutdown",
    "OffsetCommit",
    "OffsetFetch",
    "FindCoordinator",
    "JoinGroup",
    "Heartbeat",
    "LeaveGroup",
    "SyncGroup",
    "DescribeGroups",
    "ListGroups",
    "SaslHandshake",
    "ApiVersions",
    "CreateTopics",
    "DeleteTopics",
    "DeleteRecords",
    "InitProducerId",
    "OffsetForLeaderEpoch",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "EndTxn",
    "WriteTxnMarkers",
    "TxnOffsetCommit",
    "DescribeAcls",
    "CreateAcls",
    "DeleteAcls",
    "DescribeConfigs",
    "AlterConfigs",
    "AlterReplicaLogDirs",
    "DescribeLogDirs",
    "SaslAuthenticate",
    "CreatePartitions",
    "CreateDelegationToken",
    "RenewDelegationToken",
    "ExpireDelegationToken",
    "DescribeDelegationToken",
    "DeleteGroups",
    "ElectLeaders",
    "IncrementalAlterConfigs",
    "AlterPartitionReassignments",
    "ListPartitionReassignments",
    "OffsetDelete",
    "DescribeClientQuotas",
    "AlterClientQuotas",
    "DescribeUserScramCredentials",
    "AlterUserScramCredentials",
    "Vote",
    "BeginQuorumEpoch",
    "EndQuorumEpoch",
    "DescribeQuorum",
    "AlterPartition",
    "UpdateFeatures",
    "Envelope",
    "FetchSnapshot",
    "DescribeCluster",
    "DescribeProducers",
    "BrokerRegistration",
    "BrokerHeartbeat",
    "UnregisterBroker",
    "DescribeTransactions",
    "ListTransactions",
    "AllocateProducerIds",
    "ConsumerGroupHeartbeat",
    "ConsumerGroupDescribe",
    "ControllerRegistration",
    "GetTelemetrySubscriptions",
    "PushTelemetry",
    "AssignReplicasToDirs",
    "ListClientMetricsResources",
    "DescribeTopicPartitions",
};

const char *tarn__kapi_name(int16_t api_key) {
  if (api_key >= 0 && (size_t)api_key < sizeof kafka_names / sizeof *kafka_names)
    return kafka_names[api_key];
  return "unknown";
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
