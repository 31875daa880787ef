#include "tu_index.h"

#include "testutil.h"

#include <stdio.h>

#include "tarn/key.h"

tarn_meta_recs tu_index_records(tarn_meta *m, uint64_t log) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log);
  tarn_key_format(a, log, 0, 0);
  tarn_key_format(b, log, TARN_KEY_MAX, TARN_KEY_MAX);
  tarn_meta_recs r = {0};
  assert_int_equal(tarn_meta_scan(m, part, a, b, 0, 0, &r), 0);
  return r;
}

size_t tu_prefix_count(tarn_meta *m, uint64_t log, const char *prefix) {
  char part[TARN_KEY_PARTITION_LEN + 1], b[TARN_KEY_SLASH_MAX + 8];
  tarn_key_partition(part, log);
  snprintf(b, sizeof b, "%s\xff", prefix);
  tarn_meta_recs r = {0};
  assert_int_equal(tarn_meta_list(m, part, prefix, b, 0, 0, &r), 0);
  size_t n = r.n;
  tarn_meta_recs_free(&r);
  return n;
}

size_t tu_lease_count(tarn_meta *m, uint64_t log) {
  char a[TARN_KEY_SLASH_MAX];
  tarn_key_lease_prefix(a, log);
  return tu_prefix_count(m, log, a);
}
