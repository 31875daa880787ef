/* The structures `tarn inspect` decodes; one function per structure. */
#ifndef TARN_CLI_INSPECT_H
#define TARN_CLI_INSPECT_H

#include "cli/cli.h"
#include "tarn/fileindex.h"

/* Offset index values, entry offsets and file indexes (inspect_index.c,
 * inspect_offsets.c, inspect_fileindex.c). */
int tarn_inspect_index(int argc, char **argv);
int tarn_inspect_offsets(int argc, char **argv);
int tarn_inspect_fileindex(int argc, char **argv);
/* Shared by those three: the JSON and text forms of boundaries, entries
 * [start, end) and a file index (first base = s). */
json_t *tarn_inspect_boundaries_json(const uint32_t *a, size_t n);
json_t *tarn_inspect_entries_json(const uint32_t *a, size_t n);
void tarn_inspect_entries_print(const uint32_t *a, size_t n, const char *indent);
json_t *tarn_inspect_file_index_json(const tarn_file_index *fi, int64_t s);
void tarn_inspect_file_index_print(const tarn_file_index *fi, int64_t s, const char *indent);

int tarn_inspect_wal(int argc, char **argv);
int tarn_inspect_key(int argc, char **argv);
int tarn_inspect_companion(int argc, char **argv);
int tarn_inspect_kafka(int argc, char **argv);

int tarn_inspect_parquet(int argc, char **argv);

/* Express slot objects: a flight or poison (inspect_slot.c). */
int tarn_inspect_slot(int argc, char **argv);
int tarn_inspect_poison(int argc, char **argv);

#endif
