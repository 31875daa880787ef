/* tarn inspect parquet FILE [--rows A..B] [--json]: a compacted object's
 * schema, footer key/value metadata, row groups, pages and codecs, and rows. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "tarn/error.h"
#include "tarn/parquet.h"

#define SHOW_MAX 256 /* longer payloads are shown by length only, unless --full */

static const char usage[] =
    "usage: tarn inspect parquet FILE [--rows A..B [--full]] [--json]\n"
    "\n"
    "Shows a compacted object's Parquet schema, footer key/value metadata, row\n"
    "groups with the payload column's pages and codecs. --rows A..B also shows\n"
    "rows A up to but not including B (A.. runs to the end): the payload in hex,\n"
    "or its length when longer than 256 bytes; null payloads as null. --full\n"
    "shows every payload whole, whatever its length (in --json, \"payload\" is\n"
    "then always there), so that a script can dump a file's rows.\n"
    "The file is read by byte ranges: the footer, then only what is shown.\n";

static int file_read(void *ctx, uint64_t off, void *buf, size_t n) {
  FILE *f = ctx;
  if (fseeko(f, (off_t)off, SEEK_SET) != 0)
    return tarn_set_errno(errno, "seek");
  if (fread(buf, 1, n, f) != n)
    return ferror(f) ? tarn_set_errno(errno, "read") : tarn_set_errmsg(TARN_EIO, "short read");
  return 0;
}

static int parse_rows(const char *s, uint64_t *a, uint64_t *b) {
  char *end;
  errno = 0;
  *a = strtoull(s, &end, 10);
  if (end == s || errno || strncmp(end, "..", 2) != 0)
    return -1;
  s = end + 2;
  if (!*s) {
    *b = UINT64_MAX;
    return 0;
  }
  *b = strtoull(s, &end, 10);
  return end == s || *end || errno || *b < *a ? -1 : 0;
}

typedef struct page_ctx {
  json_t *arr; /* NULL: print */
} page_ctx;

static int on_page(void *ctx, const tarn_parquet_page_info *pg) {
  page_ctx *c = ctx;
  if (!c->arr) {
    printf("    page at %" PRIu64 ": %-15s header %u, compressed %d, uncompressed %d, values %d",
           pg->offset, tarn_parquet_page_type_name(pg->type), pg->header_size, pg->compressed_size,
           pg->uncompressed_size, pg->num_values);
    if (pg->type != TARN_PARQUET_INDEX_PAGE)
      printf(", encoding %s", tarn_parquet_encoding_name(pg->encoding));
    if (pg->type == TARN_PARQUET_DATA_PAGE_V2)
      printf(", nulls %d, is_compressed %s", pg->num_nulls, pg->is_compressed ? "true" : "false");
    printf("\n");
    return 0;
  }
  json_t *o = json_pack("{s:I,s:s,s:i,s:i,s:i,s:i}", "offset", (json_int_t)pg->offset, "type",
                        tarn_parquet_page_type_name(pg->type), "header_size", (int)pg->header_size,
                        "compressed_page_size", pg->compressed_size, "uncompressed_page_size",
                        pg->uncompressed_size, "num_values", pg->num_values);
  if (!o)
    return tarn_set_errmsg(TARN_ENOMEM, "out of memory");
  if (pg->type != TARN_PARQUET_INDEX_PAGE)
    json_object_set_new(o, "encoding", json_string(tarn_parquet_encoding_name(pg->encoding)));
  if (pg->type == TARN_PARQUET_DATA_PAGE_V2) {
    json_object_set_new(o, "num_nulls", json_integer(pg->num_nulls));
    json_object_set_new(o, "is_compressed", json_boolean(pg->is_compressed));
  }
  json_array_append_new(c->arr, o);
  return 0;
}

static void print_meta(const char *path, uint64_t size, const tarn_parquet_meta *m) {
  printf("file                %s (%" PRIu64 " bytes)\n", path, size);
  printf("version             %d\n", m->version);
  printf("created_by          %s\n", m->created_by ? m->created_by : "(absent)");
  printf("num_rows            %lld\n", (long long)m->num_rows);
  printf("schema\n");
  for (size_t i = 0; i < m->n_schema; i++) {
    const tarn_parquet_schema_element *e = &m->schema[i];
    if (e->num_children > 0 || i == 0)
      printf("  %-22s group of %d%s%s\n", e->name, e->num_children, e->repetition >= 0 ? ", " : "",
             e->repetition >= 0 ? tarn_parquet_repetition_name(e->repetition) : "");
    else
      printf("  %-22s %s %s%s\n", e->name, tarn_parquet_type_name(e->type),
             tarn_parquet_repetition_name(e->repetition),
             i - 1 == m->payload_column ? "   <- payload" : "");
  }
  printf("key/value metadata\n");
  for (size_t i = 0; i < m->n_kv; i++)
    printf("  %-22s %s\n", m->kv[i].key, m->kv[i].value ? m->kv[i].value : "(no value)");
}

static void print_group(size_t g, const tarn_parquet_row_group *rg) {
  const tarn_parquet_chunk *c = &rg->chunk;
  printf("row group %zu: %lld rows, %lld bytes; payload column: %s, %lld values", g,
         (long long)rg->num_rows, (long long)rg->total_byte_size, tarn_parquet_codec_name(c->codec),
         (long long)c->num_values);
  if (c->null_count >= 0)
    printf(", %lld nulls", (long long)c->null_count);
  printf(", %lld bytes compressed, %lld uncompressed, data_page_offset %lld",
         (long long)c->total_compressed_size, (long long)c->total_uncompressed_size,
         (long long)c->data_page_offset);
  if (c->dictionary_page_offset >= 0)
    printf(", dictionary_page_offset %lld", (long long)c->dictionary_page_offset);
  printf(", encodings");
  for (size_t i = 0; i < c->n_encodings; i++)
    printf("%s%s", i ? "," : " ", tarn_parquet_encoding_name(c->encodings[i]));
  printf("\n");
}

static json_t *meta_json(const char *path, uint64_t size, const tarn_parquet_meta *m) {
  json_t *schema = json_array(), *kv = json_array();
  for (size_t i = 0; i < m->n_schema; i++) {
    const tarn_parquet_schema_element *e = &m->schema[i];
    json_t *o = json_pack("{s:s}", "name", e->name);
    if (e->type >= 0)
      json_object_set_new(o, "type", json_string(tarn_parquet_type_name(e->type)));
    if (e->repetition >= 0)
      json_object_set_new(o, "repetition_type",
                          json_string(tarn_parquet_repetition_name(e->repetition)));
    if (e->num_children > 0)
      json_object_set_new(o, "num_children", json_integer(e->num_children));
    if (e->converted_type >= 0)
      json_object_set_new(o, "converted_type", json_integer(e->converted_type));
    json_array_append_new(schema, o);
  }
  for (size_t i = 0; i < m->n_kv; i++)
    json_array_append_new(kv,
                          json_pack("{s:s,s:s?}", "key", m->kv[i].key, "value", m->kv[i].value));
  json_t *o = json_pack("{s:s,s:I,s:i,s:I,s:o,s:o}", "file", path, "size", (json_int_t)size,
                        "version", m->version, "num_rows", (json_int_t)m->num_rows, "schema",
                        schema, "key_value_metadata", kv);
  if (o && m->created_by)
    json_object_set_new(o, "created_by", json_string(m->created_by));
  return o;
}

static json_t *group_json(const tarn_parquet_row_group *rg, json_t *pages) {
  const tarn_parquet_chunk *c = &rg->chunk;
  json_t *enc = json_array();
  for (size_t i = 0; i < c->n_encodings; i++)
    json_array_append_new(enc, json_string(tarn_parquet_encoding_name(c->encodings[i])));
  json_t *col = json_pack(
      "{s:s,s:s,s:o,s:I,s:I,s:I,s:I}", "type", tarn_parquet_type_name(c->type), "codec",
      tarn_parquet_codec_name(c->codec), "encodings", enc, "num_values", (json_int_t)c->num_values,
      "total_compressed_size", (json_int_t)c->total_compressed_size, "total_uncompressed_size",
      (json_int_t)c->total_uncompressed_size, "data_page_offset", (json_int_t)c->data_page_offset);
  if (col && c->dictionary_page_offset >= 0)
    json_object_set_new(col, "dictionary_page_offset", json_integer(c->dictionary_page_offset));
  if (col && c->null_count >= 0)
    json_object_set_new(col, "null_count", json_integer(c->null_count));
  if (col)
    json_object_set_new(col, "pages", pages);
  return json_pack("{s:I,s:I,s:o}", "num_rows", (json_int_t)rg->num_rows, "total_byte_size",
                   (json_int_t)rg->total_byte_size, "payload", col);
}

/* Shows rows [a, b); NULL rows: print. */
static int show_rows(tarn_parquet_reader *r, uint64_t a, uint64_t b, size_t show_max,
                     json_t *rows) {
  uint64_t n_rows = (uint64_t)tarn_parquet_get_meta(r)->num_rows;
  if (a > n_rows)
    return tarn_set_errmsg(
        TARN_EINVAL, "--rows: row %" PRIu64 " is past the last row (%" PRIu64 " rows)", a, n_rows);
  if (b > n_rows)
    b = n_rows;
  int rc = tarn_parquet_seek(r, a);
  if (!rows && rc == 0)
    printf("rows %" PRIu64 "..%" PRIu64 "\n", a, b);
  for (uint64_t i = a; rc == 0 && i < b; i++) {
    const uint8_t *p;
    size_t n;
    int is_null;
    if ((rc = tarn_parquet_next(r, &p, &n, &is_null)))
      break;
    if (rows) {
      json_t *o = json_pack("{s:I}", "row", (json_int_t)i);
      if (is_null) {
        json_object_set_new(o, "payload", json_null());
      } else {
        json_object_set_new(o, "length", json_integer((json_int_t)n));
        if (n <= show_max) {
          json_t *hex = tarn_cli_json_hex(p, n);
          if (!hex) {
            json_decref(o);
            rc = tarn_set_errmsg(TARN_ENOMEM, "out of memory");
            break;
          }
          json_object_set_new(o, "payload", hex);
        }
      }
      json_array_append_new(rows, o);
    } else if (is_null) {
      printf("  %-8" PRIu64 " null\n", i);
    } else if (n > show_max) {
      printf("  %-8" PRIu64 " (%zu bytes)\n", i, n);
    } else {
      printf("  %-8" PRIu64 " ", i);
      tarn_cli_print_hex(stdout, p, n, 0);
      printf("%s\n", n ? "" : "(empty)");
    }
  }
  return rc;
}

int tarn_inspect_parquet(int argc, char **argv) {
  const char *rows_arg = NULL;
  int json = 0, full = 0, nargs;
  const tarn_cli_opt opts[] = {TARN_CLI_OPT_STRING("--rows", &rows_arg, "A..B or A.."),
                               TARN_CLI_OPT_FLAG("--full", &full, 1),
                               {0}};
  const tarn_cli_verb v = {"inspect parquet", NULL, opts, NULL, &json, 1, usage};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  const char *path = nargs ? argv[1] : NULL;
  uint64_t a = 0, b = 0;
  if (!path)
    return tarn_cli_usage_error("inspect parquet", "needs a FILE");
  if (rows_arg && parse_rows(rows_arg, &a, &b))
    return tarn_cli_usage_error("inspect parquet", "--rows takes A..B or A.., not %s", rows_arg);
  if (full && !rows_arg)
    return tarn_cli_usage_error("inspect parquet", "--full goes with --rows");

  FILE *f = fopen(path, "rb");
  if (!f) {
    tarn_set_errno(errno, "cannot open %s", path);
    return tarn_cli_fail("inspect parquet");
  }
  uint64_t size = 0;
  if (fseeko(f, 0, SEEK_END) == 0)
    size = (uint64_t)ftello(f);
  tarn_parquet_reader *r = NULL;
  int rc = tarn_parquet_open(&r, file_read, f, size, NULL);
  json_t *out = NULL;
  if (rc == 0) {
    const tarn_parquet_meta *m = tarn_parquet_get_meta(r);
    if (json) {
      out = meta_json(path, size, m);
      json_t *groups = json_array();
      for (size_t g = 0; rc == 0 && g < m->n_row_groups; g++) {
        page_ctx pc = {json_array()};
        rc = tarn_parquet_pages(r, g, on_page, &pc);
        json_array_append_new(groups, group_json(&m->row_groups[g], pc.arr));
      }
      json_object_set_new(out, "row_groups", groups);
    } else {
      print_meta(path, size, m);
      for (size_t g = 0; rc == 0 && g < m->n_row_groups; g++) {
        print_group(g, &m->row_groups[g]);
        page_ctx pc = {NULL};
        rc = tarn_parquet_pages(r, g, on_page, &pc);
      }
    }
    if (rc == 0 && rows_arg) {
      json_t *rows = json ? json_array() : NULL;
      rc = show_rows(r, a, b, full ? SIZE_MAX : SHOW_MAX, rows);
      if (rows)
        json_object_set_new(out, "rows", rows);
    }
  }
  tarn_parquet_close(r);
  fclose(f);
  if (rc) {
    json_decref(out);
    fflush(stdout);
    return tarn_cli_fail("inspect parquet");
  }
  return json ? tarn_cli_print_json(out) : TARN_EXIT_OK;
}
