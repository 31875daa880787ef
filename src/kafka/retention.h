/* Retention of Kafka topics through the spec's trim (issue 37, "Retention and
 * DeleteRecords"; docs/kafka.md "Retention"): retention.ms, retention.bytes
 * and cleanup.policy=delete, enforced per partition by a soft trim (spec
 * "Soft trim", LS-080) under a write lease; the deployment's reclamation
 * (tarn serve's reclaim and compaction jobs) then deletes what lies below the
 * trim marker B. DeleteRecords is the same soft trim to a requested offset. */
#ifndef TARN_KAFKA_RETENTION_H
#define TARN_KAFKA_RETENTION_H

#include <stdint.h>

#include "kafka/api.h"
#include "log/retention_trim.h"

struct tarn_kafka_topic;

/* What a topic's configs ask for (read afresh from its stream properties at
 * each pass; absent ones take the config table's defaults: Kafka's 7 days,
 * no size bound, delete). -1 disables a bound. */
typedef struct tarn__kretention_policy {
  int64_t ms, bytes;
  int del; /* cleanup.policy holds "delete"; compact alone: nothing is trimmed */
} tarn__kretention_policy;
void tarn__kretention_policy_of(const struct tarn_kafka_topic *t, tarn__kretention_policy *p);

/* The new log start the policy asks for on log_id at wall-clock now_ms: the
 * first offset to keep (*upto; the log's current first offset when nothing
 * is due). By time, the start of the first entry holding a batch whose max
 * timestamp is at or after now_ms - ms (everything before it is older); by
 * size, whole index records from the oldest while the rest still holds at
 * least `bytes` bytes (Kafka's rule for segments). The last record is never
 * trimmed (the soft trim keeps it). */
int tarn__kretention_target(tarn__knode *n, uint64_t log_id, const tarn__kretention_policy *p,
                            int64_t now_ms, uint64_t *upto);

/* Soft trim of log_id so that its log starts at upto (B' = min(upto, start
 * of its last index record), never lowered), under a lease acquired and
 * released here. out: the marker before and the one in the store afterwards,
 * and the bytes of the index records now wholly below it that were above the
 * old one. TARN_EFENCED: the log is being deleted. */
typedef tarn__retention_trimmed tarn__kretention_trimmed; /* log/retention_trim.h */
int tarn__kretention_trim(tarn__knode *n, uint64_t log_id, uint64_t upto,
                          tarn__kretention_trimmed *out);

/* One pass over the live topics: every partition this node leads (the
 * Metadata leader) is trimmed as its topic's policy asks at now_ms. Counts
 * tarn_kafka_retention_{passes,trims,bytes,errors}_total. A partition that
 * fails is logged and left to the next pass; returns the first error. */
int tarn__kretention_pass(tarn__knode *n, int64_t now_ms);

#endif
