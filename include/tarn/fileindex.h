/* tarn — the file index of a PARQUET record (spec "File index", tables §3.8).
 *
 * Binary form: per file, in offset order, last_offset (int64 BE), name_length
 * (int32 BE), name (UTF-8); no count, the entries run to the end. The record
 * carries it as standard Base64 (with padding) in the extraData pair whose key
 * is CompactedObjectFileIndex. */
#ifndef TARN_FILEINDEX_H
#define TARN_FILEINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_FILE_INDEX_KEY "CompactedObjectFileIndex"

typedef struct tarn_file_index_entry {
  int64_t last_offset; /* the offset of the last record the file holds (inclusive) */
  char *name;          /* relative to the stream's compacted directory */
} tarn_file_index_entry;

typedef struct tarn_file_index {
  tarn_file_index_entry *files;
  size_t n;
} tarn_file_index;

/* Decodes the binary form. Refuses: truncated fields, name_length out of the
 * bytes left, empty names, names with NUL, negative or non-ascending
 * last_offsets, duplicate names (LS-066), and an empty index. */
int tarn_file_index_decode(const uint8_t *p, size_t len, tarn_file_index *out);
/* Decodes the Base64 text (strict RFC 4648 with padding), then the binary form. */
int tarn_file_index_decode_base64(const char *b64, size_t len, tarn_file_index *out);
void tarn_file_index_free(tarn_file_index *fi);

/* Appends the binary form of files[0..n) without checks (for tests and tools). */
int tarn_file_index_encode(const tarn_file_index_entry *files, size_t n, tarn_buf *out);

/* The compactor's builder: checks that the files cover [s, e) — ascending
 * last_offsets, the first at or above s, the last = e-1, each name once
 * (LS-066) — and that each name ends in .parquet and contains it nowhere else
 * (LS-013), then appends the Base64 text (no NUL) to out. */
int tarn_file_index_build_base64(const tarn_file_index_entry *files, size_t n, int64_t s, int64_t e,
                                 tarn_buf *out);

/* The file that holds offset o of a record starting at s: the first file whose
 * last_offset is at or above o. *base is the file's first offset: the previous
 * file's last_offset + 1, or s for the first file. TARN_ENOTFOUND for o < s or
 * o beyond the last file. */
int tarn_file_index_lookup(const tarn_file_index *fi, int64_t s, int64_t o, size_t *idx,
                           int64_t *base);

#ifdef __cplusplus
}
#endif
#endif
