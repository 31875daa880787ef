/* tarn — the reader: reads a log's entries by offset (spec "Reading", R1–R4).
 *
 * R1 reads B from the trim marker and starts at max(o, B); R2 finds the
 * covering record with Higher(P(L), K(L, o', MAX)) and checks its prefix; R3
 * dispatches on file_type alone; R4 returns whole entries, never one ending at
 * or below B. A RAW record is read by ranges: the object's head (the first
 * bytes, then the index region), then only the needed payloads of the log's
 * section — never the whole object.
 *
 * A PARQUET record is read through its file index, the compacted file in its
 * stream's directory (named by the catalog) and the file's companion.
 *
 * Caches: decoded index records (a lookup of an offset inside a cached record
 * skips R2) for index_ttl_ms, and decoded object heads up to head_cache_bytes.
 * The trim marker is read afresh for every record looked up, unless the
 * iterator began a read (tarn_log_iter_begin_read).
 *
 * Thread safety: a reader may be shared by threads; an iterator belongs to
 * one thread at a time. */
#ifndef TARN_READER_H
#define TARN_READER_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"
#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_reader_options {
  int64_t index_ttl_ms;    /* how long a cached index record is used (60000; 0 = no cache) */
  size_t index_cache_max;  /* records kept (4096) */
  size_t head_cache_bytes; /* bytes of decoded object heads kept (16 MiB; 0 = no cache) */
  size_t max_read_bytes;   /* the most payload bytes one range read fetches (8 MiB) */
  /* The entrySerDeType values of the bindings read from compacted files
   * (LS-059): by default the Kafka binding's KAFKA_BATCHED_RAW_PARQUET and
   * tarn's LAKESTREAM_RAW_PARQUET (tarn/compactor.h). */
  const char *const *serde_types;
  size_t n_serde_types;
  /* The Kafka binding's offsets (LS-099): TARN_READER_KAFKA_STORED returns
   * payloads as stored; TARN_READER_KAFKA_TOPICS, for the logs of Kafka
   * topics (the catalog tells, once per iterator), returns each entry's
   * batches with their offsets assigned from the entry's offset, written into
   * their offset fields (outside the CRCs), from WAL objects and compacted
   * files alike — what a Kafka client is given; an entry that is not record
   * batches then fails with TARN_ECORRUPT; TARN_READER_KAFKA_ALL does so for
   * every log. (STORED) */
  int kafka_offsets;
} tarn_reader_options;

enum { TARN_READER_KAFKA_STORED = 0, TARN_READER_KAFKA_TOPICS = 1, TARN_READER_KAFKA_ALL = 2 };

void tarn_reader_options_default(tarn_reader_options *o);

typedef struct tarn_reader tarn_reader;

/* Uses (does not own) the stores; compacted may be NULL (PARQUET records then
 * fail with TARN_EUNSUPPORTED). o may be NULL for the defaults; the strings
 * of o->serde_types must outlive the reader. */
int tarn_reader_open(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted,
                     const tarn_reader_options *o, tarn_reader **out);
void tarn_reader_close(tarn_reader *r);

/* B of log_id: the trim marker's value, or 0 when absent (R1). */
int tarn_reader_trim_offset(tarn_reader *r, uint64_t log_id, uint64_t *b);
/* The log's first offset: max(start of the first record above B, B) (LS-054);
 * TARN_ENOTFOUND when the log has no record above B. */
int tarn_reader_first_offset(tarn_reader *r, uint64_t log_id, uint64_t *first);
/* The end offset: the end of the last record (the next append's first offset),
 * 0 when the log has no records; *cumulative_size (may be NULL) its cumulative size. */
int tarn_reader_end_offset(tarn_reader *r, uint64_t log_id, uint64_t *end,
                           uint64_t *cumulative_size);

/* One entry as read. payload points into the iterator and stays valid until
 * the next call on it. */
typedef struct tarn_entry {
  uint64_t log_id;
  uint64_t offset; /* its first record's offset */
  uint32_t record_count;
  int64_t timestamp_ms; /* the index record's creation time */
  const uint8_t *payload;
  size_t payload_len;
  uint64_t cumulative_size; /* payload bytes of the log from offset 0 to this entry's end */
} tarn_entry;

typedef struct tarn_log_iter tarn_log_iter;

/* An iterator over log_id from offset `from`. Its first entry is the one that
 * holds max(from, B) and can start before it. */
int tarn_log_iter_open(tarn_reader *r, uint64_t log_id, uint64_t from, tarn_log_iter **out);
/* The next entry. At the end of the log: timeout_ms == 0 returns TARN_EEND;
 * otherwise it waits for new records (tailing, through the metadata store's
 * change notification) for up to timeout_ms (< 0: forever), then returns
 * TARN_ETIMEDOUT. */
int tarn_log_iter_next(tarn_log_iter *it, tarn_entry *e, int timeout_ms);
/* Where the next entry will start (the end of the last one returned). */
uint64_t tarn_log_iter_position(const tarn_log_iter *it);
/* The payload bytes the iterator holds (read ahead of its position, the
 * current entry), for callers that keep iterators and bound their memory. */
size_t tarn_log_iter_held_bytes(const tarn_log_iter *it);
/* The size of the entry the next call returns when the iterator knows it
 * without reading (its record's section is loaded): 0 and *size, else
 * TARN_ENOTFOUND (no message set). A hint for a caller deciding whether to
 * take one more entry (a Kafka Fetch within its byte budget); it may name an
 * entry the next call skips (at or below B). */
int tarn_log_iter_next_size(const tarn_log_iter *it, size_t *size);
/* From now on this iterator returns entries with Kafka offsets (LS-099), as
 * TARN_READER_KAFKA_ALL, whatever the reader's option. */
void tarn_log_iter_kafka_offsets(tarn_log_iter *it);
/* A new read begins at the iterator's position (spec "Reading": R1 once,
 * then R2-R4 record after record): B is read at the next record lookup and
 * not again until the next call (or an object found missing, LS-055), and a
 * lookup takes the log's next index records with it in one Scan (the
 * cache). For a caller that reads on, record after record (a Kafka Fetch of
 * a backlog); an iterator on which it is never called reads B for every
 * record and looks records up one by one. */
void tarn_log_iter_begin_read(tarn_log_iter *it);
void tarn_log_iter_close(tarn_log_iter *it);

typedef struct tarn_reader_stats {
  uint64_t index_lookups; /* R2 lookups in the metadata store */
  uint64_t index_hits;    /* lookups answered by the cache */
  uint64_t head_reads;    /* object heads read from storage */
  uint64_t head_hits;
  uint64_t range_reads; /* payload range reads */
  uint64_t bytes_read;  /* from the WAL root, heads and payloads */
} tarn_reader_stats;
void tarn_reader_stats_get(tarn_reader *r, tarn_reader_stats *s);

#ifdef __cplusplus
}
#endif
#endif
