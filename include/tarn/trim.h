/* tarn — a log's bounds and trimming (spec "Trim marker", "Soft trim",
 * "Hard trim", "Reading": first offset and last record). */
#ifndef TARN_TRIM_H
#define TARN_TRIM_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/lease.h"
#include "tarn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The trim marker B of L (0 when absent); *version gets the record's version,
 * or -1 when there is no marker (version may be NULL). A marker that is not
 * ASCII decimal is TARN_ECORRUPT. */
int tarn_trim_marker_read(tarn_meta *m, uint64_t log_id, uint64_t *b, int64_t *version);

/* The range [*start, *end) of offsets an index record of L covers: end from
 * its key, start = end - message_count from its value (v3 EntryIndex, or a
 * legacy v1/v2 value). TARN_ENOTFOUND when the key is not an index key of L
 * (the prefix check of R2); TARN_ECORRUPT on a bad key or value. */
int tarn_index_record_span(const tarn_meta_rec *r, uint64_t log_id, uint64_t *start, uint64_t *end);

typedef struct tarn_log_bounds {
  uint64_t first;      /* the first readable offset: max(B, start of the first record
                          above B) (LS-054); B when no record lies above B */
  uint64_t end;        /* where the next append starts: the end offset of the last
                          index record, 0 when the log has none */
  uint64_t trim;       /* B */
  int has_marker;      /* the trim marker record exists */
  int has_records;     /* the log has at least one index record */
  uint64_t last_start; /* the start offset of the last index record (when has_records) */
} tarn_log_bounds;

/* Reads L's bounds: the marker, Higher(P(L), K(L,B,MAX)) (or K(L,0,0) when
 * there is no marker) and Floor(P(L), K(L,MAX,MAX)), each with the prefix
 * check. Reads only. */
int tarn_log_bounds_read(tarn_meta *m, uint64_t log_id, tarn_log_bounds *out);

/* Soft trim of the lease's log through offset o, inclusive (LS-080): B' =
 * min(o + 1, start of the last index record); when B' > B, writes B' with
 * CreateIfAbsent (no marker) or CompareAndSet (on the version read); on a
 * lost race reads again and recomputes (bounded). *stored gets the marker
 * actually in the store afterwards, never a computed value that was not
 * written; B never decreases (LS-079). A log without index records is left
 * unchanged. TARN_ESESSION if the lease's session has ended. */
int tarn_soft_trim(tarn_meta *m, tarn_lease *lease, uint64_t through, uint64_t *stored);

/* Hard trim of the lease's log to X (LS-081): X > B is refused (TARN_EINVAL);
 * removes the index records ending at or below X with DeleteRange(P(L),
 * K(L,0,0), K(L,X,MAX)), the upper bound lowered to the last index record's
 * key so that record always stays. *removed (may be NULL) gets the count. */
int tarn_hard_trim(tarn_meta *m, tarn_lease *lease, uint64_t x, size_t *removed);

#ifdef __cplusplus
}
#endif
#endif
