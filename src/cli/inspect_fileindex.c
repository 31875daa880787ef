/* tarn inspect fileindex BASE64: the file index of a PARQUET record. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "tarn/error.h"
#include "tarn/fileindex.h"

static const char usage[] =
    "usage: tarn inspect fileindex BASE64 [--start S] [--json]\n"
    "\n"
    "Decodes the CompactedObjectFileIndex value of a PARQUET record (standard\n"
    "Base64 of: last_offset int64 BE, name_length int32 BE, name; per file) and\n"
    "shows each file with the offsets it holds. The first file's base offset is\n"
    "the record's start offset S (default 0).\n";

json_t *tarn_inspect_file_index_json(const tarn_file_index *fi, int64_t s) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < fi->n; i++)
    json_array_append_new(a, json_pack("{s:s, s:I, s:I}", "name", fi->files[i].name, "last_offset",
                                       (json_int_t)fi->files[i].last_offset, "base_offset",
                                       (json_int_t)(i ? fi->files[i - 1].last_offset + 1 : s)));
  return a;
}

void tarn_inspect_file_index_print(const tarn_file_index *fi, int64_t s, const char *indent) {
  printf("%s%-6s %-20s %-20s %s\n", indent, "file", "base_offset", "last_offset", "name");
  for (size_t i = 0; i < fi->n; i++)
    printf("%s%-6zu %-20lld %-20lld %s\n", indent, i,
           (long long)(i ? fi->files[i - 1].last_offset + 1 : s),
           (long long)fi->files[i].last_offset, fi->files[i].name);
}

int tarn_inspect_fileindex(int argc, char **argv) {
  int64_t s = 0;
  int json = 0, nargs;
  const tarn_cli_opt opts[] = {
      TARN_CLI_OPT_UINT("--start", &s, 0, INT64_MAX, "an offset >= 0", NULL), {0}};
  const tarn_cli_verb v = {"inspect fileindex", NULL, opts, NULL, &json, 1, usage};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  const char *b64 = nargs ? argv[1] : NULL;
  if (!b64)
    return tarn_cli_usage_error("inspect fileindex", "missing BASE64");
  tarn_file_index fi;
  if (tarn_file_index_decode_base64(b64, strlen(b64), &fi))
    return tarn_cli_fail("inspect fileindex");
  if (fi.files[0].last_offset < s) {
    tarn_file_index_free(&fi);
    fprintf(stderr,
            "tarn: inspect fileindex: file index: byte 0: the first file ends at %lld, "
            "below the start offset %lld\n",
            (long long)fi.files[0].last_offset, (long long)s);
    return TARN_EXIT_FAULT;
  }
  int rc = TARN_EXIT_OK;
  if (json)
    rc = tarn_cli_print_json(json_pack("{s:I, s:o}", "files", (json_int_t)fi.n, "file_index",
                                       tarn_inspect_file_index_json(&fi, s)));
  else {
    printf("files %zu\n", fi.n);
    tarn_inspect_file_index_print(&fi, s, "");
  }
  tarn_file_index_free(&fi);
  return rc;
}
