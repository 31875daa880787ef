/* Test helper: the index records of a log, read straight from the store. */
#ifndef TU_INDEX_H
#define TU_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"

/* Scan(P(L), K(L,0,0), K(L,MAX,MAX)): every index record of log_id, in key
 * order; fails the test on a store error. Free with tarn_meta_recs_free. */
tarn_meta_recs tu_index_records(tarn_meta *m, uint64_t log_id);

/* The number of lease records of log_id (keys under /stream-write-leases/{L}/). */
size_t tu_lease_count(tarn_meta *m, uint64_t log_id);
/* The records of P(log_id) whose keys start with prefix. */
size_t tu_prefix_count(tarn_meta *m, uint64_t log_id, const char *prefix);

#endif
