/* tarn — the Kafka binding's naming rules (spec Appendix A, "Stream
 * identity"): topic-name checks, topic IDs in Kafka's string form and the
 * stream name "{topic}-topic-id-{topic ID}" of a topic. Pure functions of
 * their arguments (src/format/kafka_names.c, the format layer); the topics
 * on a catalog are in tarn/kafka_topics.h, which includes this header. */
#ifndef TARN_KAFKA_NAMES_H
#define TARN_KAFKA_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/catalog_record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kafka allows topic names of 249 bytes; the stream name adds
 * "-topic-id-" and the 22-character ID, and a stream name is at most
 * TARN_STREAM_NAME_MAX (200) bytes (a directory name under the compacted
 * root), so a topic name here is at most 168 bytes. */
#define TARN_KAFKA_TOPIC_ID_LEN 22
#define TARN_KAFKA_STREAM_INFIX "-topic-id-"
#define TARN_KAFKA_TOPIC_NAME_MAX (TARN_STREAM_NAME_MAX - 10 - TARN_KAFKA_TOPIC_ID_LEN)

/* ---- pure naming parts (src/format/kafka_names.c) ----------------------- */

/* Kafka's topic-name rule: 1..249 bytes of [a-zA-Z0-9._-], not "." or "..";
 * here also at most TARN_KAFKA_TOPIC_NAME_MAX bytes. TARN_EINVAL with why. */
int tarn_kafka_topic_name_check(const char *name);

/* Names Kafka reserves (issue 37; docs/kafka.md "Reserved names"):
 * TARN_KAFKA_NAME_INTERNAL for Kafka's internal topics (__consumer_offsets,
 * __transaction_state, __share_group_state: Topic.isInternal), reported
 * is_internal and never created, since tarn keeps groups and transactions in
 * the metadata store; TARN_KAFKA_NAME_RESERVED for __cluster_metadata (KRaft's
 * log, which Kafka refuses to create); 0 for any other name (len bytes). */
enum { TARN_KAFKA_NAME_INTERNAL = 1, TARN_KAFKA_NAME_RESERVED = 2 };
int tarn_kafka_topic_reserved(const char *name, size_t len);

/* Kafka's Uuid.toString(): URL-safe Base64 of the 16 bytes, no padding. */
void tarn_kafka_topic_id_string(const uint8_t uuid[16], char out[TARN_KAFKA_TOPIC_ID_LEN + 1]);
/* The inverse; TARN_EINVAL unless s is 22 characters of the URL-safe
 * alphabet whose last character's low 4 bits are 0 (what the encoder writes). */
int tarn_kafka_topic_id_parse(const char *s, uint8_t uuid[16]);

/* "{topic}-topic-id-{id}" into out (n >= TARN_STREAM_NAME_MAX + 1). */
int tarn_kafka_stream_name(const char *topic, const char *id, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
