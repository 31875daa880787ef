/* tarn — write leases (spec "Write leases and fences"; LS-040 … LS-043).
 *
 * A writer or compactor holds a lease on log L while it publishes index
 * records, writes the trim marker, runs C3–C4 or hard-trims L. The lease is an
 * ephemeral record /stream-write-leases/{L}/{token} in P(L), created before the
 * fence is read; a fenced log gets no lease. */
#ifndef TARN_LEASE_H
#define TARN_LEASE_H

#include <stdint.h>

#include "tarn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_lease tarn_lease;

/* Acquires a lease on log_id: CreateIfAbsent of an ephemeral lease record under
 * a fresh random token, then Get of the fence. TARN_EFENCED when the fence
 * exists; any other failure of the Get is returned as is. In both cases the
 * lease record is deleted first and no lease is held (LS-040, LS-041); so is
 * a record whose create failed, in case it landed with its reply lost. */
int tarn_lease_acquire(tarn_meta *m, uint64_t log_id, tarn_lease **out);

/* 0 while the lease may still be used: its session has not been seen to end
 * (LS-048, LS-049), nor been replaced by tarn_meta_session_renew().
 * TARN_ESESSION once it has; the holder must stop changing the log. */
int tarn_lease_check(tarn_lease *l);

/* The conditions every change of the lease's log is committed under (docs/
 * log.md, "Guarded changes"): the lease record still exists (with the
 * version its create returned), and the log has no fence. Fills g (whose
 * keys point into the lease, valid while it is held) and returns the count.
 * With them, once a deletion has drained L's leases no holder can change L:
 * a change whose guard failed reports TARN_EGUARD and did nothing. */
#define TARN_LEASE_GUARDS 2
size_t tarn_lease_guards(const tarn_lease *l, tarn_meta_guard g[TARN_LEASE_GUARDS]);

uint64_t tarn_lease_log(const tarn_lease *l);
const char *tarn_lease_token(const tarn_lease *l);

/* Releases the lease by deleting its record (only the version its create
 * returned) and frees it. The caller must have
 * seen every change it started under the lease complete (LS-043). A record
 * already gone (session ended) counts as released; a failed Delete is
 * retried, since a record left behind would hold up the log's deletion until
 * the session ends. NULL is allowed. */
int tarn_lease_release(tarn_lease *l);

/* Frees the lease without touching the store: for a holder whose metadata
 * handle is already closed (its session, and so its record, is gone). */
void tarn_lease_forget(tarn_lease *l);

#ifdef __cplusplus
}
#endif
#endif
