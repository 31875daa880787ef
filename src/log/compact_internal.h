/* What the compactor shares with the task layer and the reclaimer. */
#ifndef TARN_LOG_COMPACT_INTERNAL_H
#define TARN_LOG_COMPACT_INTERNAL_H

#include <jansson.h>

#include "tarn/compactor.h"

/* Decodes a range from a parsed JSON object (tasks embed ranges). */
int tarn__compact_range_from_json(json_t *o, tarn_compact_range *r);
tarn_meta *tarn__compactor_meta(tarn_compactor *c);
/* The version of the lock record l's acquisition created (task writes are
 * guarded by it). */
int64_t tarn__compact_lock_version(const tarn_compact_lock *l);

#endif
