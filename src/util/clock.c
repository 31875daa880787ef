#include "util/clock.h"

#include "tarn/clock.h"

#include <time.h>

static tarn__clock_hooks hooks;

void tarn__clock_set(const tarn__clock_hooks *h) {
  if (h)
    hooks = *h;
  else
    hooks = (tarn__clock_hooks){0};
}

static int64_t clock_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tarn__clock_hooked(void) { return hooks.now_ms || hooks.mono_ms || hooks.sleep_ms; }

int64_t tarn__now_ms(void) {
  return hooks.now_ms ? hooks.now_ms(hooks.arg) : clock_ms(CLOCK_REALTIME);
}

int64_t tarn__mono_ms(void) {
  return hooks.mono_ms ? hooks.mono_ms(hooks.arg) : clock_ms(CLOCK_MONOTONIC);
}

static int64_t (*store_fn)(void *arg);
static void *store_arg;

void tarn__clock_set_store(int64_t (*fn)(void *arg), void *arg) {
  store_fn = fn;
  store_arg = arg;
}

int64_t tarn__store_now_ms(void) { return store_fn ? store_fn(store_arg) : tarn__now_ms(); }

double tarn__mono_s(void) {
  if (hooks.mono_ms)
    return (double)hooks.mono_ms(hooks.arg) / 1e3;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tarn__cond_deadline(struct timespec *ts, clockid_t clock, int64_t ms) {
  clock_gettime(clock, ts);
  if (ms < 0)
    ms = 0;
  ts->tv_sec += (time_t)(ms / 1000);
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

void tarn__sleep_ms(int64_t ms) {
  if (hooks.sleep_ms) {
    hooks.sleep_ms(hooks.arg, ms);
    return;
  }
  if (ms <= 0)
    return;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

/* The public door (tarn/clock.h). */
int64_t tarn_clock_now_ms(void) { return tarn__now_ms(); }
int64_t tarn_clock_mono_ms(void) { return tarn__mono_ms(); }
