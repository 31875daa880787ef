/* What group.c (the state machine) and group_store.c (the group's records in
 * the metadata store) share. */
#ifndef TARN_KAFKA_GROUP_INTERNAL_H
#define TARN_KAFKA_GROUP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/group.h"

struct tarn_meta;

enum { KG_EMPTY, KG_PREPARING, KG_COMPLETING, KG_STABLE };

/* The group's type (issue 37, KIP-848): a classic group (JoinGroup/SyncGroup)
 * or a consumer group (ConsumerGroupHeartbeat, cgroup.c). An empty group may
 * switch; one with members answers the other protocol's requests
 * INCONSISTENT_GROUP_PROTOCOL. */
enum { KG_CLASSIC = 0, KG_CONSUMER = 1 };

/* A consumer-group member (KIP-848). Its partitions are three sorted sets:
 * assigned (handed to it), revoking (taken from it, which it still owns until
 * a heartbeat reports them gone) and target (what the assignor gave it). The
 * safety rule: a partition is in at most one member's assigned or revoking. */
typedef struct tarn__kc_member {
  char *id, *instance_id, *client_id, *client_host;
  char *assignor; /* the server assignor it asked for, NULL: the default */
  int32_t epoch, prev_epoch;
  int32_t session_ms, rebalance_ms;
  char **topics; /* subscribed topic names, sorted */
  size_t n_topics;
  tarn__kc_set assigned, revoking, target;
  int64_t last_seen;
  int64_t revoke_deadline; /* revoking: the member is fenced when it has not revoked by then */
  struct tarn__kc_member *next;
} tarn__kc_member;

typedef struct tarn__kg_proto_copy {
  char *name;
  uint8_t *meta;
  size_t len;
} tarn__kg_proto_copy;

typedef struct tarn__kg_member {
  char *id, *client_id, *client_host;
  char *instance_id; /* a static member's group instance ID (KIP-345), NULL */
  int32_t session_ms, rebalance_ms;
  tarn__kg_proto_copy *protos;
  size_t n_protos;
  uint8_t *assignment;
  size_t assignment_len;
  int64_t last_seen;
  int pending;                 /* handed an ID with MEMBER_ID_REQUIRED, not joined yet */
  int synced;                  /* sent SyncGroup in this generation */
  struct tarn__kg_wait *jwait; /* a JoinGroup waiting for the join phase to end */
  struct tarn__kg_wait *swait; /* a SyncGroup waiting for the leader's */
  struct tarn__kg_member *next;
} tarn__kg_member;

typedef struct tarn__kg_group {
  char *id;
  int state;
  int32_t generation;
  char *protocol_type, *protocol, *leader; /* NULL when none */
  int assigned;                            /* the leader's assignments of this generation are in */
  tarn__kg_member *members;                /* in join order */
  int64_t deadline; /* PREPARING: end of the join phase; COMPLETING: of the sync */
  int64_t version;  /* the group record's version in the store, 0: none */
  int64_t state_ms; /* wall clock of the last state change written (Kafka's
                       currentStateTimestamp), 0: unknown (a record from before issue 37) */
  /* KIP-848 (type KG_CONSUMER): the group epoch (bumped by every change of
   * membership, subscriptions or subscribed topics), the epoch of the target
   * assignment, the members, the subscribed topics the target was computed on */
  int type;
  int32_t group_epoch, target_epoch;
  tarn__kc_member *cmembers;
  tarn__kc_topic *ctopics;
  size_t n_ctopics;
  struct tarn__kg_group *next;
} tarn__kg_group;

void tarn__kg_member_free(tarn__kg_member *m);
void tarn__kc_member_free(tarn__kc_member *m);
void tarn__kc_topics_free(tarn__kc_topic *t, size_t n);
/* Frees the group and its members (callbacks are the caller's to answer). */
void tarn__kg_group_free(tarn__kg_group *gr);

/* Reads the group record: *out is a new group (state from the record), or
 * one in KG_EMPTY with version 0 when there is none. */
int tarn__kg_load(struct tarn_meta *m, const char *id, int64_t now_ms, tarn__kg_group **out);
/* Reads only the record's version (0 when absent). */
int tarn__kg_version(struct tarn_meta *m, const char *id, int64_t *version);
/* Writes the group record: CreateIfAbsent when gr->version is 0, else
 * CompareAndSet on it; gr->version is updated. TARN_ECONFLICT when another
 * writer got there first. */
int tarn__kg_save(struct tarn_meta *m, tarn__kg_group *gr);
/* Writes one committed offset; guarded by the group record's version when
 * version > 0 (TARN_EGUARD: the group changed elsewhere), by its absence
 * when version is 0 and guard_absent. */
int tarn__kg_put_offset(struct tarn_meta *m, const char *group_id, int64_t version,
                        int guard_absent, const tarn__koffset *o, int64_t now_ms);
/* Reads one committed offset into o (offset -1 when none). */
int tarn__kg_get_offset(struct tarn_meta *m, const char *group_id, tarn__koffset *o);
int tarn__kg_scan_offsets(struct tarn_meta *m, const char *group_id, tarn__koffset **out,
                          size_t *n);
/* Deletes the group record if its version is still version (TARN_ECONFLICT
 * or TARN_ENOTFOUND when it changed). */
int tarn__kg_delete(struct tarn_meta *m, const char *id, int64_t version);
/* Deletes every committed offset of the group, guarded by the absence of its
 * record (TARN_EGUARD: the group was written meanwhile); *count: how many. */
int tarn__kg_delete_offsets(struct tarn_meta *m, const char *id, size_t *count);
/* Deletes one committed offset (none: 0), guarded by the group record's
 * version when version > 0, by its absence when 0 (TARN_EGUARD). */
int tarn__kg_delete_offset(struct tarn_meta *m, const char *id, int64_t version, const char *topic,
                           int32_t partition);
/* *any = 1 when the group has a committed offset. */
int tarn__kg_has_offsets(struct tarn_meta *m, const char *id, int *any);
/* The IDs and protocol types of every group record. */
int tarn__kg_scan_groups(struct tarn_meta *m, tarn__kglisted **out, size_t *n);
/* The IDs of every group with a committed offset (issue 37: a group of
 * plain commits has no record), each once; free each and the array. */
int tarn__kg_scan_offset_groups(struct tarn_meta *m, char ***out, size_t *n);

/* One committed-offset record as the expiry reads it (issue 37 "Lifecycle"). */
typedef struct tarn__kg_offrec {
  tarn__koffset o;   /* topic and metadata malloc'd; topic_id zeros: format 1 */
  char *key;         /* the record's key */
  int64_t commit_ms; /* wall clock of the commit; -1: unknown (format 1 kept a monotonic time) */
  int64_t version;   /* the record's version as read */
} tarn__kg_offrec;

/* The group's committed-offset records with their times and versions. */
int tarn__kg_scan_offrecs(struct tarn_meta *m, const char *group_id, tarn__kg_offrec **out,
                          size_t *n);
void tarn__kg_offrecs_free(tarn__kg_offrec *v, size_t n);
/* Deletes the offset record r by a Delete on the version read, guarded by
 * the group record's version when group_version > 0, by its absence when 0:
 * a commit that landed meanwhile (TARN_ECONFLICT, TARN_ENOTFOUND) or a group
 * written meanwhile (TARN_EGUARD) keeps it. */
int tarn__kg_expire_offset(struct tarn_meta *m, const char *group_id, int64_t group_version,
                           const tarn__kg_offrec *r);
/* Rewrites a format 1 record (no reliable commit time) as format 2 with
 * commit time now_ms, by a CompareAndSet on the version read. */
int tarn__kg_stamp_offset(struct tarn_meta *m, const tarn__kg_offrec *r, int64_t now_ms);

/* The coordinator's lock (cgroup.c runs under it): tarn__kg_unlock answers
 * whatever the locked calls queued, after releasing it. */
void tarn__kg_lock(tarn__kgroups *g);
void tarn__kg_unlock(tarn__kgroups *g);
/* Under the lock: the group as this node holds it (group.c find_group). */
int tarn__kg_find(tarn__kgroups *g, const char *id, int64_t now_ms, int create,
                  tarn__kg_group **out);
/* Under the lock: drops the group from memory (another node wrote it). */
void tarn__kg_drop(tarn__kgroups *g, tarn__kg_group *gr, int16_t error);
struct tarn_meta *tarn__kg_meta(tarn__kgroups *g);
const tarn__kgroups_options *tarn__kg_options(tarn__kgroups *g);
/* Whether a classic group has members (joined or joining). */
int tarn__kg_classic_busy(const tarn__kg_group *gr);
/* Under the lock (cgroup.c): OffsetCommit's check of a consumer group's
 * member: 0, UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH. */
int16_t tarn__kc_check_commit(tarn__kg_group *gr, const char *member_id, int32_t epoch,
                              int64_t now_ms);
/* Under the lock (cgroup.c): a consumer group's sessions and revocation
 * deadlines. */
void tarn__kc_tick(tarn__kgroups *g, tarn__kg_group *gr, int64_t now_ms);

#endif
