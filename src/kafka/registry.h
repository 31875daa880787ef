/* The live nodes of a deployment serving Kafka (issue 13 §2 "Several nodes";
 * docs/kafka.md).
 *
 * Each node holds one ephemeral record in the metadata store's partition
 * TARN__KREG_PARTITION, key "/nodes/{node_id:010d}", value JSON
 * {"node_id":N,"host":"...","port":P}. It lives as long as the node's session,
 * and the node writes it again every TARN__KREG_BEAT_MS (issue 37
 * "Failover"): a record whose version has not changed for 3 s is a dead
 * node's, out of the list at once, though the record stays until the
 * session expires (15 s by default). A node that stops cleanly deletes its
 * record. Partition
 * leaders and group coordinators are picked deterministically over the live
 * nodes sorted by ID: every node that sees the same list picks the same node. */
#ifndef TARN_KAFKA_REGISTRY_H
#define TARN_KAFKA_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

struct tarn_meta;

#define TARN__KREG_PARTITION "kafka"
/* Node IDs a node may take (-1 asks for the first free one). */
#define TARN__KREG_MAX_NODE_ID 999999
/* How often a node rewrites its record (the registry job's interval). */
#define TARN__KREG_BEAT_MS 500

typedef struct tarn__knode_info {
  int32_t node_id;
  char host[256];
  int port;
  uint64_t claims; /* the nonce its idempotent producers' claims name (0: not said) */
} tarn__knode_info;

typedef struct tarn__kregistry tarn__kregistry;

/* Registers this node: node_id >= 0 takes that ID (TARN_EEXIST when a live
 * node holds it), -1 the lowest free one. claims (0: none) is the nonce its
 * producer claims name (tarn__kprod_nonce), in the record as "claims" (16
 * hex digits) so that other nodes know whose claims are a dead node's. The
 * registry does not own m. */
int tarn__kregistry_open(struct tarn_meta *m, int32_t node_id, const char *host, int port,
                         uint64_t claims, tarn__kregistry **out);
/* Removes this node's record and frees. */
void tarn__kregistry_close(tarn__kregistry *r);
/* This node. */
const tarn__knode_info *tarn__kregistry_self(const tarn__kregistry *r);
/* One beat: writes this node's record again (a new version: it is alive),
 * creating it when it is missing (the session was lost and renewed: its
 * ephemeral records went with the old one); then reads the live list. */
int tarn__kregistry_refresh(tarn__kregistry *r);

/* The live nodes sorted by node ID (malloc'd; free()): the records whose
 * version changed within the last 3 s as this node saw them. Read from the
 * store at most once per second and at every beat; this node is always in
 * the list (it serves the request that asked). */
int tarn__kregistry_live(tarn__kregistry *r, tarn__knode_info **out, size_t *n);

/* Issue 37 "Failover": 0 when no live node's record names claims as its
 * nonce (the node that claimed is dead), 1 when one does or it cannot be
 * told (a live record without a nonce, the list unreadable). */
int tarn__kregistry_owner_alive(tarn__kregistry *r, uint64_t claims);

/* The index in live[0..n) of the node a key maps to: FNV-1a of the key
 * modulo n (n >= 1). Partition leaders use the key (topic ID, partition);
 * group coordinators the group ID. */
size_t tarn__kregistry_pick(size_t n, const void *key, size_t len);
/* The index in live[0..n) (n >= 1) of the leader of a topic's partition:
 * rendezvous hashing of (topic ID, partition) over the node IDs (the node
 * whose FNV-1a of (key, node ID) is highest), so that a node leaving moves
 * only the partitions it led and a node joining takes only the ones it wins
 * (issue 15: express logs change leader only when their own leader goes). */
size_t tarn__kregistry_leader(const tarn__knode_info *live, size_t n, const uint8_t topic_id[16],
                              uint32_t partition);
/* The node for a key among the live nodes (one call of tarn__kregistry_live). */
int tarn__kregistry_pick_node(tarn__kregistry *r, const void *key, size_t len,
                              tarn__knode_info *out);

#endif
