/* tarn inspect index: an offset index value, version 3 (EntryIndex) or legacy 1/2. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "tarn/entryindex.h"
#include "tarn/error.h"

static const char usage[] =
    "usage: tarn inspect index FILE|- [--start S] [--json]\n"
    "       tarn inspect index --hex HEX [--start S] [--json]\n"
    "\n"
    "Decodes the value of an index record: an EntryIndex message (version 3, which\n"
    "begins 08 03) or a legacy version 1/2 string (which begins with a digit), and\n"
    "shows every field. A RAW record's entry boundaries are shown with its entries\n"
    "[start, end) relative to the record's start offset; a PARQUET record's file\n"
    "index with each file's offsets, the first file based at S (default 0).\n"
    "FILE holds the value's bytes, or their hex text (hex digits and spaces only).\n";

/* A file of hex digits and white space only is hex text (as the .hex files of docs/examples):
 * no index value is, since v3 begins with the byte 08 and a legacy value has '-'. */
static int is_hex_text(const uint8_t *p, size_t n) {
  size_t digits = 0;
  for (size_t i = 0; i < n; i++) {
    if (isxdigit(p[i]))
      digits++;
    else if (!isspace(p[i]))
      return 0;
  }
  return digits > 0;
}

static const char *enum_name(int32_t v, const char *const *names, size_t n) {
  return v >= 0 && (size_t)v < n ? names[v] : NULL;
}
static const char *const file_types[] = {"RAW", "PARQUET"};
static const char *const index_types[] = {"NORMAL", "COMPACT"};
static const char *const compressions[] = {"NONE", "FastPFOR", "ZSTD"};

static json_t *enum_json(int32_t v, const char *const *names, size_t n) {
  const char *s = enum_name(v, names, n);
  return s ? json_string(s) : json_integer(v);
}

static void print_enum(const char *field, int32_t v, const char *const *names, size_t n) {
  const char *s = enum_name(v, names, n);
  printf("%-20s %d%s%s%s\n", field, v, s ? " (" : "", s ? s : "", s ? ")" : "");
}

static int show_v3(const uint8_t *p, size_t len, int64_t s, int json) {
  tarn_entry_index ei;
  if (tarn_entry_index_decode(p, len, &ei))
    return tarn_cli_fail("inspect index");
  tarn_file_index fi = {NULL, 0};
  if (ei.file_index && tarn_file_index_decode_base64(ei.file_index, strlen(ei.file_index), &fi)) {
    tarn_entry_index_free(&ei);
    return tarn_cli_fail("inspect index: extraData CompactedObjectFileIndex");
  }
  int rc = TARN_EXIT_OK;
  if (json) {
    json_t *o = json_object();
    json_object_set_new(o, "version", json_integer(ei.version));
    if (ei.location)
      json_object_set_new(o, "location", json_string(ei.location));
    json_object_set_new(o, "file_type", enum_json(ei.file_type, file_types, 2));
    if (ei.has_index_type)
      json_object_set_new(o, "index_type", enum_json(ei.index_type, index_types, 2));
    json_object_set_new(o, "message_count", json_integer(ei.message_count));
    json_object_set_new(o, "entry_size_bytes", json_integer(ei.entry_size_bytes));
    if (ei.has_file_size)
      json_object_set_new(o, "file_size", json_integer(ei.file_size));
    if (ei.has_offset_in_file)
      json_object_set_new(o, "offset_in_file", json_integer(ei.offset_in_file));
    json_object_set_new(o, "entry_count", json_integer(ei.entry_count));
    if (ei.has_entry_offsets) {
      json_t *eo = json_object();
      json_object_set_new(eo, "compression_type", enum_json(ei.compression_type, compressions, 3));
      if (ei.has_uncompressed_size)
        json_object_set_new(eo, "uncompressed_size", json_integer(ei.uncompressed_size));
      json_object_set_new(eo, "compressed_payload",
                          tarn_cli_json_hex(ei.compressed_payload, ei.compressed_payload_len));
      json_object_set_new(eo, "boundaries",
                          tarn_inspect_boundaries_json(ei.boundaries, ei.n_boundaries));
      json_object_set_new(o, "entry_offsets", eo);
    }
    if (ei.file_type == TARN_FILE_RAW && ei.boundaries)
      json_object_set_new(o, "entries", tarn_inspect_entries_json(ei.boundaries, ei.n_boundaries));
    else if (ei.file_type == TARN_FILE_RAW)
      json_object_set_new(
          o, "entries",
          tarn_inspect_entries_json((const uint32_t[]){(uint32_t)ei.message_count}, 1));
    json_t *xs = json_array();
    for (size_t i = 0; i < ei.n_extra; i++)
      json_array_append_new(
          xs, json_pack("{s:s, s:s}", "key", ei.extra[i].key, "value", ei.extra[i].value));
    json_object_set_new(o, "extraData", xs);
    if (ei.file_index)
      json_object_set_new(o, "file_index", tarn_inspect_file_index_json(&fi, s));
    rc = tarn_cli_print_json(o);
  } else {
    printf("%-20s %d\n", "version", ei.version);
    printf("%-20s %s\n", "location", ei.location ? ei.location : "(absent)");
    print_enum("file_type", ei.file_type, file_types, 2);
    if (ei.has_index_type)
      print_enum("index_type", ei.index_type, index_types, 2);
    printf("%-20s %d\n", "message_count", ei.message_count);
    printf("%-20s %lld\n", "entry_size_bytes", (long long)ei.entry_size_bytes);
    if (ei.has_file_size)
      printf("%-20s %lld\n", "file_size", (long long)ei.file_size);
    if (ei.has_offset_in_file)
      printf("%-20s %lld\n", "offset_in_file", (long long)ei.offset_in_file);
    printf("%-20s %d\n", "entry_count", ei.entry_count);
    if (ei.has_entry_offsets) {
      printf("entry_offsets\n");
      print_enum("  compression_type", ei.compression_type, compressions, 3);
      if (ei.has_uncompressed_size)
        printf("%-20s %d\n", "  uncompressed_size", ei.uncompressed_size);
      printf("%-20s ", "  compressed_payload");
      tarn_cli_print_hex(stdout, ei.compressed_payload, ei.compressed_payload_len, 1);
      printf("\n");
      tarn_inspect_entries_print(ei.boundaries, ei.n_boundaries, "  ");
    }
    for (size_t i = 0; i < ei.n_extra; i++)
      printf("extraData[%zu]         %s = %s\n", i, ei.extra[i].key, ei.extra[i].value);
    if (ei.file_index) {
      printf("file_index           %zu files\n", fi.n);
      tarn_inspect_file_index_print(&fi, s, "  ");
    }
    printf("read from            %s\n",
           tarn_entry_index_read_kind(&ei) == TARN_FILE_RAW
               ? "the WAL object (file_type RAW)"
               : "the compacted files of the file index (file_type PARQUET)");
  }
  tarn_file_index_free(&fi);
  tarn_entry_index_free(&ei);
  return rc;
}

static int show_legacy(const uint8_t *p, size_t len, int json) {
  tarn_legacy_index_value v;
  if (tarn_legacy_index_value_parse(p, len, &v))
    return tarn_cli_fail("inspect index");
  int rc = TARN_EXIT_OK;
  if (json) {
    json_t *o =
        json_pack("{s:i, s:I, s:I, s:s, s:I}", "version", v.version, "message_count",
                  (json_int_t)v.message_count, "entry_size_bytes", (json_int_t)v.entry_size_bytes,
                  "location", v.location, "entry_id", (json_int_t)v.entry_id);
    if (o && v.has_file_type)
      json_object_set_new(o, "file_type", json_string(file_types[v.file_type]));
    rc = tarn_cli_print_json(o);
  } else {
    printf("%-20s %d (legacy string value, Appendix C)\n", "version", v.version);
    printf("%-20s %lld\n", "message_count", (long long)v.message_count);
    printf("%-20s %lld\n", "entry_size_bytes", (long long)v.entry_size_bytes);
    printf("%-20s %s\n", "location", v.location);
    printf("%-20s %lld\n", "entry_id", (long long)v.entry_id);
    if (v.has_file_type)
      printf("%-20s %s\n", "file_type", file_types[v.file_type]);
  }
  tarn_legacy_index_value_free(&v);
  return rc;
}

int tarn_inspect_index(int argc, char **argv) {
  const char *hex = NULL;
  int64_t s = 0;
  int json = 0, nargs;
  const tarn_cli_opt opts[] = {
      TARN_CLI_OPT_STRING("--hex", &hex, "HEX"),
      TARN_CLI_OPT_UINT("--start", &s, 0, INT64_MAX, "an offset >= 0", NULL),
      {0}};
  const tarn_cli_verb verb = {"inspect index", NULL, opts, NULL, &json, 1, usage};
  int ex = tarn_cli_parse(&verb, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  const char *path = nargs ? argv[1] : NULL;
  if (!hex == !path)
    return tarn_cli_usage_error("inspect index", "give exactly one of FILE and --hex HEX");
  uint8_t *p;
  size_t len;
  if (hex ? tarn_cli_parse_hex(hex, &p, &len) : tarn_cli_read_file(path, &p, &len))
    return hex ? tarn_cli_usage_error("inspect index", "%s", tarn_errmsg())
               : tarn_cli_fail("inspect index");
  if (path && is_hex_text(p, len)) {
    char *text = malloc(len + 1);
    uint8_t *bin = NULL;
    if (text) {
      memcpy(text, p, len);
      text[len] = 0;
    }
    int bad = !text || tarn_cli_parse_hex(text, &bin, &len);
    free(text);
    free(p);
    if (bad)
      return tarn_cli_fail("inspect index");
    p = bin;
  }
  int v = tarn_index_value_detect_version(p, len);
  /* A value beginning 08 is a protobuf version field: let the EntryIndex
   * decoder name the version it carries (LS-002). */
  if (v < 0 && len >= 2 && p[0] == 0x08)
    v = 3;
  int rc = v < 0    ? tarn_cli_fail("inspect index")
           : v == 3 ? show_v3(p, len, s, json)
                    : show_legacy(p, len, json);
  free(p);
  return rc;
}
