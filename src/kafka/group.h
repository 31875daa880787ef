/* The consumer-group coordinator of a node: Kafka's classic group protocol
 * (issue 13 §2 "Consumer groups"; docs/kafka.md "Groups and producers"),
 * independent of the wire.
 *
 * One tarn__kgroups holds every group this node coordinates. Members,
 * generations, the chosen protocol, the leader and the assignments are kept
 * in memory while the node serves the group and written to the metadata
 * store at each generation change and at the leader's SyncGroup, by
 * CreateIfAbsent/CompareAndSet on the group's record: a write that loses
 * means another node took the group over, and the group is answered
 * NOT_COORDINATOR and dropped here. Committed offsets are records of their
 * own, written under a guard on the group record's version, so a commit of
 * a member of a generation another coordinator has since replaced is not
 * stored. A restart or another node reads the group back from the store.
 *
 * Time is the caller's (now_ms, a monotonic clock): the join phase ends when
 * every known member has rejoined or at the rebalance deadline, which
 * tarn__kgroups_tick() notices; sessions expire in the tick too. JoinGroup
 * and SyncGroup answer through callbacks, called exactly once per request,
 * either before the call returns or later from another call or the tick, and
 * never with the coordinator's lock held. The response passed to a callback
 * is valid only during the call.
 *
 * Static members (KIP-345: JoinGroup v5+ with a group instance ID) are
 * mapped instance ID -> member ID: a static member that comes back without
 * its member ID (a restarted process) takes its instance's place under a new
 * member ID, without a rebalance while the group is Stable and the chosen
 * protocol stays, and the old member ID is fenced: a request naming it with
 * the instance ID is answered FENCED_INSTANCE_ID. Requests of the group APIs
 * name the instance ID where their version has it (NULL: none).
 *
 * Results carry Kafka error codes (TARN__KG_*); the functions are
 * thread-safe. */
#ifndef TARN_KAFKA_GROUP_H
#define TARN_KAFKA_GROUP_H

#include <stddef.h>
#include <stdint.h>

struct tarn_meta;

/* The metadata-store partition of groups and committed offsets
 * (TARN_KAFKA_GROUPS_PARTITION of tarn/kafka_topics.h). */
#define TARN__KG_PARTITION "kafka-groups"
/* Kafka's offset.metadata.max.bytes. */
#define TARN__KG_OFFSET_METADATA_MAX 4096

/* Kafka error codes of the group APIs. */
enum {
  TARN__KG_NONE = 0,
  TARN__KG_UNKNOWN_SERVER_ERROR = -1,
  TARN__KG_OFFSET_METADATA_TOO_LARGE = 12,
  TARN__KG_COORDINATOR_LOAD_IN_PROGRESS = 14,
  TARN__KG_COORDINATOR_NOT_AVAILABLE = 15,
  TARN__KG_NOT_COORDINATOR = 16,
  TARN__KG_ILLEGAL_GENERATION = 22,
  TARN__KG_INCONSISTENT_GROUP_PROTOCOL = 23,
  TARN__KG_INVALID_GROUP_ID = 24,
  TARN__KG_UNKNOWN_MEMBER_ID = 25,
  TARN__KG_INVALID_SESSION_TIMEOUT = 26,
  TARN__KG_REBALANCE_IN_PROGRESS = 27,
  TARN__KG_INVALID_REQUEST = 42,
  TARN__KG_NON_EMPTY_GROUP = 68,
  TARN__KG_GROUP_ID_NOT_FOUND = 69,
  TARN__KG_MEMBER_ID_REQUIRED = 79,
  TARN__KG_FENCED_INSTANCE_ID = 82,
  TARN__KG_GROUP_SUBSCRIBED_TO_TOPIC = 86,
  TARN__KG_UNSUPPORTED_VERSION = 35,
  TARN__KG_FENCED_MEMBER_EPOCH = 110, /* KIP-848 */
  TARN__KG_UNRELEASED_INSTANCE_ID = 111,
  TARN__KG_UNSUPPORTED_ASSIGNOR = 112,
  TARN__KG_STALE_MEMBER_EPOCH = 113
};

typedef struct tarn__kgroups tarn__kgroups;

typedef struct tarn__kgroups_options {
  int32_t min_session_ms;        /* group.min.session.timeout.ms (6000) */
  int32_t max_session_ms;        /* group.max.session.timeout.ms (1800000) */
  int32_t consumer_heartbeat_ms; /* group.consumer.heartbeat.interval.ms (5000), KIP-848 */
  int32_t consumer_session_ms;   /* group.consumer.session.timeout.ms (45000) */
} tarn__kgroups_options;

/* m stays the caller's. opt may be NULL (the defaults). */
int tarn__kgroups_open(struct tarn_meta *m, const tarn__kgroups_options *opt, tarn__kgroups **out);
/* Answers every waiting JoinGroup and SyncGroup with NOT_COORDINATOR and
 * frees. NULL is allowed. */
void tarn__kgroups_close(tarn__kgroups *g);

/* One protocol (assignor) a member supports, with its opaque metadata. */
typedef struct tarn__kg_protocol {
  const char *name;
  const uint8_t *meta;
  size_t len;
} tarn__kg_protocol;

typedef struct tarn__kjoin_req {
  const char *group_id;
  const char *member_id;         /* "" for a member without one yet */
  const char *group_instance_id; /* NULL: a dynamic member; else static (KIP-345) */
  const char *client_id, *client_host;
  const char *protocol_type; /* "consumer" */
  int32_t session_timeout_ms;
  int32_t rebalance_timeout_ms;       /* JoinGroup v0: the session timeout */
  int16_t version;                    /* JoinGroup version: MEMBER_ID_REQUIRED from v4 */
  const tarn__kg_protocol *protocols; /* in the member's order of preference */
  size_t n_protocols;
} tarn__kjoin_req;

typedef struct tarn__kjoin_member {
  const char *member_id;
  const char *instance_id; /* NULL: a dynamic member */
  const uint8_t *meta;     /* the member's metadata for the chosen protocol */
  size_t len;
} tarn__kjoin_member;

typedef struct tarn__kjoin_resp {
  int16_t error;
  int32_t generation;                /* -1 on an error */
  const char *protocol_type;         /* NULL on an error */
  const char *protocol_name;         /* NULL on an error */
  const char *leader;                /* "" on an error */
  const char *member_id;             /* the member's ID ("" or the request's on an error;
                                        the new one with MEMBER_ID_REQUIRED) */
  const tarn__kjoin_member *members; /* the leader only: every member */
  size_t n_members;
} tarn__kjoin_resp;

typedef void (*tarn__kjoin_cb)(void *arg, const tarn__kjoin_resp *r);
typedef void (*tarn__ksync_cb)(void *arg, int16_t error, const uint8_t *assignment, size_t len);

/* JoinGroup. cb(arg, ...) is called exactly once. */
void tarn__kgroups_join(tarn__kgroups *g, const tarn__kjoin_req *q, int64_t now_ms,
                        tarn__kjoin_cb cb, void *arg);

typedef struct tarn__ksync_assignment {
  const char *member_id;
  const uint8_t *assignment;
  size_t len;
} tarn__ksync_assignment;

/* SyncGroup: the leader hands in every member's assignment; every member
 * gets its own once the leader's has come. cb is called exactly once.
 * instance_id: the request's group instance ID (SyncGroup v3+), NULL. */
void tarn__kgroups_sync(tarn__kgroups *g, const char *group_id, int32_t generation,
                        const char *member_id, const char *instance_id,
                        const tarn__ksync_assignment *a, size_t n, int64_t now_ms,
                        tarn__ksync_cb cb, void *arg);

/* instance_id: Heartbeat v3+, NULL. */
int16_t tarn__kgroups_heartbeat(tarn__kgroups *g, const char *group_id, int32_t generation,
                                const char *member_id, const char *instance_id, int64_t now_ms);
/* LeaveGroup of one member: by its member ID, or (v3+, KIP-345) by its
 * instance ID with member ID "" (an administrative removal); a member ID
 * the instance ID no longer maps to is FENCED_INSTANCE_ID. */
int16_t tarn__kgroups_leave(tarn__kgroups *g, const char *group_id, const char *member_id,
                            const char *instance_id, int64_t now_ms);

/* Ends join phases whose members have all rejoined or whose deadline has
 * passed, removes members whose session expired. Call it often (every
 * ~100 ms); it answers waiting requests through their callbacks. */
void tarn__kgroups_tick(tarn__kgroups *g, int64_t now_ms);

/* Drops what this node holds of a group (it is no longer the group's
 * coordinator): waiting requests are answered NOT_COORDINATOR, the next
 * request reads the group from the store. */
void tarn__kgroups_forget(tarn__kgroups *g, const char *group_id);

/* One partition of an OffsetCommit or OffsetFetch. */
typedef struct tarn__koffset {
  const char *topic; /* OffsetFetch of all: malloc'd by the call (tarn__koffsets_free) */
  int32_t partition;
  int64_t offset;       /* -1: none committed */
  int32_t leader_epoch; /* -1: none */
  const char *metadata; /* NULL or "" for none; OffsetFetch: malloc'd, "" when none */
  int16_t error;        /* out: the partition's Kafka error */
  int rc;               /* out (OffsetFetch): the tarn code of reading it, 0 */
  uint8_t topic_id[16]; /* the topic's incarnation (issue 37 "Lifecycle"): OffsetCommit: in,
                           the ID of the topic committed on; OffsetFetch: out, the ID the
                           offset was committed on (zeros: none recorded, format 1) */
} tarn__koffset;

/* OffsetCommit: generation -1 with member "" is a plain commit (the group
 * must have no members); otherwise the member of the current generation
 * (instance_id: OffsetCommit v7+, NULL; a replaced static member's old ID is
 * FENCED_INSTANCE_ID). Returns the request-wide error (every partition's
 * error is then set to it too), else each partition's error is its own. */
int16_t tarn__kgroups_commit(tarn__kgroups *g, const char *group_id, int32_t generation,
                             const char *member_id, const char *instance_id, tarn__koffset *parts,
                             size_t n, int64_t now_ms);

/* OffsetFetch of the listed partitions: offset -1 and metadata "" for a
 * partition without a commit; on a store failure a partition gets rc < 0
 * and error COORDINATOR_LOAD_IN_PROGRESS (what OffsetFetch v1 must answer:
 * its response has no request-wide error; a client given -1 would reset its
 * position). Fills metadata (malloc'd): free with tarn__koffsets_free(parts,
 * n, 0). Returns 0, or the store's code when every partition failed. */
int tarn__kgroups_fetch(tarn__kgroups *g, const char *group_id, tarn__koffset *parts, size_t n);
/* OffsetFetch of every committed partition of the group, sorted by topic
 * and partition. Free with tarn__koffsets_free(*out, *n, 1). */
int tarn__kgroups_fetch_all(tarn__kgroups *g, const char *group_id, tarn__koffset **out, size_t *n);
/* Frees the metadata strings (and with own, the topics and the array). */
void tarn__koffsets_free(tarn__koffset *parts, size_t n, int own);

/* DeleteGroups of one group (issue 37): its record and every committed
 * offset go, as Kafka's coordinator deletes an Empty group. NON_EMPTY_GROUP
 * while it has members, GROUP_ID_NOT_FOUND when it has neither a record nor
 * an offset (a group of plain commits only has offsets), NOT_COORDINATOR when
 * another node wrote the group meanwhile, COORDINATOR_NOT_AVAILABLE when the
 * store failed (then a retry finishes what is left). */
int16_t tarn__kgroups_delete(tarn__kgroups *g, const char *group_id, int64_t now_ms);

/* OffsetDelete (issue 37): the committed offsets of parts (topics that
 * exist, checked by the caller) are deleted; a partition of a topic the
 * group's members subscribe to gets GROUP_SUBSCRIBED_TO_TOPIC instead (a
 * group of protocol type "consumer" with members; Kafka reads the topics
 * from their subscriptions and takes every topic when one does not parse).
 * Returns the request-wide error: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (a
 * group with members of another protocol type), COORDINATOR_NOT_AVAILABLE;
 * else each partition's error is its own. */
int16_t tarn__kgroups_delete_offsets(tarn__kgroups *g, const char *group_id, tarn__koffset *parts,
                                     size_t n, int64_t now_ms);

/* Offsets expiry (issue 37 "Lifecycle"; Kafka's offsets.retention.minutes,
 * KIP-211). mine(arg, group): 1 when this node coordinates the group (NULL:
 * every group); live(arg, topic, id): 1 when the topic's live incarnation
 * has that ID (zeros: any), 0 when it has not or there is none, <0 when the
 * catalog cannot be read; NULL: every topic is live. */
typedef struct tarn__kg_expiry {
  int (*mine)(void *arg, const char *group_id);
  int (*live)(void *arg, const char *topic, const uint8_t id[16]);
  void *arg;
} tarn__kg_expiry;

typedef struct tarn__kg_expired {
  size_t offsets; /* offset records deleted */
  size_t groups;  /* Empty groups whose record went with their last offset (Dead) */
} tarn__kg_expired;

/* One pass over every group (x->mine ones): an Empty group's offsets expire
 * retention_ms after it became Empty, a group of plain commits' each
 * retention_ms after its commit, a Stable consumer group's offsets of
 * topics it does not subscribe to retention_ms after their commit; offsets
 * of topic incarnations no longer live go at once; each by a Delete on the
 * version read, guarded by the group record (a commit or a join that lands
 * meanwhile keeps them). An Empty group left without offsets goes (Dead).
 * Times are the wall clock (tarn__now_ms). */
int tarn__kgroups_expire(tarn__kgroups *g, int64_t retention_ms, const tarn__kg_expiry *x,
                         tarn__kg_expired *out);

typedef struct tarn__kgdesc_member {
  char *member_id, *client_id, *client_host;
  char *instance_id; /* NULL: a dynamic member */
  uint8_t *meta;     /* the chosen protocol's metadata */
  size_t meta_len;
  uint8_t *assignment;
  size_t assignment_len;
} tarn__kgdesc_member;

typedef struct tarn__kgdesc {
  int16_t error;
  char *group_id;
  const char *state;   /* "Empty", "PreparingRebalance", "CompletingRebalance", "Stable",
                          "Dead" (no such group) */
  char *protocol_type; /* "" when none */
  char *protocol;      /* "" when none */
  tarn__kgdesc_member *members;
  size_t n_members;
} tarn__kgdesc;

/* DescribeGroups of one group. Free with tarn__kgdesc_free. */
void tarn__kgroups_describe(tarn__kgroups *g, const char *group_id, int64_t now_ms,
                            tarn__kgdesc *out);
void tarn__kgdesc_free(tarn__kgdesc *d);

typedef struct tarn__kglisted {
  char *group_id;
  char *protocol_type;
  const char *state;
  const char *type; /* "classic" or "consumer" (KIP-848, ListGroups v5) */
} tarn__kglisted;

/* ListGroups: every group in the store or in this node's memory, sorted by
 * ID (a caller serving one node filters those it coordinates). Free with
 * tarn__kglisted_free. */
int tarn__kgroups_list(tarn__kgroups *g, tarn__kglisted **out, size_t *n);
void tarn__kglisted_free(tarn__kglisted *v, size_t n);

/* ---- consumer groups (KIP-848, issue 37; cgroup.c, cassign.c) ------------- */

/* One topic partition of a consumer group, by topic ID. */
typedef struct tarn__kc_tp {
  uint8_t id[16];
  int32_t partition;
} tarn__kc_tp;

/* A set of partitions, sorted by (id, partition), no duplicates. */
typedef struct tarn__kc_set {
  tarn__kc_tp *v;
  size_t n;
} tarn__kc_set;

/* A subscribed topic as the catalog has it. */
typedef struct tarn__kc_topic {
  char *name;
  uint8_t id[16];
  int32_t partitions;
} tarn__kc_topic;

/* The topic's ID and partition count: 0, TARN_ENOTFOUND, or a negative code
 * when the catalog cannot be read. */
typedef int (*tarn__kc_resolve_fn)(void *arg, const char *topic, uint8_t id[16],
                                   int32_t *partitions);

typedef struct tarn__kc_hb_req {
  const char *group_id;
  const char *member_id; /* v0 joins with "" (the coordinator names it) */
  const char *instance_id, *client_id, *client_host; /* instance: NULL */
  int32_t member_epoch;                              /* 0 join, -1 leave, -2 static leave */
  int32_t rebalance_timeout_ms;                      /* -1: unchanged */
  const char *const *topics;                         /* NULL: unchanged since the last heartbeat */
  size_t n_topics;
  const char *regex;    /* NULL: none */
  const char *assignor; /* NULL: unchanged / the default */
  const tarn__kc_tp *owned;
  size_t n_owned;
  int has_owned; /* 0: the owned partitions did not change (null on the wire) */
  int16_t version;
} tarn__kc_hb_req;

typedef struct tarn__kc_hb_resp {
  int16_t error;
  const char *message; /* static, NULL */
  char *member_id;     /* malloc'd, NULL on an error */
  int32_t member_epoch;
  int32_t heartbeat_ms;
  tarn__kc_set assignment; /* malloc'd: the member's assigned partitions */
} tarn__kc_hb_resp;

/* ConsumerGroupHeartbeat (docs/kafka.md "Consumer groups (KIP-848)"). resolve
 * reads the catalog (called with the coordinator's lock held). Free the
 * answer with tarn__kc_hb_resp_free. */
void tarn__kgroups_cheartbeat(tarn__kgroups *g, const tarn__kc_hb_req *q,
                              tarn__kc_resolve_fn resolve, void *arg, int64_t now_ms,
                              tarn__kc_hb_resp *out);
void tarn__kc_hb_resp_free(tarn__kc_hb_resp *r);

typedef struct tarn__kc_desc_member {
  char *member_id, *instance_id, *client_id, *client_host;
  int32_t epoch;
  char **topics;
  size_t n_topics;
  tarn__kc_set assigned, target;
} tarn__kc_desc_member;

typedef struct tarn__kc_desc {
  int16_t error;
  const char *state; /* "Empty", "Assigning", "Reconciling", "Stable", "Dead" */
  int32_t group_epoch, assignment_epoch;
  char *assignor;
  tarn__kc_topic *topics; /* names of the IDs in the sets */
  size_t n_topics;
  tarn__kc_desc_member *members;
  size_t n_members;
} tarn__kc_desc;

/* ConsumerGroupDescribe of one group: GROUP_ID_NOT_FOUND for none or a
 * classic group. Free with tarn__kc_desc_free. */
void tarn__kgroups_cdescribe(tarn__kgroups *g, const char *group_id, int64_t now_ms,
                             tarn__kc_desc *out);
void tarn__kc_desc_free(tarn__kc_desc *d);

/* The assignors (cassign.c): pure functions of the subscribed topics and the
 * members; deterministic, balanced within one partition among members of the
 * same subscription, sticky (uniform: a member keeps what it has where the
 * balance allows). */
typedef struct tarn__kc_amember {
  const char *id;
  char *const *topics; /* sorted */
  size_t n_topics;
  const tarn__kc_set *current; /* its target of the previous epoch, NULL */
  tarn__kc_set out;            /* malloc'd */
} tarn__kc_amember;

/* "uniform" and "range"; TARN_EINVAL for another name. topics: sorted by name. */
int tarn__kc_assign(const char *assignor, const tarn__kc_topic *topics, size_t n_topics,
                    tarn__kc_amember *members, size_t n_members);
int tarn__kc_assignor_known(const char *name);
int tarn__kc_set_has(const tarn__kc_set *s, const uint8_t id[16], int32_t partition);
int tarn__kc_set_add(tarn__kc_set *s, const uint8_t id[16], int32_t partition);
void tarn__kc_set_free(tarn__kc_set *s);
int tarn__kc_set_copy(tarn__kc_set *dst, const tarn__kc_set *src);

#endif
