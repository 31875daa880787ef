/* tarn — the mem: object store's controls, for tests and simulation.
 *
 * Faults and latency belong to the named store, so they act on every handle
 * that opened the same mem:NAME. Calls to these functions on a handle of
 * another backend return TARN_EINVAL. */
#ifndef TARN_OBJSTORE_MEM_H
#define TARN_OBJSTORE_MEM_H

#include <stdint.h>

#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The operations a fault or a latency can target. A streaming put counts as
 * one PUT, at its commit. */
enum {
  TARN_MEM_OP_ANY = 0,
  TARN_MEM_OP_PUT = 1,
  TARN_MEM_OP_GET = 2,
  TARN_MEM_OP_HEAD = 3,
  TARN_MEM_OP_DELETE = 4,
  TARN_MEM_OP_LIST = 5,
  TARN_MEM_OP_COUNT = 6
};

/* When an injected fault strikes. */
enum {
  TARN_MEM_FAULT_BEFORE = 0, /* return the code without applying the operation */
  TARN_MEM_FAULT_AFTER = 1,  /* apply the operation, then return the code (a lost reply) */
  /* GET only, code 0: the read "succeeds" with damaged bytes. */
  TARN_MEM_FAULT_TRUNCATE = 2, /* only the first half of the bytes arrive (a body cut short) */
  TARN_MEM_FAULT_CORRUPT = 3,  /* the object's first byte arrives inverted (a damaged header) */
  /* PUT only: the caller gets the code (e.g. TARN_ETIMEDOUT) but the request
   * stays in flight, to land later (tarn_objstore_mem_land) or never */
  TARN_MEM_FAULT_HOLD = 4
};

/* Arms a fault: the nth (1 = the next) call of op from now, and the count-1
 * calls after it, fail with code (a negative TARN_E*, e.g. TARN_ETIMEDOUT before,
 * TARN_EUNKNOWN after; TARN_EUNAVAIL for a throttling burst, S3's 503 SlowDown
 * after the client's retries). TRUNCATE and CORRUPT take op TARN_MEM_OP_GET and
 * code 0. Up to 16 faults may be armed at once. */
int tarn_objstore_mem_fault(tarn_objstore *s, int op, uint64_t nth, uint64_t count, int when,
                            int code);
/* Adds usec microseconds of sleep to every call of op (TARN_MEM_OP_ANY: all). */
int tarn_objstore_mem_latency(tarn_objstore *s, int op, uint32_t usec);
/* Disarms every fault and removes all latency. */
int tarn_objstore_mem_reset_faults(tarn_objstore *s);
/* How many calls of op the store has seen (TARN_MEM_OP_ANY: all operations). */
uint64_t tarn_objstore_mem_calls(tarn_objstore *s, int op);
/* Calls fn(arg, op, name) at the start of every call on the named store,
 * unlocked, before faults strike (NULL removes it): the simulator interleaves
 * other actors' steps between two calls of one actor there. */
int tarn_objstore_mem_hook(tarn_objstore *s, void (*fn)(void *arg, int op, const char *name),
                           void *arg);
/* PUTs held in flight (TARN_MEM_FAULT_HOLD). */
size_t tarn_objstore_mem_held(tarn_objstore *s);
/* Lands the oldest held PUT (create-only, judged now): 1 when it landed, 0
 * when none was held, TARN_EEXIST when the key was taken meanwhile (the
 * request is gone); with drop, it is discarded instead (never lands: 1). */
int tarn_objstore_mem_land(tarn_objstore *s, int drop);
/* Forgets the named store's objects; later opens of mem:NAME start empty.
 * Handles still open keep the old store until they close. */
void tarn_objstore_mem_drop(const char *name);

#ifdef __cplusplus
}
#endif
#endif
