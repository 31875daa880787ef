/* LS-001: one format version per log (and per deployment). tarn writes format
 * version 3 only, so a log whose index records are legacy (versions 1 and 2,
 * spec Appendix C) takes no appends from it (docs/log.md, "Legacy
 * deployments"). */
#ifndef TARN_LOG_FORMAT_VERSION_H
#define TARN_LOG_FORMAT_VERSION_H

#include <stdint.h>

#include "tarn/meta.h"

/* 0 when log_id may take version 3 records: it has no index record, or its
 * last one is a version 3 EntryIndex (or undecodable: fsck's business, not
 * the writer's). TARN_EVERSION, naming the log, the record and its version,
 * when its last record is a legacy v1/v2 value. Called under the log's write
 * lease (A1), so no other writer of the log appends between the check and
 * the appends it admits. */
int tarn__log_check_writable_version(tarn_meta *m, uint64_t log_id);

/* The deployment's format version (LS-001 at the deployment, issue 31), a
 * record of one ASCII digit at TARN_DEPLOYMENT_ID_PARTITION /
 * TARN__FORMAT_VERSION_KEY, written create-only, never changed. A log with
 * no index record cannot tell its deployment's version; this record can, so
 * that the first append to an empty log of a legacy deployment is refused
 * too. */
#define TARN__FORMAT_VERSION_KEY "/format-version"

/* *ver: 1, 2 or 3, or 0 when none is recorded; TARN_ECORRUPT naming the
 * record, byte 0 and the fault for a value that is not one of those digits. */
int tarn__deployment_version_get(tarn_meta *m, int *ver);

/* Records the deployment's version unless one is: the highest legacy
 * version (1, 2) found as the last index record of any log of the catalog,
 * else 3 (a new deployment: no logs). *ver (may be NULL) gets the version
 * the store holds afterwards. One tarn__index_last per log, once in the
 * deployment's life (tarn_deployment_claim_roots calls it: `tarn init`,
 * `tarn serve`, `tarn compact`). */
int tarn__deployment_version_settle(tarn_meta *m, int *ver);

#endif
