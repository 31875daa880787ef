/* tarn inspect — decode any structure of the format and show every field. */
#include "cli/inspect.h"

static const tarn_cli_cmd inspectors[] = {
    /* One line per structure; each lives in src/cli/inspect_<structure>.c. */
    {"parquet", "a compacted object: schema, footer metadata, row groups, pages, rows",
     tarn_inspect_parquet},
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
