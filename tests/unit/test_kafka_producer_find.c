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

#include "kafka/api.h"
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
  assert_int_equal(tarn__kproduce_find(&n, key, 5, 1, -1, &at), 1);
  assert_int_equal(at, (int64_t)off[2]);
  assert_int_equal(tarn__kproduce_find(&n, key, 6, 0, (int64_t)off[0], &at), 1);
  assert_int_equal(at, (int64_t)off[1]);
  assert_int_equal(tarn__kproduce_find(&n, key, 5, 3, -1, &at), 0); /* never stored */
  assert_int_equal(tarn__kproduce_find(&n, key, 7, 0, -1, &at), 0); /* another producer */
  assert_int_equal(tarn__kproduce_find(&n, key, 5, 2, (int64_t)off[3], &at), 1);
  assert_int_equal(at, (int64_t)off[3]);
  tarn_reader_close(r);
  tarn_buf_free(&b);
  tu_cenv_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(finds_a_batch_by_producer_and_sequence)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
