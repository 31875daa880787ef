/* Kafka topics on the catalog (spec Appendix A, "Stream identity"): topic IDs
 * in Kafka's string form, topic names, the stream of each incarnation, and
 * create / lookup / list / delete / add partitions, against mem:, sqlite:
 * and etcd:. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/kafka_topics.h"
#include "tu_log.h"
#include "util/base64.h"

/* Kafka's own values: Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID = new Uuid(0, 1). */
static void topic_id_string_form(void **state) {
  (void)state;
  uint8_t u[16] = {0}, back[16];
  char s[23];
  tarn_kafka_topic_id_string(u, s);
  assert_string_equal(s, "AAAAAAAAAAAAAAAAAAAAAA");
  u[15] = 1;
  tarn_kafka_topic_id_string(u, s);
  assert_string_equal(s, "AAAAAAAAAAAAAAAAAAAAAQ");
  /* against OpenSSL's standard Base64 with Kafka's URL-safe substitutions */
  for (int round = 0; round < 200; round++) {
    for (int i = 0; i < 16; i++)
      u[i] = (uint8_t)(rand() & 0xff);
    tarn_kafka_topic_id_string(u, s);
    tarn_buf b = TARN_BUF_INIT;
    assert_int_equal(tarn__b64_encode(u, 16, &b), 0);
    assert_int_equal(b.len, 24);
    assert_memory_equal(b.data + 22, "==", 2);
    for (size_t i = 0; i < 22; i++)
      b.data[i] = b.data[i] == '+' ? '-' : b.data[i] == '/' ? '_' : b.data[i];
    assert_memory_equal(s, b.data, 22);
    assert_int_equal(s[22], 0);
    tarn_buf_free(&b);
    assert_int_equal(tarn_kafka_topic_id_parse(s, back), 0);
    assert_memory_equal(u, back, 16);
  }
  assert_int_equal(tarn_kafka_topic_id_parse("AAAAAAAAAAAAAAAAAAAAAB", back), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_id_parse("AAAAAAAAAAAAAAAAAAAAA", back), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_id_parse("AAAAAAAAAAAAAAAAAAAA+A", back), TARN_EINVAL);
  /* fresh IDs: never the zero UUID, never a leading '-' */
  for (int i = 0; i < 2000; i++) {
    assert_int_equal(tarn_kafka_topic_id_new(u, s), 0);
    assert_true(s[0] != '-');
    assert_int_equal(strlen(s), 22);
  }
}

static void topic_names(void **state) {
  (void)state;
  assert_int_equal(tarn_kafka_topic_name_check("orders"), 0);
  assert_int_equal(tarn_kafka_topic_name_check("a.b_c-D9"), 0);
  assert_int_equal(tarn_kafka_topic_name_check("..."), 0);
  assert_int_equal(tarn_kafka_topic_name_check(""), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_name_check("."), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_name_check(".."), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_name_check("a/b"), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_name_check("a b"), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_name_check("caf\xc3\xa9"), TARN_EINVAL);
  assert_non_null(strstr(tarn_errmsg(), "[a-zA-Z0-9._-]"));
  char longest[TARN_KAFKA_TOPIC_NAME_MAX + 2];
  memset(longest, 'x', sizeof longest);
  longest[TARN_KAFKA_TOPIC_NAME_MAX] = 0;
  assert_int_equal(tarn_kafka_topic_name_check(longest), 0);
  char id[23], stream[TARN_STREAM_NAME_MAX + 1];
  uint8_t u[16];
  assert_int_equal(tarn_kafka_topic_id_new(u, id), 0);
  assert_int_equal(tarn_kafka_stream_name(longest, id, stream, sizeof stream), 0);
  assert_int_equal(strlen(stream), TARN_STREAM_NAME_MAX);
  assert_int_equal(tarn_stream_ident_check("default", stream), 0);
  longest[TARN_KAFKA_TOPIC_NAME_MAX] = 'x', longest[TARN_KAFKA_TOPIC_NAME_MAX + 1] = 0;
  assert_int_equal(tarn_kafka_topic_name_check(longest), TARN_EINVAL);
}

typedef tu_catalog_fx fx;

static fx open_fx(void **state) { return tu_catalog_fx_open((const char *)*state, 2000); }

static void close_fx(fx *f) { tu_catalog_fx_close(f); }

static const char *prop_of(const tarn_catalog_record *s, const char *k) {
  for (size_t i = 0; i < s->n_props; i++)
    if (strcmp(s->props[i].key, k) == 0)
      return s->props[i].value;
  return NULL;
}

static void topic_is_one_stream_per_incarnation(void **state) {
  fx f = open_fx(state);
  tarn_stream_prop cfg[] = {
      {"max.message.bytes", "2000"}, {"tarn.kafka.batch.ms", "5"}, {"retention.ms", "-1"}};
  tarn_kafka_topic t, t2;
  assert_int_equal(tarn_kafka_topic_create(f.c, "orders", 3, cfg, 3, &t), 0);
  assert_string_equal(t.name, "orders");
  assert_string_equal(t.ns, "default");
  char want[TARN_STREAM_NAME_MAX + 1];
  snprintf(want, sizeof want, "orders-topic-id-%s", t.id);
  assert_string_equal(t.stream, want);
  assert_int_equal(t.partitions, 3);
  assert_int_equal(t.max_message_bytes, 2000);
  assert_int_equal(t.batch_ms, 5);
  assert_int_equal(t.n_configs, 3);
  uint64_t l2;
  assert_int_equal(tarn_kafka_topic_log(&t, 2, &l2), 0);
  assert_int_equal(l2, t.logs[2]);
  assert_int_equal(tarn_kafka_topic_log(&t, 3, &l2), TARN_ENOTFOUND);

  /* the stream record: namespace default, {topic}-topic-id-{id}, both names */
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_open_stream(f.c, "default", want, &s), 0);
  assert_string_equal(prop_of(&s, "lakestream.source.logical.name"), "orders");
  assert_string_equal(prop_of(&s, "lakestream.kafka.topic.name"), "orders");
  assert_string_equal(prop_of(&s, "lakestream.kafka.topic.id"), t.id);
  assert_string_equal(prop_of(&s, "max.message.bytes"), "2000");
  /* partition p is the log at position p */
  for (uint32_t p = 0; p < 3; p++)
    assert_int_equal(s.logs[p], t.logs[p]);
  tarn_catalog_record_free(&s);
  for (uint32_t p = 0; p < 3; p++)
    assert_int_equal(tarn_kafka_log_is_topic(f.m, t.logs[p]), 1);

  assert_int_equal(tarn_kafka_topic_lookup(f.c, "orders", &t2), 0);
  assert_string_equal(t2.id, t.id);
  assert_int_equal(t2.partitions, 3);
  tarn_kafka_topic_free(&t2);
  assert_int_equal(tarn_kafka_topic_create(f.c, "orders", 1, NULL, 0, NULL), TARN_EEXIST);
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "ordersx", NULL), TARN_ENOTFOUND);

  /* delete, then create again: a new stream with a new ID */
  assert_int_equal(tarn_kafka_topic_delete(f.c, "orders"), 0);
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "orders", NULL), TARN_ENOTFOUND);
  assert_int_equal(tarn_kafka_topic_delete(f.c, "orders"), TARN_ENOTFOUND);
  assert_int_equal(tarn_catalog_is_dropped(f.c, "default", want), 1);
  assert_int_equal(tarn_kafka_topic_create(f.c, "orders", 1, NULL, 0, &t2), 0);
  assert_string_not_equal(t2.id, t.id);
  assert_string_not_equal(t2.stream, t.stream);
  assert_true(t2.logs[0] > t.logs[2]);
  assert_int_equal(t2.max_message_bytes, TARN_KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  assert_int_equal(t2.batch_ms, 0);
  tarn_kafka_topic_free(&t2);
  tarn_kafka_topic_free(&t);
  close_fx(&f);
}

static void list_add_partitions_and_lookalikes(void **state) {
  fx f = open_fx(state);
  assert_int_equal(tarn_kafka_topic_create(f.c, "b", 1, NULL, 0, NULL), 0);
  assert_int_equal(tarn_kafka_topic_create(f.c, "a", 2, NULL, 0, NULL), 0);
  /* a topic whose name starts with another's stream prefix */
  assert_int_equal(tarn_kafka_topic_create(f.c, "a-topic-id-x", 1, NULL, 0, NULL), 0);
  /* a plain stream in default is no topic; one with only the look of a
   * topic's name is none either */
  assert_int_equal(tarn_catalog_create_stream(f.c, "default", "plain", 1, NULL, 0, NULL), 0);
  assert_int_equal(tarn_catalog_create_stream(f.c, "default", "a-topic-id-AAAAAAAAAAAAAAAAAAAAAA",
                                              1, NULL, 0, NULL),
                   0);
  tarn_kafka_topic *v;
  size_t n;
  assert_int_equal(tarn_kafka_topic_list(f.c, &v, &n), 0);
  assert_int_equal(n, 3);
  assert_string_equal(v[0].name, "a");
  assert_string_equal(v[1].name, "a-topic-id-x");
  assert_string_equal(v[2].name, "b");
  assert_int_equal(v[0].partitions, 2);
  tarn_kafka_topics_free(v, n);
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "a", &t), 0);
  assert_int_equal(t.partitions, 2);
  tarn_kafka_topic_free(&t);

  assert_int_equal(tarn_kafka_topic_add_partitions(f.c, "a", 2, NULL), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_add_partitions(f.c, "a", 5, &t), 0);
  assert_int_equal(t.partitions, 5);
  for (uint32_t p = 0; p < 5; p++)
    assert_int_equal(tarn_kafka_log_is_topic(f.m, t.logs[p]), 1);
  tarn_kafka_topic_free(&t);
  assert_int_equal(tarn_kafka_topic_add_partitions(f.c, "zz", 5, NULL), TARN_ENOTFOUND);

  /* deleting "a" leaves "a-topic-id-x" */
  assert_int_equal(tarn_kafka_topic_delete(f.c, "a"), 0);
  assert_int_equal(tarn_kafka_topic_lookup(f.c, "a-topic-id-x", NULL), 0);
  assert_int_equal(tarn_kafka_topic_list(f.c, &v, &n), 0);
  assert_int_equal(n, 2);
  tarn_kafka_topics_free(v, n);

  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_open_stream(f.c, "default", "plain", &s), 0);
  assert_int_equal(tarn_kafka_log_is_topic(f.m, s.logs[0]), 0);
  assert_int_equal(tarn_kafka_log_is_topic(f.m, 999999), 0);
  tarn_catalog_record_free(&s);
  close_fx(&f);
}

static void bad_creates_are_refused(void **state) {
  fx f = open_fx(state);
  tarn_stream_prop bad1[] = {{"lakestream.kafka.topic.name", "x"}};
  tarn_stream_prop bad2[] = {{"max.message.bytes", "0"}};
  tarn_stream_prop bad3[] = {{"tarn.kafka.batch.ms", "60001"}};
  tarn_stream_prop bad4[] = {{"retention.ms", "1"}, {"retention.ms", "2"}};
  tarn_stream_prop bad5[] = {{"max.message.bytes", "12x"}};
  /* Kafka's table (tarn/kafka_configs.h, issue 37): a value of the wrong
   * type, an unknown name */
  tarn_stream_prop bad6[] = {{"retention.ms", "banana"}};
  tarn_stream_prop bad7[] = {{"retention.msx", "1"}};
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, bad1, 1, NULL), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, bad2, 1, NULL), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, bad3, 1, NULL), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, bad4, 2, NULL), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, bad5, 1, NULL), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, bad6, 1, NULL), TARN_EINVAL);
  assert_string_equal(tarn_errmsg(), "topic t: Invalid value banana for configuration "
                                     "retention.ms: Not a number of type LONG");
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 1, bad7, 1, NULL), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_create(f.c, "t t", 1, NULL, 0, NULL), TARN_EINVAL);
  assert_int_equal(tarn_kafka_topic_create(f.c, "t", 0, NULL, 0, NULL), TARN_EINVAL);
  tarn_catalog_record *v;
  size_t n;
  assert_int_equal(tarn_catalog_list_streams(f.c, &v, &n), 0);
  assert_int_equal(n, 0); /* nothing was created */
  tarn_catalog_records_free(v, n);
  close_fx(&f);
}

#define ALL(fn)                                                                                    \
  cmocka_unit_test_prestate(fn, (void *)"mem"), cmocka_unit_test_prestate(fn, (void *)"sqlite"),   \
      cmocka_unit_test_prestate(fn, (void *)"etcd")

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(topic_id_string_form),
      cmocka_unit_test(topic_names),
      ALL(topic_is_one_stream_per_incarnation),
      ALL(list_add_partitions_and_lookalikes),
      ALL(bad_creates_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
