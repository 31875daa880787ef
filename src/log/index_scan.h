/* Walking a log's index records in key order, decoded (shared by the
 * compactor and the reclaimer). */
#ifndef TARN_LOG_INDEX_SCAN_H
#define TARN_LOG_INDEX_SCAN_H

#include <stdint.h>

#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/meta.h"

/* One decoded index record. */
typedef struct tarn__ixrec {
  const tarn_meta_rec *rec;
  tarn_key key;
  uint64_t start;             /* end - message_count */
  int version;                /* 3, or 1/2 for legacy values */
  int file_type;              /* TARN_FILE_RAW or TARN_FILE_PARQUET */
  tarn_entry_index ei;        /* version 3 only */
  tarn_legacy_index_value lv; /* legacy only */
} tarn__ixrec;

/* Calls fn for every index record of log_id with a key in [a, b) (NULL: the
 * log's first / past its last key), in key order, pages of 512. fn returns 0
 * to go on, 1 to stop (the scan then returns 0), or an error (returned). A
 * record whose value does not decode is an error naming its key. */
int tarn__index_scan(tarn_meta *m, uint64_t log_id, const char *a, const char *b,
                     int (*fn)(void *ctx, const tarn__ixrec *r), void *ctx);

/* The last index record of log_id, Floor(P(L), K(L, MAX, MAX)) with the
 * prefix check, into *out (free it with tarn_meta_rec_free): TARN_ENOTFOUND
 * when the log has none (*out then holds nothing). */
int tarn__index_last(tarn_meta *m, uint64_t log_id, tarn_meta_rec *out);

#endif
