/* Pieces shared by tarn's Parquet writer and reader: the footer and page
 * header in Thrift, and the page codecs. */
#ifndef TARN_FORMAT_PARQUET_INTERNAL_H
#define TARN_FORMAT_PARQUET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"
#include "tarn/parquet.h"

/* Decodes a FileMetaData of n bytes found at byte base of the file into m
 * (which the caller frees with tarn__pq_meta_free, also on failure), and
 * finds the payload column. Total; names "parquet footer" and the offset. */
int tarn__pq_meta_decode(const uint8_t *p, size_t n, uint64_t base, tarn_parquet_meta *m);
/* Appends the FileMetaData of m: its schema, row groups (one column chunk
 * each, the payload column's), key/value metadata and created_by. */
int tarn__pq_meta_encode(const tarn_parquet_meta *m, tarn_buf *b);
void tarn__pq_meta_free(tarn_parquet_meta *m);

/* A PageHeader, with the fields of whichever page header it holds. */
typedef struct tarn__pq_page_header {
  int32_t type;
  int32_t uncompressed_size;
  int32_t compressed_size;
  int32_t num_values;
  int32_t encoding;
  int32_t def_encoding; /* data page v1 */
  int32_t num_nulls;    /* data page v2, or the v1 page statistics' null_count; -1 when absent */
  int32_t num_rows;     /* data page v2 */
  int32_t def_len;      /* data page v2: bytes of definition levels */
  int32_t rep_len;      /* data page v2: bytes of repetition levels */
  int is_compressed;    /* data page v2 */
} tarn__pq_page_header;

/* Decodes a PageHeader from the n bytes at p (at byte base of the file);
 * *used gets its length. Checks that the page's own header is present. */
int tarn__pq_page_header_decode(const uint8_t *p, size_t n, uint64_t base, tarn__pq_page_header *h,
                                size_t *used);
int tarn__pq_page_header_encode(const tarn__pq_page_header *h, tarn_buf *b);

/* A writer's or reader's codec state, kept from page to page: a fresh zstd
 * context per page costs more than compressing a 1 MiB page (its tables are
 * allocated, page-faulted and cleared each time; docs/parquet.md "Where the
 * time goes"). Zero-initialised; tarn__pq_codec_ctx_free releases it. */
typedef struct tarn__pq_codec_ctx {
  void *zc; /* ZSTD_CCtx */
  void *zd; /* ZSTD_DCtx */
} tarn__pq_codec_ctx;
void tarn__pq_codec_ctx_free(tarn__pq_codec_ctx *cx);

/* Appends the compressed form of n bytes at src; cx may be NULL (a context
 * for this call only). The bytes are the same either way. */
int tarn__pq_compress_ctx(tarn__pq_codec_ctx *cx, int codec, int level, const uint8_t *src,
                          size_t n, tarn_buf *out);
int tarn__pq_compress(int codec, int level, const uint8_t *src, size_t n, tarn_buf *out);
/* Decompresses n bytes into exactly dst_len bytes at dst; anything else
 * (more or less output, a bad stream) fails naming the page at byte off. */
int tarn__pq_decompress_ctx(tarn__pq_codec_ctx *cx, int codec, const uint8_t *src, size_t n,
                            uint8_t *dst, size_t dst_len, uint64_t off);
int tarn__pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_len,
                        uint64_t off);
/* Decodes DELTA_BINARY_PACKED integers at p (at most max_count of them, each
 * a length in [0, 2^31-1]) into *out (malloc'd), *count of them, using *used bytes. */
int tarn__pq_delta_lengths(const uint8_t *p, size_t len, uint64_t page, size_t max_count,
                           uint32_t **out, size_t *count, size_t *used);

/* True for the codecs tarn reads. */
int tarn__pq_codec_known(int codec);

#endif
