/* The appender's methods (issue 32 item 1; tarn/appender.h): the table each
 * writer fills, as SQLite's sqlite3_io_methods or curl's vtls, and the
 * library's own door for an append whose Kafka checks were already made. */
#ifndef TARN_LOG_APPENDER_IMPL_H
#define TARN_LOG_APPENDER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/appender.h"
#include "tarn/meta.h"

/* A condition an entry's append must meet besides the writer's own (issue 31
 * item 3: an idempotent producer's batch is appended only while the
 * producer's state record in the log's partition is still the version that
 * claimed the batch).
 *
 * A writer whose entry has an index put of its own (the standard writer)
 * meets it atomically with that put: just before the put of the entry's
 * section, the put thread calls hold(domain, &g), which fills one condition
 * on a key of the log's partition (kept valid until release) and keeps
 * whatever it guards from changing; release(domain) follows the put, before
 * any outcome is delivered. A non-zero return of hold fails the section's
 * entries. Entries with the same domain share one condition; a section holds
 * at most TARN__WRITER_EXTRA_GUARDS domains (an entry with another one goes
 * to the next object).
 *
 * A writer without one (the express writer: its slot PUT is an object-store
 * create, its index put a later absorb; issue 31 item 4) calls check(domain)
 * just before queuing the entry instead: non-zero refuses it (nothing is
 * appended). Not atomic with the append: docs/kafka.md "Limits". */
typedef struct tarn__append_guard {
  void *domain;
  int (*hold)(void *domain, tarn_meta_guard *g);
  void (*release)(void *domain);
  int (*check)(void *domain);
} tarn__append_guard;
#define TARN__WRITER_EXTRA_GUARDS 4

/* An append's options beyond the public verbs. */
typedef struct tarn__append_opts {
  /* The caller has made every one of LS-095 ... LS-098's checks over exactly
   * these bytes: tarn_kafka_iter run to its end without error (complete
   * batches, the per-batch rules, CRC32C) and record_count the iterator's
   * count, so the entry passes tarn_kafka_check. The Kafka listener's
   * Produce is that caller (src/kafka/api_produce.c check_records): each
   * batch's CRC32C is then computed once per byte, by either writer. */
  int kafka_checked;
  const tarn__append_guard *guard; /* NULL: none */
} tarn__append_opts;

typedef struct tarn__appender_methods {
  const char *kind; /* "standard", "express" */
  int (*append)(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                uint32_t record_count, const tarn__append_opts *o, tarn_append_cb cb, void *arg);
  /* 0 when append_sync may wait (a stepped writer has no thread to wait for) */
  int (*sync_ok)(tarn_appender *a);
  int (*seal)(tarn_appender *a);
  int (*flush)(tarn_appender *a);
  int (*close)(tarn_appender *a);
  void (*last_error)(tarn_appender *a, char *buf, size_t n);
  void (*stats)(tarn_appender *a, tarn_appender_stats *s);
} tarn__appender_methods;

/* Each writer's struct holds one, and tarn_*writer_appender returns it. */
struct tarn_appender {
  const tarn__appender_methods *m;
};

/* tarn_appender_append with options (o NULL: none). */
int tarn__appender_append(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                          uint32_t record_count, const tarn__append_opts *o, tarn_append_cb cb,
                          void *arg);

#endif
