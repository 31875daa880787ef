/* Issue 31: one rule for "is this a Kafka stream" (tarn_kafka_stream_is_kafka),
 * used by the writer's batch check and the compactor. A stream whose
 * compaction serde property names the Kafka type but that has no topic name
 * used to take any bytes (the writer asked for the topic name only) while
 * the compactor wrote its files Kafka-typed: Kafka-typed files holding
 * non-Kafka data. Now such a stream is a Kafka stream for both. */
#include "testutil.h"
#include "tu_compact.h"

#include <string.h>

#include "tarn/catalog.h"
#include "tarn/compactor.h"
#include "tarn/kafka_topics.h"
#include "tarn/parquet.h"
#include "tarn/writer.h"

static void serde_property_makes_a_kafka_stream(void **state) {
  (void)state;
  static const char *const props[] = {TARN_PROP_COMPACTION_SERDE, TARN_PARQUET_KAFKA_SERDE, NULL};
  tu_cenv E;
  tu_cenv_open(&E, "krule", 0, 1, props);
  assert_int_equal(tarn_kafka_log_is_topic(E.m, E.log), 1);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 5;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  uint64_t off;
  /* LS-095: not a record batch, refused before anything is queued */
  assert_int_not_equal(tarn_writer_append_sync(w, E.log, "not a batch", 11, 1, &off, NULL), 0);
  assert_int_equal(tarn_writer_close(w), 0);
  /* record batches are taken (tu_append writes them on a Kafka stream) */
  tu_append(&E, E.log, 0, 3, 3);
  /* the compactor's rule is the same function */
  tarn_catalog *cat;
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_open(E.m, NULL, &cat), 0);
  assert_int_equal(tarn_catalog_open_stream(cat, "ns", "s1", &s), 0);
  assert_int_equal(tarn_kafka_stream_is_kafka(&s), 1);
  assert_int_equal(tarn_kafka_stream_is_topic(&s), 0); /* a Kafka stream, not a topic */
  tarn_catalog_record_free(&s);
  tarn_catalog_close(cat);
  tu_cenv_close(&E);
}

static void plain_stream_is_not(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "krule2", 0, 1, NULL);
  assert_int_equal(tarn_kafka_log_is_topic(E.m, E.log), 0);
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, NULL, &w), 0);
  uint64_t off;
  assert_int_equal(tarn_writer_append_sync(w, E.log, "any bytes", 9, 1, &off, NULL), 0);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_cenv_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(serde_property_makes_a_kafka_stream),
      cmocka_unit_test(plain_stream_is_not),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
