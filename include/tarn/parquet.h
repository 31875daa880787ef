/* tarn — the Parquet files of compacted objects.
 *
 * A compacted file holds one row per entry in one optional BYTE_ARRAY column,
 * payload, under the schema `message <record name> { optional binary payload; }`
 * (LS-056, LS-057), with the footer key/value metadata of the spec's table
 * (entrySerDeType, rowMetadata, schemaType, parquet.avro.schema,
 * writer.model.name).
 *
 * The writer streams: it holds one page and the footer's row-group list, and
 * hands bytes to a caller's sink as pages fill. The reader opens a file from
 * its footer through byte-range reads, reads only the column chunk of the row
 * group it is in, one page at a time, and reads what other writers produce:
 * PLAIN and dictionary encodings, data pages v1 and v2, codecs UNCOMPRESSED,
 * SNAPPY, GZIP, ZSTD and LZ4_RAW, any number of row groups and pages, and a
 * required or optional payload column (other columns are ignored). */
#ifndef TARN_PARQUET_H
#define TARN_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parquet's CompressionCodec values. */
enum {
  TARN_PARQUET_UNCOMPRESSED = 0,
  TARN_PARQUET_SNAPPY = 1,
  TARN_PARQUET_GZIP = 2,
  TARN_PARQUET_LZ4 = 5, /* Hadoop-framed LZ4: read as unsupported */
  TARN_PARQUET_ZSTD = 6,
  TARN_PARQUET_LZ4_RAW = 7
};

/* Parquet's physical Type, FieldRepetitionType, PageType and Encoding values. */
enum { TARN_PARQUET_BYTE_ARRAY = 6 };
enum { TARN_PARQUET_REQUIRED = 0, TARN_PARQUET_OPTIONAL = 1, TARN_PARQUET_REPEATED = 2 };
enum {
  TARN_PARQUET_DATA_PAGE = 0,
  TARN_PARQUET_INDEX_PAGE = 1,
  TARN_PARQUET_DICTIONARY_PAGE = 2,
  TARN_PARQUET_DATA_PAGE_V2 = 3
};
enum {
  TARN_PARQUET_PLAIN = 0,
  TARN_PARQUET_PLAIN_DICTIONARY = 2,
  TARN_PARQUET_RLE = 3,
  TARN_PARQUET_RLE_DICTIONARY = 8
};

/* The Kafka binding's identifiers (tables-and-vectors.md §3.10). */
#define TARN_PARQUET_KAFKA_SERDE "KAFKA_BATCHED_RAW_PARQUET"
#define TARN_PARQUET_KAFKA_RECORD "KafkaMessage"
/* tarn's own identifiers, for streams that are not Kafka topics: a row holds
 * an entry's payload unchanged, like the Kafka binding's (the compactor
 * writes them, the reader accepts either pair). */
#define TARN_PARQUET_TARN_SERDE "LAKESTREAM_RAW_PARQUET"
#define TARN_PARQUET_TARN_RECORD "LakestreamEntry"
/* The stream properties that override a stream's pair above for the files
 * the compactor writes (tarn/compactor.h). Here, beside the identifiers they
 * name, so that the Kafka rule (tarn_kafka_stream_is_kafka, log/kafka_topics.c)
 * reads them without the compactor's header (issue 32: no two-file cycle). */
#define TARN_PROP_COMPACTION_SERDE "tarn.compaction.serde-type"
#define TARN_PROP_COMPACTION_RECORD "tarn.compaction.record-name"

/* Sink for the writer: writes all n bytes or fails (0 or a negative TARN_E*). */
typedef int (*tarn_parquet_write_fn)(void *ctx, const void *p, size_t n);
/* Source for the reader: reads exactly n bytes at off (0 or a negative TARN_E*). */
typedef int (*tarn_parquet_read_at_fn)(void *ctx, uint64_t off, void *buf, size_t n);

/* ---- metadata, as the footer gives it --------------------------------- */

typedef struct tarn_parquet_kv {
  char *key;
  char *value; /* NULL when the footer has no value */
} tarn_parquet_kv;

typedef struct tarn_parquet_schema_element {
  char *name;
  int32_t type;           /* -1 for a group */
  int32_t repetition;     /* -1 when absent (the root) */
  int32_t num_children;   /* 0 for a leaf */
  int32_t converted_type; /* -1 when absent */
} tarn_parquet_schema_element;

/* The payload column's chunk in one row group. */
typedef struct tarn_parquet_chunk {
  int32_t type;
  int32_t codec;
  int64_t num_values;
  int64_t total_uncompressed_size;
  int64_t total_compressed_size;
  int64_t data_page_offset;
  int64_t dictionary_page_offset; /* -1 when absent */
  int64_t null_count;             /* -1 when the statistics do not give it */
  int32_t encodings[8];
  size_t n_encodings; /* at most 8 are kept */
} tarn_parquet_chunk;

typedef struct tarn_parquet_row_group {
  int64_t num_rows;
  int64_t total_byte_size;
  tarn_parquet_chunk chunk; /* the payload column */
} tarn_parquet_row_group;

typedef struct tarn_parquet_meta {
  int32_t version;
  int64_t num_rows;
  char *created_by; /* NULL when absent */
  tarn_parquet_schema_element *schema;
  size_t n_schema;
  tarn_parquet_row_group *row_groups;
  size_t n_row_groups;
  tarn_parquet_kv *kv;
  size_t n_kv;
  /* Where the payload column is: its leaf index among the file's columns,
   * and its maximum definition level (0 required, 1 optional). */
  size_t payload_column;
  int payload_max_def;
} tarn_parquet_meta;

/* ---- writer ------------------------------------------------------------ */

typedef struct tarn_parquet_writer_opts {
  const char *record_name;      /* the binding's Avro record name: [A-Za-z_][A-Za-z0-9_]* */
  const char *entry_serde_type; /* the binding's entrySerDeType */
  const char *row_metadata;     /* the companion's file name; NULL leaves the key out */
  int codec;                    /* TARN_PARQUET_UNCOMPRESSED, SNAPPY, GZIP, ZSTD or LZ4_RAW */
  int level;                    /* compression level for GZIP and ZSTD; 0 = the codec's default */
  uint64_t row_group_size;      /* bytes of page data per row group; 0 = 128 MiB */
  uint32_t page_size;           /* bytes of values per page; 0 = 1 MiB */
  int threads;                  /* > 0: a helper thread compresses page N while the caller fills
                                   N+1 (same bytes; the sink is still called on the caller's thread) */
} tarn_parquet_writer_opts;

typedef struct tarn_parquet_writer tarn_parquet_writer;

/* Starts a file: writes the leading magic through write(ctx, ...). */
int tarn_parquet_writer_open(tarn_parquet_writer **out, const tarn_parquet_writer_opts *opts,
                             tarn_parquet_write_fn write, void *ctx);
/* Appends a row whose payload is the n bytes at p (p may be NULL when n is 0). LS-058 */
int tarn_parquet_writer_add(tarn_parquet_writer *w, const void *p, size_t n);
/* Appends a row whose payload is null. */
int tarn_parquet_writer_add_null(tarn_parquet_writer *w);
/* Writes the last pages and the footer; *size (if not NULL) gets the file's size. */
int tarn_parquet_writer_finish(tarn_parquet_writer *w, uint64_t *size);
/* Releases the writer, finished or not. */
void tarn_parquet_writer_close(tarn_parquet_writer *w);

/* ---- reader ------------------------------------------------------------ */

typedef struct tarn_parquet_reader_opts {
  /* The accepted entrySerDeType identifiers (LS-059); NULL/0 accepts any file,
   * with or without the key (for inspection). */
  const char *const *serde_types;
  size_t n_serde_types;
  size_t max_page_size;   /* largest page (compressed or not) the reader allocates; 0 = 256 MiB */
  size_t max_footer_size; /* 0 = 64 MiB */
} tarn_parquet_reader_opts;

typedef struct tarn_parquet_reader tarn_parquet_reader;

/* Opens a file of file_size bytes: reads the last 8 bytes, then the footer,
 * and checks the magic, the schema and the entrySerDeType. */
int tarn_parquet_open(tarn_parquet_reader **out, tarn_parquet_read_at_fn read_at, void *ctx,
                      uint64_t file_size, const tarn_parquet_reader_opts *opts);
void tarn_parquet_close(tarn_parquet_reader *r);
const tarn_parquet_meta *tarn_parquet_get_meta(const tarn_parquet_reader *r);
/* The value of a footer key, or NULL. */
const char *tarn_parquet_kv_get(const tarn_parquet_reader *r, const char *key);

/* Positions the reader before row `row` (0 <= row <= num_rows), skipping whole
 * row groups and pages without reading them. */
int tarn_parquet_seek(tarn_parquet_reader *r, uint64_t row);
/* Reads the next row: 0 with *p and *n set (pointing into the reader; valid until
 * the next call), *is_null set for a null payload; TARN_EEND after the last row. */
int tarn_parquet_next(tarn_parquet_reader *r, const uint8_t **p, size_t *n, int *is_null);

/* One page header of a column chunk, for inspection. */
typedef struct tarn_parquet_page_info {
  uint64_t offset; /* of the page header */
  uint32_t header_size;
  int32_t type;
  int32_t uncompressed_size;
  int32_t compressed_size;
  int32_t num_values;
  int32_t encoding;
  int32_t num_nulls; /* v2 pages; -1 otherwise */
  int is_compressed; /* v2 pages; 1 otherwise */
} tarn_parquet_page_info;

/* Calls fn for each page header of row group g's payload chunk, in order. */
int tarn_parquet_pages(tarn_parquet_reader *r, size_t g,
                       int (*fn)(void *ctx, const tarn_parquet_page_info *page), void *ctx);

/* Parquet's names for its enum values ("ZSTD", "RLE_DICTIONARY", "BYTE_ARRAY",
 * "OPTIONAL", "DATA_PAGE_V2"); "unknown" for values outside the enum. */
const char *tarn_parquet_codec_name(int codec);
const char *tarn_parquet_encoding_name(int encoding);
const char *tarn_parquet_type_name(int type);
const char *tarn_parquet_repetition_name(int repetition);
const char *tarn_parquet_page_type_name(int page_type);

#ifdef __cplusplus
}
#endif
#endif
