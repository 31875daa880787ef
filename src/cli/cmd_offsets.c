/* tarn offsets — first offset, end offset and trim marker per partition. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"

static void help(void) {
  printf("usage: tarn offsets NAMESPACE/NAME [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Shows, per partition of a stream: its log ID; the first offset (the first\n"
         "readable record: the trim marker, or the start of the first index record above\n"
         "it if greater); the end offset (where the next append starts; 0 when empty);\n"
         "and the trim marker B. Reads only.\n"
         "\n"
         "Options:\n"
         "  --json   {namespace, name, partitions: [{partition, log_id, first_offset,\n"
         "           end_offset, trim_marker}]}\n"
         "\n%s"
         "\nExit status: 0 done; 1 failed (e.g. no such stream); 2 bad command line;\n"
         "3 the metadata store could not be reached.\n",
         tarn_cli_deploy_help);
}

int tarn_cmd_offsets(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  int json = 0, nargs, ex;
  const tarn_cli_verb v = {"offsets", help, NULL, &d, &json, 1, NULL};
  if ((ex = tarn_cli_parse(&v, argc, argv, &nargs)) != TARN_CLI_GO_ON)
    return ex;
  if (!nargs)
    return tarn_cli_usage_error("offsets", "which stream? Give NAMESPACE/NAME");
  char *ns, *name;
  tarn_deployment *dep;
  tarn_catalog *cat;
  if ((ex = tarn_cli_stream_open("offsets", &d, argv[1], &dep, &cat, &ns, &name)))
    return ex;
  tarn_catalog_record s;
  json_t *parts = NULL;
  int rc = tarn_catalog_open_stream(cat, ns, name, &s);
  if (!rc) {
    rc = tarn_cli_partitions_json(dep, &s, &parts);
    tarn_catalog_record_free(&s);
  }
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "offsets");
  } else if (json) {
    json_t *o = json_object();
    json_object_set_new(o, "namespace", json_string(ns));
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "partitions", parts);
    ex = tarn_cli_print_json(o);
  } else {
    tarn_cli_partitions_print(parts);
    json_decref(parts);
  }
  tarn_cli_catalog_close(dep, cat);
  free(ns), free(name);
  return ex;
}
