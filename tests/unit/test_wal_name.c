/* WAL object names: valid object names, unique (LS-008), spread over 256
 * prefixes, and the write time recoverable from the name. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "log/wal_name.h"
#include "tarn/error.h"
#include "tarn/objstore.h"

static int cmp(const void *a, const void *b) { return strcmp(a, b); }

/* LS-008 */
static void unique_and_spread(void **state) {
  (void)state;
  enum { N = 4096 };
  static char names[N][TARN__WAL_NAME_LEN + 1];
  int prefixes[256] = {0};
  for (int i = 0; i < N; i++) {
    assert_int_equal(tarn__wal_name(names[i], 1796008225), 0);
    assert_int_equal(strlen(names[i]), TARN__WAL_NAME_LEN);
    assert_int_equal(tarn_objstore_check_name(names[i], strlen(names[i])), 0);
    prefixes[strtol((char[3]){names[i][0], names[i][1], 0}, NULL, 16)]++;
  }
  qsort(names, N, sizeof names[0], cmp);
  for (int i = 1; i < N; i++)
    assert_string_not_equal(names[i - 1], names[i]);
  int used = 0;
  for (int i = 0; i < 256; i++)
    used += prefixes[i] > 0;
  assert_true(used > 200); /* one second's names do not share one prefix */
}

static void time_round_trip(void **state) {
  (void)state;
  char n[TARN__WAL_NAME_LEN + 1];
  assert_int_equal(tarn__wal_name(n, 1796008225), 0);
  assert_memory_equal(n + 2, "/20261130T031025Z-", 18);
  int64_t t;
  assert_int_equal(tarn__wal_name_time(n, &t), 0);
  assert_int_equal(t, 1796008225);
  assert_int_equal(tarn__wal_name_time("7-00000001.wal", &t), TARN_EINVAL);
  n[0] = n[0] == 'a' ? 'b' : 'a'; /* the prefix must repeat the random part */
  assert_int_equal(tarn__wal_name_time(n, &t), TARN_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(unique_and_spread),
      cmocka_unit_test(time_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
