/* What the consumer-group and producer handlers (api_find_coordinator.c,
 * api_join_group.c, ... api_init_producer_id.c) share: strings between the
 * wire and C, the group's coordinator among the live nodes, the clock. */
#ifndef TARN_KAFKA_API_GROUP_H
#define TARN_KAFKA_API_GROUP_H

#include <stdint.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/registry.h"

/* A NUL-terminated copy of s in req's arena: "" for a null string, NULL when
 * the arena is spent or s holds a NUL (no group or member has that name). */
char *tarn__kg_cstr(tarn__kreq *req, tarn__kstr s);
/* A group instance ID (KIP-345) from a nullable wire string: 0 with *out
 * NULL for null (a dynamic member) or the arena's copy; -1 when it holds a
 * NUL or the arena is spent. */
int tarn__kg_instance(tarn__kreq *req, tarn__kstr s, const char **out);
/* s as a wire string (NULL: null). */
tarn__kstr tarn__kg_kstr(const char *s);
/* Which node coordinates group_id: 1 when it is this node, 0 when it is
 * another (*out, may be NULL, gets it), or a negative TARN_E*. A group this
 * node no longer coordinates is dropped from its memory. */
int tarn__kg_coordinator(tarn__knode *node, const char *group_id, tarn__knode_info *out);
/* The Kafka error before a group request is served: COORDINATOR_NOT_AVAILABLE
 * (no group state, or the registry cannot be read), NOT_COORDINATOR, or 0. */
int16_t tarn__kg_check(tarn__knode *node, const char *group_id);
/* The clock of the group state machines (monotonic ms). */
int64_t tarn__kg_now(void);

#endif
