/* tarn's Parquet writer and reader: round trips with every codec, many row
 * groups and pages, null, empty and large payloads, seeking, the
 * entrySerDeType check, hand-built dictionary and v2 pages, and hostile files. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet_internal.h"
#include "format/thrift.h"
#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/parquet.h"
#include "util/bytes.h"

static int buf_sink(void *ctx, const void *p, size_t n) {
  return tarn_buf_append((tarn_buf *)ctx, p, n);
}

typedef struct mem_src {
  const uint8_t *p;
  size_t n;
  size_t reads, bytes; /* what the reader asked for */
} mem_src;

static int mem_read(void *ctx, uint64_t off, void *buf, size_t n) {
  mem_src *m = ctx;
  if (off > m->n || n > m->n - off)
    return TARN_EIO;
  memcpy(buf, m->p + off, n);
  m->reads++;
  m->bytes += n;
  return 0;
}

/* A row of the test data: len == SIZE_MAX means null. */
typedef struct row {
  uint8_t *p;
  size_t n;
} row;

static row *make_rows(size_t count, uint64_t seed, size_t max_len) {
  row *rows = calloc(count, sizeof *rows);
  assert_non_null(rows);
  uint64_t s = seed;
  for (size_t i = 0; i < count; i++) {
    uint64_t k = tu_rand(&s);
    if (k % 11 == 0) {
      rows[i].n = SIZE_MAX;
      continue;
    }
    rows[i].n = k % 13 == 0 ? 0 : (size_t)(tu_rand(&s) % max_len);
    rows[i].p = malloc(rows[i].n + 1);
    for (size_t j = 0; j < rows[i].n; j++)
      rows[i].p[j] = (uint8_t)(tu_rand(&s) % 7); /* compressible, but not trivially */
  }
  return rows;
}

static void free_rows(row *rows, size_t count) {
  for (size_t i = 0; i < count; i++)
    free(rows[i].p);
  free(rows);
}

static const tarn_parquet_writer_opts kafka_opts = {
    TARN_PARQUET_KAFKA_RECORD, TARN_PARQUET_KAFKA_SERDE, "ursa-1.index", 0, 0, 0, 0, 0};

static void write_file(tarn_buf *out, const tarn_parquet_writer_opts *o, const row *rows,
                       size_t count) {
  tarn_parquet_writer *w;
  assert_int_equal(tarn_parquet_writer_open(&w, o, buf_sink, out), 0);
  for (size_t i = 0; i < count; i++) {
    if (rows[i].n == SIZE_MAX)
      assert_int_equal(tarn_parquet_writer_add_null(w), 0);
    else
      assert_int_equal(tarn_parquet_writer_add(w, rows[i].p, rows[i].n), 0);
  }
  uint64_t size = 0;
  assert_int_equal(tarn_parquet_writer_finish(w, &size), 0);
  assert_int_equal(size, out->len);
  tarn_parquet_writer_close(w);
}

static const char *const kafka_types[] = {TARN_PARQUET_KAFKA_SERDE};
static const tarn_parquet_reader_opts kafka_read = {kafka_types, 1, 0, 0};

static tarn_parquet_reader *open_mem(mem_src *src, const tarn_buf *file) {
  memset(src, 0, sizeof *src);
  src->p = file->data, src->n = file->len;
  tarn_parquet_reader *r = NULL;
  int rc = tarn_parquet_open(&r, mem_read, src, file->len, &kafka_read);
  if (rc)
    fail_msg("open: %s", tarn_errmsg());
  return r;
}

/* Reads rows from `from` to the end and compares them with the rows. LS-056, LS-058 */
static void expect_rows(tarn_parquet_reader *r, const row *rows, size_t from, size_t count) {
  for (size_t i = from; i < count; i++) {
    const uint8_t *p;
    size_t n;
    int is_null;
    int rc = tarn_parquet_next(r, &p, &n, &is_null);
    if (rc)
      fail_msg("row %zu: %s", i, tarn_errmsg());
    if (rows[i].n == SIZE_MAX) {
      assert_true(is_null);
    } else {
      assert_false(is_null);
      assert_int_equal(n, rows[i].n);
      if (n)
        assert_memory_equal(p, rows[i].p, n);
    }
  }
  const uint8_t *p;
  size_t n;
  int is_null;
  assert_int_equal(tarn_parquet_next(r, &p, &n, &is_null), TARN_EEND);
}

static int count_page(void *ctx, const tarn_parquet_page_info *pg) {
  (*(size_t *)ctx)++;
  assert_int_equal(pg->type, TARN_PARQUET_DATA_PAGE);
  return 0;
}

static void round_trip(int codec) {
  size_t count = 3000;
  row *rows = make_rows(count, 42 + (uint64_t)codec, 700);
  tarn_parquet_writer_opts o = kafka_opts;
  o.codec = codec;
  o.page_size = 4096;
  o.row_group_size = 64 * 1024;
  tarn_buf file = TARN_BUF_INIT;
  write_file(&file, &o, rows, count);

  mem_src src;
  tarn_parquet_reader *r = open_mem(&src, &file);
  const tarn_parquet_meta *m = tarn_parquet_get_meta(r);
  assert_int_equal(m->num_rows, count);
  assert_true(m->n_row_groups > 5);
  size_t pages = 0, nulls = 0;
  for (size_t g = 0; g < m->n_row_groups; g++) {
    assert_int_equal(m->row_groups[g].chunk.codec, codec);
    assert_int_equal(m->row_groups[g].chunk.num_values, m->row_groups[g].num_rows);
    nulls += (size_t)m->row_groups[g].chunk.null_count;
    assert_int_equal(tarn_parquet_pages(r, g, count_page, &pages), 0);
  }
  assert_true(pages > m->n_row_groups * 3);
  size_t want_nulls = 0;
  for (size_t i = 0; i < count; i++)
    want_nulls += rows[i].n == SIZE_MAX;
  assert_int_equal(nulls, want_nulls);
  expect_rows(r, rows, 0, count);

  /* Seek: every 97th row, the last row, and the end. */
  for (size_t i = 0; i < count; i += 97) {
    assert_int_equal(tarn_parquet_seek(r, i), 0);
    expect_rows(r, rows, i, count);
  }
  assert_int_equal(tarn_parquet_seek(r, count - 1), 0);
  expect_rows(r, rows, count - 1, count);
  assert_int_equal(tarn_parquet_seek(r, count), 0);
  expect_rows(r, rows, count, count);
  assert_int_equal(tarn_parquet_seek(r, count + 1), TARN_EINVAL);
  tarn_parquet_close(r);
  tarn_buf_free(&file);
  free_rows(rows, count);
}

static void round_trip_uncompressed(void **state) { round_trip(TARN_PARQUET_UNCOMPRESSED); }
static void round_trip_snappy(void **state) { round_trip(TARN_PARQUET_SNAPPY); }
static void round_trip_gzip(void **state) { round_trip(TARN_PARQUET_GZIP); }
static void round_trip_zstd(void **state) { round_trip(TARN_PARQUET_ZSTD); }
static void round_trip_lz4_raw(void **state) { round_trip(TARN_PARQUET_LZ4_RAW); }

/* Seeking skips whole row groups and pages: the reader reads far less than the file. */
static void seek_reads_only_what_it_needs(void **state) {
  size_t count = 4000;
  row *rows = make_rows(count, 7, 2000);
  tarn_parquet_writer_opts o = kafka_opts;
  o.page_size = 8192;
  o.row_group_size = 256 * 1024;
  tarn_buf file = TARN_BUF_INIT;
  write_file(&file, &o, rows, count);
  mem_src src;
  tarn_parquet_reader *r = open_mem(&src, &file);
  src.bytes = 0;
  assert_int_equal(tarn_parquet_seek(r, count - 3), 0);
  expect_rows(r, rows, count - 3, count);
  assert_true(src.bytes < file.len / 10);
  tarn_parquet_close(r);
  tarn_buf_free(&file);
  free_rows(rows, count);
}

/* The writer streams: pages reach the sink as they fill, long before finish,
 * and it keeps no copy of what it has handed over. */
static void writer_streams(void **state) {
  tarn_parquet_writer_opts o = kafka_opts;
  o.page_size = 4096;
  o.row_group_size = 64 * 1024;
  tarn_buf file = TARN_BUF_INIT;
  tarn_parquet_writer *w;
  assert_int_equal(tarn_parquet_writer_open(&w, &o, buf_sink, &file), 0);
  uint8_t payload[100];
  memset(payload, 0xab, sizeof payload);
  for (int i = 0; i < 10000; i++)
    assert_int_equal(tarn_parquet_writer_add(w, payload, sizeof payload), 0);
  assert_true(file.len > 10000 * 104 - 8192); /* all but the page being filled */
  size_t before = file.len;
  assert_int_equal(tarn_parquet_writer_finish(w, NULL), 0);
  assert_true(file.len > before);
  tarn_parquet_writer_close(w);
  tarn_buf_free(&file);
}

/* LS-057: the schema, and the footer's key/value metadata of the spec's table. */
static void schema_and_footer_keys(void **state) {
  row rows[3] = {{(uint8_t *)"a", 1}, {NULL, SIZE_MAX}, {(uint8_t *)"", 0}};
  tarn_buf file = TARN_BUF_INIT;
  write_file(&file, &kafka_opts, rows, 3);
  mem_src src;
  tarn_parquet_reader *r = open_mem(&src, &file);
  const tarn_parquet_meta *m = tarn_parquet_get_meta(r);
  assert_int_equal(m->n_schema, 2);
  assert_string_equal(m->schema[0].name, "KafkaMessage");
  assert_int_equal(m->schema[0].num_children, 1);
  assert_string_equal(m->schema[1].name, "payload");
  assert_int_equal(m->schema[1].type, TARN_PARQUET_BYTE_ARRAY);
  assert_int_equal(m->schema[1].repetition, TARN_PARQUET_OPTIONAL);
  assert_int_equal(m->payload_max_def, 1);
  assert_string_equal(tarn_parquet_kv_get(r, "entrySerDeType"), "KAFKA_BATCHED_RAW_PARQUET");
  assert_string_equal(tarn_parquet_kv_get(r, "rowMetadata"), "ursa-1.index");
  assert_string_equal(tarn_parquet_kv_get(r, "schemaType"), "avro");
  assert_string_equal(tarn_parquet_kv_get(r, "writer.model.name"), "avro");
  assert_string_equal(tarn_parquet_kv_get(r, "parquet.avro.schema"),
                      "{\"type\":\"record\",\"name\":\"KafkaMessage\",\"fields\":[{\"name\":"
                      "\"payload\",\"type\":[\"null\",\"bytes\"],\"default\":null}]}");
  assert_non_null(m->created_by);
  assert_memory_equal(m->created_by, "tarn version ", 13);
  assert_int_equal(m->n_row_groups, 1);
  assert_int_equal(m->row_groups[0].chunk.null_count, 1);
  /* The first bytes and the last four are the magic. */
  assert_memory_equal(file.data, "PAR1", 4);
  assert_memory_equal(file.data + file.len - 4, "PAR1", 4);
  expect_rows(r, rows, 0, 3);
  tarn_parquet_close(r);
  tarn_buf_free(&file);

  /* A bad record name is refused: it would not be an Avro name. */
  tarn_parquet_writer_opts o = kafka_opts;
  o.record_name = "Kafka\"Message";
  tarn_parquet_writer *w;
  assert_int_equal(tarn_parquet_writer_open(&w, &o, buf_sink, &file), TARN_EINVAL);
  o.record_name = "KafkaMessage";
  o.codec = 3; /* LZO */
  assert_int_equal(tarn_parquet_writer_open(&w, &o, buf_sink, &file), TARN_EINVAL);
  tarn_buf_free(&file);
}

/* An empty file (no rows) and a file of large payloads, each bigger than a page. */
static void empty_and_large(void **state) {
  tarn_buf file = TARN_BUF_INIT;
  write_file(&file, &kafka_opts, NULL, 0);
  mem_src src;
  tarn_parquet_reader *r = open_mem(&src, &file);
  assert_int_equal(tarn_parquet_get_meta(r)->num_rows, 0);
  assert_int_equal(tarn_parquet_get_meta(r)->n_row_groups, 0);
  expect_rows(r, NULL, 0, 0);
  tarn_parquet_close(r);
  tarn_buf_free(&file);

  row rows[4];
  uint64_t s = 9;
  size_t sizes[4] = {3u << 20, 5, (1u << 20) + 1, 2u << 20};
  for (int i = 0; i < 4; i++) {
    rows[i].n = sizes[i];
    rows[i].p = malloc(sizes[i]);
    for (size_t j = 0; j < sizes[i]; j++)
      rows[i].p[j] = (uint8_t)tu_rand(&s);
  }
  tarn_parquet_writer_opts o = kafka_opts;
  o.codec = TARN_PARQUET_ZSTD;
  o.row_group_size = 3u << 20;
  write_file(&file, &o, rows, 4);
  r = open_mem(&src, &file);
  assert_int_equal(tarn_parquet_get_meta(r)->n_row_groups, 3);
  expect_rows(r, rows, 0, 4);
  assert_int_equal(tarn_parquet_seek(r, 2), 0);
  expect_rows(r, rows, 2, 4);
  tarn_parquet_close(r);
  tarn_buf_free(&file);
  for (int i = 0; i < 4; i++)
    free(rows[i].p);
}

/* LS-059: a file whose entrySerDeType is not an accepted identifier is refused. */
static void serde_type_refused(void **state) {
  row rows[1] = {{(uint8_t *)"x", 1}};
  tarn_parquet_writer_opts o = kafka_opts;
  o.entry_serde_type = "KAFKA_PARQUET";
  tarn_buf file = TARN_BUF_INIT;
  write_file(&file, &o, rows, 1);
  mem_src src = {file.data, file.len, 0, 0};
  tarn_parquet_reader *r = NULL;
  assert_int_equal(tarn_parquet_open(&r, mem_read, &src, file.len, &kafka_read), TARN_EUNSUPPORTED);
  assert_null(r);
  assert_non_null(strstr(tarn_errmsg(), "entrySerDeType \"KAFKA_PARQUET\" is not a binding"));
  /* Accepted when the caller lists it, and when the caller checks nothing. */
  const char *const both[] = {TARN_PARQUET_KAFKA_SERDE, "KAFKA_PARQUET"};
  tarn_parquet_reader_opts ro = {both, 2, 0, 0};
  assert_int_equal(tarn_parquet_open(&r, mem_read, &src, file.len, &ro), 0);
  tarn_parquet_close(r);
  assert_int_equal(tarn_parquet_open(&r, mem_read, &src, file.len, NULL), 0);
  tarn_parquet_close(r);
  tarn_buf_free(&file);
  /* Case matters: the spec says reject, stricter than Ursa's equalsIgnoreCase. */
  o.entry_serde_type = "kafka_batched_raw_parquet";
  write_file(&file, &o, rows, 1);
  src = (mem_src){file.data, file.len, 0, 0};
  assert_int_equal(tarn_parquet_open(&r, mem_read, &src, file.len, &kafka_read), TARN_EUNSUPPORTED);
  tarn_buf_free(&file);
}

/* ---- hand-built files: other encodings and hostile input --------------- */

typedef struct builder {
  tarn_buf file;
  tarn_parquet_meta meta;
  tarn_parquet_schema_element schema[2];
  tarn_parquet_row_group groups[4];
} builder;

static void b_init(builder *b, int optional) {
  memset(b, 0, sizeof *b);
  b->schema[0] = (tarn_parquet_schema_element){"schema", -1, -1, 1, -1};
  b->schema[1] =
      (tarn_parquet_schema_element){"payload", TARN_PARQUET_BYTE_ARRAY, optional ? 1 : 0, 0, -1};
  b->meta.schema = b->schema;
  b->meta.n_schema = 2;
  b->meta.row_groups = b->groups;
  b->meta.version = 1;
  tarn_buf_append(&b->file, "PAR1", 4);
}

static void b_group(builder *b, int codec, int64_t rows) {
  tarn_parquet_row_group *g = &b->groups[b->meta.n_row_groups++];
  g->num_rows = rows;
  g->chunk.type = TARN_PARQUET_BYTE_ARRAY;
  g->chunk.codec = codec;
  g->chunk.num_values = rows;
  g->chunk.data_page_offset = -1;
  g->chunk.dictionary_page_offset = -1;
  g->chunk.null_count = -1;
  b->meta.num_rows += rows;
}

/* Appends a page: header h (sizes filled in from body unless set) and body. */
static void b_page(builder *b, tarn__pq_page_header h, const uint8_t *body, size_t n,
                   size_t uncompressed) {
  tarn_parquet_chunk *c = &b->groups[b->meta.n_row_groups - 1].chunk;
  if (h.type == TARN_PARQUET_DICTIONARY_PAGE)
    c->dictionary_page_offset = (int64_t)b->file.len;
  else if (c->data_page_offset < 0)
    c->data_page_offset = (int64_t)b->file.len;
  if (!h.compressed_size)
    h.compressed_size = (int32_t)n;
  if (!h.uncompressed_size)
    h.uncompressed_size = (int32_t)uncompressed;
  size_t before = b->file.len;
  assert_int_equal(tarn__pq_page_header_encode(&h, &b->file), 0);
  tarn_buf_append(&b->file, body, n);
  c->total_compressed_size += (int64_t)(b->file.len - before);
}

static void b_finish(builder *b) {
  tarn_buf foot = TARN_BUF_INIT;
  assert_int_equal(tarn__pq_meta_encode(&b->meta, &foot), 0);
  tarn_buf_append(&b->file, foot.data, foot.len);
  uint8_t len[4];
  tarn__st_le32(len, (uint32_t)foot.len);
  tarn_buf_append(&b->file, len, 4);
  tarn_buf_append(&b->file, "PAR1", 4);
  tarn_buf_free(&foot);
}

static int open_built(builder *b, tarn_parquet_reader **r, mem_src *src) {
  *src = (mem_src){b->file.data, b->file.len, 0, 0};
  tarn_parquet_reader_opts o = {NULL, 0, 1u << 20, 0};
  return tarn_parquet_open(r, mem_read, src, b->file.len, &o);
}

/* A file of one row group with the given pages (NULL-terminated), which
 * must fail to read with a message naming what. */
typedef struct page_spec {
  const tarn__pq_page_header *h;
  const uint8_t *body;
  size_t n, uncompressed;
} page_spec;

static void expect_bad(const tarn_buf *file, const char *what);

static void bad_group(int optional, int codec, int64_t rows, const page_spec *pages,
                      const char *what) {
  builder b;
  b_init(&b, optional);
  b_group(&b, codec, rows);
  for (; pages->h; pages++)
    b_page(&b, *pages->h, pages->body, pages->n, pages->uncompressed);
  b_finish(&b);
  expect_bad(&b.file, what);
  tarn_buf_free(&b.file);
}

static void put_plain(tarn_buf *b, const char *s) {
  uint8_t len[4];
  tarn__st_le32(len, (uint32_t)strlen(s));
  tarn_buf_append(b, len, 4);
  tarn_buf_append(b, s, strlen(s));
}

/* A dictionary page, then a v1 RLE_DICTIONARY page (bit-packed indices) and a
 * v2 page (levels outside the compressed values), in a snappy chunk; then a
 * required column in a second file. */
static void dictionary_and_v2_pages(void **state) {
  builder b;
  b_init(&b, 1);
  b_group(&b, TARN_PARQUET_SNAPPY, 7);
  tarn_buf raw = TARN_BUF_INIT, comp = TARN_BUF_INIT;
  put_plain(&raw, "zero");
  put_plain(&raw, "one");
  put_plain(&raw, "");
  assert_int_equal(tarn__pq_compress(TARN_PARQUET_SNAPPY, 0, raw.data, raw.len, &comp), 0);
  tarn__pq_page_header h = {.type = TARN_PARQUET_DICTIONARY_PAGE,
                            .num_values = 3,
                            .encoding = TARN_PARQUET_PLAIN_DICTIONARY};
  b_page(&b, h, comp.data, comp.len, raw.len);

  /* v1 page of 4 rows: levels 1,0,1,1 as one bit-packed group; indices 1,2,0 bit width 2. */
  tarn_buf_reset(&raw);
  tarn_buf_reset(&comp);
  static const uint8_t v1[] = {2, 0,    0,    0,   0x03, 0x0d, /* levels: len 2, 1 group, 0b1101 */
                               2, 0x03, 0x09, 0x00};           /* bw 2, 1 group: 1,2,0 */
  assert_int_equal(tarn__pq_compress(TARN_PARQUET_SNAPPY, 0, v1, sizeof v1, &comp), 0);
  h = (tarn__pq_page_header){.type = TARN_PARQUET_DATA_PAGE,
                             .num_values = 4,
                             .encoding = TARN_PARQUET_RLE_DICTIONARY,
                             .def_encoding = TARN_PARQUET_RLE,
                             .num_nulls = -1};
  b_page(&b, h, comp.data, comp.len, sizeof v1);

  /* v2 page of 3 rows: levels (RLE run of 2 ones, run of 1 zero) raw, PLAIN values compressed. */
  tarn_buf_reset(&raw);
  tarn_buf_reset(&comp);
  static const uint8_t lv[] = {0x04, 0x01, 0x02, 0x00};
  tarn_buf_append(&comp, lv, sizeof lv);
  put_plain(&raw, "v2-a");
  put_plain(&raw, "v2-b");
  assert_int_equal(tarn__pq_compress(TARN_PARQUET_SNAPPY, 0, raw.data, raw.len, &comp), 0);
  h = (tarn__pq_page_header){.type = TARN_PARQUET_DATA_PAGE_V2,
                             .num_values = 3,
                             .num_nulls = 1,
                             .num_rows = 3,
                             .encoding = TARN_PARQUET_PLAIN,
                             .def_len = 4,
                             .is_compressed = 1};
  b_page(&b, h, comp.data, comp.len, sizeof lv + raw.len);
  b_finish(&b);

  tarn_parquet_reader *r;
  mem_src src;
  if (open_built(&b, &r, &src))
    fail_msg("%s", tarn_errmsg());
  row want[7] = {{(uint8_t *)"one", 3},  {NULL, SIZE_MAX},       {(uint8_t *)"", 0},
                 {(uint8_t *)"zero", 4}, {(uint8_t *)"v2-a", 4}, {(uint8_t *)"v2-b", 4},
                 {NULL, SIZE_MAX}};
  expect_rows(r, want, 0, 7);
  assert_int_equal(tarn_parquet_seek(r, 5), 0);
  expect_rows(r, want, 5, 7);
  assert_int_equal(tarn_parquet_seek(r, 2), 0);
  expect_rows(r, want, 2, 7);
  tarn_parquet_close(r);
  tarn_buf_free(&b.file);

  /* A required column: no definition levels at all; an uncompressed v2 page. */
  b_init(&b, 0);
  b_group(&b, TARN_PARQUET_ZSTD, 2);
  tarn_buf_reset(&raw);
  put_plain(&raw, "r1");
  put_plain(&raw, "r2");
  h = (tarn__pq_page_header){.type = TARN_PARQUET_DATA_PAGE_V2,
                             .num_values = 2,
                             .num_rows = 2,
                             .encoding = TARN_PARQUET_PLAIN,
                             .is_compressed = 0};
  b_page(&b, h, raw.data, raw.len, raw.len);
  b_finish(&b);
  if (open_built(&b, &r, &src))
    fail_msg("%s", tarn_errmsg());
  assert_int_equal(tarn_parquet_get_meta(r)->payload_max_def, 0);
  row want2[2] = {{(uint8_t *)"r1", 2}, {(uint8_t *)"r2", 2}};
  expect_rows(r, want2, 0, 2);
  tarn_parquet_close(r);
  tarn_buf_free(&b.file);
  tarn_buf_free(&raw);
  tarn_buf_free(&comp);
}

/* Reads every row of a file, expecting a failure whose message names what. */
static void expect_bad(const tarn_buf *file, const char *what) {
  mem_src src = {file->data, file->len, 0, 0};
  tarn_parquet_reader_opts o = {NULL, 0, 1u << 20, 0};
  tarn_parquet_reader *r = NULL;
  int rc = tarn_parquet_open(&r, mem_read, &src, file->len, &o);
  while (rc == 0) {
    const uint8_t *p;
    size_t n;
    int is_null;
    rc = tarn_parquet_next(r, &p, &n, &is_null);
  }
  tarn_parquet_close(r);
  if (rc == TARN_EEND)
    fail_msg("a bad file (%s) read without error", what);
  if (!strstr(tarn_errmsg(), what))
    fail_msg("message \"%s\" does not name \"%s\"", tarn_errmsg(), what);
}

static void hostile_files(void **state) {
  size_t count = 200;
  row *rows = make_rows(count, 3, 300);
  tarn_parquet_writer_opts o = kafka_opts;
  o.codec = TARN_PARQUET_GZIP;
  o.page_size = 2000;
  o.row_group_size = 20000;
  tarn_buf file = TARN_BUF_INIT, bad = TARN_BUF_INIT;
  write_file(&file, &o, rows, count);

  /* Every truncation fails cleanly (mostly on the end magic). */
  for (size_t n = 0; n < file.len; n += n < 64 ? 1 : 37) {
    tarn_buf_reset(&bad);
    tarn_buf_append(&bad, file.data, n);
    expect_bad(&bad, "parquet");
  }
  /* Bad magic at either end. */
  tarn_buf_reset(&bad);
  tarn_buf_append(&bad, file.data, file.len);
  bad.data[1] = 'X';
  expect_bad(&bad, "parquet file: byte 0: no PAR1 magic at the start");
  bad.data[1] = 'A';
  bad.data[bad.len - 1] = 'X';
  expect_bad(&bad, "no PAR1 magic at the end");
  bad.data[bad.len - 1] = '1';
  /* Footer lengths that lie: past the file, and too short. */
  uint32_t flen = tarn__ld_le32(bad.data + bad.len - 8);
  tarn__st_le32(bad.data + bad.len - 8, (uint32_t)bad.len);
  expect_bad(&bad, "does not fit in a file");
  tarn__st_le32(bad.data + bad.len - 8, flen - 10);
  expect_bad(&bad, "parquet footer: byte");
  tarn__st_le32(bad.data + bad.len - 8, flen + 10);
  expect_bad(&bad, "parquet footer: byte");
  tarn_buf_free(&bad);
  tarn_buf_free(&file);
  free_rows(rows, count);
}

static void hostile_corruptions(void **state) {
  /* Flip every byte of a small file in turn: never a crash, and every
   * failure names the structure. */
  size_t count = 40;
  row *rows = make_rows(count, 5, 50);
  tarn_parquet_writer_opts o = kafka_opts;
  o.codec = TARN_PARQUET_SNAPPY;
  o.page_size = 300;
  tarn_buf file = TARN_BUF_INIT;
  write_file(&file, &o, rows, count);
  for (size_t i = 0; i < file.len; i++) {
    for (int flip = 1; flip < 256; flip <<= 3) {
      file.data[i] ^= (uint8_t)flip;
      mem_src src = {file.data, file.len, 0, 0};
      tarn_parquet_reader *r = NULL;
      int rc = tarn_parquet_open(&r, mem_read, &src, file.len, NULL);
      while (rc == 0) {
        const uint8_t *p;
        size_t n;
        int is_null;
        rc = tarn_parquet_next(r, &p, &n, &is_null);
      }
      tarn_parquet_close(r);
      if (rc != TARN_EEND && !strstr(tarn_errmsg(), "parquet"))
        fail_msg("byte %zu: message \"%s\"", i, tarn_errmsg());
      file.data[i] ^= (uint8_t)flip;
    }
  }
  tarn_buf_free(&file);
  free_rows(rows, count);
}

static void nesting_bomb_footer(void **state) {
  /* FileMetaData whose field 1 is a struct holding a struct holding ... */
  tarn_buf f = TARN_BUF_INIT;
  tarn_buf_append(&f, "PAR1", 4);
  size_t start = f.len;
  tarn_buf_putc(&f, 0xac); /* field 10, not one of FileMetaData's: skipped */
  for (int i = 0; i < 5000; i++)
    tarn_buf_putc(&f, 0x1c);
  uint8_t len[4];
  tarn__st_le32(len, (uint32_t)(f.len - start));
  tarn_buf_append(&f, len, 4);
  tarn_buf_append(&f, "PAR1", 4);
  expect_bad(&f, "parquet footer: byte");
  expect_bad(&f, "nested deeper than");
  /* A list claiming 2^31 - 1 elements in a few bytes. */
  tarn_buf_reset(&f);
  tarn_buf_append(&f, "PAR1", 4);
  static const uint8_t lie[] = {0x15, 0x02, 0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00};
  tarn_buf_append(&f, lie, sizeof lie);
  tarn__st_le32(len, sizeof lie);
  tarn_buf_append(&f, len, 4);
  tarn_buf_append(&f, "PAR1", 4);
  expect_bad(&f, "list of 2147483647 elements");
  tarn_buf_free(&f);
}

static void hostile_pages(void **state) {
  builder b;
  tarn_buf raw = TARN_BUF_INIT, comp = TARN_BUF_INIT;
  put_plain(&raw, "hello");
  static const uint8_t lv[] = {2, 0, 0, 0, 0x02, 0x01}; /* one level 1 */
  tarn_buf page = TARN_BUF_INIT;
  tarn_buf_append(&page, lv, sizeof lv);
  tarn_buf_append(&page, raw.data, raw.len);
  tarn__pq_page_header h = {.type = TARN_PARQUET_DATA_PAGE,
                            .num_values = 1,
                            .encoding = TARN_PARQUET_PLAIN,
                            .def_encoding = TARN_PARQUET_RLE,
                            .num_nulls = -1};

  /* The same page, good: the builder works. */
  b_init(&b, 1);
  b_group(&b, TARN_PARQUET_UNCOMPRESSED, 1);
  b_page(&b, h, page.data, page.len, page.len);
  b_finish(&b);
  tarn_parquet_reader *r;
  mem_src src;
  assert_int_equal(open_built(&b, &r, &src), 0);
  row want[1] = {{(uint8_t *)"hello", 5}};
  expect_rows(r, want, 0, 1);
  tarn_parquet_close(r);
  tarn_buf_free(&b.file);

  /* compressed_page_size far beyond the file. */
  b_init(&b, 1);
  b_group(&b, TARN_PARQUET_UNCOMPRESSED, 1);
  tarn__pq_page_header big = h;
  big.compressed_size = 1 << 30;
  b_page(&b, big, page.data, page.len, page.len);
  b.groups[0].chunk.total_compressed_size = (int64_t)(b.file.len - 4);
  b_finish(&b);
  expect_bad(&b.file, "runs past the column chunk");
  tarn_buf_free(&b.file);

  /* A column chunk that claims more bytes than the file has. */
  b_init(&b, 1);
  b_group(&b, TARN_PARQUET_UNCOMPRESSED, 1);
  b_page(&b, h, page.data, page.len, page.len);
  b.groups[0].chunk.total_compressed_size = 1 << 20;
  b_finish(&b);
  expect_bad(&b.file, "lies outside the file's data");
  tarn_buf_free(&b.file);

  /* Decompression bombs: zstd data that expands past the declared size, and
   * a declared size above the reader's limit. */
  tarn_buf zeros = TARN_BUF_INIT;
  tarn_buf_append(&zeros, page.data, page.len);
  for (int i = 0; i < 100000; i++)
    tarn_buf_putc(&zeros, 0);
  assert_int_equal(tarn__pq_compress(TARN_PARQUET_ZSTD, 0, zeros.data, zeros.len, &comp), 0);
  b_init(&b, 1);
  b_group(&b, TARN_PARQUET_ZSTD, 1);
  b_page(&b, h, comp.data, comp.len, page.len);
  b_finish(&b);
  expect_bad(&b.file, "zstd data expands to more than uncompressed_page_size");
  tarn_buf_free(&b.file);
  b_init(&b, 1);
  b_group(&b, TARN_PARQUET_ZSTD, 1);
  b_page(&b, h, comp.data, comp.len, 1u << 30);
  b_finish(&b);
  expect_bad(&b.file, "exceeds the limit");
  tarn_buf_free(&b.file);
  for (int codec = TARN_PARQUET_SNAPPY; codec <= TARN_PARQUET_LZ4_RAW; codec++) {
    if (!tarn__pq_codec_known(codec))
      continue;
    tarn_buf_reset(&comp);
    assert_int_equal(tarn__pq_compress(codec, 0, zeros.data, zeros.len, &comp), 0);
    b_init(&b, 1);
    b_group(&b, codec, 1);
    b_page(&b, h, comp.data, comp.len, page.len + 10);
    b_finish(&b);
    expect_bad(&b.file, "parquet page: byte 4:");
    tarn_buf_free(&b.file);
  }

  /* More rows in the pages than the row group has; fewer. */
  tarn__pq_page_header two = h;
  two.num_values = 2;
  bad_group(1, TARN_PARQUET_UNCOMPRESSED, 1,
            (page_spec[]){{&two, page.data, page.len, page.len}, {0}},
            "page of 2 values, but row group 0 has 1 left");
  page_spec one[] = {{&h, page.data, page.len, page.len}, {0}};
  bad_group(1, TARN_PARQUET_UNCOMPRESSED, 2, one, "ends with 1 of its rows missing");

  /* A value length running past the page; definition levels longer than the page. */
  page.data[6] = 0xff;
  bad_group(1, TARN_PARQUET_UNCOMPRESSED, 1, one, "runs past the page");
  page.data[0] = 0xf0;
  bad_group(1, TARN_PARQUET_UNCOMPRESSED, 1, one, "definition levels of");

  /* A dictionary-encoded page without a dictionary, and an index past the dictionary. */
  static const uint8_t idx[] = {1, 0x02, 0x01};
  tarn__pq_page_header d = {.type = TARN_PARQUET_DATA_PAGE,
                            .num_values = 1,
                            .encoding = TARN_PARQUET_RLE_DICTIONARY,
                            .num_nulls = -1};
  tarn__pq_page_header dh = {
      .type = TARN_PARQUET_DICTIONARY_PAGE, .num_values = 1, .encoding = TARN_PARQUET_PLAIN};
  bad_group(0, TARN_PARQUET_UNCOMPRESSED, 1, (page_spec[]){{&d, idx, sizeof idx, sizeof idx}, {0}},
            "without a dictionary page");
  page_spec dict_then_data[] = {
      {&dh, raw.data, raw.len, raw.len}, {&d, idx, sizeof idx, sizeof idx}, {0}};
  bad_group(0, TARN_PARQUET_UNCOMPRESSED, 1, dict_then_data, "dictionary index 1 of 1 entries");
  /* A dictionary claiming more values than its bytes can hold. */
  dh.num_values = 1000000;
  bad_group(0, TARN_PARQUET_UNCOMPRESSED, 1, dict_then_data,
            "dictionary of 1000000 values in 9 bytes");

  tarn_buf_free(&zeros);
  tarn_buf_free(&page);
  tarn_buf_free(&raw);
  tarn_buf_free(&comp);
}

/* A sink that fails: the writer reports it and refuses further rows. */
static int failing_sink(void *ctx, const void *p, size_t n) {
  int *budget = ctx;
  if (*budget <= 0)
    return TARN_EIO;
  (*budget)--;
  return 0;
}

static void sink_failure(void **state) {
  int budget = 1; /* the leading magic only */
  tarn_parquet_writer_opts o = kafka_opts;
  o.page_size = 16;
  tarn_parquet_writer *w;
  assert_int_equal(tarn_parquet_writer_open(&w, &o, failing_sink, &budget), 0);
  assert_int_equal(tarn_parquet_writer_add(w, "0123456789abcdef", 16), 0);
  assert_int_equal(tarn_parquet_writer_add(w, "0123456789abcdef", 16), TARN_EIO);
  assert_non_null(strstr(tarn_errmsg(), "parquet writer at byte 4"));
  assert_int_equal(tarn_parquet_writer_add(w, "x", 1), TARN_EINVAL);
  assert_int_equal(tarn_parquet_writer_finish(w, NULL), TARN_EINVAL);
  tarn_parquet_writer_close(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip_uncompressed), cmocka_unit_test(round_trip_snappy),
      cmocka_unit_test(round_trip_gzip),         cmocka_unit_test(round_trip_zstd),
      cmocka_unit_test(round_trip_lz4_raw),      cmocka_unit_test(seek_reads_only_what_it_needs),
      cmocka_unit_test(writer_streams),          cmocka_unit_test(schema_and_footer_keys),
      cmocka_unit_test(empty_and_large),         cmocka_unit_test(serde_type_refused),
      cmocka_unit_test(dictionary_and_v2_pages), cmocka_unit_test(hostile_files),
      cmocka_unit_test(hostile_corruptions),     cmocka_unit_test(nesting_bomb_footer),
      cmocka_unit_test(hostile_pages),           cmocka_unit_test(sink_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
