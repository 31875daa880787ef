/* Test helper: compacted files written by hand, as a compactor would. */
#ifndef TU_COMPACTED_H
#define TU_COMPACTED_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/companion.h"
#include "tarn/objstore.h"

/* Writes dir/name.parquet holding the payloads of entries first..last, and
 * its companion dir/name.index with the rows of hs[first..last_row] (last_row
 * < last plants a companion that disagrees with its file); each row's
 * timestamp is hs[i]'s plus ts_step*i. Fails the test on any error. */
void tu_write_compacted(tarn_objstore *cs, const char *dir, const char *name,
                        const tarn_entry_header *hs, char **payloads, size_t first, size_t last,
                        size_t last_row, int64_t ts_step);

#endif
