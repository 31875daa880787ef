/* tarn — express streams, the fence side's internals: observing a slot in the
 * K buckets, the fence's walk, settlement and the roll's split (issue 14; the
 * Epochs design "Fencing an epoch", "Publishing the cut", "The unratified
 * tail"; ../shared/notes/epochs/epochs-model.md; docs/express.md "Fence and
 * settlement"). The public entry points are in tarn/express_fence.h. */
#ifndef TARN_EXPRESS_XFENCE_H
#define TARN_EXPRESS_XFENCE_H

#include <stddef.h>
#include <stdint.h>

#include "express/express_internal.h"
#include "tarn/express_fence.h"

/* One observation of one slot in every bucket: what each bucket was seen to
 * hold (TARN__XOBS_*), and the counts. Only what was read counts: a PUT never
 * adds to these (epochs-model §7.2, "deciding only on facts seen"). */
typedef struct tarn__xobs {
  size_t k;
  int st[TARN__X_K_MAX];
  uint32_t flight, poison, empty, unknown;
  /* The bytes of a flight seen in this or an earlier observation of the same
   * slot (the caller keeps it across observations): repair copies exactly
   * these (one writer per epoch: a slot has one possible content), and a
   * fencer that has seen a flight repairs rather than poisons (§7.4). */
  tarn_buf flight_bytes;
  int have_flight_bytes;
} tarn__xobs;

/* The classes of epochs-model §2, phase 2. */
enum {
  TARN__XSLOT_COMMITTED = 0, /* >= W flights seen */
  TARN__XSLOT_REPAIR = 1,    /* 0 < flights < W, an empty bucket seen */
  TARN__XSLOT_POISON = 2,    /* no flight seen, an empty bucket seen */
  TARN__XSLOT_DEAD = 3,      /* >= K-W+1 poison seen (the blocking set) */
  TARN__XSLOT_UNDECIDED = 4  /* unreachable buckets hold the deciding vote */
};
const char *tarn__xslot_class_name(int c);

void tarn__xobs_init(tarn__xobs *o);
void tarn__xobs_free(tarn__xobs *o);
/* Reads the slot's key in every bucket of s (opened) and fills o's states and
 * counts (the remembered flight bytes are kept, or set from a flight seen). */
int tarn__xobserve(const tarn__xbuckets *s, const char *star, uint64_t epoch, uint64_t slot,
                   tarn__xobs *o);
/* The class of an observation under quorum w (K is o->k). */
int tarn__xobs_classify(const tarn__xobs *o, uint32_t w);

/* Loads the express epoch record (star, epoch) into *e and opens a copy of its
 * mint-time bucket set in *b (the epoch's buckets, W and WIN, never today's
 * deployment config). what names the caller in messages. On failure nothing
 * is left to free; else the caller frees both. */
int tarn__xepoch_open(tarn_meta *m, const char *star, uint64_t epoch, const char *what,
                      tarn__xepoch *e, tarn__xbuckets *b);

/* Parses exact poison bytes ("tarn-express-poison v1 {star}/{epoch}/{slot}\n")
 * into star (room TARN__X_STAR_MAX + 1), epoch and slot; TARN_ECORRUPT naming
 * the fault otherwise. */
int tarn__xpoison_parse(const uint8_t *p, size_t n, char *star, uint64_t *epoch, uint64_t *slot);

/* 1 when some bucket holds anything at the slot's key (a probe; an
 * unreachable bucket counts as nothing, which can only lower the estimate). */
int tarn__xslot_exists(const tarn__xbuckets *s, const char *star, uint64_t epoch, uint64_t slot);

/* The probe for the chain's end from `from` (the checkpoint): exponential
 * steps from..from+1, +3, +7, ... until a probe finds nothing, then a binary
 * search. Returns E with E == from or slot E-1 seen to exist. */
uint64_t tarn__xfence_estimate(const tarn__xbuckets *s, const char *star, uint64_t epoch,
                               uint64_t from);

/* The walk on opened buckets (no metadata): from max(checkpoint, E - WIN),
 * each slot observed and handled until it is committed (advance) or dead
 * (the cut, in r->cut). TARN_ETIMEDOUT when a slot stays undecided past the
 * deadline (r->undecided_slot, r->undecided_ms). */
int tarn__xfence_walk(const tarn__xbuckets *s, const char *star, uint64_t epoch,
                      uint64_t checkpoint, const tarn_xfence_opts *o, tarn_xfence_report *r);

/* Settlement's absorb step for one committed slot below the cut: the writer
 * side's absorb (publishes the flight's entries in the standard format, in
 * slot order). Settlement calls it for every slot in [checkpoint, cut). */
typedef int (*tarn__xabsorb_fn)(void *arg, tarn_meta *m, tarn__xepoch *e, uint64_t slot,
                                const uint8_t *flight, size_t n);

/* Settlement of a fenced epoch on opened buckets: absorbs [checkpoint, cut)
 * through absorb (NULL: the caller absorbs; only deletions happen), then
 * deletes flights in [cut, cut + WIN] and nothing else: never below the cut,
 * never poison. */
int tarn__xsettle(tarn_meta *m, tarn__xepoch *e, const tarn__xbuckets *s, tarn__xabsorb_fn absorb,
                  void *arg, const tarn_xfence_opts *o, tarn_xsettle_report *r);

/* The in-process roll's split of the star's pooled payloads (epochs-model
 * §7.6): slot[i] is the slot pooled payload i went out in. Indices of those
 * below the cut go to acked (complete as acknowledged: they are committed and
 * absorbed), of those at or above to republish in slot order (the new epoch's
 * first slots). Every index lands in exactly one of them. Each output array
 * has room for n. */
int tarn__xroll_split(uint64_t cut, const uint64_t *slot, size_t n, size_t *acked, size_t *n_acked,
                      size_t *republish, size_t *n_republish);

#endif
