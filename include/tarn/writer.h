/* tarn — the writer: appends entries to logs (spec "Appending", A1–A4).
 *
 * Entries are batched into WAL objects (by time window, object size and the
 * number of logs per object), each object is written create-only under a new
 * name, then one SequencedPut per log section publishes its RAW index record,
 * and only then are the section's entries acknowledged with their offsets and
 * the record's creation timestamp.
 *
 * WAL object names (LS-008): "{pp}/{yyyymmddTHHMMSSZ}-{r}.wal", where r is 32
 * lower-case hex digits of a fresh random 128-bit number and pp its first two
 * digits. The 256 prefixes spread one second's objects over many key prefixes
 * (S3 throttles PUTs per prefix; Ursa's names share one prefix per second), and
 * the UTC time in the name still tells a garbage collector when it was written
 * (list each prefix; the name sorts by time within it).
 *
 * Thread safety: every function may be called from any thread, except that
 * tarn_writer_close() must not race with other calls. Callbacks run on the
 * writer's threads and should return quickly; they must not call
 * tarn_writer_flush, tarn_writer_close, tarn_writer_append_sync, or a
 * blocking tarn_writer_append (it could wait for the callback's own thread). */
#ifndef TARN_WRITER_H
#define TARN_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/appender.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_writer_options {
  uint32_t batch_ms;          /* an open object is sealed this long after its first entry (250) */
  size_t max_object_bytes;    /* payload bytes per object (4 MiB); a larger entry gets its own */
  size_t max_logs_per_object; /* log sections per object (4) */
  size_t max_bytes_in_flight; /* payload bytes appended and not yet acknowledged (64 MiB) */
  int nonblocking;            /* over the limit: 0 = append blocks, 1 = append returns TARN_EBUSY */
  int upload_threads;         /* objects written in parallel (2) */
  int put_threads;            /* index puts of different logs in parallel (4) */
  int object_retries; /* extra attempts, each under a new name, after an object write fails (2) */
  /* A section whose object's write began longer ago than this (monotonic
   * clock) is not published: its entries fail with TARN_ETIMEDOUT. A
   * reclaimer deletes an object that no record names once the WAL grace has
   * passed since it first saw it, so a writer stalled between A2 and A3 must
   * give up before that. (300000; 0: the deployment's) */
  int64_t max_publish_delay_ms;
  /* An index put that returns later than this after the publish check is
   * not acknowledged: its entries get TARN_EUNKNOWN (the record may name a
   * reclaimed object). (60000)
   * tarn_writer_open lowers both to the deployment's timing record where
   * that is lower (0 here: the record's), and refuses a record whose WAL
   * grace does not exceed them plus its skew allowance (tarn/timing.h). */
  int64_t max_put_ms;
  /* 0: threads do the work (the default). 1, for tests and the simulator
   * only (tarn/testing.h, not a stable API): stepped — no threads; the caller
   * drives sealing, A2 and A3/A4 one unit at a time with tarn_writer_step;
   * an append over the memory limit returns TARN_EBUSY; flush and close do the remaining work on
   * the caller's thread. upload_threads and put_threads are ignored. */
  int stepped;
} tarn_writer_options;

/* Ursa's defaults (spec Appendix E) and the values above in parentheses. */
void tarn_writer_options_default(tarn_writer_options *o);

/* The outcome of one entry (tarn_append_cb, tarn/appender.h), delivered once:
 *   status 0: appended; offset is the entry's first offset, timestamp_ms its
 *             timestamp (the index record's creation time);
 *   TARN_EUNKNOWN: the index put's outcome is unknown — the entry may be
 *             readable (the format has no deduplication);
 *   another negative TARN_E*: not appended (the object write failed, the put
 *             failed, or the session behind the lease ended: TARN_ESESSION). */

typedef struct tarn_writer tarn_writer;

/* The writer uses (does not own) the metadata store and the WAL root; both
 * must outlive it. o may be NULL for the defaults. */
int tarn_writer_open(tarn_meta *meta, tarn_objstore *wal, const tarn_writer_options *o,
                     tarn_writer **out);

/* Queues one entry of record_count (>= 1, LS-016) records for log_id; the
 * payload is copied. The first append to a log acquires a write lease on it
 * (A1), kept until close: TARN_EFENCED for a deleted log. Returns 0 when the
 * entry was queued (cb then reports its outcome; cb may be NULL), or an error
 * with cb never called. TARN_EBUSY when nonblocking and over the memory limit;
 * TARN_ECLOSED after close began; TARN_ESESSION once the session ended. */
int tarn_writer_append(tarn_writer *w, uint64_t log_id, const void *payload, size_t len,
                       uint32_t record_count, tarn_append_cb cb, void *arg);

/* Appends one entry and waits for its outcome (returned; offset and
 * timestamp_ms may be NULL). Waits up to a batch window unless flushed. */
int tarn_writer_append_sync(tarn_writer *w, uint64_t log_id, const void *payload, size_t len,
                            uint32_t record_count, uint64_t *offset, int64_t *timestamp_ms);

/* Seals the open object and waits until every entry appended before the call
 * has had its outcome delivered. */
int tarn_writer_flush(tarn_writer *w);

/* Seals the open batch now, without waiting for anything: its object is
 * written and published as soon as the threads get to it. For a caller that
 * bounds its own entries in flight and must not wait out a batch window. */
int tarn_writer_seal(tarn_writer *w);

/* Flushes, stops the threads, then releases the leases — only after every
 * change started under them completed (LS-043) — and frees the writer. */
int tarn_writer_close(tarn_writer *w);

typedef struct tarn_writer_stats {
  uint64_t objects_written;
  uint64_t object_failures;
  uint64_t index_puts; /* committed */
  uint64_t entries_acked;
  uint64_t entries_failed;
  uint64_t entries_unknown;
  size_t bytes_in_flight;
} tarn_writer_stats;
void tarn_writer_stats_get(tarn_writer *w, tarn_writer_stats *s);

/* The message of the last entry that failed (callbacks carry only the code). */
void tarn_writer_last_error(tarn_writer *w, char *buf, size_t n);

/* The writer as an appender (tarn/appender.h; issue 32 item 1): valid as long
 * as the writer; tarn_appender_close closes the writer. */
tarn_appender *tarn_writer_appender(tarn_writer *w);

#ifdef __cplusplus
}
#endif
#endif
