/* C5's progress record (LS-072) never moves back (issue 31 item 11 (a), "from
 * reading": the record was read, then put unconditionally). Two passes of one
 * log each read it and write their own e; the interleaving that lowered it is
 * played through the mem: store's held writes: pass A's put is held in flight
 * (its caller sees TARN_EUNKNOWN), pass B moves the record past A's e, then
 * A's put lands. A compare-and-set on the version A read is refused when it
 * lands; the plain put it replaced wrote A's lower e over B's. */
#include "testutil.h"

#include <stdlib.h>

#include "log/compactor_internal.h"
#include "tarn/compactor.h"
#include "tarn/error.h"
#include "tarn/meta.h"
#include "tarn/testing.h"
#include "tu_log.h"

static uint64_t progress(tarn_meta *m, uint64_t log_id) {
  uint64_t e = UINT64_MAX;
  assert_int_equal(tarn_compact_progress_read(m, log_id, &e), 0);
  return e;
}

static void held_put_cannot_lower(void **state) {
  (void)state;
  char *uri;
  tarn_meta *m = tu_meta_open("mem", &uri);
  /* the first pass creates the record */
  assert_int_equal(tarn__compact_progress_advance(m, NULL, 0, 7, 10), 0);
  assert_int_equal(progress(m, 7), 10);
  /* pass A read 10 and writes 20; its write is held in flight */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_DELAY_COMMIT, 1), 0);
  assert_int_equal(tarn__compact_progress_advance(m, NULL, 0, 7, 20), TARN_EUNKNOWN);
  assert_int_equal(progress(m, 7), 10);
  /* pass B moves it to 30 */
  assert_int_equal(tarn__compact_progress_advance(m, NULL, 0, 7, 30), 0);
  assert_int_equal(progress(m, 7), 30);
  /* A's write lands now: judged on the version A read, it is refused */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), 0);
  assert_int_equal(progress(m, 7), 30);
  /* a lower e writes nothing; a higher one still moves it */
  assert_int_equal(tarn__compact_progress_advance(m, NULL, 0, 7, 25), 0);
  assert_int_equal(progress(m, 7), 30);
  assert_int_equal(tarn__compact_progress_advance(m, NULL, 0, 7, 40), 0);
  assert_int_equal(progress(m, 7), 40);
  tu_meta_done(m, uri);
}

/* The create of the first record held the same way: a pass that created it
 * meanwhile is not overwritten when the held create lands. */
static void held_create_cannot_lower(void **state) {
  (void)state;
  char *uri;
  tarn_meta *m = tu_meta_open("mem", &uri);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_DELAY_COMMIT, 1), 0);
  assert_int_equal(tarn__compact_progress_advance(m, NULL, 0, 9, 5), TARN_EUNKNOWN);
  assert_int_equal(tarn__compact_progress_advance(m, NULL, 0, 9, 8), 0);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), 0);
  assert_int_equal(progress(m, 9), 8);
  tu_meta_done(m, uri);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(held_put_cannot_lower),
      cmocka_unit_test(held_create_cannot_lower),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
