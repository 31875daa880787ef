/* Retention of plain streams (issue 37 "The same policies on plain streams";
 * src/log/retention.c, tarn/retention.h, docs/log.md "Retention"): a pass of
 * tarn_retention_pass on the embedded default (sqlite + file://), with the
 * library's wall clock moved (tu_skew_clock):
 *   - retention.bytes: whole index records go from the oldest while the rest
 *     still holds that many bytes; the last one never (LS-080);
 *   - retention.ms: the log goes up to the E of the newest time mark (t, E)
 *     with t <= now - ms; an entry appended after a mark is never trimmed by
 *     it, however old the mark (by_time_never_young: planted bug
 *     retention-trims-young);
 *   - a Kafka topic, a stream without the properties and one with a value
 *     that does not parse are left alone (the pass says which);
 *   - the marks are bounded, and go with the log (tarn_log_delete). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/kafka_topics.h"
#include "tarn/retention.h"
#include "tarn/trim.h"
#include "tarn/writer.h"

typedef struct world {
  char *dir;
  tarn_deployment *dep;
  tarn_catalog *cat;
  tarn_writer *wr;
} world;

#define PAYLOAD 100 /* bytes of each entry */

static void open_world(world *w) {
  memset(w, 0, sizeof *w);
  tu_skew = 0;
  w->dir = tu_tmpdir("ret");
  char meta[600], wal[600], comp[600];
  snprintf(meta, sizeof meta, "sqlite:%s/meta.db", w->dir);
  snprintf(wal, sizeof wal, "file://%s/wal", w->dir);
  snprintf(comp, sizeof comp, "file://%s/compacted", w->dir);
  tarn_deployment_config dc = {meta, wal, comp, NULL};
  assert_int_equal(tarn_deployment_open(&dc, 1, &w->dep), 0);
  assert_int_equal(tarn_catalog_open(tarn_deployment_meta(w->dep), NULL, &w->cat), 0);
  assert_int_equal(tarn_catalog_init(w->cat, NULL), 0);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 1;
  assert_int_equal(
      tarn_writer_open(tarn_deployment_meta(w->dep), tarn_deployment_wal(w->dep), &o, &w->wr), 0);
}

static void close_world(world *w) {
  if (w->wr)
    tarn_writer_close(w->wr);
  tarn_catalog_close(w->cat);
  tarn_deployment_close(w->dep);
  tu_rmtree(w->dir);
  free(w->dir);
}

/* A stream of one partition with properties k=v (NULL-terminated pairs). */
static uint64_t stream(world *w, const char *name, const char *k1, const char *v1, const char *k2,
                       const char *v2) {
  tarn_stream_prop props[2] = {{(char *)k1, (char *)v1}, {(char *)k2, (char *)v2}};
  tarn_catalog_record s;
  assert_int_equal(
      tarn_catalog_create_stream(w->cat, "t", name, 1, props, k1 ? (k2 ? 2 : 1) : 0, &s), 0);
  uint64_t log = s.logs[0];
  tarn_catalog_record_free(&s);
  return log;
}

/* n entries of one record each, at the real clock (the writer's timers read
 * the wall clock: a skew would hold each batch that long). */
static void append(world *w, uint64_t log, int n) {
  tu_skew = 0;
  char p[PAYLOAD];
  memset(p, 'x', sizeof p);
  for (int i = 0; i < n; i++)
    assert_int_equal(tarn_writer_append_sync(w->wr, log, p, sizeof p, 1, NULL, NULL), 0);
}

static uint64_t marker(world *w, uint64_t log) {
  uint64_t b;
  assert_int_equal(tarn_trim_marker_read(tarn_deployment_meta(w->dep), log, &b, NULL), 0);
  return b;
}

static size_t marks(world *w, uint64_t log) {
  char part[24], a[128], z[130];
  snprintf(part, sizeof part, "%llu", (unsigned long long)log);
  snprintf(a, sizeof a, "/tarn-retention-times/%llu/", (unsigned long long)log);
  snprintf(z, sizeof z, "%s\xff", a);
  tarn_meta_recs r = {0};
  assert_int_equal(tarn_meta_list(tarn_deployment_meta(w->dep), part, a, z, 0, 0, &r), 0);
  size_t n = r.n;
  tarn_meta_recs_free(&r);
  return n;
}

/* One pass at wall-clock real + at_skew. */
static tarn_retention_stats pass_at(world *w, int64_t at_skew) {
  tu_skew = at_skew;
  tarn_retention_stats st;
  assert_int_equal(tarn_retention_pass(w->dep, &st), 0);
  return st;
}

static void by_bytes(void **state) {
  (void)state;
  world w;
  open_world(&w);
  uint64_t l = stream(&w, "sized", TARN_PROP_RETENTION_BYTES, "350", NULL, NULL);
  append(&w, l, 10);
  tarn_retention_stats st = pass_at(&w, 0);
  /* 10 entries of 100 bytes, at least 350 kept: 4 stay, the log starts at 6 */
  assert_int_equal(marker(&w, l), 6);
  assert_int_equal(st.streams, 1);
  assert_int_equal(st.trims, 1);
  assert_int_equal(st.bytes, 600);
  /* a second pass: nothing more to do */
  st = pass_at(&w, 0);
  assert_int_equal(st.trims, 0);
  assert_int_equal(marker(&w, l), 6);
  /* retention.bytes=0: all but the last (LS-080 keeps it) */
  uint64_t l0 = stream(&w, "zero", TARN_PROP_RETENTION_BYTES, "0", NULL, NULL);
  append(&w, l0, 3);
  pass_at(&w, 0);
  assert_int_equal(marker(&w, l0), 2);
  close_world(&w);
}

static void by_time_never_young(void **state) {
  (void)state;
  world w;
  open_world(&w);
  uint64_t l = stream(&w, "timed", TARN_PROP_RETENTION_MS, "60000", NULL, NULL);
  append(&w, l, 5);
  /* the first pass marks (t0, 5): nothing is provably old yet */
  pass_at(&w, 0);
  assert_int_equal(marker(&w, l), 0);
  assert_int_equal(marks(&w, l), 1);
  /* 5 more entries, appended after the mark; 30 s later, a second mark (t0
   * + 30 s, 10) */
  append(&w, l, 5);
  pass_at(&w, 30000);
  assert_int_equal(marker(&w, l), 0);
  assert_int_equal(marks(&w, l), 2);
  /* 61 s after the first mark: the first five are older than 60 s, the
   * others may not be (they were written after t0): the log starts at 5 */
  pass_at(&w, 61000);
  assert_int_equal(marker(&w, l), 5);
  /* 91 s: the second mark is old too: all but the last entry (LS-080) */
  pass_at(&w, 91000);
  assert_int_equal(marker(&w, l), 9);
  /* the clock going back never lowers B (LS-079) */
  pass_at(&w, 0);
  assert_int_equal(marker(&w, l), 9);
  close_world(&w);
}

static void marks_bounded_and_deleted(void **state) {
  (void)state;
  world w;
  open_world(&w);
  uint64_t l = stream(&w, "busy", TARN_PROP_RETENTION_MS, "6400", NULL, NULL);
  /* a pass every 25 ms of the clock for 10 s, the log growing between
   * them: a mark at most every 6400 / 64 = 100 ms, and only the window's
   * kept */
  for (int i = 0; i < 400; i++) {
    append(&w, l, 1);
    pass_at(&w, 25 * (int64_t)i);
  }
  size_t n = marks(&w, l);
  assert_true(n >= 2 && n <= 66);
  assert_true(marker(&w, l) > 0);
  /* a deleted stream's marks go with its log (the writer's lease first) */
  tarn_writer_close(w.wr);
  w.wr = NULL;
  assert_int_equal(tarn_catalog_drop_stream(w.cat, "t", "busy", NULL), 0);
  assert_int_equal(marks(&w, l), 0);
  close_world(&w);
}

static void left_alone(void **state) {
  (void)state;
  world w;
  open_world(&w);
  uint64_t none = stream(&w, "plain", NULL, NULL, NULL, NULL);
  uint64_t forever = stream(&w, "forever", TARN_PROP_RETENTION_MS, "-1", NULL, NULL);
  append(&w, none, 3);
  append(&w, forever, 3);
  /* a Kafka topic with retention.bytes=0 is its own job's (kafka/retention.c) */
  tarn_stream_prop kp[1] = {{"retention.bytes", "0"}};
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(w.cat, "topic", 1, kp, 1, &t), 0);
  uint64_t kl = t.logs[0];
  tarn_kafka_topic_free(&t);
  tarn_retention_stats st = pass_at(&w, 86400000);
  assert_int_equal(st.streams, 0);
  assert_int_equal(marker(&w, none), 0);
  assert_int_equal(marker(&w, forever), 0);
  assert_int_equal(marker(&w, kl), 0);
  assert_int_equal(marks(&w, kl), 0);
  /* a value that does not parse: the stream is left alone, the pass says so
   * and goes on with the others */
  uint64_t bad = stream(&w, "bad", TARN_PROP_RETENTION_MS, "banana", NULL, NULL);
  uint64_t good = stream(&w, "good", TARN_PROP_RETENTION_BYTES, "0", NULL, NULL);
  append(&w, bad, 2);
  append(&w, good, 2);
  tarn_retention_stats st2;
  assert_int_equal(tarn_retention_pass(w.dep, &st2), TARN_EINVAL);
  assert_non_null(strstr(tarn_errmsg(), "t/bad"));
  assert_int_equal(st2.errors, 1);
  assert_int_equal(marker(&w, bad), 0);
  assert_int_equal(marker(&w, good), 1);
  int64_t v;
  assert_int_equal(tarn_retention_parse(TARN_PROP_RETENTION_MS, "-2", &v), TARN_EINVAL);
  assert_int_equal(tarn_retention_parse(TARN_PROP_RETENTION_MS, "12x", &v), TARN_EINVAL);
  assert_int_equal(tarn_retention_parse(TARN_PROP_RETENTION_MS, "", &v), TARN_EINVAL);
  assert_int_equal(tarn_retention_parse(TARN_PROP_RETENTION_BYTES, "7", &v), 0);
  assert_int_equal(v, 7);
  close_world(&w);
}

int main(void) {
  tu_skew_clock();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(by_bytes),
      cmocka_unit_test(by_time_never_young),
      cmocka_unit_test(marks_bounded_and_deleted),
      cmocka_unit_test(left_alone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
