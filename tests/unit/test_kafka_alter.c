/* Altering a Kafka topic's configs (issue 37, "Configs";
 * tarn_kafka_topic_alter_configs over tarn_catalog_edit_props): SET, DELETE
 * back to the default, APPEND/SUBTRACT on LIST configs, AlterConfigs'
 * replace, validate-only, refusals with Kafka's messages, and two alters at
 * once on one topic through two store handles losing nothing (the
 * CompareAndSet of the stream record; planted bug props-blind-put); two
 * CreatePartitions to one total at once adding once. Against mem:, sqlite:
 * and etcd:. */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/kafka_topics.h"
#include "tarn/meta.h"
#include "tu_log.h"

typedef tu_catalog_fx fx;

static fx open_fx(void **state) { return tu_catalog_fx_open((const char *)*state, 2000); }

static const char *config_of(const tarn_kafka_topic *t, const char *k) {
  for (size_t i = 0; i < t->n_configs; i++)
    if (strcmp(t->configs[i].key, k) == 0)
      return t->configs[i].value;
  return NULL;
}

#define OP(n, v, o)                                                                                \
  (tarn_kafka_config_op) { n, v, TARN_KAFKA_ALTER_##o }

static void set_delete_append_replace(void **state) {
  fx f = open_fx(state);
  tarn_stream_prop cfg[] = {
      {"class", "express"}, {"max.message.bytes", "2000"}, {"retention.ms", "1000"}};
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 2, cfg, 3, NULL), 0);
  /* SET and DELETE: a deleted config is gone from the set (its default) */
  tarn_kafka_config_op a[] = {OP("max.message.bytes", "3000", SET),
                              OP("retention.ms", NULL, DELETE), OP("segment.ms", "5", SET)};
  assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "t", a, 3, 0, &t), 0);
  assert_int_equal(t.max_message_bytes, 3000);
  assert_null(config_of(&t, "retention.ms"));
  assert_string_equal(config_of(&t, "segment.ms"), "5");
  tarn_kafka_topic_free(&t);
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "t", &t), 0);
  assert_int_equal(t.max_message_bytes, 3000);
  assert_null(config_of(&t, "retention.ms"));
  assert_string_equal(t.storage_class, "express");
  tarn_kafka_topic_free(&t);
  /* DELETE of what is not set, and back to max.message.bytes' default */
  tarn_kafka_config_op b[] = {OP("max.message.bytes", NULL, DELETE),
                              OP("retention.bytes", NULL, DELETE)};
  assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "t", b, 2, 0, &t), 0);
  assert_int_equal(t.max_message_bytes, TARN_KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  assert_null(config_of(&t, "max.message.bytes"));
  tarn_kafka_topic_free(&t);
  /* APPEND / SUBTRACT on a LIST (from its default "delete"), as Kafka */
  tarn_kafka_config_op c[] = {OP("cleanup.policy", "compact", APPEND)};
  assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "t", c, 1, 0, &t), 0);
  assert_string_equal(config_of(&t, "cleanup.policy"), "delete,compact");
  tarn_kafka_topic_free(&t);
  tarn_kafka_config_op d[] = {OP("cleanup.policy", "compact", APPEND),
                              OP("cleanup.policy", "delete", SUBTRACT)};
  assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "t", d, 2, 0, &t), 0);
  assert_string_equal(config_of(&t, "cleanup.policy"), "compact");
  tarn_kafka_topic_free(&t);
  /* validate-only: checked, nothing written */
  tarn_kafka_config_op e[] = {OP("retention.ms", "77", SET)};
  assert_int_equal(
      tarn_kafka_topic_alter_configs(f.c, "t", e, 1, TARN_KAFKA_ALTER_VALIDATE_ONLY, NULL), 0);
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "t", &t), 0);
  assert_null(config_of(&t, "retention.ms"));
  tarn_kafka_topic_free(&t);
  /* REPLACE (AlterConfigs): the rest back to defaults, the storage class and
   * the binding's properties kept */
  assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "t", e, 1, TARN_KAFKA_ALTER_REPLACE, &t), 0);
  assert_string_equal(config_of(&t, "retention.ms"), "77");
  assert_null(config_of(&t, "segment.ms"));
  assert_null(config_of(&t, "cleanup.policy"));
  assert_string_equal(t.storage_class, "express");
  assert_int_equal(t.n_configs, 2);
  assert_int_equal(t.partitions, 2);
  char id[sizeof t.id];
  snprintf(id, sizeof id, "%s", t.id);
  tarn_kafka_topic_free(&t);
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "t", &t), 0);
  assert_string_equal(t.id, id);
  tarn_kafka_topic_free(&t);
  tu_catalog_fx_close(&f);
}

static void bad_alters_change_nothing(void **state) {
  fx f = open_fx(state);
  tarn_stream_prop cfg[] = {{"class", "express"}, {"retention.ms", "1000"}};
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, cfg, 2, NULL), 0);
  struct {
    tarn_kafka_config_op op;
    const char *msg;
  } bad[] = {
      {OP("retention.ms", "banana", SET),
       "topic t: Invalid value banana for configuration retention.ms: Not a number of type LONG"},
      {OP("retention.msx", "1", SET), "topic t: Unknown topic config name: retention.msx"},
      {OP("retention.msx", NULL, DELETE), "topic t: Unknown topic config name: retention.msx"},
      {OP("max.message.bytes", "0", SET), NULL},
      {OP("tarn.kafka.batch.ms", "60001", SET), NULL},
      {OP("retention.ms", "5", APPEND),
       "topic t: Config value append is not allowed for config key: retention.ms"},
      {OP("retention.ms", "5", SUBTRACT),
       "topic t: Config value subtract is not allowed for config key: retention.ms"},
      {OP("cleanup.policy", "banana", APPEND), NULL},
      {OP("class", "standard", SET), NULL},
      {OP("class", NULL, DELETE), NULL},
      {OP("lakestream.kafka.topic.name", NULL, DELETE), NULL},
      {OP("lakestream.kafka.topic.name", "x", SET), NULL},
      {{"retention.ms", "1", 9}, NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    /* a good op first: it is not written either */
    tarn_kafka_config_op ops[] = {OP("segment.ms", "5", SET), bad[i].op};
    assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "t", ops, 2, 0, NULL), TARN_EINVAL);
    if (bad[i].msg)
      assert_string_equal(tarn_errmsg(), bad[i].msg);
    assert_int_equal(
        tarn_kafka_topic_alter_configs(f.c, "t", ops, 2, TARN_KAFKA_ALTER_VALIDATE_ONLY, NULL),
        TARN_EINVAL);
  }
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "t", &t), 0);
  assert_null(config_of(&t, "segment.ms"));
  assert_string_equal(config_of(&t, "retention.ms"), "1000");
  assert_string_equal(t.storage_class, "express");
  assert_int_equal(t.n_configs, 2);
  tarn_kafka_topic_free(&t);
  /* the class given again unchanged is no change (an AlterConfigs that
   * sends back what DescribeConfigs listed) */
  tarn_kafka_config_op same[] = {OP("class", "express", SET)};
  assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "t", same, 1, TARN_KAFKA_ALTER_REPLACE, &t),
                   0);
  assert_string_equal(t.storage_class, "express");
  assert_null(config_of(&t, "retention.ms"));
  tarn_kafka_topic_free(&t);
  tarn_kafka_config_op ok[] = {OP("retention.ms", "5", SET)};
  assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "nope", ok, 1, 0, NULL), TARN_ENOTFOUND);
  assert_int_equal(tarn_kafka_topic_delete(f.c, "t"), 0);
  assert_int_equal(tarn_kafka_topic_alter_configs(f.c, "t", ok, 1, 0, NULL), TARN_ENOTFOUND);
  tu_catalog_fx_close(&f);
}

typedef struct alter_thread_arg {
  const char *uri;
  int who;
  int rc;
} alter_thread_arg;

#define PER_THREAD 20

/* APPENDs PER_THREAD elements of its own to one LIST config, each its own
 * alter, through its own store handle. */
static void *alter_thread(void *p) {
  alter_thread_arg *a = p;
  tarn_meta *m;
  tarn_catalog *c;
  if ((a->rc = tarn_meta_open(a->uri, &m)))
    return NULL;
  if (!(a->rc = tarn_catalog_open(m, NULL, &c))) {
    for (int i = 0; !a->rc && i < PER_THREAD; i++) {
      char v[32];
      snprintf(v, sizeof v, "%d:%d", i, a->who);
      tarn_kafka_config_op op = OP("leader.replication.throttled.replicas", v, APPEND);
      a->rc = tarn_kafka_topic_alter_configs(c, "t", &op, 1, 0, NULL);
    }
    tarn_catalog_close(c);
  }
  tarn_meta_close(m);
  return NULL;
}

/* Two alters at once: each element appended by either is in the end (a
 * blind Put of an edit made from a stale read would drop the other's). */
static void concurrent_alters_lose_nothing(void **state) {
  fx f = open_fx(state);
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, NULL, 0, NULL), 0);
  pthread_t th[2];
  alter_thread_arg a[2] = {{f.uri, 1, 0}, {f.uri, 2, 0}};
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, alter_thread, &a[i]), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  assert_int_equal(a[0].rc, 0);
  assert_int_equal(a[1].rc, 0);
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "t", &t), 0);
  const char *l = config_of(&t, "leader.replication.throttled.replicas");
  assert_non_null(l);
  int n = 1;
  for (const char *p = l; *p; p++)
    n += *p == ',';
  if (n != 2 * PER_THREAD)
    fail_msg("%d elements of %d: %s", n, 2 * PER_THREAD, l);
  tarn_kafka_topic_free(&t);
  tu_catalog_fx_close(&f);
}

typedef struct grow_arg {
  const char *uri;
  const char *topic;
  pthread_barrier_t *go;
  int rc;
} grow_arg;

static void *grow_thread(void *p) {
  grow_arg *a = p;
  tarn_meta *m;
  tarn_catalog *c;
  a->rc = -1000;
  if (tarn_meta_open(a->uri, &m))
    return NULL;
  if (!tarn_catalog_open(m, NULL, &c)) {
    pthread_barrier_wait(a->go);
    a->rc = tarn_kafka_topic_add_partitions(c, a->topic, 4, NULL);
    tarn_catalog_close(c);
  }
  tarn_meta_close(m);
  return NULL;
}

/* CreatePartitions takes a total: two growing one topic from 2 to 4 at once
 * end with 4 partitions, one of them refused (TARN_EINVAL), never 6 (the
 * catalog's add by a count, retried on the conflict, added twice). */
static void concurrent_grows_add_once(void **state) {
  fx f = open_fx(state);
  for (int round = 0; round < 8; round++) {
    char topic[16];
    snprintf(topic, sizeof topic, "g%d", round);
    assert_int_equal(tarn_kafka_topic_create(f.c, topic, 2, NULL, 0, NULL), 0);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    pthread_t th[2];
    grow_arg a[2] = {{f.uri, topic, &go, 0}, {f.uri, topic, &go, 0}};
    for (int i = 0; i < 2; i++)
      assert_int_equal(pthread_create(&th[i], NULL, grow_thread, &a[i]), 0);
    for (int i = 0; i < 2; i++)
      pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    tarn_kafka_topic t;
    assert_int_equal(tarn_kafka_topic_lookup(f.c, topic, &t), 0);
    if (t.partitions != 4 || (a[0].rc == 0) == (a[1].rc == 0))
      fail_msg("round %d: %u partitions, the grows answered %d and %d", round, t.partitions,
               a[0].rc, a[1].rc);
    assert_int_equal(a[0].rc ? a[0].rc : a[1].rc, TARN_EINVAL);
    tarn_kafka_topic_free(&t);
  }
  tu_catalog_fx_close(&f);
}

#define ALL(fn)                                                                                    \
  cmocka_unit_test_prestate(fn, (void *)"mem"), cmocka_unit_test_prestate(fn, (void *)"sqlite"),   \
      cmocka_unit_test_prestate(fn, (void *)"etcd")

int main(void) {
  const struct CMUnitTest tests[] = {
      ALL(set_delete_append_replace),
      ALL(bad_alters_change_nothing),
      /* two handles on one store: not mem: (one handle's own store) */
      cmocka_unit_test_prestate(concurrent_alters_lose_nothing, (void *)"sqlite"),
      cmocka_unit_test_prestate(concurrent_alters_lose_nothing, (void *)"etcd"),
      cmocka_unit_test_prestate(concurrent_grows_add_once, (void *)"sqlite"),
      cmocka_unit_test_prestate(concurrent_grows_add_once, (void *)"etcd"),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
