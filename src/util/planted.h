/* Planted bugs, for proving that the simulator's checker can fail.
 *
 * Only a library compiled with -DTARN_PLANTED_BUGS (the tarn_planted static
 * library linked into tarn-sim-planted, tests/sim) has them; in the normal
 * library TARN__PLANTED(b) is the constant 0 and the sites compile away. */
#ifndef TARN_UTIL_PLANTED_H
#define TARN_UTIL_PLANTED_H

enum {
  TARN__BUG_NONE = 0,
  TARN__BUG_INDEX_BEFORE_OBJECT = 1, /* the writer publishes a section whose object write failed */
  TARN__BUG_READER_SKIPS_TRIM = 2,   /* R1 takes B = 0 whatever the marker says */
  TARN__BUG_SOFT_TRIM_UNSTORED = 3,  /* soft trim reports B' although its write failed */
  TARN__BUG_C4_BEFORE_C3 = 4,        /* the compactor retires the old records before installing */
  TARN__BUG_RECLAIM_NO_GRACE = 5,    /* the reclaimer deletes an unreferenced WAL object at once */
  TARN__BUG_COUNT = 6
};

#ifdef TARN_PLANTED_BUGS
extern int tarn__planted_bug;
#define TARN__PLANTED(b) (tarn__planted_bug == (b))
#else
#define TARN__PLANTED(b) 0
#endif

#endif
