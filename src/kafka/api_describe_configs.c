/* DescribeConfigs (key 32), versions 0-4 (issue 37, "Configs"): a topic's
 * configs from Kafka's table (tarn/kafka_configs.h) — the value the topic was
 * created with (source DYNAMIC_TOPIC_CONFIG) or the table's default (source
 * DEFAULT_CONFIG) — and a node's broker configs (source STATIC_BROKER_CONFIG:
 * its command line). A topic's configs are not read-only (AlterConfigs,
 * IncrementalAlterConfigs; its storage class is), a broker's are, and the
 * documentation (v3+) says what tarn does with each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/error.h"
#include "tarn/kafka_configs.h"
#include "tarn/kafka_topics.h"

enum { RES_TOPIC = 2, RES_BROKER = 4 };                         /* ConfigResource.Type */
enum { SRC_TOPIC = 1, SRC_STATIC_BROKER = 4, SRC_DEFAULT = 5 }; /* ConfigSource */

typedef tarn__k_describe_configs_resource_result entry;

static int kstr_is(tarn__kstr k, const char *s) {
  return k.len >= 0 && (size_t)k.len == strlen(s) && memcmp(k.p, s, (size_t)k.len) == 0;
}

/* Asked for: no key list (null or empty) asks for every config. */
static int wanted(const tarn__k_describe_configs_resource *res, const char *name) {
  if (res->configuration_keys.n <= 0)
    return 1;
  for (int32_t i = 0; i < res->configuration_keys.n; i++)
    if (kstr_is(res->configuration_keys.v[i], name))
      return 1;
  return 0;
}

/* Kafka's DescribeConfigsResponse.ConfigType of a table type. */
static int8_t config_type(int t) {
  switch (t) {
  case TARN_KAFKA_CONFIG_BOOLEAN: return 1;
  case TARN_KAFKA_CONFIG_STRING: return 2;
  case TARN_KAFKA_CONFIG_INT: return 3;
  case TARN_KAFKA_CONFIG_LONG: return 5;
  case TARN_KAFKA_CONFIG_DOUBLE: return 6;
  case TARN_KAFKA_CONFIG_LIST: return 7;
  default: return 0;
  }
}

/* One config: its value and source, its synonyms (the topic's value, then
 * the default, as Kafka lists them) when asked for. */
static int fill(tarn__kreq *req, const tarn__k_describe_configs_req *b, entry *e, const char *name,
                const char *value, int source, const char *dflt, int type, const char *doc) {
  memset(e, 0, sizeof *e);
  e->name = tarn__kresp_str(req, name);
  e->value = tarn__kresp_str(req, value);
  /* a topic's configs are altered by AlterConfigs and IncrementalAlterConfigs
   * (api_alter_configs.c) but its storage class; a broker's are its flags */
  e->read_only = source == SRC_STATIC_BROKER || strcmp(name, TARN_PROP_STORAGE_CLASS) == 0;
  e->is_default = source == SRC_DEFAULT;
  e->config_source = (int8_t)source;
  e->config_type = config_type(type);
  e->documentation = b->include_documentation ? tarn__kresp_str(req, doc) : (tarn__kstr){NULL, -1};
  if (!e->name.p || (value && !e->value.p))
    return TARN_ENOMEM;
  if (!b->include_synonyms)
    return 0;
  int n = source == SRC_TOPIC && dflt ? 2 : 1;
  tarn__k_describe_configs_synonym *s = tarn__karena_alloc(req->arena, 2 * sizeof *s);
  if (!s)
    return TARN_ENOMEM;
  s[0] = (tarn__k_describe_configs_synonym){e->name, e->value, (int8_t)source};
  if (n == 2)
    s[1] = (tarn__k_describe_configs_synonym){e->name, tarn__kresp_str(req, dflt), SRC_DEFAULT};
  e->synonyms.n = n;
  e->synonyms.v = s;
  return 0;
}

static const char *topic_value(const tarn_kafka_topic *t, const char *name) {
  for (size_t i = 0; i < t->n_configs; i++)
    if (strcmp(t->configs[i].key, name) == 0)
      return t->configs[i].value;
  return NULL;
}

static int describe_topic(tarn__knode *node, tarn__kreq *req, const tarn__k_describe_configs_req *b,
                          const tarn__k_describe_configs_resource *res,
                          tarn__k_describe_configs_result *out) {
  /* the catalog, not the node's topic cache: the cache keeps the parsed
   * fields only, and a description is read rarely */
  tarn_kafka_topic t;
  char name[TARN_KAFKA_TOPIC_NAME_MAX + 1];
  size_t len = res->resource_name.len > 0 ? (size_t)res->resource_name.len : 0;
  int rc = TARN_ENOTFOUND;
  memset(&t, 0, sizeof t);
  if (len && len < sizeof name && !memchr(res->resource_name.p, 0, len)) {
    memcpy(name, res->resource_name.p, len);
    name[len] = 0;
    rc = tarn_kafka_topic_lookup(node->catalog, name, &t);
  }
  if (rc) {
    out->error_code =
        rc == TARN_ENOTFOUND ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION : tarn__kerr_of(rc);
    out->error_message = tarn__kresp_str(req, tarn_errmsg());
    return 0;
  }
  size_t n;
  const tarn_kafka_config_def *d = tarn_kafka_configs(&n);
  entry *v = tarn__karena_alloc(req->arena, n * sizeof *v);
  int32_t k = 0;
  for (size_t i = 0; v && !rc && i < n; i++) {
    if (!wanted(res, d[i].name))
      continue;
    const char *set = topic_value(&t, d[i].name);
    const char *dflt = *d[i].default_value ? d[i].default_value : NULL;
    rc = fill(req, b, &v[k++], d[i].name, set ? set : dflt, set ? SRC_TOPIC : SRC_DEFAULT, dflt,
              d[i].type, d[i].note);
  }
  tarn_kafka_topic_free(&t);
  if (!v || rc)
    return TARN_ENOMEM;
  out->configs.n = k;
  out->configs.v = v;
  return 0;
}

static int describe_broker(tarn__knode *node, tarn__kreq *req,
                           const tarn__k_describe_configs_req *b,
                           const tarn__k_describe_configs_resource *res,
                           tarn__k_describe_configs_result *out) {
  char id[16], parts[16], maxb[16], offret[24];
  snprintf(id, sizeof id, "%d", (int)node->cfg.node_id);
  snprintf(parts, sizeof parts, "%d", (int)node->cfg.auto_create_partitions);
  snprintf(maxb, sizeof maxb, "%d", TARN_KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  snprintf(offret, sizeof offret, "%lld", (long long)(node->cfg.offsets_retention_ms / 60000));
  const struct {
    const char *name, *value;
    int type;
    const char *doc;
  } c[] = {
      {"auto.create.topics.enable", node->cfg.auto_create_topics ? "true" : "false",
       TARN_KAFKA_CONFIG_BOOLEAN, "tarn serve --kafka-auto-create-topics"},
      {"broker.id", id, TARN_KAFKA_CONFIG_INT, "tarn serve --kafka-node-id"},
      {"default.replication.factor", "1", TARN_KAFKA_CONFIG_INT,
       "the object store replicates: one copy as Kafka sees it"},
      {"message.max.bytes", maxb, TARN_KAFKA_CONFIG_INT,
       "the default of a topic's max.message.bytes"},
      {"min.insync.replicas", "1", TARN_KAFKA_CONFIG_INT, "the object store replicates"},
      {"num.partitions", parts, TARN_KAFKA_CONFIG_INT,
       "the partitions of a topic Metadata creates"},
      {"offsets.retention.minutes", offret, TARN_KAFKA_CONFIG_INT,
       "tarn serve --kafka-offsets-retention-minutes (issue 37)"},
  };
  size_t n = sizeof c / sizeof *c;
  entry *v = tarn__karena_alloc(req->arena, n * sizeof *v);
  if (!v)
    return TARN_ENOMEM;
  int32_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (wanted(res, c[i].name) &&
        fill(req, b, &v[k++], c[i].name, c[i].value, SRC_STATIC_BROKER, NULL, c[i].type, c[i].doc))
      return TARN_ENOMEM;
  out->configs.n = k;
  out->configs.v = v;
  return 0;
}

void tarn__kapi_describe_configs(tarn__knode *node, tarn__kreq *req) {
  tarn__k_describe_configs_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_describe_configs_resp r;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_CONFIGS, 1, &r);
  int32_t n;
  tarn__k_describe_configs_result *o = tarn__kresp_entries(req, b.resources.n, sizeof *o, &n);
  int rc = o ? 0 : TARN_ENOMEM;
  for (int32_t i = 0; !rc && i < n; i++) {
    const tarn__k_describe_configs_resource *res = &b.resources.v[i];
    memset(&o[i], 0, sizeof o[i]);
    o[i].resource_type = res->resource_type;
    o[i].resource_name = res->resource_name;
    o[i].error_message = (tarn__kstr){NULL, -1};
    if (res->resource_type == RES_TOPIC)
      rc = describe_topic(node, req, &b, res, &o[i]);
    else if (res->resource_type == RES_BROKER)
      rc = describe_broker(node, req, &b, res, &o[i]);
    else {
      o[i].error_code = TARN__KERR_INVALID_REQUEST;
      o[i].error_message = tarn__kresp_str(req, "tarn describes topic (2) and broker (4) configs");
    }
  }
  if (rc) {
    tarn__kreq_close(req);
    return;
  }
  r.results.n = n;
  r.results.v = o;
  tarn__kreq_respond(req, &r);
}
