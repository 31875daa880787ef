/* The Kafka idempotent producer's state record (src/kafka/producer.c, the
 * value under /kafka-producer-state in P(L), written by compare-and-set and
 * read by every node): the decoder is total (issue 31: every decoder has a
 * fuzz target), and a format 3 value it accepts encodes again to the same
 * bytes (no field is lost, none is read loosely). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/producer.h"
#include "tarn/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn_buf again = TARN_BUF_INIT;
  if (tarn__kprod_state_decode(data, size, &again) == 0 && size >= 3 && data[2] == 3 &&
      (again.len != size || memcmp(again.data, data, size) != 0))
    abort();
  tarn_buf_free(&again);
  return 0;
}
