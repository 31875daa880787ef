/* tarn — test and simulation hooks. NOT PART OF THE STABLE API.
 *
 * What is here exists so that tests (tests/unit), the simulator (tests/sim),
 * the fuzzers and the benchmarks can break and drive the library: fault
 * injection into the mem: metadata store, the mem: object store and its
 * fault, latency, hold and call hooks, and the stepped (thread-free) mode of
 * the writer and the express writer. It may change or go in any release; it is
 * not installed and tarn/tarn.h does not include it. Production code never
 * needs it: a writer opened without `stepped` set, a store named by a URL
 * other than mem:, behave the same whether or not this header exists.
 *
 * Stepped mode is requested with the `stepped` field of tarn_writer_options
 * and tarn_xwriter_options (left 0 by the *_options_default calls); the calls
 * that drive a stepped writer are declared here. */
#ifndef TARN_TESTING_H
#define TARN_TESTING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The handles the hooks take, as incomplete types (the same typedefs as
 * tarn/meta.h, tarn/objstore.h, tarn/writer.h and tarn/express.h; C11 allows
 * the repeat): this header includes nothing of tarn, so the store, the log and
 * the express layers can each implement their hooks without including a
 * layer above them (issue 32, item 5; scripts/check-layers.py). A caller
 * includes the headers of what it opens. */
typedef struct tarn_meta tarn_meta;
typedef struct tarn_objstore tarn_objstore;
typedef struct tarn_writer tarn_writer;
typedef struct tarn_xwriter tarn_xwriter;

/* ==== the metadata store ==================================================== */

/* ---- fault injection (mem: only; others give TARN_EUNSUPPORTED) ----------- */

enum {
  TARN_META_FAULT_NONE = 0,
  /* the next count writes take effect but report TARN_EUNKNOWN */
  TARN_META_FAULT_COMMIT_UNKNOWN = 1,
  /* the next count writes fail with TARN_EUNAVAIL and take no effect */
  TARN_META_FAULT_FAIL = 2,
  /* the session ends now, as if it expired (count ignored) */
  TARN_META_FAULT_EXPIRE_SESSION = 3,
  /* the next count writes are held in flight: each reports TARN_EUNKNOWN (its
   * caller gave up) and takes effect only when TARN_META_FAULT_LAND comes, its
   * conditions (create-only, compare-and-set, sequence) judged then; an
   * ephemeral one of a session ended by then fails. Closing the handle drops
   * writes still held (they never landed). */
  TARN_META_FAULT_DELAY_COMMIT = 4,
  /* the held writes land now, in order (TARN_ENOTFOUND: none held); with
   * count > 0 those held longer than count ms (the store's clock) are
   * dropped instead: a request lands within its deadline or never */
  TARN_META_FAULT_LAND = 5,
  /* the store ends the session (its ephemeral records vanish, later ephemeral
   * writes fail) but the handle is not told: it keeps running, its other
   * writes succeed — a holder that lost its session without knowing. A later
   * TARN_META_FAULT_EXPIRE_SESSION tells it. */
  TARN_META_FAULT_EXPIRE_SILENT = 6,
  /* the next count reads (get, list) fail with TARN_EUNAVAIL */
  TARN_META_FAULT_READ_FAIL = 7
};
int tarn_meta_inject_fault(tarn_meta *m, int fault, int count);
/* The same, but the fault strikes only after the next skip writes succeeded
 * (the simulator uses it to fail one step inside a role's sequence, e.g. C4
 * after C3). Not for TARN_META_FAULT_EXPIRE_SESSION. */
int tarn_meta_inject_fault_after(tarn_meta *m, int fault, int skip, int count);

/* ==== the mem: object store ================================================ */

/* Faults and latency belong to the named store, so they act on every handle
 * that opened the same mem:NAME. Calls to these functions on a handle of
 * another backend return TARN_EINVAL. */

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

/* ==== the writer's stepped mode (tarn_writer_options.stepped = 1) ========== */

/* Stepped mode: the units of work tarn_writer_step does. */
enum {
  TARN_WRITER_STEP_SEAL = 0,     /* seal the open batch now */
  TARN_WRITER_STEP_SEAL_DUE = 1, /* seal the open batch if its window has ended */
  TARN_WRITER_STEP_UPLOAD = 2,   /* A2: write the object of the oldest sealed batch waiting */
  TARN_WRITER_STEP_PUT = 3 /* A3/A4: publish the first ready section (some log's queue head) */
};
/* Does one unit of work: 1 when done, 0 when there was none, or a negative
 * error (TARN_EINVAL on a writer that is not stepped). Outcomes of entries
 * are delivered from inside the step. */
int tarn_writer_step(tarn_writer *w, int step);

/* Stepped mode only: frees the writer as a crashed process loses it — no
 * callback, no store call; its lease records stay until its session ends. */
int tarn_writer_discard(tarn_writer *w);

/* ==== the express writer's stepped mode (tarn_xwriter_options.stepped = 1) = */

/* Stepped mode: the units of work. */
enum {
  TARN_XSTEP_SEAL = 0,    /* seal the gathering flight into the next slot, if the window allows */
  TARN_XSTEP_PUT = 1,     /* write slot's flight into bucket (one attempt) */
  TARN_XSTEP_RELEASE = 2, /* release committed slots in order; roll on a halted slot */
  TARN_XSTEP_ABSORB = 3,  /* absorb every released slot not yet absorbed */
  TARN_XSTEP_RECLAIM = 4, /* delete absorbed flights past the grace from the buckets */
  /* the timer thread's loop (timer_main), run until it would wait: at most
   * TARN_XSTEP_TIMER_TURNS turns; TARN_EBUSY when it went round that often
   * without waiting (the thread would spin holding the writer's lock) */
  TARN_XSTEP_TIMER = 5
};
#define TARN_XSTEP_TIMER_TURNS 1000
/* 1 when work was done, 0 when there was none, or a negative error. slot and
 * bucket matter only for TARN_XSTEP_PUT. */
int tarn_xwriter_step(tarn_xwriter *w, int step, uint64_t slot, size_t bucket);

#ifdef __cplusplus
}
#endif
#endif
