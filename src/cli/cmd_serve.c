/* tarn serve — a long-running node of a deployment (docs/serve.md). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "cli/cli.h"
#include "server/node.h"
#include "server/srvlog.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"

static void help(void) {
  tarn_srv_options o;
  tarn_srv_options_default(&o);
  printf(
      "usage: tarn serve [DEPLOYMENT FLAGS] [OPTIONS]\n"
      "\n"
      "Runs a node of the deployment until SIGTERM or SIGINT:\n"
      "  compaction   plans ranges of RAW records into tasks and runs them with\n"
      "               --compact-workers threads (C1-C5); several nodes share the work\n"
      "               by claiming tasks (each log's task is held by one node at a time)\n"
      "  reclaim      deletes the compacted files of records trimmed below B, hard-trims\n"
      "               those records, and deletes orphan compacted files after a grace\n"
      "  wal-gc       deletes WAL objects no index record names, after a grace period\n"
      "               (both count objects and bytes deleted, in tarn_reclaimed_*_total)\n"
      "  stats        compaction lag and tasks by state, as metrics\n"
      "  health       checks that the stores answer\n"
      "and serves HTTP on --listen:\n"
      "  GET /metrics   Prometheus text format (docs/serve.md lists the metrics)\n"
      "  GET /healthz   200 {\"status\":\"ok\",...} when the metadata store and both roots\n"
      "                 answer, 503 {\"status\":\"unavailable\",...} otherwise\n"
      "On SIGTERM/SIGINT it stops taking work, lets runs in progress finish (a task's\n"
      "step completes and its lock is released; an interrupted task resumes on any node\n"
      "from its recorded state), closes the stores and exits 0.\n"
      "\n"
      "Options:\n"
      "  --listen HOST:PORT          HTTP address (default %s; port 0: any free port,\n"
      "                              logged at start)\n"
      "  --log-format text|json      log lines on stderr (default text)\n"
      "  --log-level debug|info|warn|error   (default info)\n"
      "  --compact-workers N         compaction tasks run at once (default %d; 0: none)\n"
      "  --compact-interval-ms MS    planning interval, and idle workers' pause (%d)\n"
      "  --compact-max-age-ms MS     a range is compacted once its oldest entry is this\n"
      "                              old (%lld)\n"
      "  --compact-max-range-bytes N ... or once it holds this much payload (%llu)\n"
      "  --compact-rate BYTES_PER_S  rate limit of compaction writes (default 0: none)\n"
      "  --reclaim-interval-ms MS    (%d)\n"
      "  --orphan-grace-ms MS        age before an orphan compacted file goes (%lld)\n"
      "  --wal-gc-interval-ms MS     (%d)\n"
      "  --wal-grace-ms MS           age of an unreferenced WAL object before it goes (%lld)\n"
      "  --stats-interval-ms MS      (%d)\n"
      "  --no-compact, --no-reclaim, --no-wal-gc   leave that job out\n"
      "\n%s"
      "\nExit status: 0 stopped by a signal; 1 failed to start (e.g. the port is taken);\n"
      "2 bad command line; 3 a store could not be reached.\n",
      TARN_SERVE_DEFAULT_LISTEN, o.compact_workers, o.compact_interval_ms,
      (long long)o.compact_max_age_ms, (unsigned long long)o.compact_max_range_bytes,
      o.reclaim_interval_ms, (long long)o.orphan_grace_ms, o.wal_gc_interval_ms,
      (long long)o.wal_grace_ms, o.stats_interval_ms, tarn_cli_deploy_help);
}

/* Numeric options: name, where, the largest value. */
typedef struct numopt {
  const char *name;
  int *i;
  int64_t *l;
  uint64_t *u;
  uint64_t max;
} numopt;

int tarn_cmd_serve(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  tarn_srv_options o;
  tarn_srv_options_default(&o);
  int log_format = TARN_SRV_LOG_TEXT, log_level = TARN_SRV_INFO;
  const numopt nums[] = {
      {"--compact-workers", &o.compact_workers, NULL, NULL, 64},
      {"--compact-interval-ms", &o.compact_interval_ms, NULL, NULL, 86400000},
      {"--compact-max-age-ms", NULL, &o.compact_max_age_ms, NULL, INT64_MAX},
      {"--compact-max-range-bytes", NULL, NULL, &o.compact_max_range_bytes, UINT64_MAX},
      {"--compact-rate", NULL, NULL, &o.compact_rate, UINT64_MAX},
      {"--reclaim-interval-ms", &o.reclaim_interval_ms, NULL, NULL, 86400000},
      {"--orphan-grace-ms", NULL, &o.orphan_grace_ms, NULL, INT64_MAX},
      {"--wal-gc-interval-ms", &o.wal_gc_interval_ms, NULL, NULL, 86400000},
      {"--wal-grace-ms", NULL, &o.wal_grace_ms, NULL, INT64_MAX},
      {"--stats-interval-ms", &o.stats_interval_ms, NULL, NULL, 86400000},
  };
  for (int i = 1; i < argc; i++) {
    int k = tarn_cli_deploy_flag(&d, "serve", argc, argv, &i);
    if (k == 1)
      continue;
    if (k)
      return k;
    const char *val = NULL;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      help();
      return TARN_EXIT_OK;
    }
    if (strcmp(argv[i], "--no-compact") == 0) {
      o.compact = 0;
      continue;
    }
    if (strcmp(argv[i], "--no-reclaim") == 0) {
      o.reclaim = 0;
      continue;
    }
    if (strcmp(argv[i], "--no-wal-gc") == 0) {
      o.wal_gc = 0;
      continue;
    }
    const char *opt = argv[i];
    if ((k = tarn_cli_opt_value(argc, argv, &i, "--listen", &val)) != 0) {
      if (k < 0)
        return tarn_cli_usage_error("serve", "--listen needs HOST:PORT");
      o.listen = val;
      continue;
    }
    if ((k = tarn_cli_opt_value(argc, argv, &i, "--log-format", &val)) != 0) {
      if (k < 0 || (strcmp(val, "text") && strcmp(val, "json")))
        return tarn_cli_usage_error("serve", "--log-format is text or json");
      log_format = strcmp(val, "json") == 0 ? TARN_SRV_LOG_JSON : TARN_SRV_LOG_TEXT;
      continue;
    }
    if ((k = tarn_cli_opt_value(argc, argv, &i, "--log-level", &val)) != 0) {
      static const char *const lv[] = {"debug", "info", "warn", "error"};
      log_level = -1;
      for (int l = 0; k > 0 && l < 4; l++)
        if (strcmp(val, lv[l]) == 0)
          log_level = l;
      if (log_level < 0)
        return tarn_cli_usage_error("serve", "--log-level is debug, info, warn or error");
      continue;
    }
    size_t j = 0;
    for (; j < sizeof nums / sizeof nums[0]; j++) {
      if ((k = tarn_cli_opt_value(argc, argv, &i, nums[j].name, &val)) == 0)
        continue;
      uint64_t v;
      if (k < 0 || tarn_cli_parse_u64(val, nums[j].max, &v))
        return tarn_cli_usage_error("serve", "%s needs a number from 0 to %llu", nums[j].name,
                                    (unsigned long long)nums[j].max);
      if (nums[j].i)
        *nums[j].i = (int)v;
      else if (nums[j].l)
        *nums[j].l = (int64_t)v;
      else
        *nums[j].u = v;
      break;
    }
    if (j < sizeof nums / sizeof nums[0])
      continue;
    return tarn_cli_usage_error("serve", "unknown option '%s'", opt);
  }
  if (o.compact_workers == 0)
    o.compact = 0;
  tarn_srv_log_setup(log_format, log_level);

  /* Signals are taken by sigwait in this thread only: every thread started
   * from here on inherits the mask. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);

  tarn_deployment *dep;
  tarn_catalog *cat;
  int ex = tarn_cli_catalog_open(&d, &dep, &cat); /* a node of an initialised deployment */
  if (ex)
    return ex;
  tarn_catalog_close(cat);
  const tarn_deployment_config *cfg = tarn_deployment_config_of(dep);
  tarn_srv_node *node;
  int rc = tarn_srv_node_start(dep, &o, &node);
  if (rc) {
    tarn_srv_log(TARN_SRV_ERROR, "cannot start", "listen", o.listen, "error", tarn_strerror(rc),
                 "detail",
                 rc == TARN_EINVAL ? "--listen is HOST:PORT with an IPv4 host"
                 : rc == TARN_EIO  ? "the address is taken or cannot be bound"
                                   : tarn_errmsg(),
                 NULL);
    tarn_deployment_close(dep);
    return rc == TARN_EINVAL ? TARN_EXIT_USAGE : TARN_EXIT_FAULT;
  }
  char port[16], pid[24];
  snprintf(port, sizeof port, "%d", tarn_srv_node_port(node));
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  tarn_srv_log(TARN_SRV_INFO, "serving", "listen", o.listen, "port", port, "pid", pid, "meta",
               cfg->meta_uri, "wal", cfg->wal_uri, "compacted", cfg->compacted_uri, NULL);
  int sig = 0;
  while (sigwait(&set, &sig) != 0)
    ;
  tarn_srv_log(TARN_SRV_INFO, "stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
  tarn_srv_node_stop(node);
  tarn_deployment_close(dep);
  tarn_srv_log(TARN_SRV_INFO, "stopped", NULL);
  return TARN_EXIT_OK;
}
