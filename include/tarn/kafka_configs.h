/* tarn — Kafka's topic configs: one table of their names, types, defaults and
 * validators (as Apache Kafka's LogConfig declares them), with what tarn does
 * with each (issue 37, "Configs"). Pure rules (src/format/kafka_configs.c, the
 * format layer): creating a topic checks every config against it
 * (tarn_kafka_topic_create, CreateTopics answers INVALID_CONFIG), and the
 * configs a topic is described with come from it. docs/kafka.md, "Topic
 * configs". */
#ifndef TARN_KAFKA_CONFIGS_H
#define TARN_KAFKA_CONFIGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The configs tarn acts on (every config given at creation is kept as a
 * stream property of the same key). */
#define TARN_KAFKA_CONFIG_MAX_MESSAGE_BYTES "max.message.bytes"
#define TARN_KAFKA_DEFAULT_MAX_MESSAGE_BYTES 1048588 /* Kafka's default */
/* The writer's batch window for the topic's logs, in ms (0..60000). */
#define TARN_KAFKA_CONFIG_BATCH_MS "tarn.kafka.batch.ms"
#define TARN_KAFKA_BATCH_MS_MAX 60000
/* The stream's storage class, when it has one (e.g. "express"). */
#define TARN_PROP_STORAGE_CLASS "class" /* = TARN_STREAM_CLASS_PROP (tarn/express.h) */
#define TARN_STORAGE_CLASS_MAX 63

/* Kafka's ConfigDef types. */
enum {
  TARN_KAFKA_CONFIG_BOOLEAN = 1,
  TARN_KAFKA_CONFIG_STRING,
  TARN_KAFKA_CONFIG_INT,
  TARN_KAFKA_CONFIG_LONG,
  TARN_KAFKA_CONFIG_DOUBLE,
  TARN_KAFKA_CONFIG_LIST
};

/* What tarn does with a config. */
enum {
  TARN_KAFKA_CONFIG_APPLIED = 1, /* tarn acts on the value */
  TARN_KAFKA_CONFIG_KEPT         /* checked and kept as Kafka would; tarn does not act on it
                                    (the note says why) */
};

typedef struct tarn_kafka_config_def {
  const char *name;
  int type;                   /* TARN_KAFKA_CONFIG_BOOLEAN ... */
  const char *default_value;  /* as DescribeConfigs reports it */
  int64_t min, max;           /* INT and LONG: the valid range */
  double dmin, dmax;          /* DOUBLE: the valid range */
  const char *const *choices; /* STRING, LIST: the valid values (NULL: any) */
  int tarn;                   /* TARN_KAFKA_CONFIG_APPLIED or _KEPT */
  const char *note;           /* what tarn does with it, for docs and DescribeConfigs */
} tarn_kafka_config_def;

/* The table, in name order; *n its length. */
const tarn_kafka_config_def *tarn_kafka_configs(size_t *n);
/* The definition of name, or NULL when neither Kafka nor tarn has it. */
const tarn_kafka_config_def *tarn_kafka_config_find(const char *name);
/* Checks one config a topic is created or altered with, as Kafka does:
 * TARN_EINVAL with Kafka's message ("Unknown topic config name: x",
 * "Invalid value banana for configuration retention.ms: Not a number of type
 * LONG", "... Value must be at least -1") or 0. */
int tarn_kafka_config_check(const char *name, const char *value);
/* 1 when the cleanup.policy list (Kafka's: "delete", "compact",
 * "compact,delete", spaces allowed around the items; NULL: the default,
 * "delete") names policy, else 0. */
int tarn_kafka_cleanup_policy_has(const char *list, const char *policy);

#ifdef __cplusplus
}
#endif
#endif
