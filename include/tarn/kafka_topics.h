/* tarn — Kafka topics on the catalog (spec Appendix A, "Stream identity").
 *
 * Each incarnation of a Kafka topic is one stream: namespace "default", name
 * "{topic}-topic-id-{topic ID}" where the topic ID is Kafka's Uuid.toString()
 * form (22 characters of URL-safe Base64 without padding), with properties
 * lakestream.source.logical.name and lakestream.kafka.topic.name holding the
 * topic name. Partition p is the log at position p of the stream's layout. A
 * deleted and re-created topic is a new stream with a new ID: the catalog's
 * tombstone keeps the old identity dropped (LS-089).
 *
 * The naming parts (topic IDs, topic-name checks, stream names) are pure:
 * tarn/kafka_names.h (src/format/kafka_names.c), included here; the rest
 * works on a catalog (src/log/kafka_topics.c). docs/kafka.md, "Topics and
 * the binding". */
#ifndef TARN_KAFKA_TOPICS_H
#define TARN_KAFKA_TOPICS_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/catalog.h"
#include "tarn/catalog_record.h"
#include "tarn/kafka_configs.h"
#include "tarn/kafka_names.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Stream properties of the binding (spec Appendix A; tables §3.10). */
#define TARN_KAFKA_PROP_LOGICAL_NAME "lakestream.source.logical.name"
#define TARN_KAFKA_PROP_TOPIC_NAME "lakestream.kafka.topic.name"
#define TARN_KAFKA_PROP_TOPIC_ID "lakestream.kafka.topic.id"
/* The topic configs (TARN_KAFKA_CONFIG_*, their checks): tarn/kafka_configs.h. */
/* The key prefix of the Kafka node's idempotent-producer state in the
 * partition P(L) of a topic's log L: "{prefix}{L}/{producer ID:020d}"
 * (src/kafka/producer.h). tarn_kafka_topic_delete removes them. */
#define TARN_KAFKA_PRODUCER_STATE_PREFIX "/kafka-producer-state/"
/* The Kafka node's committed offsets (src/kafka/group_store.c): records
 * "{prefix}{escaped group}/{topic}:{partition:010d}" in the partition
 * TARN_KAFKA_GROUPS_PARTITION. From format TARN_KAFKA_OFFSET_FORMAT_ID a
 * value starts "KO", the format byte, then the 16 bytes of the ID of the
 * topic committed on. tarn_kafka_topic_delete removes a topic's offsets. */
#define TARN_KAFKA_GROUPS_PARTITION "kafka-groups"
#define TARN_KAFKA_OFFSETS_PREFIX "/offsets/"
#define TARN_KAFKA_OFFSET_FORMAT_ID 2

/* ---- topics on a catalog (src/log/kafka_topics.c) ----------------------- */

/* A fresh random topic ID: redrawn while it is the zero UUID or while its
 * string form starts with '-' (Kafka's Uuid.randomUuid() does the same). */
int tarn_kafka_topic_id_new(uint8_t uuid[16], char out[TARN_KAFKA_TOPIC_ID_LEN + 1]);

typedef struct tarn_kafka_topic {
  char name[TARN_KAFKA_TOPIC_NAME_MAX + 1];
  uint8_t uuid[16];
  char id[TARN_KAFKA_TOPIC_ID_LEN + 1];
  char ns[TARN_STREAM_NAME_MAX + 1];     /* "default" */
  char stream[TARN_STREAM_NAME_MAX + 1]; /* "{name}-topic-id-{id}" */
  int state;                             /* TARN_STREAM_ACTIVE or TARN_STREAM_DROPPING */
  int64_t created_ms;
  uint32_t partitions;
  uint64_t *logs;            /* partition p's log is logs[p] (malloc'd) */
  int32_t max_message_bytes; /* max.message.bytes, else 1,048,588 */
  uint32_t batch_ms;         /* tarn.kafka.batch.ms, else 0: the writer's window */
  int compacted;             /* cleanup.policy names compact (issue 35) */
  char storage_class[TARN_STORAGE_CLASS_MAX + 1]; /* the "class" property, else "" */
  tarn_stream_prop *configs;                      /* the topic's configs: every property outside
                                                     lakestream.*, in key order (malloc'd) */
  size_t n_configs;
} tarn_kafka_topic;

void tarn_kafka_topic_free(tarn_kafka_topic *t);
void tarn_kafka_topics_free(tarn_kafka_topic *v, size_t n);

/* 1 when the stream record is a Kafka topic's (it has the property
 * lakestream.kafka.topic.name), else 0. */
int tarn_kafka_stream_is_topic(const tarn_catalog_record *s);
/* THE rule for "is this a Kafka stream" (issue 31): 1 when the stream's
 * entries are Kafka record batches — it is a topic's (the topic-name
 * property), or its compaction serde property names the Kafka type
 * (TARN_PARQUET_KAFKA_SERDE) — else 0. The writer checks every entry of
 * such a stream (LS-095 … LS-098, through tarn_kafka_log_is_topic) and the
 * compactor writes its files with the Kafka serde, so Kafka-typed files
 * never hold other data. */
int tarn_kafka_stream_is_kafka(const tarn_catalog_record *s);
/* Fills *out from a Kafka stream's record: TARN_EINVAL when it is not one
 * (no topic-name property, or a stream name that is not
 * "{topic}-topic-id-{id}" for that topic and a valid ID), or when a config
 * tarn reads has a bad value. */
int tarn_kafka_topic_from_stream(const tarn_catalog_record *s, tarn_kafka_topic *out);

/* Partition p's log ID: TARN_ENOTFOUND past the last partition. */
int tarn_kafka_topic_log(const tarn_kafka_topic *t, uint32_t p, uint64_t *log_id);

/* Creates topic `name` with 1..65536 partitions and the configs (keys must
 * not start with "lakestream."; max.message.bytes 1..2^31-1 and
 * tarn.kafka.batch.ms 0..60000 are checked): a new stream of a new ID.
 * TARN_EEXIST when a live topic of that name exists (one being deleted
 * counts: Kafka answers TOPIC_ALREADY_EXISTS too), TARN_EINVAL for a bad
 * name or config. out may be NULL. */
int tarn_kafka_topic_create(tarn_catalog *c, const char *name, uint32_t partitions,
                            const tarn_stream_prop *configs, size_t n_configs,
                            tarn_kafka_topic *out);

/* The live incarnation of topic `name` (a stream of state ACTIVE), with no
 * side effects; TARN_ENOTFOUND when there is none. out may be NULL. */
int tarn_kafka_topic_lookup(tarn_catalog *c, const char *name, tarn_kafka_topic *out);

/* The live topics, in name order. Free with tarn_kafka_topics_free. */
int tarn_kafka_topic_list(tarn_catalog *c, tarn_kafka_topic **out, size_t *n);

/* Deletes topic `name`: drops its stream with the catalog's drop procedure
 * (tombstone, fence and lease drain of every log, LS-044 … LS-047, LS-090).
 * TARN_ENOTFOUND when no live topic has that name; TARN_EBUSY when writers
 * hold leases past the drain timeout (calling again resumes; the topic is no
 * longer listed or looked up meanwhile). Once the stream is dropped, the
 * producer state of its logs goes (issue 37 "Lifecycle"). */
int tarn_kafka_topic_delete(tarn_catalog *c, const char *name);

/* Grows topic `name` to `total` partitions (Kafka's CreatePartitions takes
 * the new total): TARN_EINVAL when total is not above the current count,
 * also when another grew the topic meanwhile (tarn_catalog_grow_partitions:
 * two at once add once). out may be NULL. */
int tarn_kafka_topic_add_partitions(tarn_catalog *c, const char *name, uint32_t total,
                                    tarn_kafka_topic *out);

/* Kafka's AlterConfigOp.OpType ids (IncrementalAlterConfigs). */
enum {
  TARN_KAFKA_ALTER_SET = 0,
  TARN_KAFKA_ALTER_DELETE = 1,  /* back to the default: removed from the topic's set */
  TARN_KAFKA_ALTER_APPEND = 2,  /* LIST configs: the elements not there yet added */
  TARN_KAFKA_ALTER_SUBTRACT = 3 /* LIST configs: the elements removed */
};
typedef struct tarn_kafka_config_op {
  const char *name;
  const char *value; /* NULL for DELETE */
  int op;            /* TARN_KAFKA_ALTER_SET ... */
} tarn_kafka_config_op;
/* flags of tarn_kafka_topic_alter_configs */
#define TARN_KAFKA_ALTER_REPLACE                                                                   \
  1 /* AlterConfigs: every config not named goes back to its default */
#define TARN_KAFKA_ALTER_VALIDATE_ONLY 2 /* check as an alter would, write nothing */

/* Changes topic `name`'s configs (issue 37, "Configs"; AlterConfigs and
 * IncrementalAlterConfigs): the ops applied in order to the configs the topic
 * has (REPLACE: to none), every value checked as a create checks it
 * (tarn_kafka_config_check), then published with one CompareAndSet of the
 * topic's stream record, read and applied again on a conflict
 * (tarn_catalog_edit_props): a concurrent alter is never lost. The storage
 * class ("class") is fixed at creation: a change or a DELETE of it is refused
 * (a REPLACE keeps it). TARN_EINVAL with Kafka's message for a bad name,
 * value or op (Kafka: INVALID_CONFIG), TARN_ENOTFOUND when no live topic has
 * that name. out (may be NULL) gets the topic as altered. A node reads the
 * new values within its topic cache's second (tarn__knode_topic). */
int tarn_kafka_topic_alter_configs(tarn_catalog *c, const char *name,
                                   const tarn_kafka_config_op *ops, size_t n_ops, int flags,
                                   tarn_kafka_topic *out);

/* Whether log_id belongs to a Kafka stream (1, tarn_kafka_stream_is_kafka)
 * or not (0: another
 * stream's log, or a log no stream of the catalog names), or a negative
 * error when the catalog cannot be read. What the writer asks when it first
 * appends to a log, so that every append to a Kafka log is checked
 * (LS-095 … LS-098). */
int tarn_kafka_log_is_topic(tarn_meta *m, uint64_t log_id);

#ifdef __cplusplus
}
#endif
#endif
