/* The bytes/s token bucket that rate-limits compaction writes (`tarn compact
 * --rate`, `tarn serve --compact-rate`). Not part of C1–C5: any role may
 * throttle with it. It reads and sleeps on the library's clock (util/clock.h):
 * monotonic, since it measures intervals. */
#define _POSIX_C_SOURCE 200809L
#include "tarn/token_bucket.h"

#include <pthread.h>
#include <stdlib.h>

#include "util/clock.h"
#include "util/error.h"

struct tarn_token_bucket {
  pthread_mutex_t mu;
  uint64_t rate, burst;
  double tokens;
  int64_t last_ms;
};

int tarn_token_bucket_open(uint64_t rate, uint64_t burst, tarn_token_bucket **out) {
  if (rate == 0)
    return tarn__err(TARN_EINVAL, "token bucket: rate 0");
  tarn_token_bucket *b = calloc(1, sizeof *b);
  if (!b)
    return tarn__err(TARN_ENOMEM, "out of memory");
  pthread_mutex_init(&b->mu, NULL);
  b->rate = rate;
  b->burst = burst ? burst : rate;
  b->tokens = (double)b->burst;
  b->last_ms = tarn__mono_ms();
  *out = b;
  return 0;
}

void tarn_token_bucket_close(tarn_token_bucket *b) {
  if (!b)
    return;
  pthread_mutex_destroy(&b->mu);
  free(b);
}

/* Under b->mu: refills by the time passed, then the ms until n tokens are
 * there (0: now). A request above the burst is let through once the bucket
 * is full, so a large entry is never refused forever. */
static int64_t refill_locked(tarn_token_bucket *b, uint64_t n) {
  int64_t now = tarn__mono_ms();
  if (now > b->last_ms) {
    b->tokens += (double)(now - b->last_ms) * (double)b->rate / 1000.0;
    if (b->tokens > (double)b->burst)
      b->tokens = (double)b->burst;
    b->last_ms = now;
  }
  double need = (double)n > (double)b->burst ? (double)b->burst : (double)n;
  return b->tokens >= need ? 0 : (int64_t)((need - b->tokens) * 1000.0 / (double)b->rate) + 1;
}

int tarn_token_bucket_try(tarn_token_bucket *b, uint64_t n, int64_t *wait_ms) {
  pthread_mutex_lock(&b->mu);
  *wait_ms = refill_locked(b, n);
  if (!*wait_ms)
    b->tokens -= (double)n;
  pthread_mutex_unlock(&b->mu);
  return 0;
}

int64_t tarn_token_bucket_peek(tarn_token_bucket *b, uint64_t n) {
  pthread_mutex_lock(&b->mu);
  int64_t w = refill_locked(b, n);
  pthread_mutex_unlock(&b->mu);
  return w;
}

void tarn_token_bucket_fill(tarn_token_bucket *b) {
  pthread_mutex_lock(&b->mu);
  b->tokens = (double)b->burst;
  b->last_ms = tarn__mono_ms();
  pthread_mutex_unlock(&b->mu);
}

int tarn_token_bucket_throttle(void *ctx, uint64_t bytes) {
  for (;;) {
    int64_t w;
    tarn_token_bucket_try(ctx, bytes, &w);
    if (w <= 0)
      return 0;
    tarn__sleep_ms(w);
  }
}
