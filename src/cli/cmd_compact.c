/* tarn compact, tarn gc, tarn tasks — compaction and reclamation from the
 * command line (docs/compaction.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/log_cmds.h"
#include "tarn/compactor.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/reclaim.h"
#include "tarn/tasks.h"

/* ---- tarn compact ---------------------------------------------------------- */

static void compact_help(void) {
  printf("usage: tarn compact NS/NAME [--partition P] | --log L | --all\n"
         "                   [--max-range-bytes N] [--max-file-bytes N] [--rate BYTES_PER_S]\n"
         "                   [--json] [DEPLOYMENT FLAGS]\n"
         "\n"
         "Compacts now, in this process: rewrites the log's RAW records into Parquet\n"
         "files and companions in the stream's directory of the compacted root, and\n"
         "replaces them by PARQUET records (steps C1-C5), range after range, until no\n"
         "RAW record is left. Every entry reads the same afterwards. With --all, plans a\n"
         "compaction task for every log with RAW records and runs all open tasks (the\n"
         "same tasks 'tarn serve' workers claim; see 'tarn tasks'). A progress bar is\n"
         "drawn when stderr is a terminal.\n"
         "\n"
         "Options:\n"
         "  --max-range-bytes N  payload bytes per range (default 268435456)\n"
         "  --max-file-bytes N   payload bytes per Parquet file (default 134217728)\n"
         "  --rate N             write at most N payload bytes per second\n"
         "  --json               print the installed ranges as JSON\n"
         "\n%s\n%s"
         "\nExit status: 0 done; 1 failed (another compactor holds the log: retry later);\n"
         "2 bad command line; 3 a store could not be reached.\n",
         tarn_cli_log_target_help, tarn_cli_deploy_help);
}

static void bar(void *ctx, uint64_t done, uint64_t total) {
  (void)ctx;
  if (!total)
    return;
  int w = 40, k = (int)(done * (uint64_t)w / total);
  if (k > w)
    k = w;
  fprintf(stderr, "\r[%.*s%*s] %llu/%llu bytes", k, "########################################",
          w - k, "", (unsigned long long)done, (unsigned long long)total);
}

static json_t *range_json(const tarn_compact_range *r) {
  json_t *fs = json_array();
  for (size_t i = 0; i < r->n_files; i++)
    json_array_append_new(fs, json_pack("{s:s,s:I,s:I,s:I}", "name", r->files[i].name,
                                        "last_offset", (json_int_t)r->files[i].last_offset, "rows",
                                        (json_int_t)r->files[i].rows, "size",
                                        (json_int_t)r->files[i].size));
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:o}", "log_id", (json_int_t)r->log_id, "s",
                   (json_int_t)r->s, "e", (json_int_t)r->e, "c_s", (json_int_t)r->c_s, "c_e",
                   (json_int_t)r->c_e, "records", (json_int_t)r->n_records, "dir",
                   r->dir ? r->dir : "", "files", fs);
}

int tarn_cmd_compact(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  tarn_cli_log_target t = {0};
  int json = 0, all = 0, nargs;
  uint64_t range_bytes = 0, file_bytes = 0, rate = 0;
  const tarn_cli_opt opts[] = {
      TARN_CLI_LOG_TARGET_OPTS(&t),
      TARN_CLI_OPT_FLAG("--all", &all, 1),
      TARN_CLI_OPT_UINT("--max-range-bytes", &range_bytes, 1, TARN_COMPACT_RANGE_BYTES_MAX,
                        "1 .. 2^31-1 (LS-032)", NULL),
      TARN_CLI_OPT_UINT("--max-file-bytes", &file_bytes, 1, UINT64_MAX, "a positive number", NULL),
      TARN_CLI_OPT_UINT("--rate", &rate, 1, UINT64_MAX, "a positive number", NULL),
      {0}};
  const tarn_cli_verb v = {"compact", compact_help, opts, &d, &json, 1, NULL};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  t.stream = nargs ? argv[1] : NULL;
  if (all && (t.stream || t.log || t.partition))
    return tarn_cli_usage_error("compact", "--all replaces NS/NAME and --log");
  tarn_deployment *dep;
  if ((ex = tarn_cli_deploy_open(&d, 0, &dep)))
    return ex;
  if ((ex = tarn_cli_timing_check(dep, "compact", 0, NULL))) {
    tarn_deployment_close(dep);
    return ex;
  }
  uint64_t log = 0;
  if (!all && (ex = tarn_cli_log_target_resolve(&t, "compact", dep, &log))) {
    tarn_deployment_close(dep);
    return ex;
  }
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  if (range_bytes)
    o.max_range_bytes = range_bytes;
  if (file_bytes)
    o.max_file_bytes = file_bytes;
  tarn_token_bucket *tb = NULL;
  if (rate && !tarn_token_bucket_open(rate, rate, &tb)) {
    o.throttle = tarn_token_bucket_throttle;
    o.throttle_ctx = tb;
  }
  int tty = isatty(2) && !json;
  if (tty)
    o.progress = bar;
  tarn_compactor *c;
  int rc = tarn_compactor_open(tarn_deployment_meta(dep), tarn_deployment_wal(dep),
                               tarn_deployment_compacted(dep), &o, &c);
  json_t *out = json_array();
  if (!rc && all) {
    size_t planned = 0, ran_n = 0;
    int ran = 1;
    rc = tarn_tasks_plan(c, NULL, 1, &planned);
    while (!rc && ran) {
      rc = tarn_tasks_run_one(c, NULL, &ran);
      ran_n += (size_t)ran;
    }
    if (!rc && !json)
      printf("planned %zu tasks, ran %zu\n", planned, ran_n);
    if (json)
      json_array_append_new(
          out, json_pack("{s:I,s:I}", "planned", (json_int_t)planned, "ran", (json_int_t)ran_n));
  }
  for (int did = 1; !rc && !all && did;) {
    tarn_compact_range r;
    memset(&r, 0, sizeof r);
    rc = tarn_compact_once(c, log, 1, &r, &did);
    if (tty)
      fprintf(stderr, "\n");
    if (!rc && did) {
      if (json)
        json_array_append_new(out, range_json(&r));
      else
        printf("log %llu: [%llu, %llu) %llu records -> %zu files in %s\n", (unsigned long long)log,
               (unsigned long long)r.s, (unsigned long long)r.e, (unsigned long long)r.n_records,
               r.n_files, r.dir);
    }
    tarn_compact_range_free(&r);
  }
  if (rc)
    ex = tarn_cli_fail_rc(rc, "compact");
  else if (json) {
    ex = tarn_cli_print_json(out);
    out = NULL;
  }
  json_decref(out);
  tarn_compactor_close(c);
  tarn_token_bucket_close(tb);
  tarn_deployment_close(dep);
  return ex;
}

/* ---- tarn gc --------------------------------------------------------------- */

static void gc_help(void) {
  printf("usage: tarn gc [--dry-run] [--wal-grace-ms N] [--orphan-grace-ms N] [--json]\n"
         "              [DEPLOYMENT FLAGS]\n"
         "\n"
         "One reclamation pass: deletes the compacted files of PARQUET records that end\n"
         "at or below their log's trim marker, then hard-trims those records; records\n"
         "when each WAL object and compacted file that no index record (and no open\n"
         "compaction task) names was first seen so, and deletes the ones first seen\n"
         "longer than the grace period ago after checking the index once more. Run it\n"
         "periodically (tarn serve does).\n"
         "\n"
         "Options:\n"
         "  --dry-run            delete nothing, write nothing; print what would go\n"
         "                       (the counts and bytes say what would be deleted)\n"
         "  --wal-grace-ms N     grace period of WAL objects (default: the deployment's,\n"
         "                       600000 unless recorded); refused unless it exceeds the\n"
         "                       writers' publish limit + longest put + skew allowance\n"
         "  --orphan-grace-ms N  grace period of orphan compacted files (default 3600000)\n"
         "  --json               print {dry_run, deleted: [{kind, name, bytes}], stats}\n"
         "\n"
         "Each deleted object is printed with its size; the summary gives the objects\n"
         "and bytes deleted per kind: wal (unreferenced WAL objects), compacted (orphan\n"
         "compacted files), trimmed (files and companions of records trimmed below B).\n"
         "Sizes come from the listings, not from a request per object.\n"
         "\n%s",
         tarn_cli_deploy_help);
}

typedef struct gc_out {
  int json, dry;
  json_t *arr;
} gc_out;

static void gc_report(void *ctx, const char *kind, const char *name, uint64_t bytes) {
  gc_out *g = ctx;
  int objects = strcmp(kind, "hard-trim") != 0;
  if (g->json && objects)
    json_array_append_new(
        g->arr, json_pack("{s:s,s:s,s:I}", "kind", kind, "name", name, "bytes", (json_int_t)bytes));
  else if (g->json)
    json_array_append_new(g->arr, json_pack("{s:s,s:s}", "kind", kind, "name", name));
  else if (objects)
    printf("%s %-9s %s %llu bytes\n", g->dry ? "would delete" : "deleted", kind, name,
           (unsigned long long)bytes);
  else
    printf("%s %-9s %s\n", g->dry ? "would delete" : "deleted", kind, name);
}

int tarn_cmd_gc(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  tarn_reclaim_options o;
  tarn_reclaim_options_default(&o);
  int json = 0, nargs, grace_set = 0;
  const tarn_cli_opt opts[] = {TARN_CLI_OPT_FLAG("--dry-run", &o.dry_run, 1),
                               TARN_CLI_OPT_UINT("--wal-grace-ms", &o.wal_grace_ms, 0, INT64_MAX,
                                                 "a number of ms", &grace_set),
                               TARN_CLI_OPT_UINT("--orphan-grace-ms", &o.orphan_grace_ms, 0,
                                                 INT64_MAX, "a number of ms", NULL),
                               {0}};
  const tarn_cli_verb v = {"gc", gc_help, opts, &d, &json, 0, NULL};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  tarn_deployment *dep;
  if ((ex = tarn_cli_deploy_open(&d, 0, &dep)))
    return ex;
  if ((ex = tarn_cli_timing_check(dep, "gc", grace_set, &o.wal_grace_ms))) {
    tarn_deployment_close(dep);
    return ex;
  }
  /* Issue 31 item 5: claims this deployment's unmarked roots (deployments from
   * before markers) and refuses another's; a dry run writes nothing, and the
   * pass checks the markers itself */
  int crc = o.dry_run ? 0 : tarn_deployment_claim_roots(dep, 0);
  if (crc) {
    ex = tarn_cli_fail_rc(crc, "gc");
    tarn_deployment_close(dep);
    return ex;
  }
  gc_out g = {json, o.dry_run, json_array()};
  o.report = gc_report;
  o.report_ctx = &g;
  tarn_reclaim_stats st;
  int rc = tarn_reclaim_pass(tarn_deployment_meta(dep), tarn_deployment_wal(dep),
                             tarn_deployment_compacted(dep), &o, &st);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "gc");
  } else if (json) {
    json_t *s = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "logs_scanned",
        (json_int_t)st.logs_scanned, "index_records", (json_int_t)st.index_records, "wal_listed",
        (json_int_t)st.wal_listed, "wal_unreferenced", (json_int_t)st.wal_unreferenced,
        "wal_deleted", (json_int_t)st.wal_deleted, "wal_deleted_bytes",
        (json_int_t)st.wal_deleted_bytes, "compacted_listed", (json_int_t)st.compacted_listed,
        "compacted_orphans", (json_int_t)st.compacted_orphans, "compacted_deleted",
        (json_int_t)st.compacted_deleted, "compacted_deleted_bytes",
        (json_int_t)st.compacted_deleted_bytes, "trimmed_files_deleted",
        (json_int_t)st.trimmed_files_deleted, "trimmed_files_deleted_bytes",
        (json_int_t)st.trimmed_files_deleted_bytes, "records_hard_trimmed",
        (json_int_t)st.records_hard_trimmed, "temp_files_removed",
        (json_int_t)st.temp_files_removed);
    ex = tarn_cli_print_json(
        json_pack("{s:b,s:O,s:o}", "dry_run", o.dry_run, "deleted", g.arr, "stats", s));
  } else {
    const char *verb = o.dry_run ? "would be deleted" : "deleted";
    printf("scanned %llu logs, %llu index records; WAL: %llu objects, %llu unreferenced, "
           "%llu %s (%llu bytes); compacted: %llu files, %llu orphans, %llu %s (%llu bytes), "
           "%llu of trimmed records %s (%llu bytes); %llu records hard-trimmed\n",
           (unsigned long long)st.logs_scanned, (unsigned long long)st.index_records,
           (unsigned long long)st.wal_listed, (unsigned long long)st.wal_unreferenced,
           (unsigned long long)st.wal_deleted, verb, (unsigned long long)st.wal_deleted_bytes,
           (unsigned long long)st.compacted_listed, (unsigned long long)st.compacted_orphans,
           (unsigned long long)st.compacted_deleted, verb,
           (unsigned long long)st.compacted_deleted_bytes,
           (unsigned long long)st.trimmed_files_deleted, verb,
           (unsigned long long)st.trimmed_files_deleted_bytes,
           (unsigned long long)st.records_hard_trimmed);
  }
  json_decref(g.arr);
  tarn_deployment_close(dep);
  return ex;
}

/* ---- tarn tasks ------------------------------------------------------------ */

static void tasks_help(void) {
  printf("usage: tarn tasks [--json] [--retry LOG] [DEPLOYMENT FLAGS]\n"
         "\n"
         "Lists the compaction tasks: one per log, INIT (planned), PREPARED (files\n"
         "written), COMMITTED (installed, or 'stale' when the range no longer held) or\n"
         "DEAD (failed too often before installing; the last error is shown).\n"
         "\n"
         "Options:\n"
         "  --json        the task records as JSON\n"
         "  --retry LOG   re-open the DEAD task of log LOG\n"
         "\n%s",
         tarn_cli_deploy_help);
}

int tarn_cmd_tasks(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  int json = 0, retry = 0, nargs;
  uint64_t rlog = 0;
  const tarn_cli_opt opts[] = {
      TARN_CLI_OPT_UINT("--retry", &rlog, 0, INT64_MAX, "a log ID", &retry), {0}};
  const tarn_cli_verb v = {"tasks", tasks_help, opts, &d, &json, 0, NULL};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  tarn_deployment *dep;
  if ((ex = tarn_cli_deploy_open(&d, 0, &dep)))
    return ex;
  tarn_meta *m = tarn_deployment_meta(dep);
  int rc = retry ? tarn_tasks_retry(m, rlog) : 0;
  tarn_task *t = NULL;
  size_t n = 0;
  if (!rc)
    rc = tarn_tasks_list(m, &t, &n);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "tasks");
  } else if (json) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
      tarn_buf b = TARN_BUF_INIT;
      if (!tarn_task_encode(&t[i], &b)) {
        json_error_t je;
        json_t *o = json_loadb((const char *)b.data, b.len, 0, &je);
        if (o)
          json_array_append_new(arr, o);
      }
      tarn_buf_free(&b);
    }
    ex = tarn_cli_print_json(arr);
  } else {
    printf("%-8s %-10s %-8s %-24s %-5s %s\n", "LOG", "STATE", "FAILURES", "RANGE", "FILES",
           "ERROR");
    for (size_t i = 0; i < n; i++) {
      char range[64];
      snprintf(range, sizeof range, "[%llu, %llu)", (unsigned long long)t[i].range.s,
               (unsigned long long)t[i].range.e);
      printf("%-8llu %-10s %-8u %-24s %-5zu %s\n", (unsigned long long)t[i].log_id,
             t[i].stale ? "STALE" : tarn_task_state_name(t[i].state), t[i].failures, range,
             t[i].range.n_files, t[i].error ? t[i].error : "");
    }
  }
  tarn_tasks_free(t, n);
  tarn_deployment_close(dep);
  return ex;
}
