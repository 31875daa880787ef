/* tarn — reclamation (spec "Deleting compacted objects", "Reclaiming WAL
 * objects"; LS-082 … LS-086).
 *
 * One pass, tarn_reclaim_pass, does three things:
 *
 *  1. trimmed compacted files: for each log, the files of PARQUET records
 *     ending at or below B are deleted with their companions (LS-082), and
 *     only then are those records hard-trimmed to B under a write lease
 *     (LS-083), the last record always kept;
 *  2. WAL objects: the whole WAL root is listed (whatever the names) and every
 *     log's index is scanned; an object no record names gets a "first seen
 *     unreferenced" record /wal/{name} in TARN_RECLAIM_PARTITION, and is
 *     deleted only once wal_grace_ms have passed since then, on the metadata
 *     store's clock (tarn_meta_clock: no node's clock shortens it), and a second scan
 *     right before deleting still finds no record naming it (LS-085, LS-086);
 *     an object found named again loses its record;
 *  3. orphan compacted files (of failed compactions, of deleted logs): files
 *     under the compacted root that no index record and no open task names
 *     get the same treatment under /compacted/{name} with orphan_grace_ms
 *     (LS-084: a file an open task or a live compaction intent — see
 *     docs/compaction.md, "Intents" — can still install is never an orphan).
 *
 * Logs scanned: every ID the catalog has allocated (1 .. counter-1) plus
 * opt->extra_logs, and, before a WAL object is deleted, every log with a
 * section in that object's head: a record naming the object can only be a
 * record of such a log, so logs the catalog does not know (written with
 * `tarn append --log L`) are covered too. Orphan compacted files (step 3) are
 * reclaimed only in a deployment with a catalog.
 *
 * With dry_run nothing is deleted or written; what would go is reported,
 * and counted in the stats as if deleted.
 *
 * Sizes: every deletion is counted in bytes without a request of its own.
 * WAL objects and orphans are sized by the listing that found them (objects
 * are written once, so the size cannot change); the files of trimmed records
 * by a listing of the range of names that holds them (a HEAD only for names a
 * bounded listing did not reach). An object already gone counts 0 bytes. */
#ifndef TARN_RECLAIM_H
#define TARN_RECLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"
#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_RECLAIM_PARTITION "tarn-reclaim"

typedef struct tarn_reclaim_options {
  int dry_run;
  int64_t wal_grace_ms;       /* after first seen unreferenced, on the store's clock (600000:
                                 > the reader's 60 s index-cache TTL). Must exceed the
                                 writers' limits (tarn/timing.h): processes check that at
                                 start (tarn_timing_check_process), and a pass with
                                 wal set refuses it too (TARN_EINVAL) when the store
                                 holds a timing record (issue 31 item 11). */
  int64_t orphan_grace_ms;    /* compacted orphans (3600000) */
  int64_t intent_grace_ms;    /* an intent whose lock is gone still protects its files this
                                 long after first seen so (600000): the longest a
                                 compactor's write may land after its session ended */
  int trimmed_files;          /* do step 1 (1) */
  int wal;                    /* do step 2 (1) */
  int orphans;                /* do step 3 (1) */
  const uint64_t *extra_logs; /* logs not in the catalog to scan too */
  size_t n_extra_logs;
  /* Called before each deletion (or, with dry_run, for each that would be
   * done): kind "wal", "compacted", "trimmed" or "hard-trim", the object's
   * size in bytes (0 for "hard-trim", whose name is "log L to B"); may be NULL. */
  void (*report)(void *ctx, const char *kind, const char *name, uint64_t bytes);
  void *report_ctx;
  /* Polled between pages, logs and deletions (may be NULL): nonzero stops the
   * pass with TARN_ECLOSED, its marks left as they say (issue 31 item 7:
   * `tarn serve`'s shutdown does not wait for a pass). */
  int (*stop)(void *ctx);
  void *stop_ctx;
} tarn_reclaim_options;
void tarn_reclaim_options_default(tarn_reclaim_options *o);

/* The *_deleted counts and *_bytes are of the objects deleted or, with
 * dry_run, that would be deleted; records_hard_trimmed stays 0 in a dry run.
 * Objects and bytes go by the labels of tarn_reclaimed_objects_total and
 * tarn_reclaimed_bytes_total: wal_* root="wal" reason="wal", compacted_*
 * root="compacted" reason="compacted", trimmed_files_* root="compacted"
 * reason="trimmed" (files and companions of records trimmed below B). */
typedef struct tarn_reclaim_stats {
  uint64_t logs_scanned;
  uint64_t index_records;
  uint64_t wal_listed, wal_unreferenced, wal_deleted, wal_deleted_bytes;
  uint64_t compacted_listed, compacted_orphans, compacted_deleted, compacted_deleted_bytes;
  uint64_t trimmed_files_deleted, trimmed_files_deleted_bytes, records_hard_trimmed;
  /* temporary files of killed puts removed (file://: ".tmp-" files untouched
   * for the root's grace, wal_grace_ms or orphan_grace_ms; not in a dry run) */
  uint64_t temp_files_removed;
} tarn_reclaim_stats;

/* One pass over the deployment's stores. stats may be NULL. */
int tarn_reclaim_pass(tarn_meta *m, tarn_objstore *wal, tarn_objstore *compacted,
                      const tarn_reclaim_options *o, tarn_reclaim_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
