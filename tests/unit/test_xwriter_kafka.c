/* An express Kafka topic (issue 14): the express writer's append path runs
 * the Kafka binding's batch check exactly as the standard writer's does
 * (src/log/writer.c). Before the check was added to tarn_xwriter_append, an
 * entry of plain bytes, or of batches whose record count disagrees with the
 * entry's, was acknowledged on a topic of class express (this test failed). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/express.h"
#include "tarn/kafka_topics.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tu_fixture.h"
#include "tu_kafka.h"

/* The fixture's deployment with express on 3 buckets, an express topic and
 * an express stream that is no topic. */
typedef struct xtopic {
  tu_fixture d;
  uint64_t topic_log; /* partition 0 of the express topic */
  uint64_t plain_log; /* a log of an express stream that is no topic */
} xtopic;

static void xtopic_open(xtopic *e, const char *name) {
  tu_fixture_open(&e->d, name);
  tu_fixture_express(&e->d, 3, 2, 8, 0, 0);
  tu_fixture_catalog(&e->d, 0);
  tarn_stream_prop cfg[] = {{TARN_PROP_STORAGE_CLASS, TARN_STREAM_CLASS_EXPRESS}};
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(e->d.cat, "fast", 1, cfg, 1, &t), 0);
  e->topic_log = t.logs[0];
  tarn_kafka_topic_free(&t);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(e->d.cat, "fast", "plain", 1, cfg, 1, &s), 0);
  e->plain_log = s.logs[0];
  tarn_catalog_record_free(&s);
}

static tarn_xwriter *open_w(xtopic *e) {
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = "star-k";
  o.reclaim_grace_ms = 0;
  tarn_xwriter *w;
  assert_int_equal(tarn_xwriter_open(e->d.m, e->d.wal, &o, &w), 0);
  return w;
}

/* LS-095 ... LS-098 on the express path: an entry that is not whole v2
 * batches, or whose batches hold another count of records than the entry
 * says, is refused at append (nothing queued, nothing acknowledged); record
 * batches are acknowledged and read back; a log of no topic takes any bytes. */
static void express_topic_runs_the_batch_check(void **state) {
  (void)state;
  xtopic e;
  xtopic_open(&e, "xk-check");
  tarn_xwriter *w = open_w(&e);
  uint64_t off = 99;
  /* LS-095: not record batches at all */
  assert_int_equal(tarn_xwriter_append_sync(w, e.topic_log, "plain bytes", 11, 1, &off, NULL),
                   TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "Kafka topic"));
  /* LS-095: three records in the batch, the entry says two */
  tarn_buf b;
  tarn_buf_init(&b);
  tu_kafka_v2_simple(&b, 3);
  assert_int_equal(tarn_xwriter_append_sync(w, e.topic_log, b.data, b.len, 2, &off, NULL),
                   TARN_ECORRUPT);
  /* a batch cut short */
  assert_int_equal(tarn_xwriter_append_sync(w, e.topic_log, b.data, b.len - 1, 3, &off, NULL),
                   TARN_ECORRUPT);
  tarn_xwriter_stats st;
  tarn_xwriter_stats_get(w, &st);
  assert_int_equal(st.entries_acked, 0);
  /* the binding's entry goes through, at offset 0: nothing refused took one */
  assert_int_equal(tarn_xwriter_append_sync(w, e.topic_log, b.data, b.len, 3, &off, NULL), 0);
  assert_int_equal(off, 0);
  /* no topic: no binding applies */
  assert_int_equal(tarn_xwriter_append_sync(w, e.plain_log, "plain bytes", 11, 1, &off, NULL), 0);
  assert_int_equal(tarn_xwriter_close(w), 0);

  tarn_reader *r;
  assert_int_equal(tarn_reader_open(e.d.m, e.d.wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, e.topic_log, 0, &it), 0);
  tarn_entry en;
  assert_int_equal(tarn_log_iter_next(it, &en, 0), 0);
  assert_int_equal(en.offset, 0);
  assert_int_equal(en.record_count, 3);
  assert_int_equal(tarn_log_iter_next(it, &en, 0), TARN_EEND);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  tarn_buf_free(&b);
  tu_fixture_close(&e.d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(express_topic_runs_the_batch_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
