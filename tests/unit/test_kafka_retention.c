/* Retention of Kafka topics (issue 37; src/kafka/retention.c, docs/kafka.md
 * "Retention"): the node's kafka-retention job, run on the embedded default
 * (sqlite + file://) with the library's wall clock replaced, trims each
 * topic's partition through the spec's soft trim as its configs ask:
 *   - retention.ms: through the last entry whose batches are all older than
 *     now - retention.ms, none while every entry is young, and never the last
 *     entry (LS-080: B' = min(o + 1, start of the last index record));
 *   - the deployment default (no retention.ms given): Kafka's 7 days;
 *   - retention.bytes: whole index records from the oldest while the rest
 *     still holds retention.bytes (Kafka's rule for segments);
 *   - cleanup.policy=compact alone: nothing, whatever its retention.ms;
 *   - the marker only goes up (LS-079), and the trims are counted. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/kafka_node.h"
#include "tarn/kafka_topics.h"
#include "tarn/metrics.h"
#include "tarn/trim.h"
#include "tarn/writer.h"
#include "tu_kafka.h"
#include "util/clock.h"

#define DAY 86400000LL
#define ENTRIES 10

/* The wall clock is moved by tu_skew (tu_skew_clock): a pass is run at the
 * time it names. */
static int64_t T0; /* T0: the batches' first timestamp */

typedef struct world {
  char *dir;
  tarn_deployment *dep;
  tarn_catalog *cat;
  tarn_kafka_node *node;
  size_t batch_len;
} world;

/* Topic name with one config (key NULL: none), ENTRIES entries of 2 records
 * each: entry j at offsets 2j, 2j+1 with timestamps T0 + 1000 j (+1). */
static uint64_t topic(world *w, const char *name, const char *key, const char *value,
                      const char *key2, const char *value2) {
  tarn_stream_prop props[2] = {{(char *)key, (char *)value}, {(char *)key2, (char *)value2}};
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(w->cat, name, 1, props, key ? (key2 ? 2 : 1) : 0, &t),
                   0);
  uint64_t log = t.logs[0];
  tarn_kafka_topic_free(&t);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 1;
  tarn_writer *wr;
  assert_int_equal(
      tarn_writer_open(tarn_deployment_meta(w->dep), tarn_deployment_wal(w->dep), &o, &wr), 0);
  for (int j = 0; j < ENTRIES; j++) {
    tarn_buf b = TARN_BUF_INIT;
    tu_kafka_v2_timed(&b, 2, T0 + 1000 * (int64_t)j);
    w->batch_len = b.len;
    uint64_t off;
    assert_int_equal(tarn_writer_append_sync(wr, log, b.data, b.len, 2, &off, NULL), 0);
    assert_int_equal(off, 2 * (uint64_t)j);
    tarn_buf_free(&b);
  }
  tarn_writer_close(wr);
  return log;
}

static uint64_t marker(world *w, uint64_t log) {
  uint64_t b;
  assert_int_equal(tarn_trim_marker_read(tarn_deployment_meta(w->dep), log, &b, NULL), 0);
  return b;
}

/* One pass of the job at wall-clock now. */
static void pass(world *w, int64_t now) {
  tu_skew = now - tu_real_ms();
  size_t nj;
  const tarn_kafka_node_job *jobs = tarn_kafka_node_jobs(&nj);
  for (size_t i = 0; i < nj; i++)
    if (strcmp(jobs[i].name, "kafka-retention") == 0) {
      tarn__sleep_ms(3); /* past its 1 ms interval */
      assert_int_equal(jobs[i].run(w->node), 0);
      return;
    }
  fail_msg("no kafka-retention job");
}

static void retention_pass(void **state) {
  (void)state;
  world w = {0};
  w.dir = tu_tmpdir("kret");
  char meta[600], wal[600], comp[600];
  snprintf(meta, sizeof meta, "sqlite:%s/meta.db", w.dir);
  snprintf(wal, sizeof wal, "file://%s/wal", w.dir);
  snprintf(comp, sizeof comp, "file://%s/compacted", w.dir);
  tarn_deployment_config dc = {meta, wal, comp, NULL};
  assert_int_equal(tarn_deployment_open(&dc, 1, &w.dep), 0);
  assert_int_equal(tarn_catalog_open(tarn_deployment_meta(w.dep), NULL, &w.cat), 0);
  assert_int_equal(tarn_catalog_init(w.cat, NULL), 0);
  T0 = tu_real_ms();

  uint64_t lt = topic(&w, "by-time", "retention.ms", "60000", NULL, NULL);
  uint64_t ld = topic(&w, "by-default", NULL, NULL, NULL, NULL);
  char keep[32];
  snprintf(keep, sizeof keep, "%zu", 3 * w.batch_len); /* three entries' bytes */
  uint64_t lb = topic(&w, "by-size", "retention.bytes", keep, "retention.ms", "-1");
  uint64_t lc = topic(&w, "compacted", "cleanup.policy", "compact", "retention.ms", "1");

  tarn_kafka_node_config c;
  tarn_kafka_node_config_default(&c);
  assert_int_equal(c.retention_check_ms, 300000); /* Kafka's default */
  c.listen = "127.0.0.1:0";
  c.retention_check_ms = 1;
  assert_int_equal(tarn_kafka_node_open(w.dep, &c, &w.node), 0);

  /* every entry younger than the cutoff: nothing moves */
  pass(&w, T0 + 60000 - 500); /* (the cutoffs keep 500 ms from the batches: time passes) */
  assert_int_equal(marker(&w, lt), 0);
  assert_int_equal(marker(&w, ld), 0);
  assert_int_equal(marker(&w, lc), 0);
  /* by size at once: 10 entries, 3 kept (Kafka keeps at least retention.bytes) */
  assert_int_equal(marker(&w, lb), 14);

  /* cutoff T0 + 5500: entries 0-5 (max timestamps T0 + 1000 j + 1) are older;
   * entry 6 is the first that is not: the log starts at its offset 12 */
  pass(&w, T0 + 60000 + 5500);
  assert_int_equal(marker(&w, lt), 12);
  assert_int_equal(marker(&w, ld), 0); /* 7 days */
  assert_int_equal(marker(&w, lc), 0); /* compact only */
  /* a cutoff between entry 6's and entry 7's max timestamps keeps entry 7 */
  pass(&w, T0 + 60000 + 6500);
  assert_int_equal(marker(&w, lt), 14);

  /* all older: through the last entry but the last (LS-080 keeps it) */
  pass(&w, T0 + 7 * DAY + 5500);
  assert_int_equal(marker(&w, lt), 18);
  assert_int_equal(marker(&w, ld), 12); /* the 7 days' default, as by-time's 60 s */
  assert_int_equal(marker(&w, lb), 14); /* no time bound */
  assert_int_equal(marker(&w, lc), 0);
  assert_true(tarn_metrics_value("tarn_kafka_retention_trims_total", "cause", "retention", NULL) >=
              4);
  assert_true(tarn_metrics_value("tarn_kafka_retention_bytes_total", "cause", "retention", NULL) >=
              (int64_t)(6 * w.batch_len));

  /* the clock going back never lowers B (LS-079) */
  pass(&w, T0);
  assert_int_equal(marker(&w, lt), 18);

  assert_int_equal(tarn_kafka_node_close(w.node), 0);
  tarn_catalog_close(w.cat);
  tarn_deployment_close(w.dep);
  tu_rmtree(w.dir);
  free(w.dir);
}

int main(void) {
  tu_skew_clock();
  const struct CMUnitTest tests[] = {cmocka_unit_test(retention_pass)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
