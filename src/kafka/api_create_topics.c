/* CreateTopics (key 19), versions 0-4, over the binding's topics
 * (tarn/kafka_topics.h): each topic a new stream of a new topic ID. The
 * replication factor is not tarn's to choose (the stores replicate): any
 * value is accepted. Manual assignments give only the partition count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"
#include "util/error.h"

#define INVALID_CONFIG 40

/* A NUL-terminated copy in the arena (NULL for a null or unterminable string). */
static char *cstr(tarn__kreq *req, tarn__kstr s) {
  if (s.len < 0)
    return NULL;
  char *p = tarn__karena_alloc(req->arena, (size_t)s.len + 1);
  if (!p)
    return NULL;
  memcpy(p, s.p, (size_t)s.len);
  p[s.len] = 0;
  return strlen(p) == (size_t)s.len ? p : NULL;
}

/* Kafka refuses __cluster_metadata with these words; tarn also its
 * internal topics, which it does not keep as topics (docs/kafka.md
 * "Reserved names"). */
static const char *reserved_message(const char *name, char *buf, size_t n) {
  snprintf(buf, n,
           "Creation of internal topic %s is prohibited: tarn keeps groups and transactions in "
           "its metadata store, not in topics",
           name);
  return buf;
}

void tarn__kapi_create_topics(tarn__knode *node, tarn__kreq *req) {
  tarn__k_create_topics_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_create_topics_resp r;
  tarn__kmsg_init(TARN__KAPI_CREATE_TOPICS, 1, &r);
  int32_t nt = b.topics.n > 0 ? b.topics.n : 0;
  tarn__k_create_topics_creatable_topic_result *o =
      tarn__karena_alloc(req->arena, (nt ? (size_t)nt : 1) * sizeof *o);
  if (!o) {
    tarn__kreq_close(req);
    return;
  }
  char msg[256];
  for (int32_t i = 0; i < nt; i++) {
    tarn__k_create_topics_creatable_topic *t = &b.topics.v[i];
    memset(&o[i], 0, sizeof o[i]);
    o[i].name = t->name;
    o[i].error_message = (tarn__kstr){NULL, -1};
    char *name = cstr(req, t->name);
    int32_t parts = t->num_partitions;
    if (t->assignments.n > 0) {
      if (parts != -1) {
        o[i].error_code = TARN__KERR_INVALID_REQUEST;
        o[i].error_message = tarn__kresp_str(req, "both num_partitions and assignments given");
        continue;
      }
      parts = t->assignments.n;
    }
    if (parts == -1)
      parts = node->cfg.auto_create_partitions; /* the broker's default (KIP-464) */
    if (!name || tarn_kafka_topic_name_check(name)) {
      o[i].error_code = TARN__KERR_INVALID_TOPIC_EXCEPTION;
      o[i].error_message =
          tarn__kresp_str(req, name ? tarn_errmsg() : "the topic name is not a string");
      continue;
    }
    if (tarn_kafka_topic_reserved(name, strlen(name))) { /* issue 37: docs/kafka.md */
      o[i].error_code = TARN__KERR_INVALID_REQUEST;      /* Kafka's for __cluster_metadata */
      o[i].error_message = tarn__kresp_str(req, reserved_message(name, msg, sizeof msg));
      continue;
    }
    if (parts < 1 || parts > 65536) {
      o[i].error_code = TARN__KERR_INVALID_PARTITIONS;
      o[i].error_message = tarn__kresp_str(req, "the partition count is 1..65536");
      continue;
    }
    int32_t nc = t->configs.n > 0 ? t->configs.n : 0;
    tarn_stream_prop *props = tarn__karena_alloc(req->arena, (nc ? (size_t)nc : 1) * sizeof *props);
    int bad = !props;
    for (int32_t j = 0; !bad && j < nc; j++) {
      props[j].key = cstr(req, t->configs.v[j].name);
      props[j].value = cstr(req, t->configs.v[j].value);
      bad = !props[j].key || !props[j].value;
    }
    if (bad) {
      o[i].error_code = INVALID_CONFIG;
      o[i].error_message = tarn__kresp_str(req, "a config without a name or a value");
      continue;
    }
    int rc;
    if (req->api_version >= 1 && b.validate_only) {
      /* the checks a create makes before it writes: the configs (Kafka's
       * table), the name and whether it is taken */
      rc = 0;
      for (int32_t j = 0; !rc && j < nc; j++)
        rc = tarn_kafka_config_check(props[j].key, props[j].value);
      tarn_kafka_topic seen;
      if (!rc) {
        rc = tarn__knode_topic(node, name, strlen(name), &seen);
        tarn_kafka_topic_free(&seen);
        rc = rc == 0                ? tarn__err(TARN_EEXIST, "topic %s already exists", name)
             : rc == TARN_ENOTFOUND ? 0
                                    : rc;
      }
    } else {
      rc = tarn_kafka_topic_create(node->catalog, name, (uint32_t)parts, props, (size_t)nc, NULL);
      tarn__knode_topic_forget(node, name, strlen(name));
    }
    o[i].error_code = rc == 0             ? 0
                      : rc == TARN_EEXIST ? TARN__KERR_TOPIC_ALREADY_EXISTS
                      : rc == TARN_EINVAL ? INVALID_CONFIG
                                          : tarn__kerr_of(rc);
    if (rc)
      o[i].error_message = tarn__kresp_str(req, tarn_errmsg());
  }
  r.topics.n = nt;
  r.topics.v = o;
  tarn__kreq_respond(req, &r);
}
