/* AlterConfigs (key 33, versions 0-2) and IncrementalAlterConfigs (key 44,
 * versions 0-1) (issue 37, "Configs"): a topic's configs changed with
 * tarn_kafka_topic_alter_configs (one CompareAndSet of the topic's stream
 * record, retried on a conflict), every value checked against Kafka's table
 * (tarn/kafka_configs.h). AlterConfigs replaces the topic's whole set, as
 * Kafka's does; IncrementalAlterConfigs applies SET / DELETE / APPEND /
 * SUBTRACT. A node reads the new values within its topic cache's second; the
 * one that altered, at once. Broker configs are static (tarn serve's flags):
 * changing one is answered as Kafka answers a config it cannot update
 * dynamically, INVALID_REQUEST "Cannot update these configs dynamically".
 * docs/kafka.md, "Altering configs". */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"

#define INVALID_CONFIG 40
enum { RES_TOPIC = 2, RES_BROKER = 4 }; /* ConfigResource.Type */

/* One resource's configs as the two requests give them: n config structs
 * of size bytes at configs, the name, value and operation at those offsets
 * (op -1: AlterConfigs, a replace of SETs). */
typedef struct alter_in {
  int8_t type;
  tarn__kstr name;
  int32_t n;
  const void *configs;
  size_t size, name_at, value_at;
  long op_at;
  int validate_only;
} alter_in;

#define FIELD(in, i, at)                                                                           \
  ((const void *)((const char *)(in)->configs + (size_t)(i) * (in)->size + (at)))

/* A NUL-terminated copy in the arena (NULL for a null string or one holding NUL). */
static char *arena_cstr(tarn__kreq *req, tarn__kstr s) {
  if (s.len < 0)
    return NULL;
  char *p = tarn__karena_alloc(req->arena, (size_t)s.len + 1);
  if (p) {
    memcpy(p, s.p, (size_t)s.len);
    p[s.len] = 0;
  }
  return p && strlen(p) == (size_t)s.len ? p : NULL;
}

/* "Cannot update these configs dynamically: a,b" (Kafka's words for a broker
 * config that is not dynamic: tarn's are all static). */
static tarn__kstr broker_refusal(tarn__kreq *req, const alter_in *in) {
  char msg[512] = "Cannot update these configs dynamically: ";
  for (int32_t i = 0; i < in->n; i++) {
    const tarn__kstr *k = FIELD(in, i, in->name_at);
    size_t have = strlen(msg);
    snprintf(msg + have, sizeof msg - have, "%s%.*s", i ? "," : "", k->len > 0 ? (int)k->len : 0,
             k->len > 0 ? k->p : "");
  }
  return tarn__kresp_str(req, msg);
}

/* The outcome for one resource: its type and name, *err and *msg (arena). */
static void alter_one(tarn__knode *node, tarn__kreq *req, const alter_in *in, int8_t *type,
                      tarn__kstr *name, int16_t *err, tarn__kstr *msg) {
  *type = in->type, *name = in->name;
  *err = 0;
  *msg = (tarn__kstr){NULL, -1};
  if (in->type == RES_BROKER) {
    if (in->n > 0) /* no change asked: nothing refused */
      *err = TARN__KERR_INVALID_REQUEST, *msg = broker_refusal(req, in);
    return;
  }
  if (in->type != RES_TOPIC) {
    *err = TARN__KERR_INVALID_REQUEST;
    *msg = tarn__kresp_str(req, "tarn alters topic (2) configs; broker (4) configs are static");
    return;
  }
  char *topic = arena_cstr(req, in->name);
  if (!topic || tarn_kafka_topic_name_check(topic)) {
    *err = TARN__KERR_INVALID_TOPIC_EXCEPTION;
    *msg = tarn__kresp_str(req, topic ? tarn_errmsg() : "the topic name is not a string");
    return;
  }
  int32_t n = in->n > 0 ? in->n : 0;
  tarn_kafka_config_op *ops = tarn__karena_alloc(req->arena, (n ? (size_t)n : 1) * sizeof *ops);
  const char *bad = ops ? NULL : "out of memory";
  for (int32_t i = 0; !bad && i < n; i++) {
    ops[i].name = arena_cstr(req, *(const tarn__kstr *)FIELD(in, i, in->name_at));
    const tarn__kstr *v = FIELD(in, i, in->value_at);
    ops[i].value = v->len >= 0 ? arena_cstr(req, *v) : NULL;
    ops[i].op =
        in->op_at < 0 ? TARN_KAFKA_ALTER_SET : *(const int8_t *)FIELD(in, i, (size_t)in->op_at);
    /* the request's shape: Kafka answers INVALID_REQUEST for these */
    if (!ops[i].name || (v->len >= 0 && !ops[i].value))
      bad = "a config name or value is not a string";
    else if (in->op_at < 0 && !ops[i].value)
      bad = "Null value not supported for topic configs";
    else if (ops[i].op < TARN_KAFKA_ALTER_SET || ops[i].op > TARN_KAFKA_ALTER_SUBTRACT)
      bad = "Unknown config operation (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)";
    else if (ops[i].op != TARN_KAFKA_ALTER_DELETE && !ops[i].value)
      bad = "Null value not supported for SET, APPEND or SUBTRACT";
    for (int32_t j = 0; !bad && j < i; j++)
      if (strcmp(ops[i].name, ops[j].name) == 0)
        bad = "Error due to duplicate config keys";
  }
  if (bad) {
    *err = TARN__KERR_INVALID_REQUEST;
    *msg = tarn__kresp_str(req, bad);
    return;
  }
  int flags = (in->op_at >= 0 ? 0 : TARN_KAFKA_ALTER_REPLACE) |
              (in->validate_only ? TARN_KAFKA_ALTER_VALIDATE_ONLY : 0);
  int rc = tarn_kafka_topic_alter_configs(node->catalog, topic, ops, (size_t)n, flags, NULL);
  if (!in->validate_only)
    tarn__knode_topic_forget(node, topic, strlen(topic)); /* this node sees it at once */
  if (rc) {
    *err = rc == TARN_ENOTFOUND ? TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION
           : rc == TARN_EINVAL  ? INVALID_CONFIG
                                : tarn__kerr_of(rc);
    *msg = tarn__kresp_str(req, tarn_errmsg());
  }
}

void tarn__kapi_alter_configs(tarn__knode *node, tarn__kreq *req) {
  tarn__k_alter_configs_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_alter_configs_resp r;
  tarn__kmsg_init(TARN__KAPI_ALTER_CONFIGS, 1, &r);
  int32_t n;
  tarn__k_alter_configs_result *o = tarn__kresp_entries(req, b.resources.n, sizeof *o, &n);
  if (!o && b.resources.n > 0) {
    tarn__kreq_close(req);
    return;
  }
  typedef tarn__k_alter_configs_config cfg;
  for (int32_t i = 0; i < n; i++) {
    const tarn__k_alter_configs_resource *res = &b.resources.v[i];
    alter_in in = {res->resource_type, res->resource_name,  res->configs.n,       res->configs.v,
                   sizeof(cfg),        offsetof(cfg, name), offsetof(cfg, value), -1,
                   b.validate_only};
    alter_one(node, req, &in, &o[i].resource_type, &o[i].resource_name, &o[i].error_code,
              &o[i].error_message);
  }
  r.responses.n = n;
  r.responses.v = o;
  tarn__kreq_respond(req, &r);
}

void tarn__kapi_incremental_alter_configs(tarn__knode *node, tarn__kreq *req) {
  tarn__k_incremental_alter_configs_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_incremental_alter_configs_resp r;
  tarn__kmsg_init(TARN__KAPI_INCREMENTAL_ALTER_CONFIGS, 1, &r);
  int32_t n;
  tarn__k_incremental_alter_configs_result *o =
      tarn__kresp_entries(req, b.resources.n, sizeof *o, &n);
  if (!o && b.resources.n > 0) {
    tarn__kreq_close(req);
    return;
  }
  typedef tarn__k_incremental_alter_configs_config cfg;
  for (int32_t i = 0; i < n; i++) {
    const tarn__k_incremental_alter_configs_resource *res = &b.resources.v[i];
    alter_in in = {res->resource_type,   res->resource_name,
                   res->configs.n,       res->configs.v,
                   sizeof(cfg),          offsetof(cfg, name),
                   offsetof(cfg, value), (long)offsetof(cfg, config_operation),
                   b.validate_only};
    alter_one(node, req, &in, &o[i].resource_type, &o[i].resource_name, &o[i].error_code,
              &o[i].error_message);
  }
  r.responses.n = n;
  r.responses.v = o;
  tarn__kreq_respond(req, &r);
}
