/* Kafka's topic configs (tarn/kafka_configs.h): names, types, defaults and
 * validators as Apache Kafka 3.x declares them (LogConfig, TopicConfig), and
 * what tarn does with each. Kafka's own error messages, so that a client or an
 * operator reads what Kafka would have said. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tarn/kafka_configs.h"
#include "util/error.h"

#define LMAX INT64_MAX
#define IMAX INT32_MAX
#define LMIN INT64_MIN

static const char *const cleanup_policies[] = {"compact", "delete", NULL};
static const char *const compression_types[] = {"uncompressed", "zstd",     "lz4", "snappy",
                                                "gzip",         "producer", NULL};
static const char *const timestamp_types[] = {"CreateTime", "LogAppendTime", NULL};

/* Why tarn keeps a config without acting on it (docs/kafka.md "Topic configs"). */
#define STORES "the object store replicates and keeps durability: no replicas, no ISR"
#define NO_SEGMENTS "tarn has no segment files: a log is WAL objects and Parquet files"
#define NO_FLUSH "an acknowledgement follows the WAL object's PUT and the index record"
#define RETENTION "a node job soft-trims each partition by whole entries; never the last one"
#define NOT_YET_COMPACT "kept; key compaction is not done yet (issue 35)"
#define BATCHES_AS_PRODUCED "batches are stored as the producer sent them"

#define B(n, d, t, note)                                                                           \
  { n, TARN_KAFKA_CONFIG_BOOLEAN, d, 0, 0, 0, 0, NULL, t, note }
#define I(n, d, lo, hi, t, note)                                                                   \
  { n, TARN_KAFKA_CONFIG_INT, d, lo, hi, 0, 0, NULL, t, note }
#define L(n, d, lo, hi, t, note)                                                                   \
  { n, TARN_KAFKA_CONFIG_LONG, d, lo, hi, 0, 0, NULL, t, note }
#define S(n, d, ch, t, note)                                                                       \
  { n, TARN_KAFKA_CONFIG_STRING, d, 0, 0, 0, 0, ch, t, note }
#define LS(n, d, ch, t, note)                                                                      \
  { n, TARN_KAFKA_CONFIG_LIST, d, 0, 0, 0, 0, ch, t, note }
#define KEPT TARN_KAFKA_CONFIG_KEPT
#define APPLIED TARN_KAFKA_CONFIG_APPLIED

/* In strcmp order of name (tarn_kafka_config_find searches it). */
static const tarn_kafka_config_def table[] = {
    S("class", "", NULL, APPLIED,
      "tarn: the stream's storage class (express: the Epochs writer), set at creation"),
    LS("cleanup.policy", "delete", cleanup_policies, APPLIED,
       "delete: retention.ms and retention.bytes apply; compact: records without a key are "
       "refused (INVALID_RECORD, as Kafka); " NOT_YET_COMPACT),
    I("compression.gzip.level", "-1", -1, 9, KEPT, BATCHES_AS_PRODUCED),
    I("compression.lz4.level", "9", 1, 17, KEPT, BATCHES_AS_PRODUCED),
    S("compression.type", "producer", compression_types, KEPT,
      BATCHES_AS_PRODUCED " (the producer value)"),
    I("compression.zstd.level", "3", -131072, 22, KEPT, BATCHES_AS_PRODUCED),
    L("delete.retention.ms", "86400000", 0, LMAX, KEPT, NOT_YET_COMPACT),
    L("file.delete.delay.ms", "60000", 0, LMAX, KEPT,
      "deletion follows the spec's grace periods (docs/compaction.md)"),
    L("flush.messages", "9223372036854775807", 1, LMAX, KEPT, NO_FLUSH),
    L("flush.ms", "9223372036854775807", 0, LMAX, KEPT, NO_FLUSH),
    LS("follower.replication.throttled.replicas", "", NULL, KEPT, STORES),
    I("index.interval.bytes", "4096", 0, IMAX, KEPT, NO_SEGMENTS),
    LS("leader.replication.throttled.replicas", "", NULL, KEPT, STORES),
    L("local.retention.bytes", "-2", -2, LMAX, KEPT, "no local tier: every byte is in the stores"),
    L("local.retention.ms", "-2", -2, LMAX, KEPT, "no local tier: every byte is in the stores"),
    L("max.compaction.lag.ms", "9223372036854775807", 1, LMAX, KEPT, NOT_YET_COMPACT),
    I(TARN_KAFKA_CONFIG_MAX_MESSAGE_BYTES, "1048588", 1, IMAX, APPLIED,
      "the largest batch Produce accepts (MESSAGE_TOO_LARGE above); tarn requires >= 1"),
    B("message.downconversion.enable", "true", KEPT,
      "Fetch serves batches as stored (Fetch v4 and above)"),
    S("message.format.version", "3.0-IV1", NULL, KEPT, "batches are stored as produced"),
    L("message.timestamp.after.max.ms", "9223372036854775807", 0, LMAX, KEPT,
      "kept; timestamps are not checked against the node's clock"),
    L("message.timestamp.before.max.ms", "9223372036854775807", 0, LMAX, KEPT,
      "kept; timestamps are not checked against the node's clock"),
    L("message.timestamp.difference.max.ms", "9223372036854775807", 0, LMAX, KEPT,
      "kept; timestamps are not checked against the node's clock"),
    S("message.timestamp.type", "CreateTime", timestamp_types, KEPT,
      "kept; batches keep the producer's timestamp type"),
    {"min.cleanable.dirty.ratio", TARN_KAFKA_CONFIG_DOUBLE, "0.5", 0, 0, 0.0, 1.0, NULL, KEPT,
     NOT_YET_COMPACT},
    L("min.compaction.lag.ms", "0", 0, LMAX, KEPT, NOT_YET_COMPACT),
    I("min.insync.replicas", "1", 1, IMAX, KEPT, STORES),
    B("preallocate", "false", KEPT, NO_SEGMENTS),
    B("remote.log.copy.disable", "false", KEPT, "no local tier: every byte is in the stores"),
    B("remote.log.delete.on.disable", "false", KEPT, "no local tier: every byte is in the stores"),
    B("remote.storage.enable", "false", KEPT, "no local tier: every byte is in the stores"),
    L("retention.bytes", "-1", LMIN, LMAX, APPLIED, RETENTION " (index records, oldest first)"),
    L("retention.ms", "604800000", -1, LMAX, APPLIED, RETENTION " (batch max timestamps)"),
    I("segment.bytes", "1073741824", 14, IMAX, KEPT, NO_SEGMENTS),
    I("segment.index.bytes", "10485760", 4, IMAX, KEPT, NO_SEGMENTS),
    L("segment.jitter.ms", "0", 0, LMAX, KEPT, NO_SEGMENTS),
    L("segment.ms", "604800000", 1, LMAX, KEPT, NO_SEGMENTS),
    I(TARN_KAFKA_CONFIG_BATCH_MS, "0", 0, TARN_KAFKA_BATCH_MS_MAX, APPLIED,
      "tarn: the writer's batch window for the topic's appends (0: the node's)"),
    B("unclean.leader.election.enable", "false", KEPT, STORES),
};

const tarn_kafka_config_def *tarn_kafka_configs(size_t *n) {
  *n = sizeof table / sizeof *table;
  return table;
}

const tarn_kafka_config_def *tarn_kafka_config_find(const char *name) {
  size_t lo = 0, hi = sizeof table / sizeof *table;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(table[mid].name, name);
    if (c == 0)
      return &table[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* Kafka's message, with at most 64 bytes of the value: a long value must not
 * push the config's name and the reason out of the bounded message (found by
 * fuzz_kafka_config). */
static int invalid(const char *name, const char *value, const char *why) {
  return tarn__err(TARN_EINVAL, "Invalid value %.64s%s for configuration %.128s: %s", value,
                   strlen(value) > 64 ? "..." : "", name, why);
}

static int choice_check(const tarn_kafka_config_def *d, const char *v, size_t n) {
  if (!d->choices)
    return 1;
  for (const char *const *c = d->choices; *c; c++)
    if (strlen(*c) == n && strncmp(*c, v, n) == 0)
      return 1;
  return 0;
}

/* "String must be one of: a, b" (Kafka's ValidString / ValidList). */
static int not_a_choice(const tarn_kafka_config_def *d, const char *value) {
  char why[256] = "String must be one of: ";
  for (const char *const *c = d->choices; *c; c++) {
    if (c != d->choices)
      strncat(why, ", ", sizeof why - strlen(why) - 1);
    strncat(why, *c, sizeof why - strlen(why) - 1);
  }
  return invalid(d->name, value, why);
}

static int integer_check(const tarn_kafka_config_def *d, const char *value) {
  char *end;
  errno = 0;
  long long x = strtoll(value, &end, 10);
  int is_int = d->type == TARN_KAFKA_CONFIG_INT;
  if (!*value || *end || errno || (is_int && (x < INT32_MIN || x > INT32_MAX)))
    return invalid(d->name, value,
                   is_int ? "Not a number of type INT" : "Not a number of type LONG");
  char why[64];
  if (x < d->min) {
    snprintf(why, sizeof why, "Value must be at least %" PRId64, d->min);
    return invalid(d->name, value, why);
  }
  if (x > d->max) {
    snprintf(why, sizeof why, "Value must be no more than %" PRId64, d->max);
    return invalid(d->name, value, why);
  }
  return 0;
}

static int double_check(const tarn_kafka_config_def *d, const char *value) {
  char *end;
  errno = 0;
  double x = strtod(value, &end);
  if (!*value || *end || errno || isnan(x))
    return invalid(d->name, value, "Not a number of type DOUBLE");
  char why[64];
  if (x < d->dmin) {
    snprintf(why, sizeof why, "Value must be at least %g", d->dmin);
    return invalid(d->name, value, why);
  }
  if (x > d->dmax) {
    snprintf(why, sizeof why, "Value must be no more than %g", d->dmax);
    return invalid(d->name, value, why);
  }
  return 0;
}

/* Each comma-separated element, spaces around it trimmed as Kafka does. */
static int list_check(const tarn_kafka_config_def *d, const char *value) {
  const char *p = value;
  if (!*value)
    return 0; /* the empty list */
  for (;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *s = p;
    while (n && *s == ' ')
      s++, n--;
    while (n && s[n - 1] == ' ')
      n--;
    if (!choice_check(d, s, n))
      return not_a_choice(d, value);
    if (!e)
      break;
    p = e + 1;
  }
  return 0;
}

int tarn_kafka_cleanup_policy_has(const char *s, const char *policy) {
  if (!s)
    s = "delete";
  size_t want = strlen(policy);
  while (*s) {
    while (*s == ' ' || *s == ',')
      s++;
    size_t n = strcspn(s, ","), k = n;
    while (k && s[k - 1] == ' ')
      k--;
    if (k == want && strncmp(s, policy, k) == 0)
      return 1;
    s += n;
  }
  return 0;
}

int tarn_kafka_config_check(const char *name, const char *value) {
  const tarn_kafka_config_def *d = name ? tarn_kafka_config_find(name) : NULL;
  if (!d)
    return tarn__err(TARN_EINVAL, "Unknown topic config name: %s", name ? name : "(null)");
  if (!value)
    return invalid(name, "null", "a topic config needs a value");
  switch (d->type) {
  case TARN_KAFKA_CONFIG_BOOLEAN:
    if (strcasecmp(value, "true") && strcasecmp(value, "false"))
      return invalid(name, value, "Expected value to be either true or false");
    return 0;
  case TARN_KAFKA_CONFIG_INT:
  case TARN_KAFKA_CONFIG_LONG: return integer_check(d, value);
  case TARN_KAFKA_CONFIG_DOUBLE: return double_check(d, value);
  case TARN_KAFKA_CONFIG_LIST: return list_check(d, value);
  default:
    if (!choice_check(d, value, strlen(value)))
      return not_a_choice(d, value);
    if (strcmp(name, TARN_PROP_STORAGE_CLASS) == 0 &&
        (!*value || strlen(value) > TARN_STORAGE_CLASS_MAX))
      return tarn__err(TARN_EINVAL, "topic config %s: 1..%d bytes", name, TARN_STORAGE_CLASS_MAX);
    return 0;
  }
}
