/* tarn inspect — decode any structure of the format and show every field. */
#include "cli/inspect.h"

static const tarn_cli_cmd inspectors[] = {
    /* One line per structure; each lives in src/cli/inspect_<structure>.c. */
    {"wal", "a WAL object (v3, or legacy v1/v2): sections, entries, payloads", tarn_inspect_wal},
    {"key", "an offset index key: log_id, end_offset, cumulative_size", tarn_inspect_key},
    {"index", "an index record's value: EntryIndex (v3) or legacy v1/v2 string",
     tarn_inspect_index},
    {"offsets", "entry_offsets words (FastPFOR) <-> entry boundaries", tarn_inspect_offsets},
    {"fileindex", "a PARQUET record's file index (Base64)", tarn_inspect_fileindex},
    {"companion", "a companion (.index) file: blocks, rows, offset map", tarn_inspect_companion},
    {"kafka", "a Kafka entry payload: record batches and their offsets", tarn_inspect_kafka},
    {"parquet", "a compacted object: schema, footer metadata, row groups, pages, rows",
     tarn_inspect_parquet},
    {"slot", "an express slot object: a flight (WAL sections) or poison", tarn_inspect_slot},
    {"poison", "an express poison object: the star, epoch and slot it kills", tarn_inspect_poison},
    {NULL, NULL, NULL}};

static const char intro[] =
    "usage: tarn inspect STRUCTURE [ARGS] [--json]\n"
    "\n"
    "Decodes one structure of the Lakestream format (version 3, and legacy 1 and 2\n"
    "where noted) and shows every field: a readable table by default, or JSON with\n"
    "the spec's field names with --json.\n"
    "\n"
    "Exit status: 0 decoded; 1 the input is malformed (one line on stderr names the\n"
    "structure, the byte offset and the fault); 2 bad command line.\n";

int tarn_cmd_inspect(int argc, char **argv) {
  return tarn_cli_dispatch("tarn inspect", inspectors, argc, argv, intro);
}
