/* tarn — looking at express streams from outside (docs/express.md): which
 * star wrote a log, the epochs of a star's chain and their state, the slot
 * keys and the poison objects in the buckets. What `tarn express` and `tarn
 * inspect slot|poison` read, for tools built on libtarn. Read-only. */
#ifndef TARN_EXPRESS_INSPECT_H
#define TARN_EXPRESS_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A star's name is at most this many bytes; a slot's object key at most
 * TARN_EXPRESS_SLOT_KEY_MAX. */
#define TARN_EXPRESS_STAR_MAX 128
#define TARN_EXPRESS_SLOT_KEY_MAX (TARN_EXPRESS_STAR_MAX + 2 * 20 + 3)

/* The star that last led express log log_id into star[0..n) (n >=
 * TARN_EXPRESS_STAR_MAX + 1); TARN_ENOTFOUND when no express writer wrote
 * it. */
int tarn_express_log_star(tarn_meta *m, uint64_t log_id, char *star, size_t n);

/* The head of star's express chain: the epoch its last writer minted (0:
 * none yet). */
int tarn_express_chain_head(tarn_meta *m, const char *star, uint64_t *epoch);

typedef struct tarn_express_epoch_info {
  int fenced;          /* 0: open (a writer may still write it) */
  int has_cut;         /* the fence published its cut */
  uint64_t cut;        /* the first dead slot */
  uint64_t checkpoint; /* every slot below is absorbed into the standard format */
  uint64_t trimmed;    /* flights below are deleted from the buckets */
  int settled;         /* fenced, with the cut, and absorbed up to it */
} tarn_express_epoch_info;

/* Epoch epoch of star's express chain; TARN_ENOTFOUND for a number never
 * minted (a burned number). */
int tarn_express_epoch_get(tarn_meta *m, const char *star, uint64_t epoch,
                           tarn_express_epoch_info *out);

/* A slot's object key in the buckets: {star}/{epoch}/{slot}, zero-padded. */
int tarn_express_slot_key(char *out, size_t n, const char *star, uint64_t epoch, uint64_t slot);
/* 1 when p[0..n) is exactly a poison object's bytes. */
int tarn_express_poison_is(const uint8_t *p, size_t n);
/* Decodes a poison object; star gets TARN_EXPRESS_STAR_MAX + 1 bytes.
 * TARN_ECORRUPT naming the byte and the fault otherwise. */
int tarn_express_poison_parse(const uint8_t *p, size_t n, char *star, uint64_t *epoch,
                              uint64_t *slot);

#ifdef __cplusplus
}
#endif
#endif
