/* tarn — the compactor (spec "Compaction", C1–C5; "Compacted objects").
 *
 * A compaction of log L rewrites the entries of a run of RAW records [s, e)
 * into Parquet files and companions in the stream's directory of the
 * compacted root, then replaces the records by one PARQUET record:
 *
 *   tarn_compact_plan      C1: choose a range (reads only)
 *   tarn_compact_write     C2: write the files (object storage only)
 *   tarn_compact_install   C3–C4 under a write lease, then C5 (metadata only)
 *
 * Each step is a plain function call: no threads, no sleeping, time from the
 * library's one clock (which the simulator replaces), so a simulator can
 * drive and interleave them. Index updates
 * of one log are serialised by the per-log compaction lock (LS-074), an
 * ephemeral record that the caller holds across C3–C5 (tarn_compact_lock).
 *
 * tarn_compact_once does all steps for one log in the caller's thread.
 * Scheduling over many workers is in tarn/tasks.h; reclamation in
 * tarn/reclaim.h. See docs/compaction.md. */
#ifndef TARN_COMPACTOR_H
#define TARN_COMPACTOR_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"
#include "tarn/fileindex.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/parquet.h"
#include "tarn/token_bucket.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The metadata-store partition of tarn's compaction records (tasks, locks). */
#define TARN_COMPACTION_PARTITION "tarn-compaction"

/* A stream's files get tarn's own identifiers (TARN_PARQUET_TARN_SERDE,
 * tarn/parquet.h); a stream whose properties name a Kafka topic
 * (lakestream.kafka.topic.name) gets the Kafka binding's; the stream
 * properties TARN_PROP_COMPACTION_SERDE and TARN_PROP_COMPACTION_RECORD
 * (tarn/parquet.h, included here) override either. */

/* Called with the payload bytes C2 is about to write; may wait (the token
 * bucket does), or fail to abort C2 (a negative TARN_E*). */
typedef int (*tarn_throttle_fn)(void *ctx, uint64_t bytes);

/* The token bucket (tarn_token_bucket_throttle is a tarn_throttle_fn):
 * tarn/token_bucket.h. */

/* LS-032: a range's payload, the PARQUET record's entry_size_bytes, stays
 * below 2^31 (Appendix E); max_range_bytes may be at most this. */
#define TARN_COMPACT_RANGE_BYTES_MAX 2147483647u

typedef struct tarn_compactor_options {
  uint64_t max_range_bytes;    /* a range closes at this much payload (256 MiB; at most
                                  TARN_COMPACT_RANGE_BYTES_MAX) */
  int64_t max_age_ms;          /* ... or when its oldest entry is this old (180000) */
  uint64_t max_file_bytes;     /* payload bytes per Parquet file before the next one (128 MiB) */
  int codec;                   /* Parquet codec (TARN_PARQUET_ZSTD) */
  size_t companion_block_rows; /* 0: TARN_COMPANION_BLOCK_ROWS */
  const char *serde_type;      /* NULL: per stream (see above) */
  const char *record_name;     /* NULL: per stream */
  int install_attempts;        /* C3–C4 attempts in one call of install (5) */
  tarn_throttle_fn throttle;   /* NULL: no rate limit */
  void *throttle_ctx;
  /* Progress of C2 for a progress bar: bytes written of total. May be NULL. */
  void (*progress)(void *ctx, uint64_t done, uint64_t total);
  void *progress_ctx;
  /* Helper threads compressing the next Parquet page while C2 reads the WAL
   * and writes the current one (1; 0: none). The bytes written and the order
   * of every store call are the same either way (docs/compaction.md). */
  int compress_threads;
} tarn_compactor_options;

void tarn_compactor_options_default(tarn_compactor_options *o);

/* One file of a range, as the file index names it. */
typedef struct tarn_compact_file {
  char *name; /* relative to the stream directory, ends in .parquet */
  int64_t last_offset;
  uint64_t rows;
  uint64_t size; /* bytes of the Parquet file */
} tarn_compact_file;

/* A compaction of log_id over [s, e). */
typedef struct tarn_compact_range {
  uint64_t log_id;
  uint64_t s, e;      /* C1 */
  uint64_t c_s, c_e;  /* cumulative sizes at s and e: K(L, e, c_e) is R_k */
  uint64_t n_records; /* RAW records replaced */
  uint64_t bytes;     /* payload bytes of the range */
  int64_t oldest_ms;  /* creation time of the first record */
  uint64_t trim;      /* B when planned: entries ending at or below it are left out (LS-077) */
  char *dir;          /* "{namespace}/{stream name}/" */
  tarn_compact_file *files; /* after C2 */
  size_t n_files;
  /* C2's intent (LS-084): the 16 hex digits that start the random part of
   * every file name of the range; "" before C2. Removed by install. */
  char intent[17];
} tarn_compact_range;

void tarn_compact_range_free(tarn_compact_range *r);

/* JSON of a range (for task records): {"log":..,"s":..,"e":..,"c_s":..,"c_e":..,
 * "records":..,"bytes":..,"oldest_ms":..,"trim":..,"dir":"..","files":[{"name":..,
 * "last_offset":..,"rows":..,"size":..}], "intent":".."}; "intent" only after C2
 * (optional when decoding). The decoder is total. */
int tarn_compact_range_encode(const tarn_compact_range *r, tarn_buf *out);
int tarn_compact_range_decode(const uint8_t *p, size_t len, tarn_compact_range *out);

typedef struct tarn_compactor tarn_compactor;

/* Uses (does not own) the metadata store, the WAL root and the compacted root.
 * o may be NULL for the defaults. */
int tarn_compactor_open(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted,
                        const tarn_compactor_options *o, tarn_compactor **out);
void tarn_compactor_close(tarn_compactor *c);

/* C1 (LS-068, LS-075): the first run of RAW records of log_id above B,
 * starting at 0 or an earlier record's end, ending at a RAW record's end,
 * never crossing a PARQUET record or a gap, closed at max_range_bytes. Ready
 * when it reached max_range_bytes or its oldest entry is max_age_ms old, or
 * always when force. TARN_ENOTFOUND (with *out zeroed) when there is nothing
 * ready; TARN_EBUSY when an interrupted compaction needs tarn_compact_repair.
 * The log must belong to a catalog stream (its directory). */
int tarn_compact_plan(tarn_compactor *c, uint64_t log_id, int force, tarn_compact_range *out);

/* C2 (LS-012 … LS-014, LS-056, LS-058, LS-063, LS-066, LS-076, LS-077):
 * first writes an intent naming the files it may install (LS-084; the
 * reclaimer keeps them while the caller holds the log's lock), then reads the
 * range's entries from the WAL, writes Parquet files and companions under
 * fresh names in r->dir, and fills r->files and r->intent. A failure removes
 * the intent and leaves at most orphan files (tarn/reclaim.h). */
int tarn_compact_write(tarn_compactor *c, tarn_compact_range *r);

/* The PARQUET EntryIndex value of a written range (deterministic). */
int tarn_compact_value(const tarn_compact_range *r, tarn_buf *out);

/* ---- the per-log compaction lock (LS-074) -------------------------------- */

typedef struct tarn_compact_lock tarn_compact_lock;
/* CreateIfAbsent of the ephemeral record /locks/{L:020d} in
 * TARN_COMPACTION_PARTITION, holding owner and a random token (by which a
 * create whose reply was lost finds its own record). TARN_EEXIST when another
 * holds it. */
int tarn_compact_lock_acquire(tarn_meta *m, uint64_t log_id, const char *owner,
                              tarn_compact_lock **out);
/* Deletes the record (if still ours; a failed Delete is retried) and frees.
 * NULL allowed. */
int tarn_compact_lock_release(tarn_compact_lock *l);

/* Outcomes of install. */
enum {
  TARN_INSTALL_DONE = 0, /* C3 (or its skip), C4 and C5 completed */
  TARN_INSTALL_STALE = 1 /* C1 no longer holds, or a file of the range is gone, and
                            C3 never took effect: nothing was changed; the range's
                            files are orphans */
};

/* C3–C5 under a write lease acquired before each attempt (LS-073), with the
 * caller holding the log's compaction lock. First checks whether C3 already
 * took effect (the value under K(L, e, c_e) is this range's); if not, that
 * every record in (s, e] is still RAW and K(L, e, c_e) exists or the range is
 * at or below B (else *outcome = STALE). Then Get K(L,e,c_e) and Put the value
 * if it exists (LS-070) — but only once every file and companion of the range
 * was found to exist (else STALE) — DeleteRange K(L,s+1,0)..K(L,e-1,MAX) (LS-071), and
 * writes the progress record (C5, LS-072). After C3 took effect it repeats
 * C3–C4 up to install_attempts times (LS-078); TARN_EFENCED when the log is
 * fenced (deleted), TARN_ESESSION when the session ended (LS-049): the caller
 * retries later with the same range (a task does). Once done or stale (or
 * fenced), the range's intent is removed. */
int tarn_compact_install(tarn_compactor *c, const tarn_compact_range *r, int *outcome);

/* Finishes compactions of log_id that died between C3 and C4 (LS-078): a
 * PARQUET record that overlaps the RAW records before it gets its C4
 * (DeleteRange over those RAW records only, under a lease) and C5. The
 * caller holds the log's lock. tarn_compact_plan returns TARN_EBUSY while
 * such a record exists. *repaired (may be NULL) = 1 when one was finished. */
int tarn_compact_repair(tarn_compactor *c, uint64_t log_id, int *repaired);

/* Repair, then plan, write and install one range of log_id, holding the lock. force as in
 * plan. *did (may be NULL) gets 1 when a range was installed. TARN_EEXIST
 * when another compactor holds the log's lock. */
int tarn_compact_once(tarn_compactor *c, uint64_t log_id, int force, tarn_compact_range *done,
                      int *did);

/* ---- progress and lag ---------------------------------------------------- */

/* C5: tarn's progress record /compacted-through/{L} in P(L): the first
 * uncompacted offset e of the last installed range (not Ursa's e + 1), ASCII
 * decimal. *e = 0 when absent. */
int tarn_compact_progress_read(tarn_meta *m, uint64_t log_id, uint64_t *e);

typedef struct tarn_compact_lag {
  int64_t oldest_ms;    /* creation time of the first RAW record above B; 0: none */
  int64_t lag_ms;       /* now - oldest_ms, 0 when nothing is uncompacted */
  uint64_t raw_records; /* RAW records above B */
  uint64_t raw_bytes;   /* their payload bytes */
} tarn_compact_lag;

/* The compaction lag of log_id: the age of its oldest uncompacted entry. */
int tarn_compact_lag_read(tarn_meta *m, uint64_t log_id, int64_t now_ms, tarn_compact_lag *out);

#ifdef __cplusplus
}
#endif
#endif
