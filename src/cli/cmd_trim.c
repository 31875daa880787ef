/* tarn trim — soft-trim a partition of a stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/trim.h"

static void help(void) {
  printf("usage: tarn trim NAMESPACE/NAME --through OFFSET [--partition P]\n"
         "                 [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Soft-trims one partition: makes the offsets up to and including OFFSET\n"
         "unreadable by advancing the log's trim marker B to OFFSET + 1, capped at the\n"
         "start of the log's last index record (which must stay readable, so the next\n"
         "append continues after it). B never decreases: trimming below it changes\n"
         "nothing. Prints the trim marker the store holds afterwards. The data below B is\n"
         "reclaimed later; nothing is deleted here. Takes a write lease on the log for\n"
         "the duration.\n"
         "\n"
         "Options:\n"
         "  --through OFFSET   the last offset to trim (inclusive)\n"
         "  --partition P      the partition (required when the stream has more than one)\n"
         "  --json             print {namespace, name, partition, log_id, through,\n"
         "                     trim_marker}\n"
         "\n%s"
         "\nExit status: 0 done; 1 failed (e.g. no such stream, log deleted); 2 bad\n"
         "command line; 3 the metadata store could not be reached.\n",
         tarn_cli_deploy_help);
}

int tarn_cmd_trim(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  int json = 0, have_through = 0, have_part = 0, nargs;
  uint64_t through = 0, part = 0;
  const tarn_cli_opt opts[] = {TARN_CLI_OPT_UINT("--through", &through, 0, TARN_KEY_MAX,
                                                 "an offset in 0..2^63-1", &have_through),
                               TARN_CLI_OPT_UINT("--partition", &part, 0,
                                                 TARN_STREAM_PARTITIONS_MAX - 1,
                                                 "a partition number", &have_part),
                               {0}};
  const tarn_cli_verb v = {"trim", help, opts, &d, &json, 1, NULL};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (!nargs)
    return tarn_cli_usage_error("trim", "which stream? Give NAMESPACE/NAME");
  if (!have_through)
    return tarn_cli_usage_error("trim", "--through OFFSET is required");
  char *ns, *name;
  tarn_deployment *dep;
  tarn_catalog *cat;
  if ((ex = tarn_cli_stream_open("trim", &d, argv[1], &dep, &cat, &ns, &name)))
    return ex;
  tarn_catalog_record s;
  int rc = tarn_catalog_open_stream(cat, ns, name, &s);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "trim");
    goto out;
  }
  if (!have_part && s.n_logs > 1) {
    ex = tarn_cli_usage_error("trim",
                              "stream %s/%s has %zu partitions: say which with "
                              "--partition P",
                              ns, name, s.n_logs);
  } else if (part >= s.n_logs) {
    ex = tarn_cli_usage_error("trim", "stream %s/%s has partitions 0..%zu, not %llu", ns, name,
                              s.n_logs - 1, (unsigned long long)part);
  } else {
    uint64_t log = s.logs[part], stored = 0;
    tarn_meta *m = tarn_deployment_meta(dep);
    tarn_lease *l;
    rc = tarn_lease_acquire(m, log, &l);
    if (!rc) {
      rc = tarn_soft_trim(m, l, through, &stored);
      int r2 = tarn_lease_release(l);
      if (!rc)
        rc = r2;
    }
    if (rc) {
      ex = tarn_cli_fail_rc(rc, "trim");
    } else if (json) {
      json_t *o = json_object();
      json_object_set_new(o, "namespace", json_string(ns));
      json_object_set_new(o, "name", json_string(name));
      json_object_set_new(o, "partition", json_integer((json_int_t)part));
      json_object_set_new(o, "log_id", json_integer((json_int_t)log));
      json_object_set_new(o, "through", json_integer((json_int_t)through));
      json_object_set_new(o, "trim_marker", json_integer((json_int_t)stored));
      ex = tarn_cli_print_json(o);
    } else {
      printf("%s/%s partition %llu (log %llu): trim marker %llu\n", ns, name,
             (unsigned long long)part, (unsigned long long)log, (unsigned long long)stored);
    }
  }
  tarn_catalog_record_free(&s);
out:
  tarn_cli_catalog_close(dep, cat);
  free(ns), free(name);
  return ex;
}
