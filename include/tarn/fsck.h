/* tarn — fsck: checks a deployment's invariants (docs/fsck.md).
 *
 * For every log of every stream in the catalog:
 *   - the index records are adjacent and disjoint, and each key's cumulative
 *     size minus its entry_size_bytes is the previous key's cumulative size
 *     ("Logs, entries and offsets"), allowing the spec's two exceptions: a
 *     PARQUET record overlapping the records it replaces (between C3 and C4;
 *     a warning) and a gap at or below B (after a hard trim racing C3);
 *   - every index value decodes;
 *   - every RAW record's WAL object exists and holds the log's section, with
 *     the record's entry count, record counts, payload sizes and file_size;
 *   - every PARQUET record's file index covers its range; each file and its
 *     companion exist; companion rows are contiguous, agree with the file
 *     index's last offsets, the record's cumulative size and the Parquet
 *     file's row count and payload sizes;
 *   - every entry at or above B reads through the reader (tarn/reader.h).
 * Objects of records that end at or below B may be gone (reclaimed): not a
 * fault. */
#ifndef TARN_FSCK_H
#define TARN_FSCK_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"
#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_fsck_fault {
  uint64_t log_id;
  uint64_t offset; /* the record's start offset, or the entry's offset */
  char kind[24];   /* "key", "value", "gap", "overlap", "cumulative", "wal-missing",
                      "wal-object", "wal-section", "file-index", "compacted-missing",
                      "parquet", "companion", "read", "index-double",
                      "version-mixed" (LS-001) */
  char *key;       /* the index key concerned, or NULL */
  char *object;    /* the WAL object or compacted file concerned, or NULL */
  char *message;
} tarn_fsck_fault;

typedef struct tarn_fsck_report {
  size_t streams, logs, records;
  size_t compacted_records; /* of which PARQUET */
  size_t compacted_files;   /* compacted files named by PARQUET records, checked */
  size_t entries_read;
  uint64_t bytes_read;
  size_t warnings; /* allowed anomalies (a C3–C4 overlap) */
  tarn_fsck_fault *faults;
  size_t n_faults;
} tarn_fsck_report;

typedef struct tarn_fsck_options {
  int skip_read; /* 1: do not read the entries through the reader */
  /* Called before each log is checked (may be NULL). */
  void (*progress)(void *arg, size_t log_index, size_t n_logs, uint64_t log_id);
  void *progress_arg;
  /* Called for each fault as it is found (may be NULL). */
  void (*on_fault)(void *arg, const tarn_fsck_fault *f);
  void *fault_arg;
} tarn_fsck_options;

/* Checks every log of the catalog. Returns 0 when the check ran to the end
 * (faults, if any, are in *rep; free it with tarn_fsck_report_free), or a
 * negative error when the stores could not be read (*rep then holds no
 * faults and needs no free; on_fault may have seen some). o may be NULL. */
int tarn_fsck_run(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted,
                  const tarn_fsck_options *o, tarn_fsck_report *rep);

/* Checks one log; ns/name locate its compacted files ("{ns}/{name}/"). Adds
 * to *rep (which the caller zeroes first). */
int tarn_fsck_log(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted, uint64_t log_id,
                  const char *ns, const char *name, const tarn_fsck_options *o,
                  tarn_fsck_report *rep);

void tarn_fsck_report_free(tarn_fsck_report *rep);

#ifdef __cplusplus
}
#endif
#endif
