/* tarn — offset index values: the EntryIndex message of format version 3 (spec
 * "Offset index values", tables §3.5) and the legacy v1/v2 strings (Appendix C).
 *
 * Builders write exactly the fields Ursa writes, in field order 1..11, so the
 * bytes match the spec's examples; the decoder applies the reader's checks. */
#ifndef TARN_ENTRYINDEX_H
#define TARN_ENTRYINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"
#include "tarn/fileindex.h"
#include "tarn/wal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TARN_FILE_RAW = 0, TARN_FILE_PARQUET = 1 };      /* FileType */
enum { TARN_INDEX_NORMAL = 0, TARN_INDEX_COMPACT = 1 }; /* IndexType */
enum { TARN_COMPRESSION_NONE = 0, TARN_COMPRESSION_FASTPFOR = 1, TARN_COMPRESSION_ZSTD = 2 };

typedef struct tarn_extra_data {
  char *key; /* NULL when absent (only in structures handed to the encoder) */
  char *value;
} tarn_extra_data;

/* A decoded EntryIndex. Optional fields have has_* flags; fields the decoder
 * requires (version, file_type, message_count, entry_size_bytes, entry_count)
 * are always set after a successful decode. */
typedef struct tarn_entry_index {
  int32_t version;
  char *location;    /* NULL when absent (allowed for PARQUET only) */
  int32_t file_type; /* TARN_FILE_RAW or TARN_FILE_PARQUET */
  int has_index_type;
  int32_t index_type; /* informative only: never decides how to read (LS-028) */
  int32_t message_count;
  int64_t entry_size_bytes;
  int has_file_size;
  int64_t file_size;
  int has_offset_in_file;
  int64_t offset_in_file;
  int32_t entry_count;
  /* entry_offsets (field 10) */
  int has_entry_offsets;
  int has_compression_type;
  int32_t compression_type;
  int has_uncompressed_size;
  int32_t uncompressed_size;
  uint8_t *compressed_payload; /* NULL when absent */
  size_t compressed_payload_len;
  uint32_t *boundaries; /* the decoded array A, entry_count values; NULL when absent */
  size_t n_boundaries;
  /* extraData (field 11) */
  tarn_extra_data *extra;
  size_t n_extra;
  const char *file_index; /* the CompactedObjectFileIndex value (Base64) within extra[], or NULL */
} tarn_entry_index;

/* The fields of a RAW record (LS-026), the value a writer publishes in step A3. */
typedef struct tarn_raw_record {
  const char *location;       /* the WAL object's name, relative to the WAL root */
  int single_section;         /* the object has one log section: index_type COMPACT, else NORMAL */
  int64_t message_count;      /* sum of the section's record counts; = boundaries[n-1] */
  int64_t entry_size_bytes;   /* sum of the section's payload sizes */
  int64_t file_size;          /* the payload-region size of the whole object (§7.4) */
  const uint32_t *boundaries; /* A: entry_count strictly increasing values (LS-033) */
  size_t entry_count;
} tarn_raw_record;

/* The fields of a PARQUET record for the range [s, e) (LS-027). */
typedef struct tarn_parquet_record {
  const char *location; /* one compacted file's name; NULL = the first file's */
  int64_t s, e;         /* message_count = e - s */
  int64_t c_s, c_e;     /* entry_size_bytes = c_e - c_s */
  int64_t file_size;    /* Ursa writes the same as entry_size_bytes */
  const tarn_file_index_entry *files;
  size_t n_files;
} tarn_parquet_record;

/* Warnings a builder may report without failing. */
#define TARN_EI_WARN_SIZE_2_31 1u /* LS-032: entry_size_bytes >= 2^31 */

/* Appends the RAW EntryIndex: version 3, location, file_type RAW (written as 0),
 * index_type, message_count, entry_size_bytes, file_size, offset_in_file -1,
 * entry_count, and entry_offsets {FastPFOR, 4n, words} iff entry_count > 1. */
int tarn_entry_index_build_raw(const tarn_raw_record *r, tarn_buf *out);
/* The RAW record of section i of a finished builder whose object is named
 * location (the value A3 publishes for it), appended to out. */
int tarn_entry_index_build_raw_section(const tarn_wal_builder *b, size_t i, const char *location,
                                       tarn_buf *out);

/* Appends the PARQUET EntryIndex: index_type COMPACT, offset_in_file 0,
 * entry_count 1, one extraData pair CompactedObjectFileIndex = Base64 of the
 * file index (validated: LS-066, LS-013). *warnings (may be NULL) gets
 * TARN_EI_WARN_SIZE_2_31 when entry_size_bytes >= 2^31 (LS-032). */
int tarn_entry_index_build_parquet(const tarn_parquet_record *r, tarn_buf *out, unsigned *warnings);

/* Decodes an index value of version 3 with the reader's checks: version 3
 * (TARN_EVERSION otherwise, LS-002); file_type RAW or PARQUET; message_count
 * >= 1, entry_count >= 1, entry_size_bytes >= 0; location for RAW; every
 * ExtraData with key and value (LS-029), keys distinct (LS-030); entry_offsets,
 * when present, FastPFOR and decoding to entry_count strictly increasing values
 * ending at message_count; a PARQUET record without CompactedObjectFileIndex is
 * refused with TARN_EUNSUPPORTED (LS-031). Errors name the byte offset. */
int tarn_entry_index_decode(const uint8_t *p, size_t len, tarn_entry_index *out);
void tarn_entry_index_free(tarn_entry_index *ei);

/* Appends the protobuf encoding of the fields present in ei, in order 1..11
 * (compressed_payload is written as stored; boundaries are not consulted). */
int tarn_entry_index_encode(const tarn_entry_index *ei, tarn_buf *out);

/* How to read the record's entries, from file_type alone (LS-028):
 * TARN_FILE_RAW (from the WAL object) or TARN_FILE_PARQUET (through the file
 * index); a negative error for anything else. */
int tarn_entry_index_read_kind(const tarn_entry_index *ei);

/* ---- legacy index values (Appendix C) ---- */

typedef struct tarn_legacy_index_value {
  int version; /* 1 or 2 */
  int64_t message_count;
  int64_t entry_size_bytes;
  char *location;
  int64_t entry_id;
  int has_file_type; /* version 2 only */
  int32_t file_type; /* TARN_FILE_RAW or TARN_FILE_PARQUET */
} tarn_legacy_index_value;

/* Parses "{message_count:020d}-{entry_size_bytes:020d}-{location}-{entry_id}"
 * (v1) or "...-{entry_id}-{RAW|PARQUET}" (v2), splitting at the last '-'. */
int tarn_legacy_index_value_parse(const uint8_t *p, size_t len, tarn_legacy_index_value *out);
void tarn_legacy_index_value_free(tarn_legacy_index_value *v);
/* Appends the legacy string of v (v->version 1 or 2). */
int tarn_legacy_index_value_encode(const tarn_legacy_index_value *v, tarn_buf *out);

/* 3 when the value begins 08 03; 1 or 2 when it begins with an ASCII digit
 * (told apart by the trailing field); TARN_ECORRUPT otherwise. */
int tarn_index_value_detect_version(const uint8_t *p, size_t len);

#ifdef __cplusplus
}
#endif
#endif
