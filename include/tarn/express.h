/* tarn — express streams, the writer side (issue 14; docs/express.md).
 *
 * An express stream's logs are written by a star (a writer identity that
 * survives restarts) in epochs minted on its chain. Entries are gathered into
 * flights, one per slot; a slot's flight (a format-v3 WAL object) is written
 * create-only into all K buckets of the deployment's express bucket set, and
 * the slot is committed when W buckets are seen to hold it. Acknowledgements
 * are released strictly in slot order and only for committed slots, at the
 * offsets the log's index will give the entries; assignment never runs more
 * than WIN slots past the last released one. Off the acknowledgement path,
 * absorb publishes committed slots into ordinary WAL objects in the WAL root
 * and the offset index (A3), in slot order, exactly once.
 *
 * The star must be the only writer of each express log while it leads it: the
 * writer takes the log's end from the index when it first appends to it and
 * counts from there (it holds the log's write lease, A1, and every index put
 * is guarded by it).
 *
 * Thread safety: as tarn/writer.h (callbacks run on the writer's threads and
 * must not call flush, close, append_sync or a blocking append). */
#ifndef TARN_EXPRESS_H
#define TARN_EXPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/appender.h"
#include "tarn/catalog_record.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/writer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stream property that names a stream's storage class; "standard" (or
 * absent) and "express". */
#define TARN_STREAM_CLASS_PROP "class"
#define TARN_STREAM_CLASS_EXPRESS "express"
#define TARN_STREAM_CLASS_STANDARD "standard"

/* 1 when the stream record says class express, else 0. */
int tarn_stream_is_express(const tarn_catalog_record *stream);

/* Records the deployment's express bucket set (what `tarn init` does):
 * buckets[i] is "URI" or "URI@ZONE", in the fixed order poison is written
 * in; 1 <= w <= k; win >= 1. An existing record stays (the deployment's);
 * *created (may be NULL) says whether this call wrote it. */
int tarn_express_deploy(tarn_meta *m, const char *const *buckets, size_t k, uint32_t w,
                        uint32_t win, int *created);
/* The embedded default: three file:// directories under home
 * (HOME/express/{a,b,c}, zones a, b, c), created if missing; W = 2, WIN = 8. */
int tarn_express_deploy_default(tarn_meta *m, const char *home, int *created);

typedef struct tarn_xwriter_options {
  const char *star;  /* the writer identity (required): [A-Za-z0-9._-]{1,128} */
  uint32_t batch_ms; /* a flight is sealed this long after its first entry (2) */
  /* Issue 36 item 3: when set, a flight is sealed when it is full or when
   * this budget's share of waiting is spent, whichever comes first: the
   * budget less the p99 of the time the writer's recent slots took from
   * seal to W copies, never less than batch_ms. An entry's acknowledgement
   * then takes about the budget at p99, and slots grow with the load (fewer
   * PUTs per GiB) instead of being cut every batch_ms. 0 (the default here;
   * tarn append and tarn serve give 20): batch_ms alone. */
  uint32_t latency_budget_ms;
  size_t max_flight_bytes;    /* payload bytes per flight (1 MiB); a larger entry gets its own */
  size_t max_bytes_in_flight; /* payload appended and not yet absorbed (64 MiB) */
  int nonblocking;            /* over the limit or the window: 1 = append returns TARN_EBUSY */
  int put_threads;            /* PUT threads per bucket (0: WIN, so every slot of the window
                                 can be in flight in every bucket at once) */
  int put_attempts;           /* attempts of one copy before the bucket counts as failed (3) */
  uint32_t absorb_ms;         /* absorb gathers released slots this long (250: as the standard
                                 writer's window, so the WAL root's PUTs per GiB match) */
  size_t absorb_max_bytes;    /* payload bytes per absorbed WAL object (4 MiB) */
  int64_t reclaim_grace_ms;   /* absorbed flights are deleted from the buckets after (60000) */
  int max_rolls;              /* halts (a slot that cannot reach W) survived before the writer
                                 fails for good (16) */
  /* The in-process roll's fence (issue 14 "Committed is not acknowledged"):
   * fences the writer's own halted epoch and gives its published cut. With
   * it, the slots below the cut complete as acknowledged and only those at or
   * above it are republished, at the same offsets, into the new epoch's first
   * slots. NULL: the entries of the halted slot and after fail (see append),
   * and unless the writer saw the halted slot dead (K-W+1 of its buckets
   * answered its PUT with the slot's poison) the writer stops with
   * TARN_EUNKNOWN: a copy may exist that a later fence repairs, so its
   * offsets must not be handed out again; fence and settle the epoch, then
   * open a new writer. The same holds when max_rolls is used up.
   * tarn_express_fence (tarn/express_fence.h) is the fence to give. */
  int (*fence)(void *arg, tarn_meta *m, const char *star, uint64_t epoch, uint64_t *cut);
  void *fence_arg;
  /* 1, for tests and the simulator only (tarn/testing.h, not a stable API):
   * no threads; the caller drives the pipeline with tarn_xwriter_step. An
   * append that would block returns TARN_EBUSY. */
  int stepped;
  /* Finish (tarn_xwriter_finish) that cannot land is retried by close this
   * often (TARN_XWRITER_FINISH_RETRY_MS) ... */
  int64_t finish_retry_ms;
  /* ... this many times in all (12); then close releases the lease unmarked,
   * so the successor settles the tenure instead of trusting it. */
  int finish_attempts;
  /* Called (when set) by close for each of those attempts that did not land:
   * the log, the attempt (1-based), its error and tarn_errmsg's text. A
   * drain that takes minutes says why in the node's log. */
  void (*finish_note)(void *arg, uint64_t log_id, int attempt, int rc, const char *msg);
  void *finish_note_arg;
  /* At most one live process per star (docs/express.md "Leadership"): open
   * takes the star's lease, bound to meta's session. While another process
   * holds it, open waits up to this long (0: not at all) for it to end, then
   * fails with TARN_EBUSY naming the holder. */
  int64_t star_wait_ms;
} tarn_xwriter_options;

#define TARN_XWRITER_FINISH_RETRY_MS 5000

void tarn_xwriter_options_default(tarn_xwriter_options *o);

typedef struct tarn_xwriter tarn_xwriter;

/* Loads the deployment's bucket set, opens its buckets and mints an epoch on
 * the star's express chain. meta and wal (the WAL root, for absorb) must
 * outlive the writer. */
int tarn_xwriter_open(tarn_meta *meta, tarn_objstore *wal, const tarn_xwriter_options *o,
                      tarn_xwriter **out);

/* Queues one entry (record_count >= 1) of an express log; cb reports its
 * outcome once: 0 with the entry's first offset and the writer's clock at
 * release, or an error (TARN_EUNKNOWN when its slot halted the epoch with
 * some copies written: the entry may yet appear once the epoch is fenced and
 * settled). The first append to a log acquires its write lease, passes the
 * open gate (TARN_EBUSY, retryable, while another star leads the log and
 * left no mark; see tarn_xwriter_finish) and reads its end from the index. */
int tarn_xwriter_append(tarn_xwriter *w, uint64_t log_id, const void *payload, size_t len,
                        uint32_t record_count, tarn_append_cb cb, void *arg);
int tarn_xwriter_append_sync(tarn_xwriter *w, uint64_t log_id, const void *payload, size_t len,
                             uint32_t record_count, uint64_t *offset, int64_t *timestamp_ms);
/* Leads log_id as the first append to it does (its write lease, the open
 * gate, its end from the index), appending nothing; 0 at once when the
 * writer leads it already. Once it returned 0, every entry an earlier writer
 * of the log stored is in the index (the gate consumed its clean-release
 * mark or fenced and settled it) and every entry this writer acknowledged is
 * in the index or its tail (tarn_xwriter_read_tail): nothing outside them
 * can still be stored but what this writer has in flight. TARN_EBUSY
 * (retryable) while another star leads the log, TARN_EUNAVAIL while its
 * Finish has not landed, the writer's error once it failed. */
int tarn_xwriter_lead(tarn_xwriter *w, uint64_t log_id);
/* Seals the gathering flight now (if the window allows), without waiting. */
int tarn_xwriter_seal(tarn_xwriter *w);
/* The star's default name for a process: TARN_STAR, else the host name with
 * every byte outside [A-Za-z0-9._-] replaced by '-'. */
void tarn_express_default_star(char *out, size_t n);
/* 0 when the deployment has an express bucket set; TARN_ENOTFOUND saying how
 * to record one. */
int tarn_express_check_deployment(tarn_meta *m);
/* Seals the gathering flight and waits until every entry appended before has
 * its outcome. */
int tarn_xwriter_flush(tarn_xwriter *w);
/* Waits until every released slot is absorbed (indexed); the first absorb
 * error if absorb stopped. */
int tarn_xwriter_absorb_sync(tarn_xwriter *w);
/* Finish: the one door out of leading an express log (issue 15; docs/express.md
 * "Leadership"). Waits for the log's in-flight slots to resolve, absorbs
 * everything acknowledged (the release flush; the epoch stays alive for the
 * writer's other logs), then stamps the log's clean-release mark, the last
 * write, and releases the lease. On failure (TARN_EUNAVAIL, or the error)
 * the lease is kept, appends to the log bounce with TARN_EUNAVAIL, other
 * writers' opens bounce with TARN_EBUSY (retryable), and the caller retries.
 * TARN_ENOTFOUND when the writer does not lead the log. */
int tarn_xwriter_finish(tarn_xwriter *w, uint64_t log_id);
/* Flushes, runs Finish for every log it leads (retried every finish_retry_ms,
 * finish_attempts times), stops the threads, releases the leases, frees. */
int tarn_xwriter_close(tarn_xwriter *w);

/* The acknowledged tail not yet absorbed: calls fn for every released entry
 * of log_id whose records end past from, in offset order (payload valid only
 * during the call; fn must not call the writer). fn returning non-zero stops
 * the walk and is returned. *absorbed_end (may be NULL) gets the offset below
 * which the index serves the log. */
typedef int (*tarn_xtail_fn)(void *arg, uint64_t offset, const void *payload, size_t len,
                             uint32_t record_count);
int tarn_xwriter_read_tail(tarn_xwriter *w, uint64_t log_id, uint64_t from, tarn_xtail_fn fn,
                           void *arg, uint64_t *absorbed_end);

/* 0 while the writer can append; once it failed for good (a halted epoch it
 * could not fence, a new epoch it could not mint, max_rolls used up), the
 * error every later append fails with: close it (its logs stay unmarked, so
 * their next gate settles them) and open another. */
int tarn_xwriter_failed(tarn_xwriter *w);

/* The epoch the writer writes now (it changes on a roll). */
uint64_t tarn_xwriter_epoch(tarn_xwriter *w);

typedef struct tarn_xwriter_stats {
  uint64_t slots_sealed;
  uint64_t slots_released;
  uint64_t slots_absorbed;
  uint64_t copies_written; /* copies seen to hold the flight */
  uint64_t copies_failed;  /* copies given up on (including a foreign object at the key) */
  uint64_t halts;          /* slots that could not reach W */
  uint64_t absorb_objects; /* WAL objects absorb wrote */
  uint64_t absorb_unknown; /* index puts of unknown outcome, resolved by reading the log */
  uint64_t flights_reclaimed;
  uint64_t entries_acked;
  uint64_t entries_failed;
  /* the open gate's verdicts (issue 15; docs/express.md "Leadership"), one per
   * admitted tenure of a log: nobody led it; a predecessor's clean-release mark
   * consumed; this star's own older epochs superseded and settled; a dead
   * predecessor fenced and settled */
  uint64_t gate_fresh, gate_marked, gate_restart, gate_settled;
  /* absorb's index records that landed past max_put_ms or at a time unknown
   * (issue 30 item 6), and of those the ones whose WAL object had been
   * reclaimed and was written again */
  uint64_t absorb_late, absorb_rewritten;
  /* issue 36 item 3: the p99 of the latest slots' times from seal to W
   * copies (ms), and how long a flight now gathers after its first entry */
  int64_t commit_p99_ms, seal_wait_ms;
} tarn_xwriter_stats;
void tarn_xwriter_stats_get(tarn_xwriter *w, tarn_xwriter_stats *s);
void tarn_xwriter_last_error(tarn_xwriter *w, char *buf, size_t n);

/* The writer as an appender (tarn/appender.h; issue 32 item 1): valid as long
 * as the writer; tarn_appender_close closes the writer. Its stats are
 * entries_acked and entries_failed, and bytes_in_flight not yet absorbed. */
tarn_appender *tarn_xwriter_appender(tarn_xwriter *w);

#ifdef __cplusplus
}
#endif
#endif
