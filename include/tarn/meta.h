/* tarn — the metadata store: the spec's "Metadata store model".
 *
 * A linearizable key-value store divided into partitions (strings). Keys are
 * UTF-8 strings without NUL; values are byte strings. Every record has a
 * version (int64, changes on every write) and a creation timestamp (ms since
 * the Unix epoch, set when the record is created and KEPT when its value is
 * replaced). Keys are ordered by tarn_meta_key_compare() (Oxia's slash-aware
 * order), which satisfies the spec's "Key order" property.
 *
 * A handle is opened from a URI whose scheme picks the backend:
 *   sqlite:PATH[?opts]               embedded, durable, shared by processes
 *   mem:[NAME][?opts]                in-process; mem:NAME shares one store
 *   etcd://HOST:PORT[,HOST:PORT...][?opts]   etcd v3 through its JSON gateway
 * Options: session_timeout_ms=N (default 15000). See docs/meta.md.
 *
 * Each handle holds one session with the store. Ephemeral records live until
 * that session ends: tarn_meta_close(), or expiry when the handle stops
 * heartbeating for session_timeout_ms (e.g. its process died).
 *
 * Every primitive acts atomically on one partition, and the operations on a
 * partition are linearizable. Lookups only ever return records of the
 * partition they name (a stricter form of what the spec allows), so a caller
 * must still check the prefix of a key it gets back.
 *
 * Thread safety: a handle may be shared by several threads; every function
 * below may be called concurrently on the same handle, except that
 * tarn_meta_close() must not race with other calls on that handle. */
#ifndef TARN_META_H
#define TARN_META_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- key order ----------------------------------------------------------- */

/* Oxia's compare_with_slash: <0, 0 or >0. Keys without '/' compare bytewise
 * and sort before every key with '/'; keys with '/' compare segment by
 * segment, a key whose remainder has no further '/' sorting first. */
int tarn_meta_key_compare(const char *a, const char *b);

/* An order-preserving byte encoding: memcmp order of the encodings (shorter
 * first on a common prefix) equals tarn_meta_key_compare order. Each segment
 * but the last becomes 0x02 segment 0x00, the last becomes 0x01 segment.
 * Writes strlen(key) + 1 + (number of '/') bytes to out (NULL: only
 * measures) and returns that length. */
size_t tarn_meta_key_encode(const char *key, uint8_t *out);
/* The inverse: decodes n bytes into out (at least n bytes of room; NUL-
 * terminated). TARN_ECORRUPT on bytes no key encodes to. */
int tarn_meta_key_decode(const uint8_t *enc, size_t n, char *out);

/* ---- records ------------------------------------------------------------- */

typedef struct tarn_meta tarn_meta;

typedef struct tarn_meta_stat {
  int64_t version;    /* changes on every write of the record */
  int64_t created_ms; /* creation timestamp, ms since the Unix epoch */
} tarn_meta_stat;

typedef struct tarn_meta_rec {
  char *key;      /* malloc'd */
  uint8_t *value; /* malloc'd (NULL for key-only results); value_len bytes */
  size_t value_len;
  tarn_meta_stat stat;
} tarn_meta_rec;

typedef struct tarn_meta_recs {
  tarn_meta_rec *v;
  size_t n;
  int more; /* 1 when the limit cut the result short */
} tarn_meta_recs;

/* Frees what a record or a result array holds (not the struct itself). */
void tarn_meta_rec_free(tarn_meta_rec *r);
void tarn_meta_recs_free(tarn_meta_recs *r);

/* ---- handles and sessions ------------------------------------------------ */

/* Opens a handle (and its session). TARN_EINVAL on a bad URI,
 * TARN_EUNSUPPORTED on an unknown scheme, TARN_EUNAVAIL if unreachable. */
int tarn_meta_open(const char *uri, tarn_meta **out);
/* Ends the session (its ephemeral records are removed) and frees the handle.
 * NULL is allowed. */
int tarn_meta_close(tarn_meta *m);
/* "sqlite", "mem" or "etcd". */
const char *tarn_meta_backend(const tarn_meta *m);
/* The session timeout in ms in effect. */
int64_t tarn_meta_session_timeout_ms(const tarn_meta *m);
/* 0 while the session lives; TARN_ESESSION once the handle has learned that
 * its session ended (expired, or ended by fault injection). A writer holding
 * an ephemeral write lease checks it before relying on the lease. */
int tarn_meta_session_ok(tarn_meta *m);
/* The number of the handle's current session: 1 for the first, +1 for each
 * tarn_meta_session_renew(). A lease remembers the session it was created
 * in and is lost when the number changes. */
uint64_t tarn_meta_session_gen(tarn_meta *m);
/* Opens a new session for a handle whose session ended (0 and no effect
 * while it lives): what was bound to the old session stays gone, and new
 * ephemeral records belong to the new one. A long-running process (tarn
 * serve) calls it to carry on after losing its session. */
int tarn_meta_session_renew(tarn_meta *m);
/* Calls fn(arg) once, from a background thread or the caller's thread, when
 * the handle learns that its session ended. Replaces an earlier callback. */
void tarn_meta_on_session_end(tarn_meta *m, void (*fn)(void *arg), void *arg);

/* ---- primitives (spec "Metadata store model"; tables-and-vectors §3.3) ---- */

/* Get(P, k): the record, or TARN_ENOTFOUND. */
int tarn_meta_get(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out);

/* Put(P, k, v): creates or replaces without condition. st may be NULL. */
int tarn_meta_put(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                  tarn_meta_stat *st);

enum { TARN_META_PERSISTENT = 0, TARN_META_EPHEMERAL = 1 };
/* CreateIfAbsent(P, k, v [, ephemeral]): TARN_EEXIST if k exists. An
 * ephemeral record belongs to this handle's session (TARN_ESESSION if the
 * session has ended). */
int tarn_meta_create(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                     int flags, tarn_meta_stat *st);

/* CompareAndSet(P, k, v, ver): replaces only if the version is ver.
 * TARN_ECONFLICT on another version, TARN_ENOTFOUND if k is absent. The
 * record stays persistent or ephemeral as it was. */
int tarn_meta_cas(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                  int64_t version, tarn_meta_stat *st);

/* Delete(P, k): TARN_ENOTFOUND if k is absent (callers wanting idempotence
 * treat that as success). */
int tarn_meta_delete(tarn_meta *m, const char *part, const char *key);

/* DeleteRange(P, a, b): removes every key in [a, b); deleting nothing is not
 * an error. *count (may be NULL) gets the number removed. */
int tarn_meta_delete_range(tarn_meta *m, const char *part, const char *a, const char *b,
                           size_t *count);

/* SequencedPut(P, prefix, d1, d2, v), as Oxia does it (tables-and-vectors §5):
 * the last key is the greatest key < prefix-18446744073709551615, taken only
 * if it starts with prefix; its two numbers x, y (0, 0 if none) give the new
 * key prefix-{x+d1:020d}-{y+d2:020d}. One atomic step, no condition
 * (tarn_meta_sequenced_put_if adds guards).
 * d1 == 0: TARN_EINVAL. A number past 2^63-1: TARN_ERANGE. A last key with
 * more than two parts or non-digit parts: TARN_ECORRUPT. out gets the key
 * and the stat (value NULL). */
int tarn_meta_sequenced_put(tarn_meta *m, const char *part, const char *prefix, uint64_t d1,
                            uint64_t d2, const void *val, size_t len, tarn_meta_rec *out);

/* Ordered lookups: the record with the greatest key <= k (floor), < k
 * (lower), smallest >= k (ceiling), > k (higher); TARN_ENOTFOUND if none. */
int tarn_meta_floor(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out);
int tarn_meta_lower(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out);
int tarn_meta_ceiling(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out);
int tarn_meta_higher(tarn_meta *m, const char *part, const char *key, tarn_meta_rec *out);

/* List(P, a, b) keys and Scan(P, a, b) records in [a, b), in key order, at
 * most limit (0: no limit; out->more says if cut short). For the next page,
 * call again with a = the last key and TARN_META_AFTER (a exclusive). */
enum { TARN_META_AFTER = 1 };
int tarn_meta_list(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                   size_t limit, tarn_meta_recs *out);
int tarn_meta_scan(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                   size_t limit, tarn_meta_recs *out);

/* ---- guarded writes ------------------------------------------------------ */

/* A condition of a guarded write, evaluated in the same atomic step as the
 * write: the write takes effect only if every condition holds, otherwise
 * nothing is written and the call fails with TARN_EGUARD (its message names
 * the first failing condition). Conditions name keys of the write's own
 * partition, so the step stays atomic on one partition. tarn uses them to
 * make a log's changes conditional on the writer's lease record and on the
 * log's fence (docs/log.md, "Guarded changes"). */
/* TARN_META_GUARD_LAST is for tarn_meta_sequenced_put_if only (TARN_EINVAL
 * elsewhere): the last key the put finds (the one its new key is computed
 * from) is exactly key, "" meaning none with the prefix. So a sequenced put
 * lands at the one key its caller expects or writes nothing: a positional
 * put (express absorb, issue 30). */
enum { TARN_META_GUARD_EXISTS = 1, TARN_META_GUARD_ABSENT = 2, TARN_META_GUARD_LAST = 3 };
#define TARN_META_ANY_VERSION (-1)
typedef struct tarn_meta_guard {
  int kind; /* TARN_META_GUARD_EXISTS, _ABSENT or _LAST */
  const char *key;
  int64_t version; /* EXISTS: the version it must have, or TARN_META_ANY_VERSION */
} tarn_meta_guard;
/* At most this many conditions per write. */
#define TARN_META_GUARDS_MAX 8

/* Put, CreateIfAbsent, CompareAndSet, DeleteRange and SequencedPut with
 * conditions (n may be 0). The conditions are checked first: TARN_EGUARD
 * takes precedence over the primitive's own answers (TARN_EEXIST,
 * TARN_ECONFLICT, TARN_ENOTFOUND). An empty range deletes nothing and is no
 * error, whatever the conditions. */
int tarn_meta_put_if(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                     const tarn_meta_guard *g, size_t n, tarn_meta_stat *st);
int tarn_meta_create_if(tarn_meta *m, const char *part, const char *key, const void *val,
                        size_t len, int flags, const tarn_meta_guard *g, size_t n,
                        tarn_meta_stat *st);
int tarn_meta_cas_if(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                     int64_t version, const tarn_meta_guard *g, size_t n, tarn_meta_stat *st);
int tarn_meta_delete_range_if(tarn_meta *m, const char *part, const char *a, const char *b,
                              const tarn_meta_guard *g, size_t n, size_t *count);
int tarn_meta_sequenced_put_if(tarn_meta *m, const char *part, const char *prefix, uint64_t d1,
                               uint64_t d2, const void *val, size_t len, const tarn_meta_guard *g,
                               size_t n, tarn_meta_rec *out);
/* Delete(P, k) of one version, with conditions: version is the version k
 * must have (TARN_ECONFLICT if it has another; TARN_META_ANY_VERSION: any),
 * TARN_ENOTFOUND if k is absent. Every release of a lock or lease uses the
 * version its acquisition returned, so it can never delete a newer holder's
 * record. */
int tarn_meta_delete_if(tarn_meta *m, const char *part, const char *key, int64_t version,
                        const tarn_meta_guard *g, size_t n);

/* ---- change notification ------------------------------------------------- */

/* A store-wide change token: every write after it has a version > token. */
int tarn_meta_change_token(tarn_meta *m, int64_t *token);
/* Waits until a record in [a, b) of part is created or written with a
 * version > since, or timeout_ms passes (TARN_ETIMEDOUT). Returns 0 early
 * also on changes it cannot tell apart (deletions on etcd), so the caller
 * re-reads and takes a new token. */
int tarn_meta_wait_for_change(tarn_meta *m, const char *part, const char *a, const char *b,
                              int64_t since, int timeout_ms);
/* One key range [a, b) of partition part. */
typedef struct tarn_meta_range {
  const char *part, *a, *b;
} tarn_meta_range;
#define TARN_META_WAIT_RANGES_MAX 1024
/* The same over n ranges (1..TARN_META_WAIT_RANGES_MAX, any partitions):
 * returns once a record in any of them is created or written with a
 * version > since, or timeout_ms passes (TARN_ETIMEDOUT). One wait for
 * several logs (a Kafka Fetch of several partitions) instead of a poll of
 * each in turn. Early returns as above; etcd watches the one span from the
 * lowest range start to the highest range end, so a write between the
 * ranges also ends the wait. */
int tarn_meta_wait_for_any_change(tarn_meta *m, const tarn_meta_range *r, size_t n, int64_t since,
                                  int timeout_ms);

/* ---- the store's clock --------------------------------------------------- */

/* ms on a clock the store keeps, the same for every handle on the store
 * whatever the clocks of the processes holding them: elapsed times measured
 * by it cannot be shortened by one node's clock running ahead. Backends:
 * mem: and sqlite: (one process, one host) the host's wall clock; etcd: the
 * age of one long lease of the cluster, in whole seconds, counted by the
 * leader (TTL granted - TTL left; docs/meta-etcd.md). It may step BACK (etcd
 * restarts a lease's countdown on a leader change): a caller measuring an
 * age must treat a reading below its start as a new start. */
int tarn_meta_clock(tarn_meta *m, int64_t *ms);
/* The clock's tick: two readings D ms apart may stand for as little as
 * D - tick of real time (etcd: 1000, whole seconds on both readings; 0 for a
 * clock read in ms). An age that must have passed (a grace) is compared as
 * age >= grace + tick. */
int64_t tarn_meta_clock_tick_ms(const tarn_meta *m);

#ifdef __cplusplus
}
#endif
#endif
