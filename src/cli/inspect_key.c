/* tarn inspect key KEY [--json]: the fields of an offset index key K(L, e, c). */
#include <string.h>

#include "cli/inspect.h"
#include "tarn/key.h"

static const char usage[] =
    "usage: tarn inspect key KEY [--json]\n"
    "\n"
    "Parses an offset index key, {log_id:020d}-{end_offset:020d}-{cumulative_size:020d}\n"
    "(62 ASCII bytes, each field at most 2^63-1), and shows its fields and the\n"
    "partition P(log_id) that holds it.\n";

int tarn_inspect_key(int argc, char **argv) {
  int json = 0, nargs;
  const tarn_cli_verb v = {"inspect key", NULL, NULL, NULL, &json, 1, usage};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  const char *key = nargs ? argv[1] : NULL;
  if (!key)
    return tarn_cli_usage_error("inspect key", "KEY is missing");
  tarn_key k;
  char part[TARN_KEY_PARTITION_LEN + 1];
  if (tarn_key_parse(key, strlen(key), &k) || tarn_key_partition(part, k.log_id))
    return tarn_cli_fail("inspect key");
  if (json) {
    json_t *o = json_object();
    json_object_set_new(o, "key", json_string(key));
    json_object_set_new(o, "log_id", json_integer((json_int_t)k.log_id));
    json_object_set_new(o, "end_offset", json_integer((json_int_t)k.end_offset));
    json_object_set_new(o, "cumulative_size", json_integer((json_int_t)k.cumulative_size));
    json_object_set_new(o, "partition", json_string(part));
    return tarn_cli_print_json(o);
  }
  printf("index key        %s\n", key);
  printf("log_id           %llu\n", (unsigned long long)k.log_id);
  printf("end_offset       %llu\n", (unsigned long long)k.end_offset);
  printf("cumulative_size  %llu\n", (unsigned long long)k.cumulative_size);
  printf("partition        %s\n", part);
  return TARN_EXIT_OK;
}
