/* Time and sleeping for the library, behind one replaceable hook.
 *
 * Every role reads the clock and sleeps through these functions, so that the
 * simulator (tests/sim) can run the real role code on a simulated clock: it
 * installs hooks once, before any other library call, and the same seed then
 * gives the same run. Without hooks they are the system clock and nanosleep.
 * Blocking waits on condition variables (tailing reads, the threaded writer's
 * timer) keep using real time; the simulator does not use them. */
#ifndef TARN_UTIL_CLOCK_H
#define TARN_UTIL_CLOCK_H

#include <stdint.h>

typedef struct tarn__clock_hooks {
  int64_t (*now_ms)(void *arg);  /* wall clock, ms since the Unix epoch */
  int64_t (*mono_ms)(void *arg); /* monotonic ms */
  void (*sleep_ms)(void *arg, int64_t ms);
  void *arg;
} tarn__clock_hooks;

/* Installs hooks (copied); NULL restores the system clock. Not thread-safe:
 * call it before the library is used. */
void tarn__clock_set(const tarn__clock_hooks *h);

int64_t tarn__now_ms(void);
int64_t tarn__mono_ms(void);
void tarn__sleep_ms(int64_t ms);
/* The clock a metadata store stamps records with (created_ms): fn(arg) once
 * set (the simulator gives the store its own clock), else tarn__now_ms. */
void tarn__clock_set_store(int64_t (*fn)(void *arg), void *arg);
int64_t tarn__store_now_ms(void);

#endif
