/* The appender (issue 32 item 1; tarn/appender.h): the standard writer and
 * the express writer through one interface. Every case runs the same code
 * against both (the table `kinds`): the verbs append, append_sync, seal,
 * flush, stats, last_error and close; a Kafka topic's bad entry refused
 * (LS-095); the Kafka check made once, not twice, when the caller made it
 * (tarn__append_opts.kafka_checked, the Kafka listener's Produce: before the
 * appender the express writer ran tarn_kafka_check again over a Produce's
 * bytes, so kafka_check_once failed for it); a guard that refuses leaves
 * nothing appended.
 * ctest-wrap: tarn_kafka_check */
#include "testutil.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log/appender_impl.h"
#include "tarn/appender.h"
#include "tarn/catalog.h"
#include "tarn/express.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "tu_kafka.h"

/* every call of the binding's whole-entry check, by any writer */
static atomic_int kafka_checks;
int __real_tarn_kafka_check(const void *payload, size_t len, int64_t record_count,
                            uint64_t *records);
int __wrap_tarn_kafka_check(const void *payload, size_t len, int64_t record_count,
                            uint64_t *records);
int __wrap_tarn_kafka_check(const void *payload, size_t len, int64_t record_count,
                            uint64_t *records) {
  atomic_fetch_add(&kafka_checks, 1);
  return __real_tarn_kafka_check(payload, len, record_count, records);
}

typedef struct env {
  tarn_meta *m;
  tarn_objstore *wal;
  uint64_t topic_log; /* partition 0 of a topic of the writer's class */
  uint64_t plain_log; /* a log of a stream of the writer's class, no topic */
} env;

typedef struct kind {
  const char *name;
  const char *class_; /* the streams' storage class */
  tarn_appender *(*open)(env *e);
} kind;

static tarn_appender *open_standard(env *e) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 5;
  tarn_writer *w = NULL;
  assert_int_equal(tarn_writer_open(e->m, e->wal, &o, &w), 0);
  return tarn_writer_appender(w);
}

static tarn_appender *open_express(env *e) {
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = "star-a";
  o.reclaim_grace_ms = 0;
  tarn_xwriter *w = NULL;
  assert_int_equal(tarn_xwriter_open(e->m, e->wal, &o, &w), 0);
  return tarn_xwriter_appender(w);
}

static const kind kinds[] = {
    {"standard", TARN_STREAM_CLASS_STANDARD, open_standard},
    {"express", TARN_STREAM_CLASS_EXPRESS, open_express},
};

static void env_open(env *e, const char *name, const kind *k) {
  memset(e, 0, sizeof *e);
  char uri[96];
  snprintf(uri, sizeof uri, "mem:%s-%s", name, k->name);
  assert_int_equal(tarn_meta_open(uri, &e->m), 0);
  snprintf(uri, sizeof uri, "mem:%s-%s-wal", name, k->name);
  assert_int_equal(tarn_objstore_open(uri, &e->wal), 0);
  char bk[3][96];
  const char *bp[3];
  for (int i = 0; i < 3; i++) {
    snprintf(bk[i], sizeof bk[i], "mem:%s-%s-b%d@z%d", name, k->name, i, i);
    bp[i] = bk[i];
  }
  assert_int_equal(tarn_express_deploy(e->m, bp, 3, 2, 8, NULL), 0);
  tarn_catalog *c;
  assert_int_equal(tarn_catalog_open(e->m, NULL, &c), 0);
  char class_[16];
  snprintf(class_, sizeof class_, "%s", k->class_);
  tarn_stream_prop cfg[] = {{TARN_PROP_STORAGE_CLASS, class_}};
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(c, "topic", 1, cfg, 1, &t), 0);
  e->topic_log = t.logs[0];
  tarn_kafka_topic_free(&t);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(c, "ns", "plain", 1, cfg, 1, &s), 0);
  e->plain_log = s.logs[0];
  tarn_catalog_record_free(&s);
  tarn_catalog_close(c);
}

static void env_close(env *e) {
  tarn_objstore_close(e->wal);
  tarn_meta_close(e->m);
}

typedef struct outcome {
  atomic_int n;
  int status;
  uint64_t offset;
} outcome;

static void on_outcome(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  outcome *o = arg;
  o->status = status;
  o->offset = offset;
  atomic_fetch_add(&o->n, 1);
}

/* The log's entries, in order: their payload's first byte each, into out,
 * each at the offset its predecessors' records give. */
static size_t read_log(env *e, uint64_t log_id, char *out, size_t n) {
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(e->m, e->wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, log_id, 0, &it), 0);
  tarn_entry en;
  size_t i = 0;
  uint64_t next = 0;
  int rc;
  while ((rc = tarn_log_iter_next(it, &en, 0)) == 0) {
    assert_true(i < n);
    assert_int_equal(en.offset, next);
    next += en.record_count;
    out[i++] = en.payload_len ? ((const char *)en.payload)[0] : 0;
  }
  assert_int_equal(rc, TARN_EEND);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  return i;
}

/* The verbs: append_sync, append with a callback, seal, flush, the stats;
 * close through the appender; the entries read back at their offsets. */
static void verbs(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    env e;
    env_open(&e, "ap-verbs", &kinds[k]);
    tarn_appender *a = kinds[k].open(&e);
    assert_string_equal(tarn_appender_kind(a), kinds[k].name);
    uint64_t off = 99;
    assert_int_equal(tarn_appender_append_sync(a, e.plain_log, "a", 1, 1, &off, NULL), 0);
    assert_int_equal(off, 0);
    outcome o = {0};
    assert_int_equal(tarn_appender_append(a, e.plain_log, "b", 1, 2, on_outcome, &o), 0);
    assert_int_equal(tarn_appender_seal(a), 0);
    assert_int_equal(tarn_appender_flush(a), 0);
    assert_int_equal(atomic_load(&o.n), 1); /* flush waited for it */
    assert_int_equal(o.status, 0);
    assert_int_equal(o.offset, 1);
    assert_int_equal(tarn_appender_append_sync(a, e.plain_log, "c", 1, 1, &off, NULL), 0);
    assert_int_equal(off, 3); /* after b's two records */
    /* the standard writer counts an outcome just after delivering it */
    tarn_appender_stats st;
    for (int i = 0; i < 2000; i++) {
      tarn_appender_stats_get(a, &st);
      if (st.entries_acked == 3)
        break;
      nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    assert_int_equal(st.entries_acked, 3);
    assert_int_equal(st.entries_failed, 0);
    assert_int_equal(st.entries_unknown, 0);
    /* LS-016 through either */
    assert_int_equal(tarn_appender_append(a, e.plain_log, "d", 1, 0, NULL, NULL), TARN_EINVAL);
    char why[256];
    tarn_appender_last_error(a, why, sizeof why);
    assert_int_equal(tarn_appender_close(a), 0);
    char got[8];
    assert_int_equal(read_log(&e, e.plain_log, got, sizeof got), 3);
    assert_memory_equal(got, "abc", 3);
    env_close(&e);
  }
}

/* LS-095 through either writer: a Kafka topic's entry of plain bytes, or of
 * a batch whose count disagrees with the entry's, is refused at append. */
static void kafka_refused(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    env e;
    env_open(&e, "ap-kafka", &kinds[k]);
    tarn_appender *a = kinds[k].open(&e);
    assert_int_equal(tarn_appender_append_sync(a, e.topic_log, "plain", 5, 1, NULL, NULL),
                     TARN_ECORRUPT);
    tarn_buf b;
    tarn_buf_init(&b);
    tu_kafka_v2_simple(&b, 3);
    assert_int_equal(tarn_appender_append_sync(a, e.topic_log, b.data, b.len, 2, NULL, NULL),
                     TARN_ECORRUPT);
    uint64_t off = 99;
    assert_int_equal(tarn_appender_append_sync(a, e.topic_log, b.data, b.len, 3, &off, NULL), 0);
    assert_int_equal(off, 0);
    assert_int_equal(tarn_appender_close(a), 0);
    tarn_buf_free(&b);
    env_close(&e);
  }
}

/* Issue 32 item 1: a caller that made the Kafka checks (the listener's
 * Produce) says so, and neither writer makes them again; without the flag
 * each makes them once. */
static void kafka_check_once(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    env e;
    env_open(&e, "ap-once", &kinds[k]);
    tarn_appender *a = kinds[k].open(&e);
    tarn_buf b;
    tarn_buf_init(&b);
    tu_kafka_v2_simple(&b, 2);
    /* the first append leads the log (lease, the express gate) */
    assert_int_equal(tarn_appender_append_sync(a, e.topic_log, b.data, b.len, 2, NULL, NULL), 0);
    atomic_store(&kafka_checks, 0);
    outcome o = {0};
    tarn__append_opts checked = {.kafka_checked = 1};
    assert_int_equal(
        tarn__appender_append(a, e.topic_log, b.data, b.len, 2, &checked, on_outcome, &o), 0);
    assert_int_equal(tarn_appender_flush(a), 0);
    assert_int_equal(o.status, 0);
    assert_int_equal(o.offset, 2);
    assert_int_equal(atomic_load(&kafka_checks), 0);
    assert_int_equal(tarn_appender_append_sync(a, e.topic_log, b.data, b.len, 2, NULL, NULL), 0);
    assert_int_equal(atomic_load(&kafka_checks), 1);
    assert_int_equal(tarn_appender_close(a), 0);
    tarn_buf_free(&b);
    env_close(&e);
  }
}

static int refuse_hold(void *domain, tarn_meta_guard *g) {
  (void)domain;
  (void)g;
  return TARN_EGUARD;
}
static void no_release(void *domain) { (void)domain; }
static int refuse_check(void *domain) {
  (void)domain;
  return TARN_EGUARD;
}

/* A guard that refuses (issue 31 items 3, 4): a standard writer fails the
 * entry at its index put, an express writer refuses it at append; either
 * way it is not appended and the log stays empty. */
static void guard_refuses(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    env e;
    env_open(&e, "ap-guard", &kinds[k]);
    tarn_appender *a = kinds[k].open(&e);
    int domain;
    tarn__append_guard g = {&domain, refuse_hold, no_release, refuse_check};
    tarn__append_opts o = {.guard = &g};
    outcome out = {0};
    int rc = tarn__appender_append(a, e.plain_log, "g", 1, 1, &o, on_outcome, &out);
    assert_int_equal(tarn_appender_flush(a), 0);
    if (rc == 0) {
      assert_int_equal(atomic_load(&out.n), 1);
      assert_true(out.status < 0 && out.status != TARN_EUNKNOWN);
    } else {
      assert_int_equal(rc, TARN_EGUARD);
      assert_int_equal(atomic_load(&out.n), 0);
    }
    assert_int_equal(tarn_appender_close(a), 0);
    char got[4];
    assert_int_equal(read_log(&e, e.plain_log, got, sizeof got), 0);
    env_close(&e);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(verbs),
      cmocka_unit_test(kafka_refused),
      cmocka_unit_test(kafka_check_once),
      cmocka_unit_test(guard_refuses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
