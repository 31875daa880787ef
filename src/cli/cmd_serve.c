/* tarn serve — a long-running node of a deployment (docs/serve.md). */
#include <malloc.h>
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
#include "tarn/compactor.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/kafka_node.h"

/* The Kafka listener's options, a part of help. */
static void kafka_help(void) {
  printf("Kafka (docs/kafka.md; off unless --kafka-listen is given):\n"
         "  --kafka-listen HOST:PORT    serve the Kafka protocol there (host 127.0.0.1 when\n"
         "                              only :PORT or PORT is given; port 0: any free port)\n"
         "  --kafka-advertise HOST:PORT the address Metadata gives clients (the listen one)\n"
         "  --kafka-node-id N           this node's broker ID (default: the lowest free)\n"
         "  --star STAR                 the star of the node's express writer, which leads\n"
         "                              the express partitions the node is leader of\n"
         "                              (default node-{ID}; docs/kafka.md \"Express topics\")\n"
         "  --express-absorb-ms MS      the express writer's absorb window (250): how long\n"
         "                              the acknowledged tail waits to be indexed\n"
         "  --express-latency-budget-ms MS  an express acknowledgement's budget (20): a slot\n"
         "                              gathers what it leaves after the slots' commit p99\n"
         "                              (0: a slot every 2 ms; docs/express.md \"Slot sizing\")\n"
         "  --kafka-auto-create-topics  Metadata creates topics it does not know (off)\n"
         "  --kafka-batch-ms MS         produce's batch window (the writer's, 250)\n"
         "  --kafka-max-connections N   (1024)\n"
         "  --kafka-idle-ms MS          an idle Kafka connection is closed after MS (600000)\n"
         "  --kafka-max-request-bytes N a larger request closes its connection (100 MiB)\n"
         "  --kafka-workers N           threads handling requests (16)\n"
         "  --kafka-retention-check-ms MS  how often retention.ms/retention.bytes are\n"
         "                              applied (300000; docs/kafka.md \"Retention\")\n"
         "  --kafka-producer-id-expiration-ms MS  an idempotent producer's state on a\n"
         "                              partition goes MS after its last write (86400000)\n"
         "  --kafka-producer-id-expiration-check-ms MS  how often it is swept (600000)\n"
         "  --kafka-offsets-retention-minutes N  a group's committed offsets go N minutes\n"
         "                              after it became Empty or after a plain commit (10080)\n"
         "  --kafka-offsets-retention-ms MS  the same in ms (tarn's; over the minutes)\n"
         "  --kafka-offsets-retention-check-ms MS  how often offsets expire (600000)\n"
         "  --kafka-consumer-heartbeat-ms MS  group.consumer.heartbeat.interval.ms (5000)\n"
         "  --kafka-tls-cert FILE       serve Kafka over TLS with this PEM certificate chain\n"
         "  --kafka-tls-key FILE        ... and this PEM private key\n"
         "  --kafka-sasl MECHANISM      clients must authenticate: plain or scram-sha-256\n"
         "                              (repeat for both); users: tarn kafka user add\n"
         "  Limits against hostile clients (docs/kafka.md \"Limits\"):\n"
         "  --kafka-max-preauth-request-bytes N  before SASL login (512 KiB)\n"
         "  --kafka-max-inflight-bytes N  request bytes the node holds; beyond them sockets\n"
         "                              wait (queued.max.request.bytes, 512 MiB)\n"
         "  --kafka-max-connections-per-ip N  (256)\n"
         "  --kafka-auth-timeout-ms MS  a SASL connection not logged in by then closes (10000)\n"
         "  --kafka-request-timeout-ms MS  a request begun and not read whole by then\n"
         "                              closes its connection (60000)\n"
         "  --kafka-connection-failed-authentication-delay-ms MS  a failed SASL login is\n"
         "                              answered this late (Kafka's name; 100)\n");
}

static void help(void) {
  tarn_srv_options o;
  tarn_srv_options_default(&o);
  printf("usage: tarn serve [DEPLOYMENT FLAGS] [OPTIONS]\n"
         "\n"
         "Runs a node of the deployment until SIGTERM or SIGINT:\n"
         "  compaction   plans ranges of RAW records into tasks and runs them with\n"
         "               --compact-workers threads (C1-C5); several nodes share the work\n"
         "               by claiming tasks (each log's task is held by one node at a time)\n"
         "  reclaim      deletes the compacted files of records trimmed below B, hard-trims\n"
         "               those records, and deletes orphan compacted files after a grace\n"
         "  wal-gc       deletes WAL objects no index record names, after a grace period\n"
         "               (both count objects and bytes deleted, in tarn_reclaimed_*_total)\n"
         "  retention    trims plain streams by their retention.ms / retention.bytes\n"
         "               properties (tarn stream create --retention-ms/--retention-bytes)\n"
         "               through the spec's soft trim; reclaim deletes what lies below\n"
         "  stats        compaction lag and tasks by state, as metrics\n"
         "  health       checks that the stores answer\n"
         "  express-takeover  fences and settles the open epochs of an express writer\n"
         "               that died (none of its logs holds a write lease: its session\n"
         "               expired), so its acknowledged entries reach the index at their\n"
         "               offsets (docs/express.md \"Serving\")\n"
         "and serves HTTP on --listen:\n"
         "  GET /metrics   Prometheus text format (docs/serve.md lists the metrics)\n"
         "  GET /healthz   200 {\"status\":\"ok\",...} when the metadata store and both roots\n"
         "                 answered the health job's last check (every 5 s), 503\n"
         "                 {\"status\":\"unavailable\",...} otherwise\n"
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
         "  --wal-grace-ms MS           age of an unreferenced WAL object before it goes\n"
         "                              (the deployment's; %lld unless recorded; must exceed\n"
         "                              the publish limit + longest put + skew allowance)\n"
         "  --stats-interval-ms MS      (%d)\n"
         "  --retention-check-ms MS     how often plain streams' retention is applied\n"
         "                              (300000)\n"
         "  --no-compact, --no-reclaim, --no-wal-gc, --no-retention, --no-express-takeover\n"
         "                              leave that job out\n"
         "  --express-takeover-interval-ms MS   (1000)\n"
         "  --http-max-connections N    connections the endpoint holds at once (%d)\n"
         "  --http-max-per-ip N         ... from one client address (%d)\n"
         "  --http-timeout-s S          a connection idle, or without a whole request\n"
         "                              header, S seconds is closed (%d)\n"
         "  --http-tls-cert FILE        serve HTTPS with this PEM certificate chain ...\n"
         "  --http-tls-key FILE         ... and this PEM private key\n"
         "",
         TARN_SERVE_DEFAULT_LISTEN, o.compact_workers, o.compact_interval_ms,
         (long long)o.compact_max_age_ms, (unsigned long long)o.compact_max_range_bytes,
         o.reclaim_interval_ms, (long long)o.orphan_grace_ms, o.wal_gc_interval_ms,
         (long long)o.wal_grace_ms, o.stats_interval_ms, o.http_max_connections, o.http_max_per_ip,
         o.http_timeout_s);
  kafka_help();
  printf("\n%s"
         "\nExit status: 0 stopped by a signal; 1 failed to start (e.g. the port is taken);\n"
         "2 bad command line; 3 a store could not be reached.\n",
         tarn_cli_deploy_help);
}

/* --log-format and --log-level store the index of the word they name. */
_Static_assert(TARN_SRV_LOG_TEXT == 0 && TARN_SRV_LOG_JSON == 1, "--log-format's order");
_Static_assert(TARN_SRV_DEBUG == 0 && TARN_SRV_INFO == 1 && TARN_SRV_WARN == 2 &&
                   TARN_SRV_ERROR == 3,
               "--log-level's order");

/* A node's large buffers (Kafka requests and responses of ~1 MiB, WAL
 * objects of 4 MiB) are allocated and freed for every request. Above
 * glibc's mmap threshold each is a fresh mapping whose pages fault in as
 * they are written (a fifth of a node's CPU in a Fetch-bound profile, issue
 * 13 §4), and its arenas hand freed tops back to the kernel; kept in the
 * heap, freed buffers are reused with their pages. The bound of what stays
 * held after a burst is the trim threshold. */
static void keep_large_buffers(void) {
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}

/* Parses the command line into o (and the log settings): TARN_CLI_GO_ON or
 * the exit status. */
static int parse(int argc, char **argv, tarn_cli_deploy *d, tarn_srv_options *o, int *grace_set) {
  int log_format = TARN_SRV_LOG_TEXT, log_level = TARN_SRV_INFO;
  const tarn_cli_opt opts[] = {
      TARN_CLI_OPT_FLAG("--no-compact", &o->compact, 0),
      TARN_CLI_OPT_FLAG("--no-reclaim", &o->reclaim, 0),
      TARN_CLI_OPT_FLAG("--no-retention", &o->retention, 0),
      TARN_CLI_OPT_FLAG("--no-wal-gc", &o->wal_gc, 0),
      TARN_CLI_OPT_FLAG("--no-express-takeover", &o->express_takeover, 0),
      TARN_CLI_OPT_UINT("--express-takeover-interval-ms", &o->express_takeover_interval_ms, 1,
                        86400000, NULL, NULL),
      TARN_CLI_OPT_STRING("--listen", &o->listen, "HOST:PORT"),
      TARN_CLI_OPT_CHOICE("--log-format", &log_format, "text|json", "text or json"),
      TARN_CLI_OPT_CHOICE("--log-level", &log_level, "debug|info|warn|error",
                          "debug, info, warn or error"),
      TARN_CLI_OPT_UINT("--compact-workers", &o->compact_workers, 0, 64, NULL, NULL),
      TARN_CLI_OPT_UINT("--compact-interval-ms", &o->compact_interval_ms, 0, 86400000, NULL, NULL),
      TARN_CLI_OPT_UINT("--compact-max-age-ms", &o->compact_max_age_ms, 0, INT64_MAX, NULL, NULL),
      TARN_CLI_OPT_UINT("--compact-max-range-bytes", &o->compact_max_range_bytes, 0,
                        TARN_COMPACT_RANGE_BYTES_MAX, "0 .. 2^31-1 (LS-032)", NULL),
      TARN_CLI_OPT_UINT("--compact-rate", &o->compact_rate, 0, UINT64_MAX, NULL, NULL),
      TARN_CLI_OPT_UINT("--reclaim-interval-ms", &o->reclaim_interval_ms, 0, 86400000, NULL, NULL),
      TARN_CLI_OPT_UINT("--retention-check-ms", &o->retention_check_ms, 1, 86400000, NULL, NULL),
      TARN_CLI_OPT_UINT("--orphan-grace-ms", &o->orphan_grace_ms, 0, INT64_MAX, NULL, NULL),
      TARN_CLI_OPT_UINT("--wal-gc-interval-ms", &o->wal_gc_interval_ms, 0, 86400000, NULL, NULL),
      TARN_CLI_OPT_UINT("--wal-grace-ms", &o->wal_grace_ms, 0, INT64_MAX, NULL, grace_set),
      TARN_CLI_OPT_UINT("--stats-interval-ms", &o->stats_interval_ms, 0, 86400000, NULL, NULL),
      TARN_CLI_OPT_UINT("--http-max-connections", &o->http_max_connections, 1, 65536, NULL, NULL),
      TARN_CLI_OPT_UINT("--http-max-per-ip", &o->http_max_per_ip, 1, 65536, NULL, NULL),
      TARN_CLI_OPT_UINT("--http-timeout-s", &o->http_timeout_s, 1, 3600, NULL, NULL),
      TARN_CLI_OPT_STRING("--http-tls-cert", &o->http_tls_cert, "FILE"),
      TARN_CLI_OPT_STRING("--http-tls-key", &o->http_tls_key, "FILE"),
      TARN_CLI_OPT_STRING("--kafka-listen", &o->kafka_listen, "HOST:PORT"),
      TARN_CLI_OPT_STRING("--kafka-advertise", &o->kafka_advertise, "HOST:PORT"),
      TARN_CLI_OPT_UINT("--kafka-node-id", &o->kafka_node_id, 0, 999999, NULL, NULL),
      TARN_CLI_OPT_STRING("--star", &o->star, "STAR"),
      TARN_CLI_OPT_UINT("--express-absorb-ms", &o->express_absorb_ms, 0, 3600000, NULL, NULL),
      TARN_CLI_OPT_UINT("--express-latency-budget-ms", &o->express_latency_budget_ms, 0, 60000,
                        NULL, NULL),
      TARN_CLI_OPT_FLAG("--kafka-auto-create-topics", &o->kafka_auto_create_topics, 1),
      TARN_CLI_OPT_UINT("--kafka-batch-ms", &o->kafka_batch_ms, 0, 60000, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-max-connections", &o->kafka_max_connections, 1, 65536, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-idle-ms", &o->kafka_idle_ms, 1, 86400000, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-max-request-bytes", &o->kafka_max_request_bytes, 8, INT32_MAX,
                        NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-workers", &o->kafka_workers, 1, 256, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-retention-check-ms", &o->kafka_retention_check_ms, 1, INT32_MAX,
                        NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-producer-id-expiration-ms", &o->kafka_producer_expiration_ms, 1,
                        INT64_MAX, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-producer-id-expiration-check-ms", &o->kafka_producer_check_ms, 1,
                        86400000, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-offsets-retention-minutes", &o->kafka_offsets_retention_minutes, 1,
                        INT32_MAX, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-offsets-retention-ms", &o->kafka_offsets_retention_ms, 1,
                        INT64_MAX / 2, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-offsets-retention-check-ms", &o->kafka_offsets_check_ms, 1,
                        86400000, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-consumer-heartbeat-ms", &o->kafka_consumer_heartbeat_ms, 1,
                        3600000, NULL, NULL),
      TARN_CLI_OPT_STRING("--kafka-tls-cert", &o->kafka_tls_cert, "FILE"),
      TARN_CLI_OPT_STRING("--kafka-tls-key", &o->kafka_tls_key, "FILE"),
      TARN_CLI_OPT_CALL("--kafka-sasl", tarn_cli_sasl_mechanism_option, &o->kafka_sasl,
                        "plain|scram-sha-256"),
      TARN_CLI_OPT_UINT("--kafka-max-preauth-request-bytes", &o->kafka_max_preauth_request_bytes, 8,
                        INT32_MAX, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-max-inflight-bytes", &o->kafka_max_inflight_bytes, 8,
                        (uint64_t)1 << 40, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-max-connections-per-ip", &o->kafka_max_connections_per_ip, 1,
                        65536, NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-auth-timeout-ms", &o->kafka_auth_timeout_ms, 1, 86400000, NULL,
                        NULL),
      TARN_CLI_OPT_UINT("--kafka-request-timeout-ms", &o->kafka_request_timeout_ms, 1, 86400000,
                        NULL, NULL),
      TARN_CLI_OPT_UINT("--kafka-connection-failed-authentication-delay-ms",
                        &o->kafka_failed_auth_delay_ms, 0, 60000, NULL, NULL),
      {0}};
  const tarn_cli_verb v = {"serve", help, opts, d, NULL, 0, NULL};
  int nargs, ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (o->compact_workers == 0)
    o->compact = 0;
  tarn_srv_log_setup(log_format, log_level);
  return TARN_CLI_GO_ON;
}

/* 1 when --kafka-listen and --kafka-advertise, where given, are addresses. */
static int kafka_addrs_ok(const tarn_srv_options *o) {
  char host[256];
  int port;
  return !(o->kafka_listen && tarn_kafka_addr_parse(o->kafka_listen, host, sizeof host, &port)) &&
         !(o->kafka_advertise &&
           tarn_kafka_addr_parse(o->kafka_advertise, host, sizeof host, &port));
}

/* Starts the node, serves until SIGTERM or SIGINT (in set), stops it. Every
 * failure to start has set its own message (the listener's, the TLS files',
 * the timing check's), so it is logged as is; the exit status follows the
 * code: TARN_EINVAL is a bad command line, any other a fault. */
static int serve(tarn_deployment *dep, const tarn_srv_options *o, sigset_t *set) {
  const tarn_deployment_config *cfg = tarn_deployment_config_of(dep);
  tarn_srv_node *node;
  int rc = tarn_srv_node_start(dep, o, &node);
  if (rc) {
    tarn_srv_log(TARN_SRV_ERROR, "cannot start", "listen", o->listen, "error", tarn_errname(rc),
                 "detail", tarn_errmsg(), NULL);
    return rc == TARN_EINVAL ? TARN_EXIT_USAGE : TARN_EXIT_FAULT;
  }
  char port[16], pid[24];
  snprintf(port, sizeof port, "%d", tarn_srv_node_port(node));
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  char kport[16];
  snprintf(kport, sizeof kport, "%d", tarn_srv_node_kafka_port(node));
  tarn_srv_log(TARN_SRV_INFO, "serving", "listen", o->listen, "port", port, "pid", pid, "meta",
               cfg->meta_uri, "wal", cfg->wal_uri, "compacted", cfg->compacted_uri,
               o->kafka_listen ? "kafka_port" : NULL, kport, NULL);
  int sig = 0;
  while (sigwait(set, &sig) != 0)
    ;
  tarn_srv_log(TARN_SRV_INFO, "stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
  tarn_srv_node_stop(node);
  return TARN_EXIT_OK;
}

int tarn_cmd_serve(int argc, char **argv) {
  keep_large_buffers();
  tarn_cli_deploy d = {0};
  tarn_srv_options o;
  tarn_srv_options_default(&o);
  int grace_set = 0;
  int ex = parse(argc, argv, &d, &o, &grace_set);
  if (ex != TARN_CLI_GO_ON)
    return ex;

  /* Signals are taken by sigwait in this thread only: every thread started
   * from here on inherits the mask. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);

  tarn_deployment *dep;
  tarn_catalog *cat;
  ex = tarn_cli_catalog_open(&d, &dep, &cat); /* a node of an initialised deployment */
  if (ex)
    return ex;
  tarn_catalog_close(cat);
  if ((ex = tarn_cli_timing_check(dep, "serve", grace_set, &o.wal_grace_ms))) {
    tarn_deployment_close(dep);
    return ex;
  }
  if (!kafka_addrs_ok(&o)) {
    fprintf(stderr,
            "tarn serve: --kafka-listen and --kafka-advertise are HOST:PORT, :PORT or PORT\n");
    tarn_deployment_close(dep);
    return TARN_EXIT_USAGE;
  }
  ex = serve(dep, &o, &set);
  tarn_deployment_close(dep);
  if (ex == TARN_EXIT_OK)
    tarn_srv_log(TARN_SRV_INFO, "stopped", NULL);
  return ex;
}
