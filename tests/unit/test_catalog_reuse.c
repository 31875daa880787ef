/* Reproductions of the durability issue (#11 part 3), against mem:, sqlite:
 * and etcd:
 *  - a log ID whose partition already holds a record (index record, trim
 *    marker, fence, lease) — written by something other than this catalog's
 *    allocations — was handed out to a new stream, which then read that data
 *    (LS-087).
 * ctest-variants: mem sqlite etcd */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/key.h"
#include "tu_log.h"

/* One kind of record a log's partition may hold. */
enum { REC_INDEX, REC_TRIM, REC_FENCE, REC_LEASE, REC_KINDS };

static void plant(tarn_meta *m, uint64_t log, int kind) {
  char part[TARN_KEY_PARTITION_LEN + 1], k[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, log);
  switch (kind) {
  case REC_INDEX: assert_int_equal(tu_publish(m, log, 1, 1, NULL), 0); return;
  case REC_TRIM: tarn_key_trim_marker(k, log); break;
  case REC_FENCE: tarn_key_fence(k, log); break;
  default: tarn_key_lease(k, log, "someone"); break;
  }
  assert_int_equal(tarn_meta_put(m, part, k, "\x01", 1, NULL), 0);
}

/* LS-087 */
static void occupied_ids_are_never_handed_out(void **state) {
  for (int kind = 0; kind < REC_KINDS; kind++) {
    char *uri;
    tarn_meta *m = tu_meta_open((const char *)*state, &uri);
    tarn_catalog *c;
    assert_int_equal(tarn_catalog_open(m, NULL, &c), 0);
    assert_int_equal(tarn_catalog_init(c, NULL), 0);
    /* Logs 1 and 3 hold a record the catalog never wrote; 2 does not. */
    plant(m, 1, kind);
    plant(m, 3, kind);
    tarn_catalog_record s;
    assert_int_equal(tarn_catalog_create_stream(c, "ns", "a", 1, NULL, 0, &s), 0);
    assert_int_equal(s.logs[0], 2);
    tarn_catalog_record_free(&s);
    /* Two IDs in a row: 3 is occupied, so not {3, 4}. */
    assert_int_equal(tarn_catalog_create_stream(c, "ns", "b", 2, NULL, 0, &s), 0);
    assert_true(s.logs[0] > 3);
    assert_int_equal(s.logs[1], s.logs[0] + 1);
    tarn_catalog_record_free(&s);
    uint64_t first;
    assert_int_equal(tarn_catalog_alloc_logs(c, 1, &first), 0);
    char part[TARN_KEY_PARTITION_LEN + 1];
    tarn_key_partition(part, first);
    tarn_meta_rec r = {0};
    assert_int_equal(tarn_meta_ceiling(m, part, "", &r), TARN_ENOTFOUND);
    tarn_meta_rec_free(&r);
    tarn_catalog_close(c);
    tu_meta_done(m, uri);
  }
}

/* LS-087: a new stream reads nothing but what is written to it. */
static void a_new_stream_reads_nothing_old(void **state) {
  char *uri;
  tarn_meta *m = tu_meta_open((const char *)*state, &uri);
  tarn_catalog *c;
  assert_int_equal(tarn_catalog_open(m, NULL, &c), 0);
  assert_int_equal(tarn_catalog_init(c, NULL), 0);
  for (uint64_t l = 1; l <= 5; l++)
    assert_int_equal(tu_publish(m, l, 1, 1, NULL), 0);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(c, "default", "fresh", 3, NULL, 0, &s), 0);
  for (size_t i = 0; i < s.n_logs; i++)
    assert_int_equal(tu_count_index(m, s.logs[i]), 0);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(c);
  tu_meta_done(m, uri);
}

int main(int argc, char **argv) {
  const char *v = argc > 1 ? argv[1] : "mem";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(occupied_ids_are_never_handed_out, (void *)v),
      cmocka_unit_test_prestate(a_new_stream_reads_nothing_old, (void *)v),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
