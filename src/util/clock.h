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
#include <time.h>

typedef struct tarn__clock_hooks {
  int64_t (*now_ms)(void *arg);  /* wall clock, ms since the Unix epoch */
  int64_t (*mono_ms)(void *arg); /* monotonic ms */
  void (*sleep_ms)(void *arg, int64_t ms);
  void *arg;
} tarn__clock_hooks;

/* Installs hooks (copied); NULL restores the system clock. Not thread-safe:
 * call it before the library is used. */
void tarn__clock_set(const tarn__clock_hooks *h);

/* 1 while hooks are installed (a simulated world: no real process or host
 * to name in what it records). */
int tarn__clock_hooked(void);

int64_t tarn__now_ms(void);
int64_t tarn__mono_ms(void);
void tarn__sleep_ms(int64_t ms);
/* The clock a metadata store stamps records with (created_ms): fn(arg) once
 * set (the simulator gives the store its own clock), else tarn__now_ms. */
void tarn__clock_set_store(int64_t (*fn)(void *arg), void *arg);
int64_t tarn__store_now_ms(void);

/* Seconds on the monotonic clock, for latency metrics (tarn_metrics_now): the
 * mono_ms hook when one is installed, else CLOCK_MONOTONIC at full resolution
 * (a sub-millisecond stage must not read as 0). */
double tarn__mono_s(void);

/* The absolute time ms from now on the system clock `clock`: the deadline of a
 * pthread_cond_timedwait (CLOCK_REALTIME, or the clock the condition variable
 * was made with by pthread_condattr_setclock). Deliberately not hooked: a
 * thread blocked in the kernel waits real time, whatever the hook says; the
 * simulator runs roles stepped and never blocks in these waits. The one place
 * outside the backends that reads a system clock for a condition variable. */
void tarn__cond_deadline(struct timespec *ts, clockid_t clock, int64_t ms);

#endif
