/* tarn — the appender: one interface over the two writers (issue 32 item 1).
 *
 * A standard writer (tarn/writer.h: entries batched into WAL objects, spec
 * "Appending" A1–A4) and an express writer (tarn/express.h: entries in
 * flights written to K buckets, absorbed later into WAL objects) take the
 * same verbs. A caller that only appends holds a tarn_appender and never
 * learns which writer is behind it: tarn_writer_appender() and
 * tarn_xwriter_appender() give a writer's appender (no allocation; it lives
 * as long as the writer), and each function below does exactly what the
 * writer's own function of the same verb does. Like SQLite's VFS or curl's
 * vtls, each writer fills one table of methods (src/log/appender_impl.h).
 *
 * Thread safety: the writer's (every function may be called from any thread,
 * close must not race with the others; callbacks must not call flush, close,
 * append_sync or a blocking append). */
#ifndef TARN_APPENDER_H
#define TARN_APPENDER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The outcome of one entry, delivered once:
 *   status 0: appended; offset is the entry's first offset, timestamp_ms its
 *             timestamp (the index record's creation time; an express
 *             writer's clock at release);
 *   TARN_EUNKNOWN: the outcome is unknown — the entry may be readable (the
 *             format has no deduplication);
 *   another negative TARN_E*: not appended. */
typedef void (*tarn_append_cb)(void *arg, int status, uint64_t offset, int64_t timestamp_ms);

typedef struct tarn_appender tarn_appender;

/* Queues one entry of record_count (>= 1, LS-016) records for log_id; the
 * payload is copied. An entry of a Kafka topic's log is refused unless it
 * passes the binding's checks (LS-095 ... LS-098). 0 when queued (cb then
 * reports its outcome; cb may be NULL), or an error with cb never called. */
int tarn_appender_append(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                         uint32_t record_count, tarn_append_cb cb, void *arg);

/* Appends one entry and waits for its outcome (returned; offset and
 * timestamp_ms may be NULL). Not for a stepped writer (tarn/testing.h). */
int tarn_appender_append_sync(tarn_appender *a, uint64_t log_id, const void *payload, size_t len,
                              uint32_t record_count, uint64_t *offset, int64_t *timestamp_ms);

/* Seals the open batch (flight) now, without waiting. */
int tarn_appender_seal(tarn_appender *a);

/* Seals and waits until every entry appended before the call has had its
 * outcome delivered. */
int tarn_appender_flush(tarn_appender *a);

/* Closes the writer behind the appender (tarn_writer_close,
 * tarn_xwriter_close) and frees it: a no longer exists afterwards. */
int tarn_appender_close(tarn_appender *a);

/* The message of the last entry that failed (callbacks carry only the code). */
void tarn_appender_last_error(tarn_appender *a, char *buf, size_t n);

/* What both writers count. */
typedef struct tarn_appender_stats {
  uint64_t entries_acked;
  uint64_t entries_failed;
  uint64_t entries_unknown; /* outcome unknown (always 0 for an express writer) */
  size_t bytes_in_flight;   /* payload bytes appended and not yet acknowledged
                               (express: not yet absorbed) */
} tarn_appender_stats;
void tarn_appender_stats_get(tarn_appender *a, tarn_appender_stats *s);

/* "standard" or "express": for messages and metrics, never for branching. */
const char *tarn_appender_kind(const tarn_appender *a);

#ifdef __cplusplus
}
#endif
#endif
