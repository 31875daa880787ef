/* Issue 31 item 3: the finder that settles an idempotent producer's claim
 * nobody will finish (tarn__kproduce_find, src/kafka/api_produce.c) finds a
 * producer's batch by its producer ID and base sequence in the log, through
 * the node's reader, from a given offset, and reports a batch that is not
 * there as not found. */
#include "testutil.h"
#include "tu_compact.h"
#include "tu_kafka.h"

#include <isa-l.h>
#include <stdio.h>
#include <string.h>

#include "express/xwriter_internal.h"
#include "kafka/api.h"
#include "tarn/express.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/kafka_topics.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "util/bytes.h"

/* A one-record v2 batch of producer pid with base sequence seq (the
 * producer fields set in the published layout, its CRC32C made again). */
static void batch(tarn_buf *b, int64_t pid, int32_t seq) {
  tarn_buf_reset(b);
  tu_kafka_v2_simple(b, 1);
  tarn__st_be64(b->data + 43, (uint64_t)pid);
  b->data[51] = 0, b->data[52] = 0; /* epoch 0 */
  tarn__st_be32(b->data + 53, (uint32_t)seq);
  tarn__st_be32(b->data + 17, ~crc32_iscsi(b->data + 21, (int)(b->len - 21), 0xffffffffu));
}

static void finds_a_batch_by_producer_and_sequence(void **state) {
  (void)state;
  static const char *const props[] = {TARN_KAFKA_PROP_TOPIC_NAME, "t", NULL};
  tu_cenv E;
  tu_cenv_open(&E, "kfind", 0, 1, props);
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, NULL, &w), 0);
  tarn_buf b = TARN_BUF_INIT;
  const int64_t pids[] = {5, 6, 5, 5};
  const int32_t seqs[] = {0, 0, 1, 2};
  uint64_t off[4];
  for (int i = 0; i < 4; i++) {
    batch(&b, pids[i], seqs[i]);
    assert_int_equal(tarn_writer_append_sync(w, E.log, b.data, b.len, 1, &off[i], NULL), 0);
  }
  assert_int_equal(tarn_writer_close(w), 0);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, E.compacted, NULL, &r), 0);
  tarn__knode n;
  memset(&n, 0, sizeof n);
  n.reader = r;
  char key[24];
  snprintf(key, sizeof key, "%llu", (unsigned long long)E.log);
  int64_t at = -1;
  assert_int_equal(tarn__kproduce_find(&n, NULL, key, 5, 1, -1, &at), 1);
  assert_int_equal(at, (int64_t)off[2]);
  assert_int_equal(tarn__kproduce_find(&n, NULL, key, 6, 0, (int64_t)off[0], &at), 1);
  assert_int_equal(at, (int64_t)off[1]);
  assert_int_equal(tarn__kproduce_find(&n, NULL, key, 5, 3, -1, &at), 0); /* never stored */
  assert_int_equal(tarn__kproduce_find(&n, NULL, key, 7, 0, -1, &at), 0); /* another producer */
  assert_int_equal(tarn__kproduce_find(&n, NULL, key, 5, 2, (int64_t)off[3], &at), 1);
  assert_int_equal(at, (int64_t)off[3]);
  tarn_reader_close(r);
  tarn_buf_free(&b);
  tu_cenv_close(&E);
}

/* ---- an express topic's partition ----------------------------------------- */

#define XLOG 7

static tarn_xwriter *xopen(tarn_meta *m, tarn_objstore *wal, const char *star) {
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = star;
  o.stepped = 1; /* nothing is absorbed until close */
  o.reclaim_grace_ms = 0;
  tarn_xwriter *w;
  assert_int_equal(tarn_xwriter_open(m, wal, &o, &w), 0);
  return w;
}

typedef struct xack {
  int done, rc;
  uint64_t off;
} xack;

static void on_xack(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  xack *k = arg;
  k->done = 1, k->rc = status, k->off = offset;
}

/* Appends b and drives it to its acknowledgement (stepped: flush does);
 * the offset. */
static uint64_t xacked(tarn_xwriter *w, const tarn_buf *b) {
  xack k = {0, 0, 99};
  assert_int_equal(tarn_xwriter_append(w, XLOG, b->data, b->len, 1, on_xack, &k), 0);
  assert_int_equal(tarn_xwriter_flush(w), 0);
  assert_true(k.done);
  assert_int_equal(k.rc, 0);
  return k.off;
}

/* Issue 31: on an express log, "not in the index" is no promise that a
 * batch is not stored. Star A acknowledges producer 5's batch 0 and dies
 * before absorbing it; node B's writer, asked by the settling of A's claim,
 * must lead the log first (its gate fences and settles A's epoch into the
 * index) and find the batch there; and a batch B itself acknowledged and has
 * not absorbed yet is found in its tail. Before, the finder read the index
 * alone: "not found" for both, and the client's retry was stored again. */
static void express_finder_settles_and_reads_tail(void **state) {
  (void)state;
  tarn_meta *ma, *mb;
  tarn_objstore *wal, *compacted;
  assert_int_equal(tarn_meta_open("mem:kxfind", &ma), 0);
  assert_int_equal(tarn_meta_open("mem:kxfind", &mb), 0);
  assert_int_equal(tarn_objstore_open("mem:kxfind-wal", &wal), 0);
  assert_int_equal(tarn_objstore_open("mem:kxfind-c", &compacted), 0);
  const char *bp[] = {"mem:kxfind-b0@z0", "mem:kxfind-b1@z1", "mem:kxfind-b2@z2"};
  assert_int_equal(tarn_express_deploy(ma, bp, 3, 2, 8, NULL), 0);
  tarn_buf b = TARN_BUF_INIT;
  tarn_xwriter *a = xopen(ma, wal, "star-a");
  batch(&b, 5, 0);
  assert_int_equal(xacked(a, &b), 0);
  tarn__xwriter_abandon(a); /* star A dies: acknowledged, indexed nowhere */
  tarn_meta_close(ma);
  tarn_xwriter *x = xopen(mb, wal, "star-b");
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(mb, wal, compacted, NULL, &r), 0);
  tarn__knode n;
  memset(&n, 0, sizeof n);
  n.reader = r;
  char key[24];
  snprintf(key, sizeof key, "%d", XLOG);
  int64_t at = -1;
  assert_int_equal(tarn__kproduce_find(&n, x, key, 5, 0, -1, &at), 1); /* A's, settled */
  assert_int_equal(at, 0);
  batch(&b, 5, 1);
  assert_int_equal(xacked(x, &b), 1);
  at = -1;
  assert_int_equal(tarn__kproduce_find(&n, x, key, 5, 1, -1, &at), 1); /* B's tail */
  assert_int_equal(at, 1);
  assert_int_equal(tarn__kproduce_find(&n, NULL, key, 5, 1, -1, &at), 0); /* not indexed yet */
  assert_int_equal(tarn__kproduce_find(&n, x, key, 5, 2, -1, &at), 0);    /* never stored */
  assert_int_equal(tarn__kproduce_find(&n, x, key, 6, 0, -1, &at), 0);    /* another producer */
  assert_int_equal(tarn_xwriter_close(x), 0);
  tarn_reader_close(r);
  tarn_buf_free(&b);
  tarn_objstore_close(compacted);
  tarn_objstore_close(wal);
  tarn_meta_close(mb);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(finds_a_batch_by_producer_and_sequence),
                                     cmocka_unit_test(express_finder_settles_and_reads_tail)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
