#include "tu_express.h"

#include <stdio.h>

#include "tarn/wal.h"
#include "testutil.h"

void tu_xflight(uint64_t slot, uint64_t log_id, uint32_t records, tarn_buf *out) {
  char payload[64];
  int n = snprintf(payload, sizeof payload, "payload of slot %llu", (unsigned long long)slot);
  tarn_wal_builder wb;
  tarn_wal_builder_init(&wb);
  assert_int_equal(tarn_wal_builder_add(&wb, log_id, payload, (size_t)n, records), 0);
  tarn_buf_init(out);
  assert_int_equal(tarn_wal_builder_finish(&wb, out), 0);
  tarn_wal_builder_free(&wb);
}
