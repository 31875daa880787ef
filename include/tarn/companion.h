/* tarn — companion files: the .index file beside each compacted Parquet file
 * (spec "Companion files", LS-060 … LS-065).
 *
 * The file is one gzip stream:
 *   block*      [int32 BE N][N bytes: JSON array of row objects]
 *   sentinel    int32 BE 0x7FFFFFFF
 *   offset map  [int32 BE N][N bytes: JSON object "<start offset>": row number]
 * Row object: {"metadata": Base64(LakehouseEntryMetadata), "offset": "<decimal>"}.
 *
 * Like Ursa, the writer flushes a block as soon as it holds block_rows rows,
 * and close() always flushes the pending block: when the row count is a
 * multiple of block_rows (zero included) the last block is the empty array
 * "[]" (N = 2). Every other block holds at least one row (LS-061).
 *
 * The reader is strict where a lenient reading could pick a wrong row: row
 * offsets are canonical decimals, strictly increasing, and no entry overlaps
 * the next; every offset-map key is a canonical decimal naming a row with that
 * offset; duplicate JSON keys are refused. Metadata must be padded standard
 * Base64 (no whitespace); like Java's decoder it does not refuse non-zero
 * unused bits in the last character. Unknown protobuf fields are skipped. */
#ifndef TARN_COMPANION_H
#define TARN_COMPANION_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ursa's ursaIndexFileWriterMaxBufferedRecords. */
#define TARN_COMPANION_BLOCK_ROWS 10000
/* The default cap on the decompressed stream a reader accepts (a guard
 * against decompression bombs). */
#define TARN_COMPANION_MAX_STREAM ((size_t)1 << 30)
/* The sentinel that ends the blocks. */
#define TARN_COMPANION_SENTINEL 0x7FFFFFFFu

/* An entry's header as its row records it (EntryHeader, spec names in comments). */
typedef struct tarn_entry_header {
  int64_t offset;          /* offset: the entry's start offset */
  int32_t record_count;    /* numberOfMessages */
  int64_t timestamp_ms;    /* writtenTimestamp */
  int32_t entry_size;      /* entrySize: payload bytes */
  int64_t cumulative_size; /* cumulativeSize */
} tarn_entry_header;

/* ---- writing ------------------------------------------------------------ */

typedef struct tarn_companion_writer tarn_companion_writer;

enum {
  /* Write the uncompressed stream instead of gzip (tests, inspection). */
  TARN_COMPANION_UNCOMPRESSED = 1
};

/* Starts a companion that appends to out. block_rows 0 means
 * TARN_COMPANION_BLOCK_ROWS. Compressed output is produced as rows arrive;
 * the writer holds at most one block's rows uncompressed. */
int tarn_companion_writer_open(tarn_companion_writer **w, tarn_buf *out, size_t block_rows,
                               int flags);
/* Adds the next row. Offsets must be strictly increasing and the header's
 * counts and sizes non-negative (record_count > 0); TARN_EINVAL otherwise. */
int tarn_companion_writer_add(tarn_companion_writer *w, const tarn_entry_header *h);
/* Flushes the last block, writes the sentinel and the offset map, finishes
 * the gzip stream, and frees the writer (also on failure). */
int tarn_companion_writer_close(tarn_companion_writer *w);
/* Abandons a writer (out keeps what was written so far). NULL is fine. */
void tarn_companion_writer_abort(tarn_companion_writer *w);

/* Encodes one row's metadata (LakehouseEntryMetadata with all five header
 * fields set and no schemaVersion) and appends it to out. */
int tarn_companion_encode_metadata(tarn_buf *out, const tarn_entry_header *h);

/* ---- reading ------------------------------------------------------------ */

typedef struct tarn_companion_block {
  size_t pos; /* byte offset of its length field in the decompressed stream */
  size_t len; /* N */
  size_t first_row;
  size_t rows;
} tarn_companion_block;

typedef struct tarn_companion_map_entry {
  int64_t offset; /* the key, as a number */
  size_t row;
} tarn_companion_map_entry;

typedef struct tarn_companion {
  tarn_entry_header *rows;
  size_t nrows;
  tarn_companion_block *blocks;
  size_t nblocks;
  tarn_companion_map_entry *map; /* sorted by offset, numerically (LS-065) */
  size_t nmap;
  size_t stream_len; /* bytes of the decompressed stream */
} tarn_companion;

/* Decodes a companion file (gzip bytes). max_stream caps the decompressed
 * size (0 = TARN_COMPANION_MAX_STREAM). Errors name "companion file" and the
 * byte offset in the decompressed stream ("companion file (gzip)" and the
 * compressed offset for faults of the gzip layer). On success free *c with
 * tarn_companion_free(). */
int tarn_companion_decode(tarn_companion *c, const void *gz, size_t len, size_t max_stream);
/* Decodes an already decompressed stream. */
int tarn_companion_decode_stream(tarn_companion *c, const void *stream, size_t len);
/* Decompresses a companion's gzip bytes into out (appended), at most max_stream
 * bytes (0 = TARN_COMPANION_MAX_STREAM). */
int tarn_companion_inflate(tarn_buf *out, const void *gz, size_t len, size_t max_stream);
void tarn_companion_free(tarn_companion *c);

/* The row of the entry that holds offset o (LS-065): the row under the key o,
 * else under the greatest start offset below o. TARN_ENOTFOUND when o lies
 * below every key (or the map is empty). */
int tarn_companion_floor(const tarn_companion *c, int64_t o, size_t *row);

#ifdef __cplusplus
}
#endif
#endif
