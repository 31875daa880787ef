/* The bytes/s token bucket that rate-limits compaction writes (`tarn compact
 * --rate`, `tarn serve --compact-rate`), and the wall clock it reads by
 * default. Not part of C1–C5: any role may throttle with it. */
#define _POSIX_C_SOURCE 200809L
#include "tarn/token_bucket.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "util/error.h"

int64_t tarn_clock_wall_ms(void *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct tarn_token_bucket {
  pthread_mutex_t mu;
  uint64_t rate, burst;
  double tokens;
  int64_t last_ms;
  tarn_clock_fn clock;
  void *clock_ctx;
};

int tarn_token_bucket_new(uint64_t rate, uint64_t burst, tarn_clock_fn clock, void *clock_ctx,
                          tarn_token_bucket **out) {
  if (rate == 0)
    return tarn__err(TARN_EINVAL, "token bucket: rate 0");
  tarn_token_bucket *b = calloc(1, sizeof *b);
  if (!b)
    return tarn__err(TARN_ENOMEM, "out of memory");
  pthread_mutex_init(&b->mu, NULL);
  b->rate = rate;
  b->burst = burst ? burst : rate;
  b->clock = clock ? clock : tarn_clock_wall_ms;
  b->clock_ctx = clock_ctx;
  b->tokens = (double)b->burst;
  b->last_ms = b->clock(b->clock_ctx);
  *out = b;
  return 0;
}

void tarn_token_bucket_free(tarn_token_bucket *b) {
  if (!b)
    return;
  pthread_mutex_destroy(&b->mu);
  free(b);
}

int tarn_token_bucket_try(tarn_token_bucket *b, uint64_t n, int64_t *wait_ms) {
  pthread_mutex_lock(&b->mu);
  int64_t now = b->clock(b->clock_ctx);
  if (now > b->last_ms) {
    b->tokens += (double)(now - b->last_ms) * (double)b->rate / 1000.0;
    if (b->tokens > (double)b->burst)
      b->tokens = (double)b->burst;
    b->last_ms = now;
  }
  /* A request above the burst is let through once the bucket is full, so a
   * large entry is never refused forever. */
  double need = (double)n > (double)b->burst ? (double)b->burst : (double)n;
  *wait_ms = 0;
  if (b->tokens >= need) {
    b->tokens -= (double)n;
  } else {
    *wait_ms = (int64_t)((need - b->tokens) * 1000.0 / (double)b->rate) + 1;
  }
  pthread_mutex_unlock(&b->mu);
  return 0;
}

int tarn_token_bucket_throttle(void *ctx, uint64_t bytes) {
  for (;;) {
    int64_t w;
    tarn_token_bucket_try(ctx, bytes, &w);
    if (w <= 0)
      return 0;
    struct timespec ts = {w / 1000, (long)(w % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
}
