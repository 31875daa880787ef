/* tarn — a bytes/s token bucket, the rate limit of compaction writes (so
 * compaction does not starve appends). */
#ifndef TARN_TOKEN_BUCKET_H
#define TARN_TOKEN_BUCKET_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Thread-safe. Refills by the library's monotonic clock (a wall-clock step
 * neither floods nor starves it). */
typedef struct tarn_token_bucket tarn_token_bucket;
/* rate bytes per second, burst bytes at most saved up (0: rate). */
int tarn_token_bucket_open(uint64_t rate, uint64_t burst, tarn_token_bucket **out);
void tarn_token_bucket_close(tarn_token_bucket *b);
/* Takes n tokens if available (0) or tells how many ms until they are
 * (*wait_ms > 0, nothing taken). Never sleeps. */
int tarn_token_bucket_try(tarn_token_bucket *b, uint64_t n, int64_t *wait_ms);
/* The ms until n tokens are available (0: they are now), nothing taken. */
int64_t tarn_token_bucket_peek(tarn_token_bucket *b, uint64_t n);
/* Fills the bucket up to its burst (a limit lifted). */
void tarn_token_bucket_fill(tarn_token_bucket *b);
/* A tarn_throttle_fn (tarn/compactor.h) over a bucket (ctx): sleeps until
 * the tokens are there. */
int tarn_token_bucket_throttle(void *ctx, uint64_t bytes);

#ifdef __cplusplus
}
#endif
#endif
