/* Kafka topics on the catalog (spec Appendix A, "Stream identity"): one
 * stream per incarnation of a topic, found by its name's prefix and its
 * topic-name property. tarn/kafka_topics.h, docs/kafka.md. */
#include "tarn/kafka_topics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/catalog_meta.h"
#include "store/meta_pages.h"
#include "tarn/key.h"
#include "tarn/parquet.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

#define LAKESTREAM_PREFIX "lakestream."

int tarn_kafka_topic_id_new(uint8_t uuid[16], char out[TARN_KAFKA_TOPIC_ID_LEN + 1]) {
  static const uint8_t zero[16];
  for (;;) {
    int rc = tarn__random(uuid, 16, "topic ID");
    if (rc)
      return rc;
    /* Kafka's Uuid.randomUuid(): never the zero (or a reserved) UUID, and
     * redrawn when its string starts with '-', which command lines would
     * take for an option. */
    if (memcmp(uuid, zero, 16) == 0)
      continue;
    tarn_kafka_topic_id_string(uuid, out);
    if (out[0] != '-')
      return 0;
  }
}

void tarn_kafka_topic_free(tarn_kafka_topic *t) {
  if (!t)
    return;
  free(t->logs);
  for (size_t i = 0; i < t->n_configs; i++)
    free(t->configs[i].key), free(t->configs[i].value);
  free(t->configs);
  memset(t, 0, sizeof *t);
}

void tarn_kafka_topics_free(tarn_kafka_topic *v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    tarn_kafka_topic_free(&v[i]);
  free(v);
}

static const char *prop(const tarn_catalog_record *s, const char *key) {
  for (size_t i = 0; i < s->n_props; i++)
    if (strcmp(s->props[i].key, key) == 0)
      return s->props[i].value;
  return NULL;
}

int tarn_kafka_stream_is_topic(const tarn_catalog_record *s) {
  return s->kind == TARN_CATREC_STREAM && prop(s, TARN_KAFKA_PROP_TOPIC_NAME) != NULL;
}

int tarn_kafka_stream_is_kafka(const tarn_catalog_record *s) {
  if (tarn_kafka_stream_is_topic(s))
    return 1;
  if (TARN__PLANTED(TARN__BUG_KAFKA_RULE_TOPIC_ONLY))
    return 0; /* planted: the rule before issue 31 (the topic name alone) */
  const char *serde = prop(s, TARN_PROP_COMPACTION_SERDE);
  return s->kind == TARN_CATREC_STREAM && serde && strcmp(serde, TARN_PARQUET_KAFKA_SERDE) == 0;
}

/* A decimal integer in [lo, hi], all of s. */
static int parse_int(const char *key, const char *s, long long lo, long long hi, long long *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (!*s || *end || errno || x < lo || x > hi)
    return tarn__err(TARN_EINVAL, "topic config %s=%s: not an integer in %lld..%lld", key, s, lo,
                     hi);
  *v = x;
  return 0;
}

/* Checks one config a topic is read back with: the ones tarn acts on. A
 * topic created before the config table (issue 37) may hold others that
 * table refuses; they are listed as they are. */
static int config_check(const char *key, const char *value) {
  long long v;
  if (strncmp(key, LAKESTREAM_PREFIX, strlen(LAKESTREAM_PREFIX)) == 0)
    return tarn__err(TARN_EINVAL,
                     "topic config %s: the lakestream.* properties are the "
                     "binding's, set by tarn",
                     key);
  if (strcmp(key, TARN_KAFKA_CONFIG_MAX_MESSAGE_BYTES) == 0)
    return parse_int(key, value, 1, INT32_MAX, &v);
  if (strcmp(key, TARN_KAFKA_CONFIG_BATCH_MS) == 0)
    return parse_int(key, value, 0, TARN_KAFKA_BATCH_MS_MAX, &v);
  if (strcmp(key, TARN_PROP_STORAGE_CLASS) == 0 &&
      (!*value || strlen(value) > TARN_STORAGE_CLASS_MAX))
    return tarn__err(TARN_EINVAL, "topic config %s: 1..%d bytes", key, TARN_STORAGE_CLASS_MAX);
  return 0;
}

int tarn_kafka_topic_from_stream(const tarn_catalog_record *s, tarn_kafka_topic *out) {
  memset(out, 0, sizeof *out);
  const char *name = s->kind == TARN_CATREC_STREAM ? prop(s, TARN_KAFKA_PROP_TOPIC_NAME) : NULL;
  if (!name)
    return tarn__err(TARN_EINVAL, "stream %s/%s is not a Kafka topic's (no %s property)",
                     s->ns ? s->ns : "", s->name ? s->name : "", TARN_KAFKA_PROP_TOPIC_NAME);
  int rc = tarn_kafka_topic_name_check(name);
  size_t nl = strlen(name), il = strlen(TARN_KAFKA_STREAM_INFIX);
  /* the stream is "{topic}-topic-id-{id}" of this very topic */
  if (!rc &&
      (strncmp(s->name, name, nl) != 0 || strncmp(s->name + nl, TARN_KAFKA_STREAM_INFIX, il) != 0))
    rc = tarn__err(TARN_EINVAL, "stream %s/%s is not named %s" TARN_KAFKA_STREAM_INFIX "{id}",
                   s->ns, s->name, name);
  if (!rc)
    rc = tarn_kafka_topic_id_parse(s->name + nl + il, out->uuid);
  if (rc)
    return tarn__errctx(rc, "stream %s/%s", s->ns, s->name);
  snprintf(out->name, sizeof out->name, "%s", name);
  snprintf(out->id, sizeof out->id, "%s", s->name + nl + il);
  snprintf(out->ns, sizeof out->ns, "%s", s->ns);
  snprintf(out->stream, sizeof out->stream, "%s", s->name);
  out->state = s->state;
  out->created_ms = s->time_ms;
  out->partitions = (uint32_t)s->n_logs;
  out->max_message_bytes = TARN_KAFKA_DEFAULT_MAX_MESSAGE_BYTES;
  if (!(out->logs = malloc((s->n_logs ? s->n_logs : 1) * sizeof *out->logs)))
    return tarn__err(TARN_ENOMEM, "out of memory");
  memcpy(out->logs, s->logs, s->n_logs * sizeof *out->logs);
  size_t nc = 0;
  for (size_t i = 0; i < s->n_props; i++)
    nc += strncmp(s->props[i].key, LAKESTREAM_PREFIX, strlen(LAKESTREAM_PREFIX)) != 0;
  if (nc && !(out->configs = calloc(nc, sizeof *out->configs))) {
    tarn_kafka_topic_free(out);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  for (size_t i = 0; !rc && i < s->n_props; i++) {
    const char *k = s->props[i].key, *v = s->props[i].value;
    if (strncmp(k, LAKESTREAM_PREFIX, strlen(LAKESTREAM_PREFIX)) == 0)
      continue;
    if ((rc = config_check(k, v)))
      break;
    long long x = 0; /* set by parse_int on success; gcc -O3 cannot see it */
    if (strcmp(k, TARN_KAFKA_CONFIG_MAX_MESSAGE_BYTES) == 0 && !parse_int(k, v, 1, INT32_MAX, &x))
      out->max_message_bytes = (int32_t)x;
    else if (strcmp(k, TARN_KAFKA_CONFIG_BATCH_MS) == 0 &&
             !parse_int(k, v, 0, TARN_KAFKA_BATCH_MS_MAX, &x))
      out->batch_ms = (uint32_t)x;
    else if (strcmp(k, TARN_PROP_STORAGE_CLASS) == 0)
      snprintf(out->storage_class, sizeof out->storage_class, "%s", v);
    else if (strcmp(k, "cleanup.policy") == 0)
      out->compacted = tarn_kafka_cleanup_policy_has(v, "compact");
    tarn_stream_prop *c = &out->configs[out->n_configs];
    c->key = strdup(k), c->value = strdup(v);
    if (!c->key || !c->value) {
      free(c->key), free(c->value);
      rc = tarn__err(TARN_ENOMEM, "out of memory");
      break;
    }
    out->n_configs++;
  }
  if (rc) {
    tarn_kafka_topic_free(out);
    return tarn__errctx(rc, "topic %s", name);
  }
  return 0;
}

int tarn_kafka_topic_log(const tarn_kafka_topic *t, uint32_t p, uint64_t *log_id) {
  if (p >= t->partitions)
    return tarn__err(TARN_ENOTFOUND, "topic %s has %u partitions; there is no partition %u",
                     t->name, t->partitions, p);
  *log_id = t->logs[p];
  return 0;
}

/* The streams of topic `name`, every incarnation the catalog holds (live or
 * being dropped). */
static int incarnations(tarn_catalog *c, const char *name, tarn_catalog_record **v, size_t *n) {
  *v = NULL, *n = 0;
  int rc = tarn_kafka_topic_name_check(name);
  if (rc)
    return rc;
  char prefix[TARN_STREAM_NAME_MAX + 1];
  snprintf(prefix, sizeof prefix, "%s" TARN_KAFKA_STREAM_INFIX, name);
  rc = tarn_catalog_list_streams_prefix(c, TARN_DEFAULT_NAMESPACE, prefix, v, n);
  if (rc)
    return rc;
  /* A topic named "a" shares the prefix of topic "a-topic-id-b"'s streams:
   * only the property tells them apart. */
  size_t k = 0;
  for (size_t i = 0; i < *n; i++) {
    const char *t = prop(&(*v)[i], TARN_KAFKA_PROP_TOPIC_NAME);
    if (t && strcmp(t, name) == 0)
      (*v)[k++] = (*v)[i];
    else
      tarn_catalog_record_free(&(*v)[i]);
  }
  *n = k;
  return 0;
}

int tarn_kafka_topic_lookup(tarn_catalog *c, const char *name, tarn_kafka_topic *out) {
  if (out)
    memset(out, 0, sizeof *out);
  tarn_catalog_record *v;
  size_t n;
  int rc = incarnations(c, name, &v, &n);
  if (rc)
    return rc;
  rc = TARN_ENOTFOUND;
  for (size_t i = 0; i < n && rc == TARN_ENOTFOUND; i++)
    if (v[i].state == TARN_STREAM_ACTIVE)
      rc = out ? tarn_kafka_topic_from_stream(&v[i], out) : 0;
  tarn_catalog_records_free(v, n);
  if (rc == TARN_ENOTFOUND)
    return tarn__err(rc, "topic %s not found; list topics with 'tarn topic list'", name);
  return rc;
}

int tarn_kafka_topic_list(tarn_catalog *c, tarn_kafka_topic **out, size_t *n) {
  *out = NULL, *n = 0;
  tarn_catalog_record *v;
  size_t nv;
  int rc = tarn_catalog_list_streams_prefix(c, TARN_DEFAULT_NAMESPACE, "", &v, &nv);
  if (rc)
    return rc;
  tarn_kafka_topic *t = nv ? calloc(nv, sizeof *t) : NULL;
  if (nv && !t)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  size_t k = 0;
  /* Streams of one topic sort together, its live one among them, and
   * "{topic}-topic-id-" sorts the topics by name (the infix starts with '-',
   * below every name byte but '.'); the sort below makes it exact. */
  for (size_t i = 0; !rc && i < nv; i++) {
    if (!tarn_kafka_stream_is_topic(&v[i]) || v[i].state != TARN_STREAM_ACTIVE)
      continue;
    int r2 = tarn_kafka_topic_from_stream(&v[i], &t[k]);
    if (r2 == 0)
      k++;
    else if (r2 != TARN_EINVAL) /* a stream that only looks like a topic's is not one */
      rc = r2;
  }
  tarn_catalog_records_free(v, nv);
  if (rc) {
    tarn_kafka_topics_free(t, k);
    return rc;
  }
  for (size_t i = 1; i < k; i++) /* insertion sort by name: usually sorted already */
    for (size_t j = i; j > 0 && strcmp(t[j - 1].name, t[j].name) > 0; j--) {
      tarn_kafka_topic x = t[j];
      t[j] = t[j - 1], t[j - 1] = x;
    }
  *out = t, *n = k;
  return 0;
}

int tarn_kafka_topic_create(tarn_catalog *c, const char *name, uint32_t partitions,
                            const tarn_stream_prop *configs, size_t n_configs,
                            tarn_kafka_topic *out) {
  if (out)
    memset(out, 0, sizeof *out);
  int rc = tarn_kafka_topic_name_check(name);
  if (rc)
    return rc;
  /* issue 37: a reserved name is never an ordinary topic (Kafka's tools
   * would report it internal and its clients read groups from it) */
  if (tarn_kafka_topic_reserved(name, strlen(name)))
    return tarn__err(TARN_EINVAL,
                     "topic %s: a name Kafka reserves for an internal topic; tarn keeps groups "
                     "and transactions in its metadata store, not in topics (docs/kafka.md "
                     "\"Reserved names\")",
                     name);
  if (n_configs > TARN_STREAM_PROPS_MAX - 3)
    return tarn__err(TARN_EINVAL, "topic %s: more than %d configs", name,
                     TARN_STREAM_PROPS_MAX - 3);
  for (size_t i = 0; i < n_configs; i++) {
    for (size_t j = 0; j < i; j++)
      if (strcmp(configs[i].key, configs[j].key) == 0)
        return tarn__err(TARN_EINVAL, "topic %s: config %s given twice", name, configs[i].key);
    /* Kafka's table: its names, types and ranges (tarn/kafka_configs.h),
     * then tarn's own narrower ranges for the configs it acts on */
    if ((rc = config_check(configs[i].key, configs[i].value)) ||
        (rc = tarn_kafka_config_check(configs[i].key, configs[i].value)))
      return tarn__errctx(rc, "topic %s", name);
  }
  /* A topic is live while any incarnation's stream exists: one being
   * dropped still holds the name (Kafka answers TOPIC_ALREADY_EXISTS while a
   * deletion is in progress, too). */
  tarn_catalog_record *v;
  size_t n;
  if ((rc = incarnations(c, name, &v, &n)))
    return rc;
  tarn_catalog_records_free(v, n);
  if (n)
    return tarn__err(TARN_EEXIST, "topic %s already exists", name);
  uint8_t uuid[16];
  char id[TARN_KAFKA_TOPIC_ID_LEN + 1], stream[TARN_STREAM_NAME_MAX + 1];
  if ((rc = tarn_kafka_topic_id_new(uuid, id)) ||
      (rc = tarn_kafka_stream_name(name, id, stream, sizeof stream)))
    return rc;
  tarn_stream_prop *props = calloc(n_configs + 3, sizeof *props);
  if (!props)
    return tarn__err(TARN_ENOMEM, "out of memory");
  props[0] = (tarn_stream_prop){TARN_KAFKA_PROP_LOGICAL_NAME, (char *)name};
  props[1] = (tarn_stream_prop){TARN_KAFKA_PROP_TOPIC_NAME, (char *)name};
  props[2] = (tarn_stream_prop){TARN_KAFKA_PROP_TOPIC_ID, id};
  if (n_configs)
    memcpy(props + 3, configs, n_configs * sizeof *props);
  tarn_catalog_record s;
  /* A fresh ID makes a fresh identity: a deleted topic's tombstone never
   * blocks its successor (LS-089 stays intact). */
  rc = tarn_catalog_create_stream(c, TARN_DEFAULT_NAMESPACE, stream, partitions, props,
                                  n_configs + 3, &s);
  free(props);
  if (rc)
    return tarn__errctx(rc, "creating topic %s", name);
  /* Another node may be creating the same topic: a creator that sees any
   * other live incarnation after its own create drops its stream and fails.
   * The store's scans are linearizable, so of two racing creators the later
   * one to list sees the other: at most one topic stays (both may lose; a
   * retry then succeeds). */
  if ((rc = incarnations(c, name, &v, &n))) {
    tarn_catalog_record_free(&s);
    return rc;
  }
  int lost = 0;
  for (size_t i = 0; i < n; i++)
    lost |= strcmp(v[i].name, s.name) != 0 && v[i].state == TARN_STREAM_ACTIVE;
  tarn_catalog_records_free(v, n);
  if (lost) {
    tarn_catalog_drop_stream(c, TARN_DEFAULT_NAMESPACE, s.name, NULL);
    tarn_catalog_record_free(&s);
    return tarn__err(TARN_EEXIST, "topic %s already exists (created concurrently)", name);
  }
  rc = out ? tarn_kafka_topic_from_stream(&s, out) : 0;
  tarn_catalog_record_free(&s);
  return rc;
}

/* Issue 37 "Lifecycle": the idempotent producers' state of log L goes with
 * its topic. The order makes it final: the drop above fenced L (LS-044)
 * before it returned, and a producer-state record is created only while L
 * has no fence (src/kafka/producer.c, save_state), so once this range is
 * removed no produce racing the deletion can write one again (a
 * CompareAndSet needs the record, which is gone). A deletion that stops
 * between the drop and here leaves records that nothing reads; the node's
 * expiry (producer.id.expiration.ms) removes them. */
static int producer_state_drop(tarn_catalog *c, uint64_t log_id) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_SLASH_MAX], b[TARN_KEY_SLASH_MAX + 1];
  int rc = tarn_key_partition(part, log_id);
  if (rc)
    return rc;
  snprintf(a, sizeof a, TARN_KAFKA_PRODUCER_STATE_PREFIX "%llu/", (unsigned long long)log_id);
  snprintf(b, sizeof b, "%s\xff", a);
  rc = tarn_meta_delete_range(tarn__catalog_meta(c), part, a, b, NULL);
  return rc ? tarn__errctx(rc, "removing the producer state of log %llu",
                           (unsigned long long)log_id)
            : 0;
}

/* Issue 37 "Lifecycle": the committed offsets of topic `name`'s incarnation
 * `uuid` go with it, every group's (Kafka's coordinator removes a deleted
 * topic's partitions from every group, GroupMetadataManager.cleanupGroupMetadata).
 * After the drop: the incarnation is no longer looked up, so a commit on it
 * is refused from then on (a node's topic cache may take a second to see
 * it). Only records of this incarnation (or of none: format 1, before IDs)
 * go, each by a Delete on the version read, so a re-created topic's commits
 * stay. A record this leaves behind (a commit from a node's cache, a
 * deletion that stopped here) names an ID no live topic has: OffsetFetch
 * ignores it (api_offset_fetch.c) and the node's offsets expiry removes it. */
typedef struct dropping {
  tarn_meta *m;
  const char *name;
  const uint8_t *uuid;
} dropping;

static int offset_drop(void *arg, const tarn_meta_rec *r) {
  const dropping *d = arg;
  size_t nl = strlen(d->name);
  const char *g = r->key + strlen(TARN_KAFKA_OFFSETS_PREFIX), *t = strchr(g, '/');
  const char *colon = t ? strrchr(t, ':') : NULL;
  if (!colon || (size_t)(colon - t - 1) != nl || memcmp(t + 1, d->name, nl) != 0)
    return 0;
  const uint8_t *v = r->value;
  int ours = r->value_len >= 19 && v[0] == 'K' && v[1] == 'O' &&
             (v[2] < TARN_KAFKA_OFFSET_FORMAT_ID || memcmp(v + 3, d->uuid, 16) == 0);
  if (!ours)
    return 0;
  int rc = tarn_meta_delete_if(d->m, TARN_KAFKA_GROUPS_PARTITION, r->key, r->stat.version, NULL, 0);
  return rc == TARN_ENOTFOUND || rc == TARN_ECONFLICT ? 0 : rc; /* moved: not this pass's */
}

static int offsets_drop(tarn_catalog *c, const char *name, const uint8_t uuid[16]) {
  dropping d = {tarn__catalog_meta(c), name, uuid};
  int rc = tarn__meta_scan_each(d.m, TARN_KAFKA_GROUPS_PARTITION, TARN_KAFKA_OFFSETS_PREFIX,
                                TARN_KAFKA_OFFSETS_PREFIX "\xff/", 256, offset_drop, &d);
  return rc ? tarn__errctx(rc, "removing the committed offsets of topic %s", name) : 0;
}

int tarn_kafka_topic_delete(tarn_catalog *c, const char *name) {
  tarn_catalog_record *v;
  size_t n;
  int rc = incarnations(c, name, &v, &n);
  if (rc)
    return rc;
  if (n == 0) {
    tarn_catalog_records_free(v, n);
    return tarn__err(TARN_ENOTFOUND, "topic %s not found", name);
  }
  /* Every incarnation still in the catalog goes: the live one, and one a
   * crashed delete left DROPPING (the drop resumes). */
  for (size_t i = 0; i < n && !rc; i++) {
    /* the incarnation's ID: its stream is "{name}-topic-id-{id}" */
    uint8_t uuid[16];
    rc =
        tarn_kafka_topic_id_parse(v[i].name + strlen(name) + strlen(TARN_KAFKA_STREAM_INFIX), uuid);
    rc = rc ? rc : tarn_catalog_drop_stream(c, v[i].ns, v[i].name, NULL);
    for (size_t l = 0; !rc && l < v[i].n_logs; l++)
      rc = producer_state_drop(c, v[i].logs[l]);
    if (!rc)
      rc = offsets_drop(c, name, uuid);
  }
  tarn_catalog_records_free(v, n);
  return rc ? tarn__errctx(rc, "deleting topic %s", name) : 0;
}

int tarn_kafka_topic_add_partitions(tarn_catalog *c, const char *name, uint32_t total,
                                    tarn_kafka_topic *out) {
  if (out)
    memset(out, 0, sizeof *out);
  tarn_kafka_topic t;
  int rc = tarn_kafka_topic_lookup(c, name, &t);
  if (rc)
    return rc;
  if (total <= t.partitions) {
    rc = tarn__err(TARN_EINVAL, "topic %s has %u partitions; the new count %u must be larger", name,
                   t.partitions, total);
  } else {
    tarn_catalog_record s;
    /* the total, not a count: of two growing it at once one adds, the other fails */
    rc = tarn_catalog_grow_partitions(c, t.ns, t.stream, total, &s);
    if (!rc) {
      rc = out ? tarn_kafka_topic_from_stream(&s, out) : 0;
      tarn_catalog_record_free(&s);
    }
  }
  tarn_kafka_topic_free(&t);
  return rc;
}

/* ---- altering a topic's configs (issue 37, "Configs") -------------------- */

/* A topic's properties being edited: malloc'd keys and values. */
typedef struct cfgset {
  tarn_stream_prop *v;
  size_t n, cap;
} cfgset;

static void cfgset_free(cfgset *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i].key), free(s->v[i].value);
  free(s->v);
  memset(s, 0, sizeof *s);
}

static tarn_stream_prop *cfgset_find(cfgset *s, const char *k) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i].key, k) == 0)
      return &s->v[i];
  return NULL;
}

static int cfgset_put(cfgset *s, const char *k, const char *v) {
  tarn_stream_prop *p = cfgset_find(s, k);
  char *nv = strdup(v);
  if (!nv)
    return tarn__err(TARN_ENOMEM, "out of memory");
  if (p) {
    free(p->value);
    p->value = nv;
    return 0;
  }
  /* room: sized for the record's properties and one per op (alter_edit) */
  if (s->n == s->cap || !(s->v[s->n].key = strdup(k))) {
    free(nv);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  s->v[s->n++].value = nv;
  return 0;
}

static void cfgset_del(cfgset *s, const char *k) {
  tarn_stream_prop *p = cfgset_find(s, k);
  if (!p)
    return;
  free(p->key), free(p->value);
  *p = s->v[--s->n];
}

static int prop_cmp(const void *a, const void *b) {
  return strcmp(((const tarn_stream_prop *)a)->key, ((const tarn_stream_prop *)b)->key);
}

/* Whether the n bytes at e are one element of the comma-separated list l. */
static int list_has(const char *l, const char *e, size_t n) {
  for (const char *p = l; *p;) {
    const char *c = strchr(p, ',');
    size_t m = c ? (size_t)(c - p) : strlen(p);
    if (m == n && strncmp(p, e, n) == 0)
      return 1;
    if (!c)
      break;
    p = c + 1;
  }
  return 0;
}

/* APPEND (the elements of v not in cur, after them) or SUBTRACT (cur without
 * the elements of v), as Kafka's ConfigAdminManager does; elements trimmed of
 * spaces. out is malloc'd. */
static int list_op(const char *cur, const char *v, int append, char **out) {
  size_t cap = strlen(cur) + strlen(v) + 2, len = 0;
  char *r = malloc(cap);
  if (!r)
    return tarn__err(TARN_ENOMEM, "out of memory");
  r[0] = 0;
  const char *lists[2] = {cur, v};
  for (int pass = 0; pass < 2; pass++) {
    for (const char *p = lists[pass]; *p;) {
      const char *c = strchr(p, ',');
      size_t m = c ? (size_t)(c - p) : strlen(p);
      const char *e = p;
      while (m && *e == ' ')
        e++, m--;
      while (m && e[m - 1] == ' ')
        m--;
      int keep = m && !list_has(r, e, m) && (pass == 0 ? append || !list_has(v, e, m) : append);
      if (keep) {
        if (len)
          r[len++] = ',';
        memcpy(r + len, e, m);
        r[len += m] = 0;
      }
      if (!c)
        break;
      p = c + 1;
    }
  }
  *out = r;
  return 0;
}

static int alter_one(cfgset *s, const tarn_kafka_config_op *o, const char *cls) {
  const char *k = o->name, *v = o->value;
  if (!k)
    return tarn__err(TARN_EINVAL, "a config without a name");
  if (strncmp(k, LAKESTREAM_PREFIX, strlen(LAKESTREAM_PREFIX)) == 0)
    return config_check(k, "");
  /* The storage class picks the writer of the topic's logs when they are
   * first written (kexpress.c): it cannot change under them. */
  if (strcmp(k, TARN_PROP_STORAGE_CLASS) == 0) {
    if (o->op == TARN_KAFKA_ALTER_SET && v && strcmp(v, cls ? cls : "") == 0)
      return 0; /* its value again: no change */
    return tarn__err(TARN_EINVAL,
                     "Config %s cannot be altered: the storage class of a topic is fixed when "
                     "it is created (tarn topic create --config class=...)",
                     k);
  }
  const tarn_kafka_config_def *d = tarn_kafka_config_find(k);
  char *nv = NULL;
  int rc;
  switch (o->op) {
  case TARN_KAFKA_ALTER_SET:
    if ((rc = tarn_kafka_config_check(k, v)) || (rc = config_check(k, v)))
      return rc;
    return cfgset_put(s, k, v);
  case TARN_KAFKA_ALTER_DELETE:
    if (!d)
      return tarn_kafka_config_check(k, ""); /* Kafka's "Unknown topic config name" */
    cfgset_del(s, k);
    return 0;
  case TARN_KAFKA_ALTER_APPEND:
  case TARN_KAFKA_ALTER_SUBTRACT:
    if (!d || !v)
      return tarn_kafka_config_check(k, v);
    if (d->type != TARN_KAFKA_CONFIG_LIST)
      return tarn__err(TARN_EINVAL, "Config value %s is not allowed for config key: %s",
                       o->op == TARN_KAFKA_ALTER_APPEND ? "append" : "subtract", k);
    {
      tarn_stream_prop *p = cfgset_find(s, k);
      rc = list_op(p ? p->value : d->default_value, v, o->op == TARN_KAFKA_ALTER_APPEND, &nv);
    }
    if (!rc && !(rc = tarn_kafka_config_check(k, nv)))
      rc = cfgset_put(s, k, nv);
    free(nv);
    return rc;
  default: return tarn__err(TARN_EINVAL, "config %s: unknown operation %d", k, o->op);
  }
}

typedef struct alter_arg {
  const tarn_kafka_config_op *ops;
  size_t n;
  int flags;
} alter_arg;

/* tarn_catalog_props_edit: the ops on the record's properties, from scratch
 * at each call (a retry after a conflict starts from the record read again). */
static int alter_edit(void *arg, tarn_catalog_record *r) {
  const alter_arg *a = arg;
  const char *topic = prop(r, TARN_KAFKA_PROP_TOPIC_NAME);
  const char *cls = prop(r, TARN_PROP_STORAGE_CLASS);
  cfgset s = {calloc(r->n_props + a->n + 1, sizeof *s.v), 0, r->n_props + a->n};
  int rc = s.v ? 0 : tarn__err(TARN_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < r->n_props; i++) {
    const char *k = r->props[i].key;
    /* REPLACE (AlterConfigs): Kafka's configs go, save the storage class;
     * the binding's and tarn's own properties stay */
    if ((a->flags & TARN_KAFKA_ALTER_REPLACE) && tarn_kafka_config_find(k) &&
        strcmp(k, TARN_PROP_STORAGE_CLASS) != 0)
      continue;
    rc = cfgset_put(&s, k, r->props[i].value);
  }
  for (size_t i = 0; !rc && i < a->n; i++)
    rc = alter_one(&s, &a->ops[i], cls);
  if (!rc && s.n > TARN_STREAM_PROPS_MAX)
    rc = tarn__err(TARN_EINVAL, "more than %d configs", TARN_STREAM_PROPS_MAX - 3);
  if (rc) {
    cfgset_free(&s);
    return tarn__errctx(rc, "topic %s", topic ? topic : r->name);
  }
  qsort(s.v, s.n, sizeof *s.v, prop_cmp);
  for (size_t i = 0; i < r->n_props; i++)
    free(r->props[i].key), free(r->props[i].value);
  free(r->props);
  r->props = s.v, r->n_props = s.n;
  return 0;
}

int tarn_kafka_topic_alter_configs(tarn_catalog *c, const char *name,
                                   const tarn_kafka_config_op *ops, size_t n_ops, int flags,
                                   tarn_kafka_topic *out) {
  if (out)
    memset(out, 0, sizeof *out);
  alter_arg a = {ops, n_ops, flags};
  tarn_catalog_record *v;
  size_t n;
  int rc = incarnations(c, name, &v, &n);
  if (rc)
    return rc;
  size_t live = n;
  for (size_t i = 0; i < n; i++)
    if (v[i].state == TARN_STREAM_ACTIVE)
      live = i;
  tarn_catalog_record s;
  memset(&s, 0, sizeof s);
  if (live == n)
    rc = tarn__err(TARN_ENOTFOUND, "topic %s not found; list topics with 'tarn topic list'", name);
  else if (flags & TARN_KAFKA_ALTER_VALIDATE_ONLY)
    rc = alter_edit(&a, &v[live]); /* the checks an alter makes, on the record as read */
  else
    rc = tarn_catalog_edit_props(c, v[live].ns, v[live].name, alter_edit, &a, &s);
  if (!rc && out)
    rc = tarn_kafka_topic_from_stream(s.kind ? &s : &v[live], out);
  tarn_catalog_record_free(&s);
  tarn_catalog_records_free(v, n);
  return rc;
}

int tarn_kafka_log_is_topic(tarn_meta *m, uint64_t log_id) {
  tarn_catalog *c;
  int rc = tarn_catalog_open(m, NULL, &c);
  if (rc)
    return rc;
  tarn_catalog_record lr;
  rc = tarn_catalog_log_stream(c, log_id, &lr);
  if (rc == TARN_ENOTFOUND) {
    tarn_catalog_close(c);
    return 0; /* a log of no stream: no binding applies */
  }
  if (rc == 0) {
    tarn_catalog_record s;
    rc = tarn_catalog_open_stream(c, lr.ns, lr.name, &s);
    if (rc == 0) {
      rc = tarn_kafka_stream_is_kafka(&s);
      tarn_catalog_record_free(&s);
    } else if (rc == TARN_ENOTFOUND) {
      rc = 0;
    }
    tarn_catalog_record_free(&lr);
  }
  tarn_catalog_close(c);
  return rc < 0 ? tarn__errctx(rc, "log %llu: is it a Kafka topic's?", (unsigned long long)log_id)
                : rc;
}
