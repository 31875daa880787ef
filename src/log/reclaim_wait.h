/* Waiting out the WAL reclaim passes that are under way (issue 30 item 6,
 * LS-085; docs/express.md "Absorb's late index put"). */
#ifndef TARN_LOG_RECLAIM_WAIT_H
#define TARN_LOG_RECLAIM_WAIT_H

#include <stdint.h>

#include "tarn/meta.h"

/* Returns once every reclaim pass that was alive when it was called has ended
 * (its live mark l-{id} is gone), or TARN_ETIMEDOUT after wait_ms. A pass
 * creates that mark before its scan of the index and deletes it last
 * (marks_begin, marks_end in reclaim.c), so afterwards no pass that scanned
 * the index before the call is deleting anything: an index record that
 * landed before the call protects its object from every pass still to come. */
int tarn__reclaim_wait_passes(tarn_meta *m, int64_t wait_ms);

#endif
