/* Fuzzes the Kafka payload checks, with a 1 MiB cap on each compressed v0/v1
 * wrapper. A payload that passes is rewritten for an entry offset, and the
 * rewrite must change nothing but the batches' offset fields. Then the magic
 * 0/1 edges of the listener (kafka_legacy.c, issue 37): the flattened payload
 * must pass the check with the same record count, and the rewritten one
 * down-converts to a message set of one message per record, from offset
 * 1000 on (or fails cleanly on input it cannot decode). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
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
  tarn_buf flat = TARN_BUF_INIT, set = TARN_BUF_INIT;
  int changed = 0;
  uint64_t flat_records = 0;
  if (!tarn_kafka_legacy_flatten(data, size, &flat, &changed) && changed &&
      (tarn_kafka_check(flat.data, flat.len, -1, &flat_records) || flat_records != records))
    abort();
  for (int magic = 0; magic <= 1; magic++) {
    tarn_buf_reset(&set);
    if (tarn_kafka_down_convert(copy, size, magic, 1000, SIZE_MAX, &set))
      continue; /* above the inflate cap, or out of memory */
    uint64_t n = 0;
    for (size_t q = 0; q < set.len; n++) {
      if (set.len - q < 17 || set.data[q + 16] != magic)
        abort();
      q += 12 + ((size_t)set.data[q + 8] << 24 | (size_t)set.data[q + 9] << 16 |
                 (size_t)set.data[q + 10] << 8 | set.data[q + 11]);
      if (q > set.len)
        abort();
    }
    if (n != records)
      abort();
  }
  tarn_buf_free(&flat);
  tarn_buf_free(&set);
  free(copy);
  return 0;
}
