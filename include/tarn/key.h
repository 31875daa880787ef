/* tarn — offset index keys and the other metadata-store keys of a log
 * (spec "Offset index keys"; tables-and-vectors §3.2).
 *
 * K(L, e, c) = "{L:020d}-{e:020d}-{c:020d}": 62 ASCII bytes whose bytewise order
 * is the order of a log's records. Every field is at most MAX = 2^63-1. */
#ifndef TARN_KEY_H
#define TARN_KEY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_KEY_LEN 62                     /* bytes of an index key */
#define TARN_KEY_FIELD_LEN 20               /* digits of each field */
#define TARN_KEY_PREFIX_LEN 21              /* "{L:020d}-" */
#define TARN_KEY_MAX 9223372036854775807ull /* MAX: 2^63 - 1 */
#define TARN_KEY_PARTITION_LEN 20           /* the longest P(L), without the NUL */

/* Room for any of the slash keys below, NUL included. */
#define TARN_KEY_SLASH_MAX 128

typedef struct tarn_key {
  uint64_t log_id;
  uint64_t end_offset;
  uint64_t cumulative_size;
} tarn_key;

/* Writes K(L, e, c) and a NUL. TARN_ERANGE when a field exceeds MAX. */
int tarn_key_format(char out[TARN_KEY_LEN + 1], uint64_t log_id, uint64_t end_offset,
                    uint64_t cumulative_size);

/* Parses exactly TARN_KEY_LEN bytes: 20 digits, '-', 20 digits, '-', 20 digits,
 * each field at most MAX. Errors name "index key" and the byte offset. */
int tarn_key_parse(const char *key, size_t len, tarn_key *out);

/* Writes the prefix "{L:020d}-" and a NUL (the first 21 bytes of every key of L). */
int tarn_key_prefix(char out[TARN_KEY_PREFIX_LEN + 1], uint64_t log_id);

/* True when key (len bytes) begins with the prefix of L (LS-005: only index
 * records of L have keys that begin with it). Does not validate the rest. */
int tarn_key_has_prefix(const char *key, size_t len, uint64_t log_id);

/* The partition P(L): L in decimal without leading zeros (LS-004), and a NUL. */
int tarn_key_partition(char out[TARN_KEY_PARTITION_LEN + 1], uint64_t log_id);

/* "/mark-deleted-offsets/{L}": the trim marker of L. */
int tarn_key_trim_marker(char out[TARN_KEY_SLASH_MAX], uint64_t log_id);
/* "/stream-write-fences/{L}": the write fence of L. */
int tarn_key_fence(char out[TARN_KEY_SLASH_MAX], uint64_t log_id);
/* "/stream-write-leases/{L}/": the prefix under which L's lease records are listed. */
int tarn_key_lease_prefix(char out[TARN_KEY_SLASH_MAX], uint64_t log_id);
/* "/stream-write-leases/{L}/{token}": a write lease record. The token must be
 * non-empty, hold no '/', and fit; else TARN_EINVAL. */
int tarn_key_lease(char out[TARN_KEY_SLASH_MAX], uint64_t log_id, const char *token);

#ifdef __cplusplus
}
#endif
#endif
