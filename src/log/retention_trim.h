/* The size rule and the trim shared by the two retention jobs: plain streams
 * (log/retention.c, tarn/retention.h) and Kafka topics (kafka/retention.c). */
#ifndef TARN_LOG_RETENTION_TRIM_H
#define TARN_LOG_RETENTION_TRIM_H

#include <stdint.h>

#include "tarn/meta.h"
#include "tarn/trim.h"

/* By size (Kafka's retention.bytes over segments, here over index records):
 * the oldest record above B goes while what remains still holds `keep`
 * bytes; the last one always stays. *upto (in: the first offset to keep so
 * far) is raised to the end of the last record that goes. */
int tarn__retention_bytes_target(tarn_meta *m, uint64_t log_id, const tarn_log_bounds *b,
                                 int64_t keep, uint64_t *upto);

/* The bytes of log_id's live entries (issue 37, DescribeLogDirs): those of
 * the index records from the first above the trim marker B (LS-054) to the
 * last, from two ordered lookups and the marker: the last key's cumulative
 * size less the first live record's cumulative size less its own size. 0
 * for a log without records above B. */
int tarn__log_live_bytes(tarn_meta *m, uint64_t log_id, uint64_t *bytes);

/* Soft trim of log_id so that it starts at upto (B' = min(upto, start of its
 * last index record), never lowered: LS-079, LS-080), under a lease acquired
 * and released here. out: the marker before and the one in the store
 * afterwards, and the bytes of the index records now wholly below it that
 * were above the old one. TARN_EFENCED: the log is being deleted. */
typedef struct tarn__retention_trimmed {
  uint64_t before, stored, bytes;
} tarn__retention_trimmed;
int tarn__retention_trim(tarn_meta *m, uint64_t log_id, uint64_t upto,
                         tarn__retention_trimmed *out);

/* Removes log_id's retention time marks (tarn/retention.h): its deletion
 * does, after the fence, so none is left behind (a mark's creation is
 * guarded on the fence's absence). Idempotent. */
int tarn__retention_forget(tarn_meta *m, uint64_t log_id);

#endif
