/* What the compactor shares with the task layer and the reclaimer. */
#ifndef TARN_LOG_COMPACTOR_INTERNAL_H
#define TARN_LOG_COMPACTOR_INTERNAL_H

#include <jansson.h>

#include "tarn/compactor.h"

/* Decodes a range from a parsed JSON object (tasks embed ranges). */
int tarn__compact_range_from_json(json_t *o, tarn_compact_range *r);
tarn_meta *tarn__compactor_meta(tarn_compactor *c);
/* The version of the lock record l's acquisition created (task writes are
 * guarded by it). */
int64_t tarn__compact_lock_version(const tarn_compact_lock *l);
/* C5: moves log_id's progress record up to e under the guards g[0..ng), a
 * compare-and-set on the version read (never back: issue 31 item 11). 0 when
 * it holds e or more. */
int tarn__compact_progress_advance(tarn_meta *m, const tarn_meta_guard *g, size_t ng,
                                   uint64_t log_id, uint64_t e);

#endif
