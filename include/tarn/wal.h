/* tarn — WAL objects: the zero-copy decoder (format version 3 and the legacy
 * layout of versions 1 and 2) and the version 3 builder.
 *
 * Version 3 layout (spec "WAL objects"):
 *   index_length int32 BE | index_version int32 BE = 3 | log sections... | payload region
 *   log section: log_id int64 BE, entry_count varint32,
 *                entry_count × (payload_offset, payload_size, record_count) varint32
 * payload_offset is relative to the payload region, which starts at byte 4 + index_length.
 *
 * Legacy layout (spec Appendix C): index_length int64 BE, then 32-byte tuples
 * (log_id, entry_id, payload_offset, payload_length), then the payload region. */
#ifndef TARN_WAL_H
#define TARN_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_WAL_VERSION 3 /* the index_version this build writes and reads */
#define TARN_WAL_LEGACY 1  /* versions 1 and 2: one layout, the object does not say which */
#define TARN_WAL_VARINT32_MAX 2147483647u          /* LS-019: a varint32 holds 0 .. 2^31-1 */
#define TARN_WAL_LOG_ID_MAX 9223372036854775807ull /* a log ID must fit an index key */
/* Bytes to read from the start of an object before tarn_wal_head_length() can
 * tell how many head bytes (length field and index region) to fetch. */
#define TARN_WAL_PROBE_LEN 8

/* One entry of a log section. */
typedef struct tarn_wal_entry {
  const uint8_t *payload;  /* points into the object; NULL after tarn_wal_decode_index() */
  uint64_t payload_offset; /* relative to the payload region (both layouts) */
  uint64_t payload_size;
  uint64_t payload_pos;  /* absolute byte offset of the payload in the object */
  uint32_t record_count; /* >= 1 in v3; 0 in legacy objects, whose index records carry it */
  uint64_t entry_id;     /* legacy only: the object-wide entry number; v3: index in the section */
  size_t index_pos;      /* byte offset of the entry's index fields in the object */
} tarn_wal_entry;

/* One log's section; entries in the order of their offsets (LS-021). */
typedef struct tarn_wal_section {
  uint64_t log_id;
  size_t entry_count;
  tarn_wal_entry *entries;
  uint64_t record_total;  /* Σ record_count: the d1 of the log's sequenced put */
  uint64_t payload_total; /* Σ payload_size: the d2 */
  size_t index_pos;       /* byte offset of the section's log_id in the object */
} tarn_wal_section;

/* A decoded object: a view into the caller's bytes, which must outlive it. */
typedef struct tarn_wal {
  int version;            /* TARN_WAL_VERSION or TARN_WAL_LEGACY */
  uint32_t index_version; /* v3: 3; legacy: 0 (the layout has none) */
  uint64_t index_length;  /* bytes of the index region */
  uint64_t object_size;
  uint64_t payload_region_offset; /* 4 + index_length (v3), 8 + index_length (legacy) */
  uint64_t payload_region_size;
  int has_payloads; /* 0 when decoded from the head only */
  size_t section_count;
  tarn_wal_section *sections; /* in object order */
  size_t entry_total;
  /* private */
  tarn_wal_entry *entry_store_;
  struct tarn_wal_section **by_log_; /* sections sorted by log_id */
} tarn_wal;

/* Tells the layout from the first bytes (n >= TARN_WAL_PROBE_LEN, or the whole
 * object when shorter): returns TARN_WAL_VERSION, TARN_WAL_LEGACY, or a
 * negative error (TARN_EVERSION for a v3-shaped object whose index_version is
 * not 3; TARN_ECORRUPT for bytes that are neither). */
int tarn_wal_detect_version(const uint8_t *p, size_t n);

/* From the first TARN_WAL_PROBE_LEN bytes and the object's size, the number of
 * head bytes (length field + index region) that tarn_wal_decode_index() needs. */
int tarn_wal_head_length(const uint8_t *p, size_t n, uint64_t object_size, uint64_t *head_len);

/* Decodes a whole object of either layout into *out (entries point into obj).
 * On failure *out is left empty and needs no tarn_wal_free(). */
int tarn_wal_decode(const uint8_t *obj, size_t len, tarn_wal *out);

/* Decodes from the head only (the first head_len bytes, at least as many as
 * tarn_wal_head_length() gave) and the total object size: the same view with
 * payload == NULL, so a reader can then fetch one section's payloads by range. */
int tarn_wal_decode_index(const uint8_t *head, size_t head_len, uint64_t object_size,
                          tarn_wal *out);

/* The section of log_id, or NULL (LS-023: by log_id, whatever the section order). */
const tarn_wal_section *tarn_wal_find(const tarn_wal *w, uint64_t log_id);

void tarn_wal_free(tarn_wal *w);

/* ---- Building version 3 objects ------------------------------------------ */

/* Per-section totals of a built object, for the index put and the RAW EntryIndex. */
typedef struct tarn_wal_built_section {
  uint64_t log_id;
  size_t entry_count;
  uint64_t record_total;  /* d1 = message_count */
  uint64_t payload_total; /* d2 = entry_size_bytes */
  uint64_t *bounds;       /* A[i] = Σ record_count of entries 0..i (entry_offsets) */
} tarn_wal_built_section;

typedef struct tarn_wal_builder_ent_ {
  const uint8_t *payload;
  uint32_t size;
  uint32_t record_count;
  uint32_t offset; /* in the payload region */
  size_t section;
  size_t next; /* the section's next entry, or SIZE_MAX */
} tarn_wal_builder_ent_;

/* Collects entries by pointer; the payload bytes must stay valid until
 * tarn_wal_builder_finish() has copied them (once). */
typedef struct tarn_wal_builder {
  size_t section_count;
  tarn_wal_built_section *sections; /* in order of each log's first entry */
  uint64_t payload_region_size;     /* valid after finish */
  uint64_t index_length;            /* valid after finish */
  /* private */
  tarn_wal_builder_ent_ *ents_;
  size_t nents_, cap_ents_, cap_secs_;
  size_t *heads_, *tails_;
  uint64_t *bounds_;
  size_t cap_bounds_;
  size_t last_sec_;
  uint64_t payload_len_;
} tarn_wal_builder;

void tarn_wal_builder_init(tarn_wal_builder *b);
/* Adds an entry of log_id. Entries of one log keep the order they are added in
 * (LS-021); logs may interleave. TARN_EINVAL for record_count 0 (LS-016) or a
 * log_id above 2^63-1; TARN_ERANGE when a payload_offset or size would not fit
 * a varint32 (LS-019). */
int tarn_wal_builder_add(tarn_wal_builder *b, uint64_t log_id, const void *payload, size_t len,
                         uint32_t record_count);
/* Appends the v3 object (LS-017) to out: sections in order of first appearance,
 * payloads concatenated in the order added. Fills sections[].bounds and the
 * totals. The builder stays valid for reading its sections until reset/free. */
int tarn_wal_builder_finish(tarn_wal_builder *b, tarn_buf *out);
/* Forgets all entries and sections, keeping memory. */
void tarn_wal_builder_reset(tarn_wal_builder *b);
void tarn_wal_builder_free(tarn_wal_builder *b);

#ifdef __cplusplus
}
#endif
#endif
