/* tarn — a bytes/s token bucket, the rate limit of compaction writes (so
 * compaction does not starve appends), and the clock type it reads. */
#ifndef TARN_TOKEN_BUCKET_H
#define TARN_TOKEN_BUCKET_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A clock: ms since the Unix epoch. */
typedef int64_t (*tarn_clock_fn)(void *ctx);
/* The wall clock (CLOCK_REALTIME). */
int64_t tarn_clock_wall_ms(void *ctx);

/* Thread-safe. */
typedef struct tarn_token_bucket tarn_token_bucket;
/* rate bytes per second, burst bytes at most saved up; clock may be NULL (wall). */
int tarn_token_bucket_new(uint64_t rate, uint64_t burst, tarn_clock_fn clock, void *clock_ctx,
                          tarn_token_bucket **out);
void tarn_token_bucket_free(tarn_token_bucket *b);
/* Takes n tokens if available (0) or tells how many ms until they are
 * (*wait_ms > 0, nothing taken). Never sleeps. */
int tarn_token_bucket_try(tarn_token_bucket *b, uint64_t n, int64_t *wait_ms);
/* A tarn_throttle_fn (tarn/compactor.h) over a bucket (ctx): waits with
 * nanosleep until the tokens are there. */
int tarn_token_bucket_throttle(void *ctx, uint64_t bytes);

#ifdef __cplusplus
}
#endif
#endif
