/* A node's express writer that failed for good is reopened (issue 15;
 * kexpress.c retire, docs/kafka.md "Express topics"). Two buckets of three
 * refuse every PUT: the epoch halts, the in-process roll's fence cannot
 * decide the halted slot (its poison cannot land either), and the writer
 * fails with TARN_EUNKNOWN, which every later append of that writer would
 * repeat. Once the buckets answer again, the node's next produce closes the
 * failed writer and opens a new one (at most one open a second: no busy
 * loop), the failure logged once; the new writer's gate settles the failed
 * writer's epoch (the restart verdict) before it appends, and every
 * acknowledged entry is read back at its offset, once. Before the reopen,
 * the node's writer failed every produce until the node restarted (this
 * test failed at "reopened"). */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kafka/api.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/express.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/testing.h"
#include "tu_kafka.h"
#include "util/clock.h"

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static int ev_failed, ev_reopened, ev_closed;

static void xlog(const tarn__knode *n, const char *event, uint64_t log_id, int rc,
                 const char *msg) {
  (void)n, (void)log_id, (void)rc, (void)msg;
  pthread_mutex_lock(&ev_mu);
  ev_failed += !strcmp(event, "express writer failed");
  ev_reopened += !strcmp(event, "express writer reopened");
  ev_closed += !strcmp(event, "express writer closed");
  pthread_mutex_unlock(&ev_mu);
}

typedef struct acked {
  uint64_t off[32];
  int value[32];
  int n;
} acked;

/* Appends one batch of one record, value i, through the node's writer. */
static int produce(tarn__knode *n, const tarn_kafka_topic *t, int i, acked *a) {
  tarn_xwriter *xw;
  int rc = tarn__kexpress_writer(n, t, 0, t->logs[0], &xw);
  if (rc)
    return rc;
  tarn_buf b;
  tarn_buf_init(&b);
  tu_kafka_v2_timed(&b, 1, 1000 + i); /* the timestamp tells the entries apart */
  uint64_t off = 0;
  rc = tarn_xwriter_append_sync(xw, t->logs[0], b.data, b.len, 1, &off, NULL);
  tarn__kexpress_writer_done(n);
  tarn_buf_free(&b);
  if (!rc) {
    a->off[a->n] = off;
    a->value[a->n++] = 1000 + i;
  }
  return rc;
}

static void failed_writer_is_reopened(void **state) {
  (void)state;
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:kxr", &m), 0);
  tarn_objstore *bk[3];
  char uri[3][64];
  const char *bp[3];
  for (int i = 0; i < 3; i++) {
    snprintf(uri[i], sizeof uri[i], "mem:kxr-b%d", i);
    assert_int_equal(tarn_objstore_open(uri[i], &bk[i]), 0);
    snprintf(uri[i], sizeof uri[i], "mem:kxr-b%d@z%d", i, i);
    bp[i] = uri[i];
  }
  assert_int_equal(tarn_express_deploy(m, bp, 3, 2, 8, NULL), 0);
  tarn_deployment_config dc = {"mem:kxr", "mem:kxr-wal", "mem:kxr-c", NULL};
  tarn_deployment *dep;
  assert_int_equal(tarn_deployment_open(&dc, 1, &dep), 0);
  tarn_catalog *c;
  assert_int_equal(tarn_catalog_open(m, NULL, &c), 0);
  tarn_stream_prop cfg[] = {{TARN_PROP_STORAGE_CLASS, TARN_STREAM_CLASS_EXPRESS}};
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(c, "fast", 1, cfg, 1, &t), 0);

  tarn__knode n;
  memset(&n, 0, sizeof n);
  tarn__knode_config_default(&n.cfg);
  snprintf(n.cfg.star, sizeof n.cfg.star, "node-r");
  n.cfg.express_fence_ms = 300; /* the roll's fence gives up on the halted slot soon */
  n.cfg.express_absorb_ms = 10;
  n.cfg.express_log = xlog;
  n.meta = m;
  n.dep = dep;
  assert_int_equal(tarn__kexpress_open(&n), 0);

  acked a = {0};
  int i = 0;
  for (; i < 4; i++)
    assert_int_equal(produce(&n, &t, i, &a), 0);
  /* buckets 1 and 2 refuse every PUT: the slot cannot reach W = 2 */
  for (int b = 1; b < 3; b++)
    assert_int_equal(tarn_objstore_mem_fault(bk[b], TARN_MEM_OP_PUT, 1, 1000000,
                                             TARN_MEM_FAULT_BEFORE, TARN_EUNAVAIL),
                     0);
  assert_int_equal(produce(&n, &t, i++, &a), TARN_EUNKNOWN); /* a copy landed on bucket 0 */
  /* the buckets answer again; the failed writer would still fail every append */
  for (int b = 1; b < 3; b++)
    assert_int_equal(tarn_objstore_mem_reset_faults(bk[b]), 0);
  int rc, refused = 0;
  for (int tries = 0; (rc = produce(&n, &t, i, &a)) != 0 && tries < 400; tries++) {
    /* retryable meanwhile (NOT_LEADER_OR_FOLLOWER for the client) */
    assert_int_equal(rc, TARN_EUNAVAIL);
    refused++;
    tarn__sleep_ms(10);
  }
  assert_int_equal(rc, 0);
  i++;
  pthread_mutex_lock(&ev_mu);
  assert_int_equal(ev_failed, 1);   /* logged once, however many produces came */
  assert_int_equal(ev_reopened, 1); /* one open, not one per produce */
  assert_int_equal(ev_closed, 1);   /* the failed writer's line, with its gate counts */
  pthread_mutex_unlock(&ev_mu);
  printf("reopened after %d refused produces\n", refused);
  for (int j = 0; j < 4; j++, i++)
    assert_int_equal(produce(&n, &t, i, &a), 0);
  /* the new writer's gate settled the failed writer's epoch (this star's,
   * below its head) before its first append */
  tarn_xwriter *xw;
  assert_int_equal(tarn__kexpress_writer(&n, &t, 0, t.logs[0], &xw), 0);
  tarn_xwriter_stats st;
  tarn_xwriter_stats_get(xw, &st);
  tarn__kexpress_writer_done(&n);
  assert_int_equal(st.gate_restart, 1);
  assert_int_equal(tarn__kexpress_close(&n), 0);

  /* every acknowledged entry at its offset, once; the entry of unknown
   * outcome may have been settled in (below the new writer's offsets) */
  assert_int_equal(a.n, 9);
  for (int j = 1; j < a.n; j++)
    assert_true(a.off[j] > a.off[j - 1]);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(m, tarn_deployment_wal(dep), NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, t.logs[0], 0, &it), 0);
  tarn_entry en;
  int seen = 0, extra = 0;
  uint64_t next = 0;
  while ((rc = tarn_log_iter_next(it, &en, 0)) == 0) {
    assert_int_equal(en.offset, next); /* no gap, no offset twice */
    next = en.offset + en.record_count;
    if (seen < a.n && en.offset == a.off[seen]) {
      tarn_kafka_iter ki;
      tarn_kafka_iter_init(&ki, en.payload, en.payload_len, 0);
      tarn_kafka_batch kb;
      assert_int_equal(tarn_kafka_iter_next(&ki, &kb), 1);
      assert_int_equal(kb.base_timestamp, a.value[seen]);
      seen++;
    } else {
      extra++;
    }
  }
  assert_int_equal(rc, TARN_EEND);
  assert_int_equal(seen, a.n);
  assert_true(extra <= 1);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  tarn_kafka_topic_free(&t);
  tarn_catalog_close(c);
  tarn_deployment_close(dep);
  for (int b = 0; b < 3; b++)
    tarn_objstore_close(bk[b]);
  tarn_meta_close(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(failed_writer_is_reopened),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
