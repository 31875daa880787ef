/* Fuzzes the Kafka payload checks, with a 1 MiB cap on each compressed v0/v1
 * wrapper. A payload that passes is rewritten for an entry offset, and the
 * rewrite must change nothing but the batches' offset fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/kafka.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn_kafka_iter it;
  tarn_kafka_batch b;
  int rc;
  uint64_t records = 0;
  tarn_kafka_iter_init(&it, data, size, 1000);
  it.max_inflate = (size_t)1 << 20;
  while ((rc = tarn_kafka_iter_next(&it, &b)) == 1) {
    if (b.pos + b.len > size || b.record_count == 0 ||
        b.first_offset + b.record_count - 1 != b.last_offset)
      abort();
    records += b.record_count;
  }
  if (rc)
    return 0;
  uint8_t *copy = malloc(size);
  if (!copy)
    return 0;
  memcpy(copy, data, size);
  if (tarn_kafka_rewrite_offsets(copy, size, 1000, (int64_t)records))
    abort();
  tarn_kafka_iter_init(&it, data, size, 1000);
  size_t prev_end = 0;
  while (tarn_kafka_iter_next(&it, &b) == 1) {
    if (memcmp(copy + prev_end, data + prev_end, b.pos - prev_end) ||
        memcmp(copy + b.pos + 8, data + b.pos + 8, b.len - 8))
      abort();
    prev_end = b.pos + 8;
  }
  if (memcmp(copy + prev_end, data + prev_end, size - prev_end))
    abort();
  free(copy);
  return 0;
}
