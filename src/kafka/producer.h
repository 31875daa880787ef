/* Idempotent producers (issue 13 §2 "InitProducerId"; docs/kafka.md "Groups
 * and producers"), independent of the wire.
 *
 * Producer IDs come from a counter in the metadata store (partition
 * TARN__KP_PARTITION, key "/next-id"), advanced by CompareAndSet, each with
 * epoch 0. Per (producer ID, log L) the last TARN__KP_KEEP batches appended
 * (first and last sequence, base offset) and the batches claimed and not yet
 * stored are kept in a record of P(L),
 * "/kafka-producer-state/{L}/{producer id:020d}": the store is the authority,
 * a node's copy only a cache (issue 31 item 3). A produce calls
 * tarn__kprod_check() before appending a batch (it claims the sequence by
 * CompareAndSet), appends with the condition tarn__kprod_guard() gives, and
 * once it is stored (A4) calls tarn__kprod_record() — or
 * tarn__kprod_abandon() when the append failed. Thread-safe. */
#ifndef TARN_KAFKA_PRODUCER_H
#define TARN_KAFKA_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#include "log/appender_impl.h"

struct tarn_meta;

#define TARN__KP_PARTITION "kafka-producers"
/* Kafka keeps the last five batches per producer and partition. */
#define TARN__KP_KEEP 5
/* Batches checked and not yet recorded, per producer and partition (the
 * clients allow at most 5 requests in flight with idempotence). */
#define TARN__KP_INFLIGHT 8

/* Kafka error codes of the producer checks. */
enum {
  TARN__KP_NONE = 0,
  TARN__KP_COORDINATOR_NOT_AVAILABLE = 15,
  TARN__KP_NOT_ENOUGH_REPLICAS = 19,
  TARN__KP_OUT_OF_ORDER_SEQUENCE = 45,
  TARN__KP_INVALID_PRODUCER_EPOCH = 47,
  TARN__KP_TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53,
  TARN__KP_UNKNOWN_PRODUCER_ID = 59
};

typedef struct tarn__kprod tarn__kprod;

/* m stays the caller's. */
int tarn__kprod_open(struct tarn_meta *m, tarn__kprod **out);
/* Closes p; after every append that carries its guards has finished. */
void tarn__kprod_close(tarn__kprod *p);

/* Looks in log key (the log ID in decimal) from offset from (-1: the log's
 * start) to its end for a batch of producer pid whose base sequence is
 * first_seq: 1 and its offset, 0 when none, or a negative tarn code. 0 is a
 * promise that the batch is not stored and never will be (nothing that
 * could still store it is in flight). ctx is the check's
 * (tarn__kprod_check_in). */
typedef int (*tarn__kprod_finder)(void *arg, void *ctx, const char *key, int64_t pid,
                                  int32_t first_seq, int64_t from, int64_t *offset);
/* How claims whose append's outcome nobody knows are settled (a node that
 * died between claim and record; a put of unknown outcome): without a
 * finder such a claim is answered NOT_ENOUGH_REPLICAS until it is. */
void tarn__kprod_set_finder(tarn__kprod *p, tarn__kprod_finder find, void *arg);
/* This node's nonce: the owner its claims name. */
uint64_t tarn__kprod_nonce(const tarn__kprod *p);
/* Issue 37 "Failover": whether the node whose claims name owner is alive:
 * 0 only when it surely is not (no live node has that nonce), else 1. */
typedef int (*tarn__kprod_owner_alive)(void *arg, uint64_t owner);
/* With it, another node's claim whose owner is not alive is settled at
 * once, not after the patience (10 s) a live owner's append in flight gets.
 * Liveness only: revoking a live claim fails its append, which the client
 * retries. */
void tarn__kprod_set_liveness(tarn__kprod *p, tarn__kprod_owner_alive alive, void *arg);

/* InitProducerId without a transactional ID: a new producer ID and epoch 0.
 * A transactional ID (non-NULL) is refused with
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED (the binding forbids transactional
 * batches). *error gets the Kafka error; the return is the tarn code (a
 * store failure gives COORDINATOR_NOT_AVAILABLE, which clients retry). */
int tarn__kprod_init(tarn__kprod *p, const char *transactional_id, int64_t *pid, int16_t *epoch,
                     int16_t *error);

typedef struct tarn__kprod_verdict {
  int16_t error; /* Kafka error; 0: append it, or answer it when dup */
  int dup;       /* a retry of a stored batch: answer success with base_offset */
  int64_t base_offset;
} tarn__kprod_verdict;

/* The sequence after s + inc, wrapping from 2^31-1 to 0 as Kafka does. */
int32_t tarn__kprod_seq_add(int32_t s, int32_t inc);

/* Checks a batch of count records from (pid, epoch) starting at base_seq for
 * the partition named key (its log ID in decimal).
 * pid < 0 is a batch without idempotence: always appended, nothing kept.
 * Verdicts: append (error 0, dup 0; the batch is then in flight until
 * record or abandon), duplicate (dup 1), OUT_OF_ORDER_SEQUENCE,
 * INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID (an ID never handed out, or
 * one without state here starting past sequence 0), NOT_ENOUGH_REPLICAS (a
 * retry of a batch still in flight, or too many in flight: retriable).
 * The verdict comes from the store's record: an append only once its claim
 * won the compare-and-set, any other answer only from a fresh read.
 * Returns the tarn code of reading the state from the store (v is then not
 * set: the caller answers the batch with a storage error). */
int tarn__kprod_check(tarn__kprod *p, const char *key, int64_t pid, int16_t epoch, int32_t base_seq,
                      int32_t count, tarn__kprod_verdict *v);
/* The same, with ctx handed to the finder if a claim must be settled (the
 * Kafka node: the express writer that leads the log, or NULL). */
int tarn__kprod_check_in(tarn__kprod *p, void *ctx, const char *key, int64_t pid, int16_t epoch,
                         int32_t base_seq, int32_t count, tarn__kprod_verdict *v);
/* The checked batch is stored at base_offset (A4 done): it joins the last
 * TARN__KP_KEEP and the state is written to the store. */
int tarn__kprod_record(tarn__kprod *p, const char *key, int64_t pid, int16_t epoch,
                       int32_t base_seq, int32_t count, int64_t base_offset);
/* The checked batch was not stored (unknown 0: its claim is withdrawn), or
 * its outcome is unknown (1: the claim stays, and the next check settles it:
 * revokes it, then looks for the batch in the log). */
void tarn__kprod_abandon(tarn__kprod *p, const char *key, int64_t pid, int32_t base_seq,
                         int unknown);
/* The condition the checked batch's append carries (log/appender_impl.h):
 * the producer's record in P(L) still at the version this node last wrote,
 * so that a claim another node revoked cannot land — met with the index put
 * by a standard writer (hold, release), compared just before the append by
 * an express writer (check: tarn__kprod_claim_current's compare). g->domain
 * NULL: none (pid < 0). */
int tarn__kprod_guard(tarn__kprod *p, const char *key, int64_t pid, tarn__append_guard *g);
/* The same compare for an append without an index put of its own (an
 * express topic's, issue 31 item 4: its slot PUT is an object-store create,
 * its index put a later absorb): the producer's record, read now, is still at
 * the version this node last wrote (its claim not revoked by another node).
 * TARN_EGUARD when it moved (nothing may be appended); 0 for pid < 0. Not
 * atomic with the append: see docs/kafka.md "Limits". */
int tarn__kprod_claim_current(tarn__kprod *p, const char *key, int64_t pid);
/* producer.id.expiration.ms (issue 37 "Lifecycle"): removes the state
 * records of log log_id whose last write is at least expiration_ms old
 * (tarn__now_ms), each by a Delete on the version read, so that a producer
 * that wrote meanwhile keeps its state; a record without a write time
 * (format 1 or 2) is stamped now instead. *removed gets the count. The next
 * batch of a producer whose state went is judged as one without state here
 * (tarn__kprod_check: sequence 0 starts afresh, any other is
 * UNKNOWN_PRODUCER_ID). */
int tarn__kprod_expire(tarn__kprod *p, uint64_t log_id, int64_t expiration_ms, size_t *removed);
/* The same for one record r of log log_id as the sweep read it (the tests
 * put a write between the read and this). */
struct tarn_meta_rec;
int tarn__kprod_expire_rec(tarn__kprod *p, uint64_t log_id, const struct tarn_meta_rec *r,
                           int64_t expiration_ms, size_t *removed);
/* DescribeProducers (issue 37): the producers with state on log log_id,
 * in producer ID order, from the store (the authority). */
typedef struct tarn__kprod_desc {
  int64_t pid;
  int16_t epoch;
  int32_t last_sequence;  /* of the last batch appended; -1: none */
  int64_t last_timestamp; /* wall clock of the last write; -1: unknown (format 1 or 2) */
} tarn__kprod_desc;
int tarn__kprod_describe(tarn__kprod *p, uint64_t log_id, tarn__kprod_desc **out, size_t *n);
/* Decodes a producer state record's value, as a node reads it from the
 * store: 0, or an error naming the structure, the byte offset and the fault
 * (for fuzz/fuzz_kafka_producer_state.c and the tests). With again non-NULL,
 * a format 2 value is encoded again into it (a format 1 one leaves it
 * empty). */
struct tarn_buf;
int tarn__kprod_state_decode(const uint8_t *v, size_t len, struct tarn_buf *again);

#endif
