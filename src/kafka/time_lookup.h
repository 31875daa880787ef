/* ListOffsets by timestamp over a Kafka topic's log (issue 13 §2, §4). */
#ifndef TARN_KAFKA_TIME_LOOKUP_H
#define TARN_KAFKA_TIME_LOOKUP_H

#include <stdint.h>

#include "tarn/reader.h"

/* As Kafka's ListOffsets by timestamp: in log_id's entries [first, end)
 * (first: the log's start), the first batch whose max timestamp is at or
 * after ts, and in it the first record at or after `first` whose timestamp is
 * at or after ts: its offset in *offset and its timestamp in *timestamp, or
 * -1 and -1 when no batch is that late. A binary search over the entries by their batches' max
 * timestamps: about log2(end - first) entries are read, not the log. It
 * assumes, as Kafka's time index does, that the max timestamps do not go
 * down along the log; where they do, the batch found is one at or after ts,
 * not always the first. */
int tarn__kafka_offset_for_time(tarn_reader *r, uint64_t log_id, uint64_t first, uint64_t end,
                                int64_t ts, int64_t *offset, int64_t *timestamp);

/* Retention by time (retention.c, issue 37): the same search, for the start
 * of the first entry in [first, end) holding a batch whose max timestamp is
 * at or after ts, in *start (end when there is none): every entry before it
 * holds only batches older than ts (with the same assumption). */
int tarn__kafka_entry_for_time(tarn_reader *r, uint64_t log_id, uint64_t first, uint64_t end,
                               int64_t ts, uint64_t *start);

#endif
