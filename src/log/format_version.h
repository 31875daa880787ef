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

#endif
