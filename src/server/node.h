/* A `tarn serve` node: a deployment, its scheduled jobs and its HTTP
 * endpoint (docs/serve.md). */
#ifndef TARN_SERVER_NODE_H
#define TARN_SERVER_NODE_H

#include <stddef.h>
#include <stdint.h>

struct tarn_deployment;

typedef struct tarn_srv_options {
  const char *listen;         /* HOST:PORT */
  int compact;                /* run compaction (1) */
  int compact_workers;        /* tasks run at once by this node (2) */
  int compact_interval_ms;    /* planner and idle workers' pause (5000) */
  int64_t compact_max_age_ms; /* a range is ready when its oldest entry is this old (180000) */
  uint64_t compact_max_range_bytes; /* ... or holds this much payload (256 MiB) */
  uint64_t compact_rate;            /* bytes/s of compaction writes; 0: unlimited */
  int reclaim;                      /* delete trimmed and orphan compacted files (1) */
  int reclaim_interval_ms;          /* (60000) */
  int64_t orphan_grace_ms;          /* (3600000) */
  int wal_gc;                       /* delete unreferenced WAL objects (1) */
  int wal_gc_interval_ms;           /* (60000) */
  int retention;                    /* trim plain streams by retention.ms/.bytes (1) */
  int retention_check_ms;           /* (300000) */
  int64_t wal_grace_ms;             /* (600000) */
  int stats_interval_ms;            /* compaction lag and task gauges (10000) */
  int http_max_connections;         /* connections the endpoint holds at once (64) */
  int http_max_per_ip;              /* ... from one client address (16) */
  int http_timeout_s;               /* an idle connection is closed after this (10) */
  const char *http_tls_cert;        /* HTTPS with this PEM certificate (chain) file ... */
  const char *http_tls_key;         /* ... and this PEM key file; both NULL: plain HTTP */
  /* The Kafka listener (docs/kafka.md); off while kafka_listen is NULL. */
  const char *kafka_listen;                 /* HOST:PORT */
  const char *kafka_advertise;              /* HOST:PORT clients are told (the listen address) */
  int kafka_node_id;                        /* -1: the lowest free */
  const char *star;                         /* the express writer's star (NULL: node-{node ID}) */
  int express_absorb_ms;                    /* its absorb window; 0: the writer's (250) */
  int kafka_auto_create_topics;             /* Metadata creates unknown topics (0) */
  int express_latency_budget_ms;            /* the express writer's budget; -1: the node's (20) */
  int kafka_batch_ms;                       /* produce's batch window; -1: the writer's (250) */
  int kafka_max_connections;                /* 0: 1024 */
  int kafka_idle_ms;                        /* 0: 600000 */
  uint64_t kafka_max_request_bytes;         /* 0: 100 MiB */
  int kafka_workers;                        /* 0: 16 */
  int kafka_retention_check_ms;             /* 0: 300000 (log.retention.check.interval.ms) */
  const char *kafka_tls_cert;               /* TLS with this PEM certificate (chain) file ... */
  const char *kafka_tls_key;                /* ... and this PEM key file; both NULL: plain TCP */
  int kafka_sasl;                           /* TARN_KAFKA_SASL_* mechanisms required (0: no SASL) */
  int64_t kafka_producer_expiration_ms;     /* producer.id.expiration.ms; 0: 86400000 */
  int kafka_producer_check_ms;              /* its check interval; 0: 600000 */
  int kafka_offsets_retention_minutes;      /* offsets.retention.minutes; 0: 10080 */
  int64_t kafka_offsets_retention_ms;       /* tarn's finer form of it, over the minutes; 0: none */
  int kafka_offsets_check_ms;               /* offsets.retention.check.interval.ms; 0: 600000 */
  uint64_t kafka_max_preauth_request_bytes; /* issue 33's limits (tarn_kafka_node_config); */
  uint64_t kafka_max_inflight_bytes;        /* 0: the defaults */
  int kafka_max_connections_per_ip;
  int kafka_auth_timeout_ms;
  int kafka_request_timeout_ms;
  int kafka_failed_auth_delay_ms;   /* -1: the default (100) */
  int kafka_consumer_heartbeat_ms;  /* group.consumer.heartbeat.interval.ms; 0: 5000 */
  int express_takeover;             /* fence and settle dead express writers' epochs (1) */
  int express_takeover_interval_ms; /* (1000) */
} tarn_srv_options;

#define TARN_SERVE_DEFAULT_LISTEN "127.0.0.1:9470"

void tarn_srv_options_default(tarn_srv_options *o);

typedef struct tarn_srv_node tarn_srv_node;

/* Starts the jobs and the endpoint on an open deployment (not owned). */
int tarn_srv_node_start(struct tarn_deployment *d, const tarn_srv_options *o, tarn_srv_node **out);
/* The port the endpoint listens on. */
int tarn_srv_node_port(const tarn_srv_node *n);
/* Stops the jobs (runs in progress finish: a compaction task completes its
 * step and releases its lock), then the endpoint; frees. */
void tarn_srv_node_stop(tarn_srv_node *n);

/* The scheduled jobs that compaction, reclamation and WAL collection add
 * (jobs_compaction.c): fills jobs[0..) and returns how many (at most 8), or a
 * negative TARN_E*. *state is freed by tarn_srv_compaction_free. */
struct tarn_srv_job;
int tarn_srv_compaction_jobs(struct tarn_deployment *d, const tarn_srv_options *o,
                             struct tarn_srv_job *jobs, void **state);
void tarn_srv_compaction_free(void *state);

/* The Kafka listener and its registry job (jobs_kafka.c, through tarn/kafka_node.h), when
 * o->kafka_listen is set: starts the listener, fills jobs[0..3] (the
 * registry, the groups' tick, the express handover, the producer expiry) and returns 4 (0 when
 * off), or a negative TARN_E*. tarn_srv_kafka_free drains and stops. */
int tarn_srv_kafka_jobs(struct tarn_deployment *d, const tarn_srv_options *o,
                        struct tarn_srv_job *jobs, void **state);
int tarn_srv_kafka_port_of(void *state);
void tarn_srv_kafka_free(void *state);
/* The express-takeover job (jobs_express.c), when o->express_takeover: fills
 * jobs[0] and returns 1 (0 when off), or a negative TARN_E*. */
int tarn_srv_express_jobs(struct tarn_deployment *d, const tarn_srv_options *o,
                          struct tarn_srv_job *jobs, void **state);
void tarn_srv_express_free(void *state);
/* The Kafka port a node listens on (-1 when off). */
int tarn_srv_node_kafka_port(const tarn_srv_node *n);

#endif
