/* tarn — the catalog (spec "Catalog semantics", "Fences and log deletion").
 *
 * A stream, named by (namespace, name), has N >= 1 partitions, each a log.
 * The catalog's records are JSON (tarn/catalog_record.h, docs/catalog.md) in
 * the metadata-store partition TARN_CATALOG_PARTITION, under '/' keys, so no
 * catalog record ever sits under a "{log_id:020d}-" key (LS-005):
 *
 *   /catalog/deployment            written by tarn_catalog_init
 *   /catalog/log-id-counter        the next unused log ID (CompareAndSet)
 *   /catalog/streams/{ns}/{name}   a stream: layout and properties
 *   /catalog/tombstones/{ns}/{name} a dropped identity
 *   /catalog/logs/{L}              log -> (namespace, name, partition)
 *
 * The records the spec defines for a log (fence, trim marker, leases, index
 * records) stay in P(L) (LS-004). */
#ifndef TARN_CATALOG_H
#define TARN_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/catalog_record.h"
#include "tarn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_CATALOG_PARTITION "catalog"
/* Defaults of the lease drain when a log is deleted (spec Appendix E). */
#define TARN_DRAIN_TIMEOUT_MS 30000
#define TARN_DRAIN_POLL_MS 25

typedef struct tarn_catalog_options {
  int drain_timeout_ms; /* how long deleting a log waits for leases; 0: default */
  int drain_poll_ms;    /* how often it lists them; 0: default */
} tarn_catalog_options;

/* ---- deleting a log (LS-044 ... LS-047, LS-092) -------------------------- */

/* Deletes log L: fences it (CreateIfAbsent; an existing fence is success),
 * lists its lease records until none remains, then removes every index record
 * with DeleteRange(P(L), K(L,0,0), K(L,MAX,MAX)). If leases remain at the
 * deadline, changes nothing more (the fence stays) and returns TARN_EBUSY
 * ("... write leases still held ..."). Deleting an absent or deleted log
 * succeeds. opt may be NULL. *removed (may be NULL) gets the number of index
 * records removed. The fence is never deleted or changed (LS-045). */
int tarn_log_delete(tarn_meta *m, uint64_t log_id, const tarn_catalog_options *opt,
                    size_t *removed);

/* ---- the catalog --------------------------------------------------------- */

typedef struct tarn_catalog tarn_catalog;

/* Opens a catalog on a metadata store. Reads nothing, writes nothing. opt may
 * be NULL. The catalog does not own m. */
int tarn_catalog_open(tarn_meta *m, const tarn_catalog_options *opt, tarn_catalog **out);
void tarn_catalog_close(tarn_catalog *c);

/* Writes the deployment record if absent (what `tarn init` does). *created
 * (may be NULL) is 1 when this call wrote it. */
int tarn_catalog_init(tarn_catalog *c, int *created);
/* 0 when the deployment record exists, TARN_ENOTFOUND when it does not. */
int tarn_catalog_check(tarn_catalog *c);

/* Allocates n fresh log IDs, first .. first+n-1, never handed out before
 * (LS-087): a counter record advanced with CompareAndSet, retried on conflict. */
int tarn_catalog_alloc_logs(tarn_catalog *c, uint32_t n, uint64_t *first);

/* Creates stream (ns, name) with n_partitions new logs and the properties.
 * TARN_EEXIST when a stream of that identity lives, or when the identity was
 * dropped (LS-089; the message says which). out (may be NULL) gets the stream
 * record. */
int tarn_catalog_create_stream(tarn_catalog *c, const char *ns, const char *name,
                               uint32_t n_partitions, const tarn_stream_prop *props, size_t n_props,
                               tarn_catalog_record *out);

/* Reads stream (ns, name): no side effects (LS-088). TARN_ENOTFOUND when it
 * does not exist (a stream being dropped is returned, state DROPPING). */
int tarn_catalog_open_stream(tarn_catalog *c, const char *ns, const char *name,
                             tarn_catalog_record *out);

/* The log of partition `partition` of stream (ns, name), into *log_id; one
 * Get. With tarn_stream_ident_parse it resolves a command line's "NS/NAME
 * --partition P". TARN_ENOTFOUND when the stream does not exist or is being
 * dropped (LS-087: its logs are being deleted), TARN_ERANGE when the stream
 * has no such partition, TARN_EINVAL when (ns, name) is not a valid identity;
 * the message says which. *log_id is set only on success. */
int tarn_catalog_partition_log(tarn_catalog *c, const char *ns, const char *name,
                               uint32_t partition, uint64_t *log_id);

/* Every stream, in key order (namespace, then name). Free with
 * tarn_catalog_records_free. */
int tarn_catalog_list_streams(tarn_catalog *c, tarn_catalog_record **out, size_t *n);
void tarn_catalog_records_free(tarn_catalog_record *v, size_t n);
/* The streams of namespace ns whose names start with prefix (may be ""), in
 * name order; one Scan. Free with tarn_catalog_records_free. */
int tarn_catalog_list_streams_prefix(tarn_catalog *c, const char *ns, const char *prefix,
                                     tarn_catalog_record **out, size_t *n);

/* Adds count partitions: creates the new logs first, then publishes the new
 * layout with one CompareAndSet of the stream record, retried on conflict
 * (LS-091). out (may be NULL) gets the new stream record. */
int tarn_catalog_add_partitions(tarn_catalog *c, const char *ns, const char *name, uint32_t count,
                                tarn_catalog_record *out);

/* Grows (ns, name) to total partitions, as tarn_catalog_add_partitions
 * adds them, unless the stream has total or more: TARN_EINVAL, also when
 * another grew it between the read and the CompareAndSet (Kafka's
 * CreatePartitions takes a total: two at once must not both add). */
int tarn_catalog_grow_partitions(tarn_catalog *c, const char *ns, const char *name, uint32_t total,
                                 tarn_catalog_record *out);

/* Changes the properties of stream (ns, name) (issue 37: a topic's configs
 * altered): edit(arg, r) gets the stream record as read and replaces
 * r->props / r->n_props (a malloc'd array of malloc'd strings; the old one is
 * its to free), or fails, and then its error is returned and nothing is
 * written. One CompareAndSet of the stream record publishes the edit; on a
 * conflict (another change since the read), or an outcome unknown, the record
 * is read again and edited again, so no concurrent change is lost: edit must
 * be a function of the record it gets, and idempotent. TARN_ENOTFOUND when
 * the stream does not exist or is being dropped. out (may be NULL) gets the
 * record written. */
typedef int (*tarn_catalog_props_edit)(void *arg, tarn_catalog_record *r);
int tarn_catalog_edit_props(tarn_catalog *c, const char *ns, const char *name,
                            tarn_catalog_props_edit edit, void *arg, tarn_catalog_record *out);

/* Drops (ns, name): records its tombstone (even when no stream lives, LS-090),
 * marks the stream DROPPING, deletes each of its logs with tarn_log_delete,
 * then removes the stream record. TARN_EBUSY (from tarn_log_delete) leaves
 * the stream DROPPING; calling again resumes. *existed (may be NULL) is 1 when
 * a stream was there. */
int tarn_catalog_drop_stream(tarn_catalog *c, const char *ns, const char *name, int *existed);

/* 1 when (ns, name) has been dropped, 0 when not; or a negative error. */
int tarn_catalog_is_dropped(tarn_catalog *c, const char *ns, const char *name);

/* The stream and partition log L belongs to (a reader of compacted objects
 * needs the identity). out gets a LOG record. TARN_ENOTFOUND if the catalog
 * never created L, or L's stream has been dropped. */
int tarn_catalog_log_stream(tarn_catalog *c, uint64_t log_id, tarn_catalog_record *out);

#ifdef __cplusplus
}
#endif
#endif
