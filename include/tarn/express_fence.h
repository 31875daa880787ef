/* tarn — express streams: fencing an epoch and settling it (issue 14; the
 * Epochs design, ../shared/spec/002_ad0b8bb50ec6abbf.txt; docs/express.md
 * "Fence and settlement").
 *
 * A fence ends an epoch of a star's express chain at a definite slot, the
 * cut: it poisons the slots the writer has not filled, publishes the cut on
 * the epoch record by compare-and-set (state fenced) and never lets an
 * acknowledged slot be cut. Settlement then absorbs the committed slots below
 * the cut and deletes straggling flights in [cut, cut + WIN]; poison stays. */
#ifndef TARN_EXPRESS_FENCE_H
#define TARN_EXPRESS_FENCE_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/fsck.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_xfence_opts {
  /* The caller's deadline, from the call: a slot still undecided then
   * (unreachable buckets hold the deciding vote) fails the call with
   * TARN_ETIMEDOUT; 0: fail at the first undecided observation. */
  int64_t timeout_ms;
  int64_t retry_ms; /* pause between re-observations; 0: 20 ms */
} tarn_xfence_opts;

typedef struct tarn_xfence_report {
  uint64_t estimate; /* the probe's estimate of the chain's end */
  uint64_t start;    /* the first slot walked: max(checkpoint, estimate - WIN) */
  uint64_t cut;      /* the first dead slot */
  uint64_t slots_walked;
  uint64_t repair_puts; /* repair copies that landed */
  uint64_t poison_puts; /* poison PUTs that returned success (not counted as copies) */
  uint64_t observations;
  int published;           /* 1: this call walked and published (or confirmed) the cut; 0: the
                              record was fenced already (a read) */
  uint64_t undecided_slot; /* on TARN_ETIMEDOUT: the slot, and how long it stayed undecided */
  int64_t undecided_ms;
} tarn_xfence_report;

/* Fences epoch `epoch` of star's express chain; r may be NULL. A record
 * already fenced is a read (its cut, published = 0). A cut different from one
 * another fencer published is TARN_ECORRUPT (a bug, loudly; nothing is
 * overwritten). An undecided slot past the timeout is TARN_ETIMEDOUT; the age
 * is also the gauge tarn_express_fence_undecided_age_ms{star}. */
int tarn_express_fence(tarn_meta *m, const char *star, uint64_t epoch, const tarn_xfence_opts *o,
                       tarn_xfence_report *r);

typedef struct tarn_xsettle_report {
  uint64_t cut;
  uint64_t absorbed;    /* slots absorbed below the cut */
  uint64_t deleted;     /* flight objects deleted in [cut, cut + WIN] */
  uint64_t poison_kept; /* poison objects seen there and left standing */
} tarn_xsettle_report;

/* Settles a fenced epoch: with wal (the deployment's WAL root), first absorbs
 * every committed slot in [checkpoint, cut) from its flight's bytes (the
 * writer side's tarn__xabsorb_flight: a WAL object and the guarded A3 put per
 * slot, exactly once); then deletes the flights in [cut, cut + WIN] from
 * every bucket, never anything below the cut and never poison. Without wal,
 * slots in [checkpoint, cut) not yet absorbed are TARN_EINVAL (nothing
 * deleted). TARN_EINVAL for an epoch not fenced. o bounds the wait for an
 * unreachable flight (may be NULL: no wait); r may be NULL. */
int tarn_express_settle(tarn_meta *m, tarn_objstore *wal, const char *star, uint64_t epoch,
                        const tarn_xfence_opts *o, tarn_xsettle_report *r);

/* The takeover of a star that may have died (the Epochs design, "Takeover,
 * end to end"; what `tarn serve`'s express-takeover job runs): logs[0..n)
 * are the express logs recorded for star (tarn_express_log_star). Reads the
 * star's head first, then judges: a lease on one of the logs, or every log's
 * standing clean-release mark, leaves it alone; a live process of the star
 * leaves the head to it and fences and settles only the epochs below;
 * otherwise every unsettled epoch up to the head is fenced and settled. */
enum {
  TARN_XTAKE_LEASED = 1, /* a log of the star has a lease: its writer lives */
  TARN_XTAKE_MARKED,     /* every log carries the star's standing clean-release mark */
  TARN_XTAKE_ALIVE,      /* a process of the star lives: only epochs below the head */
  TARN_XTAKE_DEAD        /* fenced and settled up to the head */
};
typedef struct tarn_xtakeover_report {
  int verdict;            /* TARN_XTAKE_* */
  uint64_t head;          /* the star's head, read before the judgement */
  uint64_t hi;            /* the newest epoch looked at (0: none) */
  uint64_t epochs;        /* epochs fenced and settled */
  tarn_xsettle_report st; /* their settlements, summed */
} tarn_xtakeover_report;
int tarn_express_takeover(tarn_meta *m, tarn_objstore *wal, const char *star, const uint64_t *logs,
                          size_t n, const tarn_xfence_opts *fo, tarn_xtakeover_report *r);

/* tarn_express_fence in the shape of the express writer's roll hook
 * (tarn_xwriter_options.fence): arg is a const tarn_xfence_opts * or NULL
 * (then a 30 s deadline); *cut gets the published cut. */
int tarn_express_fence_cut(void *arg, tarn_meta *m, const char *star, uint64_t epoch,
                           uint64_t *cut);

/* fsck of every epoch of star's express chain (src/express/xfsck.c): adds
 * faults to *r, kinds express-cursor (trimmed <= checkpoint <= cut),
 * express-cut (the cut slot holds the blocking set of poison), express-hole
 * (a slot in [trimmed, cut) neither committed nor, below the checkpoint,
 * reclaimed) and express-unreachable; and per log, "absorbed slots indexed
 * once" against the index from the epochs' absorbed offset ranges, kinds
 * express-index-overlap, express-index-missing and express-index-double
 * (fault log_id and offset name the log and offset; the message the epoch
 * and slots), and express-index-gap (slots below an epoch's checkpoint that
 * no absorbed range holds; offset = the slot). 0 when the check ran. */
int tarn_express_fsck(tarn_meta *m, const char *star, tarn_fsck_report *r);
/* tarn_express_fsck for every star recorded as the writer of an express log
 * (what plain `tarn fsck` runs on a deployment with an express bucket set). */
int tarn_express_fsck_all(tarn_meta *m, tarn_fsck_report *r);

#ifdef __cplusplus
}
#endif
#endif
