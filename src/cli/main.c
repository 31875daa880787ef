/* tarn — the command for operators of a Lakestream (format v3) deployment. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/log_cmds.h"
#include "tarn/version.h"

static int cmd_version(int argc, char **argv) {
  printf("tarn %s (Lakestream storage format version 3)\n", tarn_version());
  return 0;
}

static const tarn_cli_cmd commands[] = {
    {"append", "append records to a log, from stdin or files", tarn_cmd_append},
    {"read", "print a log's entries from an offset; --follow waits for new ones", tarn_cmd_read},
    {"inspect", "decode any format structure: WAL object, key, index value, ...", tarn_cmd_inspect},
    {"init", "create a deployment (directories, catalog record)", tarn_cmd_init},
    {"stream", "create, list, describe, drop and grow streams", tarn_cmd_stream},
    {"topic", "create, list, describe, delete and grow Kafka topics", tarn_cmd_topic},
    {"kafka", "Kafka listener settings: SASL users", tarn_cmd_kafka},
    {"trim", "soft-trim a partition of a stream through an offset", tarn_cmd_trim},
    {"offsets", "first offset, end offset and trim marker per partition", tarn_cmd_offsets},
    {"fsck", "check a deployment's invariants: index, objects, compacted files", tarn_cmd_fsck},
    {"probe", "check what tarn relies on in an object or metadata store", tarn_cmd_probe},
    {"serve", "run a node: compaction, reclamation, WAL collection, /metrics", tarn_cmd_serve},
    {"compact", "compact a log now: RAW records into Parquet files", tarn_cmd_compact},
    {"gc", "reclaim unreferenced WAL objects and compacted files", tarn_cmd_gc},
    {"tasks", "list compaction tasks, their states and errors", tarn_cmd_tasks},
    {"express", "fence and settle express epochs", tarn_cmd_express},
    {"version", "print tarn's version", cmd_version},
    {NULL, NULL, NULL}};

static const char intro[] =
    "usage: tarn COMMAND [ARGS]\n"
    "\n"
    "tarn stores the logs of streams as immutable WAL objects in object storage,\n"
    "located by an offset index in a metadata store (Lakestream format version 3).\n"
    "\n"
    "Exit status: 0 success; 1 bad input or a failed operation; 2 bad command line;\n"
    "3 a store could not be reached.\n";

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--version") == 0)
    return cmd_version(argc - 1, argv + 1);
  return tarn_cli_dispatch("tarn", commands, argc, argv, intro);
}
