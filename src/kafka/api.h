/* The Kafka protocol logic of a node (issue 13 §2; docs/kafka.md): the
 * node's context, one request in flight, the handler type and the
 * completion calls, and the dispatch table by API key (api.c).
 *
 * Layers: src/kafka/proto (codecs) -> src/kafka (this: handlers over src/log)
 * -> src/server/kafka_listen.c (sockets, the event loop, the worker pool).
 * The listener decodes the request header and body, fills a tarn__kreq and
 * calls the API's handler on a worker thread. A handler may block (a fetch
 * waiting for data) or return at once and complete the request later from
 * any thread (a produce answered from the writer's acknowledgement); either
 * way it calls exactly one of the completion calls exactly once. Responses of
 * one connection go out in request order whatever order they complete in. */
#ifndef TARN_KAFKA_API_H
#define TARN_KAFKA_API_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kafka/proto/kproto.h"
#include "tarn/buf.h"
#include "tarn/reader.h"

struct tarn_meta;
struct tarn_catalog;
struct tarn_writer;
struct tarn_reader;
struct tarn_deployment;
struct tarn__kregistry;
struct tarn__knode;
typedef struct tarn__karena tarn__karena; /* kafka/proto/kproto.h */

/* Kafka's socket.request.max.bytes: the largest request frame accepted. */
#define TARN_KAFKA_DEFAULT_MAX_REQUEST_BYTES (100u << 20)

/* The node's options (tarn serve --kafka-*). */
typedef struct tarn__knode_config {
  int32_t node_id;                    /* this node's broker ID in Metadata; -1: the first free */
  char host[256];                     /* advertised host (clients connect to it) */
  int port;                           /* advertised port */
  int auto_create_topics;             /* Metadata creates unknown topics (0) */
  int32_t auto_create_partitions;     /* partitions of an auto-created topic (1) */
  uint32_t batch_ms;                  /* produce's batch window of topics without one (250) */
  uint32_t express_absorb_ms;         /* the express writer's absorb window (0: its 250) */
  uint32_t express_latency_budget_ms; /* its latency budget (0: none, batch_ms alone) */
  uint32_t express_fence_ms;     /* its in-process roll's fence deadline (0: the fence's 30 s) */
  int64_t offsets_retention_ms;  /* offsets.retention.minutes in ms (DescribeConfigs reports it) */
  int32_t consumer_heartbeat_ms; /* group.consumer.heartbeat.interval.ms (KIP-848); 0: 5000 */
  /* SASL (sasl.h): the TARN__KSASL_* mechanisms a client must authenticate
   * with before any other request; 0: none required, SaslHandshake and
   * SaslAuthenticate not advertised. */
  int sasl_mechanisms;
  /* One line per refused (ok 0) or accepted (ok 1) authentication: the peer,
   * the user and the mechanism, never the secret. NULL: not logged. */
  void (*auth_log)(const struct tarn__knode *n, int ok, const char *peer, const char *user,
                   const char *mechanism, const char *reason);
  /* The star of the node's express writer (kexpress.c); "" until set. */
  char star[160];
  /* One line per express log handed over (rc 0) or Finish that did not land. */
  void (*express_log)(const struct tarn__knode *n, const char *event, uint64_t log_id, int rc,
                      const char *msg);
  /* Where the node's log lines go (tarn_kafka_log_fn of tarn/kafka_node.h,
   * through tarn__klog): the listener's, and auth_log's and express_log's as
   * node.c writes them. NULL: none. */
  void (*log)(void *arg, int level, const char *msg, const char *const *kv);
  void *log_arg;
} tarn__knode_config;

void tarn__knode_config_default(tarn__knode_config *c);

/* One log line through n->cfg.log (klog.c): level TARN_KAFKA_LOG_*, msg, then
 * NULL-terminated (key, value) string pairs (at most 16 pairs). */
void tarn__klog(const struct tarn__knode *n, int level, const char *msg, ...);

/* The node's context, shared by every handler (read-only after start; the
 * objects it points to are thread-safe). */
typedef struct tarn__knode {
  tarn__knode_config cfg;
  struct tarn_deployment *dep;
  struct tarn_meta *meta;
  struct tarn_catalog *catalog;
  struct tarn_writer *writer; /* every produce of the node: one WAL object stream */
  struct tarn_reader *reader;
  struct tarn__kregistry *registry; /* live nodes (registry.h) */
  struct tarn__kgroups *groups;     /* consumer groups (group.h); NULL when absent */
  struct tarn__kprod *producers;    /* idempotent producers (producer.h); NULL when absent */
  struct tarn__knode_priv *priv;    /* knode.c: the topic cache, the writers by batch window */
  struct tarn__kexpress *express;   /* kexpress.c: the express writer and the logs it led */
  /* issue 33 item 4 (sasl_guard.h): failed-login limits, the hashing
   * threads, the failure delay; NULL: none (no SASL, or unit tests) */
  struct tarn__kguard *guard;
  /* Kafka's cluster ID (Metadata v2+, DescribeCluster): the deployment's id
   * in Uuid.toString form, 22 characters (issue 37; node.c) */
  char cluster_id[23];
  /* Set once the node is whole (node.c, after the registry joined): the
   * listener binds first (port 0 is advertised as bound), and a request read
   * before this is refused by closing its connection, never handled by a
   * half-built node (issue 37: a Metadata request crashed a starting node). */
  _Atomic int ready;
} tarn__knode;

struct tarn_kafka_topic;
/* Sets up what knode.c keeps (after meta, catalog, reader and writer are
 * set: writer is the one of cfg.batch_ms). */
int tarn__knode_open(tarn__knode *n);
/* Flushes and closes the writers knode.c opened (not n->writer), frees. */
void tarn__knode_close(tarn__knode *n);
/* Flushes every writer of the node: each produce queued before is answered. */
void tarn__knode_flush(tarn__knode *n);
/* The live topic `name` (len bytes), from a cache of one second (a topic
 * created or deleted through this node is seen at once; through another,
 * within the second). Free with tarn_kafka_topic_free. TARN_ENOTFOUND. */
int tarn__knode_topic(tarn__knode *n, const char *name, size_t len, struct tarn_kafka_topic *out);
/* Drops `name` from the cache (after creating or deleting it). */
void tarn__knode_topic_forget(tarn__knode *n, const char *name, size_t len);
/* The writer whose batch window is batch_ms (0: cfg.batch_ms): one per window,
 * so that topics with one window share WAL objects. On success the writer is
 * held until tarn__knode_writer_done (append, then let go: not across a wait). */
int tarn__knode_writer(tarn__knode *n, uint32_t batch_ms, struct tarn_writer **out);
void tarn__knode_writer_done(tarn__knode *n);
/* Closes the node's writers (every append queued is answered first) and
 * opens new ones: their leases on every log go (LS-043), so a log being
 * deleted is not held by this node (a writer keeps its leases until close). */
int tarn__knode_release_leases(tarn__knode *n);

/* Express topics (issue 15; kexpress.c, docs/kafka.md "Express topics"): a
 * topic whose stream is of class express is written by one tarn_xwriter per
 * node (star cfg.star), and only by the partition's leader
 * (tarn__kregistry_leader over the live nodes). */
struct tarn_xwriter;
int tarn__kexpress_open(tarn__knode *n);
/* 1 when t's stream is express. */
int tarn__kexpress_is(const struct tarn_kafka_topic *t);
/* 1 when this node leads t's partition (and is not draining), 0 when another
 * node does, or the registry's error. */
int tarn__kexpress_leads(tarn__knode *n, const struct tarn_kafka_topic *t, uint32_t partition);
/* The node's express writer (opened at the first call) for an append to
 * log_id, t's partition: the log is listed for the handover job first. A
 * writer that failed for good is closed here and a new one opened, at most
 * one open a second (TARN_EUNAVAIL, retryable, meanwhile; kexpress.c). On
 * success the writer is held until tarn__kexpress_writer_done (append, then
 * let go: not across a wait, nor across another call of this). */
int tarn__kexpress_writer(tarn__knode *n, const struct tarn_kafka_topic *t, uint32_t partition,
                          uint64_t log_id, struct tarn_xwriter **out);
void tarn__kexpress_writer_done(tarn__knode *n);
/* Runs Finish for every log the writer leads and this node no longer should
 * (all: every log), and again for any whose Finish failed, at most once per
 * TARN_XWRITER_FINISH_RETRY_MS. Returns how many Finishes have not landed. */
int tarn__kexpress_handover(tarn__knode *n, int all);
/* From now on this node leads nothing (SIGTERM): produces are refused. */
void tarn__kexpress_drain(tarn__knode *n);
/* Closes the writer: Finish for every log it leads (retried), then frees. */
int tarn__kexpress_close(tarn__knode *n);
/* Fetch of an express partition (item 4 of issue 15; docs/kafka.md "Express
 * topics"): the acknowledged tail that this node's writer holds and the
 * index does not have yet, from offset from on, appended to out (NULL: only
 * *next is wanted) whole entries at a time, their batches' offsets set
 * (LS-099), contiguous from from (an entry starting past from, a gap the
 * index must fill first, ends the walk), at most max bytes unless first (the
 * first entry of a response is taken whatever its size). *next: the offset
 * after the last entry taken (from when none). 0 and nothing when the writer
 * does not lead the log. */
int tarn__kexpress_tail(tarn__knode *n, uint64_t log_id, uint64_t from, size_t max, int first,
                        struct tarn_buf *out, uint64_t *next);

/* Fetch cursors (issue 13 §4): a log's iterator kept between Fetches, so that
 * a consumer reading on does not look its entry up in the index and read its
 * object's payloads again for every Fetch (an iterator reads the entries of
 * an object's section that lie back to back at once; without a cursor a
 * Fetch used one of them and threw the others away). The node owns the idle
 * cursors; a Fetch takes one out (then only it uses it), and puts it back.
 * An entry read and not returned (it did not fit the response) is held. */
typedef struct tarn__kcursor {
  uint64_t log_id;
  struct tarn_log_iter *it;
  int held; /* e was read from it and not yet returned */
  struct tarn_entry e;
  int64_t at; /* monotonic ms it was put back */
} tarn__kcursor;
/* Takes out the idle cursor of log_id whose next entry starts at offset, or NULL. */
tarn__kcursor *tarn__knode_cursor_take(tarn__knode *n, uint64_t log_id, uint64_t offset);
/* Gives c (NULL: nothing) to the node; the oldest cursors past the node's
 * bounds (count, bytes held, idle time) are freed. */
void tarn__knode_cursor_put(tarn__knode *n, tarn__kcursor *c);
void tarn__kcursor_free(tarn__kcursor *c);

/* How a request ends (what the connection does with it). */
enum {
  TARN__KREQ_RESPONSE = 0, /* frame holds the whole response (size prefix included) */
  TARN__KREQ_NONE = 1,     /* no response is sent (produce with acks=0) */
  TARN__KREQ_CLOSE = 2     /* close the connection after the responses before this one */
};

typedef struct tarn__kreq tarn__kreq;
/* The connection's side of a completion: called once, from any thread;
 * frame (TARN__KREQ_RESPONSE only) is moved to the callee. */
typedef void (*tarn__kreq_done_fn)(tarn__kreq *req, int how, tarn_buf *frame);

/* One request in flight. The listener owns it; after a completion call the
 * handler must not touch it again. */
struct tarn__kreq {
  int16_t api_key, api_version;
  int32_t correlation_id;
  const char *client_id; /* NUL-terminated copy; "" for a null client id */
  void *body;            /* the decoded tarn__k_<api>_req, once tarn__kreq_body ran */
  tarn__karena *arena;   /* the body's allocations; handlers may allocate from it too
                          * (freed at completion, after the response is encoded) */
  const uint8_t *frame;  /* the request bytes after the size prefix (body points into them) */
  size_t frame_len;
  size_t body_off; /* where the body starts in frame */
  /* the connection: filled by the listener, used by the completion calls */
  void *conn;
  uint64_t seq; /* the request's place in its connection's order */
  tarn__kreq_done_fn done;
  char peer[64];            /* "host:port" of the client, for logs */
  struct tarn__ksasl *sasl; /* the connection's SASL state (sasl.h); NULL: none required */
};

/* Encodes resp (a tarn__k_<api>_resp of req's API) at req's version with the
 * response header the API requires, and queues it. On an encoding failure the
 * connection is closed instead (a client waiting for an answer that cannot be
 * built learns it that way). */
void tarn__kreq_respond(tarn__kreq *req, const void *resp);
/* Decodes req's body into out, the handler's tarn__k_<api>_req (strings and
 * records point into req->frame, arrays into req->arena). 0, or a negative
 * TARN_E* after closing the connection (the request is completed: return). */
int tarn__kreq_body(tarn__kreq *req, void *out);
/* The skeleton of a response that answers a request's array one entry for
 * one (its topics, a topic's partitions): n entries (n < 0, a null array:
 * none) of size bytes each, zeroed, from req's arena; *count is set to the
 * number. NULL (and *count 0) when out of memory. */
void *tarn__kresp_entries(tarn__kreq *req, int32_t n, size_t size, int32_t *count);
/* A copy of s in req's arena, for a response (NULL s, or out of memory: the
 * null string). */
tarn__kstr tarn__kresp_str(tarn__kreq *req, const char *s);
/* Completes req with a frame built by the caller (size prefix included; moved). */
void tarn__kreq_respond_frame(tarn__kreq *req, tarn_buf *frame);
/* Completes req without a response (acks=0). */
void tarn__kreq_no_response(tarn__kreq *req);
/* Completes req by closing the connection once the responses of the requests
 * before it are written (a malformed request; an acks=0 produce that failed). */
void tarn__kreq_close(tarn__kreq *req);

typedef void (*tarn__khandler)(tarn__knode *node, tarn__kreq *req);

/* Decodes req->frame (header and body), then runs the API's handler on the
 * calling thread (kreq.c). Always ends in one completion, now or later: an
 * unknown API or version gets the KIP-511 answer for ApiVersions and a closed
 * connection otherwise; a body that does not decode, a closed connection. */
void tarn__kreq_dispatch(tarn__knode *node, tarn__kreq *req);

/* One API the node serves: the versions it answers and advertises. */
typedef struct tarn__kapi {
  int16_t api_key;
  int16_t min_version, max_version; /* advertised in ApiVersions */
  tarn__khandler handle;
  const char *name;
} tarn__kapi;

/* The dispatch table (api.c), in API-key order. */
const tarn__kapi *tarn__kapi_table(size_t *n);
/* The entry of api_key, or NULL when the node does not serve it. */
const tarn__kapi *tarn__kapi_find(int16_t api_key);
/* Kafka's name of an API key, served or not ("unknown" past Kafka's keys). */
const char *tarn__kapi_name(int16_t api_key);

/* The handlers (src/kafka/api_<name>.c). */
void tarn__kapi_api_versions(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_metadata(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_produce(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_fetch(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_list_offsets(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_create_topics(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_describe_configs(tarn__knode *node, tarn__kreq *req);
/* AlterConfigs, IncrementalAlterConfigs, CreatePartitions (issue 37) */
void tarn__kapi_alter_configs(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_incremental_alter_configs(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_create_partitions(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_delete_topics(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_delete_records(tarn__knode *node, tarn__kreq *req); /* soft trim (retention.h) */
/* consumer groups and idempotent producers (group.h, producer.h) */
void tarn__kapi_find_coordinator(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_join_group(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_sync_group(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_heartbeat(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_leave_group(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_offset_commit(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_offset_fetch(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_describe_groups(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_list_groups(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_init_producer_id(tarn__knode *node, tarn__kreq *req);
/* the admin surface of issue 37 */
void tarn__kapi_delete_groups(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_offset_delete(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_describe_cluster(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_describe_producers(tarn__knode *node, tarn__kreq *req);       /* issue 37 */
void tarn__kapi_consumer_group_heartbeat(tarn__knode *node, tarn__kreq *req); /* KIP-848 */
void tarn__kapi_consumer_group_describe(tarn__knode *node, tarn__kreq *req);  /* KIP-848 */
void tarn__kapi_describe_log_dirs(tarn__knode *node, tarn__kreq *req);        /* issue 37 */
/* SASL (sasl.h): served only on a listener that requires it */
void tarn__kapi_sasl_handshake(tarn__knode *node, tarn__kreq *req);
void tarn__kapi_sasl_authenticate(tarn__knode *node, tarn__kreq *req);

/* Kafka error codes the handlers answer with. */
enum {
  TARN__KERR_NONE = 0,
  TARN__KERR_UNKNOWN_SERVER_ERROR = -1,
  TARN__KERR_OFFSET_OUT_OF_RANGE = 1,
  TARN__KERR_CORRUPT_MESSAGE = 2,
  TARN__KERR_INVALID_RECORD = 87,
  TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION = 3,
  TARN__KERR_INVALID_FETCH_SIZE = 4,
  TARN__KERR_LEADER_NOT_AVAILABLE = 5,
  TARN__KERR_NOT_LEADER_OR_FOLLOWER = 6,
  TARN__KERR_REQUEST_TIMED_OUT = 7,
  TARN__KERR_MESSAGE_TOO_LARGE = 10,
  TARN__KERR_COORDINATOR_LOAD_IN_PROGRESS = 14,
  TARN__KERR_COORDINATOR_NOT_AVAILABLE = 15,
  TARN__KERR_NOT_COORDINATOR = 16,
  TARN__KERR_INVALID_TOPIC_EXCEPTION = 17,
  TARN__KERR_RECORD_LIST_TOO_LARGE = 18,
  TARN__KERR_INVALID_REQUIRED_ACKS = 21,
  TARN__KERR_TOPIC_AUTHORIZATION_FAILED = 29,
  TARN__KERR_UNSUPPORTED_SASL_MECHANISM = 33,
  TARN__KERR_ILLEGAL_SASL_STATE = 34,
  TARN__KERR_UNSUPPORTED_VERSION = 35,
  TARN__KERR_TOPIC_ALREADY_EXISTS = 36,
  TARN__KERR_INVALID_PARTITIONS = 37,
  TARN__KERR_INVALID_REPLICATION_FACTOR = 38,
  TARN__KERR_INVALID_REQUEST = 42,
  TARN__KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT = 43,
  TARN__KERR_KAFKA_STORAGE_ERROR = 56,
  TARN__KERR_SASL_AUTHENTICATION_FAILED = 58,
  TARN__KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53,
  TARN__KERR_UNKNOWN_TOPIC_ID = 100
};

/* The Kafka error code of a tarn error (the store failed: KAFKA_STORAGE_ERROR
 * for reads and writes of data; UNKNOWN_SERVER_ERROR otherwise). */
int16_t tarn__kerr_of(int rc);

/* The finder of idempotent producers' unsettled claims (producer.h,
 * tarn__kprod_finder; api_produce.c): arg is the node, read through its
 * reader; ctx the express writer that leads the log (an express topic's
 * partition), or NULL. */
int tarn__kproduce_find(void *arg, void *ctx, const char *key, int64_t pid, int32_t first_seq,
                        int64_t from, int64_t *offset);

#endif
