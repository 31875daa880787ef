/* tarn — a Kafka node on a deployment (docs/kafka.md; issue 32 item 2).
 *
 * The front door to what `tarn serve --kafka-listen` runs: a listener bound
 * to HOST:PORT speaking the Kafka protocol, whose produces append to the
 * deployment's logs and whose fetches read them, with consumer groups,
 * idempotent producers, express topics and (optionally) TLS and SASL. Any
 * program linked with libtarn can run one (docs/examples/kafka_node.c);
 * `tarn serve` is such a program. Users for SASL: tarn/kafka_users.h.
 *
 *   tarn_kafka_node_config c;
 *   tarn_kafka_node_config_default(&c);
 *   c.listen = "127.0.0.1:9092";
 *   tarn_kafka_node *n;
 *   if (tarn_kafka_node_open(dep, &c, &n) == 0) {
 *     while (!stopping)
 *       tarn_kafka_node_tick(n); // or run tarn_kafka_node_jobs on timers
 *     tarn_kafka_node_close(n);
 *   }
 */
#ifndef TARN_KAFKA_NODE_H
#define TARN_KAFKA_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/deployment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The levels of the node's log lines. */
enum {
  TARN_KAFKA_LOG_DEBUG = 0,
  TARN_KAFKA_LOG_INFO = 1,
  TARN_KAFKA_LOG_WARN = 2,
  TARN_KAFKA_LOG_ERROR = 3
};

/* One log line: msg and kv, NULL-terminated (key, value) string pairs. Called
 * from any of the node's threads; never given a secret. */
typedef void (*tarn_kafka_log_fn)(void *arg, int level, const char *msg, const char *const *kv);

/* The node's settings; the Apache Kafka broker setting each one stands for is
 * named in brackets, the default in parentheses. */
typedef struct tarn_kafka_node_config {
  const char *listen;         /* [listeners] HOST:PORT, :PORT or PORT (host 127.0.0.1);
                               * an IPv4 address or localhost; port 0: any free port
                               * (tarn_kafka_node_port) ("127.0.0.1:9092") */
  const char *advertise;      /* [advertised.listeners] HOST:PORT given to clients in
                               * Metadata; NULL: the bound address (0.0.0.0 advertised as
                               * 127.0.0.1) */
  int32_t node_id;            /* [node.id] this node's broker ID; -1: the lowest free (-1) */
  const char *star;           /* the star of the node's express writer (docs/kafka.md
                               * "Express topics"); NULL: node-{node ID} */
  int auto_create_topics;     /* [auto.create.topics.enable] Metadata creates unknown topics (0) */
  int batch_ms;               /* produce's batch window of topics without one; -1: the writer's
                               * (250) */
  uint32_t express_absorb_ms; /* the express writer's absorb window; 0: its (250) */
  int express_latency_budget_ms; /* its latency budget (issue 36 item 3; docs/express.md "Slot
                                  * sizing"); -1: 20; 0: none (a slot every 2 ms) */
  int max_connections;           /* [max.connections] (1024) */
  int idle_ms;                   /* [connections.max.idle.ms] (600000) */
  size_t max_request_bytes;      /* [socket.request.max.bytes] (100 MiB) */
  int workers;                   /* [num.io.threads] threads handling requests (16) */
  const char *tls_cert;          /* [ssl.keystore.location] with tls_key: every connection is TLS
                                  * 1.2 or later; a PEM certificate chain file (NULL) */
  const char *tls_key;           /* its PEM private key file (NULL) */
  int sasl_mechanisms;           /* [sasl.enabled.mechanisms] TARN_KAFKA_SASL_* bits
                                  * (tarn/kafka_users.h) every client must authenticate with;
                                  * 0: none (0) */
  int retention_check_ms;        /* [log.retention.check.interval.ms] how often the retention job
                                  * trims the partitions this node leads (docs/kafka.md
                                  * "Retention"); checked every 250 ms (300000) */
  int64_t producer_id_expiration_ms;       /* [producer.id.expiration.ms] an idempotent producer's
                                            * state on a partition goes this long after its last
                                            * write (86400000) */
  int64_t producer_id_expiration_check_ms; /* [producer.id.expiration.check.interval.ms]
                                            * how often the state is swept (600000) */
  int64_t offsets_retention_ms;       /* [offsets.retention.minutes] x 60000: a group's committed
                                       * offsets go this long after it became Empty, a group
                                       * of plain commits' this long after each commit
                                       * (604800000: 10080 minutes) */
  int64_t offsets_retention_check_ms; /* [offsets.retention.check.interval.ms] (600000) */
  /* Issue 33's limits (docs/kafka.md "Security", "Limits"); 0: the default. */
  size_t max_preauth_request_bytes; /* a larger request before SASL login closes (512 KiB) */
  size_t max_inflight_bytes;        /* [queued.max.request.bytes] request bytes the node holds
                                     * at once; beyond it sockets are not read (512 MiB) */
  int max_connections_per_ip;       /* [max.connections.per.ip] (256) */
  int auth_timeout_ms;              /* a SASL connection not logged in by then closes (10000) */
  int request_timeout_ms;           /* a request begun and not read whole by then closes (60000) */
  int failed_auth_delay_ms;         /* [connection.failed.authentication.delay.ms] a failed SASL
                                     * login is answered this late; 0: at once (100) */
  int consumer_heartbeat_ms;        /* [group.consumer.heartbeat.interval.ms] KIP-848 (5000) */
  tarn_kafka_log_fn log;            /* NULL: no log lines */
  void *log_arg;
} tarn_kafka_node_config;

void tarn_kafka_node_config_default(tarn_kafka_node_config *c);

/* Parses "HOST:PORT", ":PORT" or "PORT" (host 127.0.0.1 when absent) into
 * host (n bytes, at least 256) and *port. TARN_EINVAL when malformed. */
int tarn_kafka_addr_parse(const char *s, char *host, size_t n, int *port);

typedef struct tarn_kafka_node tarn_kafka_node;

/* Opens the node's catalog, writer and reader on d (not owned; it must
 * outlive the node), binds the listener, joins the deployment's registry of
 * live nodes, and serves. TARN_EINVAL: a malformed address, tls_cert without
 * tls_key or a TLS file that does not load; TARN_EIO: the address is taken or
 * cannot be bound; tarn_errmsg says which. */
int tarn_kafka_node_open(tarn_deployment *d, const tarn_kafka_node_config *c,
                         tarn_kafka_node **out);
/* The bound port (the one chosen, with port 0). */
int tarn_kafka_node_port(const tarn_kafka_node *n);
/* The node's broker ID (the one taken, with node_id -1). */
int32_t tarn_kafka_node_id(const tarn_kafka_node *n);
/* "host:port" as clients are told in Metadata. */
const char *tarn_kafka_node_advertised(const tarn_kafka_node *n);

/* The node's periodic work, for a program that runs it on its own timers
 * (tarn serve's scheduler): each job's run must be called about every
 * interval_ms, never two runs of one job at once; different jobs may run at
 * once, in different threads. A run returns 0 or a negative TARN_E*. */
typedef struct tarn_kafka_node_job {
  const char *name; /* "kafka-registry", "kafka-groups", "kafka-express-handover",
                     * "kafka-retention", "kafka-producer-expiry",
                     * "kafka-offsets-expiry" */
  int interval_ms;
  int (*run)(tarn_kafka_node *n);
} tarn_kafka_node_job;
const tarn_kafka_node_job *tarn_kafka_node_jobs(size_t *count);

/* Or: runs, in the calling thread, every job whose interval has passed since
 * its last run; returns the milliseconds until the next one is due (call
 * again then, or earlier). */
int tarn_kafka_node_tick(tarn_kafka_node *n);

/* Stops the node: from now on express produces are refused, the listener
 * reads no more requests, those read are answered, every writer is flushed,
 * the node leaves the registry (other nodes take its express partitions
 * over), its express logs leave through Finish, then every connection is
 * closed and everything freed. Returns 0, or the error of an express log
 * that could not leave (its successor's takeover settles it). */
int tarn_kafka_node_close(tarn_kafka_node *n);

#ifdef __cplusplus
}
#endif
#endif
