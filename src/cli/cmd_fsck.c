/* tarn fsck — checks a deployment's invariants (tarn/fsck.h, docs/fsck.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/express.h"
#include "tarn/express_fence.h"
#include "tarn/fsck.h"

static void help(void) {
  printf("usage: tarn fsck [DEPLOYMENT FLAGS] [--json] [--no-read] [--quiet]\n"
         "                 [--express-star STAR]\n"
         "\n"
         "Checks every log of every stream in the catalog:\n"
         "  - index records adjacent and disjoint, each key's cumulative size minus its\n"
         "    entry_size_bytes equal to the previous key's (allowed: a PARQUET record\n"
         "    overlapping the records it replaces, between compaction steps C3 and C4,\n"
         "    counted as a warning; a gap at or below the trim marker B);\n"
         "  - every index value decodes;\n"
         "  - every RAW record's WAL object exists and holds the log's section with the\n"
         "    record's entry count, record counts, payload sizes and file_size;\n"
         "  - every PARQUET record's file index covers its range, and each file and its\n"
         "    companion exist and agree (rows, offsets, cumulative sizes, Parquet row\n"
         "    count and payload sizes);\n"
         "  - every entry at or above B reads through the reader.\n"
         "Objects of records that end at or below B may have been reclaimed: no fault.\n"
         "Reads only.\n"
         "\n"
         "Each fault is printed with its kind, log, offset, index key and object.\n"
         "Progress goes to stderr when it is a terminal.\n"
         "\n"
         "Options:\n"
         "  --json      {ok, streams, logs, records, compacted_records, compacted_files,\n"
         "              entries_read, bytes_read, warnings,\n"
         "              faults: [{kind, log_id, offset, key, object, message}]}\n"
         "  --no-read   skip reading every entry through the reader\n"
         "  --quiet     print nothing; the exit status tells\n"
         "  --express-star STAR  also check every express epoch of STAR: cursors\n"
         "              (trimmed <= checkpoint <= cut), the cut slot dead, no hole\n"
         "              below a published cut (faults express-*, offset = the slot),\n"
         "              and absorbed slots indexed once against each log's index\n"
         "              (express-index-*, offset = the log's offset). Without it, a\n"
         "              deployment with express buckets has every star that writes\n"
         "              an express log checked so\n"
         "\n%s"
         "\nExit status: 0 no fault; 1 a fault was found (or the check failed);\n"
         "2 bad command line; 3 a store could not be reached.\n",
         tarn_cli_deploy_help);
}

static void progress(void *arg, size_t i, size_t n, uint64_t log_id) {
  (void)arg;
  fprintf(stderr, "\rtarn fsck: log %zu of %zu (log %llu)   ", i + 1, n,
          (unsigned long long)log_id);
  fflush(stderr);
}

int tarn_cmd_fsck(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  int json = 0, quiet = 0, nargs;
  tarn_fsck_options o = {0};
  const char *xstar = NULL;
  const tarn_cli_opt opts[] = {TARN_CLI_OPT_FLAG("--no-read", &o.skip_read, 1),
                               TARN_CLI_OPT_FLAG("--quiet", &quiet, 1),
                               TARN_CLI_OPT_STRING("--express-star", &xstar, "a star name"),
                               {0}};
  const tarn_cli_verb verb = {"fsck", help, opts, &d, &json, 0, NULL};
  int ex = tarn_cli_parse(&verb, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  tarn_deployment *dep;
  tarn_catalog *cat;
  ex = tarn_cli_catalog_open(&d, &dep, &cat);
  if (ex)
    return ex;
  int tty = !quiet && isatty(2);
  if (tty)
    o.progress = progress;
  tarn_fsck_report rep;
  int rc = tarn_fsck_run(tarn_deployment_meta(dep), tarn_deployment_wal(dep),
                         tarn_deployment_compacted(dep), &o, &rep);
  if (tty)
    fprintf(stderr, "\r%60s\r", "");
  if (rc == 0 && xstar && (rc = tarn_express_fsck(tarn_deployment_meta(dep), xstar, &rep)))
    tarn_fsck_report_free(&rep);
  /* an express deployment: every star that writes an express log */
  if (rc == 0 && !xstar) {
    int express = tarn_express_check_deployment(tarn_deployment_meta(dep)) == 0;
    tarn_errclear();
    if (express && (rc = tarn_express_fsck_all(tarn_deployment_meta(dep), &rep)))
      tarn_fsck_report_free(&rep);
  }
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "fsck");
  } else {
    ex = rep.n_faults ? TARN_EXIT_FAULT : TARN_EXIT_OK;
    if (json) {
      json_t *v = json_object(), *fa = json_array();
      json_object_set_new(v, "ok", json_boolean(rep.n_faults == 0));
      json_object_set_new(v, "streams", json_integer((json_int_t)rep.streams));
      json_object_set_new(v, "logs", json_integer((json_int_t)rep.logs));
      json_object_set_new(v, "records", json_integer((json_int_t)rep.records));
      json_object_set_new(v, "compacted_records", json_integer((json_int_t)rep.compacted_records));
      json_object_set_new(v, "compacted_files", json_integer((json_int_t)rep.compacted_files));
      json_object_set_new(v, "entries_read", json_integer((json_int_t)rep.entries_read));
      json_object_set_new(v, "bytes_read", json_integer((json_int_t)rep.bytes_read));
      json_object_set_new(v, "warnings", json_integer((json_int_t)rep.warnings));
      for (size_t i = 0; i < rep.n_faults; i++) {
        const tarn_fsck_fault *f = &rep.faults[i];
        json_t *j = json_object();
        json_object_set_new(j, "kind", json_string(f->kind));
        json_object_set_new(j, "log_id", json_integer((json_int_t)f->log_id));
        json_object_set_new(j, "offset", json_integer((json_int_t)f->offset));
        json_object_set_new(j, "key", f->key ? json_string(f->key) : json_null());
        json_object_set_new(j, "object", f->object ? json_string(f->object) : json_null());
        json_object_set_new(j, "message", json_string(f->message));
        json_array_append_new(fa, j);
      }
      json_object_set_new(v, "faults", fa);
      if (!quiet)
        tarn_cli_print_json(v);
      else
        json_decref(v);
    } else if (!quiet) {
      for (size_t i = 0; i < rep.n_faults; i++) {
        const tarn_fsck_fault *f = &rep.faults[i];
        printf("FAULT %-17s log %llu offset %llu%s%s%s%s: %s\n", f->kind,
               (unsigned long long)f->log_id, (unsigned long long)f->offset, f->key ? " key " : "",
               f->key ? f->key : "", f->object ? " object " : "", f->object ? f->object : "",
               f->message);
      }
      printf("%s: %zu streams, %zu logs, %zu index records, %zu entries read, %zu warnings, "
             "%zu faults\n",
             rep.n_faults ? "FAULTS" : "ok", rep.streams, rep.logs, rep.records, rep.entries_read,
             rep.warnings, rep.n_faults);
    }
    tarn_fsck_report_free(&rep);
  }
  tarn_cli_catalog_close(dep, cat);
  return ex;
}
