/* What group.c (the state machine) and group_store.c (the group's records in
 * the metadata store) share. */
#ifndef TARN_KAFKA_GROUP_INTERNAL_H
#define TARN_KAFKA_GROUP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/group.h"

struct tarn_meta;

enum { KG_EMPTY, KG_PREPARING, KG_COMPLETING, KG_STABLE };

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
  struct tarn__kg_group *next;
} tarn__kg_group;

void tarn__kg_member_free(tarn__kg_member *m);
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

#endif
