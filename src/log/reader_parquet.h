/* Reading a PARQUET record (spec "Reading a PARQUET record", LS-067): the
 * file index, the file in the stream's directory with its entrySerDeType
 * checked (LS-059), the companion's offset map (LS-065), then the rows. */
#ifndef TARN_LOG_READER_PARQUET_H
#define TARN_LOG_READER_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "log/read_cache.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"

typedef struct tarn__pq_cursor tarn__pq_cursor;

/* Opens rec (a PARQUET record of log rec->log_id for [start, end)) at offset
 * o (start <= o < end): the entry that holds o comes first. serdes lists the
 * entrySerDeType values accepted. TARN_ENOTFOUND when a file or companion is
 * missing (the caller looks the record up again, LS-055). */
int tarn__pq_open(tarn_meta *meta, tarn_objstore *compacted, const char *const *serdes,
                  size_t n_serdes, const tarn__rec *rec, uint64_t o, tarn__pq_cursor **out);
/* The next entry of the record (its timestamp from its row, LS-064);
 * TARN_EEND after the record's last entry. e->payload is valid until the next
 * call. */
int tarn__pq_next(tarn__pq_cursor *c, tarn_entry *e);
void tarn__pq_close(tarn__pq_cursor *c);

#endif
