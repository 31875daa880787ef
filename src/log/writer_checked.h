/* An append whose Kafka checks the caller has already made (writer.c). */
#ifndef TARN_LOG_WRITER_CHECKED_H
#define TARN_LOG_WRITER_CHECKED_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/writer.h"

/* tarn_writer_append without the writer's LS-095 ... LS-098 check of a Kafka
 * topic's entry, for a caller that has just made every one of those checks
 * over exactly these bytes: tarn_kafka_iter run to its end without error
 * (complete batches, the per-batch rules, CRC32C) and record_count the
 * iterator's record count, so the entry passes tarn_kafka_check. The Kafka
 * listener's Produce is that caller (src/kafka/api_produce.c check_records):
 * each batch's CRC32C is then computed once per byte, not twice. Every other
 * path appends through tarn_writer_append, which checks. */
int tarn__writer_append_kafka_checked(tarn_writer *w, uint64_t log_id, const void *payload,
                                      size_t len, uint32_t record_count, tarn_append_cb cb,
                                      void *arg);

#endif
