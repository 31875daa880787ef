/* An append whose Kafka checks the caller has already made (writer.c). */
#ifndef TARN_LOG_WRITER_CHECKED_H
#define TARN_LOG_WRITER_CHECKED_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"
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

/* A condition an entry's index put must meet besides the lease's (issue 31
 * item 3: an idempotent producer's batch is appended only while the
 * producer's state record in the log's partition is still the version that
 * claimed the batch). Just before the put of the entry's section, the put
 * thread calls hold(domain, &g): it fills one condition on a key of the
 * log's partition (kept valid until release) and keeps whatever it guards
 * from changing; release(domain) follows the put, before any outcome is
 * delivered. A non-zero return of hold fails the section's entries. Entries
 * with the same domain share one condition; a section holds at most
 * TARN__WRITER_EXTRA_GUARDS domains (an entry with another one goes to the
 * next object). */
typedef struct tarn__append_guard {
  void *domain;
  int (*hold)(void *domain, tarn_meta_guard *g);
  void (*release)(void *domain);
} tarn__append_guard;
#define TARN__WRITER_EXTRA_GUARDS 4
/* tarn__writer_append_kafka_checked with a condition (g NULL: none). */
int tarn__writer_append_kafka_guarded(tarn_writer *w, uint64_t log_id, const void *payload,
                                      size_t len, uint32_t record_count,
                                      const tarn__append_guard *g, tarn_append_cb cb, void *arg);

#endif
