/* ListOffsets by timestamp over a Kafka topic's log (issue 13 §2, §4). */
#ifndef TARN_KAFKA_TIME_LOOKUP_H
#define TARN_KAFKA_TIME_LOOKUP_H

#include <stdint.h>

#include "tarn/reader.h"

/* The first offset at or after `first` (the log's start) of the first batch
 * whose max timestamp is at or after ts, in log_id's entries [first, end):
 * *offset and that batch's max timestamp in *timestamp, or -1 and -1 when no
 * batch is that late. A binary search over the entries by their batches' max
 * timestamps: about log2(end - first) entries are read, not the log. It
 * assumes, as Kafka's time index does, that the max timestamps do not go
 * down along the log; where they do, the batch found is one at or after ts,
 * not always the first. */
int tarn__kafka_offset_for_time(tarn_reader *r, uint64_t log_id, uint64_t first, uint64_t end,
                                int64_t ts, int64_t *offset, int64_t *timestamp);

#endif
