/* Parquet's FileMetaData and PageHeader in the Thrift compact protocol
 * (field ids from parquet-format's parquet.thrift). Only the fields tarn
 * uses are kept; every other field is skipped. */
#include <stdlib.h>
#include <string.h>

#include "format/parquet_internal.h"
#include "format/thrift.h"
#include "util/error.h"

#define FOOTER "parquet footer"

typedef tarn__thrift_rd rd_t;

static size_t at(const rd_t *d) { return d->r.base + d->r.off; }

static int dup_str(rd_t *d, int type, char **out, const char *field) {
  const uint8_t *p;
  size_t n;
  int rc = tarn__thrift_binary(d, type, &p, &n, field);
  if (rc)
    return rc;
  char *s = malloc(n + 1);
  if (!s)
    return tarn__err(TARN_ENOMEM, FOOTER ": out of memory");
  if (n)
    memcpy(s, p, n);
  s[n] = 0;
  free(*out);
  *out = s;
  return 0;
}

/* Walks the fields of a struct: the loop body sees id and type, and must
 * consume the value or skip it. */
#define FIELDS(d, id, type)                                                                        \
  for (rc = tarn__thrift_struct_begin(d);                                                          \
       rc == 0 && (rc = tarn__thrift_field(d, &id, &type)) == 0 && type != TARN__T_STOP;)

static int decode_schema_element(rd_t *d, tarn_parquet_schema_element *e) {
  int16_t id;
  int type, rc = 0, have_name = 0;
  size_t start = at(d);
  e->type = e->repetition = e->converted_type = -1;
  e->num_children = 0;
  FIELDS(d, id, type) {
    switch (id) {
    case 1: rc = tarn__thrift_i32(d, type, &e->type, "SchemaElement.type"); break;
    case 3: rc = tarn__thrift_i32(d, type, &e->repetition, "SchemaElement.repetition_type"); break;
    case 4: rc = dup_str(d, type, &e->name, "SchemaElement.name"), have_name = 1; break;
    case 5: rc = tarn__thrift_i32(d, type, &e->num_children, "SchemaElement.num_children"); break;
    case 6:
      rc = tarn__thrift_i32(d, type, &e->converted_type, "SchemaElement.converted_type");
      break;
    default: rc = tarn__thrift_skip(d, type);
    }
    if (rc)
      break;
  }
  if (rc == 0 && !have_name)
    rc = tarn__corrupt(FOOTER, start, "SchemaElement has no name");
  return rc;
}

static int decode_kv(rd_t *d, tarn_parquet_kv *kv) {
  int16_t id;
  int type, rc = 0;
  size_t start = at(d);
  FIELDS(d, id, type) {
    if (id == 1)
      rc = dup_str(d, type, &kv->key, "KeyValue.key");
    else if (id == 2)
      rc = dup_str(d, type, &kv->value, "KeyValue.value");
    else
      rc = tarn__thrift_skip(d, type);
    if (rc)
      break;
  }
  if (rc == 0 && !kv->key)
    rc = tarn__corrupt(FOOTER, start, "KeyValue has no key");
  return rc;
}

static int decode_statistics(rd_t *d, int64_t *null_count) {
  int16_t id;
  int type, rc = 0;
  FIELDS(d, id, type) {
    rc = id == 3 ? tarn__thrift_i64(d, type, null_count, "Statistics.null_count")
                 : tarn__thrift_skip(d, type);
    if (rc)
      break;
  }
  return rc;
}

static int decode_column_meta(rd_t *d, tarn_parquet_chunk *c) {
  int16_t id;
  int type, rc = 0, et;
  size_t n, start = at(d);
  unsigned seen = 0;
  FIELDS(d, id, type) {
    switch (id) {
    case 1: rc = tarn__thrift_i32(d, type, &c->type, "ColumnMetaData.type"); break;
    case 2:
      if ((rc = tarn__thrift_list(d, type, &et, &n, "ColumnMetaData.encodings")))
        break;
      c->n_encodings = 0;
      for (size_t i = 0; i < n && rc == 0; i++) {
        int32_t e;
        if ((rc = tarn__thrift_i32(d, et, &e, "ColumnMetaData.encodings")) == 0 &&
            c->n_encodings < sizeof c->encodings / sizeof c->encodings[0])
          c->encodings[c->n_encodings++] = e;
      }
      break;
    case 4: rc = tarn__thrift_i32(d, type, &c->codec, "ColumnMetaData.codec"); break;
    case 5: rc = tarn__thrift_i64(d, type, &c->num_values, "ColumnMetaData.num_values"); break;
    case 6:
      rc = tarn__thrift_i64(d, type, &c->total_uncompressed_size,
                            "ColumnMetaData.total_uncompressed_size");
      break;
    case 7:
      rc = tarn__thrift_i64(d, type, &c->total_compressed_size,
                            "ColumnMetaData.total_compressed_size");
      break;
    case 9:
      rc = tarn__thrift_i64(d, type, &c->data_page_offset, "ColumnMetaData.data_page_offset");
      break;
    case 11:
      rc = tarn__thrift_i64(d, type, &c->dictionary_page_offset,
                            "ColumnMetaData.dictionary_page_offset");
      break;
    case 12:
      if ((rc = tarn__thrift_expect(d, type, TARN__T_STRUCT, "ColumnMetaData.statistics")) == 0)
        rc = decode_statistics(d, &c->null_count);
      break;
    default: rc = tarn__thrift_skip(d, type);
    }
    if (rc)
      break;
    if (id > 0 && id < 32)
      seen |= 1u << id;
  }
  if (rc)
    return rc;
  /* The required fields that tarn reads. */
  static const int req[] = {1, 4, 5, 7, 9};
  for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
    if (!(seen & 1u << req[i]))
      return tarn__corrupt(FOOTER, start, "ColumnMetaData has no field %d", req[i]);
  return 0;
}

static int decode_column_chunk(rd_t *d, tarn_parquet_chunk *c) {
  int16_t id;
  int type, rc = 0, have_meta = 0;
  size_t start = at(d);
  FIELDS(d, id, type) {
    if (id == 3) {
      if ((rc = tarn__thrift_expect(d, type, TARN__T_STRUCT, "ColumnChunk.meta_data")) == 0)
        rc = decode_column_meta(d, c), have_meta = 1;
    } else {
      rc = tarn__thrift_skip(d, type);
    }
    if (rc)
      break;
  }
  if (rc == 0 && !have_meta)
    rc = tarn__corrupt(FOOTER, start, "payload ColumnChunk has no meta_data (encrypted file?)");
  return rc;
}

static int decode_row_group(rd_t *d, size_t column, size_t n_columns, tarn_parquet_row_group *g) {
  int16_t id;
  int type, rc = 0, et, have_rows = 0, have_chunk = 0;
  size_t n, start = at(d);
  FIELDS(d, id, type) {
    switch (id) {
    case 1:
      if ((rc = tarn__thrift_list(d, type, &et, &n, "RowGroup.columns")) == 0 &&
          (rc = tarn__thrift_expect(d, et, TARN__T_STRUCT, "RowGroup.columns")) == 0 &&
          n != n_columns)
        rc =
            tarn__corrupt(FOOTER, at(d), "row group has %zu columns, the schema %zu", n, n_columns);
      for (size_t i = 0; i < n && rc == 0; i++)
        rc = i == column ? decode_column_chunk(d, &g->chunk) : tarn__thrift_skip(d, et);
      have_chunk = 1;
      break;
    case 2: rc = tarn__thrift_i64(d, type, &g->total_byte_size, "RowGroup.total_byte_size"); break;
    case 3: rc = tarn__thrift_i64(d, type, &g->num_rows, "RowGroup.num_rows"), have_rows = 1; break;
    default: rc = tarn__thrift_skip(d, type);
    }
    if (rc)
      break;
  }
  if (rc == 0 && (!have_rows || !have_chunk))
    rc = tarn__corrupt(FOOTER, start, "RowGroup has no %s", have_rows ? "columns" : "num_rows");
  if (rc == 0 && g->num_rows < 0)
    rc = tarn__corrupt(FOOTER, start, "RowGroup.num_rows %lld is negative", (long long)g->num_rows);
  return rc;
}

/* Walks the schema tree from element *i, counting leaves; nesting is bounded. */
static int walk_schema(tarn_parquet_meta *m, size_t *i, int depth, size_t *leaves) {
  tarn_parquet_schema_element *e = &m->schema[*i];
  if (depth > TARN__THRIFT_MAX_DEPTH)
    return tarn__corrupt(FOOTER, 0, "schema nested deeper than %d", TARN__THRIFT_MAX_DEPTH);
  if (e->num_children < 0)
    return tarn__corrupt(FOOTER, 0, "schema element %zu (%s) has %d children", *i, e->name,
                         e->num_children);
  size_t self = (*i)++;
  if (m->schema[self].num_children == 0 && self > 0) {
    (*leaves)++;
    return 0;
  }
  for (int32_t c = 0; c < m->schema[self].num_children; c++) {
    if (*i >= m->n_schema)
      return tarn__corrupt(FOOTER, 0, "schema element %zu (%s) claims %d children past the end",
                           self, m->schema[self].name, m->schema[self].num_children);
    if (depth == 0) {
      tarn_parquet_schema_element *k = &m->schema[*i];
      if (strcmp(k->name, "payload") == 0 && k->num_children == 0) {
        if (k->type != TARN_PARQUET_BYTE_ARRAY || k->repetition == TARN_PARQUET_REPEATED)
          return tarn__corrupt(FOOTER, 0,
                               "column payload is not a required or optional BYTE_ARRAY");
        m->payload_column = *leaves;
        m->payload_max_def = k->repetition == TARN_PARQUET_OPTIONAL;
      }
    }
    int rc = walk_schema(m, i, depth + 1, leaves);
    if (rc)
      return rc;
  }
  return 0;
}

/* The fewest bytes an element the decoder accepts can take, by its required
 * fields (a field header and a one-byte value each, a string of length 0)
 * and the stop byte; they cap the arrays allocated from a list's count, so
 * the decoded metadata takes at most 8 bytes per footer byte (the schema's
 * 24-byte elements; docs/parquet.md). */
enum {
  MIN_SCHEMA_ELEMENT = 3, /* name */
  MIN_KEY_VALUE = 3,      /* key */
  /* columns (header, list header, the payload ColumnChunk: meta_data's
   * header, ColumnMetaData's fields 1, 4, 5, 7 and 9 and stop, the chunk's
   * stop), num_rows, stop */
  MIN_ROW_GROUP = 2 + (1 + 5 * 2 + 1 + 1) + 2 + 1
};

/* A list whose elements must be structs of at least min bytes. */
static int struct_list(rd_t *d, int type, size_t min, size_t *n, const char *field) {
  int et, rc = tarn__thrift_list_min(d, type, min, &et, n, field);
  return rc ? rc : tarn__thrift_expect(d, et, TARN__T_STRUCT, field);
}

int tarn__pq_meta_decode(const uint8_t *p, size_t n, uint64_t base, tarn_parquet_meta *m) {
  rd_t d;
  int16_t id;
  int type, rc = 0;
  size_t cnt;
  const uint8_t *groups = NULL;
  size_t groups_len = 0, groups_at = 0, n_groups = 0;
  unsigned seen = 0;
  memset(m, 0, sizeof *m);
  m->payload_column = SIZE_MAX;
  tarn__thrift_rd_init(&d, p, n, (size_t)base, FOOTER);
  FIELDS(&d, id, type) {
    switch (id) {
    case 1: rc = tarn__thrift_i32(&d, type, &m->version, "FileMetaData.version"); break;
    case 2:
      if ((rc = struct_list(&d, type, MIN_SCHEMA_ELEMENT, &cnt, "FileMetaData.schema")))
        break;
      if (m->schema)
        return tarn__corrupt(FOOTER, at(&d), "FileMetaData.schema given twice");
      if (!(m->schema = calloc(cnt ? cnt : 1, sizeof *m->schema)))
        return tarn__err(TARN_ENOMEM, FOOTER ": out of memory");
      for (; m->n_schema < cnt && rc == 0; m->n_schema++)
        rc = decode_schema_element(&d, &m->schema[m->n_schema]);
      break;
    case 3: rc = tarn__thrift_i64(&d, type, &m->num_rows, "FileMetaData.num_rows"); break;
    case 4: {
      /* Row groups are decoded once the schema has told which column is payload. */
      if ((rc = struct_list(&d, type, MIN_ROW_GROUP, &n_groups, "FileMetaData.row_groups")))
        break;
      groups_at = d.r.off;
      for (size_t i = 0; i < n_groups && rc == 0; i++)
        rc = tarn__thrift_skip(&d, TARN__T_STRUCT);
      groups = p + groups_at;
      groups_len = d.r.off - groups_at;
      break;
    }
    case 5:
      if ((rc = struct_list(&d, type, MIN_KEY_VALUE, &cnt, "FileMetaData.key_value_metadata")))
        break;
      if (m->kv)
        return tarn__corrupt(FOOTER, at(&d), "FileMetaData.key_value_metadata given twice");
      if (!(m->kv = calloc(cnt ? cnt : 1, sizeof *m->kv)))
        return tarn__err(TARN_ENOMEM, FOOTER ": out of memory");
      for (; m->n_kv < cnt && rc == 0; m->n_kv++)
        rc = decode_kv(&d, &m->kv[m->n_kv]);
      break;
    case 6: rc = dup_str(&d, type, &m->created_by, "FileMetaData.created_by"); break;
    default: rc = tarn__thrift_skip(&d, type);
    }
    if (rc)
      return rc;
    if (id > 0 && id < 32)
      seen |= 1u << id;
  }
  if (rc)
    return rc;
  if (!(seen & 1u << 2) || m->n_schema == 0)
    return tarn__corrupt(FOOTER, (size_t)base, "FileMetaData has no schema");
  if (!(seen & 1u << 3) || !(seen & 1u << 4))
    return tarn__corrupt(FOOTER, (size_t)base, "FileMetaData has no %s",
                         seen & 1u << 3 ? "row_groups" : "num_rows");
  size_t i = 0, leaves = 0;
  if ((rc = walk_schema(m, &i, 0, &leaves)))
    return rc;
  if (i != m->n_schema)
    return tarn__corrupt(FOOTER, (size_t)base, "schema has %zu elements, its tree %zu", m->n_schema,
                         i);
  if (m->payload_column == SIZE_MAX)
    return tarn__corrupt(FOOTER, (size_t)base, "schema has no top-level column named payload");

  if (!(m->row_groups = calloc(n_groups ? n_groups : 1, sizeof *m->row_groups)))
    return tarn__err(TARN_ENOMEM, FOOTER ": out of memory");
  tarn__thrift_rd_init(&d, groups, groups_len, (size_t)base + groups_at, FOOTER);
  int64_t total = 0;
  for (; m->n_row_groups < n_groups; m->n_row_groups++) {
    tarn_parquet_row_group *g = &m->row_groups[m->n_row_groups];
    g->chunk.dictionary_page_offset = -1;
    g->chunk.null_count = -1;
    size_t gat = at(&d);
    if ((rc = decode_row_group(&d, m->payload_column, leaves, g)))
      return rc;
    if (g->num_rows > INT64_MAX - total)
      return tarn__corrupt(FOOTER, gat, "row counts overflow");
    total += g->num_rows;
  }
  if (total != m->num_rows)
    return tarn__corrupt(FOOTER, (size_t)base, "num_rows %lld, but the row groups hold %lld",
                         (long long)m->num_rows, (long long)total);
  return 0;
}

void tarn__pq_meta_free(tarn_parquet_meta *m) {
  for (size_t i = 0; i < m->n_schema; i++)
    free(m->schema[i].name);
  for (size_t i = 0; i < m->n_kv; i++)
    free(m->kv[i].key), free(m->kv[i].value);
  free(m->schema);
  free(m->kv);
  free(m->row_groups);
  free(m->created_by);
  memset(m, 0, sizeof *m);
}

/* ---- encoder ---------------------------------------------------------- */

typedef tarn__thrift_wr wr_t;

static void encode_chunk(wr_t *w, const tarn_parquet_meta *m, const tarn_parquet_chunk *c) {
  int64_t start = c->dictionary_page_offset >= 0 ? c->dictionary_page_offset : c->data_page_offset;
  tarn__thrift_w_struct_begin(w, -1); /* ColumnChunk */
  tarn__thrift_w_i64(w, 2, start);
  tarn__thrift_w_struct_begin(w, 3); /* ColumnMetaData */
  tarn__thrift_w_i32(w, 1, c->type);
  tarn__thrift_w_list(w, 2, TARN__T_I32, c->n_encodings);
  for (size_t i = 0; i < c->n_encodings; i++)
    tarn__thrift_w_elem_i32(w, c->encodings[i]);
  tarn__thrift_w_list(w, 3, TARN__T_BINARY, 1);
  const char *leaf =
      m->payload_column + 1 < m->n_schema ? m->schema[m->payload_column + 1].name : "payload";
  tarn__thrift_w_elem_binary(w, leaf, strlen(leaf));
  tarn__thrift_w_i32(w, 4, c->codec);
  tarn__thrift_w_i64(w, 5, c->num_values);
  tarn__thrift_w_i64(w, 6, c->total_uncompressed_size);
  tarn__thrift_w_i64(w, 7, c->total_compressed_size);
  tarn__thrift_w_i64(w, 9, c->data_page_offset);
  if (c->dictionary_page_offset >= 0)
    tarn__thrift_w_i64(w, 11, c->dictionary_page_offset);
  if (c->null_count >= 0) {
    tarn__thrift_w_struct_begin(w, 12); /* Statistics */
    tarn__thrift_w_i64(w, 3, c->null_count);
    tarn__thrift_w_struct_end(w);
  }
  tarn__thrift_w_struct_end(w);
  tarn__thrift_w_struct_end(w);
}

int tarn__pq_meta_encode(const tarn_parquet_meta *m, tarn_buf *b) {
  wr_t w;
  tarn__thrift_wr_init(&w, b);
  tarn__thrift_w_struct_begin(&w, -1); /* FileMetaData */
  tarn__thrift_w_i32(&w, 1, m->version);
  tarn__thrift_w_list(&w, 2, TARN__T_STRUCT, m->n_schema);
  for (size_t i = 0; i < m->n_schema; i++) {
    const tarn_parquet_schema_element *e = &m->schema[i];
    tarn__thrift_w_struct_begin(&w, -1);
    if (e->type >= 0)
      tarn__thrift_w_i32(&w, 1, e->type);
    if (e->repetition >= 0)
      tarn__thrift_w_i32(&w, 3, e->repetition);
    tarn__thrift_w_string(&w, 4, e->name);
    if (e->num_children > 0)
      tarn__thrift_w_i32(&w, 5, e->num_children);
    if (e->converted_type >= 0)
      tarn__thrift_w_i32(&w, 6, e->converted_type);
    tarn__thrift_w_struct_end(&w);
  }
  tarn__thrift_w_i64(&w, 3, m->num_rows);
  tarn__thrift_w_list(&w, 4, TARN__T_STRUCT, m->n_row_groups);
  for (size_t i = 0; i < m->n_row_groups; i++) {
    const tarn_parquet_row_group *g = &m->row_groups[i];
    tarn__thrift_w_struct_begin(&w, -1); /* RowGroup */
    tarn__thrift_w_list(&w, 1, TARN__T_STRUCT, 1);
    encode_chunk(&w, m, &g->chunk);
    tarn__thrift_w_i64(&w, 2, g->total_byte_size);
    tarn__thrift_w_i64(&w, 3, g->num_rows);
    int64_t off = g->chunk.dictionary_page_offset >= 0 ? g->chunk.dictionary_page_offset
                                                       : g->chunk.data_page_offset;
    tarn__thrift_w_i64(&w, 5, off);
    tarn__thrift_w_i64(&w, 6, g->chunk.total_compressed_size);
    tarn__thrift_w_field(&w, 7, TARN__T_I16);
    tarn__thrift_w_elem_i32(&w, (int32_t)(i & 0x7fff));
    tarn__thrift_w_struct_end(&w);
  }
  if (m->n_kv) {
    tarn__thrift_w_list(&w, 5, TARN__T_STRUCT, m->n_kv);
    for (size_t i = 0; i < m->n_kv; i++) {
      tarn__thrift_w_struct_begin(&w, -1);
      tarn__thrift_w_string(&w, 1, m->kv[i].key);
      if (m->kv[i].value)
        tarn__thrift_w_string(&w, 2, m->kv[i].value);
      tarn__thrift_w_struct_end(&w);
    }
  }
  if (m->created_by)
    tarn__thrift_w_string(&w, 6, m->created_by);
  tarn__thrift_w_struct_end(&w);
  return w.rc;
}

/* ---- page headers ----------------------------------------------------- */

#define PAGE "parquet page"

static int decode_data_page_header(rd_t *d, tarn__pq_page_header *h, int v2) {
  int16_t id;
  int type, rc = 0;
  unsigned seen = 0;
  size_t start = at(d);
  int64_t nulls = -1;
  FIELDS(d, id, type) {
    if (v2) {
      switch (id) {
      case 1: rc = tarn__thrift_i32(d, type, &h->num_values, "DataPageHeaderV2.num_values"); break;
      case 2: rc = tarn__thrift_i32(d, type, &h->num_nulls, "DataPageHeaderV2.num_nulls"); break;
      case 3: rc = tarn__thrift_i32(d, type, &h->num_rows, "DataPageHeaderV2.num_rows"); break;
      case 4: rc = tarn__thrift_i32(d, type, &h->encoding, "DataPageHeaderV2.encoding"); break;
      case 5:
        rc = tarn__thrift_i32(d, type, &h->def_len,
                              "DataPageHeaderV2.definition_levels_byte_length");
        break;
      case 6:
        rc = tarn__thrift_i32(d, type, &h->rep_len,
                              "DataPageHeaderV2.repetition_levels_byte_length");
        break;
      case 7:
        rc = tarn__thrift_bool(d, type, 0, &h->is_compressed, "DataPageHeaderV2.is_compressed");
        break;
      default: rc = tarn__thrift_skip(d, type);
      }
    } else {
      switch (id) {
      case 1: rc = tarn__thrift_i32(d, type, &h->num_values, "DataPageHeader.num_values"); break;
      case 2: rc = tarn__thrift_i32(d, type, &h->encoding, "DataPageHeader.encoding"); break;
      case 3:
        rc =
            tarn__thrift_i32(d, type, &h->def_encoding, "DataPageHeader.definition_level_encoding");
        break;
      case 5:
        if ((rc = tarn__thrift_expect(d, type, TARN__T_STRUCT, "DataPageHeader.statistics")) == 0 &&
            (rc = decode_statistics(d, &nulls)) == 0 && nulls >= 0 && nulls <= INT32_MAX)
          h->num_nulls = (int32_t)nulls;
        break;
      default: rc = tarn__thrift_skip(d, type);
      }
    }
    if (rc)
      return rc;
    if (id > 0 && id < 32)
      seen |= 1u << id;
  }
  if (rc)
    return rc;
  unsigned need =
      v2 ? (1u << 1 | 1u << 2 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6) : (1u << 1 | 1u << 2);
  if ((seen & need) != need)
    return tarn__corrupt(PAGE, start, "%s lacks a required field",
                         v2 ? "DataPageHeaderV2" : "DataPageHeader");
  if (h->num_values < 0 || (v2 && (h->num_nulls < 0 || h->num_nulls > h->num_values ||
                                   h->def_len < 0 || h->rep_len < 0)))
    return tarn__corrupt(PAGE, start, "negative or inconsistent counts in the data page header");
  return 0;
}

static int decode_dict_page_header(rd_t *d, tarn__pq_page_header *h) {
  int16_t id;
  int type, rc = 0, have = 0;
  size_t start = at(d);
  FIELDS(d, id, type) {
    if (id == 1)
      rc = tarn__thrift_i32(d, type, &h->num_values, "DictionaryPageHeader.num_values"), have |= 1;
    else if (id == 2)
      rc = tarn__thrift_i32(d, type, &h->encoding, "DictionaryPageHeader.encoding"), have |= 2;
    else
      rc = tarn__thrift_skip(d, type);
    if (rc)
      return rc;
  }
  if (rc == 0 && (have != 3 || h->num_values < 0))
    rc = tarn__corrupt(PAGE, start, "DictionaryPageHeader lacks num_values or encoding");
  return rc;
}

int tarn__pq_page_header_decode(const uint8_t *p, size_t n, uint64_t base, tarn__pq_page_header *h,
                                size_t *used) {
  rd_t d;
  int16_t id;
  int type, rc = 0, have_sub = 0;
  unsigned seen = 0;
  memset(h, 0, sizeof *h);
  h->type = -1;
  h->num_nulls = -1;
  h->is_compressed = 1;
  tarn__thrift_rd_init(&d, p, n, (size_t)base, PAGE);
  FIELDS(&d, id, type) {
    switch (id) {
    case 1: rc = tarn__thrift_i32(&d, type, &h->type, "PageHeader.type"); break;
    case 2:
      rc = tarn__thrift_i32(&d, type, &h->uncompressed_size, "PageHeader.uncompressed_page_size");
      break;
    case 3:
      rc = tarn__thrift_i32(&d, type, &h->compressed_size, "PageHeader.compressed_page_size");
      break;
    case 5:
    case 7:
    case 8:
      if ((rc = tarn__thrift_expect(&d, type, TARN__T_STRUCT, "PageHeader's page header")))
        break;
      if (id == 7)
        rc = decode_dict_page_header(&d, h);
      else
        rc = decode_data_page_header(&d, h, id == 8);
      have_sub |= 1 << id;
      break;
    default: rc = tarn__thrift_skip(&d, type);
    }
    if (rc)
      return rc;
    if (id > 0 && id < 32)
      seen |= 1u << id;
  }
  if (rc)
    return rc;
  if ((seen & 0xe) != 0xe)
    return tarn__corrupt(PAGE, (size_t)base, "PageHeader lacks type or a page size");
  if (h->uncompressed_size < 0 || h->compressed_size < 0)
    return tarn__corrupt(PAGE, (size_t)base, "negative page size");
  int want = h->type == TARN_PARQUET_DATA_PAGE         ? 1 << 5
             : h->type == TARN_PARQUET_DICTIONARY_PAGE ? 1 << 7
             : h->type == TARN_PARQUET_DATA_PAGE_V2    ? 1 << 8
                                                       : 0;
  if (want && !(have_sub & want))
    return tarn__corrupt(PAGE, (size_t)base, "page of type %d lacks its own header", h->type);
  *used = d.r.off;
  return 0;
}

int tarn__pq_page_header_encode(const tarn__pq_page_header *h, tarn_buf *b) {
  wr_t w;
  tarn__thrift_wr_init(&w, b);
  tarn__thrift_w_struct_begin(&w, -1);
  tarn__thrift_w_i32(&w, 1, h->type);
  tarn__thrift_w_i32(&w, 2, h->uncompressed_size);
  tarn__thrift_w_i32(&w, 3, h->compressed_size);
  if (h->type == TARN_PARQUET_DICTIONARY_PAGE) {
    tarn__thrift_w_struct_begin(&w, 7);
    tarn__thrift_w_i32(&w, 1, h->num_values);
    tarn__thrift_w_i32(&w, 2, h->encoding);
    tarn__thrift_w_struct_end(&w);
  } else if (h->type == TARN_PARQUET_DATA_PAGE_V2) {
    tarn__thrift_w_struct_begin(&w, 8);
    tarn__thrift_w_i32(&w, 1, h->num_values);
    tarn__thrift_w_i32(&w, 2, h->num_nulls < 0 ? 0 : h->num_nulls);
    tarn__thrift_w_i32(&w, 3, h->num_rows);
    tarn__thrift_w_i32(&w, 4, h->encoding);
    tarn__thrift_w_i32(&w, 5, h->def_len);
    tarn__thrift_w_i32(&w, 6, h->rep_len);
    tarn__thrift_w_bool(&w, 7, h->is_compressed);
    tarn__thrift_w_struct_end(&w);
  } else {
    tarn__thrift_w_struct_begin(&w, 5); /* DataPageHeader */
    tarn__thrift_w_i32(&w, 1, h->num_values);
    tarn__thrift_w_i32(&w, 2, h->encoding);
    tarn__thrift_w_i32(&w, 3, h->def_encoding);
    tarn__thrift_w_i32(&w, 4, TARN_PARQUET_RLE);
    if (h->num_nulls >= 0) {
      tarn__thrift_w_struct_begin(&w, 5);
      tarn__thrift_w_i64(&w, 3, h->num_nulls);
      tarn__thrift_w_struct_end(&w);
    }
    tarn__thrift_w_struct_end(&w);
  }
  tarn__thrift_w_struct_end(&w);
  return w.rc;
}
