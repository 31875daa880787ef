/* Ephemeral create-only records of one acquisition (the compaction lock, the
 * write lease) whose creates may land late.
 *
 * A create that reports an unknown outcome may land after its caller has
 * given up (a request held in flight; etcd applying one after the client's
 * deadline): an ephemeral record of the caller's own live session that no
 * one holds and no one releases, blocking the log's compaction (the lock,
 * tarn-sim seed 10516) or its deletion's drain (a lease, LS-046) for as long
 * as the process lives. Two rules make a late landing harmless (issue 12):
 * - an unknown outcome with an empty read-back is settled by creating again
 *   with the same value: a late landing of the first then fails its
 *   create-only condition, or a read-back finds it as ours;
 * - a value whose create stays undecided, or whose record may be created
 *   again after the release by a copy still in flight, is remembered in the
 *   handle (store/meta_abandoned.h), and a record found with such a value is
 *   an orphan of ours: deleted by version.
 * Values must be unique to one acquisition (a random token). */
#ifndef TARN_LOG_EPHEMERAL_H
#define TARN_LOG_EPHEMERAL_H

#include <stdint.h>

#include "tarn/meta.h"

/* Creates (part, key) = val as an ephemeral record. 0: ours, *version set;
 * TARN_EEXIST: another holder's record is there; any other error: not
 * acquired (undecided outcomes abandoned). *in_flight is set when a create
 * had an unknown outcome. */
int tarn__ephemeral_create(tarn_meta *m, const char *part, const char *key, const char *val,
                           int64_t *version, int *in_flight);
/* After a release by version: abandons val when a copy of its create may
 * still land (in_flight) or when the release failed (the record may stay). */
void tarn__ephemeral_released(tarn_meta *m, const char *part, const char *key, const char *val,
                              int in_flight, int failed);
/* Deletes, by version, every record of part under prefix whose value this
 * handle abandoned. */
int tarn__ephemeral_sweep(tarn_meta *m, const char *part, const char *prefix);

#endif
