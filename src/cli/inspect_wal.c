/* tarn inspect wal FILE [--json]: every field of a WAL object, v3 or legacy (detected). */
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "tarn/error.h"
#include "tarn/wal.h"

#define PREVIEW 16 /* payload bytes shown per entry */

static const char usage[] =
    "usage: tarn inspect wal FILE [--json]\n"
    "\n"
    "Decodes a WAL object (format version 3, or the legacy layout of versions 1\n"
    "and 2, told apart by the bytes) and lists its log sections and entries with\n"
    "the first %d bytes of each payload. FILE '-' reads stdin. With --json, the\n"
    "fields carry the spec's names: index_length, index_version, sections[log_id,\n"
    "entry_count, entries[payload_offset, payload_size, record_count]],\n"
    "payload_region_offset, payload_region_size.\n";

static void print_preview(const tarn_wal_entry *e) {
  size_t n = e->payload_size < PREVIEW ? (size_t)e->payload_size : PREVIEW;
  tarn_cli_print_hex(stdout, e->payload, n, 0);
  if (n < e->payload_size)
    printf("...");
}

static void print_table(const tarn_wal *w) {
  int legacy = w->version == TARN_WAL_LEGACY;
  printf("wal object             %llu bytes, %s\n", (unsigned long long)w->object_size,
         legacy ? "legacy layout (format version 1 or 2)" : "format version 3");
  printf("index_length           %llu\n", (unsigned long long)w->index_length);
  if (!legacy)
    printf("index_version          %u\n", w->index_version);
  printf("payload_region_offset  %llu\n", (unsigned long long)w->payload_region_offset);
  printf("payload_region_size    %llu\n", (unsigned long long)w->payload_region_size);
  printf("sections               %zu\n", w->section_count);
  for (size_t s = 0; s < w->section_count; s++) {
    const tarn_wal_section *sec = &w->sections[s];
    printf("\nsection %zu at byte %zu: log_id %llu, entry_count %zu, payload bytes %llu", s,
           sec->index_pos, (unsigned long long)sec->log_id, sec->entry_count,
           (unsigned long long)sec->payload_total);
    if (!legacy)
      printf(", records %llu", (unsigned long long)sec->record_total);
    printf("\n  %-6s %-10s %-14s %-12s %-12s %s\n", legacy ? "entry_id" : "entry", "index_byte",
           "payload_offset", legacy ? "payload_length" : "payload_size",
           legacy ? "" : "record_count", "payload");
    for (size_t i = 0; i < sec->entry_count; i++) {
      const tarn_wal_entry *e = &sec->entries[i];
      printf("  %-6llu %-10zu %-14llu %-12llu ", (unsigned long long)e->entry_id, e->index_pos,
             (unsigned long long)e->payload_offset, (unsigned long long)e->payload_size);
      if (legacy)
        printf("%-12s ", "");
      else
        printf("%-12u ", e->record_count);
      print_preview(e);
      putchar('\n');
    }
  }
}

static json_t *to_json(const tarn_wal *w) {
  int legacy = w->version == TARN_WAL_LEGACY;
  json_t *o = json_object(), *secs = json_array();
  json_object_set_new(o, "object_size", json_integer((json_int_t)w->object_size));
  json_object_set_new(o, "format_version", legacy ? json_string("legacy") : json_integer(3));
  json_object_set_new(o, "index_length", json_integer((json_int_t)w->index_length));
  if (!legacy)
    json_object_set_new(o, "index_version", json_integer(w->index_version));
  json_object_set_new(o, "payload_region_offset",
                      json_integer((json_int_t)w->payload_region_offset));
  json_object_set_new(o, "payload_region_size", json_integer((json_int_t)w->payload_region_size));
  for (size_t s = 0; s < w->section_count; s++) {
    const tarn_wal_section *sec = &w->sections[s];
    json_t *js = json_object(), *ents = json_array();
    json_object_set_new(js, "log_id", json_integer((json_int_t)sec->log_id));
    json_object_set_new(js, "entry_count", json_integer((json_int_t)sec->entry_count));
    if (!legacy) /* the d1 and d2 of the section's index put */
      json_object_set_new(js, "message_count", json_integer((json_int_t)sec->record_total));
    json_object_set_new(js, "entry_size_bytes", json_integer((json_int_t)sec->payload_total));
    for (size_t i = 0; i < sec->entry_count; i++) {
      const tarn_wal_entry *e = &sec->entries[i];
      json_t *je = json_object();
      if (legacy)
        json_object_set_new(je, "entry_id", json_integer((json_int_t)e->entry_id));
      json_object_set_new(je, "payload_offset", json_integer((json_int_t)e->payload_offset));
      json_object_set_new(je, legacy ? "payload_length" : "payload_size",
                          json_integer((json_int_t)e->payload_size));
      if (!legacy)
        json_object_set_new(je, "record_count", json_integer(e->record_count));
      size_t n = e->payload_size < PREVIEW ? (size_t)e->payload_size : PREVIEW;
      json_object_set_new(je, "payload_preview", tarn_cli_json_hex(e->payload, n));
      json_array_append_new(ents, je);
    }
    json_object_set_new(js, "entries", ents);
    json_array_append_new(secs, js);
  }
  json_object_set_new(o, "sections", secs);
  return o;
}

static void help(void) { printf(usage, PREVIEW); }

int tarn_inspect_wal(int argc, char **argv) {
  int json = 0, nargs;
  const tarn_cli_verb v = {"inspect wal", help, NULL, NULL, &json, 1, NULL};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  const char *file = nargs ? argv[1] : NULL;
  if (!file)
    return tarn_cli_usage_error("inspect wal", "FILE is missing");
  uint8_t *obj;
  size_t len;
  if (tarn_cli_read_file(file, &obj, &len))
    return tarn_cli_fail("inspect wal");
  tarn_wal w;
  if (tarn_wal_decode(obj, len, &w)) {
    free(obj);
    return tarn_cli_fail(file);
  }
  int rc = TARN_EXIT_OK;
  if (json)
    rc = tarn_cli_print_json(to_json(&w));
  else
    print_table(&w);
  tarn_wal_free(&w);
  free(obj);
  return rc;
}
