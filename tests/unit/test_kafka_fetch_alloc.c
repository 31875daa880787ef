/* Allocation failures in the Kafka Fetch handler (src/kafka/api_fetch.c), in
 * the style of test_alloc_failures.c: one Fetch runs once clean to count its
 * allocations N, then once for every k = 1..N with the k-th allocation
 * failing. Each run must complete the request exactly once (a response or a
 * close) and never crash. The bug it was written for: fetch_read wrote the
 * partitions' wait ranges through a NULL `keys` when its calloc failed. The
 * node is built in process on the unit tests' fixture (tu_fixture.h) and the
 * request dispatched on this thread. */
/* ctest-wrap-alloc */
#include "testutil.h"
#include "tu_alloc_fail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/buf.h"
#include "tarn/catalog.h"
#include "tarn/kafka_topics.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "tu_fixture.h"
#include "tu_kafka.h"

typedef struct done {
  int calls, how;
  tarn_buf frame;
} done;

static done seen;

static void on_done(tarn__kreq *req, int how, tarn_buf *frame) {
  (void)req;
  seen.calls++;
  seen.how = how;
  if (frame) {
    tarn_buf_free(&seen.frame);
    seen.frame = *frame;
    *frame = (tarn_buf)TARN_BUF_INIT;
  }
}

/* A Kafka node on the fixture's deployment (catalog initialised), built as
 * src/server/kafka_node.c builds one, and topic t holding one batch of 3
 * records. */
typedef struct knode {
  tu_fixture d;
  tarn__knode node;
  tarn_kafka_topic t;
} knode;

static void knode_open(knode *e) {
  memset(e, 0, sizeof *e);
  tu_fixture_open_unique(&e->d, "fetch-alloc");
  tu_fixture_catalog(&e->d, 1);
  tarn__knode *n = &e->node;
  tarn__knode_config_default(&n->cfg);
  n->meta = e->d.m;
  n->catalog = e->d.cat;
  tarn_writer_options wo;
  tarn_writer_options_default(&wo);
  wo.batch_ms = 1;
  assert_int_equal(tarn_writer_open(n->meta, e->d.wal, &wo, &n->writer), 0);
  assert_int_equal(tarn_reader_open(n->meta, e->d.wal, e->d.compacted, NULL, &n->reader), 0);
  assert_int_equal(tarn__knode_open(n), 0);
  n->ready = 1; /* whole (node.c sets it after the registry joined) */
  assert_int_equal(tarn_kafka_topic_create(n->catalog, "t", 1, NULL, 0, &e->t), 0);
  tarn_buf b = TARN_BUF_INIT;
  tu_kafka_v2_simple(&b, 3);
  assert_int_equal(tarn_writer_append_sync(n->writer, e->t.logs[0], b.data, b.len, 3, NULL, NULL),
                   0);
  tarn_buf_free(&b);
}

static void knode_close(knode *e) {
  tarn__knode *n = &e->node;
  tarn__knode_close(n);
  assert_int_equal(tarn_writer_close(n->writer), 0);
  tarn_reader_close(n->reader);
  tarn_kafka_topic_free(&e->t);
  tu_fixture_close(&e->d);
  tarn_buf_free(&seen.frame);
}

/* A Fetch v11 of topic t's partition 0 from offset, not waiting. */
static void fetch_frame(tarn_buf *out, int64_t offset) {
  tarn__k_fetch_req q;
  tarn__k_fetch_fetch_topic ft;
  tarn__k_fetch_fetch_partition fp;
  tu_kafka_fetch_req(&q, &ft, &fp, "t", offset, 0, 1 << 20);
  tarn__kreq_header h = {TARN__KAPI_FETCH, 11, 7, {"test", 4}};
  assert_int_equal(tarn__kreq_frame(&h, &q, out), 0);
}

/* Dispatches the request in f (size prefix included) on this thread. */
static void dispatch(knode *e, const tarn_buf *f) {
  tarn__kreq req;
  memset(&req, 0, sizeof req);
  req.frame = f->data + 4;
  req.frame_len = f->len - 4;
  req.done = on_done;
  snprintf(req.peer, sizeof req.peer, "test");
  seen.calls = 0;
  tarn__kreq_dispatch(&e->node, &req);
}

/* The clean run's answer: partition 0, no error, the 3 records' batch. */
static void check_answer(void) {
  assert_int_equal(seen.how, TARN__KREQ_RESPONSE);
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_fetch_resp r;
  int32_t corr;
  size_t off;
  assert_int_equal(tarn__kresp_header_decode(TARN__KAPI_FETCH, 11, seen.frame.data + 4,
                                             seen.frame.len - 4, &corr, &off),
                   0);
  assert_int_equal(corr, 7);
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_FETCH, 11, 1, seen.frame.data + 4 + off,
                                     seen.frame.len - 4 - off, &a, &r),
                   0);
  assert_int_equal(r.responses.n, 1);
  assert_int_equal(r.responses.v[0].partitions.n, 1);
  const tarn__k_fetch_partition_data *p = &r.responses.v[0].partitions.v[0];
  assert_int_equal(p->error_code, 0);
  assert_int_equal(p->high_watermark, 3);
  assert_true(p->records.len > 0);
  tarn__karena_free(&a);
}

static void fetch_survives_every_allocation_failure(void **state) {
  (void)state;
  knode e;
  knode_open(&e);
  tarn_buf f = TARN_BUF_INIT;
  fetch_frame(&f, 0);
  tu_alloc_fail_at(0);
  dispatch(&e, &f);
  uint64_t n = tu_alloc_calls();
  assert_int_equal(seen.calls, 1);
  check_answer();
  assert_true(n > 0);
  int failed_runs = 0;
  for (uint64_t k = 1; k <= n; k++) {
    tu_alloc_fail_at(k);
    dispatch(&e, &f);
    failed_runs += tu_alloc_failed();
    tu_alloc_fail_at(0);
    assert_int_equal(seen.calls, 1); /* answered or closed, once */
  }
  assert_true(failed_runs > 0);
  /* the node serves on: a clean Fetch after them all gets the records */
  dispatch(&e, &f);
  assert_int_equal(seen.calls, 1);
  check_answer();
  tarn_buf_free(&f);
  knode_close(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fetch_survives_every_allocation_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
