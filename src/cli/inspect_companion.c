/* tarn inspect companion: the blocks, rows and offset map of a companion file. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "tarn/companion.h"
#include "tarn/error.h"

static const char usage[] =
    "usage: tarn inspect companion FILE [--stream] [--lookup OFFSET] [--json]\n"
    "\n"
    "Decodes a companion (.index) file: one gzip stream of JSON row blocks, the\n"
    "sentinel 0x7FFFFFFF and the offset map. Shows each block, each row's decoded\n"
    "EntryHeader and the offset map (sorted numerically). FILE '-' is stdin.\n"
    "\n"
    "  --stream         FILE is the decompressed stream, not gzip\n"
    "  --lookup OFFSET  also show the row of the entry holding OFFSET (floor lookup)\n"
    "  --json           JSON with the spec's field names\n";

static json_t *header_json(size_t row, const tarn_entry_header *h) {
  return json_pack("{s:I,s:I,s:i,s:I,s:i,s:I}", "row", (json_int_t)row, "offset",
                   (json_int_t)h->offset, "numberOfMessages", (int)h->record_count,
                   "writtenTimestamp", (json_int_t)h->timestamp_ms, "entrySize", (int)h->entry_size,
                   "cumulativeSize", (json_int_t)h->cumulative_size);
}

int tarn_inspect_companion(int argc, char **argv) {
  int json = 0, stream = 0, lookup = 0, nargs;
  int64_t at = 0;
  const tarn_cli_opt opts[] = {
      TARN_CLI_OPT_FLAG("--stream", &stream, 1),
      TARN_CLI_OPT_UINT("--lookup", &at, 0, INT64_MAX, "a non-negative offset", &lookup),
      {0}};
  const tarn_cli_verb v = {"inspect companion", NULL, opts, NULL, &json, 1, usage};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  const char *path = nargs ? argv[1] : NULL;
  if (!path)
    return tarn_cli_usage_error("inspect companion", "FILE is missing");
  uint8_t *data;
  size_t len;
  if (tarn_cli_read_file(path, &data, &len))
    return tarn_cli_fail("inspect companion");
  tarn_companion c;
  int rc = stream ? tarn_companion_decode_stream(&c, data, len)
                  : tarn_companion_decode(&c, data, len, 0);
  free(data);
  if (rc)
    return tarn_cli_fail("inspect companion");
  size_t row = 0;
  int found = 0;
  if (lookup) {
    rc = tarn_companion_floor(&c, at, &row);
    if (rc && rc != TARN_ENOTFOUND) {
      tarn_companion_free(&c);
      return tarn_cli_fail("inspect companion");
    }
    found = rc == 0;
  }
  if (json) {
    json_t *o = json_object(), *blocks = json_array(), *rows = json_array(), *map = json_object();
    json_object_set_new(o, "streamBytes", json_integer((json_int_t)c.stream_len));
    for (size_t i = 0; i < c.nblocks; i++)
      json_array_append_new(blocks,
                            json_pack("{s:I,s:I,s:I,s:I}", "position", (json_int_t)c.blocks[i].pos,
                                      "length", (json_int_t)c.blocks[i].len, "firstRow",
                                      (json_int_t)c.blocks[i].first_row, "rows",
                                      (json_int_t)c.blocks[i].rows));
    for (size_t i = 0; i < c.nrows; i++)
      json_array_append_new(rows, header_json(i, &c.rows[i]));
    for (size_t i = 0; i < c.nmap; i++) {
      char k[24];
      snprintf(k, sizeof k, "%" PRId64, c.map[i].offset);
      json_object_set_new(map, k, json_integer((json_int_t)c.map[i].row));
    }
    json_object_set_new(o, "blocks", blocks);
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "offsetMap", map);
    if (lookup)
      json_object_set_new(o, "lookup",
                          json_pack("{s:I,s:o}", "offset", (json_int_t)at, "row",
                                    found ? json_integer((json_int_t)row) : json_null()));
    tarn_companion_free(&c);
    return tarn_cli_print_json(o);
  }
  printf("companion file: %zu rows in %zu blocks, %zu-byte stream\n", c.nrows, c.nblocks,
         c.stream_len);
  printf("\n%-6s %10s %10s %10s %8s\n", "block", "position", "length", "first_row", "rows");
  for (size_t i = 0; i < c.nblocks; i++)
    printf("%-6zu %10zu %10zu %10zu %8zu\n", i, c.blocks[i].pos, c.blocks[i].len,
           c.blocks[i].first_row, c.blocks[i].rows);
  printf("\n%-6s %20s %16s %16s %10s %16s\n", "row", "offset", "numberOfMessages",
         "writtenTimestamp", "entrySize", "cumulativeSize");
  for (size_t i = 0; i < c.nrows; i++) {
    const tarn_entry_header *h = &c.rows[i];
    printf("%-6zu %20" PRId64 " %16d %16" PRId64 " %10d %16" PRId64 "\n", i, h->offset,
           (int)h->record_count, h->timestamp_ms, (int)h->entry_size, h->cumulative_size);
  }
  printf("\noffset map: %zu keys\n", c.nmap);
  for (size_t i = 0; i < c.nmap; i++)
    printf("  %20" PRId64 " -> row %zu\n", c.map[i].offset, c.map[i].row);
  if (lookup) {
    if (found)
      printf("\nlookup %" PRId64 ": row %zu\n", at, row);
    else
      printf("\nlookup %" PRId64 ": below the first entry\n", at);
  }
  tarn_companion_free(&c);
  return TARN_EXIT_OK;
}
