/* tarn — retention of plain streams (issue 37, "The same policies on plain
 * (non-Kafka) streams"; docs/log.md "Retention").
 *
 * A stream with the property retention.ms and/or retention.bytes (as
 * `tarn stream create --retention-ms/--retention-bytes` sets them) is trimmed
 * by `tarn serve`'s retention job through the spec's soft trim (LS-080); the
 * deployment's reclamation then deletes what lies below the trim marker.
 * Kafka topics keep their own job with Kafka's semantics (docs/kafka.md
 * "Retention and DeleteRecords"): a pass here skips them. */
#ifndef TARN_RETENTION_H
#define TARN_RETENTION_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/deployment.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_PROP_RETENTION_MS "retention.ms"       /* ms; absent or -1: no bound */
#define TARN_PROP_RETENTION_BYTES "retention.bytes" /* bytes per log; absent or -1 */

/* Parses a retention property's value: a decimal integer >= -1. TARN_EINVAL
 * (naming the property) otherwise. */
int tarn_retention_parse(const char *prop, const char *value, int64_t *out);

typedef struct tarn_retention_stats {
  size_t streams; /* streams with a retention property */
  size_t logs;    /* their logs looked at */
  size_t trims;   /* logs whose trim marker went up */
  uint64_t bytes; /* bytes of the index records newly below a marker */
  size_t errors;  /* logs that failed (left to the next pass) */
} tarn_retention_stats;

/* One pass over the deployment's plain streams at the library's wall clock.
 *   retention.bytes: whole index records go from the oldest while the rest
 *     still holds at least that many bytes (Kafka's rule for segments).
 *   retention.ms: entries go once they are provably older than that. The
 *     spec's entries carry no time, so each pass records a time mark, (t, E):
 *     at time t the log ended at E, so every offset below E was written
 *     before t. The log is trimmed up to the E of the newest mark with
 *     t <= now - retention.ms: never a younger entry; an entry goes at most
 *     a pass interval (or, past 64 marks, 1/64 of retention.ms) late. Marks
 *     are records of P(L) under /tarn-retention-times/{L}/ (at most ~66 per
 *     log; removed with the log).
 * The last index record is never trimmed (LS-080). A log that fails is
 * counted in st->errors and the pass goes on; returns the first error. */
int tarn_retention_pass(tarn_deployment *d, tarn_retention_stats *st);

#ifdef __cplusplus
}
#endif
#endif
