/* The streaming Parquet writer of compacted files (LS-056, LS-057, LS-058).
 *
 * It buffers one page: the PLAIN values and the run-length encoded
 * definition levels. A full page is compressed and handed to the sink with
 * its header; a full row group only adds an entry to the footer's list. So
 * memory is one page plus a few dozen bytes per row group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet_internal.h"
#include "util/bytes.h"
#include "util/error.h"

#define DEFAULT_ROW_GROUP ((uint64_t)128 << 20)
#define DEFAULT_PAGE ((uint32_t)1 << 20)
/* The values buffer starts with this many bytes kept free, so that the level
 * bytes' length and the levels (one RLE run, up to 6 bytes, when the page
 * has no nulls) go in front of the values and the page body is one run of
 * bytes: compressed, or handed to the sink, without a copy into a body. */
#define PREFIX ((size_t)16)
/* A page's size is an i32; keep room for the level bytes and the header. */
#define MAX_PAGE_BODY ((size_t)INT32_MAX - 4096)

struct tarn_parquet_writer {
  tarn_parquet_write_fn write;
  void *ctx;
  int codec, level;
  uint64_t row_group_size;
  uint32_t page_size;
  int failed;
  uint64_t off; /* bytes handed to the sink */

  /* the page being filled */
  tarn_buf values; /* PLAIN: 4-byte little-endian length, then the bytes */
  tarn_buf levels; /* RLE runs of the definition levels, bit width 1 */
  uint32_t run_value, run_len;
  uint32_t page_rows, page_nulls;
  tarn_buf body, comp, hdr;
  tarn__pq_codec_ctx cx; /* kept from page to page */

  /* the row group being filled */
  uint64_t group_bytes; /* PLAIN bytes of its values, the page being filled included */
  tarn_parquet_chunk chunk;
  int64_t group_rows;

  tarn_parquet_meta meta; /* schema, row groups so far, key/value metadata */
  size_t groups_cap;
};

static int sink(tarn_parquet_writer *w, const void *p, size_t n) {
  if (n == 0)
    return 0;
  int rc = w->write(w->ctx, p, n);
  if (rc)
    return tarn__errctx(rc < 0 ? rc : TARN_EIO, "parquet writer at byte %llu",
                        (unsigned long long)w->off);
  w->off += n;
  return 0;
}

static int valid_record_name(const char *s) {
  if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return 0;
  return 1;
}

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p)
    memcpy(p, s, n);
  return p;
}

static int add_kv(tarn_parquet_meta *m, const char *k, const char *v) {
  tarn_parquet_kv *kv = &m->kv[m->n_kv];
  if (!(kv->key = dup(k)) || !(kv->value = dup(v))) {
    free(kv->key); /* not counted in n_kv yet: the meta's free would miss it */
    kv->key = NULL;
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  }
  m->n_kv++;
  return 0;
}

/* The schema and footer metadata of the spec's table (tables-and-vectors.md §3.6). */
static int build_meta(tarn_parquet_writer *w, const tarn_parquet_writer_opts *o) {
  tarn_parquet_meta *m = &w->meta;
  m->version = 1;
  m->payload_column = 0;
  m->payload_max_def = 1;
  if (!(m->schema = calloc(2, sizeof *m->schema)) || !(m->kv = calloc(5, sizeof *m->kv)))
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  /* LS-057: message <record name> { optional binary payload; } */
  m->n_schema = 2;
  m->schema[0] = (tarn_parquet_schema_element){dup(o->record_name), -1, -1, 1, -1};
  m->schema[1] = (tarn_parquet_schema_element){dup("payload"), TARN_PARQUET_BYTE_ARRAY,
                                               TARN_PARQUET_OPTIONAL, 0, -1};
  if (!m->schema[0].name || !m->schema[1].name ||
      !(m->created_by = dup("tarn version " TARN_VERSION " (build tarn)")))
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  static const char avro_head[] = "{\"type\":\"record\",\"name\":\"";
  static const char avro_tail[] =
      "\",\"fields\":[{\"name\":\"payload\",\"type\":[\"null\",\"bytes\"],\"default\":null}]}";
  size_t n = sizeof avro_head + strlen(o->record_name) + sizeof avro_tail;
  char *avro = malloc(n);
  if (!avro)
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  /* The record name is checked to be an Avro name, so it needs no JSON escaping. */
  snprintf(avro, n, "%s%s%s", avro_head, o->record_name, avro_tail);
  int rc = add_kv(m, "entrySerDeType", o->entry_serde_type);
  if (rc == 0 && o->row_metadata)
    rc = add_kv(m, "rowMetadata", o->row_metadata);
  if (rc == 0)
    rc = add_kv(m, "schemaType", "avro");
  if (rc == 0)
    rc = add_kv(m, "parquet.avro.schema", avro);
  if (rc == 0)
    rc = add_kv(m, "writer.model.name", "avro");
  free(avro);
  return rc;
}

static void reset_chunk(tarn_parquet_writer *w) {
  memset(&w->chunk, 0, sizeof w->chunk);
  w->chunk.type = TARN_PARQUET_BYTE_ARRAY;
  w->chunk.codec = w->codec;
  w->chunk.data_page_offset = -1;
  w->chunk.dictionary_page_offset = -1;
  w->chunk.encodings[0] = TARN_PARQUET_PLAIN;
  w->chunk.encodings[1] = TARN_PARQUET_RLE;
  w->chunk.n_encodings = 2;
  w->group_bytes = 0;
  w->group_rows = 0;
}

int tarn_parquet_writer_open(tarn_parquet_writer **out, const tarn_parquet_writer_opts *o,
                             tarn_parquet_write_fn write, void *ctx) {
  *out = NULL;
  if (!o || !write || !o->entry_serde_type || !valid_record_name(o->record_name))
    return tarn__err(TARN_EINVAL, "parquet writer: needs a sink, an entrySerDeType and an Avro "
                                  "record name ([A-Za-z_][A-Za-z0-9_]*)");
  if (o->codec != TARN_PARQUET_UNCOMPRESSED && (o->codec == TARN_PARQUET_LZ4 ||
                                                !tarn__pq_codec_known(o->codec)))
    return tarn__err(TARN_EINVAL, "parquet writer: codec %d (%s) is not one tarn writes", o->codec,
                     tarn_parquet_codec_name(o->codec));
  tarn_parquet_writer *w = calloc(1, sizeof *w);
  if (!w)
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  w->write = write;
  w->ctx = ctx;
  w->codec = o->codec;
  w->level = o->level;
  w->row_group_size = o->row_group_size ? o->row_group_size : DEFAULT_ROW_GROUP;
  w->page_size = o->page_size ? o->page_size : DEFAULT_PAGE;
  if (w->page_size > MAX_PAGE_BODY)
    w->page_size = (uint32_t)MAX_PAGE_BODY;
  reset_chunk(w);
  int rc = tarn_buf_reserve(&w->values, PREFIX);
  w->values.len = PREFIX;
  if (rc == 0)
    rc = build_meta(w, o);
  if (rc == 0)
    rc = sink(w, "PAR1", 4);
  if (rc) {
    tarn_parquet_writer_free(w);
    return rc;
  }
  *out = w;
  return 0;
}

/* Ends the pending run of definition levels: an RLE run, header (count << 1),
 * then the value in one byte (bit width 1). */
static int end_run(tarn_parquet_writer *w) {
  if (w->run_len == 0)
    return 0;
  int rc = tarn_buf_put_uvarint(&w->levels, (uint64_t)w->run_len << 1);
  if (rc == 0)
    rc = tarn_buf_putc(&w->levels, (uint8_t)w->run_value);
  w->run_len = 0;
  return rc;
}

static int flush_page(tarn_parquet_writer *w) {
  if (w->page_rows == 0)
    return 0;
  int rc = end_run(w);
  if (rc)
    return rc;
  uint8_t len[4];
  tarn__st_le32(len, (uint32_t)w->levels.len);
  size_t nvals = w->values.len - PREFIX;
  size_t raw = 4 + w->levels.len + nvals;
  tarn__pq_page_header h = {0};
  h.type = TARN_PARQUET_DATA_PAGE;
  h.uncompressed_size = (int32_t)raw;
  h.num_values = (int32_t)w->page_rows;
  h.encoding = TARN_PARQUET_PLAIN;
  h.def_encoding = TARN_PARQUET_RLE;
  h.num_nulls = (int32_t)w->page_nulls;
  const uint8_t *body[3] = {len, w->levels.data, w->values.data + PREFIX};
  size_t body_len[3] = {4, w->levels.len, nvals};
  size_t parts = 3;
  if (4 + w->levels.len <= PREFIX) {
    uint8_t *at = w->values.data + PREFIX - 4 - w->levels.len;
    memcpy(at, len, 4);
    if (w->levels.len)
      memcpy(at + 4, w->levels.data, w->levels.len);
    body[0] = at, body_len[0] = raw, parts = 1;
  }
  tarn_buf_reset(&w->comp);
  if (w->codec != TARN_PARQUET_UNCOMPRESSED) {
    /* Definition levels and values are compressed together in a v1 page. */
    const uint8_t *src = body[0];
    if (parts > 1) {
      tarn_buf_reset(&w->body);
      if ((rc = tarn_buf_reserve(&w->body, raw)))
        return rc;
      for (size_t i = 0; i < 3; i++)
        tarn_buf_append(&w->body, body[i], body_len[i]);
      src = w->body.data;
    }
    if ((rc = tarn__pq_compress_ctx(&w->cx, w->codec, w->level, src, raw, &w->comp)))
      return rc;
    if (w->comp.len > (size_t)INT32_MAX)
      return tarn__err(TARN_ERANGE, "parquet writer: compressed page exceeds 2 GiB");
    body[0] = w->comp.data, body_len[0] = w->comp.len, parts = 1;
  }
  h.compressed_size = (int32_t)(w->codec != TARN_PARQUET_UNCOMPRESSED ? w->comp.len : raw);
  tarn_buf_reset(&w->hdr);
  if ((rc = tarn__pq_page_header_encode(&h, &w->hdr)))
    return rc;
  if (w->chunk.data_page_offset < 0)
    w->chunk.data_page_offset = (int64_t)w->off;
  if ((rc = sink(w, w->hdr.data, w->hdr.len)))
    return rc;
  for (size_t i = 0; i < parts; i++)
    if ((rc = sink(w, body[i], body_len[i])))
      return rc;
  w->chunk.num_values += w->page_rows;
  w->chunk.null_count += w->page_nulls;
  w->chunk.total_uncompressed_size += (int64_t)(w->hdr.len + raw);
  w->chunk.total_compressed_size += (int64_t)(w->hdr.len + (size_t)h.compressed_size);
  w->values.len = PREFIX;
  tarn_buf_reset(&w->levels);
  w->page_rows = w->page_nulls = 0;
  return 0;
}

static int flush_group(tarn_parquet_writer *w) {
  int rc = flush_page(w);
  if (rc || w->group_rows == 0)
    return rc;
  tarn_parquet_meta *m = &w->meta;
  if (m->n_row_groups == w->groups_cap) {
    size_t cap = w->groups_cap ? w->groups_cap * 2 : 8;
    tarn_parquet_row_group *g = realloc(m->row_groups, cap * sizeof *g);
    if (!g)
      return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
    m->row_groups = g;
    w->groups_cap = cap;
  }
  tarn_parquet_row_group *g = &m->row_groups[m->n_row_groups++];
  g->num_rows = w->group_rows;
  g->total_byte_size = w->chunk.total_uncompressed_size;
  g->chunk = w->chunk;
  m->num_rows += w->group_rows;
  reset_chunk(w);
  return 0;
}

static int add_row(tarn_parquet_writer *w, const void *p, size_t n, int is_null) {
  if (w->failed)
    return tarn__err(TARN_EINVAL, "parquet writer: an earlier write failed");
  if (n > MAX_PAGE_BODY - 4)
    return tarn__err(TARN_ERANGE, "parquet writer: payload of %zu bytes exceeds a page's 2 GiB", n);
  size_t add = is_null ? 0 : 4 + n;
  int rc = 0;
  if (w->group_rows > 0 && w->group_bytes + add > w->row_group_size)
    rc = flush_group(w);
  else if (w->page_rows > 0 && w->values.len - PREFIX + add > w->page_size)
    rc = flush_page(w);
  if (rc == 0 && w->page_rows == UINT32_MAX / 2)
    rc = flush_page(w);
  if (rc == 0 && !is_null) {
    uint8_t len[4];
    tarn__st_le32(len, (uint32_t)n);
    if ((rc = tarn_buf_reserve(&w->values, add)) == 0) {
      tarn_buf_append(&w->values, len, 4);
      tarn_buf_append(&w->values, p, n);
    }
  }
  uint32_t def = is_null ? 0 : 1;
  if (rc == 0 && w->run_len > 0 && w->run_value != def)
    rc = end_run(w);
  if (rc) {
    w->failed = 1;
    return rc;
  }
  w->run_value = def;
  w->run_len++;
  w->page_rows++;
  w->page_nulls += (uint32_t)is_null;
  w->group_rows++;
  w->group_bytes += add;
  return 0;
}

int tarn_parquet_writer_add(tarn_parquet_writer *w, const void *p, size_t n) {
  return add_row(w, p, n, 0);
}

int tarn_parquet_writer_add_null(tarn_parquet_writer *w) { return add_row(w, NULL, 0, 1); }

int tarn_parquet_writer_finish(tarn_parquet_writer *w, uint64_t *size) {
  if (w->failed)
    return tarn__err(TARN_EINVAL, "parquet writer: an earlier write failed");
  int rc = flush_group(w);
  tarn_buf foot = TARN_BUF_INIT;
  if (rc == 0)
    rc = tarn__pq_meta_encode(&w->meta, &foot);
  if (rc == 0 && foot.len > UINT32_MAX)
    rc = tarn__err(TARN_ERANGE, "parquet writer: footer exceeds 4 GiB");
  if (rc == 0) {
    uint8_t tail[8];
    tarn__st_le32(tail, (uint32_t)foot.len);
    memcpy(tail + 4, "PAR1", 4);
    rc = tarn_buf_append(&foot, tail, 8);
  }
  if (rc == 0)
    rc = sink(w, foot.data, foot.len);
  tarn_buf_free(&foot);
  if (rc) {
    w->failed = 1;
    return rc;
  }
  if (size)
    *size = w->off;
  return 0;
}

void tarn_parquet_writer_free(tarn_parquet_writer *w) {
  if (!w)
    return;
  tarn_buf_free(&w->values);
  tarn_buf_free(&w->levels);
  tarn_buf_free(&w->body);
  tarn_buf_free(&w->comp);
  tarn_buf_free(&w->hdr);
  tarn__pq_codec_ctx_free(&w->cx);
  tarn__pq_meta_free(&w->meta);
  free(w);
}
